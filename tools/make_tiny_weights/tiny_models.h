// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The tiny models' configurations and deterministic weights, built in memory.
//
//   tiny-lm     a Hugging Face Llama checkpoint (config.json + model.safetensors, HF tensor
//               names), hidden 64, 2 layers, 4 heads / 2 KV heads of 16, vocabulary 1284:
//                 0..255      bytes (a byte-level prompt is its own token ids)
//                 256..1279   audio codes 0..1023 (token = kAudioTokenOffset + code)
//                 1280..1283  specials: end of text, start of audio, end of audio, pad
//   tiny-codec  the tiny_codec decoder (config.json + model.safetensors; see
//               plugins/tiny_codec/README.md for the tensors).
//
// Every tensor's values come from its own generator, seeded with splitmix64 over a fixed seed and
// the tensor's name, so the bytes depend on nothing but this file. Norm weights are 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mstar::tools {

inline constexpr int64_t kByteTokens = 256;
inline constexpr int64_t kAudioTokenOffset = 256;
inline constexpr int64_t kAudioCodes = 1024;
inline constexpr int64_t kEndOfText = kAudioTokenOffset + kAudioCodes;  // 1280
inline constexpr int64_t kStartOfAudio = kEndOfText + 1;                // 1281
inline constexpr int64_t kEndOfAudio = kEndOfText + 2;                  // 1282
inline constexpr int64_t kPad = kEndOfText + 3;                         // 1283
inline constexpr int64_t kVocabSize = kEndOfText + 4;                   // 1284

struct ModelFiles {
  std::string name;                  // the directory's name: "tiny-lm", "tiny-codec"
  std::string config_json;           // config.json
  std::vector<uint8_t> safetensors;  // model.safetensors
};

// The language model's dimensions; the defaults are the tiny config above (head_dim = hidden /
// heads). make-tiny-weights' --lm-* options change them, e.g. for device timings at a larger size.
struct LmShape {
  int64_t hidden = 64;
  int64_t intermediate = 128;
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t kv_heads = 2;
  int64_t head_dim() const { return hidden / heads; }
  // Empty when the shape makes a valid model, else what is wrong with it.
  std::string Problem() const;
};

ModelFiles BuildTinyLm(const LmShape& shape = {});
ModelFiles BuildTinyCodec();

// splitmix64: the generator behind every value.
inline uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// count values uniform in [-scale, scale), from a generator seeded by name.
std::vector<float> UniformValues(const std::string& name, int64_t count, float scale);

}  // namespace mstar::tools

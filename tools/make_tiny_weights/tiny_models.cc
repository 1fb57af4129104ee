// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "tiny_models.h"

#include <cmath>

#include "safetensors_writer.h"

namespace mstar::tools {
namespace {

constexpr uint64_t kSeed = 0x4D5354415254494EULL;  // "MSTARTIN"

// Uniform in [-a, a) with variance 1/fan_in: a = sqrt(3 / fan_in).
float FanInScale(int64_t fan_in) {
  return std::sqrt(3.0f / static_cast<float>(fan_in));
}

void AddUniform(SafetensorsWriter& w, const std::string& name, std::vector<int64_t> shape,
                float scale) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  w.Add(name, std::move(shape), UniformValues(name, count, scale));
}

void AddOnes(SafetensorsWriter& w, const std::string& name, int64_t size) {
  w.Add(name, {size}, std::vector<float>(static_cast<size_t>(size), 1.0f));
}

}  // namespace

std::vector<float> UniformValues(const std::string& name, int64_t count, float scale) {
  uint64_t state = kSeed;
  for (unsigned char c : name) {  // FNV-1a of the name, folded into the seed
    state ^= c;
    state *= 0x100000001B3ULL;
  }
  SplitMix64(state);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values) {
    // The top 24 bits give a float in [0, 1) exactly.
    float unit = static_cast<float>(SplitMix64(state) >> 40) * (1.0f / 16777216.0f);
    v = (2.0f * unit - 1.0f) * scale;
  }
  return values;
}

std::string LmShape::Problem() const {
  if (hidden <= 0 || intermediate <= 0 || layers <= 0 || heads <= 0 || kv_heads <= 0)
    return "every dimension must be positive";
  if (hidden % heads != 0) return "hidden size must be a multiple of the head count";
  if (heads % kv_heads != 0) return "head count must be a multiple of the KV head count";
  return "";
}

ModelFiles BuildTinyLm(const LmShape& shape) {
  const int64_t hidden = shape.hidden, intermediate = shape.intermediate, layers = shape.layers,
                heads = shape.heads, kv_heads = shape.kv_heads, head_dim = shape.head_dim();
  SafetensorsWriter w;
  w.SetMetadata("format", "pt");
  AddUniform(w, "model.embed_tokens.weight", {kVocabSize, hidden}, 1.0f);
  for (int64_t i = 0; i < layers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    AddUniform(w, p + "self_attn.q_proj.weight", {heads * head_dim, hidden}, FanInScale(hidden));
    AddUniform(w, p + "self_attn.k_proj.weight", {kv_heads * head_dim, hidden}, FanInScale(hidden));
    AddUniform(w, p + "self_attn.v_proj.weight", {kv_heads * head_dim, hidden}, FanInScale(hidden));
    AddUniform(w, p + "self_attn.o_proj.weight", {hidden, heads * head_dim},
               FanInScale(heads * head_dim));
    AddUniform(w, p + "mlp.gate_proj.weight", {intermediate, hidden}, FanInScale(hidden));
    AddUniform(w, p + "mlp.up_proj.weight", {intermediate, hidden}, FanInScale(hidden));
    AddUniform(w, p + "mlp.down_proj.weight", {hidden, intermediate}, FanInScale(intermediate));
    AddOnes(w, p + "input_layernorm.weight", hidden);
    AddOnes(w, p + "post_attention_layernorm.weight", hidden);
  }
  AddOnes(w, "model.norm.weight", hidden);
  AddUniform(w, "lm_head.weight", {kVocabSize, hidden}, FanInScale(hidden));

  std::string s = std::to_string(kStartOfAudio), e = std::to_string(kEndOfAudio);
  ModelFiles files;
  files.name = "tiny-lm";
  files.config_json =
      "{\n"
      "  \"architectures\": [\"LlamaForCausalLM\"],\n"
      "  \"model_type\": \"llama\",\n"
      "  \"hidden_size\": " +
      std::to_string(hidden) + ",\n  \"intermediate_size\": " + std::to_string(intermediate) +
      ",\n  \"num_hidden_layers\": " + std::to_string(layers) +
      ",\n  \"num_attention_heads\": " + std::to_string(heads) +
      ",\n  \"num_key_value_heads\": " + std::to_string(kv_heads) +
      ",\n  \"head_dim\": " + std::to_string(head_dim) +
      ",\n"
      "  \"hidden_act\": \"silu\",\n"
      "  \"vocab_size\": " +
      std::to_string(kVocabSize) +
      ",\n"
      "  \"rms_norm_eps\": 1e-05,\n"
      "  \"rope_theta\": 10000.0,\n"
      "  \"tie_word_embeddings\": false,\n"
      "  \"max_position_embeddings\": 2048,\n"
      "  \"attention_bias\": false,\n"
      "  \"mlp_bias\": false,\n"
      "  \"torch_dtype\": \"float32\",\n"
      "  \"bos_token_id\": " +
      s + ",\n  \"eos_token_id\": " + e + ",\n  \"pad_token_id\": " + std::to_string(kPad) +
      ",\n"
      "  \"byte_tokens\": 256,\n"
      "  \"audio_token_offset\": " +
      std::to_string(kAudioTokenOffset) + ",\n  \"audio_codes\": " + std::to_string(kAudioCodes) +
      ",\n  \"end_of_text_token_id\": " + std::to_string(kEndOfText) +
      ",\n  \"start_of_audio_token_id\": " + s + ",\n  \"end_of_audio_token_id\": " + e +
      "\n"
      "}\n";
  files.safetensors = w.Serialize();
  return files;
}

ModelFiles BuildTinyCodec() {
  constexpr int64_t codebook = kAudioCodes, dim = 64, layers = 2, kernel = 3, out_kernel = 7;
  const std::vector<int64_t> rates = {8, 8, 5}, kernels = {16, 16, 9}, channels = {32, 16, 8};
  SafetensorsWriter w;
  w.SetMetadata("format", "pt");
  AddUniform(w, "embed.weight", {codebook, dim}, 1.0f);
  for (int64_t i = 0; i < layers; ++i) {
    std::string p = "blocks." + std::to_string(i) + ".conv.";
    AddUniform(w, p + "weight", {dim, dim, kernel}, FanInScale(dim * kernel));
    AddUniform(w, p + "bias", {dim}, 0.1f);
  }
  int64_t in = dim;
  for (size_t j = 0; j < rates.size(); ++j) {
    std::string p = "ups." + std::to_string(j) + ".";
    // ConvTranspose1d layout [in, out, kernel]; each output sees about kernel/rate inputs.
    AddUniform(w, p + "weight", {in, channels[j], kernels[j]},
               FanInScale(in * kernels[j] / rates[j]));
    AddUniform(w, p + "bias", {channels[j]}, 0.1f);
    in = channels[j];
  }
  AddUniform(w, "out.weight", {1, in, out_kernel}, FanInScale(in * out_kernel));
  AddUniform(w, "out.bias", {1}, 0.1f);

  ModelFiles files;
  files.name = "tiny-codec";
  files.config_json =
      "{\n"
      "  \"model_type\": \"tiny_codec\",\n"
      "  \"codebook_size\": 1024,\n"
      "  \"dim\": 64,\n"
      "  \"layers\": 2,\n"
      "  \"kernel_size\": 3,\n"
      "  \"upsample_rates\": [8, 8, 5],\n"
      "  \"upsample_kernels\": [16, 16, 9],\n"
      "  \"upsample_channels\": [32, 16, 8],\n"
      "  \"out_kernel\": 7,\n"
      "  \"samples_per_token\": 320,\n"
      "  \"sample_rate\": 24000,\n"
      "  \"tokens_per_second\": 75\n"
      "}\n";
  files.safetensors = w.Serialize();
  return files;
}

}  // namespace mstar::tools

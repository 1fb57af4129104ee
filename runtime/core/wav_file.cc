// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "core/wav_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>

#include "core/file_bytes.h"

namespace mstar {
namespace {

void Put32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void Put16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v));
  out.push_back(static_cast<uint8_t>(v >> 8));
}

uint32_t Get32(const uint8_t* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

uint16_t Get16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

void PutTag(std::vector<uint8_t>& out, const char* tag) {
  out.insert(out.end(), tag, tag + 4);
}

}  // namespace

Result<uint32_t> WavDataBytes(uint64_t samples) {
  constexpr uint64_t kMostSamples = (UINT32_MAX - 36) / 2;
  if (samples > kMostSamples) {
    return InvalidArgument(std::to_string(samples) + " samples do not fit a WAV file (at most " +
                           std::to_string(kMostSamples) + " of 16 bits)");
  }
  return static_cast<uint32_t>(samples * 2);
}

Status WriteWav(const std::string& path, const std::vector<float>& samples, uint32_t sample_rate) {
  if (sample_rate == 0 || sample_rate > UINT32_MAX / 2) {
    return InvalidArgument(path + ": a sample rate of " + std::to_string(sample_rate) +
                           " Hz does not fit a 16-bit mono WAV file");
  }
  Result<uint32_t> sized = WavDataBytes(samples.size());
  if (!sized.ok()) return InvalidArgument(path + ": " + sized.status().message());
  const uint32_t data_bytes = sized.value();
  std::vector<uint8_t> bytes;
  bytes.reserve(uint64_t{44} + data_bytes);
  PutTag(bytes, "RIFF");
  Put32(bytes, 36 + data_bytes);
  PutTag(bytes, "WAVE");
  PutTag(bytes, "fmt ");
  Put32(bytes, 16);               // PCM format chunk size
  Put16(bytes, 1);                // PCM
  Put16(bytes, 1);                // mono
  Put32(bytes, sample_rate);      // samples per second
  Put32(bytes, sample_rate * 2);  // bytes per second
  Put16(bytes, 2);                // block align
  Put16(bytes, 16);               // bits per sample
  PutTag(bytes, "data");
  Put32(bytes, data_bytes);
  for (float s : samples) {
    float clipped = std::isnan(s) ? 0.0f : std::clamp(s, -1.0f, 1.0f);  // +-Inf: full scale
    Put16(bytes, static_cast<uint16_t>(static_cast<int16_t>(std::lround(clipped * 32767.0f))));
  }
  return WriteFileBytes(path, bytes);
}

Result<std::vector<float>> ReadWav(const std::string& path, uint32_t* sample_rate) {
  MSTAR_ASSIGN_OR_RETURN(const std::string file, ReadFileBytes(path));
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(file.data()), file.size());
  auto bad = [&](const std::string& why) { return InvalidArgument(path + ": " + why); };
  if (bytes.size() < 44 || std::memcmp(bytes.data(), "RIFF", 4) != 0 ||
      std::memcmp(bytes.data() + 8, "WAVE", 4) != 0)
    return bad("not a RIFF/WAVE file");
  if (Get32(bytes.data() + 4) != bytes.size() - 8) return bad("RIFF size does not match the file");
  if (std::memcmp(bytes.data() + 12, "fmt ", 4) != 0 || Get16(bytes.data() + 20) != 1 ||
      Get16(bytes.data() + 22) != 1 || Get16(bytes.data() + 34) != 16)
    return bad("not 16-bit PCM mono");
  if (std::memcmp(bytes.data() + 36, "data", 4) != 0) return bad("no data chunk after fmt");
  uint32_t data_bytes = Get32(bytes.data() + 40);
  if (data_bytes != bytes.size() - 44 || data_bytes % 2 != 0)
    return bad("data size does not match the file");
  *sample_rate = Get32(bytes.data() + 24);
  std::vector<float> samples(data_bytes / 2);
  for (size_t i = 0; i < samples.size(); ++i)
    samples[i] = static_cast<int16_t>(Get16(bytes.data() + 44 + 2 * i)) / 32767.0f;
  return samples;
}

}  // namespace mstar

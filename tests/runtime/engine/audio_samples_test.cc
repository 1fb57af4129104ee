// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// An audio chunk's bytes read as samples by their element type: floats as they are, integer PCM
// scaled to [-1, 1), anything else refused with nothing appended.
#include "engine/audio_samples.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace mstar {
namespace {

template <typename T>
std::vector<uint8_t> Bytes(const std::vector<T>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<float> Read(DLDataType type, const std::vector<uint8_t>& bytes) {
  std::vector<float> samples = {7.0f};  // appended to, never replaced
  Status read = AppendAudioSamples(type, bytes.data(), bytes.size(), &samples);
  EXPECT_TRUE(read.ok()) << read.message();
  EXPECT_EQ(samples.front(), 7.0f);
  samples.erase(samples.begin());
  return samples;
}

TEST(AudioSamples, FloatsAreTakenAsTheyAre) {
  EXPECT_EQ(Read({kDLFloat, 32, 1}, Bytes<float>({0.5f, -0.25f})),
            (std::vector<float>{0.5f, -0.25f}));
  EXPECT_EQ(Read({kDLFloat, 64, 1}, Bytes<double>({0.125, -1.0})),
            (std::vector<float>{0.125f, -1.0f}));
  // A controller's encoding (no element type) is float32.
  EXPECT_EQ(Read({0, 0, 0}, Bytes<float>({0.75f})), std::vector<float>{0.75f});
}

TEST(AudioSamples, HalfAndBfloatAreWidened) {
  // binary16: 1.0, -2.0, 0.5, the smallest subnormal, +infinity.
  std::vector<float> half =
      Read({kDLFloat, 16, 1}, Bytes<uint16_t>({0x3c00, 0xc000, 0x3800, 0x0001, 0x7c00}));
  ASSERT_EQ(half.size(), 5u);
  EXPECT_EQ(half[0], 1.0f);
  EXPECT_EQ(half[1], -2.0f);
  EXPECT_EQ(half[2], 0.5f);
  EXPECT_EQ(half[3], std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(half[4]));
  EXPECT_TRUE(std::isnan(Read({kDLFloat, 16, 1}, Bytes<uint16_t>({0x7e00}))[0]));
  // bfloat16 is float32's upper half: 1.0 and -0.375.
  EXPECT_EQ(Read({kDLBfloat, 16, 1}, Bytes<uint16_t>({0x3f80, 0xbec0})),
            (std::vector<float>{1.0f, -0.375f}));
}

TEST(AudioSamples, IntegersArePcmAtTheirFullScale) {
  EXPECT_EQ(Read({kDLInt, 16, 1}, Bytes<int16_t>({-32768, 16384, 0})),
            (std::vector<float>{-1.0f, 0.5f, 0.0f}));
  EXPECT_EQ(Read({kDLInt, 8, 1}, Bytes<int8_t>({-128, 64})), (std::vector<float>{-1.0f, 0.5f}));
  EXPECT_EQ(Read({kDLInt, 32, 1}, Bytes<int32_t>({INT32_MIN, 1 << 30})),
            (std::vector<float>{-1.0f, 0.5f}));
  EXPECT_EQ(Read({kDLInt, 64, 1}, Bytes<int64_t>({INT64_MIN, int64_t{1} << 62})),
            (std::vector<float>{-1.0f, 0.5f}));
  EXPECT_EQ(Read({kDLUInt, 8, 1}, Bytes<uint8_t>({0, 128, 192})),
            (std::vector<float>{-1.0f, 0.0f, 0.5f}));
}

TEST(AudioSamples, OtherTypesAndPartSamplesAreRefusedWithNothingAppended) {
  struct Case {
    DLDataType type;
    size_t size;
    const char* message;
  } cases[] = {
      {{kDLUInt, 16, 1}, 4, "audio samples of type uint16 are not supported"},
      {{kDLFloat, 32, 2}, 8, "audio samples of type float32x2 are not supported"},
      {{kDLComplex, 64, 1}, 8, "audio samples of type complex64 are not supported"},
      {{kDLFloat, 8, 1}, 1, "audio samples of type float8 are not supported"},
      {{9, 8, 1}, 1, "audio samples of type code 9 bits 8 are not supported"},
      {{kDLInt, 16, 1}, 3, "3 bytes are no whole number of int16 samples"},
      {{0, 0, 0}, 6, "6 bytes are no whole number of float32 samples"},
  };
  for (const Case& c : cases) {
    std::vector<uint8_t> bytes(c.size, 0);
    std::vector<float> samples = {1.0f};
    Status read = AppendAudioSamples(c.type, bytes.data(), bytes.size(), &samples);
    EXPECT_EQ(read.code(), Code::kInvalidArgument);
    EXPECT_NE(read.message().find(c.message), std::string::npos) << read.message();
    EXPECT_EQ(samples, std::vector<float>{1.0f});
  }
}

}  // namespace
}  // namespace mstar

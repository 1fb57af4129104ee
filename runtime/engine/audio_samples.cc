// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "engine/audio_samples.h"

#include <cmath>
#include <cstring>

#include "host/tensor_objects.h"

namespace mstar {
namespace {

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// IEEE 754 binary16 to float: subnormals, infinities and NaN included.
float HalfToFloat(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1u;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    magnitude = mantissa == 0 ? INFINITY : NAN;
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u), static_cast<int>(exponent) - 25);
  }
  return sign != 0 ? -magnitude : magnitude;
}

float BfloatToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// The sample at p of a supported type (Supported holds).
float SampleAt(DLDataType t, const uint8_t* p) {
  if (t.code == kDLFloat) {
    if (t.bits == 16) return HalfToFloat(Load<uint16_t>(p));
    if (t.bits == 32) return Load<float>(p);
    return static_cast<float>(Load<double>(p));
  }
  if (t.code == kDLBfloat) return BfloatToFloat(Load<uint16_t>(p));
  if (t.code == kDLUInt) return (static_cast<float>(*p) - 128.0f) / 128.0f;
  switch (t.bits) {
    case 8: return static_cast<float>(static_cast<int8_t>(*p)) / 128.0f;
    case 16: return static_cast<float>(Load<int16_t>(p)) / 32768.0f;
    case 32: return static_cast<float>(static_cast<double>(Load<int32_t>(p)) / 2147483648.0);
    default:
      return static_cast<float>(static_cast<double>(Load<int64_t>(p)) / 9223372036854775808.0);
  }
}

bool Supported(DLDataType t) {
  if (t.lanes != 1) return false;
  switch (t.code) {
    case kDLFloat: return t.bits == 16 || t.bits == 32 || t.bits == 64;
    case kDLBfloat: return t.bits == 16;
    case kDLInt: return t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
    case kDLUInt: return t.bits == 8;
    default: return false;
  }
}

}  // namespace

Status AppendAudioSamples(DLDataType element_type, const uint8_t* data, size_t size,
                          std::vector<float>* samples) {
  if (element_type.bits == 0) element_type = DLDataType{kDLFloat, 32, 1};
  if (!Supported(element_type)) {
    return InvalidArgument(
        "audio samples of type " + DTypeName(element_type) +
        " are not supported (float16/32/64, bfloat16, int8/16/32/64 or uint8 are)");
  }
  const size_t width = element_type.bits / 8u;
  if (size % width != 0) {
    return InvalidArgument(std::to_string(size) + " bytes are no whole number of " +
                           DTypeName(element_type) + " samples");
  }
  const size_t count = size / width;
  // No reserve: an exact one per chunk would copy the whole track each time (push_back grows it
  // geometrically).
  for (size_t i = 0; i < count; ++i) samples->push_back(SampleAt(element_type, data + i * width));
  return Status::Ok();
}

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace mstar::tier_disk {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // reflected Castagnoli

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? (c >> 1) ^ kPolynomial : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kTable = MakeTable();

// a(x) * b(x) modulo the polynomial, in the reflected bit order (as in zlib's crc32_combine).
uint32_t MultModP(uint32_t a, uint32_t b) {
  uint32_t m = 1u << 31;
  uint32_t product = 0;
  for (;;) {
    if ((a & m) != 0) {
      product ^= b;
      if ((a & (m - 1)) == 0) break;
    }
    m >>= 1;
    b = (b & 1) != 0 ? (b >> 1) ^ kPolynomial : b >> 1;
  }
  return product;
}

// x^(8 * bytes) modulo the polynomial: multiplying a CRC by it appends `bytes` zero bytes.
uint32_t ShiftOperator(uint64_t bytes) {
  uint32_t power = 1u << 30;   // x^1
  uint32_t result = 1u << 31;  // x^0
  for (uint64_t n = bytes * 8; n != 0; n >>= 1) {
    if ((n & 1) != 0) result = MultModP(power, result);
    power = MultModP(power, power);
  }
  return result;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Crc32cSse42(const uint8_t* p, size_t size) {
  uint64_t crc = 0xFFFFFFFFu;
  // Three independent streams hide the instruction's latency; their CRCs are then combined:
  // crc(A|B) = crc(A) * x^(8|B|) + crc(B).
  constexpr size_t kMinStriped = 3 * 1024;
  if (size >= kMinStriped) {
    const size_t lane = size / 3 / 8 * 8;
    const uint8_t* p1 = p + lane;
    const uint8_t* p2 = p + 2 * lane;
    uint64_t c0 = 0xFFFFFFFFu, c1 = 0xFFFFFFFFu, c2 = 0xFFFFFFFFu;
    for (size_t i = 0; i < lane; i += 8) {
      uint64_t w0, w1, w2;
      std::memcpy(&w0, p + i, 8);
      std::memcpy(&w1, p1 + i, 8);
      std::memcpy(&w2, p2 + i, 8);
      c0 = _mm_crc32_u64(c0, w0);
      c1 = _mm_crc32_u64(c1, w1);
      c2 = _mm_crc32_u64(c2, w2);
    }
    // Blocks mostly share one size: remember the last lane's shift (a few hundred cycles).
    thread_local size_t cached_lane = 0;
    thread_local uint32_t cached_shift = 0;
    if (cached_lane != lane) {
      cached_shift = ShiftOperator(lane);
      cached_lane = lane;
    }
    const uint32_t shift = cached_shift;
    uint32_t combined = MultModP(shift, ~static_cast<uint32_t>(c0)) ^ ~static_cast<uint32_t>(c1);
    combined = MultModP(shift, combined) ^ ~static_cast<uint32_t>(c2);
    crc = ~combined;
    p += 3 * lane;
    size -= 3 * lane;
  }
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    crc = _mm_crc32_u64(crc, word);
    p += 8;
    size -= 8;
  }
  auto crc32 = static_cast<uint32_t>(crc);
  while (size-- > 0) crc32 = _mm_crc32_u8(crc32, *p++);
  return ~crc32;
}

bool HasSse42() {
  static const bool has = __builtin_cpu_supports("sse4.2") != 0;
  return has;
}
#endif

}  // namespace

uint32_t Crc32cPortable(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t crc = 0xFFFFFFFFu;
  while (size-- > 0) crc = kTable[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

uint32_t Crc32c(const void* data, size_t size) {
#if defined(__x86_64__)
  if (HasSse42()) return Crc32cSse42(static_cast<const uint8_t*>(data), size);
#endif
  return Crc32cPortable(data, size);
}

}  // namespace mstar::tier_disk

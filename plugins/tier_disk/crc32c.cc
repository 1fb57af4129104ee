// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
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

// Carry-less multiplication folding (Intel's "Fast CRC Computation Using PCLMULQDQ"): a 128-bit
// lane C = H * x^64 + L (H: its first 8 bytes) moved D bits further down the message becomes
// H * (x^(D+64) mod P) + L * (x^D mod P), at most 96 bits, XORed into the lane there. In the
// reflected bit order the product of two 64-bit lanes comes out one bit short, hence the
// constant x^(D-1) below, stored in the upper half of its 64-bit lane.
uint64_t FoldConstant(uint64_t distance_bits) {
  uint32_t power = 1u << 30;   // x^1
  uint32_t result = 1u << 31;  // x^0
  for (uint64_t n = distance_bits - 1; n != 0; n >>= 1) {
    if ((n & 1) != 0) result = MultModP(power, result);
    power = MultModP(power, power);
  }
  return uint64_t{result} << 32;
}

#define MSTAR_CRC_FOLD_TARGET __attribute__((target("vpclmulqdq,avx2,pclmul,sse4.2")))

MSTAR_CRC_FOLD_TARGET inline __m128i Fold(__m128i lane, __m128i k, __m128i next) {
  return _mm_xor_si128(
      _mm_xor_si128(_mm_clmulepi64_si128(lane, k, 0x00), _mm_clmulepi64_si128(lane, k, 0x11)),
      next);
}

MSTAR_CRC_FOLD_TARGET inline __m256i Fold(__m256i lanes, __m256i k, __m256i next) {
  return _mm256_xor_si256(_mm256_xor_si256(_mm256_clmulepi64_epi128(lanes, k, 0x00),
                                           _mm256_clmulepi64_epi128(lanes, k, 0x11)),
                          next);
}

MSTAR_CRC_FOLD_TARGET inline __m256i Load(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// CRC-32C with the vector unit and the crc32 instruction working side by side (they use different
// execution ports): the first part of the data is folded 128 bytes a step in four 256-bit
// registers, the rest runs as three crc32 streams, and the partial CRCs are combined at the end.
// Needs size >= 2 * kStep.
constexpr size_t kFoldBytes = 128;   // per step, folded with vpclmulqdq
constexpr size_t kStreamBytes = 40;  // per step, in each of three crc32 streams
constexpr size_t kStep = kFoldBytes + 3 * kStreamBytes;
constexpr size_t kMinFold = 16 * kStep;

MSTAR_CRC_FOLD_TARGET uint32_t Crc32cFold(const uint8_t* p, size_t size) {
  static const uint64_t k1024 = FoldConstant(1024), k1088 = FoldConstant(1024 + 64);
  static const uint64_t k256 = FoldConstant(256), k320 = FoldConstant(256 + 64);
  static const uint64_t k128 = FoldConstant(128), k192 = FoldConstant(128 + 64);
  const __m256i fold_step =
      _mm256_set_epi64x(static_cast<int64_t>(k1024), static_cast<int64_t>(k1088),
                        static_cast<int64_t>(k1024), static_cast<int64_t>(k1088));
  const __m256i fold_256 =
      _mm256_set_epi64x(static_cast<int64_t>(k256), static_cast<int64_t>(k320),
                        static_cast<int64_t>(k256), static_cast<int64_t>(k320));
  const __m128i fold_128 = _mm_set_epi64x(static_cast<int64_t>(k128), static_cast<int64_t>(k192));

  const size_t steps = size / kStep;
  const size_t lane = steps * kStreamBytes;
  const uint8_t* a = p;
  const uint8_t* s0 = p + steps * kFoldBytes;
  const uint8_t* s1 = s0 + lane;
  const uint8_t* s2 = s1 + lane;
  uint64_t c0 = 0xFFFFFFFFu, c1 = 0xFFFFFFFFu, c2 = 0xFFFFFFFFu;
  auto streams = [&](size_t at) MSTAR_CRC_FOLD_TARGET {
    for (size_t i = at; i < at + kStreamBytes; i += 8) {
      uint64_t w0, w1, w2;
      std::memcpy(&w0, s0 + i, 8);
      std::memcpy(&w1, s1 + i, 8);
      std::memcpy(&w2, s2 + i, 8);
      c0 = _mm_crc32_u64(c0, w0);
      c1 = _mm_crc32_u64(c1, w1);
      c2 = _mm_crc32_u64(c2, w2);
    }
  };
  // The initial CRC value ~0 is the same as inverting the first 32 bits of the message.
  __m256i x0 = _mm256_xor_si256(Load(a), _mm256_set_epi64x(0, 0, 0, 0xFFFFFFFF));
  __m256i x1 = Load(a + 32), x2 = Load(a + 64), x3 = Load(a + 96);
  streams(0);
  for (size_t step = 1; step < steps; ++step) {
    const uint8_t* q = a + step * kFoldBytes;
    x0 = Fold(x0, fold_step, Load(q));
    x1 = Fold(x1, fold_step, Load(q + 32));
    x2 = Fold(x2, fold_step, Load(q + 64));
    x3 = Fold(x3, fold_step, Load(q + 96));
    streams(step * kStreamBytes);
  }
  x1 = Fold(x0, fold_256, x1);
  x2 = Fold(x1, fold_256, x2);
  x3 = Fold(x2, fold_256, x3);
  const __m128i last = Fold(_mm256_castsi256_si128(x3), fold_128, _mm256_extracti128_si256(x3, 1));
  // The CRC (no initial value, no final inversion) of the remaining 128 bits is that of the
  // folded part.
  uint64_t folded = _mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(last)));
  folded = _mm_crc32_u64(folded, static_cast<uint64_t>(_mm_extract_epi64(last, 1)));

  // crc(A|B) = crc(A) * x^(8|B|) + crc(B), for CRCs with the initial value and final inversion.
  thread_local size_t cached_lane = 0;
  thread_local uint32_t cached_shift = 0;
  if (cached_lane != lane) {
    cached_shift = ShiftOperator(lane);
    cached_lane = lane;
  }
  uint32_t crc =
      MultModP(cached_shift, ~static_cast<uint32_t>(folded)) ^ ~static_cast<uint32_t>(c0);
  crc = MultModP(cached_shift, crc) ^ ~static_cast<uint32_t>(c1);
  crc = MultModP(cached_shift, crc) ^ ~static_cast<uint32_t>(c2);

  const uint8_t* tail = s2 + lane;
  size_t left = size - static_cast<size_t>(tail - p);
  uint64_t c = ~crc;
  for (; left >= 8; left -= 8, tail += 8) {
    uint64_t word;
    std::memcpy(&word, tail, 8);
    c = _mm_crc32_u64(c, word);
  }
  auto c32 = static_cast<uint32_t>(c);
  for (; left > 0; --left) c32 = _mm_crc32_u8(c32, *tail++);
  return ~c32;
}

bool HasFold() {
  static const bool has =
      __builtin_cpu_supports("sse4.2") != 0 && __builtin_cpu_supports("pclmul") != 0 &&
      __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("vpclmulqdq") != 0;
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
  const auto* p = static_cast<const uint8_t*>(data);
  if (size >= kMinFold && HasFold()) return Crc32cFold(p, size);
  if (HasSse42()) return Crc32cSse42(p, size);
#endif
  return Crc32cPortable(data, size);
}

}  // namespace mstar::tier_disk

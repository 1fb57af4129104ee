// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// CRC-32C (Castagnoli), the checksum of tier_disk's block files: the SSE4.2 crc32 instruction
// where the CPU has it, a table otherwise. Both give the same value (CRC-32C of "123456789" is
// 0xE3069283). Thread-safe, never fails.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mstar::tier_disk {

uint32_t Crc32c(const void* data, size_t size);
// The table implementation, for checking the fast path.
uint32_t Crc32cPortable(const void* data, size_t size);

}  // namespace mstar::tier_disk

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The checksums of tier_disk's block files (xxHash's XXH3, libxxhash): XXH3-128 of the payload
// and XXH3-64 of the header. Where libxxhash has its x86-64 run-time dispatch they use it, so the
// widest vector unit the CPU has is used (AVX-512, AVX2, else SSE2); every choice gives the same
// value.
// Thread-safe, never fail; size 0 is allowed with any pointer.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mstar::tier_disk {

struct BlockPayloadHash {
  uint64_t low = 0;
  uint64_t high = 0;
};

// XXH3-128 (seed 0) of size bytes at data.
BlockPayloadHash HashBlockPayload(const void* data, size_t size);
// XXH3-64 (seed 0) of size bytes at data.
uint64_t BlockHeaderHash(const void* data, size_t size);

}  // namespace mstar::tier_disk

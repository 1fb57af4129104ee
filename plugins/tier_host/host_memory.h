// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// HostBlockMemory: where tier_host's block bytes live. This is the seam for pinned memory: on
// CUDA builds the allocation below becomes cudaHostAlloc/cudaFreeHost (page-locked, so that GET
// and PUT of device blocks can be asynchronous DMA), and the tier then reports device_access.
// Today it is ordinary host memory from operator new.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace mstar::tier_host {

class HostBlockMemory {
 public:
  HostBlockMemory() = default;
  // Allocates size bytes (uninitialised); throws std::bad_alloc when memory is exhausted.
  explicit HostBlockMemory(uint64_t size)
      : bytes_(size == 0 ? nullptr : std::make_unique_for_overwrite<uint8_t[]>(size)),
        size_(size) {}

  uint8_t* data() { return bytes_.get(); }
  const uint8_t* data() const { return bytes_.get(); }
  uint64_t size() const { return size_; }

 private:
  std::unique_ptr<uint8_t[]> bytes_;
  uint64_t size_ = 0;
};

}  // namespace mstar::tier_host

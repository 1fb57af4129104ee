// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// HostBlockMemory: where tier_host's block bytes live. Every block is allocated through the host
// services (memory_alloc on the host device with MSTAR_MEMORY_PINNED): page-locked memory on CUDA
// builds, so that device<->tier copies can be asynchronous DMA, and ordinary host memory on CPU
// builds. Either way the bytes count against the runtime's host memory budget and show in its
// metrics.
//
// Thread-safety: HostAllocator has its own mutex and the host's memory services are thread-safe,
// so blocks may be allocated and freed from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mstar/host.h"

namespace mstar::tier_host {

class HostAllocator {
 public:
  // host and context are borrowed from the instance and outlive the allocator. Up to keep_bytes
  // of freed blocks are kept for reuse by later blocks of the same size (offloaded KV blocks all
  // have one size), because a fresh allocation costs page faults on CPU builds and page-locking
  // (cudaMallocHost, about a millisecond per few MiB) on CUDA builds, both far slower than the
  // copy of the block itself.
  HostAllocator(const mstar_host_api_t* host, mstar_host_context_t* context, uint64_t keep_bytes)
      : host_(host), context_(context), keep_bytes_(keep_bytes) {}
  ~HostAllocator() {
    for (auto& [size, blocks] : free_)
      for (void* ptr : blocks) host_->memory_free(context_, ptr);
  }
  HostAllocator(const HostAllocator&) = delete;
  HostAllocator& operator=(const HostAllocator&) = delete;

  // size bytes (uninitialised), or nullptr when the budget or host memory is exhausted.
  void* Allocate(uint64_t size) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        void* ptr = it->second.back();
        it->second.pop_back();
        free_bytes_ -= size;
        return ptr;
      }
    }
    void* ptr = Fresh(size);
    // Refused (the budget, or host memory): the blocks kept for reuse, of other sizes, go back
    // first, and the allocation is tried once more.
    if (ptr == nullptr && ReleaseKept()) ptr = Fresh(size);
    return ptr;
  }
  // Gives every kept block back to the host; false when none was kept.
  bool ReleaseKept() {
    std::unordered_map<uint64_t, std::vector<void*>> kept;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (free_bytes_ == 0) return false;
      kept.swap(free_);
      free_bytes_ = 0;
    }
    for (auto& [size, blocks] : kept)
      for (void* ptr : blocks) host_->memory_free(context_, ptr);
    return true;
  }
  // Takes back a block of size bytes from Allocate. Never throws (slabs free from destructors):
  // out of memory to keep it, the block goes back to the host.
  void Free(void* ptr, uint64_t size) noexcept {
    try {
      std::lock_guard<std::mutex> lock(mutex_);
      if (free_bytes_ + size <= keep_bytes_) {
        free_[size].push_back(ptr);
        free_bytes_ += size;
        return;
      }
    } catch (const std::bad_alloc&) {
    }
    host_->memory_free(context_, ptr);
  }

 private:
  void* Fresh(uint64_t size) {
    void* ptr = nullptr;
    mstar_status_t* status =
        host_->memory_alloc(context_, DLDevice{kDLCPU, 0}, size, 0, MSTAR_MEMORY_PINNED, &ptr);
    if (status != nullptr) {
      host_->status_release(status);
      return nullptr;
    }
    return ptr;
  }

  const mstar_host_api_t* host_;
  mstar_host_context_t* context_;
  const uint64_t keep_bytes_;
  std::mutex mutex_;
  std::unordered_map<uint64_t, std::vector<void*>> free_;  // by size
  uint64_t free_bytes_ = 0;
};

// size bytes from an allocator, given back when the last block carved from it is gone.
class HostSlab {
 public:
  // Throws std::bad_alloc when the allocator is out of memory.
  HostSlab(HostAllocator& allocator, uint64_t size) : allocator_(allocator), size_(size) {
    if (size == 0) return;
    bytes_ = static_cast<uint8_t*>(allocator.Allocate(size));
    if (bytes_ == nullptr) throw std::bad_alloc();
  }
  ~HostSlab() {
    if (bytes_ != nullptr) allocator_.Free(bytes_, size_);
  }
  HostSlab(const HostSlab&) = delete;
  HostSlab& operator=(const HostSlab&) = delete;

  uint8_t* data() { return bytes_; }
  uint64_t size() const { return size_; }

 private:
  HostAllocator& allocator_;
  uint64_t size_;
  uint8_t* bytes_ = nullptr;
};

// One block's bytes: size bytes at offset in a slab it shares with the blocks PUT in the same run
// (a slab of its own otherwise). Movable; the slab lives while any of its blocks does.
class HostBlockMemory {
 public:
  HostBlockMemory() = default;
  // A slab of its own. Throws std::bad_alloc when the allocator is out of memory.
  HostBlockMemory(HostAllocator& allocator, uint64_t size)
      : slab_(std::make_shared<HostSlab>(allocator, size)), size_(size) {}
  HostBlockMemory(std::shared_ptr<HostSlab> slab, uint64_t offset, uint64_t size)
      : slab_(std::move(slab)), offset_(offset), size_(size) {}

  uint8_t* data() { return slab_ ? slab_->data() + offset_ : nullptr; }
  uint64_t size() const { return size_; }
  const HostSlab* slab() const { return slab_.get(); }
  // The bytes of the slab this block keeps alive (its own size for a block with a slab of its
  // own; a whole run's for a block of a run).
  uint64_t slab_size() const { return slab_ ? slab_->size() : 0; }

 private:
  std::shared_ptr<HostSlab> slab_;
  uint64_t offset_ = 0;
  uint64_t size_ = 0;
};

}  // namespace mstar::tier_host

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// DeviceBlockCache: freed blocks of one device, kept for the next allocation of about their
// size. On a GPU each step allocates and frees small device tensors (a replayed graph's outputs
// copied out per row, a resource's view indices, a region's inputs); cudaMalloc costs tens of
// microseconds and cudaFree waits for the whole device, which also undoes the overlap of the
// engine's streams. The cache turns those into a map lookup.
//
// Safety: a freed block may still be read or written by work enqueued before the free (the host's
// memory_free promises nothing else, as cudaFree waits for it). A freed block is therefore reused
// only once a fence recorded after its free (DeviceBackend::RecordFence: every stream the backend
// made on the device, and the default stream) is done. Frees cost no device call; the first
// allocation that finds no reusable block records one fence for all blocks freed since the last.
// While the device captures a graph no fence is recorded or asked about: the cache then hands
// other threads blocks found ready before, and otherwise allocates from the backend. The
// capturing thread itself gets nothing (FAILED_PRECONDITION): a block handed to it would be baked
// into the graph, which would go on writing it after it was freed and reused (without the cache,
// cudaMalloc fails there too).
//
// Size: a request is rounded up to kGranule bytes; a cached block is reused for a request between
// three quarters of its size and its size. Blocks are aligned as the backend aligns them
// (kAlignment). Cached blocks are given back (Trim, Release) when the backend is out of memory or
// the owner's budget needs the room; Backend::Free is safe with work in flight, so that needs no
// fence. The cache shares the device with other allocators (LibTorch's), so it keeps only what
// steps churn: a block above Limits::largest_block goes straight back to the backend when freed,
// and once more than Limits::most_cached bytes are cached the largest go back.
//
// Thread-safety: all methods are thread-safe. The backend outlives the cache.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "device/device.h"

namespace mstar {

class DeviceBlockCache {
 public:
  static constexpr uint64_t kGranule = 512;
  static constexpr uint64_t kAlignment = 256;

  struct Stats {
    uint64_t cached_bytes = 0;  // held for reuse (ready, or waiting for a fence)
    uint64_t reused = 0;        // allocations served from the cache
    uint64_t allocated = 0;     // allocations that went to the backend
    uint64_t fences = 0;        // fences recorded
    uint64_t given_back = 0;    // cached blocks freed to the backend (trim, release)
  };

  struct Limits {
    uint64_t largest_block = uint64_t{64} << 20;  // larger blocks are not cached
    uint64_t most_cached = uint64_t{1} << 30;     // bytes cached at most
  };

  DeviceBlockCache(DeviceBackend* backend, DLDevice device)
      : DeviceBlockCache(backend, device, {}) {}
  DeviceBlockCache(DeviceBackend* backend, DLDevice device, Limits limits);
  // Gives every cached block back. Blocks still handed out are the caller's to Free first.
  ~DeviceBlockCache();
  DeviceBlockCache(const DeviceBlockCache&) = delete;
  DeviceBlockCache& operator=(const DeviceBlockCache&) = delete;

  // A block of at least size bytes, kAlignment-aligned; first, cached blocks beyond
  // keep_at_most bytes go back to the backend (the owner's budget needs the room). When the
  // backend is out of memory the cache gives back what it holds and tries once more;
  // kResourceExhausted if that fails too.
  // A reused block is at most largest bytes (an owner under a budget asks for Rounded(size):
  // it has reserved no more). BlockSize says how large the block handed out is.
  Result<void*> Allocate(uint64_t size, uint64_t keep_at_most = UINT64_MAX,
                         uint64_t largest = UINT64_MAX);
  // The size of a block Allocate handed out and Free has not taken back: Rounded(size) for a
  // fresh one, up to a third more for a reused one.
  uint64_t BlockSize(void* ptr) const;
  // A request's size rounded up to kGranule (what a fresh block of it takes).
  static uint64_t Rounded(uint64_t size);
  // Takes back a block from Allocate (the caller guarantees it is one, freed once): cached, or
  // given back when it is larger than the limits allow.
  void Free(void* ptr);
  // Whether freed blocks are kept (the default) or given straight back to the backend, as
  // without a cache (for debugging device memory, e.g. under compute-sanitizer). Turning it off
  // gives back every cached block.
  void SetKeeping(bool keep);
  // Gives cached blocks back to the backend until at most keep_bytes stay cached.
  void Trim(uint64_t keep_bytes);
  void Release() { Trim(0); }

  Stats stats() const;
  DLDevice device() const { return device_; }

 private:
  struct Block {
    void* ptr;
    uint64_t size;
  };
  struct Fenced {
    std::vector<Block> blocks;
    std::unique_ptr<DeviceFence> fence;
  };

  // The *Locked functions run under mutex_. Those given `later` may take blocks off the books
  // (a fence failed, or host memory ran out); they go to later, for the caller to give back to
  // the backend once it has let go of mutex_ (Backend::Free may wait for the device).

  // Moves blocks whose fences are done to ready_ (oldest fence first); the blocks of a fence
  // that fails go to later.
  void CollectLocked(std::vector<Block>& later);
  // A ready block for size bytes of at most largest bytes, or nullptr.
  void* TakeReadyLocked(uint64_t size, uint64_t largest);
  // Fences the blocks freed since the last fence (when there are any and the device allows it).
  void FenceFreedLocked(std::vector<Block>& later);
  // Removes cached blocks until at most keep_bytes stay; returns them (or, when host memory
  // runs out for the list, gives them back to the backend at once).
  std::vector<Block> TakeCachedLocked(uint64_t keep_bytes);
  // Notes a block fresh from the backend; false, noting nothing, when host memory runs out.
  bool RecordLocked(void* ptr, uint64_t size);
  // Holds a freed block for the next fence; false, holding nothing, when host memory runs out.
  bool HoldFreedLocked(const Block& block);
  // Makes a block whose fence is done reusable, or drops it when host memory runs out.
  void MakeReadyLocked(const Block& block, std::vector<Block>& later);
  // A cached block leaves the books for later (or, when even that cannot be noted, goes back to
  // the backend at once).
  void DropLocked(const Block& block, std::vector<Block>& later);
  // A cached block leaves the books (it is about to go back to the backend).
  void ForgetLocked(const Block& block);
  void GiveBack(const std::vector<Block>& blocks);

  DeviceBackend* const backend_;
  const DLDevice device_;
  const Limits limits_;
  bool keep_ = true;  // under mutex_
  mutable std::mutex mutex_;
  std::unordered_map<void*, uint64_t> sizes_;  // every block allocated, by pointer
  std::multimap<uint64_t, void*> ready_;       // reusable now, by size
  std::vector<Block> freed_;                   // freed since the last fence
  std::deque<Fenced> fenced_;                  // waiting for their fences, oldest first
  Stats stats_;
};

}  // namespace mstar

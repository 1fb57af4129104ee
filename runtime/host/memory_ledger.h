// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// MemoryLedger: every byte the host allocates for plugins (memory_alloc, tensor_alloc), who holds
// it, and each device's budget. A block can only be freed once and only if the ledger gave it out,
// so a plugin's double free or stray free is reported instead of corrupting the heap. A block
// counts (against its owner and the device's budget) as the bytes it takes, not the bytes asked
// for: a recycled block's size class, a cached device block's rounded or reused size; otherwise
// the request's size.
//
// Small blocks of ordinary host memory (up to kLargestCached bytes) are recycled: a freed block
// leaves the books at once (it is no longer anyone's, nor counted as used) but is kept, up to a
// bound per size class, for the next allocation of its class, so steps that allocate and free
// small tensors do not go to the heap. Not under AddressSanitizer (host/recycler.h). Freed blocks
// of devices whose backend asks for it (CUDA device memory) go to a DeviceBlockCache per device
// (device/block_cache.h), reused once the device's work enqueued before the free has finished;
// cached bytes are not counted as used, and the cache is trimmed so that used and cached bytes
// together stay within the device's budget.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include <dlpack/dlpack.h>

#include "core/status.h"
#include "device/block_cache.h"

struct mstar_host_context;

namespace mstar {

class MemoryLedger {
 public:
  static constexpr uint64_t kSmallestCached = 256;  // also the alignment of cached blocks
  static constexpr int kCachedClasses = 5;          // 256, 512, ..., 4096 bytes
  static constexpr uint64_t kCachedBytesPerClass = uint64_t{1} << 20;

  // Never destroyed (blocks may be freed while the process exits).
  static MemoryLedger& Global();
  MemoryLedger() = default;
  ~MemoryLedger();
  MemoryLedger(const MemoryLedger&) = delete;
  MemoryLedger& operator=(const MemoryLedger&) = delete;

  // Allocates on device for owner (may be null: the runtime itself). pinned asks for page-locked
  // memory for host devices (ordinary memory when this build or machine has no CUDA).
  // kResourceExhausted when the device's budget would be exceeded (by the bytes the block takes)
  // or the device is full. tensor_storage marks the block as a host tensor's (FreeForOwner refuses
  // it).
  Result<void*> Allocate(const mstar_host_context* owner, DLDevice device, uint64_t size,
                         uint64_t alignment, bool pinned, bool tensor_storage = false);
  // kNotFound when ptr did not come from Allocate or was freed already.
  Status Free(void* ptr);
  // Free for a plugin's memory_free: also refuses (kFailedPrecondition, freeing nothing) a block
  // owner did not allocate or that is a tensor's storage (freed when the tensor is released).
  Status FreeForOwner(void* ptr, const mstar_host_context* owner);

  uint64_t UsedBy(const mstar_host_context* owner, DLDevice device) const;
  // Bytes in use against device's budget (every host device's together).
  uint64_t Used(DLDevice device) const;
  // Bytes of blocks still held by owner on any device.
  uint64_t HeldBy(const mstar_host_context* owner) const;
  // HeldBy less tensor storage: the bytes of owner's memory_alloc blocks not freed yet. Walks
  // every block (for an instance's end, not for hot paths).
  uint64_t AllocatedBy(const mstar_host_context* owner) const;
  // Budget per device type; 0 is unlimited. kDLCPU's covers kDLCUDAHost (pinned) memory too.
  void SetLimit(DLDeviceType type, uint64_t bytes);
  uint64_t Limit(DLDevice device) const;
  // Whether freed blocks of devices whose backend asks for it are kept by their DeviceBlockCache
  // for reuse (the default) or go straight back to the device (DeviceBlockCache::SetKeeping;
  // turning it off gives every cached block back).
  void SetDeviceCaching(bool on);
  // The block cache's counters for device (all zero when it has none).
  DeviceBlockCache::Stats CacheStats(DLDevice device) const;
  // Every device's block cache counters, by device (empty when no device caches blocks).
  std::vector<std::pair<DLDevice, DeviceBlockCache::Stats>> AllCacheStats() const;

 private:
  struct Block {
    DLDevice device;     // as requested (accounting)
    DLDevice allocated;  // where it really lives (pinned host memory is kDLCUDAHost)
    uint64_t size;
    const mstar_host_context* owner;
    int size_class;           // its recycling class, or -1
    DeviceBlockCache* cache;  // where it goes back on Free, or nullptr (the backend)
    bool tensor_storage = false;
  };
  // Free's work; with check_owner, refuses a block of another owner or a tensor's storage.
  Status FreeBlock(void* ptr, bool check_owner, const mstar_host_context* owner);
  using Blocks = std::unordered_map<void*, Block>;
  static int64_t DeviceKey(DLDevice device);
  // Host memory (any kDLCPU index, pinned kDLCUDAHost) is one budget, host_budget: the device
  // type whose limit applies, and the key its use is counted under.
  static DLDeviceType BudgetType(DLDevice device);
  static int64_t BudgetKey(DLDevice device);
  // The recycling class of a block, or -1 (not plain host memory, too large, or aligned more
  // than kSmallestCached).
  static int SizeClass(DLDevice target, uint64_t size, uint64_t alignment);
  // Under mutex_: enters a block given out.
  void Record(void* ptr, const Block& block);
  // Under mutex_: the cache for target's freed blocks (made on first use over backend).
  DeviceBlockCache* CacheForLocked(DLDevice target, DeviceBackend* backend);

  mutable std::mutex mutex_;
  Blocks blocks_;
  std::vector<Blocks::node_type> spare_nodes_;  // blocks_ nodes kept for reuse
  std::vector<void*> cached_[kCachedClasses];   // free blocks by size class
  std::map<std::pair<const mstar_host_context*, int64_t>, uint64_t> by_owner_;
  std::map<int64_t, uint64_t> used_;
  std::map<int32_t, uint64_t> limits_;
  std::map<int64_t, std::unique_ptr<DeviceBlockCache>> caches_;  // by DeviceKey
  bool device_caching_ = true;
};

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "host/memory_ledger.h"

#include "core/fault_injection.h"
#include "device/device.h"
#include "host/recycler.h"

namespace mstar {
namespace {

constexpr size_t kSpareNodes = 4096;

}  // namespace

MemoryLedger& MemoryLedger::Global() {
  static MemoryLedger* ledger = new MemoryLedger();
  return *ledger;
}

MemoryLedger::~MemoryLedger() {
  Result<DeviceBackend*> cpu = BackendFor(DLDevice{kDLCPU, 0});
  if (!cpu.ok()) return;
  for (std::vector<void*>& cached : cached_) {
    for (void* ptr : cached) cpu.value()->Free(DLDevice{kDLCPU, 0}, ptr);
  }
}

int MemoryLedger::SizeClass(DLDevice target, uint64_t size, uint64_t alignment) {
  if (!kRecycling || target.device_type != kDLCPU || alignment > kSmallestCached) return -1;
  for (int c = 0; c < kCachedClasses; ++c) {
    if (size <= (kSmallestCached << c)) return c;
  }
  return -1;
}

namespace {

Status NoRecordMemory(DLDevice device, const std::bad_alloc& error) {
  return ResourceExhausted("no memory to record a block of " + DeviceName(device) + ": " +
                           error.what());
}

}  // namespace

void MemoryLedger::Record(void* ptr, const Block& block) {
  MaybeFailHostObject();
  // The owner's entry first: when the block's cannot be made either, nothing stays recorded (a
  // block entry left behind would be taken for the next block given out at that address).
  const auto owner_key = std::make_pair(block.owner, DeviceKey(block.device));
  uint64_t& held = by_owner_[owner_key];
  try {
    MaybeFailHostObject();
    if (spare_nodes_.empty()) {
      blocks_.emplace(ptr, block);
    } else {
      Blocks::node_type node = std::move(spare_nodes_.back());
      spare_nodes_.pop_back();
      node.key() = ptr;
      node.mapped() = block;
      blocks_.insert(std::move(node));
    }
  } catch (const std::bad_alloc&) {
    if (held == 0) by_owner_.erase(owner_key);
    throw;
  }
  held += block.size;
}

int64_t MemoryLedger::DeviceKey(DLDevice device) {
  return (static_cast<int64_t>(device.device_type) << 32) | static_cast<uint32_t>(device.device_id);
}

DLDeviceType MemoryLedger::BudgetType(DLDevice device) {
  return IsHostDevice(device) ? kDLCPU : device.device_type;
}

int64_t MemoryLedger::BudgetKey(DLDevice device) {
  return IsHostDevice(device) ? DeviceKey(DLDevice{kDLCPU, 0}) : DeviceKey(device);
}

Result<void*> MemoryLedger::Allocate(const mstar_host_context* owner, DLDevice device,
                                     uint64_t size, uint64_t alignment, bool pinned,
                                     bool tensor_storage) {
  if (uint64_t ordinal = 0; ShouldInjectFault(FaultSite::kAllocation, &ordinal)) {
    return ResourceExhausted("injected fault (allocation #" + std::to_string(ordinal) + " of " +
                             std::to_string(size) + " bytes)");
  }
  if (alignment == 0) alignment = 256;
  if ((alignment & (alignment - 1)) != 0) {
    return InvalidArgument("alignment " + std::to_string(alignment) + " is not a power of two");
  }
  DLDevice target = device;
  if (pinned && IsHostDevice(device)) target = DLDevice{kDLCUDAHost, 0};
  const int size_class = SizeClass(target, size, alignment);
  const Result<DeviceBackend*> backend = BackendFor(target);
  const bool cacheable = size_class < 0 && backend.ok() &&
                         alignment <= DeviceBlockCache::kAlignment &&
                         backend.value()->CachesFreedBlocks(target);
  // What the block takes: a size class's bytes, the cache's rounding (without a budget a reused
  // block may be up to a third larger: charged once known), or the request.
  const uint64_t charge = size_class >= 0 ? kSmallestCached << size_class
                          : cacheable     ? DeviceBlockCache::Rounded(size)
                                          : size;
  DeviceBlockCache* cache = nullptr;
  uint64_t room = UINT64_MAX;  // what cached blocks may take besides used
  {
    std::lock_guard<std::mutex> lock(mutex_);
    uint64_t limit = 0;
    if (auto it = limits_.find(BudgetType(device)); it != limits_.end()) limit = it->second;
    uint64_t& used = used_[BudgetKey(device)];
    if (charge > UINT64_MAX - used) {  // more than any memory; the sum would wrap
      return ResourceExhausted(std::to_string(size) + " bytes of " + DeviceName(device) +
                               " requested, more than any memory");
    }
    if (limit != 0 && used + charge > limit) {
      return ResourceExhausted(
          "memory budget of " + DeviceName(device) + " exceeded: " + std::to_string(used) + " of " +
          std::to_string(limit) + " bytes in use, " + std::to_string(size) + " requested (" +
          std::to_string(charge) + " with the block's rounding)");
    }
    used += charge;  // reserve before allocating
    if (limit != 0) room = limit - used;
    if (size_class >= 0 && !cached_[size_class].empty()) {
      void* ptr = cached_[size_class].back();
      cached_[size_class].pop_back();
      try {
        Record(ptr, Block{device, target, charge, owner, size_class, nullptr, tensor_storage});
      } catch (const std::bad_alloc& error) {
        cached_[size_class].push_back(ptr);  // into the slot it just left: no allocation
        used -= charge;
        return NoRecordMemory(device, error);
      }
      return ptr;
    }
    if (cacheable) {
      try {
        cache = CacheForLocked(target, backend.value());
      } catch (const std::bad_alloc& error) {
        used -= charge;
        return NoRecordMemory(device, error);
      }
    }
  }
  Result<void*> ptr = backend.status();
  uint64_t block_size = charge;
  if (cache != nullptr) {
    // Under a budget only a block of the charged size is reused: a larger one's extra bytes,
    // charged after the lock was let go, could take room another allocation reserved meanwhile.
    ptr = cache->Allocate(size, room, room == UINT64_MAX ? UINT64_MAX : charge);
    if (ptr.ok()) block_size = cache->BlockSize(ptr.value());
  } else if (backend.ok()) {
    uint64_t real_alignment = size_class >= 0 ? kSmallestCached : alignment;
    ptr = backend.value()->Allocate(target, charge, real_alignment);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (!ptr.ok()) {
    used_[BudgetKey(device)] -= charge;
    return ptr.status();
  }
  used_[BudgetKey(device)] += block_size - charge;
  try {
    Record(ptr.value(),
           Block{device, target, block_size, owner, size_class, cache, tensor_storage});
  } catch (const std::bad_alloc& error) {
    // The block goes back unrecorded, and its charge with it (lock order: ledger, cache, backend).
    used_[BudgetKey(device)] -= block_size;
    if (cache != nullptr) {
      cache->Free(ptr.value());
    } else {
      backend.value()->Free(target, ptr.value());
    }
    return NoRecordMemory(device, error);
  }
  return ptr;
}

DeviceBlockCache* MemoryLedger::CacheForLocked(DLDevice target, DeviceBackend* backend) {
  std::unique_ptr<DeviceBlockCache>& cache = caches_[DeviceKey(target)];
  if (cache == nullptr) {
    cache = std::make_unique<DeviceBlockCache>(backend, target);
    cache->SetKeeping(device_caching_);
  }
  return cache.get();
}

void MemoryLedger::SetDeviceCaching(bool on) {
  std::vector<DeviceBlockCache*> caches;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    device_caching_ = on;
    for (auto& [key, cache] : caches_) caches.push_back(cache.get());
  }
  // Caches are never destroyed before the ledger, so they outlive the lock.
  for (DeviceBlockCache* cache : caches) cache->SetKeeping(on);
}

std::vector<std::pair<DLDevice, DeviceBlockCache::Stats>> MemoryLedger::AllCacheStats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<DLDevice, DeviceBlockCache::Stats>> all;
  for (const auto& [key, cache] : caches_) all.emplace_back(cache->device(), cache->stats());
  return all;
}

DeviceBlockCache::Stats MemoryLedger::CacheStats(DLDevice device) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = caches_.find(DeviceKey(device));
  return it == caches_.end() ? DeviceBlockCache::Stats{} : it->second->stats();
}

Status MemoryLedger::Free(void* ptr) {
  return FreeBlock(ptr, false, nullptr);
}

Status MemoryLedger::FreeForOwner(void* ptr, const mstar_host_context* owner) {
  return FreeBlock(ptr, true, owner);
}

Status MemoryLedger::FreeBlock(void* ptr, bool check_owner, const mstar_host_context* owner) {
  Block block;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(ptr);
    if (it == blocks_.end()) {
      return NotFound("pointer was not allocated by the host, or was freed already");
    }
    if (check_owner && it->second.tensor_storage) {
      return FailedPrecondition(
          "the memory is a tensor's storage: release the tensor (tensor_release) instead");
    }
    if (check_owner && it->second.owner != owner) {
      return FailedPrecondition("the memory was allocated by another owner, not this instance");
    }
    block = it->second;
    // A free never fails for want of memory (it runs in deleters): a node or block the spare
    // lists cannot take is freed instead.
    Blocks::node_type node = blocks_.extract(it);
    if (spare_nodes_.size() < kSpareNodes) {
      try {
        spare_nodes_.push_back(std::move(node));
      } catch (const std::bad_alloc&) {
      }
    }
    used_[BudgetKey(block.device)] -= block.size;
    // An owner's entry goes once its bytes reach 0, which its zero-byte blocks may outlive.
    auto owner_it = by_owner_.find({block.owner, DeviceKey(block.device)});
    if (owner_it != by_owner_.end()) {
      owner_it->second -= block.size;
      if (owner_it->second == 0) by_owner_.erase(owner_it);
    }
    if (block.size_class >= 0) {
      std::vector<void*>& cached = cached_[block.size_class];
      if (cached.size() < (kCachedBytesPerClass >> block.size_class) / kSmallestCached) {
        try {
          cached.push_back(ptr);
          return Status::Ok();
        } catch (const std::bad_alloc&) {  // to the backend, below
        }
      }
    }
  }
  if (block.cache != nullptr) {
    block.cache->Free(ptr);
    return Status::Ok();
  }
  Result<DeviceBackend*> backend = BackendFor(block.allocated);
  MSTAR_CHECK(backend.ok());  // it allocated the block
  backend.value()->Free(block.allocated, ptr);
  return Status::Ok();
}

uint64_t MemoryLedger::UsedBy(const mstar_host_context* owner, DLDevice device) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_owner_.find({owner, DeviceKey(device)});
  return it == by_owner_.end() ? 0 : it->second;
}

uint64_t MemoryLedger::Used(DLDevice device) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = used_.find(BudgetKey(device));
  return it == used_.end() ? 0 : it->second;
}

uint64_t MemoryLedger::HeldBy(const mstar_host_context* owner) const {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t total = 0;
  for (const auto& [key, bytes] : by_owner_) {
    if (key.first == owner) total += bytes;
  }
  return total;
}

uint64_t MemoryLedger::AllocatedBy(const mstar_host_context* owner) const {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t total = 0;
  for (const auto& [ptr, block] : blocks_) {
    if (block.owner == owner && !block.tensor_storage) total += block.size;
  }
  return total;
}

void MemoryLedger::SetLimit(DLDeviceType type, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  limits_[type] = bytes;
}

uint64_t MemoryLedger::Limit(DLDevice device) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = limits_.find(BudgetType(device));
  return it == limits_.end() ? 0 : it->second;
}

}  // namespace mstar

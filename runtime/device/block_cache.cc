// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "device/block_cache.h"

#include <iterator>
#include <utility>

#include "core/logging.h"

namespace mstar {

uint64_t DeviceBlockCache::Rounded(uint64_t size) {
  return size == 0 ? kGranule : (size + kGranule - 1) / kGranule * kGranule;
}

uint64_t DeviceBlockCache::BlockSize(void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sizes_.find(ptr);
  MSTAR_CHECK(it != sizes_.end());  // a block this cache handed out
  return it->second;
}

DeviceBlockCache::DeviceBlockCache(DeviceBackend* backend, DLDevice device, Limits limits)
    : backend_(backend), device_(device), limits_(limits) {}

DeviceBlockCache::~DeviceBlockCache() {
  Release();
}

Result<void*> DeviceBlockCache::Allocate(uint64_t size, uint64_t keep_at_most, uint64_t largest) {
  if (backend_->CapturesOnThisThread()) {
    return FailedPrecondition(
        "device memory of " + DeviceName(device_) +
        " was asked of the host while this thread captures a graph: the graph would keep using "
        "it after it is freed; a captured forward allocates through the capture hooks (the "
        "graph's memory pool), or before the capture");
  }
  if (size > UINT64_MAX - kGranule) {
    return ResourceExhausted("device allocation of " + std::to_string(size) + " bytes on " +
                             DeviceName(device_) + " is larger than any device");
  }
  const uint64_t rounded = Rounded(size);
  std::vector<Block> over;
  void* ptr = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stats_.cached_bytes > keep_at_most) over = TakeCachedLocked(keep_at_most);
    CollectLocked(over);
    ptr = TakeReadyLocked(rounded, largest);
    if (ptr == nullptr && !freed_.empty()) {
      FenceFreedLocked();
      CollectLocked(over);
      ptr = TakeReadyLocked(rounded, largest);
    }
  }
  GiveBack(over);
  if (ptr != nullptr) return ptr;
  Result<void*> fresh = backend_->Allocate(device_, rounded, kAlignment);
  if (!fresh.ok() && fresh.status().code() == Code::kResourceExhausted) {
    Release();
    fresh = backend_->Allocate(device_, rounded, kAlignment);
  }
  if (!fresh.ok()) return fresh.status();
  std::lock_guard<std::mutex> lock(mutex_);
  sizes_[fresh.value()] = rounded;
  ++stats_.allocated;
  return fresh;
}

void DeviceBlockCache::Free(void* ptr) {
  // Giving a block back to the device (cudaFree) would end a capture on this thread: while it
  // captures, every block waits in the cache, and a later free or allocation trims it.
  const bool capturing = backend_->CapturesOnThisThread();
  std::vector<Block> over;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sizes_.find(ptr);
    MSTAR_CHECK(it != sizes_.end());  // the ledger hands back only what this cache gave out
    const uint64_t size = it->second;
    if (capturing) {
      freed_.push_back(Block{ptr, size});
      stats_.cached_bytes += size;
    } else if (!keep_ || size > limits_.largest_block) {
      sizes_.erase(it);
      over.push_back(Block{ptr, size});
      if (!keep_ && stats_.cached_bytes > 0) {  // blocks a capture left behind
        std::vector<Block> left = TakeCachedLocked(0);
        over.insert(over.end(), left.begin(), left.end());
      }
    } else {
      freed_.push_back(Block{ptr, size});
      stats_.cached_bytes += size;
      if (stats_.cached_bytes > limits_.most_cached) over = TakeCachedLocked(limits_.most_cached);
    }
  }
  GiveBack(over);
}

void DeviceBlockCache::SetKeeping(bool keep) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    keep_ = keep;
  }
  if (!keep) Release();
}

void DeviceBlockCache::Trim(uint64_t keep_bytes) {
  std::vector<Block> blocks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks = TakeCachedLocked(keep_bytes);
  }
  GiveBack(blocks);
}

DeviceBlockCache::Stats DeviceBlockCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void DeviceBlockCache::CollectLocked(std::vector<Block>& failed) {
  while (!fenced_.empty()) {
    Fenced& oldest = fenced_.front();
    Result<bool> done = oldest.fence->Done();
    if (done.ok() && !done.value()) return;  // later fences were recorded after it: not done
    if (!done.ok()) {
      // A fence that cannot be asked about: its blocks go back to the backend, whose Free is
      // safe with work in flight, rather than being reused.
      Log().warn("device block cache of {}: a fence failed ({}); giving back {} blocks",
                 DeviceName(device_), done.status().ToString(), oldest.blocks.size());
      for (const Block& block : oldest.blocks) {
        ForgetLocked(block);
        failed.push_back(block);
      }
    } else {
      for (const Block& block : oldest.blocks) ready_.emplace(block.size, block.ptr);
    }
    fenced_.pop_front();
  }
}

void* DeviceBlockCache::TakeReadyLocked(uint64_t size, uint64_t largest) {
  auto it = ready_.lower_bound(size);
  if (it == ready_.end() || it->first / 4 * 3 > size || it->first > largest) return nullptr;
  void* ptr = it->second;
  stats_.cached_bytes -= it->first;
  ++stats_.reused;
  ready_.erase(it);
  return ptr;
}

void DeviceBlockCache::FenceFreedLocked() {
  Result<std::unique_ptr<DeviceFence>> fence = backend_->RecordFence(device_);
  if (!fence.ok()) return;  // capturing, or a device error: the blocks wait for a later fence
  ++stats_.fences;
  if (fence.value() == nullptr) {  // the device's work is done already
    for (const Block& block : freed_) ready_.emplace(block.size, block.ptr);
  } else {
    fenced_.push_back(Fenced{std::move(freed_), std::move(fence).value()});
  }
  freed_.clear();
}

std::vector<DeviceBlockCache::Block> DeviceBlockCache::TakeCachedLocked(uint64_t keep_bytes) {
  std::vector<Block> taken;
  auto take = [&](const Block& block) {
    ForgetLocked(block);
    taken.push_back(block);
  };
  // Largest ready blocks first, then those still waiting (Backend::Free needs no fence).
  while (stats_.cached_bytes > keep_bytes && !ready_.empty()) {
    auto last = std::prev(ready_.end());
    take(Block{last->second, last->first});
    ready_.erase(last);
  }
  while (stats_.cached_bytes > keep_bytes && !freed_.empty()) {
    take(freed_.back());
    freed_.pop_back();
  }
  while (stats_.cached_bytes > keep_bytes && !fenced_.empty()) {
    for (const Block& block : fenced_.back().blocks) take(block);
    fenced_.pop_back();
  }
  return taken;
}

void DeviceBlockCache::ForgetLocked(const Block& block) {
  stats_.cached_bytes -= block.size;
  sizes_.erase(block.ptr);
  ++stats_.given_back;
}

void DeviceBlockCache::GiveBack(const std::vector<Block>& blocks) {
  for (const Block& block : blocks) backend_->Free(device_, block.ptr);
}

}  // namespace mstar

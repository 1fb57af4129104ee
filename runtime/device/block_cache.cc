// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "device/block_cache.h"

#include <iterator>
#include <utility>

#include "core/fault_injection.h"
#include "core/logging.h"

namespace mstar {
namespace {

// Runs note (which adds to the cache's books), true; false when host memory runs out for it
// (note then changed nothing: each is one insertion).
template <typename Note>
bool Noted(Note&& note) {
  try {
    MaybeFailHostObject();
    note();
    return true;
  } catch (const std::bad_alloc&) {
    return false;
  }
}

}  // namespace

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
      FenceFreedLocked(over);
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
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (RecordLocked(fresh.value(), rounded)) return fresh;
  }
  backend_->Free(device_, fresh.value());
  return ResourceExhausted("the device block cache of " + DeviceName(device_) +
                           " could not record a block: out of host memory");
}

void DeviceBlockCache::Free(void* ptr) {
  // Giving a block back to the device (cudaFree) would end a capture on this thread: while it
  // captures, every block waits in the cache, and a later free or allocation trims it.
  const bool capturing = backend_->CapturesOnThisThread();
  std::vector<Block> over;
  void* at_once = nullptr;  // goes straight back to the backend
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sizes_.find(ptr);
    MSTAR_CHECK(it != sizes_.end());  // the ledger hands back only what this cache gave out
    const Block block{ptr, it->second};
    const bool keep = capturing || (keep_ && block.size <= limits_.largest_block);
    if (!keep || !HoldFreedLocked(block)) {
      if (capturing) {
        // Out of host memory to note it, on the capturing thread: the block stays allocated
        // rather than end the capture; it leaves the books (a lost block, and a warning).
        Log().warn(
            "device block cache of {}: out of host memory while a graph captures; {} "
            "bytes stay allocated until the process ends",
            DeviceName(device_), block.size);
      } else {
        at_once = ptr;
      }
      sizes_.erase(it);
    }
    if (!capturing && !keep_ && stats_.cached_bytes > 0) {
      over = TakeCachedLocked(0);  // blocks a capture left behind
    } else if (!capturing && stats_.cached_bytes > limits_.most_cached) {
      over = TakeCachedLocked(limits_.most_cached);
    }
  }
  if (at_once != nullptr) backend_->Free(device_, at_once);
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

void DeviceBlockCache::CollectLocked(std::vector<Block>& later) {
  while (!fenced_.empty()) {
    Fenced& oldest = fenced_.front();
    Result<bool> done = oldest.fence->Done();
    if (done.ok() && !done.value()) return;  // later fences were recorded after it: not done
    if (!done.ok()) {
      // A fence that cannot be asked about: its blocks go back to the backend, whose Free is
      // safe with work in flight, rather than being reused.
      Log().warn("device block cache of {}: a fence failed ({}); giving back {} blocks",
                 DeviceName(device_), done.status().ToString(), oldest.blocks.size());
      for (const Block& block : oldest.blocks) DropLocked(block, later);
    } else {
      for (const Block& block : oldest.blocks) MakeReadyLocked(block, later);
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

void DeviceBlockCache::FenceFreedLocked(std::vector<Block>& later) {
  std::unique_ptr<DeviceFence> fence;
  try {
    Result<std::unique_ptr<DeviceFence>> recorded = backend_->RecordFence(device_);
    if (!recorded.ok()) return;  // capturing, or a device error: the blocks wait for a later fence
    fence = std::move(recorded).value();
    if (fence != nullptr) {
      MaybeFailHostObject();
      fenced_.emplace_back();
    }
  } catch (const std::bad_alloc&) {
    return;  // likewise
  }
  ++stats_.fences;
  if (fence == nullptr) {  // the device's work is done already
    for (const Block& block : freed_) MakeReadyLocked(block, later);
  } else {
    fenced_.back().blocks = std::move(freed_);
    fenced_.back().fence = std::move(fence);
  }
  freed_.clear();
}

std::vector<DeviceBlockCache::Block> DeviceBlockCache::TakeCachedLocked(uint64_t keep_bytes) {
  std::vector<Block> taken;
  // Room to list every cached block; without it, each goes back at once.
  const bool listed = Noted([&] {
    size_t cached = ready_.size() + freed_.size();
    for (const Fenced& fenced : fenced_) cached += fenced.blocks.size();
    taken.reserve(cached);
  });
  auto take = [&](const Block& block) {
    ForgetLocked(block);
    if (listed) {
      taken.push_back(block);
    } else {
      backend_->Free(device_, block.ptr);
    }
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

bool DeviceBlockCache::RecordLocked(void* ptr, uint64_t size) {
  if (!Noted([&] { sizes_[ptr] = size; })) return false;
  ++stats_.allocated;
  return true;
}

bool DeviceBlockCache::HoldFreedLocked(const Block& block) {
  if (!Noted([&] { freed_.push_back(block); })) return false;
  stats_.cached_bytes += block.size;
  return true;
}

void DeviceBlockCache::MakeReadyLocked(const Block& block, std::vector<Block>& later) {
  if (!Noted([&] { ready_.emplace(block.size, block.ptr); })) DropLocked(block, later);
}

void DeviceBlockCache::DropLocked(const Block& block, std::vector<Block>& later) {
  ForgetLocked(block);
  // Not even that noted: back now, under the lock (it cannot wait for later).
  if (!Noted([&] { later.push_back(block); })) backend_->Free(device_, block.ptr);
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

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "host_block_store.h"

#include <cstring>
#include <new>
#include <vector>

namespace mstar::tier_host {

size_t KeyHash::operator()(const mstar_tier_key_t& key) const noexcept {
  // Keys are digests: their leading bytes are already uniformly distributed.
  size_t h = 0;
  std::memcpy(&h, key.bytes, sizeof(h));
  return h;
}

bool KeyEqual::operator()(const mstar_tier_key_t& a, const mstar_tier_key_t& b) const noexcept {
  return std::memcmp(a.bytes, b.bytes, sizeof(a.bytes)) == 0;
}

uint32_t HostBlockStore::Contains(const mstar_tier_key_t& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  return index_.count(key) != 0 ? MSTAR_OK : MSTAR_ERR_NOT_FOUND;
}

uint32_t HostBlockStore::HostCopy(void* dst, const void* src, uint64_t size) {
  std::memcpy(dst, src, size);
  return MSTAR_OK;
}

uint32_t HostBlockStore::Put(const mstar_tier_key_t& key, const void* data, uint64_t size,
                             const Copy& copy) {
  if (capacity_ != 0 && size > capacity_) return MSTAR_ERR_RESOURCE_EXHAUSTED;
  if (size != 0 && data == nullptr) return MSTAR_ERR_INVALID_ARGUMENT;
  // Copy outside the lock: the copy is the expensive part and touches no shared state.
  HostBlockMemory memory;
  try {
    memory = HostBlockMemory(allocator_, size);
  } catch (const std::bad_alloc&) {
    return MSTAR_ERR_RESOURCE_EXHAUSTED;
  }
  if (size != 0) {
    if (uint32_t copied = copy(memory.data(), data, size); copied != MSTAR_OK) return copied;
  }

  std::lock_guard<std::mutex> lock(mutex_);
  try {
    InsertLocked(key, std::move(memory));
  } catch (const std::bad_alloc&) {
    return MSTAR_ERR_RESOURCE_EXHAUSTED;
  }
  return MSTAR_OK;
}

bool HostBlockStore::PutRun(const mstar_tier_key_t* keys, uint32_t n, const void* data,
                            uint64_t block_size, const Copy& copy, uint32_t* result) {
  const uint64_t total = block_size * n;
  if (n == 0 || block_size == 0 || data == nullptr || total / n != block_size ||
      (capacity_ != 0 && total > capacity_))
    return false;
  std::shared_ptr<HostSlab> slab;
  try {
    slab = std::make_shared<HostSlab>(allocator_, total);
  } catch (const std::bad_alloc&) {
    return false;
  }
  *result = copy(slab->data(), data, total);
  if (*result != MSTAR_OK) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  for (uint32_t i = 0; i < n; ++i) {
    try {
      InsertLocked(keys[i], HostBlockMemory(slab, block_size * i, block_size));
    } catch (const std::bad_alloc&) {
      // The run is all or nothing: the blocks already in go again.
      for (uint32_t j = 0; j < i; ++j) {
        if (auto found = index_.find(keys[j]); found != index_.end()) EraseLocked(found->second);
      }
      *result = MSTAR_ERR_RESOURCE_EXHAUSTED;
      return true;
    }
  }
  return true;
}

bool HostBlockStore::GetRun(const mstar_tier_key_t* keys, uint32_t n, void* data,
                            uint64_t block_size, const Copy& copy, uint32_t* result) {
  if (n == 0 || block_size == 0 || data == nullptr || block_size * n / n != block_size)
    return false;
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Lru::iterator> entries;
  entries.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    auto found = index_.find(keys[i]);
    if (found == index_.end()) return false;
    HostBlockMemory& memory = found->second->memory;
    HostBlockMemory& first = i == 0 ? memory : entries[0]->memory;
    if (memory.size() != block_size || memory.slab() != first.slab() ||
        memory.data() != first.data() + block_size * i)
      return false;
    entries.push_back(found->second);
  }
  *result = copy(data, entries[0]->memory.data(), block_size * n);
  if (*result == MSTAR_OK)
    for (Lru::iterator it : entries) lru_.splice(lru_.begin(), lru_, it);
  return true;
}

void HostBlockStore::InsertLocked(const mstar_tier_key_t& key, HostBlockMemory memory) {
  auto found = index_.find(key);
  if (found != index_.end()) EraseLocked(found->second);
  // The block's slab counts unless another block of the store already holds it.
  const uint64_t adds = slab_blocks_.count(memory.slab()) != 0 ? 0 : memory.slab_size();
  while (capacity_ != 0 && used_ + adds > capacity_ && !lru_.empty()) {
    EraseLocked(std::prev(lru_.end()));
    ++evictions_;
  }
  // Each step that may throw (out of memory) is undone before the exception leaves: the store's
  // counts always match its entries.
  lru_.push_front(Entry{key, std::move(memory)});
  const HostSlab* slab = lru_.front().memory.slab();
  try {
    index_.emplace(key, lru_.begin());
  } catch (...) {
    lru_.pop_front();
    throw;
  }
  try {
    ++slab_blocks_[slab];
  } catch (...) {
    index_.erase(key);
    lru_.pop_front();
    throw;
  }
  used_ += adds;
}

uint32_t HostBlockStore::Get(const mstar_tier_key_t& key, void* data, uint64_t size,
                             const Copy& copy) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = index_.find(key);
  if (found == index_.end()) return MSTAR_ERR_NOT_FOUND;
  Lru::iterator it = found->second;
  if (it->memory.size() != size) return MSTAR_ERR_INVALID_ARGUMENT;
  if (size != 0 && data == nullptr) return MSTAR_ERR_INVALID_ARGUMENT;
  if (size != 0) {
    if (uint32_t copied = copy(data, it->memory.data(), size); copied != MSTAR_OK) return copied;
  }
  lru_.splice(lru_.begin(), lru_, it);
  return MSTAR_OK;
}

uint32_t HostBlockStore::Remove(const mstar_tier_key_t& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = index_.find(key);
  if (found == index_.end()) return MSTAR_ERR_NOT_FOUND;
  EraseLocked(found->second);
  return MSTAR_OK;
}

uint64_t HostBlockStore::used_bytes() {
  std::lock_guard<std::mutex> lock(mutex_);
  return used_;
}

uint64_t HostBlockStore::evictions() {
  std::lock_guard<std::mutex> lock(mutex_);
  return evictions_;
}

void HostBlockStore::EraseLocked(Lru::iterator it) {
  auto blocks = slab_blocks_.find(it->memory.slab());
  if (--blocks->second == 0) {
    used_ -= it->memory.slab_size();
    slab_blocks_.erase(blocks);
  }
  index_.erase(it->key);
  lru_.erase(it);
}

}  // namespace mstar::tier_host

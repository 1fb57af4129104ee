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

template <typename CopyBytes>
uint32_t HostBlockStore::CopyReservedLocked(Lru& staged, const CopyBytes& copy) {
  uint32_t copied = MSTAR_ERR_INTERNAL;
  try {
    copied = copy();
  } catch (...) {
    UnreserveLocked(staged);
    throw;
  }
  if (copied != MSTAR_OK) UnreserveLocked(staged);
  return copied;
}

uint32_t HostBlockStore::Put(const mstar_tier_key_t& key, const void* data, uint64_t size,
                             const Copy& copy) {
  if (capacity_ != 0 && size > capacity_) return MSTAR_ERR_RESOURCE_EXHAUSTED;
  if (size != 0 && data == nullptr) return MSTAR_ERR_INVALID_ARGUMENT;
  Lru staged;
  try {
    staged.push_back(Entry{key, HostBlockMemory(allocator_, size)});
  } catch (const std::bad_alloc&) {
    return MSTAR_ERR_RESOURCE_EXHAUSTED;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    ReserveLocked(staged);  // one key: never repeated
  } catch (const std::bad_alloc&) {
    return MSTAR_ERR_RESOURCE_EXHAUSTED;
  }
  const uint32_t copied = CopyReservedLocked(staged, [&] {
    return size == 0 ? MSTAR_OK : copy(staged.front().memory.data(), data, size);
  });
  if (copied == MSTAR_OK) CommitLocked(staged);
  return copied;
}

bool HostBlockStore::PutRun(const mstar_tier_key_t* keys, uint32_t n, const void* data,
                            uint64_t block_size, const Copy& copy, uint32_t* result) {
  const uint64_t total = block_size * n;
  if (n == 0 || block_size == 0 || data == nullptr || total / n != block_size ||
      (capacity_ != 0 && total > capacity_))
    return false;
  Lru staged;  // keys[n - 1] first: the run goes in as n puts in key order would
  try {
    auto slab = std::make_shared<HostSlab>(allocator_, total);
    for (uint32_t i = 0; i < n; ++i)
      staged.push_front(Entry{keys[i], HostBlockMemory(slab, block_size * i, block_size)});
  } catch (const std::bad_alloc&) {
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    if (!ReserveLocked(staged)) return false;  // a key repeats: one by one, the last one wins
  } catch (const std::bad_alloc&) {
    *result = MSTAR_ERR_RESOURCE_EXHAUSTED;
    return true;
  }
  *result =
      CopyReservedLocked(staged, [&] { return copy(staged.back().memory.data(), data, total); });
  if (*result == MSTAR_OK) CommitLocked(staged);
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

bool HostBlockStore::ReserveLocked(Lru& staged) {
  slab_blocks_.try_emplace(staged.front().memory.slab(), 0);
  try {
    for (auto it = staged.begin(); it != staged.end(); ++it) {
      auto [found, added] = index_.try_emplace(it->key, it);
      if (added) continue;
      if (found->second->staged) {  // the key came earlier in staged
        UnreserveLocked(staged);
        return false;
      }
      it->replaces = found->second;
      it->replaces_block = true;
      found->second = it;
    }
  } catch (...) {
    UnreserveLocked(staged);
    throw;
  }
  return true;
}

void HostBlockStore::UnreserveLocked(Lru& staged) noexcept {
  for (Entry& entry : staged) {
    auto found = index_.find(entry.key);
    if (found == index_.end() || &*found->second != &entry) continue;  // not reserved
    if (entry.replaces_block) {
      found->second = entry.replaces;
    } else {
      index_.erase(found);
    }
  }
  auto blocks = slab_blocks_.find(staged.front().memory.slab());
  if (blocks != slab_blocks_.end() && blocks->second == 0) slab_blocks_.erase(blocks);
}

void HostBlockStore::CommitLocked(Lru& staged) noexcept {
  for (Entry& entry : staged) {  // the index points at each already
    if (entry.replaces_block) ReleaseLocked(entry.replaces);
    entry.staged = false;
  }
  // Evicting touches only blocks in lru_, none of which holds the new slab.
  const uint64_t adds = staged.front().memory.slab_size();
  while (capacity_ != 0 && used_ + adds > capacity_ && !lru_.empty()) {
    EraseLocked(std::prev(lru_.end()));
    ++evictions_;
  }
  slab_blocks_.find(staged.front().memory.slab())->second += static_cast<uint32_t>(staged.size());
  used_ += adds;
  lru_.splice(lru_.begin(), staged);
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

void HostBlockStore::ReleaseLocked(Lru::iterator it) noexcept {
  auto blocks = slab_blocks_.find(it->memory.slab());
  if (--blocks->second == 0) {
    used_ -= it->memory.slab_size();
    slab_blocks_.erase(blocks);
  }
  lru_.erase(it);
}

void HostBlockStore::EraseLocked(Lru::iterator it) noexcept {
  index_.erase(it->key);
  ReleaseLocked(it);
}

}  // namespace mstar::tier_host

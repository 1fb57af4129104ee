// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// HostBlockStore: blocks keyed by 32-byte keys in host memory, with an optional byte capacity
// enforced by evicting the least recently used blocks (a PUT or a GET counts as a use; CONTAINS
// does not).
//
// Thread-safety: every public method takes the store's mutex, so a store may be used from any
// number of threads at once.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

#include "host_memory.h"
#include "mstar/tier.h"

namespace mstar::tier_host {

struct KeyHash {
  size_t operator()(const mstar_tier_key_t& key) const noexcept;
};
struct KeyEqual {
  bool operator()(const mstar_tier_key_t& a, const mstar_tier_key_t& b) const noexcept;
};

class HostBlockStore {
 public:
  // capacity_bytes 0: unbounded. Block memory comes from the host services (host_memory.h);
  // host and context are borrowed and outlive the store.
  HostBlockStore(uint64_t capacity_bytes, const mstar_host_api_t* host,
                 mstar_host_context_t* context)
      : capacity_(capacity_bytes), allocator_(host, context) {}

  // Each returns an MSTAR_* code and never throws. Put copies size bytes from data; a failed put
  // leaves the store unchanged (including any previous block under the key). Get copies the block
  // into data, whose size must equal the stored size.
  uint32_t Contains(const mstar_tier_key_t& key);
  uint32_t Put(const mstar_tier_key_t& key, const void* data, uint64_t size);
  uint32_t Get(const mstar_tier_key_t& key, void* data, uint64_t size);
  uint32_t Remove(const mstar_tier_key_t& key);

  uint64_t capacity_bytes() const { return capacity_; }
  uint64_t used_bytes();
  uint64_t evictions();

 private:
  struct Entry {
    mstar_tier_key_t key;
    HostBlockMemory memory;
  };
  using Lru = std::list<Entry>;  // front: most recently used

  void EraseLocked(Lru::iterator it);

  const uint64_t capacity_;
  HostAllocator allocator_;  // before lru_: blocks go back to it when the store is destroyed
  std::mutex mutex_;
  Lru lru_;
  std::unordered_map<mstar_tier_key_t, Lru::iterator, KeyHash, KeyEqual> index_;
  uint64_t used_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace mstar::tier_host

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// HostBlockStore: blocks keyed by 32-byte keys in host memory, with an optional byte capacity
// enforced by evicting the least recently used blocks (a PUT or a GET counts as a use; CONTAINS
// does not). The capacity bounds the memory the blocks hold: a block of a run keeps the run's
// whole slab alive, so the slab counts in full until its last block goes.
//
// Thread-safety: every public method takes the store's mutex, so a store may be used from any
// number of threads at once.
#pragma once

#include <cstdint>
#include <functional>
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
  // keep_free_bytes: how many bytes of freed blocks the allocator keeps for reuse (host_memory.h).
  HostBlockStore(uint64_t capacity_bytes, uint64_t keep_free_bytes, const mstar_host_api_t* host,
                 mstar_host_context_t* context)
      : capacity_(capacity_bytes), allocator_(host, context, keep_free_bytes) {}

  // Copies size bytes from src to dst and returns an MSTAR_* code: how a block's bytes move in
  // or out (host memcpy by default; a device copy for device memory).
  using Copy = std::function<uint32_t(void* dst, const void* src, uint64_t size)>;
  static uint32_t HostCopy(void* dst, const void* src, uint64_t size);

  // Each returns an MSTAR_* code and throws only what copy throws. Put copies size bytes from
  // data with copy; a put refused (larger than the capacity, no host memory for the block or its
  // index entry) or whose copy fails or throws leaves the store unchanged (any previous block
  // under the key included, and nothing evicted).
  // Get copies the block into data with copy; data's size must equal the stored size. An
  // asynchronous copy must land before the block can be replaced or removed: the caller
  // completes it before its next call on the store. Copies run under the store's mutex.
  uint32_t Contains(const mstar_tier_key_t& key);
  uint32_t Put(const mstar_tier_key_t& key, const void* data, uint64_t size,
               const Copy& copy = HostCopy);
  uint32_t Get(const mstar_tier_key_t& key, void* data, uint64_t size, const Copy& copy = HostCopy);
  uint32_t Remove(const mstar_tier_key_t& key);

  // Runs: n blocks of block_size bytes at data, block i at data + i * block_size, moved with one
  // copy (one DMA for a batch of device blocks instead of n). PutRun stores them under keys[0..n)
  // in one slab, all or none (MSTAR_OK; or the copy's error or RESOURCE_EXHAUSTED with the store
  // unchanged); false, with the store unchanged, when it cannot take them as a run (more than the
  // capacity, no memory for the slab, a key given twice), and the caller puts them one by one.
  // GetRun copies them out when they lie in one slab in key order (as a PutRun left them); false
  // otherwise, and the caller gets them one by one.
  bool PutRun(const mstar_tier_key_t* keys, uint32_t n, const void* data, uint64_t block_size,
              const Copy& copy, uint32_t* result);
  bool GetRun(const mstar_tier_key_t* keys, uint32_t n, void* data, uint64_t block_size,
              const Copy& copy, uint32_t* result);

  uint64_t capacity_bytes() const { return capacity_; }
  // The memory the blocks hold (whole slabs), which the capacity bounds.
  uint64_t used_bytes();
  uint64_t evictions();

 private:
  struct Entry {
    mstar_tier_key_t key;
    HostBlockMemory memory;
    bool staged = true;  // in a list of blocks not yet in the store
    // While staged and reserved: the block in the store it replaces, if any (the index points
    // at the staged entry meanwhile, so a key given twice is seen).
    bool replaces_block = false;
    std::list<Entry>::iterator replaces{};
  };
  using Lru = std::list<Entry>;  // front: most recently used

  // A put is all or nothing: the blocks to add are staged in a list of their own (all in one
  // new slab), then ReserveLocked makes every index entry and slab count they need, the bytes
  // are copied in, and CommitLocked, which cannot fail, replaces and evicts. Until the commit the
  // store's blocks and counts are as before (its index points at the staged blocks, which no
  // one sees: all under the lock), and UnreserveLocked takes the reservations back.
  //
  // False, with nothing reserved, when a key repeats in staged; throws std::bad_alloc with
  // nothing reserved.
  bool ReserveLocked(Lru& staged);
  void UnreserveLocked(Lru& staged) noexcept;
  // Runs copy (returning an MSTAR_* code) for reserved blocks; unreserves them when it fails or
  // throws. A template: wrapping copy in a std::function could itself fail to allocate.
  template <typename CopyBytes>
  uint32_t CopyReservedLocked(Lru& staged, const CopyBytes& copy);
  // Moves the reserved blocks of staged to the front of lru_, replacing those under their keys
  // and evicting the least recently used to make room.
  void CommitLocked(Lru& staged) noexcept;
  // Drops a block from lru_ and the slab counts (ReleaseLocked) and from the index (EraseLocked).
  void ReleaseLocked(Lru::iterator it) noexcept;
  void EraseLocked(Lru::iterator it) noexcept;

  const uint64_t capacity_;
  HostAllocator allocator_;  // before lru_: blocks go back to it when the store is destroyed
  std::mutex mutex_;
  Lru lru_;
  std::unordered_map<mstar_tier_key_t, Lru::iterator, KeyHash, KeyEqual> index_;
  std::unordered_map<const HostSlab*, uint32_t> slab_blocks_;  // blocks in the store, per slab
  uint64_t used_ = 0;                                          // bytes of the slabs in slab_blocks_
  uint64_t evictions_ = 0;
};

}  // namespace mstar::tier_host

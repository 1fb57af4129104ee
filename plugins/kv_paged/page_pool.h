// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// PagePool: the bookkeeping of a fixed pool of KV pages (no page memory here). Every page is in
// exactly one state:
//   free     on the free stack (refcount 0, no prefix key)
//   held     refcount > 0 (one per sequence that lists it), with or without a prefix key
//   cached   refcount 0 with a prefix key: on the LRU list, reusable by a prefix hit or evictable
// Every operation is O(1) over preallocated arrays: no heap allocation after construction.
// Not thread-safe; the owning resource serializes calls.
#pragma once

#include <cstdint>
#include <vector>

namespace mstar::kv {

class PagePool {
 public:
  explicit PagePool(int32_t num_pages)
      : refcount_(static_cast<size_t>(num_pages), 0),
        keyed_(static_cast<size_t>(num_pages), 0),
        free_pos_(static_cast<size_t>(num_pages), -1),
        prev_(static_cast<size_t>(num_pages), -1),
        next_(static_cast<size_t>(num_pages), -1) {
    free_.reserve(static_cast<size_t>(num_pages));
    // Lowest page ids come off the stack first.
    for (int32_t p = num_pages; p-- > 0;) PushFree(p);
  }

  int32_t num_pages() const { return static_cast<int32_t>(refcount_.size()); }
  int32_t free_count() const { return static_cast<int32_t>(free_.size()); }
  int32_t cached_count() const { return lru_size_; }
  // Pages a new sequence could take: free ones plus unreferenced cached ones (by eviction).
  int32_t available() const { return free_count() + cached_count(); }
  int32_t refcount(int32_t p) const { return refcount_[static_cast<size_t>(p)]; }
  bool keyed(int32_t p) const { return keyed_[static_cast<size_t>(p)] != 0; }
  bool is_free(int32_t p) const { return free_pos_[static_cast<size_t>(p)] >= 0; }
  bool in_lru(int32_t p) const { return refcount(p) == 0 && keyed(p); }

  // Takes the top of the free stack with refcount 1; -1 when the stack is empty.
  int32_t Allocate() {
    if (free_.empty()) return -1;
    int32_t p = free_.back();
    free_.pop_back();
    free_pos_[static_cast<size_t>(p)] = -1;
    refcount_[static_cast<size_t>(p)] = 1;
    return p;
  }
  // The page Allocate would take next, or -1.
  int32_t PeekFree() const { return free_.empty() ? -1 : free_.back(); }
  // The top n pages of the free stack (n <= free_count()), in the order Allocate takes them.
  std::vector<int32_t> PeekFree(int32_t n) const {
    return std::vector<int32_t>(free_.rbegin(), free_.rbegin() + n);
  }
  // Takes page p, which must be free, with refcount 1 (replaying another replica's choice).
  void AllocateExact(int32_t p) {
    auto i = static_cast<size_t>(free_pos_[static_cast<size_t>(p)]);
    int32_t last = free_.back();
    free_[i] = last;
    free_pos_[static_cast<size_t>(last)] = static_cast<int32_t>(i);
    free_.pop_back();
    free_pos_[static_cast<size_t>(p)] = -1;
    refcount_[static_cast<size_t>(p)] = 1;
  }
  // One more reference to a held or cached page (a cached page leaves the LRU list).
  void Ref(int32_t p) {
    if (in_lru(p)) LruUnlink(p);
    ++refcount_[static_cast<size_t>(p)];
  }
  // Drops a reference. At zero a keyed page becomes the most recently used cached page, an
  // unkeyed one goes back on the free stack. Returns whether the page stopped being held.
  bool Unref(int32_t p) {
    if (--refcount_[static_cast<size_t>(p)] > 0) return false;
    if (keyed(p)) {
      LruPushBack(p);
    } else {
      PushFree(p);
    }
    return true;
  }
  // Gives a held page a prefix key.
  void SetKeyed(int32_t p) { keyed_[static_cast<size_t>(p)] = 1; }
  // Removes page p's key; a cached page becomes free.
  void ClearKeyed(int32_t p) {
    if (in_lru(p)) {
      LruUnlink(p);
      keyed_[static_cast<size_t>(p)] = 0;
      PushFree(p);
    } else {
      keyed_[static_cast<size_t>(p)] = 0;
    }
  }
  // The least recently used cached page, or -1.
  int32_t LruOldest() const { return lru_head_; }
  // The cached page used next after cached page p (more recently), or -1.
  int32_t LruNext(int32_t p) const { return next_[static_cast<size_t>(p)]; }
  // The cached pages from least to most recently used (for digests and tests).
  std::vector<int32_t> LruOrder() const {
    std::vector<int32_t> out;
    for (int32_t p = lru_head_; p >= 0; p = next_[static_cast<size_t>(p)]) out.push_back(p);
    return out;
  }

 private:
  void PushFree(int32_t p) {
    free_pos_[static_cast<size_t>(p)] = static_cast<int32_t>(free_.size());
    free_.push_back(p);
  }
  void LruPushBack(int32_t p) {
    prev_[static_cast<size_t>(p)] = lru_tail_;
    next_[static_cast<size_t>(p)] = -1;
    if (lru_tail_ >= 0) {
      next_[static_cast<size_t>(lru_tail_)] = p;
    } else {
      lru_head_ = p;
    }
    lru_tail_ = p;
    ++lru_size_;
  }
  void LruUnlink(int32_t p) {
    int32_t a = prev_[static_cast<size_t>(p)];
    int32_t b = next_[static_cast<size_t>(p)];
    if (a >= 0) {
      next_[static_cast<size_t>(a)] = b;
    } else {
      lru_head_ = b;
    }
    if (b >= 0) {
      prev_[static_cast<size_t>(b)] = a;
    } else {
      lru_tail_ = a;
    }
    prev_[static_cast<size_t>(p)] = next_[static_cast<size_t>(p)] = -1;
    --lru_size_;
  }

  std::vector<int32_t> refcount_;
  std::vector<uint8_t> keyed_;
  std::vector<int32_t> free_;      // the free stack
  std::vector<int32_t> free_pos_;  // index in free_, -1 when not free
  std::vector<int32_t> prev_, next_;
  int32_t lru_head_ = -1, lru_tail_ = -1, lru_size_ = 0;
};

}  // namespace mstar::kv

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// FallbackMemo: which eager fallbacks were logged already, so each is logged once, in bounded
// memory. A key is whatever identifies a fallback (its walk, shape and reason). Prefill traffic
// meets a new shape with nearly every prompt length, so the memo keeps at most `limit` keys;
// past that, fallbacks are no longer logged, and the caller logs once that they stopped.
//
// Not thread-safe: the caller serializes calls (under the mutex guarding the memo's owner).
#pragma once

#include <cstddef>
#include <set>

namespace mstar {

template <typename Key>
class FallbackMemo {
 public:
  static constexpr size_t kDefaultLimit = 4096;

  explicit FallbackMemo(size_t limit = kDefaultLimit) : limit_(limit) {}

  enum class Seen {
    kFirst,       // a new key: log it
    kAgain,       // logged before
    kJustFull,    // a new key that filled the memo: say fallbacks are no longer logged
    kUnrecorded,  // a new key after the memo filled up: not logged
  };

  Seen Note(const Key& key) {
    if (keys_.count(key) != 0) return Seen::kAgain;
    if (keys_.size() >= limit_) return full_++ == 0 ? Seen::kJustFull : Seen::kUnrecorded;
    keys_.insert(key);
    return Seen::kFirst;
  }

  size_t size() const { return keys_.size(); }
  // New keys seen after the memo filled up.
  size_t unrecorded() const { return full_; }

 private:
  size_t limit_;
  std::set<Key> keys_;
  size_t full_ = 0;
};

}  // namespace mstar

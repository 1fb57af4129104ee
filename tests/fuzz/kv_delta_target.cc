// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The KvResidentDelta fuzz target (fuzz_targets.h): a leader and a follower KvCache of the
// kv_paged plugin, driven by the input's bytes.
#include <cstdlib>
#include <vector>

#include "fuzz_targets.h"
#include "kv_cache.h"
#include "mstar/sdk/error.hpp"

namespace mstar::fuzz {
namespace {

constexpr int32_t kPages = 8;
constexpr int32_t kPageSize = 4;
constexpr uint32_t kLabels = 2;

// Reads the input a byte at a time; 0 once it is used up.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t Next() { return pos_ < size_ ? data_[pos_++] : 0; }
  const uint8_t* rest() const { return data_ + pos_; }
  size_t rest_size() const { return size_ - pos_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// The first count free pages of the pool, or fewer when it has fewer.
std::vector<int32_t> FreePages(const kv::KvCache& cache, uint32_t count) {
  std::vector<int32_t> pages;
  for (int32_t p = 0; p < kPages && pages.size() < count; ++p) {
    if (cache.pool().is_free(p)) pages.push_back(p);
  }
  return pages;
}

// One move of the leader, chosen by op; arg picks the sequence and the move's operand. A move
// the leader's own checks refuse throws mstar::sdk::Error and changes nothing.
void LeaderMove(kv::KvCache& leader, uint8_t op, uint8_t arg) {
  const kv::SeqId id{static_cast<uint64_t>(arg % 4), static_cast<uint32_t>((arg >> 2) % kLabels)};
  const kv::Sequence* seq = leader.Find(id);
  switch (op % 8) {
    case 0: leader.AddSeq(id); break;
    case 1: leader.RemoveSeq(id); break;
    case 2: {
      int32_t page = leader.TakePage();
      if (page >= 0) leader.Append(id, page);
      break;
    }
    case 3: leader.Truncate(id, arg >> 5); break;
    case 4: leader.SetLen(id, arg >> 3); break;
    case 5:
      if (seq != nullptr && !seq->pages.empty()) {
        kv::PrefixKey key{};
        key.bytes[0] = op;
        key.bytes[1] = arg;
        leader.CacheInsert(seq->pages.back(), key);
      }
      break;
    case 6: leader.Offload(id, 1 + (arg >> 6)); break;
    case 7:
      if (seq != nullptr && seq->offloaded != 0) {
        std::vector<int32_t> pages = FreePages(leader, seq->offloaded);
        if (pages.size() == seq->offloaded) leader.Reload(id, pages);
      }
      break;
  }
}

// The leader's moves since the last sync, replayed on the follower: a delta the leader took must
// apply whole, and the follower must end in the leader's state.
void Sync(kv::KvCache& leader, kv::KvCache& follower) {
  std::vector<uint8_t> delta;
  leader.TakeDelta(&delta);
  try {
    if (follower.ApplyDelta(delta.data(), delta.size(), {}) != delta.size()) std::abort();
  } catch (const sdk::Error&) {
    std::abort();  // a leader's own delta was refused: leader and follower disagree
  }
  if (!(follower.Digest() == leader.Digest())) std::abort();
}

}  // namespace

void KvResidentDelta(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  kv::KvCache leader(kPages, kPageSize);
  kv::KvCache follower(kPages, kPageSize);
  leader.set_num_labels(kLabels);  // LeaderMove's sequences have labels 0 and 1
  follower.set_num_labels(kLabels);
  const uint32_t moves = in.Next() % 64;
  for (uint32_t i = 0; i < moves; ++i) {
    const uint8_t op = in.Next();
    const uint8_t arg = in.Next();
    try {
      LeaderMove(leader, op, arg);
    } catch (const sdk::Error&) {
      // refused by the leader: nothing moved
    }
    if ((op & 0x80) != 0) Sync(leader, follower);
  }
  Sync(leader, follower);
  try {
    follower.ApplyDelta(in.rest(), in.rest_size(), {});
  } catch (const sdk::Error&) {
    // refused: the delta does not fit this follower's state
  }
  (void)follower.Digest();  // what was applied left a state that can be digested
}

}  // namespace mstar::fuzz

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// KvCache: the resident state of the paged KV cache (which page each sequence holds, which pages
// the prefix cache keys, what is offloaded), with no page memory and no host calls. Every change
// is a *move*; each move is applied through one function that checks its preconditions and, on
// the leader, appends the move to a log. TakeDelta hands the log out (with a digest of the state
// after it) and ApplyDelta replays a leader's log on a follower, refusing with
// FAILED_PRECONDITION when the follower's state diverges.
//
// A sequence is one KV stream of one request: request id plus label index (guidance keeps a
// "cond" and an "uncond" sequence per request). Pages of a sequence are released tail first, so
// the tail of a cached chain becomes least recently used and is evicted first.
//
// Errors throw mstar::sdk::Error. Not thread-safe; the owning resource serializes calls.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "page_pool.h"
#include "prefix_key.h"

namespace mstar::kv {

struct SeqId {
  uint64_t request = 0;
  uint32_t label = 0;
  bool operator<(const SeqId& o) const {
    return request != o.request ? request < o.request : label < o.label;
  }
  bool operator==(const SeqId& o) const { return request == o.request && label == o.label; }
};

struct Sequence {
  std::vector<int32_t> pages;  // resident pages, in order; offloaded ones are not listed
  int64_t len = 0;             // tokens whose K/V are in the cache (committed)
  // Offloaded pages are the sequence's pages [offload_from, offload_from + offloaded).
  uint32_t offload_from = 0;
  uint32_t offloaded = 0;
};

// Move kinds in a delta.
enum class Move : uint8_t {
  kAddSeq = 1,
  kRemoveSeq = 2,
  kAppend = 3,    // page: a free page is taken, a keyed one gains a reference
  kTruncate = 4,  // count: references beyond count are dropped, tail first
  kSetLen = 5,
  kCacheInsert = 6,
  kCacheEvict = 7,
  kOffload = 8,  // count: the last count resident pages move to the tiers
  kReload = 9,   // pages: the offloaded pages come back into these (free or LRU-cached) pages
  kDigest = 10,  // not a move: the leader's state digest after the moves before it
};

class KvCache {
 public:
  // Called while replaying kOffload (before the pages are released) and kReload (once the move
  // is checked, before the new pages are listed, so that a read that fails changes nothing;
  // read[i]: pages[i] is free, so its block must come from the tiers, while a cached page still
  // holds it) so that a follower copies its own page memory to and from its tiers, and while
  // replaying kRemoveSeq of a sequence with offloaded pages (before it goes) so that the
  // follower drops their blocks from its tiers.
  struct ReplayIo {
    std::function<void(const SeqId&, uint32_t from, uint32_t count)> offload;
    std::function<void(const SeqId&, uint32_t from, const std::vector<int32_t>& pages,
                       const std::vector<bool>& read)>
        reload;
    std::function<void(const SeqId&)> remove_offloaded;
  };

  KvCache(int32_t num_pages, int32_t page_size);

  // Sequences have labels [0, num_labels) (1 until set); a delta naming another is refused.
  void set_num_labels(uint32_t num_labels) { num_labels_ = num_labels; }

  int32_t page_size() const { return page_size_; }
  const PagePool& pool() const { return pool_; }
  const std::map<SeqId, Sequence>& sequences() const { return seqs_; }
  const Sequence* Find(const SeqId& id) const;
  // The page holding key, or -1.
  int32_t Lookup(const PrefixKey& key) const;
  const PrefixKey* KeyOf(int32_t page) const;

  // ---- Moves ----
  void AddSeq(const SeqId& id);
  void RemoveSeq(const SeqId& id);
  void Append(const SeqId& id, int32_t page);
  void Truncate(const SeqId& id, uint32_t count);
  void SetLen(const SeqId& id, int64_t len);
  void CacheInsert(int32_t page, const PrefixKey& key);
  void CacheEvict(int32_t page);
  // Releases the last count resident pages; returns how many stopped being held.
  uint32_t Offload(const SeqId& id, uint32_t count);
  // The offloaded pages come back as pages, in order: a free page is taken (its block must be
  // read from the tiers), an unreferenced cached one leaves the LRU list (it still holds the
  // block). A page that is held already is refused.
  void Reload(const SeqId& id, const std::vector<int32_t>& pages);
  // Throws (FAILED_PRECONDITION) what Reload would refuse, changing nothing.
  void CheckReload(const SeqId& id, const std::vector<int32_t>& pages) const;

  // A page for a new use: the top of the free stack, else the least recently used cached page
  // (evicted, a move). -1 when neither exists. The page is not yet appended anywhere.
  int32_t TakePage();
  // Pages that became free or cached if the sequence let go of what it holds from page `from` on
  // (0: everything).
  uint32_t Reclaimable(const SeqId& id, uint32_t from = 0) const;

  // ---- Deltas ----
  // Appends every move since the last call, then a kDigest record, to out.
  void TakeDelta(std::vector<uint8_t>* out);
  // TakeDelta in two halves, for a caller whose hand-off may fail: CopyDelta appends the same
  // bytes and keeps the log; ClearDelta drops it once the bytes were handed on.
  void CopyDelta(std::vector<uint8_t>* out) const;
  void ClearDelta();
  // Whether moves are logged for TakeDelta (on by default). Off, the log stays empty: nobody
  // takes it, and it would grow with every step.
  void set_recording(bool on) { recording_ = on; }
  bool recording() const { return recording_; }
  // Replays a delta from its start. Returns bytes fully applied; throws FAILED_PRECONDITION (with
  // the move's number and the reason) on divergence or a digest mismatch.
  uint64_t ApplyDelta(const uint8_t* data, uint64_t size, const ReplayIo& io);
  // SHA-256 over everything a follower must agree on: each page's refcount and key, the LRU
  // order, and each sequence's pages, length and offloaded range.
  PrefixKey Digest() const;
  uint64_t moves() const { return next_move_; }

 private:
  Sequence& Get(const SeqId& id, const char* move);
  [[noreturn]] void Diverged(const std::string& why) const;
  void Record(Move kind, const SeqId& id, const void* payload, size_t size);
  void RecordPage(Move kind, int32_t page, const void* extra, size_t size);
  void Release(Sequence& seq, uint32_t keep);

  int32_t page_size_;
  uint32_t num_labels_ = 1;
  PagePool pool_;
  std::map<SeqId, Sequence> seqs_;
  std::unordered_map<PrefixKey, int32_t, PrefixKeyHash> keys_;
  std::vector<PrefixKey> page_keys_;
  std::vector<uint8_t> log_;
  uint64_t next_move_ = 0;
  bool recording_ = true;
};

}  // namespace mstar::kv

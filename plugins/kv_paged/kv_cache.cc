// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "kv_cache.h"

#include "mstar/sdk/error.hpp"

namespace mstar::kv {

using sdk::Error;

KvCache::KvCache(int32_t num_pages, int32_t page_size)
    : page_size_(page_size), pool_(num_pages), page_keys_(static_cast<size_t>(num_pages)) {}

const Sequence* KvCache::Find(const SeqId& id) const {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? nullptr : &it->second;
}

int32_t KvCache::Lookup(const PrefixKey& key) const {
  auto it = keys_.find(key);
  return it == keys_.end() ? -1 : it->second;
}

const PrefixKey* KvCache::KeyOf(int32_t page) const {
  return pool_.keyed(page) ? &page_keys_[static_cast<size_t>(page)] : nullptr;
}

void KvCache::Diverged(const std::string& why) const {
  throw Error(MSTAR_ERR_FAILED_PRECONDITION, "kv_paged: resident state diverges at move #" +
                                                 std::to_string(next_move_) + ": " + why);
}

Sequence& KvCache::Get(const SeqId& id, const char* move) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) {
    Diverged(std::string(move) + " names request " + std::to_string(id.request) + " label " +
             std::to_string(id.label) + ", which this cache does not hold");
  }
  return it->second;
}

void KvCache::Record(Move kind, const SeqId& id, const void* payload, size_t size) {
  if (recording_) {
    auto put = [&](const void* p, size_t n) {
      const auto* b = static_cast<const uint8_t*>(p);
      log_.insert(log_.end(), b, b + n);
    };
    auto k = static_cast<uint8_t>(kind);
    put(&k, 1);
    put(&next_move_, 8);
    put(&id.request, 8);
    put(&id.label, 4);
    if (size > 0) put(payload, size);
  }
  ++next_move_;
}

void KvCache::RecordPage(Move kind, int32_t page, const void* extra, size_t size) {
  uint8_t payload[4 + 32];
  std::memcpy(payload, &page, 4);
  if (size > 0) std::memcpy(payload + 4, extra, size);
  Record(kind, SeqId{}, payload, 4 + size);
}

void KvCache::AddSeq(const SeqId& id) {
  auto it = seqs_.find(id);
  if (it != seqs_.end()) {
    if (!it->second.pages.empty() || it->second.offloaded != 0) {
      Diverged("request " + std::to_string(id.request) + " is added twice");
    }
    return;
  }
  seqs_.emplace(id, Sequence{});
  Record(Move::kAddSeq, id, nullptr, 0);
}

void KvCache::Release(Sequence& seq, uint32_t keep) {
  while (seq.pages.size() > keep) {
    pool_.Unref(seq.pages.back());
    seq.pages.pop_back();
  }
}

void KvCache::RemoveSeq(const SeqId& id) {
  Sequence& seq = Get(id, "remove");
  Release(seq, 0);
  seqs_.erase(id);
  Record(Move::kRemoveSeq, id, nullptr, 0);
}

void KvCache::Append(const SeqId& id, int32_t page) {
  Sequence& seq = Get(id, "append");
  if (page < 0 || page >= pool_.num_pages()) {
    Diverged("page " + std::to_string(page) + " is outside the pool");
  }
  if (seq.offloaded != 0) Diverged("append to an offloaded sequence");
  if (pool_.is_free(page)) {
    pool_.AllocateExact(page);
  } else if (pool_.keyed(page)) {
    pool_.Ref(page);
  } else {
    Diverged("page " + std::to_string(page) + " is held by another sequence here");
  }
  seq.pages.push_back(page);
  Record(Move::kAppend, id, &page, 4);
}

void KvCache::Truncate(const SeqId& id, uint32_t count) {
  Sequence& seq = Get(id, "truncate");
  if (count > seq.pages.size()) {
    Diverged("truncate to " + std::to_string(count) + " pages of a sequence holding " +
             std::to_string(seq.pages.size()));
  }
  Release(seq, count);
  Record(Move::kTruncate, id, &count, 4);
}

void KvCache::SetLen(const SeqId& id, int64_t len) {
  Sequence& seq = Get(id, "set_len");
  int64_t capacity = static_cast<int64_t>(seq.pages.size() + seq.offloaded) * page_size_;
  if (len < 0 || len > capacity) {
    Diverged("length " + std::to_string(len) + " does not fit " + std::to_string(capacity) +
             " slots");
  }
  seq.len = len;
  Record(Move::kSetLen, id, &len, 8);
}

void KvCache::CacheInsert(int32_t page, const PrefixKey& key) {
  if (page < 0 || page >= pool_.num_pages()) Diverged("cache insert of a page outside the pool");
  if (pool_.refcount(page) == 0 || pool_.keyed(page)) {
    Diverged("cache insert of page " + std::to_string(page) +
             ", which is not held or already keyed");
  }
  if (keys_.count(key) != 0) Diverged("cache insert of a key already cached");
  pool_.SetKeyed(page);
  page_keys_[static_cast<size_t>(page)] = key;
  keys_.emplace(key, page);
  RecordPage(Move::kCacheInsert, page, key.bytes.data(), key.bytes.size());
}

void KvCache::CacheEvict(int32_t page) {
  if (page < 0 || page >= pool_.num_pages() || !pool_.in_lru(page)) {
    Diverged("evict of page " + std::to_string(page) +
             ", which is not an unreferenced cached page");
  }
  keys_.erase(page_keys_[static_cast<size_t>(page)]);
  pool_.ClearKeyed(page);
  RecordPage(Move::kCacheEvict, page, nullptr, 0);
}

int32_t KvCache::TakePage() {
  if (pool_.free_count() == 0) {
    int32_t victim = pool_.LruOldest();
    if (victim < 0) return -1;
    CacheEvict(victim);
  }
  return pool_.PeekFree();  // Append takes it off the stack
}

uint32_t KvCache::Offload(const SeqId& id, uint32_t count) {
  Sequence& seq = Get(id, "offload");
  if (count == 0 || count > seq.pages.size()) {
    Diverged("offload of " + std::to_string(count) + " pages of a sequence holding " +
             std::to_string(seq.pages.size()));
  }
  auto keep = static_cast<uint32_t>(seq.pages.size()) - count;
  uint32_t freed = 0;
  while (seq.pages.size() > keep) {
    if (pool_.Unref(seq.pages.back())) ++freed;
    seq.pages.pop_back();
  }
  seq.offload_from = keep;
  seq.offloaded += count;
  Record(Move::kOffload, id, &count, 4);
  return freed;
}

void KvCache::CheckReload(const SeqId& id, const std::vector<int32_t>& pages) const {
  const Sequence* found = Find(id);
  if (found == nullptr) {
    Diverged("reload names request " + std::to_string(id.request) + " label " +
             std::to_string(id.label) + ", which this cache does not hold");
  }
  const Sequence& seq = *found;
  if (seq.offloaded == 0 || pages.size() != seq.offloaded) {
    Diverged("reload of " + std::to_string(pages.size()) + " pages into a sequence with " +
             std::to_string(seq.offloaded) + " offloaded");
  }
  std::vector<bool> named(static_cast<size_t>(pool_.num_pages()), false);
  for (int32_t p : pages) {
    if (p < 0 || p >= pool_.num_pages() || !(pool_.is_free(p) || pool_.in_lru(p))) {
      Diverged("reload into page " + std::to_string(p) +
               ", which is neither free nor cached unreferenced here");
    }
    if (named[static_cast<size_t>(p)]) {
      Diverged("reload names page " + std::to_string(p) + " twice");
    }
    named[static_cast<size_t>(p)] = true;
  }
}

void KvCache::Reload(const SeqId& id, const std::vector<int32_t>& pages) {
  CheckReload(id, pages);
  Sequence& seq = Get(id, "reload");
  for (int32_t p : pages) {
    if (pool_.is_free(p)) {
      pool_.AllocateExact(p);
    } else {
      pool_.Ref(p);
    }
    seq.pages.push_back(p);
  }
  seq.offloaded = 0;
  seq.offload_from = 0;
  std::vector<uint8_t> payload(4 + 4 * pages.size());
  auto n = static_cast<uint32_t>(pages.size());
  std::memcpy(payload.data(), &n, 4);
  if (n > 0) std::memcpy(payload.data() + 4, pages.data(), 4 * pages.size());
  Record(Move::kReload, id, payload.data(), payload.size());
}

uint32_t KvCache::Reclaimable(const SeqId& id, uint32_t from) const {
  const Sequence* seq = Find(id);
  if (seq == nullptr) return 0;
  uint32_t n = 0;
  for (size_t i = from; i < seq->pages.size(); ++i) n += pool_.refcount(seq->pages[i]) == 1 ? 1 : 0;
  return n;
}

}  // namespace mstar::kv

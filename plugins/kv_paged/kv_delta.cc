// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// KvCache deltas: the wire form of the move log, its replay on a follower and the state digest
// that both sides compare after every delta.
//
// A record is: kind u8, move number u64, request u64, label u32, then by kind
//   kAppend page i32 | kTruncate count u32 | kSetLen len i64 | kCacheInsert page i32, key[32]
//   kCacheEvict page i32 | kOffload count u32 | kReload n u32, n pages i32 | kDigest digest[32]
// (little-endian, as the host's). kAddSeq and kRemoveSeq carry nothing more.
#include "mstar/sdk/error.hpp"

#include "kv_cache.h"

namespace mstar::kv {

using sdk::Error;

namespace {

constexpr size_t kHeader = 1 + 8 + 8 + 4;

class Reader {
 public:
  Reader(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  bool Has(uint64_t n) const { return pos_ + n <= size_; }
  template <typename T>
  T Get() {
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  void Bytes(void* out, size_t n) {
    std::memcpy(out, data_ + pos_, n);
    pos_ += n;
  }
  uint64_t pos() const { return pos_; }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

// Bytes of a record's payload once its header (and, for kReload, its count) is known.
uint64_t PayloadSize(Move kind, Reader& peek, bool* ok) {
  *ok = true;
  switch (kind) {
    case Move::kAddSeq:
    case Move::kRemoveSeq: return 0;
    case Move::kAppend:
    case Move::kTruncate:
    case Move::kOffload:
    case Move::kCacheEvict: return 4;
    case Move::kSetLen: return 8;
    case Move::kCacheInsert: return 36;
    case Move::kDigest: return 32;
    case Move::kReload: {
      if (!peek.Has(4)) return 4;
      return 4 + 4 * static_cast<uint64_t>(peek.Get<uint32_t>());
    }
  }
  *ok = false;
  return 0;
}

}  // namespace

void KvCache::TakeDelta(std::vector<uint8_t>* out) {
  CopyDelta(out);
  ClearDelta();
}

void KvCache::ClearDelta() {
  log_.clear();
}

void KvCache::CopyDelta(std::vector<uint8_t>* out) const {
  out->insert(out->end(), log_.begin(), log_.end());
  PrefixKey digest = Digest();
  auto kind = static_cast<uint8_t>(Move::kDigest);
  uint64_t zero = 0;
  uint32_t zero32 = 0;
  auto put = [&](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out->insert(out->end(), b, b + n);
  };
  put(&kind, 1);
  put(&next_move_, 8);
  put(&zero, 8);
  put(&zero32, 4);
  put(digest.bytes.data(), 32);
}

uint64_t KvCache::ApplyDelta(const uint8_t* data, uint64_t size, const ReplayIo& io) {
  Reader r(data, size);
  uint64_t applied = 0;
  bool was_recording = recording_;
  recording_ = false;  // a follower's log stays empty: it replays, it does not lead
  struct Restore {
    bool* flag;
    bool value;
    ~Restore() { *flag = value; }
  } restore{&recording_, was_recording};
  while (r.Has(kHeader)) {
    auto kind = static_cast<Move>(r.Get<uint8_t>());
    auto number = r.Get<uint64_t>();
    SeqId id;
    id.request = r.Get<uint64_t>();
    id.label = r.Get<uint32_t>();
    Reader peek = r;
    bool known = false;
    uint64_t payload = PayloadSize(kind, peek, &known);
    if (!known) Diverged("unknown move kind " + std::to_string(static_cast<int>(kind)));
    if (!r.Has(payload)) {
      throw Error(MSTAR_ERR_INVALID_ARGUMENT,
                  "kv_paged: delta is truncated inside move #" + std::to_string(number));
    }
    if (kind != Move::kDigest && id.label >= num_labels_) {
      Diverged("move #" + std::to_string(number) + " names label " + std::to_string(id.label) +
               " of a cache with " + std::to_string(num_labels_));
    }
    if (number != next_move_) {
      Diverged("the delta carries move #" + std::to_string(number) + " but this replica expects #" +
               std::to_string(next_move_));
    }
    switch (kind) {
      case Move::kAddSeq: AddSeq(id); break;
      case Move::kRemoveSeq: {
        const Sequence* seq = Find(id);
        if (seq != nullptr && seq->offloaded != 0 && io.remove_offloaded) io.remove_offloaded(id);
        RemoveSeq(id);
        break;
      }
      case Move::kAppend: Append(id, r.Get<int32_t>()); break;
      case Move::kTruncate: Truncate(id, r.Get<uint32_t>()); break;
      case Move::kSetLen: SetLen(id, r.Get<int64_t>()); break;
      case Move::kCacheInsert: {
        auto page = r.Get<int32_t>();
        PrefixKey key;
        r.Bytes(key.bytes.data(), 32);
        CacheInsert(page, key);
        break;
      }
      case Move::kCacheEvict: CacheEvict(r.Get<int32_t>()); break;
      case Move::kOffload: {
        auto count = r.Get<uint32_t>();
        const Sequence& seq = Get(id, "offload");
        if (count == 0 || count > seq.pages.size()) {
          Diverged("offload of " + std::to_string(count) + " pages of a sequence holding " +
                   std::to_string(seq.pages.size()));
        }
        auto from = static_cast<uint32_t>(seq.pages.size()) - count;
        if (io.offload) io.offload(id, from, count);
        Offload(id, count);
        break;
      }
      case Move::kReload: {
        auto n = r.Get<uint32_t>();
        std::vector<int32_t> pages(n);
        for (uint32_t i = 0; i < n; ++i) pages[i] = r.Get<int32_t>();
        CheckReload(id, pages);  // so the pages read into are free and the move will apply
        uint32_t from = Get(id, "reload").offload_from;
        std::vector<bool> read(n);
        for (uint32_t i = 0; i < n; ++i) read[i] = pool_.is_free(pages[i]);
        if (io.reload) io.reload(id, from, pages, read);
        Reload(id, pages);
        break;
      }
      case Move::kDigest: {
        PrefixKey theirs;
        r.Bytes(theirs.bytes.data(), 32);
        if (Digest() != theirs) {
          Diverged("after the same moves this replica's state digest differs from the leader's");
        }
        break;
      }
    }
    applied = r.pos();
  }
  if (applied != size) {  // fewer bytes than a move's header: cut as a payload would be
    throw Error(MSTAR_ERR_INVALID_ARGUMENT,
                "kv_paged: delta is truncated inside the header of the move after #" +
                    std::to_string(next_move_ == 0 ? 0 : next_move_ - 1) + " (" +
                    std::to_string(size - applied) + " bytes left)");
  }
  return applied;
}

PrefixKey KvCache::Digest() const {
  std::vector<uint8_t> buffer;
  auto put = [&](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    buffer.insert(buffer.end(), b, b + n);
  };
  int32_t n = pool_.num_pages();
  put(&n, 4);
  put(&page_size_, 4);
  for (int32_t p = 0; p < n; ++p) {
    int32_t refs = pool_.refcount(p);
    uint8_t keyed = pool_.keyed(p) ? 1 : 0;
    put(&refs, 4);
    put(&keyed, 1);
    if (keyed != 0) put(page_keys_[static_cast<size_t>(p)].bytes.data(), 32);
  }
  for (int32_t p : pool_.LruOrder()) put(&p, 4);
  for (const auto& [id, seq] : seqs_) {
    put(&id.request, 8);
    put(&id.label, 4);
    put(&seq.len, 8);
    put(&seq.offload_from, 4);
    put(&seq.offloaded, 4);
    auto count = static_cast<uint32_t>(seq.pages.size());
    put(&count, 4);
    if (count > 0) put(seq.pages.data(), 4 * seq.pages.size());
  }
  return Sha256(buffer.data(), buffer.size());
}

}  // namespace mstar::kv

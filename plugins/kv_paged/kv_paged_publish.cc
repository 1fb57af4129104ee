// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// KvPaged: publish and check_ready move a request's pages between instances in-process (what a
// prefill worker hands a decode worker): publish writes a header naming the pool's layout, the
// request's chains of every label, its pages' blocks and the labels' names; check_ready takes them
// into free pages of this pool after checking that the layout and the labels match.
#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "kv_paged.h"

namespace mstar::kv {

using namespace mstar::sdk;

namespace {

constexpr uint32_t kPublishMagic = 0x3350564bu;  // "KVP3": chains and names of every label

struct PublishHeader {
  uint32_t magic;
  uint32_t page_size;
  uint32_t layers;
  uint32_t kv_heads;
  uint32_t head_dim;
  uint32_t dtype_bits;
  uint32_t dtype_code;
  uint32_t labels;
};

}  // namespace

void KvPaged::Publish(mstar_request_id_t id, BytesWriter& out) {
  if (chains_.count(id) == 0) {
    throw NotFound("kv_paged: publish of request " + std::to_string(id) + ", which is not here");
  }
  if (IsOffloaded(id)) {
    throw FailedPrecondition("kv_paged: request " + std::to_string(id) +
                             " is offloaded; reload it before publishing");
  }
  WaitStaging();  // a reload's copies into these pages must land before they are read
  PublishHeader h{kPublishMagic,
                  static_cast<uint32_t>(page_size_),
                  static_cast<uint32_t>(layers_),
                  static_cast<uint32_t>(kv_heads_),
                  static_cast<uint32_t>(head_dim_),
                  dtype_.bits,
                  dtype_.code,
                  static_cast<uint32_t>(labels_.size())};
  out.append_pod(h);
  const Chain& chain = chains_.at(id);
  out.append_pod(static_cast<uint32_t>(chain.keyed()));
  for (const std::vector<PrefixKey>& label_keys : chain.keys)  // per label
    for (const PrefixKey& k : label_keys) out.append(k.bytes.data(), 32);
  out.append_pod(static_cast<uint32_t>(chain.anchored ? 1 : 0));
  out.append_pod(static_cast<uint32_t>(chain.tokens.size()));
  if (!chain.tokens.empty()) out.append(chain.tokens.data(), 4 * chain.tokens.size());
  std::vector<uint8_t> block(block_bytes_);
  for (size_t l = 0; l < labels_.size(); ++l) {
    const Sequence& seq = *cache_.Find(Seq(id, l));
    out.append_pod(seq.len);
    out.append_pod(static_cast<uint32_t>(seq.pages.size()));
    for (int32_t page : seq.pages) {
      CopyPage(page, block.data(), kCpu, /*out=*/true, nullptr);
      out.append(block.data(), block.size());
    }
  }
  // The labels' names, in order: a receiver whose labels differ (or come in another order) would
  // take one label's K/V for another's.
  for (const std::string& label : labels_) {
    out.append_pod(static_cast<uint32_t>(label.size()));
    out.append(label.data(), label.size());
  }
}

void KvPaged::CheckLabelNames(mstar_request_id_t id, const uint8_t* p, uint64_t size,
                              uint64_t pos) const {
  std::vector<std::string> theirs;
  for (size_t l = 0; l < labels_.size(); ++l) {
    uint32_t length = 0;
    if (size - pos >= 4) std::memcpy(&length, p + pos, 4);
    if (size - pos < 4 || size - pos - 4 < length) {
      throw InvalidArgument("kv_paged: published state for request " + std::to_string(id) +
                            " is truncated at byte " + std::to_string(pos));
    }
    theirs.emplace_back(reinterpret_cast<const char*>(p + pos + 4), length);
    pos += 4 + uint64_t{length};
  }
  if (theirs != labels_) {
    auto join = [](const std::vector<std::string>& names) {
      std::string out;
      for (const std::string& name : names) out += (out.empty() ? "'" : ", '") + name + "'";
      return out;
    };
    throw InvalidArgument("kv_paged: published state has labels [" + join(theirs) +
                          "] but this cache has [" + join(labels_) +
                          "] (names and order must match)");
  }
  if (pos != size) {
    throw InvalidArgument("kv_paged: published state for request " + std::to_string(id) + " has " +
                          std::to_string(size - pos) + " bytes after its end");
  }
}

Admission KvPaged::CheckReady(const RequestInfo& request, const void* published, uint64_t size) {
  if (size == 0) return Admission::Ready();
  mstar_request_id_t id = request.id();
  if (chains_.count(id) == 0) AddRequest(request);
  for (size_t l = 0; l < labels_.size(); ++l) {
    const Sequence& seq = *cache_.Find(Seq(id, l));
    if (seq.len > 0 || !seq.pages.empty() || seq.offloaded != 0)
      return Admission::Ready();  // taken in already (a take-in that failed leaves nothing)
  }
  const auto* p = static_cast<const uint8_t*>(published);
  uint64_t pos = 0;
  auto require = [&](uint64_t n) {  // n more bytes are there, or the state is refused
    if (pos + n > size) {
      throw InvalidArgument("kv_paged: published state for request " + std::to_string(id) +
                            " is truncated at byte " + std::to_string(pos));
    }
  };
  auto take = [&](void* dst, uint64_t n) {
    require(n);
    std::memcpy(dst, p + pos, n);
    pos += n;
  };
  PublishHeader h{};
  take(&h, sizeof(h));
  if (h.magic != kPublishMagic) {
    throw InvalidArgument("kv_paged: published state for request " + std::to_string(id) +
                          " is not kv_paged state");
  }
  auto mismatch = [&](const char* what, uint64_t theirs, uint64_t ours) {
    if (theirs != ours) {
      throw InvalidArgument("kv_paged: published state has " + std::string(what) + " " +
                            std::to_string(theirs) + " but this cache has " + std::to_string(ours));
    }
  };
  mismatch("page_size", h.page_size, static_cast<uint64_t>(page_size_));
  mismatch("layers", h.layers, static_cast<uint64_t>(layers_));
  mismatch("kv_heads", h.kv_heads, static_cast<uint64_t>(kv_heads_));
  mismatch("head_dim", h.head_dim, static_cast<uint64_t>(head_dim_));
  mismatch("dtype bits", h.dtype_bits, dtype_.bits);
  mismatch("dtype code", h.dtype_code, dtype_.code);
  mismatch("labels", h.labels, labels_.size());
  Chain chain = chains_.at(id);
  uint32_t nkeys = 0, ntokens = 0;
  take(&nkeys, 4);
  if (nkeys > static_cast<uint32_t>(num_pages_)) {
    throw InvalidArgument("kv_paged: published state for request " + std::to_string(id) +
                          " lists an impossible prefix chain");
  }
  std::unordered_set<PrefixKey, PrefixKeyHash> seen;
  for (std::vector<PrefixKey>& label_keys : chain.keys) {
    label_keys.resize(nkeys);
    for (PrefixKey& k : label_keys) {
      take(k.bytes.data(), 32);
      // A key names one page's content: a chain that repeats one (within a label or across
      // labels) would key two pages alike, and one would be read for the other.
      if (!seen.insert(k).second) {
        throw InvalidArgument("kv_paged: published state for request " + std::to_string(id) +
                              " lists a prefix chain that repeats a key");
      }
    }
  }
  uint32_t anchored = 0;
  take(&anchored, 4);
  chain.anchored = anchored != 0;
  take(&ntokens, 4);
  require(4ull * ntokens);  // before the buffer is sized by what the sender claims
  chain.tokens.resize(ntokens);
  if (ntokens > 0) take(chain.tokens.data(), 4ull * ntokens);
  // First pass: how many pages, so that nothing moves unless everything fits.
  uint64_t scan = pos;
  int64_t need = 0;
  std::vector<std::pair<int64_t, uint32_t>> shape(labels_.size());
  for (size_t l = 0; l < labels_.size(); ++l) {
    take(&shape[l].first, 8);
    take(&shape[l].second, 4);
    auto impossible = [&] {
      return InvalidArgument("kv_paged: published state for request " + std::to_string(id) +
                             " lists an impossible sequence (label '" + labels_[l] +
                             "': " + std::to_string(shape[l].first) + " tokens in " +
                             std::to_string(shape[l].second) + " pages of " +
                             std::to_string(page_size_) + ")");
    };
    if (shape[l].second > static_cast<uint32_t>(num_pages_) || shape[l].first < 0)
      throw impossible();
    // Keyed pages are full ones: a key past the full pages would key a page still written to.
    if (static_cast<int64_t>(nkeys) * page_size_ > shape[l].first) {
      throw InvalidArgument("kv_paged: published state for request " + std::to_string(id) +
                            " keys " + std::to_string(nkeys) + " pages of label '" + labels_[l] +
                            "', which holds " + std::to_string(shape[l].first / page_size_) +
                            " full ones");
    }
    // publish writes exactly the pages a length needs (pages past it would hold pool pages for
    // nothing), and one length for every label: they advance together, and labels of different
    // lengths would give the model different positions.
    const int64_t pages_needed =
        shape[l].first / page_size_ + (shape[l].first % page_size_ != 0 ? 1 : 0);
    if (static_cast<int64_t>(shape[l].second) != pages_needed) throw impossible();
    if (shape[l].first != shape[0].first) {
      throw InvalidArgument("kv_paged: published state for request " + std::to_string(id) +
                            " gives label '" + labels_[l] + "' " + std::to_string(shape[l].first) +
                            " tokens and label '" + labels_[0] + "' " +
                            std::to_string(shape[0].first) + " (labels advance together)");
    }
    need += shape[l].second;
    require(block_bytes_ * shape[l].second);
    pos += block_bytes_ * shape[l].second;
  }
  CheckLabelNames(id, p, size, pos);
  if (need > num_pages_) {
    throw ResourceExhausted("kv_paged: published request " + std::to_string(id) + " holds " +
                            std::to_string(need) + " pages; the pool has " +
                            std::to_string(num_pages_));
  }
  if (need > cache_.pool().available()) {
    return Admission::NotReady(MSTAR_WAIT_CAPACITY,
                               static_cast<uint64_t>(need - cache_.pool().available()));
  }
  pos = scan;
  WaitStaging();  // the pages taken below may still be the target of a reload's copy
  try {
    for (size_t l = 0; l < labels_.size(); ++l) {
      pos += 12;
      for (uint32_t i = 0; i < shape[l].second; ++i) {
        int32_t page = cache_.TakePage();
        cache_.Append(Seq(id, l), page);
        // Copied into the pool only: the published bytes are read, never written.
        CopyPage(page, const_cast<uint8_t*>(p + pos), kCpu, /*out=*/false, nullptr);
        pos += block_bytes_;
      }
      cache_.SetLen(Seq(id, l), shape[l].first);
    }
  } catch (...) {
    // A copy failed part way: every page taken goes back, so that a later check_ready takes
    // the state in whole rather than finding part of it and calling it done.
    for (size_t l = 0; l < labels_.size(); ++l) {
      cache_.SetLen(Seq(id, l), 0);
      cache_.Truncate(Seq(id, l), 0);
    }
    throw;
  }
  // The published chains key the taken-in pages here too (unless this cache has them already).
  chains_[id] = std::move(chain);
  for (size_t l = 0; l < labels_.size(); ++l) RekeyPages(id, l, 0, shape[l].second);
  return Admission::Ready();
}

}  // namespace mstar::kv

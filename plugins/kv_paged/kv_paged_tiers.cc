// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// KvPaged: moving pages out of the pool and back. Offload copies a sequence's tail pages to the
// nearest tier with room for them (one block per page: its K and V across layers, contiguous in
// the page-major pool, so a tier that reads the pool's memory copies it straight from the page;
// a block a tier refuses goes on to the next; the farthest tier takes what fits nowhere, evicting
// its least recently used blocks) and releases them only after the tier batch completed; reload
// reads them back from the first tier in the chain that has them, byte for byte, except pages
// whose prefix key the cache still holds unreferenced (offload leaves keyed pages cached): those
// come back as the cached page, with no read and no new page.
// take/apply_resident_delta ship the move log to followers, which replay the tier moves on their
// own tiers. (Publish and check_ready: kv_paged_publish.cc.)
#include <algorithm>

#include "kv_paged.h"

namespace mstar::kv {

using namespace mstar::sdk;

uint8_t* KvPaged::PageBlock(int32_t page) const {
  auto* base = static_cast<uint8_t*>(pool_.dl().data) + pool_.dl().byte_offset;
  return base + static_cast<uint64_t>(page) * block_bytes_;
}

void KvPaged::CopyPage(int32_t page, uint8_t* block, DLDevice block_device, bool out,
                       mstar_stream_t* stream) {
  uint8_t* pool = PageBlock(page);
  if (out) {
    Check(host(), host()->memory_copy(block, block_device, pool, device(), block_bytes_, stream));
  } else {
    Check(host(), host()->memory_copy(pool, device(), block, block_device, block_bytes_, stream));
  }
}

std::optional<mstar_tier_info_t> KvPaged::TierInfo(uint32_t tier) {
  mstar_tier_info_t info{sizeof(info), MSTAR_ABI_MINOR, 0, 0, 0, 0};
  mstar_status_t* status = host()->tier_info(args().tiers[tier], &info);
  if (status == nullptr) return info;
  host()->status_release(status);
  return std::nullopt;
}

bool KvPaged::ReadTierReadsPool(uint32_t tier) {
  if (block_device_.device_type == kDLCPU) return true;  // any tier reads host memory
  const std::optional<mstar_tier_info_t> info = TierInfo(tier);
  return info && info->device_access != 0;
}

void KvPaged::RestageToHost(std::vector<mstar_tier_op_t>& ops, const std::vector<uint32_t>& slots,
                            mstar_stream_t* stream) {
  uint32_t blocks = 0;
  for (size_t k = 0; k < ops.size(); ++k) {
    if (ops[k].device.device_type != kDLCPU) blocks = std::max(blocks, slots[k] + 1);
  }
  if (blocks == 0) return;
  WaitStaging();
  staging_.Reserve(block_bytes_ * blocks);
  for (size_t k = 0; k < ops.size(); ++k) {
    if (ops[k].device.device_type == kDLCPU) continue;
    uint8_t* block = staging_.data() + block_bytes_ * slots[k];
    // On stream: after what stream did to the page (the step that wrote it).
    Check(host(),
          host()->memory_copy(block, kCpu, ops[k].data, ops[k].device, block_bytes_, stream));
    ops[k].data = block;
    ops[k].device = kCpu;
  }
  FenceStaging(stream);
  WaitStaging();  // the tier reads the blocks on the host
}

mstar_tier_key_t KvPaged::TierKey(const SeqId& seq, uint32_t page_index,
                                  uint64_t generation) const {
  struct {
    char tag[16];
    uint64_t nonce;
    uint32_t rank;
    uint32_t label;
    uint64_t request;
    uint32_t page;
    uint32_t pad;
    uint64_t generation;
  } material{};
  std::memcpy(material.tag, "kv_paged.page", 13);
  material.nonce = nonce_;
  material.rank = args().rank;
  material.label = seq.label;
  material.request = seq.request;
  material.page = page_index;
  material.generation = generation;
  PrefixKey digest = Sha256(&material, sizeof(material));
  mstar_tier_key_t key;
  std::memcpy(key.bytes, digest.bytes.data(), 32);
  return key;
}

std::vector<mstar_tier_key_t> KvPaged::TierKeys(const SeqId& seq, uint32_t from, uint32_t count,
                                                uint64_t generation) const {
  std::vector<mstar_tier_key_t> keys(count);
  for (uint32_t i = 0; i < count; ++i) keys[i] = TierKey(seq, from + i, generation);
  return keys;
}

mstar_tier_key_t KvPaged::OffloadedKey(const SeqId& seq, uint32_t page_index) const {
  auto it = tier_blocks_.find(seq);
  uint64_t generation = 0;
  if (it != tier_blocks_.end() && page_index >= it->second.from &&
      page_index - it->second.from < it->second.generation.size()) {
    generation = it->second.generation[page_index - it->second.from];
  }
  return TierKey(seq, page_index, generation);
}

void KvPaged::NoteOffloaded(const SeqId& seq, uint32_t from, uint32_t count, uint64_t generation) {
  TierBlocks& blocks = tier_blocks_[seq];
  // A later offload of the same sequence takes the resident pages right before the offloaded
  // ones (KvCache::Offload), so its pages go in front.
  blocks.generation.insert(blocks.generation.begin(), count, generation);
  blocks.from = from;
}

void KvPaged::DropTierBlocks(const SeqId& seq) {
  auto it = tier_blocks_.find(seq);
  if (it == tier_blocks_.end()) return;
  const TierBlocks blocks = std::move(it->second);
  tier_blocks_.erase(it);
  std::vector<mstar_tier_key_t> keys(blocks.generation.size());
  for (size_t i = 0; i < keys.size(); ++i)
    keys[i] = TierKey(seq, blocks.from + static_cast<uint32_t>(i), blocks.generation[i]);
  if (!keys.empty()) RemoveBlocks(seq, blocks.from, keys, 0, args().num_tiers - 1);
}

std::string KvPaged::TierName(uint32_t tier) const {
  return "tier #" + std::to_string(tier) + " of " + std::to_string(args().num_tiers);
}

void KvPaged::RunOps(uint32_t tier, std::vector<mstar_tier_op_t>& ops, mstar_stream_t* stream) {
  if (ops.empty()) return;
  mstar_tier_handle_t* handle = args().tiers[tier];
  mstar_tier_batch_t* batch = nullptr;
  Check(host(),
        host()->tier_submit(handle, ops.data(), static_cast<uint32_t>(ops.size()), stream, &batch));
  mstar_status_t* waited = host()->tier_wait(handle, batch, UINT64_MAX);
  host()->tier_release_batch(handle, batch);  // after the wait: the batch is complete
  Check(host(), waited);
}

void KvPaged::FenceStaging(mstar_stream_t* stream) {
  if (stream == nullptr) return;
  if (staging_fence_.event == nullptr) {
    staging_fence_.host = host();
    Check(host(), host()->event_create(context(), device(), &staging_fence_.event));
  }
  Check(host(), host()->event_record(staging_fence_.event, stream));
  staging_fence_.pending = true;
}

void KvPaged::WaitStaging() {
  if (!staging_fence_.pending) return;
  staging_fence_.pending = false;
  Check(host(), host()->event_synchronize(staging_fence_.event));
}

void KvPaged::WriteToTiers(const SeqId& seq, uint32_t from, uint32_t count, uint64_t generation,
                           mstar_stream_t* stream) {
  if (args().num_tiers == 0) {
    throw FailedPrecondition("kv_paged: cannot offload without tiers (set resources.*.tiers)");
  }
  const Sequence& s = *cache_.Find(seq);
  WaitStaging();  // an earlier reload's copies into these pages may still be in flight
  // Each op names its page in the pool: a page is one contiguous block, so a tier that reads
  // the pool's memory copies it straight out (consecutive pages as one run); the others get a
  // host copy (PutToTiers).
  std::vector<mstar_tier_op_t> ops(count);
  for (uint32_t i = 0; i < count; ++i) {
    mstar_tier_op_t& op = ops[i];
    op.struct_size = sizeof(op);
    op.struct_version = MSTAR_ABI_MINOR;
    op.kind = MSTAR_TIER_OP_PUT;
    op.key = TierKey(seq, from + i, generation);
    op.data = PageBlock(s.pages[from + i]);
    op.size = block_bytes_;
    op.device = block_device_;
  }
  PutToTiers(seq, from, ops, stream);
}

uint32_t KvPaged::FirstTier(uint64_t bytes, uint32_t from) {
  const uint32_t tiers = args().num_tiers;
  for (uint32_t t = from; t + 1 < tiers; ++t) {
    if (TierHasRoom(t, bytes)) return t;
  }
  return tiers - 1;
}

bool KvPaged::TierHasRoom(uint32_t tier, uint64_t bytes) {
  const std::optional<mstar_tier_info_t> info = TierInfo(tier);
  if (!info) return false;  // unknown: do not count on it
  return info->capacity_bytes == 0 || (info->used_bytes <= info->capacity_bytes &&
                                       bytes <= info->capacity_bytes - info->used_bytes);
}

uint64_t KvPaged::BlocksOfRoom(uint32_t tier) {
  const std::optional<mstar_tier_info_t> info = TierInfo(tier);
  if (!info) return 0;  // unknown: do not count on it
  if (info->capacity_bytes == 0) return UINT64_MAX;
  if (info->used_bytes > info->capacity_bytes) return 0;
  return (info->capacity_bytes - info->used_bytes) / block_bytes_;
}

uint64_t KvPaged::MostPagesPerOffload(uint64_t held) {
  // Unknown: the tier's own refusal is what bounds the offload.
  const std::optional<mstar_tier_info_t> info = TierInfo(args().num_tiers - 1);
  if (!info || info->capacity_bytes == 0) return UINT64_MAX;
  const uint64_t blocks = info->capacity_bytes / block_bytes_;
  const uint64_t most = blocks > held ? blocks - held : 0;
  if (held == 0) return most;
  // The request's blocks may be the least recently used of a full tier (other requests' blocks
  // came after them): its later blocks go only where they evict nothing.
  uint64_t room = 0;
  for (uint32_t t = 0; t < args().num_tiers; ++t) room = std::max(room, BlocksOfRoom(t));
  return std::min(most, room);
}

void KvPaged::PutToTiers(const SeqId& seq, uint32_t from, std::vector<mstar_tier_op_t>& ops,
                         mstar_stream_t* stream) {
  const uint32_t tiers = args().num_tiers;
  const uint32_t first = FirstTier(block_bytes_ * ops.size());
  uint32_t tier = first;
  std::vector<mstar_tier_op_t> pending = ops;
  std::vector<uint32_t> index(ops.size());
  for (uint32_t i = 0; i < index.size(); ++i) index[i] = i;
  auto keys = [&] {  // of every block of this attempt (key i: page from + i)
    std::vector<mstar_tier_key_t> out(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) out[i] = ops[i].key;
    return out;
  };
  try {
    for (;;) {
      if (!ReadsPool(tier)) RestageToHost(pending, index, stream);
      try {
        RunOps(tier, pending, stream);
      } catch (const Error& e) {
        // The whole batch failed: the next tier is asked for all of it, as for blocks refused
        // one by one, once this tier is known to keep none of it. A block it kept under these
        // keys would be read before the next tier's (reload asks the nearest first), so when
        // that is not certain (the last tier, or a REMOVE that fails) the offload fails.
        if (tier + 1 == tiers || !RemoveBlocks(seq, from, keys(), tier, tier)) throw;
        Log(MSTAR_LOG_WARN, "kv_paged: offloading request " + std::to_string(seq.request) + ": " +
                                TierName(tier) + " failed (" + e.message() +
                                "); its blocks go to the next tier");
        for (mstar_tier_op_t& op : pending) op.result = MSTAR_ERR_UNAVAILABLE;
      }
      std::vector<mstar_tier_op_t> refused;
      std::vector<uint32_t> refused_index;
      for (size_t k = 0; k < pending.size(); ++k) {
        if (pending[k].result == MSTAR_OK) continue;
        refused.push_back(pending[k]);
        refused_index.push_back(index[k]);
      }
      if (refused.empty()) return;
      if (tier + 1 == tiers) {
        throw Error(refused[0].result, "kv_paged: offloading request " +
                                           std::to_string(seq.request) + ": " + TierName(tier) +
                                           " refused page " +
                                           std::to_string(from + refused_index[0]) + " (" +
                                           ErrorCodeName(refused[0].result) + ")" +
                                           (tiers > 1 ? " and no nearer tier took it" : ""));
      }
      tier = FirstTier(block_bytes_ * refused.size(), tier + 1);
      pending.swap(refused);
      index.swap(refused_index);
    }
  } catch (...) {
    // The caller keeps the pages and the sequence stays resident, so no tier may keep a block
    // of this attempt: remove all of them (a failed batch may have stored some) from every
    // tier tried.
    RemoveBlocks(seq, from, keys(), first, tier);
    throw;
  }
}

void KvPaged::ReadFromTiers(const SeqId& seq, uint32_t from, const std::vector<int32_t>& pages,
                            const std::vector<bool>& read, mstar_stream_t* stream) {
  const auto count = static_cast<uint32_t>(pages.size());
  WaitStaging();  // the tiers may write into staging_, which earlier copies may still read
  std::vector<uint32_t> missing, staged;  // staged: blocks that landed in staging_
  for (uint32_t i = 0; i < count; ++i)
    if (read[i]) missing.push_back(i);
  if (missing.empty()) return;
  // A tier that fails (its batch, or one block with an error other than NOT_FOUND) does not end
  // the reload: an offload sends the blocks a nearer tier refused to farther ones, so a farther
  // tier may hold them. The first failure names the reason when no tier has a block.
  std::string first_failure;
  for (uint32_t tier = 0; tier < args().num_tiers && !missing.empty(); ++tier) {
    // A tier that reads the pool's memory writes the pages themselves (copies on stream);
    // the others write host staging, copied into the pages below.
    const bool direct = ReadsPool(tier);
    if (!direct) staging_.Reserve(block_bytes_ * count);
    std::vector<mstar_tier_op_t> ops(missing.size());
    for (size_t k = 0; k < missing.size(); ++k) {
      mstar_tier_op_t& op = ops[k];
      op.struct_size = sizeof(op);
      op.struct_version = MSTAR_ABI_MINOR;
      op.kind = MSTAR_TIER_OP_GET;
      op.key = OffloadedKey(seq, from + missing[k]);
      op.data = direct ? PageBlock(pages[missing[k]]) : staging_.data() + block_bytes_ * missing[k];
      op.size = block_bytes_;
      op.device = direct ? block_device_ : kCpu;
    }
    try {
      RunOps(tier, ops, direct ? stream : nullptr);
    } catch (const Error& e) {
      if (first_failure.empty()) first_failure = TierName(tier) + " failed: " + e.message();
      continue;  // every block still missing
    }
    std::vector<uint32_t> still;
    for (size_t k = 0; k < missing.size(); ++k) {
      if (ops[k].result == MSTAR_OK) {
        if (!direct) staged.push_back(missing[k]);
        continue;
      }
      if (ops[k].result != MSTAR_ERR_NOT_FOUND && first_failure.empty()) {
        first_failure = TierName(tier) + " lost page " + std::to_string(from + missing[k]) +
                        " of label '" + labels_[seq.label] + "' (" + ErrorCodeName(ops[k].result) +
                        ")";
      }
      still.push_back(missing[k]);
    }
    missing = std::move(still);
  }
  if (!missing.empty()) {
    // The blocks cannot be had now: the request is recomputed rather than failed.
    const std::string page =
        "page " + std::to_string(from + missing.front()) + " of label '" + labels_[seq.label] + "'";
    throw Error(MSTAR_ERR_DATA_LOSS,
                "kv_paged: cannot reload request " + std::to_string(seq.request) + ": " +
                    (first_failure.empty() ? "no tier of " + std::to_string(args().num_tiers) +
                                                 " holds " + page + " (NOT_FOUND)"
                                           : first_failure + ", and no other tier holds " + page) +
                    "; the request's KV must be recomputed");
  }
  for (uint32_t i : staged)
    CopyPage(pages[i], staging_.data() + block_bytes_ * i, kCpu, /*out=*/false, stream);
  if (!staged.empty()) FenceStaging(stream);  // staging_ is reused once these copies landed
}

bool KvPaged::RemoveBlocks(const SeqId& seq, uint32_t from,
                           const std::vector<mstar_tier_key_t>& keys, uint32_t first,
                           uint32_t last) {
  bool removed = true;
  const std::string whose =
      "request " + std::to_string(seq.request) + " label '" + labels_[seq.label] + "'";
  for (uint32_t tier = first; tier <= last && tier < args().num_tiers; ++tier) {
    std::vector<mstar_tier_op_t> ops(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      ops[i].struct_size = sizeof(mstar_tier_op_t);
      ops[i].struct_version = MSTAR_ABI_MINOR;
      ops[i].kind = MSTAR_TIER_OP_REMOVE;
      ops[i].key = keys[i];
      ops[i].device = kCpu;
    }
    try {
      RunOps(tier, ops);
    } catch (const Error& e) {
      Log(MSTAR_LOG_WARN, "kv_paged: " + TierName(tier) + " failed to remove the blocks of " +
                              whose + " (" + e.message() + "); they stay there, unused");
      removed = false;
      continue;
    }
    for (size_t i = 0; i < ops.size(); ++i) {
      // NOT_FOUND is expected from tiers that never held the block.
      if (ops[i].result == MSTAR_OK || ops[i].result == MSTAR_ERR_NOT_FOUND) continue;
      removed = false;
      Log(MSTAR_LOG_WARN,
          "kv_paged: " + TierName(tier) + " failed to remove the block of " + whose + " page " +
              std::to_string(from + i) + " (" + ErrorCodeName(ops[i].result) + "), key " +
              HexString(keys[i].bytes, sizeof(keys[i].bytes)) + "; it stays there, unused");
    }
  }
  return removed;
}

uint64_t KvPaged::Reclaimable(mstar_request_id_t id) {
  if (args().num_tiers == 0 || pending_.count(id) != 0) return 0;
  uint64_t n = 0;
  for (size_t l = 0; l < labels_.size(); ++l) n += cache_.Reclaimable(Seq(id, l));
  return n;
}

uint64_t KvPaged::Offload(mstar_request_id_t id, uint64_t max_units, mstar_stream_t* stream) {
  if (args().num_tiers == 0 || pending_.count(id) != 0) return 0;
  struct Part {
    SeqId seq;
    uint32_t from, count;
  };
  std::vector<Part> parts;  // the last label first
  // A tier evicts the least recently used blocks to take new ones: an offload larger than the
  // farthest tier would evict its own first blocks and report success with data lost. Such a
  // request moves only its last pages, as many as that tier holds with the blocks of the
  // request's earlier offloads, and a request with blocks offloaded already only as many as a
  // tier takes without evicting (its earlier blocks may be the ones evicted). (Other requests'
  // blocks put since may still push those out; its reload then finds them gone and says so,
  // DATA_LOSS.)
  uint64_t held = 0;
  for (size_t l = 0; l < labels_.size(); ++l) {
    const Sequence* seq = cache_.Find(Seq(id, l));
    if (seq != nullptr) held += seq->offloaded;
  }
  uint64_t budget = std::min(max_units == 0 ? UINT64_MAX : max_units, MostPagesPerOffload(held));
  for (size_t l = labels_.size(); l-- > 0 && budget > 0;) {
    const Sequence* seq = cache_.Find(Seq(id, l));
    if (seq == nullptr || seq->pages.empty()) continue;
    auto count = static_cast<uint32_t>(std::min<uint64_t>(budget, seq->pages.size()));
    parts.push_back({Seq(id, l), static_cast<uint32_t>(seq->pages.size()) - count, count});
    budget -= count;
  }
  // An offload that would free nothing moves nothing (the contract: 0 means nothing moved): its
  // pages are all held by other requests too (a prefix hit since the victim was chosen).
  uint64_t freeable = 0;
  for (const Part& part : parts) freeable += cache_.Reclaimable(part.seq, part.from);
  if (freeable == 0) return 0;
  // All or nothing: every label's blocks land before any page moves. When a label's write
  // fails, the labels written before it are removed again (the failing one removed its own)
  // and the request stays resident as it was.
  const uint64_t generation = ++last_generation_;
  size_t written = 0;
  try {
    for (; written < parts.size(); ++written) {  // each returns once the copies landed
      const Part& part = parts[written];
      WriteToTiers(part.seq, part.from, part.count, generation, stream);
    }
  } catch (...) {
    for (size_t k = 0; k < written; ++k) {
      const Part& part = parts[k];
      RemoveBlocks(part.seq, part.from, TierKeys(part.seq, part.from, part.count, generation), 0,
                   args().num_tiers - 1);
    }
    throw;
  }
  uint64_t reclaimed = 0;
  for (const Part& part : parts) {
    reclaimed += cache_.Offload(part.seq, part.count);
    NoteOffloaded(part.seq, part.from, part.count, generation);
  }
  return reclaimed;
}

bool KvPaged::Reload(mstar_request_id_t id, mstar_stream_t* stream) {
  // Per label, per offloaded page: the unreferenced cached page holding its prefix key (it
  // never left the pool: no read), else -1 (a free page to read its block into).
  std::vector<std::vector<int32_t>> pages(labels_.size());
  std::vector<int32_t> cached;
  int32_t fresh = 0;
  for (size_t l = 0; l < labels_.size(); ++l) {
    const Sequence* seq = cache_.Find(Seq(id, l));
    if (seq == nullptr || seq->offloaded == 0) continue;
    pages[l] = CachedPages(id, l, seq->offload_from, seq->offloaded);
    // Chains never repeat a key (check_ready refuses one that does), so no page comes twice.
    for (int32_t p : pages[l]) {
      if (p < 0) {
        ++fresh;
      } else {
        cached.push_back(p);
      }
    }
  }
  if (fresh == 0 && cached.empty()) return true;
  // Staging is for the labels with a block to read (ReadFromTiers stages one label at once): a
  // reload whose pages all come from the prefix cache needs none, so never waits for it.
  size_t most_pages = 0;
  for (const std::vector<int32_t>& label_pages : pages) {
    if (std::any_of(label_pages.begin(), label_pages.end(), [](int32_t p) { return p < 0; }))
      most_pages = std::max(most_pages, label_pages.size());
  }
  if (most_pages > 0 && !ReserveReloadStaging(most_pages)) return false;
  if (!MakeFree(fresh, cached)) return false;
  // Every label's blocks are read before any page moves: a lost block fails the reload with the
  // whole request still offloaded (the pages read into stay free).
  const std::vector<int32_t> free = cache_.pool().PeekFree(fresh);
  auto next = free.begin();
  std::vector<std::vector<bool>> read(labels_.size());
  for (size_t l = 0; l < labels_.size(); ++l) {
    if (pages[l].empty()) continue;
    read[l].resize(pages[l].size());
    for (size_t i = 0; i < pages[l].size(); ++i) {
      read[l][i] = pages[l][i] < 0;
      if (read[l][i]) pages[l][i] = *next++;
    }
    ReadFromTiers(Seq(id, l), cache_.Find(Seq(id, l))->offload_from, pages[l], read[l], stream);
  }
  for (size_t l = 0; l < labels_.size(); ++l) {
    if (pages[l].empty()) continue;
    const uint32_t from = cache_.Find(Seq(id, l))->offload_from;
    cache_.Reload(Seq(id, l), pages[l]);
    DropTierBlocks(Seq(id, l));
    // Prefix-cached before the offload: cached again.
    RekeyPages(id, l, from, static_cast<uint32_t>(pages[l].size()));
  }
  AddToCounter("reload.read_pages", fresh);
  AddToCounter("reload.cached_pages", static_cast<int64_t>(cached.size()));
  return true;
}

bool KvPaged::ReserveReloadStaging(uint64_t pages) {
  bool staged = false;
  for (uint32_t tier = 0; tier < args().num_tiers; ++tier) staged |= !ReadsPool(tier);
  if (!staged) return true;
  WaitStaging();  // growing frees the old buffer, which earlier copies may still read
  try {
    staging_.Reserve(block_bytes_ * pages);
  } catch (const Error& e) {
    if (e.code() != MSTAR_ERR_RESOURCE_EXHAUSTED) throw;
    Log(MSTAR_LOG_WARN, "kv_paged: reload: no host memory for " + std::to_string(pages) +
                            " pages of staging yet; the reload waits: " + e.message());
    return false;
  }
  return true;
}

std::vector<int32_t> KvPaged::CachedPages(mstar_request_id_t id, size_t label, uint32_t from,
                                          uint32_t count) const {
  std::vector<int32_t> pages(count, -1);
  auto it = chains_.find(id);
  if (!prefix_cache_ || it == chains_.end()) return pages;
  const std::vector<PrefixKey>& keys = it->second.keys[label];
  for (uint32_t i = 0; i < count && from + i < keys.size(); ++i) {
    const int32_t page = cache_.Lookup(keys[from + i]);
    if (page >= 0 && cache_.pool().in_lru(page)) pages[i] = page;
  }
  return pages;
}

// The log is dropped only once the host took the bytes: a failed append (the host out of memory)
// keeps the moves for the next call, so followers never miss one.
void KvPaged::TakeResidentDelta(BytesWriter& out) {
  if (!cache_.recording()) {
    throw FailedPrecondition(
        "kv_paged records its moves only in a group of ranks (world_size > 1) or with "
        "resident_deltas = true; this instance has none to give");
  }
  std::vector<uint8_t> delta;
  cache_.CopyDelta(&delta);
  out.append(delta.data(), delta.size());
  cache_.ClearDelta();
}

bool KvPaged::ApplyResidentDelta(const void* delta, uint64_t size, uint64_t* consumed) {
  KvCache::ReplayIo io;
  io.offload = [this](const SeqId& seq, uint32_t from, uint32_t count) {
    const uint64_t generation = ++last_generation_;
    WriteToTiers(seq, from, count, generation, nullptr);
    NoteOffloaded(seq, from, count, generation);
  };
  io.reload = [this](const SeqId& seq, uint32_t from, const std::vector<int32_t>& pages,
                     const std::vector<bool>& read) {
    ReadFromTiers(seq, from, pages, read, nullptr);
    DropTierBlocks(seq);
  };
  io.remove_offloaded = [this](const SeqId& seq) { DropTierBlocks(seq); };
  *consumed = cache_.ApplyDelta(static_cast<const uint8_t*>(delta), size, io);
  return true;
}

}  // namespace mstar::kv

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// KvPaged: the paged KV cache resource. One pool tensor kv_pool
// [num_pages, layers, 2, page_size, kv_heads, head_dim] in host-accounted memory on the
// resource's device (page-major: a page's K and V across layers are one contiguous block, the
// unit a tier stores, so offload and reload copy pages whole, without gathers); per request one
// sequence per label; full pages keyed into a prefix cache; offload and reload of pages through
// the tier chain; publish/check_ready; resident deltas.
// README.md states the plan view contract the model reads.
//
// Threading: the host never calls one instance from two threads at once (mstar/resource.h).
#pragma once

#include "mstar/sdk.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kv_cache.h"
#include "staging_buffer.h"

namespace mstar::kv {

class KvPaged final : public sdk::Resource {
 public:
  explicit KvPaged(const mstar_create_args_t& args);

  sdk::ResourceInfo Info() override;
  void AddRequest(const sdk::RequestInfo& request) override;
  void RemoveRequest(mstar_request_id_t id) override;
  void Declare(const sdk::StepDecl& step) override;
  sdk::Admission Admit(const sdk::StepDecl& step, uint32_t index) override;
  void Plan(const sdk::StepDecl& step, sdk::TensorMapRef view, mstar_stream_t* stream) override;
  void Commit(const sdk::StepDecl& step, const uint8_t* succeeded, mstar_stream_t* stream) override;
  void AbortStep(const sdk::StepDecl& step) override;

  sdk::Admission CheckReady(const sdk::RequestInfo& request, const void* published,
                            uint64_t size) override;
  void Publish(mstar_request_id_t id, sdk::BytesWriter& out) override;
  uint64_t Reclaimable(mstar_request_id_t id) override;
  uint64_t Offload(mstar_request_id_t id, uint64_t max_units, mstar_stream_t* stream) override;
  bool Reload(mstar_request_id_t id, mstar_stream_t* stream) override;
  bool IsOffloaded(mstar_request_id_t id) override;
  double OffloadPriority(mstar_request_id_t id) override;
  void TakeResidentDelta(sdk::BytesWriter& out) override;
  bool ApplyResidentDelta(const void* delta, uint64_t size, uint64_t* consumed) override;
  mstar_resource_stats_t Stats() override;

 private:
  // Published state after its pages (at pos): the sender's label names, which must be this
  // cache's in order, and nothing after them; throws INVALID_ARGUMENT otherwise.
  void CheckLabelNames(mstar_request_id_t id, const uint8_t* p, uint64_t size, uint64_t pos) const;
  // A request's prefix chains, one per label over the same tokens (each label's root differs, so
  // its keys do). Every label's chain keys the same number of pages.
  struct Chain {
    std::vector<PrefixKey> roots;              // per label
    std::vector<std::vector<PrefixKey>> keys;  // per label: keys of its pages [0, keyed())
    std::vector<int32_t> tokens;  // known tokens at positions keyed() * page_size onwards
    // Whether every step committed so far came with its token ids (the host's input_tokens), so
    // tokens are known from position 0 on; once a step comes without, nothing more is keyed.
    bool anchored = true;
    size_t keyed() const { return keys.empty() ? 0 : keys[0].size(); }
  };
  // What admit took for one request of the declared step, per label.
  struct Pending {
    std::vector<uint32_t> old_pages;
    std::vector<int64_t> new_len;
    uint32_t cached = 0;  // leading tokens of the step found in the prefix cache (first label)
    int64_t start = 0;    // the first label's length before the step: where its tokens go
    bool tokens_known = false;    // the step came with its token ids
    std::vector<int32_t> tokens;  // those ids (when known)
  };

  SeqId Seq(mstar_request_id_t id, size_t label) const {
    return SeqId{id, static_cast<uint32_t>(label)};
  }
  void RollBack(mstar_request_id_t id, const Pending& pending);
  void RollBackAll();
  void KeyFullPages(mstar_request_id_t id);
  // A step of request id committed: its tokens extend the chain (and key the pages they fill),
  // or, when they are unknown or do not follow what the chain knows, the chain stops.
  void ExtendChain(mstar_request_id_t id, const Pending& pending);
  // Keys the sequence's pages [from, from + count) by the chain's keys where this cache holds no
  // page under the key yet (after a reload or a take-in).
  void RekeyPages(mstar_request_id_t id, size_t label, uint32_t from, uint32_t count);
  // Prefix-cache hits of a first step of n tokens (pending: its token ids): the same number of
  // cached pages per label.
  std::vector<std::vector<int32_t>> FindHits(mstar_request_id_t id, const Chain& chain, int64_t n,
                                             const Pending& pending);
  // Evicts cached pages other than keep until n pages are free; false (nothing evicted) when
  // the pool cannot make n free that way.
  bool MakeFree(int32_t n, const std::vector<int32_t>& keep);
  // Per offloaded page [from, from + count) of a sequence: the unreferenced cached page that
  // holds the page's prefix key (its block, still in the pool), or -1. A page another request
  // holds is not taken: sharing it would leave neither request a page only it holds, so neither
  // could be evicted alone (reclaimable counts those pages).
  std::vector<int32_t> CachedPages(mstar_request_id_t id, size_t label, uint32_t from,
                                   uint32_t count) const;
  // A page's block in the pool: block_bytes_ contiguous bytes (every layer's K and V).
  uint8_t* PageBlock(int32_t page) const;
  // Copies a page's block out of the pool into block (on block_device) or into the pool from it,
  // ordered on stream (NULL: done on return).
  void CopyPage(int32_t page, uint8_t* block, DLDevice block_device, bool out,
                mstar_stream_t* stream);
  // Whether the tier copies the pool's memory itself: a pool in host memory, or a tier with
  // device_access. Its PUTs read the pages and its GETs write them directly; other tiers go
  // through host staging. Read once per tier when the instance is made (ReadTierReadsPool).
  bool ReadsPool(uint32_t tier) const { return tier_reads_pool_[tier]; }
  bool ReadTierReadsPool(uint32_t tier);
  // Copies the blocks of ops that are not in host memory (pages of a device pool) into host
  // staging_ on stream, waits for them and points the ops there (for a tier that takes host
  // memory only). Slots: each op's block index in staging_.
  void RestageToHost(std::vector<mstar_tier_op_t>& ops, const std::vector<uint32_t>& slots,
                     mstar_stream_t* stream);
  // Grows the host staging to `pages` blocks when a tier reads through it; false when host memory
  // is short for now (the reload is retried, nothing moved).
  bool ReserveReloadStaging(uint64_t pages);
  // The tier's info, or nullopt when it cannot say.
  std::optional<mstar_tier_info_t> TierInfo(uint32_t tier);
  // Whether tier can take bytes more without evicting anything.
  bool TierHasRoom(uint32_t tier, uint64_t bytes);
  // How many blocks tier can take without evicting anything (UINT64_MAX when unbounded, 0 when
  // unknown).
  uint64_t BlocksOfRoom(uint32_t tier);
  // The most pages one offload of a request with `held` pages offloaded already may move: the
  // farthest tier's capacity in blocks less held (UINT64_MAX when unbounded or unknown), and with
  // held > 0 no more than some tier takes without evicting, so that an offload never evicts the
  // request's own blocks, this offload's or its earlier ones.
  uint64_t MostPagesPerOffload(uint64_t held);
  // The nearest tier from `from` on with room for bytes (the farthest when none has): where
  // offloads go first, and where the blocks a nearer tier refused go next, so that they never
  // evict other requests' blocks from a full middle tier.
  uint32_t FirstTier(uint64_t bytes, uint32_t from = 0);
  // PUTs ops (blocks of seq's pages from `from`) to the tier chain; throws when no tier takes
  // one, having removed every block of ops from the tiers it tried (nothing of it stays).
  void PutToTiers(const SeqId& seq, uint32_t from, std::vector<mstar_tier_op_t>& ops,
                  mstar_stream_t* stream);
  // Copies pages [from, from+count) of a sequence to the nearest tier under the keys of offload
  // generation (copies ordered on stream after the work that wrote the pages; NULL:
  // synchronous) and returns once the copies have landed and the tier holds the blocks, so the
  // caller may release the pages (and NoteOffloaded them). Throws as PutToTiers does.
  void WriteToTiers(const SeqId& seq, uint32_t from, uint32_t count, uint64_t generation,
                    mstar_stream_t* stream);
  // Reads the blocks of offloaded pages [from, from+n) of a sequence (under the keys
  // tier_blocks_ records) from the tier chain into pages, those i with read[i] (the others are
  // cached pages that hold theirs): the first tier that has a block gives it; copies into the
  // pool ordered on stream, so later work on stream sees the pages. Throws DATA_LOSS naming the
  // page when a block is lost, having written free pages only.
  void ReadFromTiers(const SeqId& seq, uint32_t from, const std::vector<int32_t>& pages,
                     const std::vector<bool>& read, mstar_stream_t* stream);
  // Records the fence after the staging copies just enqueued on stream (none for NULL: those
  // copies completed in memory_copy).
  void FenceStaging(mstar_stream_t* stream);
  // Blocks until the fenced staging copies have landed: before staging_ is read, rewritten or
  // resized, and before pages copied out of are released.
  void WaitStaging();
  // Removes keys (key i: the block of seq's page from + i) from tiers first..last. A tier that
  // fails a remove is logged with the page and key and the others go on: never throws. Whether
  // the tiers surely keep none of the blocks now (every REMOVE OK or NOT_FOUND).
  bool RemoveBlocks(const SeqId& seq, uint32_t from, const std::vector<mstar_tier_key_t>& keys,
                    uint32_t first, uint32_t last);
  // Records that pages [from, from+count) of seq went to the tiers under generation's keys;
  // they lie right before the sequence's offloaded pages, if any.
  void NoteOffloaded(const SeqId& seq, uint32_t from, uint32_t count, uint64_t generation);
  // Removes the blocks of seq's offloaded pages from every tier and forgets them.
  void DropTierBlocks(const SeqId& seq);
  // The key of a block: page page_index of seq as offload generation wrote it.
  mstar_tier_key_t TierKey(const SeqId& seq, uint32_t page_index, uint64_t generation) const;
  std::vector<mstar_tier_key_t> TierKeys(const SeqId& seq, uint32_t from, uint32_t count,
                                         uint64_t generation) const;
  // The key of offloaded page page_index of seq (generation 0, which no offload writes, when
  // tier_blocks_ does not record the page).
  mstar_tier_key_t OffloadedKey(const SeqId& seq, uint32_t page_index) const;
  template <typename T>
  sdk::Tensor ViewTensor(const std::vector<T>& values, std::vector<int64_t> shape, bool on_device,
                         mstar_stream_t* stream) const;
  // Submits ops to tier and waits for them; stream orders the tier's device copies (NULL: none).
  void RunOps(uint32_t tier, std::vector<mstar_tier_op_t>& ops, mstar_stream_t* stream = nullptr);
  std::string TierName(uint32_t tier) const;

  // Config.
  int32_t page_size_ = 16;
  int32_t num_pages_ = 0;
  int64_t layers_ = 0, kv_heads_ = 0, head_dim_ = 0;
  DLDataType dtype_{kDLFloat, 32, 1};
  std::vector<std::string> labels_;
  std::string salt_;
  bool prefix_cache_ = true;
  // capture_context in pages (0: no capture support). With it, the pool has one page more than
  // the cache hands out (index num_pages_), written only by padding rows.
  int32_t capture_pages_ = 0;
  int32_t pool_pages_ = 0;    // the pool's page dimension: num_pages_, plus the scratch page
  uint64_t chunk_bytes_ = 0;  // one page of one layer's K (or V)
  uint64_t block_bytes_ = 0;  // one page across layers, K and V: the unit stored in a tier
  uint64_t nonce_ = 0;        // tells this instance's tier blocks from other instances'

  sdk::Tensor pool_;
  KvCache cache_;
  std::map<mstar_request_id_t, Chain> chains_;
  std::map<mstar_request_id_t, Pending> pending_;
  ChainHasher hasher_;
  StagingBuffer staging_;              // host memory, pinned on CUDA builds (staging_buffer.h)
  std::vector<bool> tier_reads_pool_;  // per tier (ReadsPool)
  DLDevice block_device_{};  // what tier ops name for the pool's pages: kCpu for a host pool
  // Each offload attempt writes its blocks under keys of a new generation, so no read finds a
  // block an earlier attempt left in a tier (one that failed, or whose remove failed).
  struct TierBlocks {
    uint32_t from = 0;                 // the sequence's first offloaded page
    std::vector<uint64_t> generation;  // per offloaded page, from `from` on
  };
  std::map<SeqId, TierBlocks> tier_blocks_;  // sequences with offloaded pages
  uint64_t last_generation_ = 0;

  // An event on the resource's device recorded after the last copies between staging_ and the
  // pool (device builds copy asynchronously; on CPU builds an event is complete once recorded).
  struct Fence {
    const mstar_host_api_t* host = nullptr;
    mstar_event_t* event = nullptr;
    bool pending = false;  // recorded and not yet waited for
    Fence() = default;
    Fence(const Fence&) = delete;
    Fence& operator=(const Fence&) = delete;
    ~Fence() {
      if (event == nullptr) return;
      if (pending) {
        if (mstar_status_t* s = host->event_synchronize(event)) host->status_release(s);
      }
      host->event_release(event);
    }
  };
  Fence staging_fence_;  // last member: destroyed (waited for) before staging_ and the pool
};

}  // namespace mstar::kv

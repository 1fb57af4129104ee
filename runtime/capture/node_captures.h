// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// NodeCaptures: one node's captured graphs: a slot pool per captured whole-forward (config,
// bucket), the choice of bucket for a batch, the once-per-shape eager-fallback log, and the node's
// piecewise regions (RegionCaptures). Slot ids are unique across the node's pools and its region
// slots, and across every node that shares the engine's counter, so a resource keying its
// pre-plans by slot never confuses two buckets, nor two nodes that share it.
//
// Thread-safe: pools are added during warmup only (before any batch); afterwards Choose, PoolOf
// and Fallback may be called from the plan and exec threads.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "capture/capture_backend.h"
#include "capture/fallback_memo.h"
#include "capture/region_captures.h"
#include "capture/slot_pool.h"
#include "mstar/submodule.h"

namespace mstar {

// The captured bucket chosen for a batch.
struct CaptureChoice {
  int config = -1;
  uint32_t bucket = 0;
  SlotPool* pool = nullptr;
};

class NodeCaptures {
 public:
  // configs are borrowed (the submodule's, valid until it is destroyed, which is after this).
  // next_slot_id: the engine's counter of slot ids, borrowed, advanced as ids are handed out
  // (null: this node's own, from 0).
  NodeCaptures(std::string node, const std::vector<mstar_capture_config_t>* configs,
               CaptureBackend* backend, int32_t* next_slot_id = nullptr);

  const std::string& node() const { return node_; }
  const std::vector<mstar_capture_config_t>& configs() const { return *configs_; }
  // Adds the pool of a captured bucket (warmup only).
  SlotPool* AddPool(int config, uint32_t bucket, uint32_t num_slots);
  // Removes a pool whose capture failed (warmup only).
  void RemovePool(int config, uint32_t bucket);
  // num_slots fresh slot ids (warmup only); returns the first.
  int32_t ReserveSlotIds(uint32_t num_slots);
  // The node's regions (warmup only); null when it captures none.
  void SetRegions(std::unique_ptr<RegionCaptures> regions) { regions_ = std::move(regions); }
  RegionCaptures* regions() const { return regions_.get(); }

  // Why the batch cannot load into the templates of config's pool ("" when it can).
  using PoolMismatch = std::function<std::string(int config, const SlotPool& pool)>;

  // The smallest captured bucket that holds a batch of walk whose requests have capture_key (a
  // config with MSTAR_CAPTURE_SPLIT_BY_KEY replays only its own key) and, with mismatch given,
  // whose templates the batch's inputs match: a bucket captured with other shapes leaves the
  // batch to the next one that fits. On a miss *reason says why (when every bucket that holds
  // the batch mismatched: the mismatch of the first config's smallest).
  std::optional<CaptureChoice> Choose(const std::string& walk, uint64_t capture_key,
                                      uint32_t batch_size, uint32_t total_tokens,
                                      uint32_t max_request_tokens, std::string* reason,
                                      const PoolMismatch& mismatch = {}) const;
  SlotPool* PoolOf(int32_t slot) const;
  // Whether a captured graph of a config with MSTAR_CAPTURE_SPLIT_BY_KEY replays walk.
  bool SplitsByKey(const std::string& walk) const;
  bool ReplaysAny(const std::string& walk) const;

  // Records an eager fallback, once per (walk, batch size, tokens, reason) for the first
  // FallbackMemo::kDefaultLimit of them; true when recorded.
  bool Fallback(const std::string& walk, uint32_t batch_size, uint32_t total_tokens,
                const std::string& reason);

 private:
  std::string node_;
  const std::vector<mstar_capture_config_t>* configs_;
  CaptureBackend* backend_;
  int32_t own_next_slot_ = 0;
  int32_t* next_slot_;  // own_next_slot_ or the engine's
  std::map<std::pair<int, uint32_t>, std::unique_ptr<SlotPool>> pools_;
  std::mutex fallback_mutex_;
  FallbackMemo<std::tuple<std::string, uint32_t, uint32_t, std::string>> fallbacks_;
  std::unique_ptr<RegionCaptures> regions_;  // destroyed before the pools (declared after)
};

}  // namespace mstar

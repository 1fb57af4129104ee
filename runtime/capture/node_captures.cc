// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "capture/node_captures.h"

#include "capture/buckets.h"
#include "core/logging.h"

namespace mstar {

NodeCaptures::NodeCaptures(std::string node, const std::vector<mstar_capture_config_t>* configs,
                           CaptureBackend* backend, int32_t* next_slot_id)
    : node_(std::move(node)),
      configs_(configs),
      backend_(backend),
      next_slot_(next_slot_id != nullptr ? next_slot_id : &own_next_slot_) {}

SlotPool* NodeCaptures::AddPool(int config, uint32_t bucket, uint32_t num_slots) {
  const mstar_capture_config_t& c = (*configs_)[static_cast<size_t>(config)];
  CaptureEvent site;
  site.node = node_;
  site.walk = c.capture_walk != nullptr ? c.capture_walk : "";
  site.config = config;
  site.bucket = c.buckets[bucket];
  auto pool = std::make_unique<SlotPool>(backend_, site, ReserveSlotIds(num_slots), num_slots);
  SlotPool* raw = pool.get();
  pools_[{config, bucket}] = std::move(pool);
  return raw;
}

void NodeCaptures::RemovePool(int config, uint32_t bucket) {
  pools_.erase({config, bucket});
}

int32_t NodeCaptures::ReserveSlotIds(uint32_t num_slots) {
  int32_t first = *next_slot_;
  *next_slot_ += static_cast<int32_t>(num_slots);
  return first;
}

std::optional<CaptureChoice> NodeCaptures::Choose(const std::string& walk, uint64_t capture_key,
                                                  uint32_t batch_size, uint32_t total_tokens,
                                                  uint32_t max_request_tokens, std::string* reason,
                                                  const PoolMismatch& mismatch) const {
  std::optional<CaptureChoice> best;
  bool any_config = false, any_key = false;
  std::string first_mismatch;
  for (size_t i = 0; i < configs_->size(); ++i) {
    const mstar_capture_config_t& config = (*configs_)[i];
    if (!ConfigReplaysWalk(config, walk)) continue;
    any_config = true;
    if ((config.flags & MSTAR_CAPTURE_SPLIT_BY_KEY) != 0 && config.capture_key != capture_key)
      continue;  // captured for other requests (another sampling mode, another shape family)
    any_key = true;
    // Among the captured buckets: one whose capture failed (fallback allowed) has no pool, and
    // the next larger one takes its batches; so does one captured with fewer rows than the batch
    // has (a PACKED bucket of any batch size holds one request), and one whose templates the
    // batch's inputs do not match.
    const int config_index = static_cast<int>(i);
    auto usable = [&](uint32_t b) {
      auto it = pools_.find({config_index, b});
      if (it == pools_.end() || batch_size > CapturedRows(config.buckets[b])) return false;
      if (!mismatch) return true;
      std::string why = mismatch(config_index, *it->second);
      if (why.empty()) return true;
      if (first_mismatch.empty()) first_mismatch = std::move(why);
      return false;
    };
    std::optional<uint32_t> bucket =
        ChooseBucket(config, batch_size, total_tokens, max_request_tokens, usable);
    if (!bucket) continue;
    // Across configs the first that fits wins: a submodule lists its preferred config first.
    best = CaptureChoice{config_index, *bucket, pools_.at({config_index, *bucket}).get()};
    break;
  }
  if (!best && reason != nullptr) {
    if (!any_config) {
      *reason = "walk '" + walk + "' replays no capture";
    } else if (!any_key) {
      *reason =
          "no capture of walk '" + walk + "' is for capture key " + std::to_string(capture_key);
    } else if (!first_mismatch.empty()) {
      *reason = first_mismatch;
    } else {
      *reason = "no captured bucket holds " + std::to_string(batch_size) + " requests with " +
                std::to_string(total_tokens) + " tokens (at most " +
                std::to_string(max_request_tokens) + " per request)";
    }
  }
  return best;
}

bool NodeCaptures::SplitsByKey(const std::string& walk) const {
  for (const auto& [where, pool] : pools_) {
    const mstar_capture_config_t& config = (*configs_)[static_cast<size_t>(where.first)];
    if ((config.flags & MSTAR_CAPTURE_SPLIT_BY_KEY) != 0 && ConfigReplaysWalk(config, walk))
      return true;
  }
  return false;
}

SlotPool* NodeCaptures::PoolOf(int32_t slot) const {
  for (const auto& [key, pool] : pools_) {
    if (pool->Owns(slot)) return pool.get();
  }
  return nullptr;
}

bool NodeCaptures::ReplaysAny(const std::string& walk) const {
  for (const auto& [key, pool] : pools_) {
    if (ConfigReplaysWalk((*configs_)[static_cast<size_t>(key.first)], walk)) return true;
  }
  return false;
}

bool NodeCaptures::Fallback(const std::string& walk, uint32_t batch_size, uint32_t total_tokens,
                            const std::string& reason) {
  FallbackMemo<std::tuple<std::string, uint32_t, uint32_t, std::string>>::Seen seen;
  size_t logged = 0;
  {
    std::lock_guard<std::mutex> lock(fallback_mutex_);
    seen = fallbacks_.Note({walk, batch_size, total_tokens, reason});
    logged = fallbacks_.size();
  }
  if (seen == decltype(seen)::kJustFull) {
    Log().info("{}: {} eager fallbacks logged; further ones are not", node_, logged);
  }
  if (seen != decltype(seen)::kFirst) return false;
  Log().info("{}: walk '{}' runs eagerly at batch {} with {} tokens: {}", node_, walk, batch_size,
             total_tokens, reason);
  backend_->Record(FallbackEvent(node_, walk, "", batch_size, {batch_size, total_tokens}, reason));
  return true;
}

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "capture/buckets.h"

#include <algorithm>
#include <tuple>
#include <vector>

namespace mstar {

namespace {

bool ListsWalk(const mstar_capture_config_t& config, std::string_view walk) {
  for (uint32_t i = 0; i < config.num_replay_walks; ++i) {
    if (config.replay_walks[i] != nullptr && walk == config.replay_walks[i]) return true;
  }
  return false;
}

}  // namespace

bool ConfigReplaysWalk(const mstar_capture_config_t& config, std::string_view walk) {
  return config.region == nullptr && ListsWalk(config, walk);
}

bool RegionReplaysWalk(const mstar_capture_config_t& config, std::string_view walk) {
  return config.region != nullptr && ListsWalk(config, walk);
}

uint32_t RegionRows(const mstar_capture_config_t& config, const mstar_capture_bucket_t& bucket) {
  return (config.flags & MSTAR_CAPTURE_PACKED) != 0 ? bucket.num_tokens : bucket.batch_size;
}

uint32_t RowTokens(const mstar_capture_bucket_t& bucket) {
  if (bucket.batch_size == 0 || bucket.num_tokens < bucket.batch_size) return 1;
  return bucket.num_tokens / bucket.batch_size;
}

uint32_t CapturedRows(const mstar_capture_bucket_t& bucket) {
  return std::max<uint32_t>(bucket.batch_size, 1);
}

std::optional<uint32_t> ChooseBucket(const mstar_capture_config_t& config, uint32_t batch_size,
                                     uint32_t total_tokens, uint32_t max_request_tokens,
                                     const std::function<bool(uint32_t)>& usable) {
  if (batch_size == 0) return std::nullopt;
  const bool packed = (config.flags & MSTAR_CAPTURE_PACKED) != 0;
  auto order = [&](uint32_t i) {
    const mstar_capture_bucket_t& b = config.buckets[i];
    return packed ? std::make_tuple(b.num_tokens, b.batch_size, i)
                  : std::make_tuple(b.batch_size, b.num_tokens, i);
  };
  std::vector<uint32_t> holding;
  for (uint32_t i = 0; i < config.num_buckets; ++i) {
    const mstar_capture_bucket_t& b = config.buckets[i];
    bool holds =
        packed ? total_tokens <= b.num_tokens && (b.batch_size == 0 || batch_size <= b.batch_size)
               : b.batch_size >= batch_size && max_request_tokens <= RowTokens(b);
    if (holds) holding.push_back(i);
  }
  std::sort(holding.begin(), holding.end(),
            [&](uint32_t a, uint32_t b) { return order(a) < order(b); });
  for (uint32_t i : holding) {
    if (!usable || usable(i)) return i;
  }
  return std::nullopt;
}

}  // namespace mstar

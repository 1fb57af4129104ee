// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Bucket choice: which captured shape of a capture configuration serves a batch.
//   batched configs   a bucket holds the batch when its batch size is at least the batch's and
//                     each request's tokens fit its tokens per row (num_tokens / batch_size);
//                     the smallest such bucket wins (by batch size, then tokens)
//   PACKED configs    buckets are over total tokens: a bucket holds the batch when the total
//                     fits its num_tokens and the batch fits its batch size (0: any); the smallest
//                     by tokens, then batch size
//   regions           a region's inputs lead with the bucket's rows: its batch size, or its
//                     num_tokens in a PACKED config; the smallest bucket with enough rows wins
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "mstar/submodule.h"

namespace mstar {

// Whether walk replays config (whole-forward configs only: a region replays inside a forward).
bool ConfigReplaysWalk(const mstar_capture_config_t& config, std::string_view walk);

// Whether walk replays the region config (region configs only: a region replays inside the
// forwards of the walks its config lists).
bool RegionReplaysWalk(const mstar_capture_config_t& config, std::string_view walk);

// The leading dimension a region's inputs have at bucket (see the file comment).
uint32_t RegionRows(const mstar_capture_config_t& config, const mstar_capture_bucket_t& bucket);

// Tokens one row of bucket holds in a batched (not PACKED) config; at least 1.
uint32_t RowTokens(const mstar_capture_bucket_t& bucket);

// The requests a whole-forward capture of bucket holds: its batch size, and one for a PACKED
// bucket of any batch size (batch_size 0), which is captured with one dummy request.
uint32_t CapturedRows(const mstar_capture_bucket_t& bucket);

// The index of the smallest bucket of config that holds the batch among those usable accepts
// (every bucket when usable is empty; e.g. those captured, so that a bucket whose capture failed
// leaves the batch to the next larger one), or nullopt when none does. usable is asked about the
// buckets that hold the batch, smallest first, until it accepts one.
std::optional<uint32_t> ChooseBucket(const mstar_capture_config_t& config, uint32_t batch_size,
                                     uint32_t total_tokens, uint32_t max_request_tokens,
                                     const std::function<bool(uint32_t)>& usable = {});

}  // namespace mstar

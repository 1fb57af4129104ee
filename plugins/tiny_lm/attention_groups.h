// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// GroupForAttention: which requests of a step attend together. Attention runs over a padded
// block per group: every member gets the group's most query rows and longest context, so one
// 1900-token prompt batched with 31 short ones would, in a single group, cost 32 x 1900 x 1900
// scores per head instead of about 1900 x 1900. Grouping requests of similar shape bounds that
// waste while keeping the batched kernels (one group for a decode step of similar contexts).
// LibTorch-free; a pure function of the shapes.
#pragma once

#include <cstdint>
#include <vector>

namespace tiny_lm {

// One request's attention: its query rows (computed tokens) and the context they attend over.
struct AttentionShape {
  int64_t rows = 1;
  int64_t context = 1;
};

struct AttentionGroupPlan {
  std::vector<int64_t> members;  // indices into the shapes, ascending
  int64_t max_rows = 0;          // the most rows among the members
  int64_t max_context = 0;       // the longest context among them
};

// Padding a group may add beyond its members' own scores whatever their size, in scores per
// head (rows x context): small enough to keep the padded block within a few MiB, large enough
// that a decode step of 32 requests with contexts up to 512 stays one group.
inline constexpr int64_t kAttentionPaddingSlack = int64_t{1} << 14;

// Splits shapes into groups such that each group's padding (its padded scores, members x
// max_rows x max_context, less its members' own, the sum of rows x context) is at most half its
// members' own scores or at most slack. Every index is in exactly one group; members ascend within a group and groups
// are ordered by their first member, so shapes that all fit one group give it in step order.
// Shapes must have rows >= 1 and context >= rows (checked by the caller, kv_view.cc).
std::vector<AttentionGroupPlan> GroupForAttention(const std::vector<AttentionShape>& shapes,
                                                  int64_t slack = kAttentionPaddingSlack);

}  // namespace tiny_lm

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// tiny_lm's attention grouping: every request lands in exactly one group, in ascending order;
// a group's padding stays within half its members' own scores or the slack; a step of alike
// requests stays one group in step order; a long prompt among short ones gets its own group.
#include "attention_groups.h"  // plugins/tiny_lm

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace tiny_lm {
namespace {

int64_t Own(const std::vector<AttentionShape>& shapes, const AttentionGroupPlan& g) {
  int64_t sum = 0;
  for (int64_t i : g.members) sum += shapes[i].rows * shapes[i].context;
  return sum;
}

int64_t Padded(const AttentionGroupPlan& g) {
  return static_cast<int64_t>(g.members.size()) * g.max_rows * g.max_context;
}

// The contract of GroupForAttention over shapes.
void ExpectValid(const std::vector<AttentionShape>& shapes,
                 const std::vector<AttentionGroupPlan>& groups, int64_t slack) {
  std::vector<int> seen(shapes.size(), 0);
  for (size_t k = 0; k < groups.size(); ++k) {
    const AttentionGroupPlan& g = groups[k];
    ASSERT_FALSE(g.members.empty());
    EXPECT_TRUE(std::is_sorted(g.members.begin(), g.members.end()));
    if (k > 0) {
      EXPECT_LT(groups[k - 1].members.front(), g.members.front());
    }
    int64_t rows = 0, context = 0;
    for (int64_t i : g.members) {
      ++seen[static_cast<size_t>(i)];
      rows = std::max(rows, shapes[i].rows);
      context = std::max(context, shapes[i].context);
    }
    EXPECT_EQ(g.max_rows, rows);
    EXPECT_EQ(g.max_context, context);
    const int64_t own = Own(shapes, g), padded = Padded(g);
    EXPECT_TRUE(padded - own <= std::max(own / 2, slack))
        << "group " << k << ": padded " << padded << ", own " << own;
  }
  for (size_t i = 0; i < shapes.size(); ++i) EXPECT_EQ(seen[i], 1) << "request " << i;
}

TEST(AttentionGroups, AlikeRequestsStayOneGroupInStepOrder) {
  std::vector<AttentionShape> decode;
  for (int64_t i = 0; i < 32; ++i) decode.push_back({1, 100 + 13 * i});
  std::vector<AttentionGroupPlan> groups = GroupForAttention(decode);
  ASSERT_EQ(groups.size(), 1u);
  for (int64_t i = 0; i < 32; ++i) EXPECT_EQ(groups[0].members[i], i);
  EXPECT_EQ(groups[0].max_rows, 1);
  EXPECT_EQ(groups[0].max_context, 100 + 13 * 31);

  std::vector<AttentionShape> prefill{{12, 12}, {13, 13}, {9, 9}, {1, 40}};
  EXPECT_EQ(GroupForAttention(prefill).size(), 1u);
}

TEST(AttentionGroups, ALongPromptAmongShortOnesIsAttendedAlone) {
  // The case that made one padded block cost 32 x 1900 x 1900 scores per head.
  std::vector<AttentionShape> shapes(32, AttentionShape{20, 20});
  shapes[5] = {1900, 1900};
  std::vector<AttentionGroupPlan> groups = GroupForAttention(shapes);
  ExpectValid(shapes, groups, kAttentionPaddingSlack);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[1].members, std::vector<int64_t>{5});
  int64_t padded = 0;
  for (const AttentionGroupPlan& g : groups) padded += Padded(g);
  EXPECT_EQ(padded, 1900 * 1900 + 31 * 20 * 20);
}

TEST(AttentionGroups, RandomStepsKeepTheBound) {
  std::mt19937_64 random(7);
  for (int step = 0; step < 500; ++step) {
    const int64_t slack = step % 2 ? kAttentionPaddingSlack : 0;
    std::vector<AttentionShape> shapes(1 + random() % 40);
    for (AttentionShape& s : shapes) {
      // Decodes, prefills and prefix hits (few rows over a long context).
      s.context = 1 + static_cast<int64_t>(random() % 3000);
      const int kind = static_cast<int>(random() % 3);
      s.rows = kind == 0   ? 1
               : kind == 1 ? s.context
                           : 1 + static_cast<int64_t>(random() % s.context);
    }
    ExpectValid(shapes, GroupForAttention(shapes, slack), slack);
    if (HasFailure()) FAIL() << "step " << step;
  }
}

TEST(AttentionGroups, NoShapesNoGroups) {
  EXPECT_TRUE(GroupForAttention({}).empty());
}

}  // namespace
}  // namespace tiny_lm

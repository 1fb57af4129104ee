// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "attention_groups.h"

#include <algorithm>
#include <numeric>

namespace tiny_lm {
namespace {

int64_t Scores(const AttentionShape& s) {
  return s.rows * s.context;
}

}  // namespace

std::vector<AttentionGroupPlan> GroupForAttention(const std::vector<AttentionShape>& shapes,
                                                  int64_t slack) {
  // Greedy over the shapes from the most rows (then the longest context) down: a request joins
  // the open group while the padded block stays within the bound, else it opens the next.
  std::vector<int64_t> order(shapes.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const AttentionShape& x = shapes[static_cast<size_t>(a)];
    const AttentionShape& y = shapes[static_cast<size_t>(b)];
    return x.rows != y.rows ? x.rows > y.rows : x.context > y.context;
  });
  std::vector<AttentionGroupPlan> groups;
  int64_t own = 0;  // the open group's members' own scores
  for (int64_t i : order) {
    const AttentionShape& s = shapes[static_cast<size_t>(i)];
    if (!groups.empty()) {
      AttentionGroupPlan& open = groups.back();
      const auto count = static_cast<int64_t>(open.members.size()) + 1;
      const int64_t rows = std::max(open.max_rows, s.rows);
      const int64_t context = std::max(open.max_context, s.context);
      const int64_t padded = count * rows * context, real = own + Scores(s);
      if (padded - real <= std::max(real / 2, slack)) {
        open.members.push_back(i);
        open.max_rows = rows;
        open.max_context = context;
        own = real;
        continue;
      }
    }
    groups.push_back({{i}, s.rows, s.context});
    own = Scores(s);
  }
  for (AttentionGroupPlan& g : groups) std::sort(g.members.begin(), g.members.end());
  std::sort(groups.begin(), groups.end(),
            [](const AttentionGroupPlan& a, const AttentionGroupPlan& b) {
              return a.members.front() < b.members.front();
            });
  return groups;
}

}  // namespace tiny_lm

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// tiny_lm's greedy pick on the device (greedy.h, what a captured decode step outputs) against
// the host sampler's greedy pick (sampler.h, what an eager step outputs): the same token for
// rows with NaN, +inf and -inf logits, ties, and rows that are all NaN.
#include "greedy.h"  // plugins/tiny_lm

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "sampler.h"  // plugins/tiny_lm

namespace tiny_lm {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

int64_t HostGreedy(const std::vector<float>& row) {
  return SampleToken(row.data(), static_cast<int64_t>(row.size()), SamplingParams{}, 1, 0);
}

void ExpectSamePicks(const std::vector<std::vector<float>>& rows) {
  const auto vocab = static_cast<int64_t>(rows[0].size());
  at::Tensor logits = at::empty({static_cast<int64_t>(rows.size()), vocab}, at::kFloat);
  for (size_t r = 0; r < rows.size(); ++r)
    std::copy(rows[r].begin(), rows[r].end(), logits[static_cast<int64_t>(r)].data_ptr<float>());
  at::Tensor picks = GreedyTokens(logits).to(at::kLong);
  for (size_t r = 0; r < rows.size(); ++r)
    EXPECT_EQ(picks[static_cast<int64_t>(r)].item<int64_t>(), HostGreedy(rows[r])) << "row " << r;
}

TEST(GreedyTokens, ANanNeverWinsAndTiesGoToTheFirst) {
  ExpectSamePicks({{kNan, 1, 3, 3},
                   {1, kNan, 2, kNan},
                   {kNan, kNan, kNan, kNan},
                   {kNan, -kInf, -kInf, kNan},
                   {-kInf, kInf, kNan, kInf},
                   {2, 2, 2, 2}});
}

TEST(GreedyTokens, RandomRowsWithNonFiniteLogits) {
  std::mt19937 random(3);
  std::uniform_real_distribution<float> value(-4, 4);
  std::vector<std::vector<float>> rows(200, std::vector<float>(37));
  for (std::vector<float>& row : rows) {
    for (float& v : row) {
      const unsigned kind = random() % 16;
      v = kind == 0 ? kNan : kind == 1 ? kInf : kind == 2 ? -kInf : std::round(value(random));
    }
  }
  ExpectSamePicks(rows);
}

}  // namespace
}  // namespace tiny_lm

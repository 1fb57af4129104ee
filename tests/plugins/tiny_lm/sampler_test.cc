// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// tiny_lm's sampler on logits that are not all finite: a NaN is never drawn (or picked by greedy)
// while another token can be, +inf logits share the draw among themselves, and finite logits are drawn in proportion
// (the likeliest most often).
#include "sampler.h"  // plugins/tiny_lm

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <vector>

namespace tiny_lm {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// How often each token is drawn from logits over 1000 seeds.
std::map<int64_t, int> Draws(const std::vector<float>& logits, SamplingParams params) {
  std::map<int64_t, int> counts;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    ++counts[SampleToken(logits.data(), static_cast<int64_t>(logits.size()), params, seed, 7)];
  }
  return counts;
}

TEST(Sampler, APositiveInfiniteLogitTakesEveryDraw) {
  SamplingParams params;
  params.temperature = 0.8;
  std::map<int64_t, int> counts = Draws({0.5f, kInf, 0.2f, -1.0f}, params);
  EXPECT_EQ(counts[1], 1000);
  // Two of them share the draws.
  counts = Draws({kInf, 0.5f, kInf}, params);
  EXPECT_EQ(counts[0] + counts[2], 1000);
  EXPECT_GT(counts[0], 300);
  EXPECT_GT(counts[2], 300);
}

TEST(Sampler, ANanLogitIsNeverDrawn) {
  SamplingParams params;
  params.temperature = 1.0;
  std::map<int64_t, int> counts = Draws({kNan, 0.0f, 0.0f, kNan}, params);
  EXPECT_EQ(counts[0] + counts[3], 0);
  EXPECT_EQ(counts[1] + counts[2], 1000);
  // With top_k and top_p as well.
  params.top_k = 2;
  params.top_p = 0.9;
  counts = Draws({kNan, 1.0f, 0.0f, kNan}, params);
  EXPECT_EQ(counts[0] + counts[3], 0);
}

TEST(Sampler, GreedyNeverPicksANanWhileAnotherTokenCan) {
  const SamplingParams greedy;  // temperature 0
  const std::vector<float> first_nan = {kNan, 1.0f, 0.5f, 0.0f};
  EXPECT_EQ(SampleToken(first_nan.data(), 4, greedy, 0, 0), 1);
  std::vector<float> long_row(20, 0.0f);  // past the eight lanes of the greedy scan
  long_row[0] = kNan;
  long_row[9] = kNan;
  long_row[13] = 2.0f;
  EXPECT_EQ(SampleToken(long_row.data(), 20, greedy, 0, 0), 13);
  const std::vector<float> all_nan = {kNan, kNan};
  EXPECT_EQ(SampleToken(all_nan.data(), 2, greedy, 0, 0), 0);
}

TEST(Sampler, FiniteLogitsAreDrawnInProportion) {
  SamplingParams params;
  params.temperature = 1.0;
  // exp(2) : exp(0) : exp(-inf) = 0.88 : 0.12 : 0.
  std::map<int64_t, int> counts = Draws({2.0f, 0.0f, -kInf}, params);
  EXPECT_EQ(counts[2], 0);
  EXPECT_GT(counts[0], 800);
  EXPECT_GT(counts[1], 60);
}

}  // namespace
}  // namespace tiny_lm

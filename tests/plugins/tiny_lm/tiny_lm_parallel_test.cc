// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// tiny_lm split over a tensor-parallel group of two ranks (plugins/tiny_lm/tensor_parallel.h),
// each rank its own instance and KV cache on its own thread, the partial sums all-reduced through
// the host's communicator (a thread group): both ranks produce the HF reference's greedy tokens
// for mixed prefill/decode batches, and the prompt's logits within the single-rank tolerance.
// A split that does not divide the heads, or a group without a communicator, is a create error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "distributed/comm_transport.h"
#include "plugins/tiny_lm/tiny_lm_harness.h"

namespace mstar::test {
namespace {

constexpr uint32_t kWorld = 2;

class TinyLmParallel : public ::testing::TestWithParam<const char*> {};

TEST_P(TinyLmParallel, TwoRanksMatchHfOnMixedBatches) {
  Reference r = LoadReference(GetParam());
  CommGroup group = MakeThreadGroup(kWorld);
  std::vector<std::vector<std::vector<int64_t>>> generated(kWorld);
  std::vector<std::vector<float>> prompt_logits(kWorld);
  std::vector<std::string> errors(kWorld);
  auto rank_body = [&](uint32_t rank) {
    try {
      TinyLmHarness lm("weights = \"" + r.dir + "\"\n", {rank, kWorld, group[rank].get()});
      // The rank's KV cache holds its share of the KV heads.
      PagedKv single(r.layers, r.kv_heads / kWorld, r.head_dim, 61, 4);
      LmRequest alone(100, 7);
      prompt_logits[rank] = lm.Step(single, {&alone}, {r.cases[0].prompt})[0].logits;
      PagedKv kv(r.layers, r.kv_heads / kWorld, r.head_dim, 61, 4);
      LmRequest a(1, 1), b(2, 2), c(3, 3);
      std::vector<std::vector<int64_t>> prompts;
      for (const ReferenceCase& ref : r.cases) prompts.push_back(ref.prompt);
      generated[rank] = lm.Generate(kv, {&a, &b, &c}, prompts, 12, {0, 1, 3});
    } catch (const std::exception& e) {
      errors[rank] = e.what();
    }
  };
  std::vector<std::thread> threads;
  for (uint32_t rank = 0; rank < kWorld; ++rank) threads.emplace_back(rank_body, rank);
  for (std::thread& t : threads) t.join();
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    ASSERT_EQ(errors[rank], "");
    ASSERT_EQ(generated[rank].size(), r.cases.size());
    for (size_t i = 0; i < r.cases.size(); ++i)
      EXPECT_EQ(generated[rank][i], r.cases[i].greedy) << "case " << i;
    const std::vector<float>& expected = r.cases[0].prompt_logits;
    ASSERT_EQ(prompt_logits[rank].size(), expected.size());
    float scale = 0, worst = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      scale = std::max(scale, std::abs(expected[i]));
      worst = std::max(worst, std::abs(prompt_logits[rank][i] - expected[i]));
    }
    EXPECT_LE(worst, 1e-4f * scale) << "worst logit difference " << worst << " of " << scale;
  }
  EXPECT_EQ(prompt_logits[0], prompt_logits[1]) << "every rank ends with the same logits";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TinyLmParallel,
                         testing::Values("llama_mha_tied", "llama_gqa2_untied",
                                         "qwen3_gqa4_untied"));

TEST(TinyLmParallelConfig, ASplitThatDoesNotDivideOrHasNoCommunicatorIsACreateError) {
  Reference r = LoadReference("llama_gqa2_untied");  // 4 heads, 2 KV heads
  const std::string config = "weights = \"" + r.dir + "\"\n";
  CommGroup three = MakeThreadGroup(3);
  Status indivisible = TinyLmHarness::TryCreate(config, {0, 3, three[0].get()});
  EXPECT_NE(indivisible.message().find("is not divisible by the 3 ranks"), std::string::npos)
      << indivisible.ToString();
  // The host refuses a group of several ranks without a communicator before the plugin's create
  // (tiny_lm checks it too, for hosts that do not).
  Status no_comm = TinyLmHarness::TryCreate(config, {0, 2, nullptr});
  EXPECT_NE(no_comm.message().find("rank 0 of 2 has no communicator"), std::string::npos)
      << no_comm.ToString();
}

}  // namespace
}  // namespace mstar::test

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// tier_disk under whole sessions: the runtime computes the checkpoint identity of the model's
// weights ([model].checkpoint) and hands it to the tier, so a persistent disk tier keeps its blocks
// across successive sessions over the same weights and wipes them when the weights change.
#include <gtest/gtest.h>

#include <filesystem>

#include "model/checkpoint_identity.h"
#include "runtime/engine/engine_harness.h"
#include "support/test_support.h"
#include "tier_harness.h"

namespace mstar::test {
namespace {

namespace fs = std::filesystem;

// The kit language model with a kv_paged resource offloading to a persistent disk tier; its pool
// (20 pages of 4 tokens) is too small for the prompts at once, so requests go to disk and back.
std::string Manifest(const std::string& weights, const std::string& blocks) {
  return R"(
format = 1
[model]
name = "kit_disk"
max_output_tokens = 100000
checkpoint = ")" +
         weights + R"("
)" + test::KitLmNode(", \"pages\"") +
         R"(
[resources.pages]
plugin = "kv_paged"
tiers = ["disk"]
[resources.pages.config]
page_size = 4
num_pages = 20
layers = 1
kv_heads = 1
head_dim = 4
[tiers.disk]
plugin = "tier_disk"
[tiers.disk.config]
directory = ")" +
         blocks + R"("
persistent = true
)" + test::LmWalks();
}

class TierDiskSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(weights_);
    WriteFile(weights_ + "/model.safetensors", std::string(1000, 'w'));
    WriteFile(weights_ + "/config.json", R"({"hidden_size": 4})");
  }

  // Runs a session over the model and checks every request finished. The requests are submitted
  // together: submitted one by one, the first could finish before the last arrives (on a loaded
  // machine), and then no request would ever need to leave the pool.
  void RunSession() {
    RunOptions options;
    options.together = true;
    RunOutput out = RunAll(Model(Manifest(weights_, blocks_)), {"AB", "C", "DEF", "G"}, options);
    EXPECT_GT(out.stats.evictions, 0u);  // requests went to disk and back
    for (const Outcome& o : out.outcomes)
      ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
  }

  std::string Identity() {
    Result<std::vector<uint8_t>> identity =
        ModelCheckpointIdentity(Model(Manifest(weights_, blocks_)));
    EXPECT_TRUE(identity.ok()) << identity.status().ToString();
    return identity.ok() ? std::string(identity->begin(), identity->end()) : "";
  }

  std::unique_ptr<TierHarness> Tier(const std::string& identity) {
    auto tier = TierHarness::Create(
        "tier_disk", "directory = \"" + blocks_ + "\"\npersistent = true\n", identity);
    EXPECT_TRUE(tier.ok()) << tier.status().ToString();
    return tier.ok() ? std::move(tier.value()) : nullptr;
  }

  TempDir dir_;
  std::string weights_ = dir_.path() + "/weights";
  std::string blocks_ = dir_.path() + "/blocks";
};

TEST_F(TierDiskSessionTest, SuccessiveSessionsOverTheSameWeightsKeepTheBlocks) {
  const std::string identity = Identity();
  ASSERT_EQ(identity.size(), 32u);
  const std::vector<uint8_t> block = Pattern(4096, 7);
  {
    auto tier = Tier(identity);  // a block left by an earlier run under these weights
    ASSERT_NE(tier, nullptr);
    ASSERT_EQ(tier->Put(7, block), MSTAR_OK);
  }
  RunSession();
  RunSession();
  EXPECT_EQ(CountContaining(blocks_, ".blk"), 1u);
  auto tier = Tier(identity);
  ASSERT_NE(tier, nullptr);
  std::vector<uint8_t> back(block.size());
  ASSERT_EQ(tier->Get(7, back), MSTAR_OK);
  EXPECT_EQ(back, block);
}

TEST_F(TierDiskSessionTest, AChangedCheckpointWipesTheBlocks) {
  const std::string before = Identity();
  {
    auto tier = Tier(before);
    ASSERT_NE(tier, nullptr);
    ASSERT_EQ(tier->Put(7, Pattern(4096, 7)), MSTAR_OK);
  }
  RunSession();
  ASSERT_EQ(CountContaining(blocks_, ".blk"), 1u);
  WriteFile(weights_ + "/model.safetensors", std::string(1001, 'w'));  // new weights
  const std::string after = Identity();
  ASSERT_NE(before, after);
  RunSession();
  EXPECT_EQ(CountContaining(blocks_, ".blk"), 0u);
  auto tier = Tier(after);  // the directory now belongs to the new checkpoint
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->Contains(7), MSTAR_ERR_NOT_FOUND);
}

TEST_F(TierDiskSessionTest, MissingWeightsFailTheSessionNamingTheKey) {
  fs::remove_all(weights_);
  RunOptions options;
  options.tolerate_failures = true;
  RunOutput out = RunAll(Model(Manifest(weights_, blocks_)), {"AB"}, options);
  EXPECT_NE(out.open_error.find("model.checkpoint"), std::string::npos) << out.open_error;
  EXPECT_NE(out.open_error.find(weights_), std::string::npos) << out.open_error;
}

}  // namespace
}  // namespace mstar::test

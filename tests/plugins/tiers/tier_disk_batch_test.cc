// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// tier_disk's batched PUTs: the consecutive PUTs of a batch are written first and made durable
// together, with the same per-op results, ordering, capacity bound and failure cleanup as one
// PUT at a time.
#include <gtest/gtest.h>

#include "support/test_support.h"
#include "tier_harness.h"

namespace mstar::test {
namespace {

class TierDiskBatchTest : public ::testing::Test {
 protected:
  std::unique_ptr<TierHarness> Make(const std::string& extra = "") {
    auto tier =
        TierHarness::Create("tier_disk", "directory = \"" + blocks_ + "\"\n" + extra, "ckpt");
    EXPECT_TRUE(tier.ok()) << tier.status().ToString();
    return tier.ok() ? std::move(tier.value()) : nullptr;
  }

  // One batch of PUTs of blocks[i] under keys[i].
  static std::vector<uint32_t> PutAll(TierHarness& tier, const std::vector<uint64_t>& keys,
                                      std::vector<std::vector<uint8_t>>& blocks) {
    std::vector<mstar_tier_op_t> ops;
    for (size_t i = 0; i < keys.size(); ++i) {
      ops.push_back(Op(MSTAR_TIER_OP_PUT, KeyOf(keys[i]), blocks[i].data(), blocks[i].size()));
    }
    return tier.Run(ops);
  }

  static std::vector<std::vector<uint8_t>> Blocks(size_t count, size_t size, uint64_t seed) {
    std::vector<std::vector<uint8_t>> blocks;
    for (size_t i = 0; i < count; ++i) blocks.push_back(Pattern(size, seed + i));
    return blocks;
  }

  TempDir dir_;
  std::string blocks_ = dir_.path() + "/blocks";
};

TEST_F(TierDiskBatchTest, ARunOfPutsIsReadableAndLeavesNoTemporaryFiles) {
  auto tier = Make("persistent = true");
  ASSERT_NE(tier, nullptr);
  auto blocks = Blocks(9, 70000, 1);
  EXPECT_EQ(PutAll(*tier, {0, 1, 2, 3, 4, 5, 6, 7, 8}, blocks), std::vector<uint32_t>(9, MSTAR_OK));
  EXPECT_EQ(CountContaining(blocks_, ".tmp."), 0u);
  EXPECT_EQ(CountContaining(blocks_, ".blk"), 9u);
  EXPECT_EQ(tier->Info().used_bytes, 9u * 70000);
  for (uint64_t key = 0; key < 9; ++key) {
    std::vector<uint8_t> back(70000);
    ASSERT_EQ(tier->Get(key, back), MSTAR_OK) << key;
    EXPECT_EQ(back, blocks[key]) << key;
  }
}

TEST_F(TierDiskBatchTest, OpsInOneBatchSeeTheEarlierPuts) {
  auto tier = Make();
  ASSERT_NE(tier, nullptr);
  std::vector<uint8_t> first = Pattern(5000, 1), second = Pattern(5000, 2), back(5000);
  std::vector<mstar_tier_op_t> ops = {
      Op(MSTAR_TIER_OP_PUT, KeyOf(1), first.data(), first.size()),
      Op(MSTAR_TIER_OP_PUT, KeyOf(2), first.data(), first.size()),
      Op(MSTAR_TIER_OP_PUT, KeyOf(1), second.data(), second.size()),  // the same key again
      Op(MSTAR_TIER_OP_CONTAINS, KeyOf(2)),
      Op(MSTAR_TIER_OP_GET, KeyOf(1), back.data(), back.size()),
      Op(MSTAR_TIER_OP_REMOVE, KeyOf(2)),
      Op(MSTAR_TIER_OP_PUT, KeyOf(3), first.data(), first.size()),
  };
  EXPECT_EQ(tier->Run(ops), std::vector<uint32_t>(7, MSTAR_OK));
  EXPECT_EQ(back, second);
  EXPECT_EQ(tier->Contains(2), MSTAR_ERR_NOT_FOUND);
  EXPECT_EQ(tier->Contains(3), MSTAR_OK);
  EXPECT_EQ(tier->Info().used_bytes, 2u * 5000);
  EXPECT_EQ(CountContaining(blocks_, ".tmp."), 0u);
}

TEST_F(TierDiskBatchTest, ARunLargerThanTheCapacityEvictsTheOldestAndStaysWithinIt) {
  auto tier = Make("capacity_bytes = 3000");
  ASSERT_NE(tier, nullptr);
  auto blocks = Blocks(6, 1000, 10);
  EXPECT_EQ(PutAll(*tier, {0, 1, 2, 3, 4, 5}, blocks), std::vector<uint32_t>(6, MSTAR_OK));
  EXPECT_EQ(tier->Info().used_bytes, 3000u);
  EXPECT_EQ(CountContaining(blocks_, ".blk"), 3u);
  for (uint64_t key = 0; key < 6; ++key) {
    EXPECT_EQ(tier->Contains(key), key >= 3 ? MSTAR_OK : MSTAR_ERR_NOT_FOUND) << key;
  }
}

TEST_F(TierDiskBatchTest, ABlockBeingReplacedInTheRunIsNotEvictedForAnother) {
  auto tier = Make("capacity_bytes = 3000");
  ASSERT_NE(tier, nullptr);
  auto old_blocks = Blocks(3, 1000, 20);
  ASSERT_EQ(PutAll(*tier, {0, 1, 2}, old_blocks), std::vector<uint32_t>(3, MSTAR_OK));
  // Key 0 is the least recently used; its replacement is pending when key 3 needs room, so key 1
  // goes instead.
  auto new_blocks = Blocks(2, 1000, 30);
  EXPECT_EQ(PutAll(*tier, {0, 3}, new_blocks), std::vector<uint32_t>(2, MSTAR_OK));
  EXPECT_EQ(tier->Info().used_bytes, 3000u);
  EXPECT_EQ(tier->Contains(1), MSTAR_ERR_NOT_FOUND);
  std::vector<uint8_t> back(1000);
  ASSERT_EQ(tier->Get(0, back), MSTAR_OK);
  EXPECT_EQ(back, new_blocks[0]);
  ASSERT_EQ(tier->Get(2, back), MSTAR_OK);
  EXPECT_EQ(back, old_blocks[2]);
  ASSERT_EQ(tier->Get(3, back), MSTAR_OK);
  EXPECT_EQ(back, new_blocks[1]);
}

TEST_F(TierDiskBatchTest, AFailedFsyncFailsOnlyItsPutAndKeepsTheOthers) {
  LogCapture log;
  auto tier = Make("[faults]\nfail_op = \"fsync\"\nfail_after = 1\n");  // the run's second fsync
  ASSERT_NE(tier, nullptr);
  auto blocks = Blocks(3, 9000, 40);
  EXPECT_EQ(PutAll(*tier, {0, 1, 2}, blocks),
            (std::vector<uint32_t>{MSTAR_OK, MSTAR_ERR_IO, MSTAR_OK}));
  EXPECT_TRUE(log.Contains(blocks_));
  EXPECT_EQ(CountContaining(blocks_, ".tmp."), 0u) << ::testing::PrintToString(ListDir(blocks_));
  EXPECT_EQ(tier->Contains(1), MSTAR_ERR_NOT_FOUND);
  EXPECT_EQ(tier->Info().used_bytes, 2u * 9000);
  std::vector<uint8_t> back(9000);
  ASSERT_EQ(tier->Get(2, back), MSTAR_OK);
  EXPECT_EQ(back, blocks[2]);
}

TEST_F(TierDiskBatchTest, AFailedDirectoryFsyncFailsTheWholeRunAndRemovesItsBlocks) {
  LogCapture log;
  // Three file fsyncs succeed; the directory's, after the run's renames, fails.
  auto tier = Make("persistent = true\n[faults]\nfail_op = \"fsync\"\nfail_after = 3\n");
  ASSERT_NE(tier, nullptr);
  auto blocks = Blocks(3, 9000, 50);
  EXPECT_EQ(PutAll(*tier, {0, 1, 2}, blocks), std::vector<uint32_t>(3, MSTAR_ERR_IO));
  EXPECT_TRUE(log.Contains("directory"));
  EXPECT_EQ(CountContaining(blocks_, ".tmp."), 0u);
  EXPECT_EQ(CountContaining(blocks_, ".blk"), 0u) << ::testing::PrintToString(ListDir(blocks_));
  EXPECT_EQ(tier->Info().used_bytes, 0u);
  // The fault was one call: the next run works.
  EXPECT_EQ(PutAll(*tier, {0, 1, 2}, blocks), std::vector<uint32_t>(3, MSTAR_OK));
}

// Whichever two consecutive file operations of a run fail (the directory's fsync and the removal
// that follows it among them), every block file left on disk is counted: indexed, or an orphan
// whose bytes count against the capacity until its removal succeeds.
TEST_F(TierDiskBatchTest, EveryBlockFileLeftByTwoFailedOperationsIsCounted) {
  LogCapture log;
  auto blocks = Blocks(3, 9000, 70);
  for (int after = 0; after < 40; ++after) {
    SCOPED_TRACE("operations before the failures: " + std::to_string(after));
    TempDir dir;
    const std::string path = dir.path() + "/blocks";
    auto made = TierHarness::Create("tier_disk",
                                    "directory = \"" + path +
                                        "\"\npersistent = true\n[faults]\nfail_op = \"any\"\n"
                                        "fail_count = 2\nfail_after = " +
                                        std::to_string(after) + "\n",
                                    "ckpt");
    if (!made.ok()) continue;  // a failure while the tier starts: nothing written
    PutAll(*made.value(), {0, 1, 2}, blocks);
    EXPECT_EQ(made.value()->Info().used_bytes, 9000 * CountContaining(path, ".blk"))
        << ::testing::PrintToString(ListDir(path));
  }
}

}  // namespace
}  // namespace mstar::test

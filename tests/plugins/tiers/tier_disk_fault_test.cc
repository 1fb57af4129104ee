// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// tier_disk under injected file-system faults (the [faults] config of its FileOps layer): each
// fault surfaces as a clear per-op status, never wrong data, and leaves no temporary files.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/test_support.h"
#include "tier_harness.h"

namespace mstar::test {
namespace {

struct Fault {
  const char* name;
  const char* faults;    // the [faults] table body
  uint32_t put_result;   // the PUT's result under the fault
  bool block_kept;       // whether the PUT's block is readable afterwards
  const char* top = "";  // top-level config keys
};

class TierDiskFault : public ::testing::TestWithParam<Fault> {
 protected:
  std::unique_ptr<TierHarness> Make(const std::string& faults, const std::string& top = "") {
    auto tier = TierHarness::Create(
        "tier_disk", "directory = \"" + blocks_ + "\"\n" + top + "\n[faults]\n" + faults + "\n",
        "ckpt");
    EXPECT_TRUE(tier.ok()) << tier.status().ToString();
    return tier.ok() ? std::move(tier.value()) : nullptr;
  }

  TempDir dir_;
  std::string blocks_ = dir_.path() + "/blocks";
};

TEST_P(TierDiskFault, PutFaultsGiveAClearStatusAndLeaveNoTempFiles) {
  const Fault& fault = GetParam();
  LogCapture log;
  auto tier = Make(fault.faults, fault.top);
  ASSERT_NE(tier, nullptr);
  std::vector<uint8_t> block = Pattern(100000, 1);
  EXPECT_EQ(tier->Put(1, block), fault.put_result);
  EXPECT_EQ(CountContaining(blocks_, ".tmp."), 0u) << ::testing::PrintToString(ListDir(blocks_));
  std::vector<uint8_t> back(block.size());
  uint32_t got = tier->Get(1, back);
  if (fault.block_kept) {
    EXPECT_EQ(got, MSTAR_OK);
    EXPECT_EQ(back, block);
  } else {
    EXPECT_NE(got, MSTAR_OK);
    EXPECT_EQ(tier->Contains(1), MSTAR_ERR_NOT_FOUND);
    EXPECT_EQ(CountContaining(blocks_, ".blk"), 0u) << ::testing::PrintToString(ListDir(blocks_));
    EXPECT_EQ(tier->Info().used_bytes, 0u);
  }
  if (fault.put_result != MSTAR_OK) {
    EXPECT_TRUE(log.Contains(blocks_))
        << "the failure is logged with its path: " << ::testing::PrintToString(log.Lines());
  }
  // The fault was one call: the tier works again afterwards.
  ASSERT_EQ(tier->Put(2, block), MSTAR_OK);
  ASSERT_EQ(tier->Get(2, back), MSTAR_OK);
  EXPECT_EQ(back, block);
}

INSTANTIATE_TEST_SUITE_P(
    Faults, TierDiskFault,
    ::testing::Values(
        Fault{"EnospcOnWrite", "fail_op = \"write\"\nerrno = 28", MSTAR_ERR_RESOURCE_EXHAUSTED,
              false},
        Fault{"EnospcOnPayloadWrite", "fail_op = \"write\"\nfail_after = 1\nerrno = 28",
              MSTAR_ERR_RESOURCE_EXHAUSTED, false},
        Fault{"EioOnWrite", "fail_op = \"write\"\nerrno = 5", MSTAR_ERR_IO, false},
        Fault{"FsyncFails", "fail_op = \"fsync\"", MSTAR_ERR_IO, false},
        Fault{"DirectoryFsyncFails", "fail_op = \"fsync\"\nfail_after = 1", MSTAR_ERR_IO, false,
              "persistent = true"},
        Fault{"RenameFails", "fail_op = \"rename\"\nerrno = 18", MSTAR_ERR_IO, false},
        Fault{"OpenFails", "fail_op = \"open\"\nerrno = 13", MSTAR_ERR_IO, false},
        Fault{"CloseFails", "fail_op = \"close\"", MSTAR_ERR_IO, false},
        Fault{"StatvfsFails", "fail_op = \"statvfs\"", MSTAR_ERR_IO, false},
        // A torn write the OS acknowledged: the PUT succeeds, the GET must not return the bytes.
        Fault{"TornHeaderWrite", "truncate_on_write = true", MSTAR_OK, false},
        Fault{"TornPayloadWrite", "truncate_on_write = true\nfail_after = 1", MSTAR_OK, false}),
    [](const auto& p) { return std::string(p.param.name); });

class TierDiskFaultTest : public TierDiskFault {};

TEST_F(TierDiskFaultTest, EioOnReadIsAnIoErrorAndKeepsTheBlock) {
  auto tier = Make("fail_op = \"read\"\nerrno = 5");
  ASSERT_NE(tier, nullptr);
  std::vector<uint8_t> block = Pattern(4096, 2);
  ASSERT_EQ(tier->Put(1, block), MSTAR_OK);
  std::vector<uint8_t> back(block.size());
  EXPECT_EQ(tier->Get(1, back), MSTAR_ERR_IO);
  // The file itself is fine: the next read returns it intact.
  ASSERT_EQ(tier->Get(1, back), MSTAR_OK);
  EXPECT_EQ(back, block);
}

TEST_F(TierDiskFaultTest, EioOnPayloadReadIsAnIoError) {
  auto tier = Make("fail_op = \"read\"\nfail_after = 1\nerrno = 5");
  ASSERT_NE(tier, nullptr);
  std::vector<uint8_t> block = Pattern(4096, 3);
  ASSERT_EQ(tier->Put(1, block), MSTAR_OK);
  std::vector<uint8_t> back(block.size());
  EXPECT_EQ(tier->Get(1, back), MSTAR_ERR_IO);
  ASSERT_EQ(tier->Get(1, back), MSTAR_OK);
  EXPECT_EQ(back, block);
}

TEST_F(TierDiskFaultTest, AFailedReplacementKeepsThePreviousBlock) {
  auto tier = Make("fail_op = \"rename\"\nfail_after = 1");
  ASSERT_NE(tier, nullptr);
  std::vector<uint8_t> first = Pattern(2048, 4);
  ASSERT_EQ(tier->Put(1, first), MSTAR_OK);
  EXPECT_EQ(tier->Put(1, Pattern(2048, 5)), MSTAR_ERR_IO);
  std::vector<uint8_t> back(first.size());
  ASSERT_EQ(tier->Get(1, back), MSTAR_OK);
  EXPECT_EQ(back, first);
  EXPECT_EQ(CountContaining(blocks_, ".tmp."), 0u);
}

TEST_F(TierDiskFaultTest, AFailedUnlinkOnRemoveIsAnIoErrorAndKeepsTheBlock) {
  auto tier = Make("fail_op = \"unlink\"");
  ASSERT_NE(tier, nullptr);
  std::vector<uint8_t> block = Pattern(512, 6);
  ASSERT_EQ(tier->Put(1, block), MSTAR_OK);
  EXPECT_EQ(tier->Remove(1), MSTAR_ERR_IO);
  EXPECT_EQ(tier->Contains(1), MSTAR_OK);
  EXPECT_EQ(tier->Remove(1), MSTAR_OK);
  EXPECT_EQ(tier->Contains(1), MSTAR_ERR_NOT_FOUND);
}

TEST_F(TierDiskFaultTest, EveryWriteFailingKeepsFailingCleanly) {
  auto tier = Make("fail_op = \"write\"\nfail_count = 0\nerrno = 28");
  ASSERT_NE(tier, nullptr);
  std::vector<mstar_tier_op_t> ops;
  std::vector<std::vector<uint8_t>> blocks;
  for (uint64_t k = 0; k < 20; ++k) blocks.push_back(Pattern(1000, k));
  for (uint64_t k = 0; k < 20; ++k) {
    ops.push_back(Op(MSTAR_TIER_OP_PUT, KeyOf(k), blocks[k].data(), blocks[k].size()));
  }
  for (uint32_t r : tier->Run(ops)) EXPECT_EQ(r, MSTAR_ERR_RESOURCE_EXHAUSTED);
  // Nothing is left (a tier that removes its files records no identity either).
  EXPECT_TRUE(ListDir(blocks_).empty()) << ::testing::PrintToString(ListDir(blocks_));
}

// An evicted block whose file cannot be removed still fills the disk: its bytes keep counting
// against capacity_bytes (and in used_bytes) until a later eviction removes it. Here the first
// unlink fails: the PUT that needed its room fails, and the next PUT, whose eviction removes
// the file after all, fits.
TEST_F(TierDiskFaultTest, AFileAnEvictionCouldNotRemoveKeepsCountingUntilItIsGone) {
  auto tier = Make("fail_op = \"unlink\"", "capacity_bytes = 1500");
  ASSERT_NE(tier, nullptr);
  ASSERT_EQ(tier->Put(1, Pattern(1000, 1)), MSTAR_OK);
  LogCapture log;
  EXPECT_EQ(tier->Put(2, Pattern(1000, 2)), MSTAR_ERR_RESOURCE_EXHAUSTED);
  EXPECT_TRUE(log.Contains("could not remove")) << ::testing::PrintToString(log.Lines());
  EXPECT_EQ(tier->Contains(1), MSTAR_ERR_NOT_FOUND);
  EXPECT_EQ(tier->Info().used_bytes, 1000u);
  EXPECT_EQ(CountContaining(blocks_, ".blk"), 1u);
  ASSERT_EQ(tier->Put(3, Pattern(1000, 3)), MSTAR_OK);
  EXPECT_EQ(tier->Info().used_bytes, 1000u);
  EXPECT_EQ(CountContaining(blocks_, ".blk"), 1u);
  std::vector<uint8_t> back(1000);
  ASSERT_EQ(tier->Get(3, back), MSTAR_OK);
  EXPECT_EQ(back, Pattern(1000, 3));
}

// Every unlink failing: a PUT that needs room stops at the first eviction whose file stays
// (refused), rather than dropping every block from the index while the bytes stay on disk.
TEST_F(TierDiskFaultTest, EvictionsStopAtTheFirstFileThatCannotBeRemoved) {
  auto tier = Make("fail_op = \"unlink\"\nfail_count = 0", "capacity_bytes = 1500");
  ASSERT_NE(tier, nullptr);
  for (uint64_t k = 1; k <= 3; ++k) ASSERT_EQ(tier->Put(k, Pattern(400, k)), MSTAR_OK);
  EXPECT_EQ(tier->Put(4, Pattern(1000, 4)), MSTAR_ERR_RESOURCE_EXHAUSTED);
  EXPECT_EQ(tier->Contains(1), MSTAR_ERR_NOT_FOUND);  // the least recently used
  EXPECT_EQ(tier->Contains(2), MSTAR_OK);
  EXPECT_EQ(tier->Contains(3), MSTAR_OK);
  EXPECT_EQ(tier->Info().used_bytes, 1200u);
}

// A block evicted while unlink fails leaves its file as an orphan; a PUT of the same key renames
// its new file over that path, so a later retry of the orphan must not remove the new block.
TEST_F(TierDiskFaultTest, ABlockPutAgainOverItsOrphanedFileIsNotRemovedLater) {
  auto tier = Make("fail_op = \"unlink\"", "capacity_bytes = 1500");
  ASSERT_NE(tier, nullptr);
  ASSERT_EQ(tier->Put(1, Pattern(1000, 1)), MSTAR_OK);
  EXPECT_EQ(tier->Put(2, Pattern(1000, 2)), MSTAR_ERR_RESOURCE_EXHAUSTED);  // 1's file stays
  ASSERT_EQ(tier->Put(4, Pattern(300, 4)), MSTAR_OK);
  const std::vector<uint8_t> again = Pattern(200, 5);
  ASSERT_EQ(tier->Put(1, again), MSTAR_OK);  // renamed over the orphan's path
  EXPECT_EQ(tier->Info().used_bytes, 500u);
  ASSERT_EQ(tier->Put(3, Pattern(1100, 3)), MSTAR_OK);  // needs room: retries orphans, evicts 4
  EXPECT_EQ(tier->Contains(4), MSTAR_ERR_NOT_FOUND);
  std::vector<uint8_t> back(again.size());
  ASSERT_EQ(tier->Get(1, back), MSTAR_OK);
  EXPECT_EQ(back, again);
  EXPECT_EQ(tier->Info().used_bytes, 1300u);
}

// A PUT whose key's old file is an orphan (here every unlink fails) renames over that file, so
// it needs no room for it: with the orphan counted, this PUT was refused.
TEST_F(TierDiskFaultTest, APutOverItsOwnOrphanedFileNeedsNoRoomForIt) {
  auto tier = Make("fail_op = \"unlink\"\nfail_count = 0", "capacity_bytes = 1500");
  ASSERT_NE(tier, nullptr);
  ASSERT_EQ(tier->Put(1, Pattern(1000, 1)), MSTAR_OK);
  EXPECT_EQ(tier->Put(2, Pattern(1000, 2)), MSTAR_ERR_RESOURCE_EXHAUSTED);  // 1's file stays
  const std::vector<uint8_t> again = Pattern(600, 5);
  ASSERT_EQ(tier->Put(1, again), MSTAR_OK);
  EXPECT_EQ(tier->Info().used_bytes, 600u);
  std::vector<uint8_t> back(again.size());
  ASSERT_EQ(tier->Get(1, back), MSTAR_OK);
  EXPECT_EQ(back, again);
}

// Start-up over the capacity with every unlink failing: it stops at the first eviction whose
// file stays, rather than turning every readable block into an orphan.
TEST_F(TierDiskFaultTest, StartupStopsEvictingAtTheFirstFileThatCannotBeRemoved) {
  {
    auto tier = TierHarness::Create("tier_disk",
                                    "directory = \"" + blocks_ + "\"\npersistent = true\n", "ckpt");
    ASSERT_TRUE(tier.ok()) << tier.status().ToString();
    for (uint64_t k = 1; k <= 3; ++k) ASSERT_EQ((*tier)->Put(k, Pattern(400, k)), MSTAR_OK);
  }
  auto tier = Make("fail_op = \"unlink\"\nfail_count = 0\nat_startup = true",
                   "persistent = true\ncapacity_bytes = 500");
  ASSERT_NE(tier, nullptr);
  int kept = 0;
  for (uint64_t k = 1; k <= 3; ++k) kept += tier->Contains(k) == MSTAR_OK;
  EXPECT_EQ(kept, 2);
  EXPECT_EQ(tier->Info().used_bytes, 1200u);  // the evicted block's file still counts
}

// Block files of another identity that start-up cannot remove count as their payload, as every
// block does (not with their header).
TEST_F(TierDiskFaultTest, StartupOrphansCountTheirPayloadBytes) {
  {
    auto tier = TierHarness::Create("tier_disk",
                                    "directory = \"" + blocks_ + "\"\npersistent = true\n", "ckpt");
    ASSERT_TRUE(tier.ok()) << tier.status().ToString();
    for (uint64_t k = 1; k <= 3; ++k) ASSERT_EQ((*tier)->Put(k, Pattern(400, k)), MSTAR_OK);
  }
  auto tier = TierHarness::Create(
      "tier_disk",
      "directory = \"" + blocks_ +
          "\"\npersistent = true\n[faults]\nfail_op = \"unlink\"\nfail_count = 3\n"
          "at_startup = true\n",
      "another checkpoint");
  ASSERT_TRUE(tier.ok()) << tier.status().ToString();
  EXPECT_EQ((*tier)->Contains(1), MSTAR_ERR_NOT_FOUND);
  EXPECT_EQ((*tier)->Info().used_bytes, 1200u);
}

// Start-up errors that say nothing of the blocks keep them: an identity file that cannot be read
// fails the start (taken for a missing one, it would remove every block), and a block file whose
// header cannot be read stays in place, unread, for a later start.
TEST_F(TierDiskFaultTest, StartupIoErrorsLeaveThePersistentBlocksForALaterStart) {
  const std::string persistent = "directory = \"" + blocks_ + "\"\npersistent = true\n";
  {
    auto tier = TierHarness::Create("tier_disk", persistent, "ckpt");
    ASSERT_TRUE(tier.ok()) << tier.status().ToString();
    ASSERT_EQ((*tier)->Put(1, Pattern(400, 1)), MSTAR_OK);
  }
  // The first open is the identity file's.
  auto refused = TierHarness::Create(
      "tier_disk", persistent + "[faults]\nfail_op = \"open\"\nerrno = 13\nat_startup = true\n",
      "ckpt");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("reading the identity file of " + blocks_ +
                                            "/tier_identity failed: Permission denied"),
            std::string::npos)
      << refused.status().ToString();
  {
    // The first stat is the block file's.
    auto tier = TierHarness::Create(
        "tier_disk", persistent + "[faults]\nfail_op = \"stat\"\nat_startup = true\n", "ckpt");
    ASSERT_TRUE(tier.ok()) << tier.status().ToString();
    EXPECT_EQ((*tier)->Contains(1), MSTAR_ERR_NOT_FOUND);
    EXPECT_EQ((*tier)->Info().used_bytes, 0u);
  }
  auto tier = TierHarness::Create("tier_disk", persistent, "ckpt");
  ASSERT_TRUE(tier.ok()) << tier.status().ToString();
  std::vector<uint8_t> back(400);
  ASSERT_EQ((*tier)->Get(1, back), MSTAR_OK);
  EXPECT_EQ(back, Pattern(400, 1));
}

}  // namespace
}  // namespace mstar::test

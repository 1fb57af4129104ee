// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// tier_host's block memory comes from the host's accounted memory (pinned on CUDA builds): it
// shows in the host ledger, a host memory budget bounds it (a PUT over the budget fails with
// RESOURCE_EXHAUSTED and changes nothing), and it is given back when the tier is destroyed.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "host/memory_ledger.h"
#include "tier_harness.h"

namespace mstar::test {
namespace {

constexpr DLDevice kCpu{kDLCPU, 0};

TEST(TierHostMemory, BlocksAreAccountedHostMemoryBoundedByTheBudget) {
  MemoryLedger& ledger = MemoryLedger::Global();
  const uint64_t before = ledger.Used(kCpu);
  {
    auto tier = TierHarness::Create("tier_host", "");
    ASSERT_TRUE(tier.ok()) << tier.status().ToString();
    const std::vector<uint8_t> block = Pattern(1 << 20, 5);
    ASSERT_EQ(tier.value()->Put(1, block), MSTAR_OK);
    EXPECT_GE(ledger.Used(kCpu), before + block.size());

    // A budget that leaves no room for another block: the PUT fails, the first block stays.
    ledger.SetLimit(kDLCPU, ledger.Used(kCpu) + 4096);
    EXPECT_EQ(tier.value()->Put(2, Pattern(1 << 20, 6)), MSTAR_ERR_RESOURCE_EXHAUSTED);
    ledger.SetLimit(kDLCPU, 0);
    EXPECT_EQ(tier.value()->Contains(2), MSTAR_ERR_NOT_FOUND);
    std::vector<uint8_t> back(block.size());
    ASSERT_EQ(tier.value()->Get(1, back), MSTAR_OK);
    EXPECT_EQ(back, block);

    // Replacing a block reuses the freed memory: the ledger does not grow.
    const uint64_t held = ledger.Used(kCpu);
    for (uint64_t seed = 10; seed < 20; ++seed)
      ASSERT_EQ(tier.value()->Put(1, Pattern(1 << 20, seed)), MSTAR_OK);
    EXPECT_LE(ledger.Used(kCpu), held + (1 << 20));
  }
  EXPECT_EQ(ledger.Used(kCpu), before);
}

// A batch of PUTs whose data lie back to back is stored as one run (one copy into one slab; for
// device memory, one DMA): the ledger grows by one allocation, every block reads back, blocks of
// the run can be removed or replaced one by one, and the slab is given back only with its last
// block. A GET batch over the run in order is one copy too; out of order it still returns each
// block.
TEST(TierHostMemory, ContiguousBatchesMoveAsOneRun) {
  MemoryLedger& ledger = MemoryLedger::Global();
  const uint64_t before = ledger.Used(kCpu);
  {
    auto made = TierHarness::Create("tier_host", "keep_free_bytes = 0");
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    TierHarness& tier = *made.value();
    constexpr uint64_t kBlock = 4096, kBlocks = 8;
    std::vector<uint8_t> run = Pattern(kBlock * kBlocks, 3);
    std::vector<mstar_tier_op_t> puts;
    for (uint64_t i = 0; i < kBlocks; ++i)
      puts.push_back(Op(MSTAR_TIER_OP_PUT, KeyOf(100 + i), run.data() + kBlock * i, kBlock));
    ASSERT_EQ(tier.Run(puts), std::vector<uint32_t>(kBlocks, MSTAR_OK));
    EXPECT_EQ(ledger.Used(kCpu), before + kBlock * kBlocks);  // one slab
    EXPECT_EQ(tier.Info().used_bytes, kBlock * kBlocks);

    std::vector<uint8_t> back(kBlock * kBlocks, 0);
    std::vector<mstar_tier_op_t> gets;
    for (uint64_t i = 0; i < kBlocks; ++i)
      gets.push_back(Op(MSTAR_TIER_OP_GET, KeyOf(100 + i), back.data() + kBlock * i, kBlock));
    ASSERT_EQ(tier.Run(gets), std::vector<uint32_t>(kBlocks, MSTAR_OK));
    EXPECT_EQ(back, run);
    std::swap(gets[0].key, gets[1].key);  // not the run's order: block by block
    std::fill(back.begin(), back.end(), 0);
    ASSERT_EQ(tier.Run(gets), std::vector<uint32_t>(kBlocks, MSTAR_OK));
    EXPECT_TRUE(std::equal(back.begin(), back.begin() + kBlock, run.begin() + kBlock));
    EXPECT_TRUE(std::equal(back.begin() + kBlock * 2, back.end(), run.begin() + kBlock * 2));

    // Blocks leave one by one; the slab stays while any of them is there.
    const std::vector<uint8_t> fresh = Pattern(kBlock, 9);
    ASSERT_EQ(tier.Put(103, fresh), MSTAR_OK);  // replaced by a block of its own
    for (uint64_t i = 0; i + 1 < kBlocks; ++i) {
      if (i != 3) {
        ASSERT_EQ(tier.Remove(100 + i), MSTAR_OK);
      }
    }
    EXPECT_EQ(ledger.Used(kCpu), before + kBlock * kBlocks + kBlock);
    std::vector<uint8_t> last(kBlock);
    ASSERT_EQ(tier.Get(100 + kBlocks - 1, last), MSTAR_OK);
    EXPECT_TRUE(std::equal(last.begin(), last.end(), run.end() - kBlock));
    ASSERT_EQ(tier.Remove(100 + kBlocks - 1), MSTAR_OK);
    EXPECT_EQ(ledger.Used(kCpu), before + kBlock);  // the slab went with its last block
    ASSERT_EQ(tier.Get(103, last), MSTAR_OK);
    EXPECT_EQ(last, fresh);
  }
  EXPECT_EQ(ledger.Used(kCpu), before);
}

// A run larger than the capacity is put block by block, the oldest evicted as usual.
TEST(TierHostMemory, ARunOverTheCapacityGoesBlockByBlock) {
  auto made = TierHarness::Create("tier_host", "capacity_bytes = 8192");
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  TierHarness& tier = *made.value();
  std::vector<uint8_t> run = Pattern(4096 * 3, 4);
  std::vector<mstar_tier_op_t> puts;
  for (uint64_t i = 0; i < 3; ++i)
    puts.push_back(Op(MSTAR_TIER_OP_PUT, KeyOf(i), run.data() + 4096 * i, 4096));
  ASSERT_EQ(tier.Run(puts), std::vector<uint32_t>(3, MSTAR_OK));
  EXPECT_EQ(tier.Contains(0), MSTAR_ERR_NOT_FOUND);
  EXPECT_EQ(tier.Contains(1), MSTAR_OK);
  EXPECT_EQ(tier.Contains(2), MSTAR_OK);
  EXPECT_EQ(tier.Info().used_bytes, 8192u);
}

// Back-to-back PUTs that name one key twice (here a key already stored) do as the PUTs one by
// one would: the later block is the key's.
TEST(TierHostMemory, ARunThatNamesAKeyTwiceKeepsTheLaterBlock) {
  auto made = TierHarness::Create("tier_host", "");
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  TierHarness& tier = *made.value();
  ASSERT_EQ(tier.Put(7, Pattern(4096, 1)), MSTAR_OK);
  std::vector<uint8_t> run = Pattern(4096 * 3, 4);
  std::vector<mstar_tier_op_t> puts;
  for (uint64_t i = 0; i < 3; ++i)
    puts.push_back(Op(MSTAR_TIER_OP_PUT, KeyOf(i == 1 ? 8 : 7), run.data() + 4096 * i, 4096));
  ASSERT_EQ(tier.Run(puts), std::vector<uint32_t>(3, MSTAR_OK));
  std::vector<uint8_t> back(4096);
  ASSERT_EQ(tier.Get(7, back), MSTAR_OK);
  EXPECT_TRUE(std::equal(back.begin(), back.end(), run.begin() + 8192));
  ASSERT_EQ(tier.Get(8, back), MSTAR_OK);
  EXPECT_TRUE(std::equal(back.begin(), back.end(), run.begin() + 4096));
  EXPECT_EQ(tier.Info().used_bytes, 8192u);
}

// The capacity bounds the memory the blocks hold, not only their sizes: a block that outlives the
// rest of its run keeps the run's slab, which counts in full. Runs whose first block stays hot
// (read after every run, as a shared prefix's page is) never hold more than the capacity.
TEST(TierHostMemory, RunsPartlyEvictedHoldNoMoreThanTheCapacity) {
  MemoryLedger& ledger = MemoryLedger::Global();
  const uint64_t before = ledger.Used(kCpu);
  constexpr uint64_t kBlock = 4096, kRun = 4, kCapacity = kBlock * 8;
  {
    auto made = TierHarness::Create(
        "tier_host", "capacity_bytes = " + std::to_string(kCapacity) + "\nkeep_free_bytes = 0");
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    TierHarness& tier = *made.value();
    std::vector<uint64_t> firsts;
    for (uint64_t round = 0; round < 6; ++round) {
      std::vector<uint8_t> run = Pattern(kBlock * kRun, round);
      std::vector<mstar_tier_op_t> puts;
      for (uint64_t i = 0; i < kRun; ++i)
        puts.push_back(
            Op(MSTAR_TIER_OP_PUT, KeyOf(100 * round + i), run.data() + kBlock * i, kBlock));
      ASSERT_EQ(tier.Run(puts), std::vector<uint32_t>(kRun, MSTAR_OK));
      firsts.push_back(100 * round);
      std::vector<uint8_t> back(kBlock);
      for (uint64_t first : firsts) {
        if (tier.Contains(first) == MSTAR_OK) {
          ASSERT_EQ(tier.Get(first, back), MSTAR_OK);
        }
      }
      EXPECT_LE(ledger.Used(kCpu) - before, kCapacity) << "round " << round;
      EXPECT_LE(tier.Info().used_bytes, kCapacity);
      EXPECT_EQ(tier.Info().used_bytes, ledger.Used(kCpu) - before);
    }
    // The last run is whole and reads back.
    for (uint64_t i = 0; i < kRun; ++i) EXPECT_EQ(tier.Contains(500 + i), MSTAR_OK) << i;
  }
  EXPECT_EQ(ledger.Used(kCpu), before);
}

// Memory of removed blocks is kept for reuse by blocks of the same size. When the budget refuses
// a block of another size, the kept memory goes back first and the block is stored.
TEST(TierHostMemory, KeptMemoryMakesWayForABlockOfAnotherSize) {
  MemoryLedger& ledger = MemoryLedger::Global();
  const uint64_t before = ledger.Used(kCpu);
  {
    auto made = TierHarness::Create("tier_host", "");  // unbounded: keeps every freed block
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    TierHarness& tier = *made.value();
    for (uint64_t k = 0; k < 4; ++k) ASSERT_EQ(tier.Put(k, Pattern(1 << 20, k)), MSTAR_OK);
    for (uint64_t k = 0; k < 4; ++k) ASSERT_EQ(tier.Remove(k), MSTAR_OK);
    EXPECT_EQ(ledger.Used(kCpu), before + (4 << 20)) << "kept for reuse";
    ledger.SetLimit(kDLCPU, before + (3 << 20));
    const std::vector<uint8_t> other = Pattern(2 << 20, 7);
    EXPECT_EQ(tier.Put(9, other), MSTAR_OK);
    ledger.SetLimit(kDLCPU, 0);
    EXPECT_EQ(ledger.Used(kCpu), before + (2 << 20));
    std::vector<uint8_t> back(other.size());
    ASSERT_EQ(tier.Get(9, back), MSTAR_OK);
    EXPECT_EQ(back, other);
  }
  EXPECT_EQ(ledger.Used(kCpu), before);
}

}  // namespace
}  // namespace mstar::test

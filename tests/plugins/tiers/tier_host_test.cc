// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// tier_host's block memory comes from the host's accounted memory (pinned on CUDA builds): it
// shows in the host ledger, a host memory budget bounds it (a PUT over the budget fails with
// RESOURCE_EXHAUSTED and changes nothing), and it is given back when the tier is destroyed.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace mstar::test

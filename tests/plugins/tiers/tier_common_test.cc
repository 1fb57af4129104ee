// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// What every tier promises (mstar/tier.h), checked against both tier_host and tier_disk: byte-exact
// round trips, capacity with LRU eviction, the batch protocol, and per-op errors.
#include <gtest/gtest.h>

#include <thread>

#include "host/host_api.h"
#include "support/test_support.h"
#include "tier_harness.h"

namespace mstar::test {
namespace {

class TierContract : public ::testing::TestWithParam<const char*> {
 protected:
  // The config for this tier with extra keys appended.
  std::string Config(const std::string& extra = "") const {
    std::string config = extra;
    if (std::string(GetParam()) == "tier_disk")
      config += "\ndirectory = \"" + dir_.path() + "/blocks\"\n";
    return config;
  }
  std::unique_ptr<TierHarness> Make(const std::string& extra = "") {
    auto tier = TierHarness::Create(GetParam(), Config(extra));
    EXPECT_TRUE(tier.ok()) << tier.status().ToString();
    return tier.ok() ? std::move(tier.value()) : nullptr;
  }

  TempDir dir_;
};

TEST_P(TierContract, RoundTripsBlocksOfManySizesByteExact) {
  auto tier = Make();
  ASSERT_NE(tier, nullptr);
  const std::vector<uint64_t> sizes = {0, 1, 7, 4096, 65537, (1u << 20) + 13, 8u << 20};
  std::vector<std::vector<uint8_t>> blocks;
  std::vector<mstar_tier_op_t> puts;
  for (size_t i = 0; i < sizes.size(); ++i) blocks.push_back(Pattern(sizes[i], i + 1));
  for (size_t i = 0; i < sizes.size(); ++i) {
    puts.push_back(Op(MSTAR_TIER_OP_PUT, KeyOf(i), blocks[i].data(), blocks[i].size()));
  }
  for (uint32_t r : tier->Run(puts)) EXPECT_EQ(r, MSTAR_OK);

  uint64_t total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    total += sizes[i];
    EXPECT_EQ(tier->Contains(i), MSTAR_OK);
    std::vector<uint8_t> back(sizes[i], 0xAB);
    ASSERT_EQ(tier->Get(i, back), MSTAR_OK) << "size " << sizes[i];
    EXPECT_TRUE(back == blocks[i]) << "size " << sizes[i];
  }
  EXPECT_EQ(tier->Info().used_bytes, total);

  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(tier->Remove(i), MSTAR_OK);
    EXPECT_EQ(tier->Contains(i), MSTAR_ERR_NOT_FOUND);
    EXPECT_EQ(tier->Remove(i), MSTAR_ERR_NOT_FOUND);
    std::vector<uint8_t> back(sizes[i]);
    EXPECT_EQ(tier->Get(i, back), MSTAR_ERR_NOT_FOUND);
  }
  EXPECT_EQ(tier->Info().used_bytes, 0u);
}

TEST_P(TierContract, PutReplacesTheBlockUnderAKey) {
  auto tier = Make();
  ASSERT_NE(tier, nullptr);
  ASSERT_EQ(tier->Put(1, Pattern(1000, 1)), MSTAR_OK);
  std::vector<uint8_t> second = Pattern(300, 2);
  ASSERT_EQ(tier->Put(1, second), MSTAR_OK);
  std::vector<uint8_t> back(300);
  ASSERT_EQ(tier->Get(1, back), MSTAR_OK);
  EXPECT_EQ(back, second);
  EXPECT_EQ(tier->Info().used_bytes, 300u);
}

TEST_P(TierContract, GetOfTheWrongSizeIsInvalidAndChangesNothing) {
  auto tier = Make();
  ASSERT_NE(tier, nullptr);
  std::vector<uint8_t> block = Pattern(100, 3);
  ASSERT_EQ(tier->Put(5, block), MSTAR_OK);
  std::vector<uint8_t> wrong(99);
  EXPECT_EQ(tier->Get(5, wrong), MSTAR_ERR_INVALID_ARGUMENT);
  std::vector<uint8_t> back(100);
  ASSERT_EQ(tier->Get(5, back), MSTAR_OK);
  EXPECT_EQ(back, block);
}

TEST_P(TierContract, DeviceMemoryAndUnknownKindsAreRejectedPerOp) {
  auto tier = Make();
  ASSERT_NE(tier, nullptr);
  std::vector<uint8_t> block = Pattern(64, 4);
  std::vector<mstar_tier_op_t> ops = {
      Op(MSTAR_TIER_OP_PUT, KeyOf(1), block.data(), block.size()),
      Op(MSTAR_TIER_OP_PUT, KeyOf(2), block.data(), block.size()),
      Op(99, KeyOf(3)),
      Op(MSTAR_TIER_OP_PUT, KeyOf(4), nullptr, 10),
  };
  // A device no machine has: a tier without device_access refuses the op as such, one with it
  // fails the copy (UNSUPPORTED on a CPU build, the CUDA error on a GPU one). Neither stores it.
  ops[1].device = DLDevice{kDLCUDA, 4096};
  const bool device_access = tier->Info().device_access != 0;
  std::vector<uint32_t> results = tier->Run(ops);
  ASSERT_EQ(results.size(), 4u);
  if (device_access) {
    EXPECT_NE(results[1], MSTAR_OK);
    results[1] = MSTAR_ERR_INVALID_ARGUMENT;
  }
  EXPECT_EQ(results,
            (std::vector<uint32_t>{MSTAR_OK, MSTAR_ERR_INVALID_ARGUMENT, MSTAR_ERR_INVALID_ARGUMENT,
                                   MSTAR_ERR_INVALID_ARGUMENT}));
  EXPECT_EQ(tier->Contains(1), MSTAR_OK);
  EXPECT_EQ(tier->Contains(2), MSTAR_ERR_NOT_FOUND);
  EXPECT_EQ(tier->Contains(4), MSTAR_ERR_NOT_FOUND);
}

TEST_P(TierContract, CapacityEvictsTheLeastRecentlyUsedBlock) {
  auto tier = Make("capacity_bytes = 3000");
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->Info().capacity_bytes, 3000u);
  std::vector<std::vector<uint8_t>> blocks;
  for (uint64_t k = 0; k < 4; ++k) blocks.push_back(Pattern(1000, 10 + k));
  for (uint64_t k = 0; k < 3; ++k) ASSERT_EQ(tier->Put(k, blocks[k]), MSTAR_OK);
  // Use block 0 so that block 1 becomes the least recently used; CONTAINS is not a use.
  std::vector<uint8_t> back(1000);
  ASSERT_EQ(tier->Get(0, back), MSTAR_OK);
  ASSERT_EQ(tier->Contains(1), MSTAR_OK);
  ASSERT_EQ(tier->Put(3, blocks[3]), MSTAR_OK);
  EXPECT_EQ(tier->Contains(1), MSTAR_ERR_NOT_FOUND);
  for (uint64_t k : {0, 2, 3}) {
    ASSERT_EQ(tier->Get(k, back), MSTAR_OK) << k;
    EXPECT_EQ(back, blocks[k]) << k;
  }
  EXPECT_EQ(tier->Info().used_bytes, 3000u);
  // A block of 2500 bytes needs all three slots: everything else goes.
  ASSERT_EQ(tier->Put(9, Pattern(2500, 9)), MSTAR_OK);
  for (uint64_t k : {0, 2, 3}) EXPECT_EQ(tier->Contains(k), MSTAR_ERR_NOT_FOUND) << k;
  EXPECT_EQ(tier->Info().used_bytes, 2500u);
}

TEST_P(TierContract, ABlockLargerThanTheCapacityFailsAndEvictsNothing) {
  auto tier = Make("capacity_bytes = 1000");
  ASSERT_NE(tier, nullptr);
  std::vector<uint8_t> small = Pattern(400, 1);
  ASSERT_EQ(tier->Put(1, small), MSTAR_OK);
  LogCapture log;
  EXPECT_EQ(tier->Put(2, Pattern(1001, 2)), MSTAR_ERR_RESOURCE_EXHAUSTED);
  EXPECT_TRUE(log.Contains("exceeds capacity_bytes 1000")) << ::testing::PrintToString(log.Lines());
  EXPECT_EQ(tier->Put(1, Pattern(1001, 2)), MSTAR_ERR_RESOURCE_EXHAUSTED);
  EXPECT_EQ(tier->Contains(2), MSTAR_ERR_NOT_FOUND);
  std::vector<uint8_t> back(400);
  ASSERT_EQ(tier->Get(1, back), MSTAR_OK);
  EXPECT_EQ(back, small);
  EXPECT_EQ(tier->Info().used_bytes, 400u);
}

TEST_P(TierContract, ManyOpsInOneBatchEachGetTheirOwnResult) {
  auto tier = Make();
  ASSERT_NE(tier, nullptr);
  constexpr uint64_t kCount = 200;
  std::vector<std::vector<uint8_t>> blocks;
  std::vector<mstar_tier_op_t> ops;
  for (uint64_t k = 0; k < kCount; ++k) blocks.push_back(Pattern(100 + k, k));
  for (uint64_t k = 0; k < kCount; ++k) {
    ops.push_back(Op(MSTAR_TIER_OP_PUT, KeyOf(k), blocks[k].data(), blocks[k].size()));
  }
  for (uint32_t r : tier->Run(ops)) ASSERT_EQ(r, MSTAR_OK);

  // One batch mixing kinds, in order: a GET after a REMOVE of the same key sees it gone.
  std::vector<std::vector<uint8_t>> back(kCount);
  ops.clear();
  for (uint64_t k = 0; k < kCount; ++k) {
    back[k].resize(blocks[k].size());
    if (k % 5 == 0) ops.push_back(Op(MSTAR_TIER_OP_REMOVE, KeyOf(k)));
    ops.push_back(Op(MSTAR_TIER_OP_GET, KeyOf(k), back[k].data(), back[k].size()));
    ops.push_back(Op(MSTAR_TIER_OP_CONTAINS, KeyOf(kCount + k)));
  }
  std::vector<uint32_t> results = tier->Run(ops);
  size_t i = 0;
  for (uint64_t k = 0; k < kCount; ++k) {
    if (k % 5 == 0) {
      EXPECT_EQ(results[i++], MSTAR_OK);
      EXPECT_EQ(results[i++], MSTAR_ERR_NOT_FOUND) << k;
    } else {
      EXPECT_EQ(results[i++], MSTAR_OK) << k;
      EXPECT_EQ(back[k], blocks[k]) << k;
    }
    EXPECT_EQ(results[i++], MSTAR_ERR_NOT_FOUND);
  }
}

TEST_P(TierContract, BatchProtocolPollWaitAndRelease) {
  auto tier = Make();
  ASSERT_NE(tier, nullptr);
  const mstar_host_api_t* h = tier->host();
  std::vector<uint8_t> block = Pattern(1 << 16, 7);
  std::vector<uint8_t> back(block.size());

  // An empty batch is a batch too.
  mstar_tier_batch_t* empty = nullptr;
  ASSERT_TRUE(TakeStatus(h->tier_submit(tier->handle(), nullptr, 0, nullptr, &empty)).ok());
  ASSERT_TRUE(TakeStatus(h->tier_wait(tier->handle(), empty, UINT64_MAX)).ok());
  h->tier_release_batch(tier->handle(), empty);

  // Releasing a batch nobody waited for first waits for it: every result is written after.
  mstar_tier_op_t put = Op(MSTAR_TIER_OP_PUT, KeyOf(1), block.data(), block.size());
  mstar_tier_batch_t* batch = nullptr;
  ASSERT_TRUE(TakeStatus(h->tier_submit(tier->handle(), &put, 1, nullptr, &batch)).ok());
  ASSERT_NE(batch, nullptr);
  h->tier_release_batch(tier->handle(), batch);
  EXPECT_EQ(put.result, MSTAR_OK);

  // Poll until done (never blocks), then a zero-timeout wait succeeds at once.
  mstar_tier_op_t get = Op(MSTAR_TIER_OP_GET, KeyOf(1), back.data(), back.size());
  ASSERT_TRUE(TakeStatus(h->tier_submit(tier->handle(), &get, 1, nullptr, &batch)).ok());
  uint32_t done = 0;
  while (done == 0) ASSERT_TRUE(TakeStatus(h->tier_poll(tier->handle(), batch, &done)).ok());
  EXPECT_EQ(get.result, MSTAR_OK);
  EXPECT_TRUE(TakeStatus(h->tier_wait(tier->handle(), batch, 0)).ok());
  h->tier_release_batch(tier->handle(), batch);
  EXPECT_EQ(back, block);

  // Several batches in flight at once complete independently.
  std::vector<mstar_tier_op_t> ops;
  std::vector<std::vector<uint8_t>> outs(8, std::vector<uint8_t>(block.size()));
  for (auto& out : outs) ops.push_back(Op(MSTAR_TIER_OP_GET, KeyOf(1), out.data(), out.size()));
  std::vector<mstar_tier_batch_t*> batches(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    ASSERT_TRUE(TakeStatus(h->tier_submit(tier->handle(), &ops[i], 1, nullptr, &batches[i])).ok());
  }
  for (size_t i = ops.size(); i-- > 0;) {
    ASSERT_TRUE(TakeStatus(h->tier_wait(tier->handle(), batches[i], UINT64_MAX)).ok());
    h->tier_release_batch(tier->handle(), batches[i]);
    EXPECT_EQ(ops[i].result, MSTAR_OK);
    EXPECT_EQ(outs[i], block);
  }
}

TEST_P(TierContract, ConcurrentCallersThroughTheTableDirectlyStayConsistent) {
  // The host serializes calls, but both tiers guard their state themselves: call the table from
  // several threads at once, bypassing the host's lock.
  auto tier = Make("capacity_bytes = 400000");
  ASSERT_NE(tier, nullptr);
  const mstar_tier_vtable_t* table = tier->handle()->vtable;
  void* self = tier->handle()->self;
  constexpr int kThreads = 4;
  constexpr uint64_t kKeys = 100;
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t k = 0; k < kKeys; ++k) {
        uint64_t key = static_cast<uint64_t>(t) * 1000 + k;
        std::vector<uint8_t> block = Pattern(1000 + k, key), back(block.size());
        mstar_tier_op_t ops[2] = {Op(MSTAR_TIER_OP_PUT, KeyOf(key), block.data(), block.size()),
                                  Op(MSTAR_TIER_OP_GET, KeyOf(key), back.data(), back.size())};
        mstar_tier_batch_t* batch = nullptr;
        if (table->submit(self, ops, 2, nullptr, &batch) != nullptr) {
          ++mismatches[t];
          continue;
        }
        table->release(self, batch);
        // Another thread's PUT may evict the block between the two ops, never corrupt it.
        if (ops[0].result != MSTAR_OK) ++mismatches[t];
        if (ops[1].result == MSTAR_OK && back != block) ++mismatches[t];
        if (ops[1].result != MSTAR_OK && ops[1].result != MSTAR_ERR_NOT_FOUND) ++mismatches[t];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(mismatches, std::vector<int>(kThreads, 0));
  mstar_tier_info_t info = tier->Info();
  EXPECT_LE(info.used_bytes, 400000u);
  EXPECT_GT(info.used_bytes, 300000u);
}

TEST_P(TierContract, BadCapacityIsAConfigErrorNamingTheKey) {
  auto tier = TierHarness::Create(GetParam(), Config("capacity_bytes = -5"));
  ASSERT_FALSE(tier.ok());
  EXPECT_EQ(tier.status().code(), Code::kInvalidArgument);
  EXPECT_NE(tier.status().message().find("capacity_bytes"), std::string::npos)
      << tier.status().ToString();
}

INSTANTIATE_TEST_SUITE_P(Tiers, TierContract, ::testing::Values("tier_host", "tier_disk"),
                         [](const auto& p) { return std::string(p.param); });

}  // namespace
}  // namespace mstar::test

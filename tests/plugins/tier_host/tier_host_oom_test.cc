// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// tier_host when memory runs out in the middle of a PUT: each test fails the first allocation
// of the batch, then the second, and so on, until the batch runs without one failing. Whatever
// allocation fails (the block, its index entry, its slab count, an op's closure, the host's
// status), a PUT that reports failure leaves its key's previous block in place and evicts
// nothing, and one that reports success stored its bytes.
//
// The failures come from failing_allocations.cc, which the loaded plugin allocates through too,
// armed only while the batch is submitted (tier_host runs a batch inside submit).
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "failing_allocations.h"
#include "tier_harness.h"

namespace mstar::test {
namespace {

constexpr uint64_t kBlock = 4096;

class TierHostOom : public ::testing::Test {
 protected:
  void MakeTier(uint64_t capacity_bytes) {
    auto made =
        TierHarness::Create("tier_host", "capacity_bytes = " + std::to_string(capacity_bytes));
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    tier_ = std::move(made.value());
  }

  // Submits ops with the allocation_number-th allocation failing; false when the submit itself
  // failed (then no op ran). Sets failed_ to whether an allocation did fail.
  bool SubmitFailing(std::vector<mstar_tier_op_t>& ops, uint64_t allocation_number) {
    const mstar_host_api_t* host = tier_->host();
    mstar_tier_batch_t* batch = nullptr;
    FailAllocation(allocation_number);
    mstar_status_t* status = host->tier_submit(tier_->handle(), ops.data(),
                                               static_cast<uint32_t>(ops.size()), nullptr, &batch);
    failed_ = AllocationFailed();
    FailAllocation(0);
    if (status != nullptr) {
      host->status_release(status);
      return false;
    }
    EXPECT_EQ(host->tier_wait(tier_->handle(), batch, UINT64_MAX), nullptr);
    host->tier_release_batch(tier_->handle(), batch);
    return true;
  }

  // Runs ops with each allocation in turn failing; check(ran, ops) after each, and reset()
  // before each. Returns how many runs had an allocation fail.
  template <typename Reset, typename Check>
  int EachAllocationFails(std::vector<mstar_tier_op_t> ops, Reset reset, Check check) {
    int failures = 0;
    for (uint64_t n = 1; n < 10000; ++n) {
      reset();
      for (mstar_tier_op_t& op : ops) op.result = 0xFFFFFFFFu;
      const bool ran = SubmitFailing(ops, n);
      check(ran, ops);
      if (::testing::Test::HasFailure()) {
        ADD_FAILURE() << "with allocation " << n << " failing";
        return failures;
      }
      if (!failed_) return failures;
      ++failures;
    }
    ADD_FAILURE() << "the batch kept allocating";
    return failures;
  }

  // The bytes under key, or empty when it is not stored.
  std::vector<uint8_t> Read(uint64_t key) {
    std::vector<uint8_t> out(kBlock);
    return tier_->Get(key, out) == MSTAR_OK ? out : std::vector<uint8_t>{};
  }

  std::unique_ptr<TierHarness> tier_;
  bool failed_ = false;
};

TEST_F(TierHostOom, APutThatRunsOutOfMemoryKeepsThePreviousBlock) {
  MakeTier(0);
  std::vector<uint8_t> before = Pattern(kBlock, 1), after = Pattern(kBlock, 2);
  std::vector<mstar_tier_op_t> ops = {Op(MSTAR_TIER_OP_PUT, KeyOf(1), after.data(), kBlock)};
  const int failures = EachAllocationFails(
      ops, [&] { ASSERT_EQ(tier_->Put(1, before), MSTAR_OK); },
      [&](bool ran, const std::vector<mstar_tier_op_t>& done) {
        const bool stored = ran && done[0].result == MSTAR_OK;
        if (ran && !stored) {
          EXPECT_EQ(done[0].result, MSTAR_ERR_RESOURCE_EXHAUSTED);
        }
        EXPECT_EQ(Read(1), stored ? after : before);
        EXPECT_EQ(tier_->Info().used_bytes, kBlock);
      });
  EXPECT_GT(failures, 2);  // the block, its list node and its slab count at least
}

TEST_F(TierHostOom, APutThatRunsOutOfMemoryEvictsNothing) {
  MakeTier(2 * kBlock);
  std::vector<uint8_t> first = Pattern(kBlock, 1), second = Pattern(kBlock, 2);
  std::vector<uint8_t> third = Pattern(kBlock, 3);
  std::vector<mstar_tier_op_t> ops = {Op(MSTAR_TIER_OP_PUT, KeyOf(3), third.data(), kBlock)};
  const int failures = EachAllocationFails(
      ops,
      [&] {
        tier_->Remove(3);  // stored by the run before, or NOT_FOUND
        ASSERT_EQ(tier_->Put(1, first), MSTAR_OK);
        ASSERT_EQ(tier_->Put(2, second), MSTAR_OK);
      },
      [&](bool ran, const std::vector<mstar_tier_op_t>& done) {
        const bool stored = ran && done[0].result == MSTAR_OK;
        EXPECT_EQ(Read(2), second);
        EXPECT_EQ(Read(1), stored ? std::vector<uint8_t>{} : first);  // the least recently used
        EXPECT_EQ(Read(3), stored ? third : std::vector<uint8_t>{});
        EXPECT_EQ(tier_->Info().used_bytes, 2 * kBlock);
      });
  EXPECT_GT(failures, 2);
}

// A run of new keys: their index entries are made too, any of which may fail.
TEST_F(TierHostOom, ARunOfNewKeysThatRunsOutOfMemoryStoresAllOrNone) {
  MakeTier(0);
  constexpr uint64_t kRun = 4;
  std::vector<uint8_t> run = Pattern(kRun * kBlock, 9);
  std::vector<mstar_tier_op_t> ops;
  for (uint64_t k = 0; k < kRun; ++k)
    ops.push_back(Op(MSTAR_TIER_OP_PUT, KeyOf(k), run.data() + k * kBlock, kBlock));
  const int failures = EachAllocationFails(
      ops,
      [&] {
        for (uint64_t k = 0; k < kRun; ++k) tier_->Remove(k);
      },
      [&](bool ran, const std::vector<mstar_tier_op_t>& done) {
        uint64_t stored = 0;
        for (uint64_t k = 0; k < kRun; ++k) {
          const bool ok = ran && done[k].result == MSTAR_OK;
          stored += ok;
          const std::vector<uint8_t> expected(run.begin() + k * kBlock,
                                              run.begin() + (k + 1) * kBlock);
          EXPECT_EQ(Read(k), ok ? expected : std::vector<uint8_t>{}) << "key " << k;
        }
        // One slab for the whole run, or one block each when it went in one by one.
        EXPECT_EQ(tier_->Info().used_bytes, stored * kBlock);
      });
  EXPECT_GT(failures, 2);
}

TEST_F(TierHostOom, ARunThatRunsOutOfMemoryLosesNoPreviousBlock) {
  MakeTier(0);
  constexpr uint64_t kRun = 4;
  std::vector<uint8_t> run = Pattern(kRun * kBlock, 9);  // four blocks back to back: one run
  std::vector<mstar_tier_op_t> ops;
  for (uint64_t k = 0; k < kRun; ++k)
    ops.push_back(Op(MSTAR_TIER_OP_PUT, KeyOf(k), run.data() + k * kBlock, kBlock));
  auto block_of_run = [&](uint64_t k) {
    return std::vector<uint8_t>(run.begin() + k * kBlock, run.begin() + (k + 1) * kBlock);
  };
  const int failures = EachAllocationFails(
      ops,
      [&] {
        for (uint64_t k = 0; k < kRun; ++k) ASSERT_EQ(tier_->Put(k, Pattern(kBlock, 100 + k)), 0u);
      },
      [&](bool ran, const std::vector<mstar_tier_op_t>& done) {
        for (uint64_t k = 0; k < kRun; ++k) {
          const bool stored = ran && done[k].result == MSTAR_OK;
          EXPECT_EQ(Read(k), stored ? block_of_run(k) : Pattern(kBlock, 100 + k)) << "key " << k;
        }
        EXPECT_EQ(tier_->Info().used_bytes, kRun * kBlock);
      });
  EXPECT_GT(failures, 2);
}

}  // namespace
}  // namespace mstar::test

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "host/memory_ledger.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/fault_injection.h"
#include "host/host_objects.h"
#include "host/recycler.h"
#include "runtime/device/fenced_backend.h"

namespace mstar {
namespace {

constexpr DLDevice kCpu{kDLCPU, 0};

// The bytes a host block of size takes: its size class when small blocks are recycled.
uint64_t Taken(uint64_t size) {
  if (!kRecycling) return size;
  for (uint64_t c = MemoryLedger::kSmallestCached;
       c <= MemoryLedger::kSmallestCached << (MemoryLedger::kCachedClasses - 1); c *= 2) {
    if (size <= c) return c;
  }
  return size;
}

class MemoryLedgerTest : public ::testing::Test {
 protected:
  void TearDown() override { ledger_.SetLimit(kDLCPU, 0); }
  MemoryLedger ledger_;
  mstar_host_context owner_a_, owner_b_;
};

TEST_F(MemoryLedgerTest, AccountsPerOwnerAndDevice) {
  Result<void*> a = ledger_.Allocate(&owner_a_, kCpu, 1000, 64, false);
  Result<void*> b = ledger_.Allocate(&owner_b_, kCpu, 24, 0, false);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.value()) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.value()) % 256, 0u);  // default alignment
  std::memset(a.value(), 1, 1000);
  EXPECT_EQ(ledger_.UsedBy(&owner_a_, kCpu), Taken(1000));
  EXPECT_EQ(ledger_.Used(kCpu), Taken(1000) + Taken(24));
  EXPECT_TRUE(ledger_.Free(a.value()).ok());
  EXPECT_EQ(ledger_.HeldBy(&owner_a_), 0u);
  EXPECT_EQ(ledger_.HeldBy(&owner_b_), Taken(24));
  EXPECT_TRUE(ledger_.Free(b.value()).ok());
  EXPECT_EQ(ledger_.Used(kCpu), 0u);
}

// Zero-byte blocks are blocks too: freeing one after its owner's bytes reached 0 (the owner's
// entry gone) leaves the ledger whole, and it goes on serving that owner.
TEST_F(MemoryLedgerTest, ZeroByteBlocksFreedAfterTheOwnersOtherBlocks) {
  Result<void*> a = ledger_.Allocate(&owner_a_, kCpu, 100, 0, false);
  // Aligned past the recycled size classes, so that they take (and are charged) no bytes.
  Result<void*> none = ledger_.Allocate(&owner_a_, kCpu, 0, 512, false);
  Result<void*> also_none = ledger_.Allocate(&owner_a_, kCpu, 0, 512, false);
  ASSERT_TRUE(a.ok() && none.ok() && also_none.ok());
  EXPECT_TRUE(ledger_.Free(a.value()).ok());
  EXPECT_TRUE(ledger_.Free(none.value()).ok());
  EXPECT_TRUE(ledger_.Free(also_none.value()).ok());
  EXPECT_EQ(ledger_.UsedBy(&owner_a_, kCpu), 0u);
  Result<void*> again = ledger_.Allocate(&owner_a_, kCpu, 8, 0, false);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(ledger_.UsedBy(&owner_a_, kCpu), Taken(8));
  EXPECT_TRUE(ledger_.Free(again.value()).ok());
  EXPECT_EQ(ledger_.Used(kCpu), 0u);
}

TEST_F(MemoryLedgerTest, DoubleAndStrayFreesAreReportedNotExecuted) {
  Result<void*> a = ledger_.Allocate(&owner_a_, kCpu, 8, 0, false);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(ledger_.Free(a.value()).ok());
  Status again = ledger_.Free(a.value());
  EXPECT_EQ(again.code(), Code::kNotFound);
  int on_stack = 0;
  EXPECT_EQ(ledger_.Free(&on_stack).code(), Code::kNotFound);
}

TEST_F(MemoryLedgerTest, BudgetIsEnforcedAndRestoredOnFree) {
  ledger_.SetLimit(kDLCPU, 1100);
  Result<void*> a = ledger_.Allocate(&owner_a_, kCpu, 600, 0, false);
  ASSERT_TRUE(a.ok());
  Result<void*> b = ledger_.Allocate(&owner_a_, kCpu, 600, 0, false);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), Code::kResourceExhausted);
  EXPECT_NE(b.status().message().find("budget"), std::string::npos);
  EXPECT_EQ(ledger_.Used(kCpu), Taken(600));  // the failed request reserved nothing
  EXPECT_TRUE(ledger_.Free(a.value()).ok());
  Result<void*> c = ledger_.Allocate(&owner_a_, kCpu, 900, 0, false);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(ledger_.Free(c.value()).ok());
}

// Host memory is one budget: pinned (kDLCUDAHost) blocks and any kDLCPU index count against
// host_budget with plain host blocks, so none of them is a way around it.
TEST_F(MemoryLedgerTest, EveryKindOfHostMemoryCountsAgainstTheOneHostBudget) {
  ledger_.SetLimit(kDLCPU, 1100);
  Result<void*> a = ledger_.Allocate(&owner_a_, kCpu, 600, 0, false);
  ASSERT_TRUE(a.ok());
  for (DLDevice other : {DLDevice{kDLCUDAHost, 0}, DLDevice{kDLCPU, 1}}) {
    Result<void*> b = ledger_.Allocate(&owner_a_, other, 600, 0, false);
    ASSERT_FALSE(b.ok()) << other.device_type;
    EXPECT_EQ(b.status().code(), Code::kResourceExhausted) << b.status().ToString();
  }
  Result<void*> pinned = ledger_.Allocate(&owner_a_, kCpu, 600, 0, /*pinned=*/true);
  EXPECT_FALSE(pinned.ok());
  EXPECT_EQ(ledger_.Used(DLDevice{kDLCUDAHost, 0}), Taken(600));
  EXPECT_TRUE(ledger_.Free(a.value()).ok());
  Result<void*> c = ledger_.Allocate(&owner_a_, DLDevice{kDLCUDAHost, 0}, 600, 0, false);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_GE(ledger_.Used(kCpu), 600u);  // as pinned memory rounds it
  EXPECT_TRUE(ledger_.Free(c.value()).ok());
  EXPECT_EQ(ledger_.Used(kCpu), 0u);
}

// A size near 2^64 (a plugin's arithmetic gone wrong) must not wrap the budget check, the
// books or the backend's rounding into a small block handed out as if it were the size asked.
TEST_F(MemoryLedgerTest, SizesBeyondAnyMemoryAreRefusedWithoutWrapping) {
  for (uint64_t size : {UINT64_MAX, UINT64_MAX - 100, UINT64_MAX - 255}) {
    Result<void*> a = ledger_.Allocate(&owner_a_, kCpu, size, 0, false);
    ASSERT_FALSE(a.ok()) << size;
    EXPECT_EQ(a.status().code(), Code::kResourceExhausted);
    EXPECT_EQ(ledger_.Used(kCpu), 0u);
  }
  ledger_.SetLimit(kDLCPU, 1100);
  Result<void*> held = ledger_.Allocate(&owner_a_, kCpu, 600, 0, false);
  ASSERT_TRUE(held.ok());
  Result<void*> b = ledger_.Allocate(&owner_a_, kCpu, UINT64_MAX - 100, 0, false);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), Code::kResourceExhausted);
  // The held block's bytes + size wrap to under the budget: refused by the ledger, not left to the backend.
  EXPECT_NE(b.status().message().find("more than any memory"), std::string::npos)
      << b.status().message();
  EXPECT_EQ(ledger_.Used(kCpu), Taken(600));
  EXPECT_EQ(ledger_.UsedBy(&owner_a_, kCpu), Taken(600));
  EXPECT_TRUE(ledger_.Free(held.value()).ok());
}

TEST_F(MemoryLedgerTest, RejectsBadAlignment) {
  Result<void*> a = ledger_.Allocate(&owner_a_, kCpu, 8, 48, false);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), Code::kInvalidArgument);
}

TEST_F(MemoryLedgerTest, PinnedHostMemoryWorksWithoutAGpu) {
  Result<void*> a = ledger_.Allocate(&owner_a_, kCpu, 4096, 0, true);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  std::memset(a.value(), 7, 4096);
  EXPECT_EQ(ledger_.UsedBy(&owner_a_, kCpu), 4096u);
  EXPECT_TRUE(ledger_.Free(a.value()).ok());
}

// Small host blocks are kept when freed and given out again (kRecycling: not under
// AddressSanitizer, where every block is the allocator's, so a use after free is reported).
TEST_F(MemoryLedgerTest, RecycledSmallBlocksAreAccountedAndCheckedLikeAnyOther) {
  ledger_.SetLimit(kDLCPU, 1100);  // one block of 600 bytes, as asked or as its class takes
  void* first = nullptr;
  for (int round = 0; round < 3; ++round) {
    Result<void*> a = ledger_.Allocate(&owner_a_, kCpu, 600, 64, false);
    ASSERT_TRUE(a.ok()) << round << ": " << a.status().ToString();
    if (round == 0) first = a.value();
    if (kRecycling) {
      EXPECT_EQ(a.value(), first) << round << ": the kept block was not reused";
    }
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.value()) % 64, 0u);
    std::memset(a.value(), round, 600);
    EXPECT_EQ(ledger_.Used(kCpu), Taken(600));  // what the block takes
    EXPECT_EQ(ledger_.UsedBy(&owner_a_, kCpu), Taken(600));
    Result<void*> b = ledger_.Allocate(&owner_b_, kCpu, 600, 0, false);
    EXPECT_EQ(b.status().code(), Code::kResourceExhausted);  // the budget still holds
    EXPECT_TRUE(ledger_.Free(a.value()).ok());
    EXPECT_EQ(ledger_.Used(kCpu), 0u);  // a kept block is nobody's
    EXPECT_EQ(ledger_.HeldBy(&owner_a_), 0u);
    EXPECT_EQ(ledger_.Free(a.value()).code(), Code::kNotFound);  // kept or not: a double free
  }
  // A block kept from a smaller request serves a larger one of the same class, and the other way.
  Result<void*> small = ledger_.Allocate(&owner_a_, kCpu, 8, 0, false);
  ASSERT_TRUE(small.ok());
  EXPECT_TRUE(ledger_.Free(small.value()).ok());
  Result<void*> full = ledger_.Allocate(&owner_b_, kCpu, 256, 256, false);
  ASSERT_TRUE(full.ok());
  if (kRecycling) {
    EXPECT_EQ(full.value(), small.value());
  }
  std::memset(full.value(), 1, 256);
  EXPECT_EQ(ledger_.UsedBy(&owner_b_, kCpu), Taken(256));
  EXPECT_EQ(ledger_.UsedBy(&owner_a_, kCpu), 0u);
  EXPECT_TRUE(ledger_.Free(full.value()).ok());
  Result<void*> one = ledger_.Allocate(&owner_a_, kCpu, 1, 0, false);
  ASSERT_TRUE(one.ok());
  if (kRecycling) {
    EXPECT_EQ(one.value(), full.value());
  }
  EXPECT_EQ(ledger_.UsedBy(&owner_a_, kCpu), Taken(1));
  EXPECT_TRUE(ledger_.Free(one.value()).ok());
}

// The budget counts what blocks take, not what was asked for: nine requests of 257 bytes take
// nine 512-byte blocks where small blocks are recycled, more than a 4096-byte budget holds.
// A block whose record cannot be made (out of memory for the ledger's own entries) leaves no
// record behind, whichever of them failed: the next block given out at that address (the same
// small block, recycled) is its new owner's alone, and the counts return to zero.
TEST_F(MemoryLedgerTest, ABlockWhoseRecordFailsLeavesNothingRecorded) {
  for (uint64_t nth : {1u, 2u}) {  // the record's two entries: the owner's, then the block's
    SCOPED_TRACE(nth);
    ArmFault(FaultSite::kHostObject, nth);
    Result<void*> failed = ledger_.Allocate(&owner_a_, kCpu, 100, 0, false);
    DisarmFaults();
    ASSERT_FALSE(failed.ok());
    EXPECT_EQ(failed.status().code(), Code::kResourceExhausted);
    EXPECT_EQ(ledger_.HeldBy(&owner_a_), 0u);
    EXPECT_EQ(ledger_.Used(kCpu), 0u);
    Result<void*> next = ledger_.Allocate(&owner_b_, kCpu, 100, 0, false);
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    EXPECT_EQ(ledger_.UsedBy(&owner_b_, kCpu), Taken(100));
    EXPECT_TRUE(ledger_.FreeForOwner(next.value(), &owner_b_).ok());
    EXPECT_EQ(ledger_.HeldBy(&owner_b_), 0u);
    EXPECT_EQ(ledger_.Used(kCpu), 0u);
  }
}

TEST_F(MemoryLedgerTest, TheBudgetCountsTheBytesEachBlockTakes) {
  ledger_.SetLimit(kDLCPU, 4096);
  std::vector<void*> blocks;
  for (int i = 0; i < 9; ++i) {
    Result<void*> block = ledger_.Allocate(&owner_a_, kCpu, 257, 0, false);
    if (!block.ok()) {
      EXPECT_EQ(block.status().code(), Code::kResourceExhausted);
      EXPECT_NE(block.status().message().find("257 requested (512 with the block's rounding)"),
                std::string::npos)
          << block.status().ToString();
      break;
    }
    blocks.push_back(block.value());
  }
  EXPECT_EQ(blocks.size(), kRecycling ? 8u : 9u);
  EXPECT_EQ(ledger_.Used(kCpu), blocks.size() * Taken(257));
  for (void* block : blocks) EXPECT_TRUE(ledger_.Free(block).ok());
  EXPECT_EQ(ledger_.Used(kCpu), 0u);
}

// Blocks of a device whose backend caches freed blocks (FencedBackend, standing in for CUDA):
// freed to the device's DeviceBlockCache, accounted like any other, and trimmed to the budget.
TEST(MemoryLedgerCacheTest, FreedDeviceBlocksAreCachedAndTrimmedToTheBudget) {
  test::FencedBackend backend;
  SetHostBackendForTesting(&backend);
  {
    MemoryLedger ledger;
    mstar_host_context owner;
    Result<void*> a = ledger.Allocate(&owner, kCpu, 8000, 0, false);
    ASSERT_TRUE(a.ok());
    EXPECT_TRUE(ledger.Free(a.value()).ok());
    EXPECT_EQ(ledger.Used(kCpu), 0u);  // a cached block is nobody's
    EXPECT_EQ(ledger.CacheStats(kCpu).cached_bytes, 8192u);
    EXPECT_EQ(ledger.Free(a.value()).code(), Code::kNotFound);  // cached or not: a double free
    EXPECT_EQ(backend.live_blocks(), 1u);                       // still held, for reuse

    Result<void*> b = ledger.Allocate(&owner, kCpu, 8000, 0, false);  // a's fence is not done
    ASSERT_TRUE(b.ok());
    EXPECT_NE(b.value(), a.value());
    EXPECT_TRUE(ledger.Free(b.value()).ok());
    backend.CompleteAll();
    Result<void*> c = ledger.Allocate(&owner, kCpu, 7000, 0, false);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c.value(), a.value());
    EXPECT_EQ(ledger.UsedBy(&owner, kCpu), 8192u);  // the reused block's size
    EXPECT_EQ(ledger.CacheStats(kCpu).reused, 1u);
    auto all = ledger.AllCacheStats();
    ASSERT_EQ(all.size(), 1u);
    EXPECT_TRUE(SameDevice(all[0].first, kCpu));
    EXPECT_EQ(all[0].second.reused, 1u);
    EXPECT_EQ(all[0].second.allocated, 2u);

    // Used and cached bytes together stay within the budget: b's cached block goes back.
    ledger.SetLimit(kDLCPU, 13000);
    Result<void*> d = ledger.Allocate(&owner, kCpu, 4500, 0, false);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(ledger.CacheStats(kCpu).given_back, 1u);
    EXPECT_EQ(backend.live_blocks(), 2u);
    EXPECT_EQ(ledger.UsedBy(&owner, kCpu), 8192u + 4608u);
    EXPECT_TRUE(ledger.Free(c.value()).ok());
    EXPECT_EQ(backend.live_blocks(), 2u);  // c is cached
    // Caching off (memory.device_block_cache = false): the cache gives back, frees go back.
    ledger.SetDeviceCaching(false);
    EXPECT_EQ(backend.live_blocks(), 1u);
    EXPECT_TRUE(ledger.Free(d.value()).ok());
    EXPECT_EQ(backend.live_blocks(), 0u);
    ledger.SetDeviceCaching(true);
    ledger.SetLimit(kDLCPU, 0);
  }
  EXPECT_EQ(backend.live_blocks(), 0u);  // the ledger's cache gave everything back
  SetHostBackendForTesting(nullptr);
}

// Under a budget a cached block is reused only at the size the allocation reserved: a larger
// one's extra bytes would be charged after other threads may have reserved the rest of the room.
TEST(MemoryLedgerCacheTest, UnderABudgetOnlyABlockOfTheReservedSizeIsReused) {
  test::FencedBackend backend;
  SetHostBackendForTesting(&backend);
  {
    MemoryLedger ledger;
    mstar_host_context owner;
    ledger.SetLimit(kDLCPU, 100000);
    Result<void*> a = ledger.Allocate(&owner, kCpu, 8000, 0, false);  // takes 8192
    ASSERT_TRUE(a.ok());
    EXPECT_TRUE(ledger.Free(a.value()).ok());
    Result<void*> other = ledger.Allocate(&owner, kCpu, 5000, 0, false);  // fences a's free
    ASSERT_TRUE(other.ok());
    backend.CompleteAll();  // a's block is ready for reuse
    Result<void*> smaller = ledger.Allocate(&owner, kCpu, 7000, 0, false);  // reserves 7168
    ASSERT_TRUE(smaller.ok());
    EXPECT_NE(smaller.value(), a.value());
    EXPECT_EQ(ledger.UsedBy(&owner, kCpu), 5120u + 7168u);
    Result<void*> same = ledger.Allocate(&owner, kCpu, 8100, 0, false);  // reserves 8192
    ASSERT_TRUE(same.ok());
    EXPECT_EQ(same.value(), a.value());
    EXPECT_EQ(ledger.UsedBy(&owner, kCpu), 5120u + 7168u + 8192u);
    EXPECT_TRUE(ledger.Free(other.value()).ok());
    EXPECT_TRUE(ledger.Free(smaller.value()).ok());
    EXPECT_TRUE(ledger.Free(same.value()).ok());
    ledger.SetLimit(kDLCPU, 0);
  }
  SetHostBackendForTesting(nullptr);
}

}  // namespace
}  // namespace mstar

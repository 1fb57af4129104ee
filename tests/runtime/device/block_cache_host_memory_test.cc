// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// DeviceBlockCache when host memory runs out for its own books (injected kHostObject faults):
// every block stays accounted for, going back to the backend at once when it cannot be noted.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "core/fault_injection.h"
#include "device/block_cache.h"
#include "runtime/device/fenced_backend.h"

namespace mstar {
namespace {

constexpr DLDevice kDevice{kDLCPU, 0};

// Drives a cache through each of its paths: fresh blocks, frees, a fence recorded and then done,
// reuse, a fence that fails, a trim. Allocations may fail (out of host memory); every block
// handed out is distinct from those held. At the end the backend holds exactly the blocks held
// plus those cached. Gives every held block back.
void Churn(test::FencedBackend& backend, DeviceBlockCache& cache) {
  std::vector<void*> held;
  auto take = [&](uint64_t size) {
    Result<void*> ptr = cache.Allocate(size);
    if (!ptr.ok()) {
      EXPECT_EQ(ptr.status().code(), Code::kResourceExhausted) << ptr.status().ToString();
      return;
    }
    EXPECT_EQ(std::count(held.begin(), held.end(), ptr.value()), 0) << "a block handed out twice";
    held.push_back(ptr.value());
  };
  auto give_all = [&] {
    for (void* ptr : held) cache.Free(ptr);
    held.clear();
  };
  for (uint64_t size : {1000, 2000, 4000, 1000}) take(size);
  give_all();
  take(1000);  // nothing is ready: a fence over the frees, and a fresh block
  backend.CompleteAll();
  take(2000);  // the fence is done: reused
  take(4000);
  give_all();
  take(8000);  // a second fence
  backend.fail_queries = true;
  take(500);  // the fence fails: its blocks go back
  backend.fail_queries = false;
  give_all();
  take(3000);
  backend.CompleteAll();
  take(1000);
  cache.Trim(600);

  uint64_t held_bytes = 0;
  for (void* ptr : held) held_bytes += cache.BlockSize(ptr);
  EXPECT_EQ(backend.live_bytes(), held_bytes + cache.stats().cached_bytes);
  give_all();
}

TEST(DeviceBlockCacheHostMemory, EveryRecordThatCannotBeMadeLosesNoBlock) {
  uint64_t records = 0;
  {
    test::FencedBackend backend;
    DeviceBlockCache cache(&backend, kDevice);
    ArmFault(FaultSite::kHostObject, 0);
    Churn(backend, cache);
    records = FaultSiteCount(FaultSite::kHostObject);
    DisarmFaults();
  }
  ASSERT_GE(records, 15u);  // each path above notes at least one thing
  for (uint64_t nth = 1; nth <= records; ++nth) {
    SCOPED_TRACE("host object #" + std::to_string(nth));
    test::FencedBackend backend;
    {
      DeviceBlockCache cache(&backend, kDevice);
      ArmFault(FaultSite::kHostObject, nth);
      Churn(backend, cache);
      DisarmFaults();
    }
    EXPECT_EQ(backend.live_blocks(), 0u);
    EXPECT_EQ(backend.stray_frees(), 0u);
  }
}

// On the thread that captures a graph nothing may go back to the device (it would end the
// capture): a freed block that cannot be noted stays allocated, off the books, and the
// capture goes on.
TEST(DeviceBlockCacheHostMemory, AFreeThatCannotBeNotedWhileCapturingKeepsTheBlock) {
  test::FencedBackend backend;
  void* kept = nullptr;
  {
    DeviceBlockCache cache(&backend, kDevice);
    Result<void*> ptr = cache.Allocate(1000);
    ASSERT_TRUE(ptr.ok());
    kept = ptr.value();
    backend.capturing_thread = std::this_thread::get_id();
    ArmFault(FaultSite::kHostObject, 1);
    cache.Free(ptr.value());
    DisarmFaults();
    EXPECT_EQ(backend.live_blocks(), 1u);
    EXPECT_EQ(cache.stats().cached_bytes, 0u);
    backend.capturing_thread = std::thread::id();
    Result<void*> next = cache.Allocate(1000);  // a fresh block: the lost one is not reused
    ASSERT_TRUE(next.ok());
    EXPECT_NE(next.value(), ptr.value());
    cache.Free(next.value());
  }
  EXPECT_EQ(backend.live_blocks(), 1u);  // the one the capture kept
  EXPECT_EQ(backend.stray_frees(), 0u);
  backend.Free(kDevice, kept);
}

}  // namespace
}  // namespace mstar

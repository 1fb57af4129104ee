// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "device/block_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime/device/fenced_backend.h"

namespace mstar {
namespace {

constexpr DLDevice kDevice{kDLCPU, 0};

// Blocks the cache handed out are the test's to free: Take and Give keep count, and what a test
// leaves taken is given back at its end, so the cache's destructor can give everything back.
class DeviceBlockCacheTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (void* ptr : taken_) cache_.Free(ptr);
  }
  void* Take(uint64_t size) {
    Result<void*> ptr = cache_.Allocate(size);
    EXPECT_TRUE(ptr.ok()) << ptr.status().ToString();
    if (!ptr.ok()) return nullptr;
    taken_.push_back(ptr.value());
    return ptr.value();
  }
  void Give(void* ptr) {
    auto it = std::find(taken_.begin(), taken_.end(), ptr);
    ASSERT_NE(it, taken_.end());
    taken_.erase(it);
    cache_.Free(ptr);
  }

  test::FencedBackend backend_;
  DeviceBlockCache cache_{&backend_, kDevice};
  std::vector<void*> taken_;
};

TEST_F(DeviceBlockCacheTest, AFreedBlockIsReusedOnlyOnceItsFenceIsDone) {
  void* a = Take(1000);
  Give(a);
  void* b = Take(1000);  // the fence over a's free is not done: a fresh block
  EXPECT_NE(b, a);
  EXPECT_EQ(backend_.fences(), 1u);
  backend_.Complete(1);
  void* c = Take(1000);
  EXPECT_EQ(c, a);
  EXPECT_EQ(backend_.allocations(), 2u);
  DeviceBlockCache::Stats stats = cache_.stats();
  EXPECT_EQ(stats.reused, 1u);
  EXPECT_EQ(stats.allocated, 2u);
  EXPECT_EQ(stats.cached_bytes, 0u);
  Give(b);
  Give(c);
}

TEST_F(DeviceBlockCacheTest, OneFenceCoversEveryFreeSinceTheLast) {
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(Take(4096));
  for (void* ptr : blocks) Give(ptr);
  EXPECT_EQ(backend_.fences(), 0u);  // frees cost no device call
  EXPECT_EQ(cache_.stats().cached_bytes, 8u * 4096);
  void* fresh = Take(4096);
  EXPECT_EQ(backend_.fences(), 1u);
  backend_.CompleteAll();
  std::vector<void*> again;
  for (int i = 0; i < 8; ++i) again.push_back(Take(4096));
  EXPECT_EQ(backend_.fences(), 1u);  // all eight came from the one fence
  EXPECT_EQ(backend_.allocations(), 9u);
  for (void* ptr : again) EXPECT_NE(std::find(blocks.begin(), blocks.end(), ptr), blocks.end());
  Give(fresh);
  for (void* ptr : again) Give(ptr);
}

TEST_F(DeviceBlockCacheTest, AFenceDoneWhenRecordedMakesBlocksReadyAtOnce) {
  // A backend whose work is inline (the default RecordFence) answers nullptr: done.
  CpuBackend cpu;
  DeviceBlockCache cache(&cpu, kDevice);
  Result<void*> a = cache.Allocate(700);
  ASSERT_TRUE(a.ok());
  cache.Free(a.value());
  Result<void*> b = cache.Allocate(700);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b.value(), a.value());
  cache.Free(b.value());
}

TEST_F(DeviceBlockCacheTest, ABlockServesRequestsFromThreeQuartersOfItsSize) {
  void* big = Take(4096);
  Give(big);
  Take(16);  // records the fence (and takes a small fresh block)
  backend_.CompleteAll();
  void* half = Take(2048);  // 4096 is too large for it
  EXPECT_NE(half, big);
  void* most = Take(3072);
  EXPECT_EQ(most, big);
  Give(half);
  Give(most);
}

TEST_F(DeviceBlockCacheTest, SizesAreRoundedToTheGranule) {
  void* a = Take(1);
  Give(a);
  Take(1);
  backend_.CompleteAll();
  EXPECT_EQ(Take(DeviceBlockCache::kGranule), a);  // 1 byte took a whole granule
  EXPECT_EQ(backend_.live_bytes(), 2 * DeviceBlockCache::kGranule);
}

// The backend's fences answer "not done" while the device captures, without asking the device
// (FencedBackend does as CudaBackend does; cuda_backend_gpu_test.cc checks CudaBackend's): the
// cache records no fence then and reuses nothing it had not seen fenced before.
TEST_F(DeviceBlockCacheTest, NoFenceIsRecordedAndNoFencedBlockReusedWhileCapturing) {
  void* a = Take(1000);
  void* b = Take(1000);
  Give(a);
  Take(1000);  // fence 1 covers a
  backend_.Complete(1);
  Give(b);
  backend_.capturing = true;
  // Fence 1 cannot be asked about and b's free cannot be fenced: a fresh block.
  void* during = Take(1000);
  EXPECT_NE(during, a);
  EXPECT_NE(during, b);
  EXPECT_EQ(backend_.fences(), 1u);
  backend_.capturing = false;
  EXPECT_EQ(Take(1000), a);
  Take(1000);  // now b's free is fenced
  EXPECT_EQ(backend_.fences(), 2u);
  backend_.CompleteAll();
  EXPECT_EQ(Take(1000), b);
}

// A block handed to the capturing thread would be baked into the graph, which goes on writing it
// after it is freed and reused: that thread gets none, not even a ready one; others still do.
TEST_F(DeviceBlockCacheTest, TheCapturingThreadGetsNoBlock) {
  void* a = Take(1000);
  Give(a);
  Take(1000);  // fence 1 covers a
  backend_.Complete(1);
  backend_.capturing_thread = std::this_thread::get_id();
  Result<void*> during = cache_.Allocate(1000);
  ASSERT_FALSE(during.ok());
  EXPECT_EQ(during.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(during.status().message().find("captures a graph"), std::string::npos)
      << during.status().message();
  EXPECT_EQ(backend_.allocations(), 2u);  // nothing asked of the backend either
  void* other = nullptr;
  std::thread([&] { other = Take(1000); }).join();
  EXPECT_EQ(other, a);
  backend_.capturing_thread = std::thread::id();
  Take(1000);
}

TEST_F(DeviceBlockCacheTest, ASizeBeyondAnyDeviceIsRefusedNotWrapped) {
  for (uint64_t size : {UINT64_MAX, UINT64_MAX - DeviceBlockCache::kGranule + 1}) {
    Result<void*> ptr = cache_.Allocate(size);
    ASSERT_FALSE(ptr.ok()) << size;
    EXPECT_EQ(ptr.status().code(), Code::kResourceExhausted);
  }
  EXPECT_EQ(backend_.allocations(), 0u);
  EXPECT_EQ(cache_.stats().cached_bytes, 0u);
}

TEST_F(DeviceBlockCacheTest, OutOfMemoryGivesCachedBlocksBackAndRetries) {
  backend_.limit = 3 * 1024;
  void* a = Take(1024);
  void* b = Take(1024);
  Give(a);
  Give(b);  // both wait for a fence that never completes
  void* c = Take(1024);
  ASSERT_NE(c, nullptr);
  // 2048 live in the cache + 1024 in use: the next one fits only once the cache gives back.
  void* d = Take(2048);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(cache_.stats().given_back, 2u);
  EXPECT_EQ(cache_.stats().cached_bytes, 0u);
  EXPECT_EQ(backend_.live_bytes(), 3u * 1024);
  Result<void*> e = cache_.Allocate(1024);  // nothing left to give back
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), Code::kResourceExhausted);
  EXPECT_NE(e.status().message().find("bytes live"), std::string::npos);
  Give(c);
  Give(d);
}

TEST_F(DeviceBlockCacheTest, TrimKeepsAtMostTheGivenBytes) {
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(Take(1024));
  for (void* ptr : blocks) Give(ptr);
  cache_.Trim(2048);
  EXPECT_EQ(cache_.stats().cached_bytes, 2048u);
  EXPECT_EQ(backend_.live_blocks(), 2u);
  cache_.Release();
  EXPECT_EQ(backend_.live_blocks(), 0u);
  EXPECT_EQ(cache_.stats().given_back, 4u);
}

TEST_F(DeviceBlockCacheTest, LargeBlocksAndWhatIsOverTheCapGoStraightBack) {
  DeviceBlockCache cache(&backend_, kDevice, {/*largest_block=*/4096, /*most_cached=*/8192});
  Result<void*> large = cache.Allocate(5000);
  ASSERT_TRUE(large.ok());
  cache.Free(large.value());
  EXPECT_EQ(backend_.live_blocks(), 0u);  // never cached
  EXPECT_EQ(cache.stats().cached_bytes, 0u);
  std::vector<void*> blocks;
  for (int i = 0; i < 3; ++i) {
    Result<void*> ptr = cache.Allocate(4096);
    ASSERT_TRUE(ptr.ok());
    blocks.push_back(ptr.value());
  }
  for (void* ptr : blocks) cache.Free(ptr);
  EXPECT_EQ(cache.stats().cached_bytes, 8192u);  // the third went back
  EXPECT_EQ(cache.stats().given_back, 1u);
  EXPECT_EQ(backend_.live_blocks(), 2u);
}

// Giving a block back to the device would end a capture on the freeing thread: while it
// captures, a block too large to cache, one over the cap, and one freed with keeping off all wait
// in the cache; outside the capture they go back as usual.
TEST_F(DeviceBlockCacheTest, NothingGoesBackToTheDeviceWhileTheFreeingThreadCaptures) {
  DeviceBlockCache cache(&backend_, kDevice, {/*largest_block=*/4096, /*most_cached=*/4096});
  Result<void*> large = cache.Allocate(5000);
  Result<void*> small = cache.Allocate(4096);
  Result<void*> other = cache.Allocate(4096);
  Result<void*> last = cache.Allocate(4096);
  ASSERT_TRUE(large.ok() && small.ok() && other.ok() && last.ok());
  backend_.capturing_thread = std::this_thread::get_id();
  cache.Free(large.value());  // too large to cache
  cache.Free(small.value());
  cache.Free(other.value());  // over the cap
  EXPECT_EQ(backend_.live_blocks(), 4u);
  EXPECT_EQ(cache.stats().given_back, 0u);
  backend_.capturing_thread = std::thread::id();
  cache.SetKeeping(false);
  EXPECT_EQ(backend_.live_blocks(), 1u);  // what the capture left went back
  backend_.capturing_thread = std::this_thread::get_id();
  cache.Free(last.value());  // keeping off: it still waits
  EXPECT_EQ(backend_.live_blocks(), 1u);
  backend_.capturing_thread = std::thread::id();
  Result<void*> next = cache.Allocate(100);
  ASSERT_TRUE(next.ok());
  cache.Free(next.value());  // keeping off: this free gives back what the capture left too
  EXPECT_EQ(backend_.live_blocks(), 0u);
  EXPECT_EQ(cache.stats().cached_bytes, 0u);
}

TEST_F(DeviceBlockCacheTest, NotKeepingGivesFreedBlocksStraightBack) {
  void* a = Take(1000);
  void* b = Take(1000);
  Give(a);
  EXPECT_EQ(backend_.live_blocks(), 2u);  // a is cached
  cache_.SetKeeping(false);
  EXPECT_EQ(backend_.live_blocks(), 1u);  // a went back
  EXPECT_EQ(cache_.stats().cached_bytes, 0u);
  Give(b);
  EXPECT_EQ(backend_.live_blocks(), 0u);  // freed at once, as without a cache
  Give(Take(1000));
  EXPECT_EQ(backend_.live_blocks(), 0u);
  EXPECT_EQ(backend_.fences(), 0u);
  cache_.SetKeeping(true);
  Give(Take(1000));
  EXPECT_EQ(backend_.live_blocks(), 1u);  // kept again
  EXPECT_EQ(cache_.stats().reused, 0u);
}

TEST_F(DeviceBlockCacheTest, AFenceThatFailsGivesItsBlocksBack) {
  void* a = Take(1000);
  Give(a);
  Take(1000);  // fence 1 over a
  backend_.fail_queries = true;
  Take(1000);  // a's fence fails: a goes back to the backend (which may hand its address out)
  EXPECT_EQ(cache_.stats().reused, 0u);
  EXPECT_EQ(cache_.stats().allocated, 3u);
  EXPECT_EQ(cache_.stats().given_back, 1u);
  EXPECT_EQ(cache_.stats().cached_bytes, 0u);
  EXPECT_EQ(backend_.live_blocks(), 2u);
}

TEST_F(DeviceBlockCacheTest, DestructionGivesEveryCachedBlockBack) {
  {
    DeviceBlockCache cache(&backend_, kDevice);
    Result<void*> a = cache.Allocate(1000);
    Result<void*> b = cache.Allocate(5000);
    ASSERT_TRUE(a.ok() && b.ok());
    cache.Free(a.value());
    cache.Free(b.value());
    EXPECT_EQ(backend_.live_blocks(), 2u);
  }
  EXPECT_EQ(backend_.live_blocks(), 0u);
}

TEST_F(DeviceBlockCacheTest, ThreadsAllocateAndFreeConcurrently) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        Result<void*> ptr = cache_.Allocate(static_cast<uint64_t>(512 * (1 + (i + t) % 4)));
        ASSERT_TRUE(ptr.ok());
        std::memset(ptr.value(), t, 512);
        cache_.Free(ptr.value());
        if (i % 50 == 0) backend_.CompleteAll();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  DeviceBlockCache::Stats stats = cache_.stats();
  EXPECT_EQ(stats.reused + stats.allocated, 2000u);
  EXPECT_GT(stats.reused, 0u);
  EXPECT_EQ(backend_.live_blocks(), stats.allocated);  // nothing lost, nothing freed twice
}

}  // namespace
}  // namespace mstar

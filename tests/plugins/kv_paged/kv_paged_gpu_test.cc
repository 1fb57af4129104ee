// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// kv_paged with its pool on a GPU, offloading 512 pages to tier_host (pinned host blocks) on a
// stream and reloading them, twice: byte-exact, and the second round trip timed against one copy
// of the same bytes from the device into pinned memory (the copy peak). The pages are scattered
// (every other page of the pool, so no two lie back to back and each moves as a copy of its
// own) or contiguous (tier_host moves them as one run). Prints KVOFFLOAD lines for
// scripts/device_check.sh. Label gpu. The same round trips run with the pool in host memory
// too, so that the test's own bookkeeping is exercised wherever this binary is built (CUDA
// builds), GPU or not.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "device/device.h"
#include "host/memory_ledger.h"
#include "kv_fixture.h"

namespace mstar::kvtest {
namespace {

// tiny_lm's large config in the device check: 8 layers, 8 KV heads of 64, 16-token pages; a
// page is 2 * 8 * 16 * 8 * 64 floats = 512 KiB, one contiguous block of the page-major pool.
constexpr int kLayers = 8, kHeads = 8, kDim = 64, kPageSize = 16, kPages = 1024;
constexpr int kRequestPages = 512;  // 256 MiB offloaded at once
constexpr DLDevice kHost{kDLCPU, 0};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

class KvOffloadRoundTrip : public KvTest {
 protected:
  void TearDown() override {
    if (backend_ != nullptr && stream_.native != nullptr) {
      backend_->DestroyStream(stream_.device, stream_.native);
    }
    for (auto& [device, ptr] : buffers_) backend_->Free(device, ptr);
  }

  void Copy(void* dst, DLDevice dst_device, const void* src, DLDevice src_device, uint64_t n) {
    ASSERT_TRUE(backend_->Copy(dst, dst_device, src, src_device, n, nullptr).ok());
  }

  // Offloads kRequestPages pages of a kv_paged pool on device to tier_host and reloads them;
  // checks every page came back; prints a KVOFFLOAD line when print. scattered: the request holds
  // every other page of the pool (a second request holds the rest and stays), else pages in a row.
  // refusing_near: the nearest tier (tier_host) refuses every PUT and misses every GET, so the
  // blocks are restaged to host memory for kit_memory (host memory only) and come back from it.
  void RoundTrip(DLDevice device, DLDevice pinned, bool print, bool scattered,
                 bool refusing_near = false) {
    RoundTripOf(kPages, kRequestPages, device, pinned, print, scattered, refusing_near);
  }

  // RoundTrip over a pool of num_pages pages, request_pages of them offloaded.
  void RoundTripOf(int num_pages, int request_pages, DLDevice device, DLDevice pinned, bool print,
                   bool scattered, bool refusing_near) {
    backend_ = BackendFor(device).value();
    if (stream_.native != nullptr) backend_->DestroyStream(stream_.device, stream_.native);
    stream_.device = device;
    stream_.backend = backend_;
    stream_.native = backend_->CreateStream(device, 0).value();
    const std::string config =
        "page_size = " + std::to_string(kPageSize) + "\nnum_pages = " + std::to_string(num_pages) +
        "\nlayers = " + std::to_string(kLayers) + "\nkv_heads = " + std::to_string(kHeads) +
        "\nhead_dim = " + std::to_string(kDim) + "\n";
    std::vector<mstar_tier_handle_t*> tiers;
    if (refusing_near) {
      FaultyTier* near = MakeFaultyTier("tier_host");
      near->refuse_puts = true;
      near->mode = FaultyTier::kNotFound;
      tiers = {&near->handle, MakeTier()};
    } else {
      tiers = {MakeTier("tier_host")};
    }
    PluginInstance* kv = MakeKv(config, tiers, "ckpt-a", device);
    ASSERT_NE(kv, nullptr);
    FakeRequest a(1), b(2);
    ASSERT_TRUE(Add(kv, a).ok());
    if (scattered) {
      // One page each per step, a then b: a's pages alternate with b's, which b keeps, so the
      // reload too gets every other page.
      ASSERT_TRUE(Add(kv, b).ok());
      for (int i = 0; i < request_pages; ++i)
        ASSERT_EQ(Step(kv, {&a, &b}, {kPageSize, kPageSize}), (std::vector<uint32_t>{0, 0}));
    } else {
      ASSERT_EQ(Step(kv, {&a}, {static_cast<uint32_t>(request_pages * kPageSize)}),
                (std::vector<uint32_t>{0}));
    }
    // The pool's memory is the instance's for its life; the view describing it is not.
    const mstar_tensor_t* pool_view = Get(*last_view_, "kv_pool");
    ASSERT_EQ(pool_view->dl.device.device_type, device.device_type);
    void* const pool = pool_view->dl.data;
    const auto pool_pages = static_cast<uint64_t>(pool_view->dl.shape[0]);
    const uint64_t page_bytes = uint64_t{kLayers} * 2 * kPageSize * kHeads * kDim * sizeof(float);
    const uint64_t pool_bytes = pool_pages * page_bytes;
    std::vector<char> pattern(pool_bytes);
    for (uint64_t i = 0; i < pool_bytes; ++i)
      pattern[i] = static_cast<char>((i * 2654435761u) >> 13);
    Copy(pool, device, pattern.data(), kHost, pool_bytes);
    Held before = Probe(kv, a);
    ASSERT_EQ(before.pages.size(), static_cast<size_t>(request_pages));
    int adjacent = 0;  // pages right after their predecessor
    for (size_t i = 1; i < before.pages.size(); ++i)
      adjacent += before.pages[i] == before.pages[i - 1] + 1;
    if (scattered) {
      ASSERT_EQ(adjacent, 0);
    }

    const uint64_t moved = static_cast<uint64_t>(request_pages) * page_bytes;
    // Two round trips, the second timed: the first fills the tier's cache of freed blocks, as a
    // serving process's first offloads do.
    std::vector<char> poison(pool_bytes, static_cast<char>(0xee));
    double offload_s = 0, reload_s = 0;
    for (int round = 0; round < 2; ++round) {
      uint64_t reclaimed = 0;
      auto start = std::chrono::steady_clock::now();
      ASSERT_TRUE(
          TakeStatus(T(kv)->offload(kv->self(), a.info.request_id, 0, &stream_, &reclaimed)).ok());
      ASSERT_TRUE(backend_->SynchronizeStream(device, stream_.native).ok());
      offload_s = SecondsSince(start);
      EXPECT_EQ(reclaimed, static_cast<uint64_t>(request_pages));
      // Overwrite the pool, so that the reload has to bring every byte back.
      Copy(pool, device, poison.data(), kHost, pool_bytes);
      uint32_t done = 0;
      start = std::chrono::steady_clock::now();
      ASSERT_TRUE(TakeStatus(T(kv)->reload(kv->self(), a.info.request_id, &stream_, &done)).ok());
      ASSERT_TRUE(backend_->SynchronizeStream(device, stream_.native).ok());
      reload_s = SecondsSince(start);
      ASSERT_EQ(done, 1u);
    }
    Held after = Probe(kv, a);
    ASSERT_EQ(after.pages.size(), before.pages.size());
    std::vector<char> now(pool_bytes);
    Copy(now.data(), kHost, pool, device, pool_bytes);
    int bad = 0;
    for (size_t i = 0; i < after.pages.size(); ++i) {
      bad += std::memcmp(&pattern[before.pages[i] * page_bytes], &now[after.pages[i] * page_bytes],
                         page_bytes) != 0;
    }
    EXPECT_EQ(bad, 0) << "pages that did not come back byte for byte";
    if (!print) return;

    // The copy peaks: the same bytes in one copy on the stream, from the pool into pinned memory
    // (what offload does) and back (what reload does); the best of 5 of each, after a pass that
    // touches the pages.
    Result<void*> staged = backend_->Allocate(pinned, moved, 256);
    ASSERT_TRUE(staged.ok()) << staged.status().ToString();
    buffers_.push_back({pinned, staged.value()});
    auto best_copy_s = [&](void* dst, DLDevice dst_device, const void* src, DLDevice src_device) {
      double best = 1e30;
      for (int pass = 0; pass < 6; ++pass) {
        auto start = std::chrono::steady_clock::now();
        EXPECT_TRUE(backend_->Copy(dst, dst_device, src, src_device, moved, stream_.native).ok());
        EXPECT_TRUE(backend_->SynchronizeStream(device, stream_.native).ok());
        if (pass > 0) best = std::min(best, SecondsSince(start));
      }
      return best;
    };
    const double down_s = best_copy_s(staged.value(), pinned, pool, device);
    const double up_s = best_copy_s(pool, device, staged.value(), pinned);
    std::printf(
        "KVOFFLOAD pages=%d page_bytes=%llu layout=%s offload_gbps=%.2f reload_gbps=%.2f "
        "peak_gbps=%.2f reload_peak_gbps=%.2f\n",
        request_pages, static_cast<unsigned long long>(page_bytes),
        scattered ? "scattered" : "contiguous", test::GBps(moved, offload_s),
        test::GBps(moved, reload_s), test::GBps(moved, down_s), test::GBps(moved, up_s));
    std::fflush(stdout);
  }

  DeviceBackend* backend_ = nullptr;
  mstar_stream stream_;
  std::vector<std::pair<DLDevice, void*>> buffers_;
};

TEST_F(KvOffloadRoundTrip, OnTheGpuThroughPinnedTierHostIsByteExactAndTimed) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  RoundTrip(DLDevice{kDLCUDA, 0}, DLDevice{kDLCUDAHost, 0}, true, /*scattered=*/true);
  RoundTrip(DLDevice{kDLCUDA, 0}, DLDevice{kDLCUDAHost, 0}, true, /*scattered=*/false);
}

TEST_F(KvOffloadRoundTrip, ThroughARefusingNearTierOnTheGpuIsByteExact) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  RoundTrip(DLDevice{kDLCUDA, 0}, DLDevice{kDLCUDAHost, 0}, false, /*scattered=*/true, true);
}

// Offloading from a GPU pool to a tier that takes host memory only goes through pinned staging.
// A reload that needs more staging than any move before it, while the host budget is short, is
// a reload to retry (not done), not a request lost; once memory is there it completes byte-exact.
TEST_F(KvOffloadRoundTrip, AReloadShortOfHostMemoryForItsStagingWaitsAndLosesNothing) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  const DLDevice device{kDLCUDA, 0};
  backend_ = BackendFor(device).value();
  stream_.device = device;
  stream_.backend = backend_;
  stream_.native = backend_->CreateStream(device, 0).value();
  PluginInstance* kv = MakeKv(
      "page_size = 16\nnum_pages = 16\nlayers = 2\nkv_heads = 2\n"
      "head_dim = 8\n",
      {MakeTier()}, "ckpt-a", device);
  ASSERT_NE(kv, nullptr);
  FakeRequest a(1);
  ASSERT_TRUE(Add(kv, a).ok());
  ASSERT_EQ(Step(kv, {&a}, {8 * 16}), (std::vector<uint32_t>{0}));  // 8 pages
  const mstar_tensor_t* pool_view = Get(*last_view_, "kv_pool");
  void* const pool = pool_view->dl.data;
  const uint64_t page_bytes = uint64_t{2} * 2 * 16 * 2 * 8 * sizeof(float);
  const uint64_t pool_bytes = 16 * page_bytes;
  std::vector<char> pattern(pool_bytes);
  for (uint64_t i = 0; i < pool_bytes; ++i) pattern[i] = static_cast<char>((i * 40503u) >> 7);
  Copy(pool, device, pattern.data(), kHost, pool_bytes);
  const Held before = Probe(kv, a);
  // Two offloads of 4 pages each: the staging buffer holds 4 blocks.
  for (int half = 0; half < 2; ++half) {
    uint64_t reclaimed = 0;
    ASSERT_TRUE(TakeStatus(T(kv)->offload(kv->self(), 1, 4, &stream_, &reclaimed)).ok());
    EXPECT_EQ(reclaimed, 4u);
  }
  MemoryLedger& ledger = MemoryLedger::Global();
  ledger.SetLimit(kDLCPU, ledger.Used(kHost) + page_bytes);  // not the 4 blocks more it needs
  uint32_t done = 1;
  Status short_of_memory = TakeStatus(T(kv)->reload(kv->self(), 1, &stream_, &done));
  ledger.SetLimit(kDLCPU, 0);
  ASSERT_TRUE(short_of_memory.ok()) << short_of_memory.ToString();
  EXPECT_EQ(done, 0u);
  ASSERT_TRUE(TakeStatus(T(kv)->reload(kv->self(), 1, &stream_, &done)).ok());
  ASSERT_EQ(done, 1u);
  ASSERT_TRUE(backend_->SynchronizeStream(device, stream_.native).ok());
  const Held after = Probe(kv, a);
  ASSERT_EQ(after.pages.size(), before.pages.size());
  std::vector<char> now(pool_bytes);
  Copy(now.data(), kHost, pool, device, pool_bytes);
  for (size_t i = 0; i < after.pages.size(); ++i) {
    EXPECT_EQ(std::memcmp(&pattern[before.pages[i] * page_bytes], &now[after.pages[i] * page_bytes],
                          page_bytes),
              0)
        << "page " << i;
  }
}

// On the host, a pool of 64 pages (32 MiB) is enough to check the bytes; the GPU runs time the
// device check's size.
TEST_F(KvOffloadRoundTrip, InHostMemoryIsByteExact) {
  RoundTripOf(64, 32, kHost, kHost, false, /*scattered=*/true, false);
  RoundTripOf(64, 32, kHost, kHost, false, /*scattered=*/false, false);
}

}  // namespace
}  // namespace mstar::kvtest

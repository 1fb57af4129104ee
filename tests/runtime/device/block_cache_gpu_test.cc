// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// DeviceBlockCache over the CUDA backend on a real GPU (CUDA builds; every test skips without a
// device):
//   - a freed block is not handed out while work enqueued before its free is still pending (a
//     stream held by a host function the test releases), and is once that work has finished;
//   - no fence is recorded between CudaBackend::CaptureStarting and CaptureEnded, and the
//     thread between them gets no block (other threads do);
//   - fences record while other threads make and destroy streams, without touching a gone one;
//   - a block made ready before a capture is handed out during it, and frees during it, with no
//     CUDA call: the capture stays valid;
//   - prints a BLOCKCACHE line for device_check.sh: an allocate+free pair through the cache vs
//     cudaMalloc+cudaFree on an idle device (cudaFree costs more with work in flight).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "device/block_cache.h"
#include "device/cuda_backend.h"
#include "device/device.h"

namespace mstar {
namespace {

constexpr DLDevice kGpu{kDLCUDA, 0};
constexpr uint64_t kBytes = uint64_t{1} << 20;

class GpuBlockCache : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    backend_ = BackendFor(kGpu).value();
    ASSERT_TRUE(backend_->CachesFreedBlocks(kGpu));
    stream_ = backend_->CreateStream(kGpu, 0).value();
    cache_ = std::make_unique<DeviceBlockCache>(backend_, kGpu);
  }
  void TearDown() override {
    release_ = true;
    if (stream_ != nullptr) backend_->DestroyStream(kGpu, stream_);
    cache_.reset();
  }

  // Holds stream_ until release_ is set: work enqueued after this waits for the test.
  void Hold() {
    release_ = false;
    ASSERT_EQ(cudaLaunchHostFunc(
                  static_cast<cudaStream_t>(stream_),
                  [](void* flag) {
                    while (!static_cast<std::atomic<bool>*>(flag)->load())
                      std::this_thread::sleep_for(std::chrono::microseconds(50));
                  },
                  &release_),
              cudaSuccess);
  }
  void* Take() {
    Result<void*> ptr = cache_->Allocate(kBytes);
    EXPECT_TRUE(ptr.ok()) << ptr.status().ToString();
    return ptr.ok() ? ptr.value() : nullptr;
  }

  DeviceBackend* backend_ = nullptr;
  void* stream_ = nullptr;
  std::unique_ptr<DeviceBlockCache> cache_;
  std::atomic<bool> release_{true};
};

TEST_F(GpuBlockCache, AFreedBlockWaitsForTheWorkEnqueuedBeforeItsFree) {
  void* a = Take();
  Hold();
  ASSERT_EQ(cudaMemsetAsync(a, 0x5a, kBytes, static_cast<cudaStream_t>(stream_)), cudaSuccess);
  cache_->Free(a);  // the memset has not run yet
  void* b = Take();
  EXPECT_NE(b, a);
  release_ = true;
  ASSERT_TRUE(backend_->SynchronizeStream(kGpu, stream_).ok());
  void* c = Take();
  EXPECT_EQ(c, a);
  std::vector<unsigned char> host(kBytes);
  ASSERT_EQ(cudaMemcpy(host.data(), c, kBytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(host[0], 0x5a);  // the memset ran into a before a was handed out again
  EXPECT_EQ(host[kBytes - 1], 0x5a);
  cache_->Free(b);
  cache_->Free(c);
}

TEST_F(GpuBlockCache, AllocationsWhileCapturingLeaveTheCaptureValid) {
  void* a = Take();
  void* b = Take();
  cache_->Free(a);
  cache_->Free(b);
  void* fenced = Take();  // records the fence over both frees
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  void* first = Take();  // the fence is done: both are ready, one is taken
  EXPECT_TRUE(first == a || first == b);
  cache_->Free(fenced);
  cudaStream_t stream = static_cast<cudaStream_t>(stream_);
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  // The other ready block, with no CUDA call; then frees, which make none either.
  void* during = Take();
  ASSERT_EQ(cudaMemsetAsync(during, 1, kBytes, stream), cudaSuccess);
  cache_->Free(first);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_NE(graph, nullptr);
  cudaGraphDestroy(graph);
  EXPECT_TRUE(during == a || during == b);
  EXPECT_NE(during, first);
  EXPECT_EQ(cache_->stats().fences, 1u);
  cache_->Free(during);
}

TEST_F(GpuBlockCache, NoFenceIsRecordedWhileTheRuntimeCaptures) {
  CudaBackend& cuda = CudaBackend::Instance();
  cuda.CaptureStarting(kGpu.device_id);  // as CudaGraphBackend::BeginCapture does
  Result<std::unique_ptr<DeviceFence>> during = cuda.RecordFence(kGpu);
  cuda.CaptureEnded(kGpu.device_id);
  ASSERT_FALSE(during.ok());
  EXPECT_EQ(during.status().code(), Code::kUnavailable);
  Result<std::unique_ptr<DeviceFence>> after = cuda.RecordFence(kGpu);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  ASSERT_NE(after.value(), nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  Result<bool> done = after.value()->Done();
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(done.value());
}

TEST_F(GpuBlockCache, TheThreadCapturingForTheRuntimeGetsNoBlock) {
  cache_->Free(Take());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  CudaBackend& cuda = CudaBackend::Instance();
  cuda.CaptureStarting(kGpu.device_id);  // as CudaGraphBackend::BeginCapture does
  Result<void*> during = cache_->Allocate(kBytes);
  void* elsewhere = nullptr;
  std::thread([&] { elsewhere = Take(); }).join();  // another thread is not capturing
  cuda.CaptureEnded(kGpu.device_id);
  ASSERT_FALSE(during.ok());
  EXPECT_EQ(during.status().code(), Code::kFailedPrecondition);
  ASSERT_NE(elsewhere, nullptr);
  void* after = Take();
  ASSERT_NE(after, nullptr);
  cache_->Free(elsewhere);
  cache_->Free(after);
}

// Fences record on every stream of the device while other threads make and destroy streams: a
// fence never records on, or asks about, a stream that is gone.
TEST_F(GpuBlockCache, FencesAndStreamsComeAndGoConcurrently) {
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  void* block = Take();
  std::thread churn([&] {
    while (!stop.load()) {
      Result<void*> stream = backend_->CreateStream(kGpu, 0);
      if (!stream.ok()) {
        ++failures;
        continue;
      }
      // Work for the fences to wait for and the destruction to finish first.
      if (cudaMemsetAsync(block, 0, kBytes, static_cast<cudaStream_t>(stream.value())) !=
          cudaSuccess) {
        ++failures;
      }
      backend_->DestroyStream(kGpu, stream.value());
    }
  });
  for (int i = 0; i < 2000; ++i) {
    Result<std::unique_ptr<DeviceFence>> fence = backend_->RecordFence(kGpu);
    if (!fence.ok() || fence.value() == nullptr) {
      ++failures;
      continue;
    }
    if (!fence.value()->Done().ok()) ++failures;
  }
  stop = true;
  churn.join();
  cache_->Free(block);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(GpuBlockCache, PrintsAllocateAndFreeCostAgainstCudaMalloc) {
  constexpr int kPairs = 2000;
  constexpr uint64_t kSmall = 4096;
  auto per_pair_us = [&](auto&& pair) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kPairs; ++i) pair();
    std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    return took.count() / kPairs;
  };
  const double cached = per_pair_us([&] {
    Result<void*> ptr = cache_->Allocate(kSmall);
    ASSERT_TRUE(ptr.ok());
    cache_->Free(ptr.value());
  });
  const double raw = per_pair_us([&] {
    Result<void*> ptr = backend_->Allocate(kGpu, kSmall, 256);
    ASSERT_TRUE(ptr.ok());
    backend_->Free(kGpu, ptr.value());
  });
  DeviceBlockCache::Stats stats = cache_->stats();
  std::printf(
      "BLOCKCACHE alloc+free %.2f us cached vs %.2f us cudaMalloc+cudaFree (%.1fx), "
      "%llu reused of %d, %llu fences\n",
      cached, raw, raw / cached, static_cast<unsigned long long>(stats.reused), kPairs,
      static_cast<unsigned long long>(stats.fences));
  EXPECT_GT(stats.reused, 0u);
}

}  // namespace
}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// CudaBackend on a real GPU (CUDA builds; every test skips without a device):
//   - a copy given no stream has landed when it returns, also into device memory from pageable
//     host memory and between device buffers, so work on the host's non-blocking streams after
//     it reads the copied bytes;
//   - strided copies that cudaMemcpy2D refuses (one row, pitches past 2^31 - 1) still copy;
//   - the backend keeps the caller's current device (with two GPUs);
//   - during a runtime capture fences neither record nor ask CUDA, and the capture stays valid;
//   - pinned host memory takes page alignment.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "device/cuda_backend.h"
#include "device/device.h"

namespace mstar {
namespace {

constexpr DLDevice kGpu{kDLCUDA, 0};
constexpr DLDevice kCpu{kDLCPU, 0};

TEST(GpuCudaBackend, ACopyWithoutAStreamHasLandedWhenItReturns) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  DeviceBackend* backend = BackendFor(kGpu).value();
  constexpr uint64_t kBytes = uint64_t{64} << 20;  // large enough for the DMA to take a while
  void* stream = backend->CreateStream(kGpu, 0).value();
  void* a = backend->Allocate(kGpu, kBytes, 256).value();
  void* b = backend->Allocate(kGpu, kBytes, 256).value();
  std::vector<uint8_t> pageable(kBytes), back(kBytes);
  for (int round = 1; round <= 4; ++round) {
    std::fill(pageable.begin(), pageable.end(), static_cast<uint8_t>(round));
    ASSERT_TRUE(backend->Copy(a, kGpu, pageable.data(), kCpu, kBytes, nullptr).ok());
    ASSERT_TRUE(backend->Copy(b, kGpu, a, kGpu, kBytes, nullptr).ok());
    // Read back on a non-blocking stream, which nothing orders after the legacy stream.
    ASSERT_EQ(cudaMemcpyAsync(back.data(), b, kBytes, cudaMemcpyDefault,
                              static_cast<cudaStream_t>(stream)),
              cudaSuccess);
    ASSERT_TRUE(backend->SynchronizeStream(kGpu, stream).ok());
    EXPECT_EQ(back.front(), round);
    EXPECT_EQ(back.back(), round);
  }
  backend->Free(kGpu, a);
  backend->Free(kGpu, b);
  backend->DestroyStream(kGpu, stream);
}

// memory_copy_2d's cases that cudaMemcpy2D refuses: one row with a pitch under its width, and
// pitches past 2^31 - 1 bytes (then a copy per row).
TEST(GpuCudaBackend, StridedCopiesCudaWouldRefuseStillCopy) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  DeviceBackend* backend = BackendFor(kGpu).value();
  std::vector<uint8_t> row(64, 3), back(64, 0);
  void* one = backend->Allocate(kGpu, 64, 256).value();
  ASSERT_TRUE(backend->Copy2D(one, 8, kGpu, row.data(), 8, kCpu, 64, 1, nullptr).ok());
  ASSERT_TRUE(backend->Copy(back.data(), kCpu, one, kGpu, 64, nullptr).ok());
  EXPECT_EQ(back, row);
  backend->Free(kGpu, one);

  constexpr uint64_t kPitch = (uint64_t{1} << 31) + 64;  // past the largest pitch CUDA takes
  Result<void*> wide = backend->Allocate(kGpu, kPitch + 64, 256);
  if (!wide.ok()) GTEST_SKIP() << "no room for a 2 GiB buffer: " << wide.status().ToString();
  std::vector<uint8_t> rows(128);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<uint8_t>(i);
  // Two rows of 64 bytes, kPitch apart on the device, packed on the host.
  ASSERT_TRUE(
      backend->Copy2D(wide.value(), kPitch, kGpu, rows.data(), 64, kCpu, 64, 2, nullptr).ok());
  std::vector<uint8_t> second(64);
  ASSERT_TRUE(backend
                  ->Copy(second.data(), kCpu, static_cast<uint8_t*>(wide.value()) + kPitch, kGpu,
                         64, nullptr)
                  .ok());
  EXPECT_EQ(second, std::vector<uint8_t>(rows.begin() + 64, rows.end()));
  backend->Free(kGpu, wide.value());
}

// The backend makes the device it acts on current only while it acts: the caller's stays.
TEST(GpuCudaBackend, TheCallersCurrentDeviceIsKept) {
  if (CudaDeviceCount() < 2) GTEST_SKIP() << "needs two CUDA devices";
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  DeviceBackend* backend = BackendFor(kGpu).value();
  Result<void*> ptr = backend->Allocate(kGpu, 4096, 256);
  ASSERT_TRUE(ptr.ok());
  Result<void*> stream = backend->CreateStream(kGpu, 0);
  ASSERT_TRUE(stream.ok());
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, 1);
  backend->DestroyStream(kGpu, stream.value());
  backend->Free(kGpu, ptr.value());
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, 1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

// While the runtime captures on the device, a fence asked about answers "not done" without asking
// CUDA and no fence is recorded (either would be captured into, or invalidate, the graph); the
// capture stays valid, and afterwards the fence answers from its events.
TEST(GpuCudaBackend, FencesDuringACaptureNeitherRecordNorAskAndLeaveItValid) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  CudaBackend& backend = CudaBackend::Instance();
  Result<void*> stream = backend.CreateStream(kGpu, 0);
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  Result<void*> buffer = backend.Allocate(kGpu, 4096, 256);
  ASSERT_TRUE(buffer.ok()) << buffer.status().ToString();
  Result<std::unique_ptr<DeviceFence>> fence = backend.RecordFence(kGpu);
  ASSERT_TRUE(fence.ok()) << fence.status().ToString();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // its events have completed
  auto native = static_cast<cudaStream_t>(stream.value());

  backend.CaptureStarting(kGpu.device_id);
  ASSERT_EQ(cudaStreamBeginCapture(native, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  Result<bool> during = fence.value()->Done();
  Result<std::unique_ptr<DeviceFence>> refused = backend.RecordFence(kGpu);
  ASSERT_EQ(cudaMemsetAsync(buffer.value(), 1, 4096, native), cudaSuccess);
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(native, &graph);
  backend.CaptureEnded(kGpu.device_id);
  ASSERT_EQ(ended, cudaSuccess) << cudaGetErrorString(ended);
  ASSERT_NE(graph, nullptr);
  ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  ASSERT_TRUE(during.ok()) << during.status().ToString();
  EXPECT_FALSE(during.value()) << "a fence is not asked about while the device captures";
  EXPECT_EQ(refused.status().code(), Code::kUnavailable) << refused.status().ToString();

  Result<bool> after = fence.value()->Done();
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_TRUE(after.value());
  backend.Free(kGpu, buffer.value());
  backend.DestroyStream(kGpu, stream.value());
}

// Pinned host memory serves alignments up to a page (as host memory does on CPU builds).
TEST(GpuCudaBackend, PinnedHostMemoryIsPageAligned) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  constexpr DLDevice kPinned{kDLCUDAHost, 0};
  DeviceBackend* backend = BackendFor(kPinned).value();
  Result<void*> page = backend->Allocate(kPinned, 10000, 4096);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(page.value()) % 4096, 0u);
  backend->Free(kPinned, page.value());
  Result<void*> over = backend->Allocate(kPinned, 10000, 8192);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), Code::kInvalidArgument);
  Result<void*> device = backend->Allocate(kGpu, 10000, 4096);
  EXPECT_EQ(device.status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace mstar

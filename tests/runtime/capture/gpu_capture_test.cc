// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The CUDA capture backend on a real GPU (CUDA builds; every test skips without a device). The
// captured work is kernel-free (the runtime links no kernels): device copies and memsets through
// the device layer, which stream capture records as graph nodes like any kernel.
//   - replay equals eager at every bucket
//   - no slot is overwritten while its replay is in flight (held by a host function, while every
//     slot the pool leases meanwhile is poisoned)
//   - pinned host <-> device round trips are byte-exact; prints OFFLOAD lines for device_check.sh
//   - a launch-bound step of many small operations, eager vs replay; prints STEP lines
//   - outside a capture, the backend keeps the caller's current device (with two GPUs)
//   - a graph that allocates memory it does not free (cudaMallocAsync's allocator) replays again
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "capture/capture_backend.h"
#include "capture/slot_pool.h"
#include "device/device.h"
#include "host/host_objects.h"
#include "support/test_support.h"

namespace mstar {
namespace {

constexpr DLDevice kGpu{kDLCUDA, 0};
constexpr DLDevice kPinned{kDLCUDAHost, 0};

class GpuCapture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    device_ = BackendFor(kGpu).value();
    Result<std::unique_ptr<CaptureBackend>> made = MakeCaptureBackend(kGpu);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    backend_ = std::move(made).value();
    ASSERT_EQ(backend_->name(), "cuda_graph");
    stream_.device = kGpu;
    stream_.backend = device_;
    stream_.native = device_->CreateStream(kGpu, 0).value();
  }
  void TearDown() override {
    if (stream_.native != nullptr) device_->DestroyStream(kGpu, stream_.native);
    for (GraphHandle graph : graphs_) backend_->DestroyGraph(graph);
    for (auto& [device, ptr] : allocations_) device_->Free(device, ptr);
  }

  char* Alloc(DLDevice device, uint64_t bytes) {
    Result<void*> ptr = device_->Allocate(device, bytes, 256);
    EXPECT_TRUE(ptr.ok()) << ptr.status().ToString();
    allocations_.push_back({device, ptr.value()});
    return static_cast<char*>(ptr.value());
  }
  void Sync() { ASSERT_TRUE(device_->SynchronizeStream(kGpu, stream_.native).ok()); }
  cudaStream_t native() { return static_cast<cudaStream_t>(stream_.native); }

  // The step under test: out = in, then the first 64 bytes of out set to 0x5a.
  void Step(char* out, const char* in, uint64_t bytes) {
    ASSERT_TRUE(device_->Copy(out, kGpu, in, kGpu, bytes, stream_.native).ok());
    ASSERT_EQ(cudaMemsetAsync(out, 0x5a, 64, native()), cudaSuccess);
  }

  ExecHandle Capture(char* out, const char* in, uint64_t bytes) {
    EXPECT_TRUE(backend_->BeginCapture(&stream_).ok());
    Step(out, in, bytes);
    Result<GraphHandle> graph = backend_->EndCapture(&stream_);
    EXPECT_TRUE(graph.ok()) << graph.status().ToString();
    Result<ExecHandle> exec = backend_->Instantiate(graph.value());
    EXPECT_TRUE(exec.ok()) << exec.status().ToString();
    graphs_.push_back(graph.value());
    return exec.value();
  }

  std::vector<char> Read(const char* device_ptr, uint64_t bytes) {
    std::vector<char> host(bytes);
    EXPECT_TRUE(
        device_->Copy(host.data(), DLDevice{kDLCPU, 0}, device_ptr, kGpu, bytes, nullptr).ok());
    return host;
  }
  void Write(char* device_ptr, const std::vector<char>& host) {
    ASSERT_TRUE(
        device_->Copy(device_ptr, kGpu, host.data(), DLDevice{kDLCPU, 0}, host.size(), nullptr)
            .ok());
  }

  DeviceBackend* device_ = nullptr;
  std::unique_ptr<CaptureBackend> backend_;
  mstar_stream stream_;
  std::vector<std::pair<DLDevice, void*>> allocations_;
  std::vector<GraphHandle> graphs_;
};

std::vector<char> Pattern(uint64_t bytes, uint32_t seed) {
  std::vector<char> data(bytes);
  uint32_t x = seed * 2654435761u + 1;
  for (char& c : data) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return data;
}

TEST_F(GpuCapture, ReplayEqualsEagerAtEveryBucket) {
  for (uint32_t batch : {1u, 2u, 4u, 8u, 16u, 32u}) {
    const uint64_t bytes = uint64_t{batch} * 4096;
    char* in = Alloc(kGpu, bytes);
    char* replay_out = Alloc(kGpu, bytes);
    char* eager_out = Alloc(kGpu, bytes);
    Write(in, Pattern(bytes, 0));
    ExecHandle exec = Capture(replay_out, in, bytes);
    // New inputs after the capture: the replay must read them, as a real step would.
    Write(in, Pattern(bytes, batch));
    ASSERT_TRUE(backend_->Launch(exec, &stream_).ok());
    Step(eager_out, in, bytes);
    Sync();
    EXPECT_EQ(Read(replay_out, bytes), Read(eager_out, bytes)) << "batch " << batch;
    backend_->DestroyExec(exec);
  }
}

// Slot a's replay is held in flight (its stream waits on a host function until released) while
// the test plays the plan thread: it leases every slot the pool gives and poisons each one's
// input at once, from a stream that does not wait for the replay. The pool must give b and then
// nothing (a's fence is not done), so a's replay reads its own input.
TEST_F(GpuCapture, NoSlotIsOverwrittenWhileItsReplayIsInFlight) {
  const uint64_t bytes = uint64_t{1} << 20;
  CaptureEvent site;
  site.node = "gpu";
  site.walk = "decode";
  site.bucket = {8, 8};
  SlotPool pool(backend_.get(), site, 0, 2);
  char* in[2] = {Alloc(kGpu, bytes), Alloc(kGpu, bytes)};
  char* out[2] = {Alloc(kGpu, bytes), Alloc(kGpu, bytes)};
  for (int s = 0; s < 2; ++s) {
    pool.slot(s).exec = Capture(out[s], in[s], bytes);
    Write(in[s], Pattern(bytes, 10 + s));
  }
  std::optional<int32_t> a = pool.Lease(8);
  ASSERT_TRUE(a);
  std::atomic<bool> release{false};
  ASSERT_EQ(cudaLaunchHostFunc(
                native(),
                [](void* flag) {
                  while (!static_cast<std::atomic<bool>*>(flag)->load())
                    std::this_thread::sleep_for(std::chrono::microseconds(50));
                },
                &release),
            cudaSuccess);
  ASSERT_TRUE(backend_->Launch(pool.slot(*a).exec, &stream_).ok());
  Result<FenceHandle> fence = backend_->RecordFence(&stream_);
  ASSERT_TRUE(fence.ok()) << fence.status().ToString();
  pool.Launched(*a, fence.value());
  EXPECT_FALSE(backend_->FenceDone(fence.value())) << "the replay is held";

  cudaStream_t poison = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&poison, cudaStreamNonBlocking), cudaSuccess);
  std::vector<int32_t> leased;
  while (leased.size() < 2) {
    std::optional<int32_t> next = pool.Lease(8);
    if (!next) break;
    leased.push_back(*next);
    ASSERT_EQ(cudaMemsetAsync(in[*next], 0xee, bytes, poison), cudaSuccess);
  }
  ASSERT_EQ(cudaStreamSynchronize(poison), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(poison), cudaSuccess);
  EXPECT_EQ(leased, std::vector<int32_t>{1 - *a}) << "only the other slot may be leased";

  release = true;
  Sync();
  std::vector<char> expected = Pattern(bytes, 10 + *a);
  std::memset(expected.data(), 0x5a, 64);
  EXPECT_TRUE(Read(out[*a], bytes) == expected) << "the in-flight slot read poisoned input";
  // Its replay done, a is leased again.
  for (int32_t id : leased) pool.Release(id);
  std::optional<int32_t> again = pool.Lease(8);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *a);
  pool.Release(*again);
}

TEST_F(GpuCapture, PinnedOffloadRoundTripsAreByteExact) {
  const uint64_t bytes = uint64_t{256} << 20;
  char* pinned = Alloc(kPinned, bytes);
  char* back = Alloc(kPinned, bytes);
  char* device = Alloc(kGpu, bytes);
  std::vector<char> pattern = Pattern(bytes, 7);
  std::memcpy(pinned, pattern.data(), bytes);
  // Offload direction (device -> pinned host) through the device layer, timed; then raw
  // cudaMemcpyAsync on the same buffers as the copy peak.
  ASSERT_TRUE(device_->Copy(device, kGpu, pinned, kPinned, bytes, stream_.native).ok());
  Sync();
  const int reps = 5;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) {
    ASSERT_TRUE(device_->Copy(back, kPinned, device, kGpu, bytes, stream_.native).ok());
  }
  Sync();
  double offload = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) {
    ASSERT_EQ(cudaMemcpyAsync(back, device, bytes, cudaMemcpyDeviceToHost, native()), cudaSuccess);
  }
  Sync();
  double peak = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(std::memcmp(back, pattern.data(), bytes), 0) << "the round trip changed bytes";
  std::printf("OFFLOAD bytes=%llu offload_gbps=%.2f peak_gbps=%.2f\n",
              static_cast<unsigned long long>(bytes), test::GBps(bytes * reps, offload),
              test::GBps(bytes * reps, peak));
}

TEST_F(GpuCapture, LaunchBoundStepEagerVersusReplay) {
  constexpr int kOps = 64;  // a decode step is many small kernels
  for (uint32_t batch : {1u, 8u, 32u}) {
    const uint64_t bytes = uint64_t{batch} * 2048;
    char* a = Alloc(kGpu, bytes);
    char* b = Alloc(kGpu, bytes);
    auto step = [&] {
      for (int i = 0; i < kOps; ++i) {
        ASSERT_TRUE(
            device_->Copy(i % 2 ? a : b, kGpu, i % 2 ? b : a, kGpu, bytes, stream_.native).ok());
      }
    };
    ASSERT_TRUE(backend_->BeginCapture(&stream_).ok());
    step();
    GraphHandle graph = backend_->EndCapture(&stream_).value();
    ExecHandle exec = backend_->Instantiate(graph).value();
    graphs_.push_back(graph);
    const int reps = 200;
    step();
    Sync();
    auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) step();
    Sync();
    double eager = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(backend_->Launch(exec, &stream_).ok());
    Sync();
    start = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) ASSERT_TRUE(backend_->Launch(exec, &stream_).ok());
    Sync();
    double replay = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("STEP batch=%u ops=%d eager_us=%.1f replay_us=%.1f\n", batch, kOps,
                eager / reps * 1e6, replay / reps * 1e6);
    backend_->DestroyExec(exec);
  }
}

// A plugin whose allocator is cudaMallocAsync (LibTorch's with backend:cudaMallocAsync) leaves its
// outputs allocated in the graph; the graph must still launch more than once, at the same address.
TEST_F(GpuCapture, AGraphThatAllocatesWithoutFreeingReplaysAgain) {
  char* in = Alloc(kGpu, 4096);
  Write(in, Pattern(4096, 7));
  void* out = nullptr;
  ASSERT_TRUE(backend_->BeginCapture(&stream_).ok());
  ASSERT_EQ(cudaMallocAsync(&out, 4096, native()), cudaSuccess);
  Step(static_cast<char*>(out), in, 4096);
  Result<GraphHandle> graph = backend_->EndCapture(&stream_);
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  graphs_.push_back(graph.value());
  Result<ExecHandle> exec = backend_->Instantiate(graph.value());
  ASSERT_TRUE(exec.ok()) << exec.status().ToString();
  std::vector<char> expected = Pattern(4096, 7);
  std::memset(expected.data(), 0x5a, 64);
  for (int launch = 0; launch < 3; ++launch) {
    Status launched = backend_->Launch(exec.value(), &stream_);
    ASSERT_TRUE(launched.ok()) << "launch " << launch << ": " << launched.ToString();
    Sync();
    EXPECT_EQ(Read(static_cast<char*>(out), 4096), expected) << "launch " << launch;
  }
  ASSERT_EQ(cudaFreeAsync(out, native()), cudaSuccess);
  Sync();
  backend_->DestroyExec(exec.value());
}

// A capture whose work ran elsewhere (a forward that launched on another stream than the one
// captured) records an empty graph, which would replay nothing: it is refused, saying why.
TEST_F(GpuCapture, ACaptureThatRecordedNoWorkIsRefused) {
  ASSERT_TRUE(backend_->BeginCapture(&stream_).ok());
  Result<GraphHandle> graph = backend_->EndCapture(&stream_);
  ASSERT_FALSE(graph.ok());
  EXPECT_NE(graph.status().message().find("launched no device work on the capture stream"),
            std::string::npos)
      << graph.status().ToString();
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
}

// A fence asked about while its work still runs answers not done and leaves no error on the
// thread: a plugin's next launch check (cudaGetLastError) must not see one.
TEST_F(GpuCapture, AFenceStillPendingLeavesNoErrorOnTheThread) {
  const uint64_t bytes = uint64_t{512} << 20;
  char* big = Alloc(kGpu, bytes);
  for (int i = 0; i < 8; ++i) ASSERT_EQ(cudaMemsetAsync(big, i, bytes, native()), cudaSuccess);
  Result<FenceHandle> fence = backend_->RecordFence(&stream_);
  ASSERT_TRUE(fence.ok()) << fence.status().ToString();
  int pending = 0;
  while (!backend_->FenceDone(fence.value())) {
    ++pending;
    ASSERT_EQ(cudaPeekAtLastError(), cudaSuccess) << "after " << pending << " queries";
  }
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  backend_->DestroyFence(fence.value());
}

// BeginCapture leaves the capture's device current (the forward it captures runs there);
// instantiating and fencing make the caller's device current again.
TEST_F(GpuCapture, TheCallersCurrentDeviceIsKeptOutsideACapture) {
  if (CudaDeviceCount() < 2) GTEST_SKIP() << "needs two CUDA devices";
  char* in = Alloc(kGpu, 4096);
  char* out = Alloc(kGpu, 4096);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_TRUE(backend_->BeginCapture(&stream_).ok());
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, 0);
  Step(out, in, 4096);
  Result<GraphHandle> graph = backend_->EndCapture(&stream_);
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  graphs_.push_back(graph.value());
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  Result<ExecHandle> exec = backend_->Instantiate(graph.value());
  ASSERT_TRUE(exec.ok()) << exec.status().ToString();
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, 1);
  ASSERT_TRUE(backend_->Launch(exec.value(), &stream_).ok());
  Result<FenceHandle> fence = backend_->RecordFence(&stream_);
  ASSERT_TRUE(fence.ok()) << fence.status().ToString();
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, 1);
  backend_->WaitFence(fence.value());
  backend_->DestroyFence(fence.value());
  backend_->DestroyExec(exec.value());
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

}  // namespace
}  // namespace mstar

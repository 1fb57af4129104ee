// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The host table's streams and events across backends on a real GPU (CUDA builds; every test
// skips without a device): a host stream told to wait for a CUDA event returns only once the
// event's work has landed (its later work runs inline), and a host event recorded on a CUDA
// stream completes only after that stream's work.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "device/device.h"
#include "host/host_api.h"

namespace mstar {
namespace {

constexpr DLDevice kGpu{kDLCUDA, 0};
constexpr DLDevice kCpu{kDLCPU, 0};
constexpr uint64_t kBytes = uint64_t{256} << 20;  // a copy that takes a while

class GpuStreamServices : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    ASSERT_EQ(api()->stream_create(ctx(), kGpu, 0, &gpu_stream_), nullptr);
    ASSERT_EQ(api()->stream_create(ctx(), kCpu, 0, &cpu_stream_), nullptr);
    ASSERT_EQ(api()->memory_alloc(ctx(), kGpu, kBytes, 256, 0, &device_), nullptr);
    ASSERT_EQ(api()->memory_alloc(ctx(), kCpu, kBytes, 256, MSTAR_MEMORY_PINNED, &pinned_),
              nullptr);
  }
  void TearDown() override {
    if (device_ != nullptr) api()->memory_free(ctx(), device_);
    if (pinned_ != nullptr) api()->memory_free(ctx(), pinned_);
    api()->stream_release(gpu_stream_);
    api()->stream_release(cpu_stream_);
  }
  // Queues a large device-to-pinned copy on the GPU stream.
  void QueueCopy() {
    ASSERT_EQ(api()->memory_copy(pinned_, kCpu, device_, kGpu, kBytes, gpu_stream_), nullptr);
  }
  const mstar_host_api_t* api() { return host_.table(); }
  mstar_host_context_t* ctx() { return host_.library_context(); }

  HostApi host_{"stream_services_gpu_test"};
  mstar_stream_t* gpu_stream_ = nullptr;
  mstar_stream_t* cpu_stream_ = nullptr;
  void* device_ = nullptr;
  void* pinned_ = nullptr;
};

TEST_F(GpuStreamServices, AHostStreamWaitingForACudaEventWaitsForItsWork) {
  mstar_event_t* event = nullptr;
  ASSERT_EQ(api()->event_create(ctx(), kGpu, &event), nullptr);
  for (int round = 0; round < 4; ++round) {
    QueueCopy();
    ASSERT_EQ(api()->event_record(event, gpu_stream_), nullptr);
    ASSERT_EQ(api()->stream_wait_event(cpu_stream_, event), nullptr);
    uint32_t done = 0;
    ASSERT_EQ(api()->event_query(event, &done), nullptr);
    EXPECT_EQ(done, 1u) << "round " << round;
  }
  api()->event_release(event);
}

TEST_F(GpuStreamServices, AHostEventRecordedOnACudaStreamCompletesAfterItsWork) {
  mstar_event_t* event = nullptr;
  ASSERT_EQ(api()->event_create(ctx(), kCpu, &event), nullptr);
  mstar_event_t* gpu_event = nullptr;
  ASSERT_EQ(api()->event_create(ctx(), kGpu, &gpu_event), nullptr);
  for (int round = 0; round < 4; ++round) {
    QueueCopy();
    ASSERT_EQ(api()->event_record(gpu_event, gpu_stream_), nullptr);
    ASSERT_EQ(api()->event_record(event, gpu_stream_), nullptr);
    uint32_t done = 0;
    ASSERT_EQ(api()->event_query(gpu_event, &done), nullptr);
    EXPECT_EQ(done, 1u) << "round " << round << ": the host event was recorded before the copy";
  }
  api()->event_release(gpu_event);
  api()->event_release(event);
}

}  // namespace
}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// tier_host with device memory in its batches, on a stream: a device copy is asynchronous, a
// host copy is a memcpy, so within one batch tier_host must let the device copies queued before
// a host copy land first. Blocks of 64 MiB, so that a copy not waited for is still in flight
// when the memcpy runs. Label gpu (skips without a CUDA device; scripts/device_check.sh runs it).
#include <gtest/gtest.h>

#include <vector>

#include "device/device.h"
#include "tier_harness.h"

namespace mstar::test {
namespace {

constexpr uint64_t kBlock = 64ull << 20;
constexpr DLDevice kHost{kDLCPU, 0};
constexpr DLDevice kGpu{kDLCUDA, 0};

class TierHostGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    auto made = TierHarness::Create("tier_host", "");
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    tier_ = std::move(made.value());
    ASSERT_TRUE(TakeStatus(host()->stream_create(tier_->context(), kGpu, 0, &stream_)).ok());
  }
  void TearDown() override {
    if (!tier_) return;
    for (void* p : device_) host()->memory_free(tier_->context(), p);
    if (stream_ != nullptr) host()->stream_release(stream_);
  }
  const mstar_host_api_t* host() const { return tier_->host(); }
  // kBlock bytes of device memory holding bytes (or uninitialised when empty).
  void* DeviceBuffer(const std::vector<uint8_t>& bytes = {}) {
    void* p = nullptr;
    EXPECT_TRUE(TakeStatus(host()->memory_alloc(tier_->context(), kGpu, kBlock, 0, 0, &p)).ok());
    device_.push_back(p);
    if (!bytes.empty()) Copy(p, kGpu, bytes.data(), kHost);
    return p;
  }
  void Copy(void* dst, DLDevice dst_device, const void* src, DLDevice src_device) {
    ASSERT_TRUE(
        TakeStatus(host()->memory_copy(dst, dst_device, src, src_device, kBlock, nullptr)).ok());
  }
  static mstar_tier_op_t OnGpu(mstar_tier_op_t op) {
    op.device = kGpu;
    return op;
  }

  std::unique_ptr<TierHarness> tier_;
  mstar_stream_t* stream_ = nullptr;
  std::vector<void*> device_;
};

// A block PUT from device memory and read into host memory in the same batch: the GET's memcpy
// reads the block only once the PUT's copy has landed.
TEST_F(TierHostGpu, AHostGetAfterADevicePutOfTheBlockReadsItsBytes) {
  const std::vector<uint8_t> a = Pattern(kBlock, 1);
  void* source = DeviceBuffer(a);
  std::vector<uint8_t> back(kBlock);
  std::vector<mstar_tier_op_t> ops = {OnGpu(Op(MSTAR_TIER_OP_PUT, KeyOf(1), source, kBlock)),
                                      Op(MSTAR_TIER_OP_GET, KeyOf(1), back.data(), kBlock)};
  EXPECT_EQ(tier_->Run(ops, stream_), (std::vector<uint32_t>{MSTAR_OK, MSTAR_OK}));
  EXPECT_TRUE(back == a);
}

// A block read into device memory, then removed, then a host PUT of the same size (which takes
// the removed block's memory, kept for reuse): the PUT's memcpy must not overwrite that memory
// before the GET's copy out of it has landed.
TEST_F(TierHostGpu, AHostPutNeverOverwritesABlockADeviceGetStillReads) {
  const std::vector<uint8_t> a = Pattern(kBlock, 2), b = Pattern(kBlock, 3);
  ASSERT_EQ(tier_->Put(1, a), MSTAR_OK);
  void* target = DeviceBuffer();
  std::vector<mstar_tier_op_t> ops = {
      OnGpu(Op(MSTAR_TIER_OP_GET, KeyOf(1), target, kBlock)), Op(MSTAR_TIER_OP_REMOVE, KeyOf(1)),
      Op(MSTAR_TIER_OP_PUT, KeyOf(2), const_cast<uint8_t*>(b.data()), kBlock)};
  EXPECT_EQ(tier_->Run(ops, stream_), (std::vector<uint32_t>{MSTAR_OK, MSTAR_OK, MSTAR_OK}));
  std::vector<uint8_t> got(kBlock);
  Copy(got.data(), kHost, target, kGpu);
  EXPECT_TRUE(got == a);
  std::vector<uint8_t> stored(kBlock);
  ASSERT_EQ(tier_->Get(2, stored), MSTAR_OK);
  EXPECT_TRUE(stored == b);
}

}  // namespace
}  // namespace mstar::test

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// tier_host when an op throws midway through a batch (out of memory building a device copy's
// closure, a run's keys or a message): the op fails by itself, the batch goes on, and submit
// succeeds only once every device copy it queued has landed. A submit that failed instead would
// tell the caller nothing was started while copies into and out of the blocks were in flight.
//
// The instance is made from tier_host's own table with the host services of a real instance,
// except two the test controls: memory_copy copies host bytes (the "device" memory is host
// memory, so no GPU is needed), counts its calls and throws std::bad_alloc from the one it is
// told to (standing in for an allocation in the op failing at that point), and
// stream_synchronize records that the copies queued so far have landed.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "config/config_tree.h"
#include "host/host_api.h"
#include "tier_harness.h"

namespace mstar::test {
namespace {

constexpr DLDevice kFakeGpu{kDLCUDA, 0};
constexpr uint64_t kBlock = 4096;

// What the fake services saw. Global: the host table's functions take no user data.
struct FakeDevice {
  int copies = 0;         // memory_copy calls
  int throw_on_copy = 0;  // the call (1-based) that throws; 0: none
  int in_flight = 0;      // copies made since the last stream_synchronize
  int synchronizations = 0;
  bool sync_fails = false;  // stream_synchronize reports a device error (once)
  mstar_status_t* (*status_new)(uint32_t, const char*) = nullptr;
};
FakeDevice fake;

mstar_status_t* FakeMemoryCopy(void* dst, DLDevice, const void* src, DLDevice, uint64_t size,
                               mstar_stream_t*) {
  if (++fake.copies == fake.throw_on_copy) throw std::bad_alloc();
  std::memcpy(dst, src, size);
  ++fake.in_flight;
  return nullptr;
}

mstar_status_t* FakeStreamSynchronize(mstar_stream_t*) {
  ++fake.synchronizations;
  fake.in_flight = 0;
  if (!std::exchange(fake.sync_fails, false)) return nullptr;
  return fake.status_new(MSTAR_ERR_INTERNAL, "an illegal memory access was encountered");
}

class TierHostThrow : public ::testing::Test {
 protected:
  void SetUp() override {
    fake = FakeDevice{};
    auto made = TierHarness::Create("tier_host", "");
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    real_ = std::move(made.value());
    host_ = *real_->host();
    host_.memory_copy = &FakeMemoryCopy;
    host_.stream_synchronize = &FakeStreamSynchronize;
    fake.status_new = host_.status_new;
    tier_ = real_->handle()->vtable;

    mstar_create_args_t args{};
    args.struct_size = sizeof(args);
    args.struct_version = MSTAR_ABI_MINOR;
    args.host = &host_;
    args.context = real_->context();  // the real instance's: its memory services account blocks
    args.instance_name = "tier_host_throw";
    args.config = config_.root();
    args.device = DLDevice{kDLCPU, 0};
    args.world_size = 1;
    args.base_dir = "";
    ASSERT_TRUE(TakeStatus(tier_->create(&args, &self_)).ok());
  }
  void TearDown() override {
    if (self_ != nullptr) tier_->destroy(self_);
  }

  // Submits ops on the fake stream and releases the batch; the submit's status.
  Status Submit(std::vector<mstar_tier_op_t>& ops) {
    mstar_tier_batch_t* batch = nullptr;
    Status submitted = TakeStatus(
        tier_->submit(self_, ops.data(), static_cast<uint32_t>(ops.size()), stream(), &batch));
    if (submitted.ok()) tier_->release(self_, batch);
    return submitted;
  }
  // A stream only the fake services see.
  mstar_stream_t* stream() { return reinterpret_cast<mstar_stream_t*>(&fake); }

  // The block under key read back through host memory, or empty when the GET fails.
  std::vector<uint8_t> Read(uint64_t key) {
    std::vector<uint8_t> back(kBlock);
    std::vector<mstar_tier_op_t> ops = {Op(MSTAR_TIER_OP_GET, KeyOf(key), back.data(), kBlock)};
    if (!Submit(ops).ok() || ops[0].result != MSTAR_OK) return {};
    return back;
  }

  static mstar_tier_op_t DevicePut(uint64_t key, uint8_t* data) {
    mstar_tier_op_t op = Op(MSTAR_TIER_OP_PUT, KeyOf(key), data, kBlock);
    op.device = kFakeGpu;
    return op;
  }

  std::unique_ptr<TierHarness> real_;
  ConfigTree config_;  // an empty table
  mstar_host_api_t host_{};
  const mstar_tier_vtable_t* tier_ = nullptr;
  void* self_ = nullptr;
};

// Three device PUTs, one block each (apart in memory, so no run); the second's copy throws.
TEST_F(TierHostThrow, AnOpThatThrowsFailsAloneAndSubmitWaitsForTheCopiesBeforeIt) {
  std::vector<uint8_t> source = Pattern(3 * 2 * kBlock, 1);
  std::vector<mstar_tier_op_t> ops = {DevicePut(0, source.data()),
                                      DevicePut(1, source.data() + 2 * kBlock),
                                      DevicePut(2, source.data() + 4 * kBlock)};
  fake.throw_on_copy = 2;
  const Status submitted = Submit(ops);
  EXPECT_EQ(fake.in_flight, 0) << "submit returned with device copies in flight";
  ASSERT_TRUE(submitted.ok()) << submitted.ToString();
  EXPECT_GE(fake.synchronizations, 1);
  EXPECT_EQ(ops[0].result, MSTAR_OK);
  EXPECT_EQ(ops[1].result, MSTAR_ERR_RESOURCE_EXHAUSTED);
  EXPECT_EQ(ops[2].result, MSTAR_OK);

  EXPECT_EQ(Read(0), std::vector<uint8_t>(source.begin(), source.begin() + kBlock));
  EXPECT_TRUE(Read(1).empty());
  EXPECT_EQ(Read(2),
            std::vector<uint8_t>(source.begin() + 4 * kBlock, source.begin() + 5 * kBlock));
}

// A device PUT, then a run of two (back to back in memory: one copy) whose copy throws: the
// run's first op fails, the one after it is put on its own.
TEST_F(TierHostThrow, ARunThatThrowsFailsItsFirstOpAndTheRestRunAlone) {
  std::vector<uint8_t> source = Pattern(4 * kBlock, 2);
  std::vector<mstar_tier_op_t> ops = {DevicePut(0, source.data()),
                                      DevicePut(1, source.data() + 2 * kBlock),
                                      DevicePut(2, source.data() + 3 * kBlock)};
  fake.throw_on_copy = 2;
  const Status submitted = Submit(ops);
  EXPECT_EQ(fake.in_flight, 0) << "submit returned with device copies in flight";
  ASSERT_TRUE(submitted.ok()) << submitted.ToString();
  EXPECT_EQ(ops[0].result, MSTAR_OK);
  EXPECT_EQ(ops[1].result, MSTAR_ERR_RESOURCE_EXHAUSTED);
  EXPECT_EQ(ops[2].result, MSTAR_OK);
  EXPECT_EQ(fake.copies, 3);

  EXPECT_EQ(Read(0), std::vector<uint8_t>(source.begin(), source.begin() + kBlock));
  EXPECT_TRUE(Read(1).empty());
  EXPECT_EQ(Read(2), std::vector<uint8_t>(source.begin() + 3 * kBlock, source.end()));
}

// A device copy that fails (its stream reports an error) fails its PUT and drops the block it
// wrote (its bytes are unknown). Queued copies land before an op that is not one runs, so the
// failure is known before the zero-size PUT of the same key (whose block stays), and the later
// device PUT, whose copy landed before the CONTAINS answered for it, stands.
TEST_F(TierHostThrow, AFailedDeviceCopyDropsOnlyTheBlockItWrote) {
  std::vector<uint8_t> source = Pattern(2 * kBlock, 3);
  std::vector<mstar_tier_op_t> ops = {
      DevicePut(0, source.data()), Op(MSTAR_TIER_OP_PUT, KeyOf(0), nullptr, 0),
      DevicePut(1, source.data() + kBlock), Op(MSTAR_TIER_OP_CONTAINS, KeyOf(1))};
  fake.sync_fails = true;
  const Status submitted = Submit(ops);
  ASSERT_TRUE(submitted.ok()) << submitted.ToString();
  EXPECT_EQ(ops[0].result, MSTAR_ERR_INTERNAL);
  EXPECT_EQ(ops[1].result, MSTAR_OK);
  EXPECT_EQ(ops[2].result, MSTAR_OK);
  EXPECT_EQ(ops[3].result, MSTAR_OK);
  std::vector<mstar_tier_op_t> after = {Op(MSTAR_TIER_OP_CONTAINS, KeyOf(0)),
                                        Op(MSTAR_TIER_OP_CONTAINS, KeyOf(1))};
  ASSERT_TRUE(Submit(after).ok());
  EXPECT_EQ(after[0].result, MSTAR_OK) << "the zero-size block put after the failed copy is kept";
  EXPECT_EQ(after[1].result, MSTAR_OK);
  EXPECT_EQ(Read(1), std::vector<uint8_t>(source.begin() + kBlock, source.end()));
}

}  // namespace
}  // namespace mstar::test

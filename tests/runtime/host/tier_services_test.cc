// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The tier services: what the host checks between a resource and the tier it calls.
#include "runtime/host/host_services_fixture.h"

#include <stdexcept>

namespace mstar {
namespace {

using test::HostServicesTest;

mstar_status_t* SubmitWithoutABatch(void*, mstar_tier_op_t*, uint32_t, mstar_stream_t*,
                                    mstar_tier_batch_t**) {
  return nullptr;  // "succeeds" without writing *out_batch
}

// A tier whose submit reports success without a batch is caught in the tier services: the
// resource gets an error naming the tier, never a NULL (or its own stale) batch to poll and
// release.
TEST_F(HostServicesTest, ATierSubmitThatGivesNoBatchIsAnError) {
  mstar_tier_vtable_t vtable{};
  vtable.struct_size = sizeof(vtable);
  vtable.submit = &SubmitWithoutABatch;
  mstar_tier_handle_t tier;
  tier.name = "mem";
  tier.vtable = &vtable;
  mstar_tier_op_t op{};
  op.struct_size = sizeof(op);
  op.kind = MSTAR_TIER_OP_CONTAINS;
  auto* batch = reinterpret_cast<mstar_tier_batch_t*>(&op);  // stale, as a caller's variable may be
  mstar_status_t* s = api()->tier_submit(&tier, &op, 1, nullptr, &batch);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(api()->status_code(s), MSTAR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Message(s).find("tier 'mem': submit succeeded but left *out_batch NULL"),
            std::string::npos);
  // A failed call leaves its out-parameters as they were (abi.h).
  EXPECT_EQ(batch, reinterpret_cast<mstar_tier_batch_t*>(&op));
}

// Resource and tier each index the ops by their own sizeof(mstar_tier_op_t): an op of another
// size is refused before the tier sees the batch.
TEST_F(HostServicesTest, TierOpsOfAnotherSizeAreRefused) {
  mstar_tier_vtable_t vtable{};
  vtable.struct_size = sizeof(vtable);
  vtable.submit = &SubmitWithoutABatch;  // never reached
  mstar_tier_handle_t tier;
  tier.name = "mem";
  tier.vtable = &vtable;
  mstar_tier_op_t ops[2]{};
  for (mstar_tier_op_t& op : ops) {
    op.struct_size = sizeof(op);
    op.kind = MSTAR_TIER_OP_CONTAINS;
  }
  ops[1].struct_size = sizeof(mstar_tier_op_t) + 8;
  mstar_tier_batch_t* batch = nullptr;
  mstar_status_t* s = api()->tier_submit(&tier, ops, 2, nullptr, &batch);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(api()->status_code(s), MSTAR_ERR_INVALID_ARGUMENT);
  const std::string message = Message(s);  // releases s
  EXPECT_NE(message.find("tier_submit: ops[1].struct_size is " +
                         std::to_string(sizeof(mstar_tier_op_t) + 8)),
            std::string::npos)
      << message;
  EXPECT_EQ(batch, nullptr);
}

// A tier built without the SDK whose slots throw: the exception stops in the tier services as an
// error naming the tier and slot (it never unwinds through the calling resource's C frames), and a
// throwing release is logged.
mstar_status_t* SubmitThrows(void*, mstar_tier_op_t*, uint32_t, mstar_stream_t*,
                             mstar_tier_batch_t**) {
  throw std::runtime_error("disk on fire");
}
void ReleaseThrows(void*, mstar_tier_batch_t*) {
  throw std::runtime_error("release failed");
}

TEST_F(HostServicesTest, ATierSlotThatThrowsIsAnErrorNamingTheTierAndSlot) {
  mstar_tier_vtable_t vtable{};
  vtable.struct_size = sizeof(vtable);
  vtable.submit = &SubmitThrows;
  vtable.release = &ReleaseThrows;
  mstar_tier_handle_t tier;
  tier.name = "disk";
  tier.vtable = &vtable;
  mstar_tier_op_t op{};
  op.struct_size = sizeof(op);
  op.kind = MSTAR_TIER_OP_CONTAINS;
  mstar_tier_batch_t* batch = nullptr;
  mstar_status_t* s = api()->tier_submit(&tier, &op, 1, nullptr, &batch);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(api()->status_code(s), MSTAR_ERR_INTERNAL);
  EXPECT_NE(Message(s).find("tier 'disk': submit threw an exception through the ABI: disk on fire"),
            std::string::npos);
  api()->tier_release_batch(&tier, reinterpret_cast<mstar_tier_batch_t*>(&op));  // logged
}

}  // namespace
}  // namespace mstar

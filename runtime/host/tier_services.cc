// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// A resource's calls to its tiers, forwarded to the tier instance under the tier's lock (the tier
// ABI promises tiers serialized calls).
#include <string>

#include "core/logging.h"
#include "host/host_api.h"
#include "host/host_objects.h"
#include "host/services.h"
#include "plugin/slots.h"

namespace mstar {
namespace {

mstar_status_t* Missing(const mstar_tier_handle_t* tier, const char* slot) {
  std::string message = "tier '" + tier->name + "' does not implement " + slot;
  return NewAbiStatus(MSTAR_ERR_UNSUPPORTED, message.c_str());
}

// Runs a tier slot (the caller holds the tier's lock). A tier built without the SDK may throw: the
// exception stops here, as an error status, instead of unwinding through the calling resource's C
// frames.
template <class Call>
mstar_status_t* Guarded(const mstar_tier_handle_t* tier, const char* slot, Call&& call) noexcept {
  return ServiceBarrier(
      "tier service", [&] { return "tier '" + tier->name + "': " + slot; }, call);
}

mstar_status_t* TierInfo(mstar_tier_handle_t* tier, mstar_tier_info_t* out_info) {
  if (!MSTAR_HAS_SLOT(tier->vtable, info, 0)) return Missing(tier, "info");
  std::lock_guard<std::mutex> lock(tier->mutex);
  return Guarded(tier, "info", [&] { return tier->vtable->info(tier->self, out_info); });
}

mstar_status_t* NoBatch(const char* service) {
  return NewAbiStatus(MSTAR_ERR_INVALID_ARGUMENT, (std::string(service) + ": NULL batch").c_str());
}

// *out_batch is cleared before the tier runs, so a tier that reports success without writing a
// batch is caught rather than leaving the caller's stale pointer to be polled and released.
mstar_status_t* TierSubmit(mstar_tier_handle_t* tier, mstar_tier_op_t* ops, uint32_t count,
                           mstar_stream_t* stream, mstar_tier_batch_t** out_batch) {
  if (!MSTAR_HAS_SLOT(tier->vtable, submit, 0)) return Missing(tier, "submit");
  if (count > 0 && ops == nullptr) {
    return NewAbiStatus(MSTAR_ERR_INVALID_ARGUMENT, "tier_submit: NULL ops");
  }
  if (out_batch == nullptr) {
    return NewAbiStatus(MSTAR_ERR_INVALID_ARGUMENT, "tier_submit: NULL out_batch");
  }
  // The resource and the tier each step through ops by their own sizeof(mstar_tier_op_t): an op
  // of another size (a later minor's) would be read at the wrong places, so it is refused.
  for (uint32_t i = 0; i < count; ++i) {
    if (ops[i].struct_size == sizeof(mstar_tier_op_t)) continue;
    std::string message = "tier_submit: ops[" + std::to_string(i) + "].struct_size is " +
                          std::to_string(ops[i].struct_size) + "; tier ops are " +
                          std::to_string(sizeof(mstar_tier_op_t)) + " bytes in this ABI";
    return NewAbiStatus(MSTAR_ERR_INVALID_ARGUMENT, message.c_str());
  }
  std::lock_guard<std::mutex> lock(tier->mutex);
  // The tier writes a batch of its own: *out_batch changes only when the call succeeds.
  mstar_tier_batch_t* batch = nullptr;
  if (mstar_status_t* failed = Guarded(tier, "submit", [&] {
        return tier->vtable->submit(tier->self, ops, count, stream, &batch);
      })) {
    return failed;
  }
  if (batch == nullptr) {
    std::string message = "tier '" + tier->name +
                          "': submit succeeded but left *out_batch NULL (a successful submit "
                          "returns the batch to poll, wait on and release)";
    return NewAbiStatus(MSTAR_ERR_INVALID_ARGUMENT, message.c_str());
  }
  *out_batch = batch;
  return nullptr;
}

mstar_status_t* TierPoll(mstar_tier_handle_t* tier, mstar_tier_batch_t* batch, uint32_t* out_done) {
  if (!MSTAR_HAS_SLOT(tier->vtable, poll, 0)) return Missing(tier, "poll");
  if (batch == nullptr) return NoBatch("tier_poll");
  std::lock_guard<std::mutex> lock(tier->mutex);
  return Guarded(tier, "poll", [&] { return tier->vtable->poll(tier->self, batch, out_done); });
}

mstar_status_t* TierWait(mstar_tier_handle_t* tier, mstar_tier_batch_t* batch,
                         uint64_t timeout_ns) {
  if (!MSTAR_HAS_SLOT(tier->vtable, wait, 0)) return Missing(tier, "wait");
  if (batch == nullptr) return NoBatch("tier_wait");
  std::lock_guard<std::mutex> lock(tier->mutex);
  return Guarded(tier, "wait", [&] { return tier->vtable->wait(tier->self, batch, timeout_ns); });
}

void TierReleaseBatch(mstar_tier_handle_t* tier, mstar_tier_batch_t* batch) {
  if (!MSTAR_HAS_SLOT(tier->vtable, release, 0) || batch == nullptr) return;
  std::lock_guard<std::mutex> lock(tier->mutex);
  mstar_status_t* threw = Guarded(tier, "release", [&]() -> mstar_status_t* {
    tier->vtable->release(tier->self, batch);
    return nullptr;
  });
  if (threw != nullptr) {
    // Nothing to hand back from a void slot: logged.
    Log().error("{}", TakeStatus(threw).message());
  }
}

}  // namespace

void InstallTierServices(mstar_host_api_t& table) {
  table.tier_info = &TierInfo;
  table.tier_submit = &TierSubmit;
  table.tier_poll = &TierPoll;
  table.tier_wait = &TierWait;
  table.tier_release_batch = &TierReleaseBatch;
}

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Tier: the C++ base class for the `tier` kind (mstar/tier.h). Submit returns a TierBatch the
// tier owns until the host releases it; Poll and Wait report its completion. Write each op's
// result before the batch reports done.
#pragma once

#include <memory>
#include <type_traits>

#include "mstar/sdk/instance.hpp"

namespace mstar::sdk {

// A submitted batch; derive to keep per-batch state.
class TierBatch {
 public:
  virtual ~TierBatch() = default;
};

class Tier : public Instance {
 public:
  using Instance::Instance;

  virtual mstar_tier_info_t Info() = 0;
  // ops is borrowed until the batch is released; write ops[i].result before completing.
  virtual std::unique_ptr<TierBatch> Submit(mstar_tier_op_t* ops, uint32_t count,
                                            mstar_stream_t* stream) = 0;
  virtual bool Poll(TierBatch& batch) = 0;
  // Throws an UNAVAILABLE Error when timeout_ns passes first.
  virtual void Wait(TierBatch& batch, uint64_t timeout_ns) = 0;
};

// A tier whose batches complete inside Submit (blocks in host memory, a test store): implement
// Info and Run; Poll always reports done and Wait returns at once.
class ImmediateTier : public Tier {
 public:
  using Tier::Tier;

  // Runs every op (writing its result) before returning; stream orders device copies as Submit's.
  virtual void Run(mstar_tier_op_t* ops, uint32_t count, mstar_stream_t* stream) = 0;

  std::unique_ptr<TierBatch> Submit(mstar_tier_op_t* ops, uint32_t count,
                                    mstar_stream_t* stream) final {
    // Made first: once Run has moved blocks, nothing may fail saying nothing was started.
    auto batch = std::make_unique<TierBatch>();
    Run(ops, count, stream);
    return batch;
  }
  bool Poll(TierBatch&) final { return true; }
  void Wait(TierBatch&, uint64_t) final {}
};

template <typename T>
struct TierTable {
  static_assert(std::is_base_of_v<Tier, T>, "T must derive from mstar::sdk::Tier");
  static T* Self(void* self) { return Lifecycle<T>::Self(self); }
  static TierBatch* Batch(mstar_tier_batch_t* batch) { return reinterpret_cast<TierBatch*>(batch); }

  static mstar_status_t* GetInfo(void* self, mstar_tier_info_t* out) {
    T* s = Self(self);
    return Guard(s->host(), [&] { WriteOut(out, s->Info()); });
  }
  static mstar_status_t* Submit(void* self, mstar_tier_op_t* ops, uint32_t count,
                                mstar_stream_t* stream, mstar_tier_batch_t** out_batch) {
    T* s = Self(self);
    return Guard(s->host(), [&] {
      std::unique_ptr<TierBatch> batch = s->Submit(ops, count, stream);
      *out_batch = reinterpret_cast<mstar_tier_batch_t*>(batch.release());
    });
  }
  static mstar_status_t* Poll(void* self, mstar_tier_batch_t* batch, uint32_t* out_done) {
    T* s = Self(self);
    return Guard(s->host(), [&] { *out_done = s->Poll(*Batch(batch)) ? 1u : 0u; });
  }
  static mstar_status_t* Wait(void* self, mstar_tier_batch_t* batch, uint64_t timeout_ns) {
    T* s = Self(self);
    return Guard(s->host(), [&] { s->Wait(*Batch(batch), timeout_ns); });
  }
  // Whether a batch is done, after its wait failed: a poll that fails too has its error, so it is.
  static bool Finished(T* s, TierBatch& batch) noexcept {
    try {
      return s->Poll(batch);
    } catch (...) {
      return true;
    }
  }
  static void Release(void* self, mstar_tier_batch_t* batch) {
    T* s = Self(self);
    GuardVoid(s->host(), s->context(), "tier release", [&] {
      std::unique_ptr<TierBatch> owned(Batch(batch));
      try {
        s->Wait(*owned, UINT64_MAX);
      } catch (...) {
        // A batch whose wait failed but that may still be running stays alive (its work may
        // still write it) rather than being freed under it.
        if (!Finished(s, *owned)) (void)owned.release();
        throw;
      }
    });
  }

  static mstar_tier_vtable_t Build() {
    mstar_tier_vtable_t t{};
    t.struct_size = sizeof(t);
    t.struct_version = MSTAR_ABI_MINOR;
    t.create = &Lifecycle<T>::Create;
    t.destroy = &Lifecycle<T>::Destroy;
    t.info = &GetInfo;
    t.submit = &Submit;
    t.poll = &Poll;
    t.wait = &Wait;
    t.release = &Release;
    return t;
  }
};

}  // namespace mstar::sdk

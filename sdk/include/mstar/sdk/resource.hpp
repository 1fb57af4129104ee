// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Resource: the C++ base class for the `resource` kind (mstar/resource.h). Override the step
// protocol (Declare, Admit, Plan, Commit, AbortStep) and request bookkeeping; the optional hooks
// you override appear in the table, the rest stay empty. To report a request unservable, throw
// from Admit: the message reaches the request's client.
#pragma once

#include <memory>
#include <string>
#include <type_traits>

#include "mstar/sdk/bytes.hpp"
#include "mstar/sdk/instance.hpp"
#include "mstar/sdk/request.hpp"

namespace mstar::sdk {

struct ResourceInfo {
  uint32_t flags = 0;          // MSTAR_RESOURCE_*
  std::string unit = "units";  // what capacity is counted in
};

struct Admission {
  uint32_t outcome = MSTAR_ADMIT_READY;
  uint32_t wait_reason = 0;
  uint64_t units_short = 0;

  static Admission Ready() { return {}; }
  static Admission NotReady(uint32_t reason, uint64_t units_short = 0) {
    return {MSTAR_ADMIT_NOT_READY, reason, units_short};
  }
};

class Resource : public Instance {
 public:
  using Instance::Instance;

  virtual ResourceInfo Info() { return {}; }
  virtual void AddRequest(const RequestInfo& request) = 0;
  virtual void RemoveRequest(mstar_request_id_t request_id) = 0;
  virtual void Declare(const StepDecl& step) = 0;
  virtual Admission Admit(const StepDecl& step, uint32_t index) = 0;
  virtual void Plan(const StepDecl& step, TensorMapRef view, mstar_stream_t* stream) = 0;
  virtual void Commit(const StepDecl& step, const uint8_t* succeeded, mstar_stream_t* stream) = 0;
  virtual void AbortStep(const StepDecl& step) = 0;

  // Optional hooks.
  virtual bool PreplanIsStale(const StepDecl& step) {
    (void)step;
    return true;
  }
  virtual void ResetPrePlan(int32_t slot) { (void)slot; }
  virtual Admission CheckReady(const RequestInfo& request, const void* published, uint64_t size) {
    (void)request;
    (void)published;
    (void)size;
    return Admission::Ready();
  }
  virtual void Publish(mstar_request_id_t request_id, BytesWriter& out) {
    (void)request_id;
    (void)out;
  }
  virtual uint64_t Reclaimable(mstar_request_id_t request_id) {
    (void)request_id;
    return 0;
  }
  virtual uint64_t Offload(mstar_request_id_t request_id, uint64_t max_units,
                           mstar_stream_t* stream) {
    (void)request_id;
    (void)max_units;
    (void)stream;
    return 0;
  }
  virtual bool Reload(mstar_request_id_t request_id, mstar_stream_t* stream) {
    (void)request_id;
    (void)stream;
    return true;
  }
  virtual bool IsOffloaded(mstar_request_id_t request_id) {
    (void)request_id;
    return false;
  }
  virtual double OffloadPriority(mstar_request_id_t request_id) {
    (void)request_id;
    return 0.0;
  }
  virtual void TakeResidentDelta(BytesWriter& out) { (void)out; }
  // Returns whether every move was applied; *consumed is how many bytes were fully applied.
  virtual bool ApplyResidentDelta(const void* delta, uint64_t size, uint64_t* consumed) {
    (void)delta;
    *consumed = size;
    return true;
  }
  virtual void ExtendPrefixChains(mstar_request_id_t request_id, const TensorView& host_tokens) {
    (void)request_id;
    (void)host_tokens;
  }
  virtual mstar_resource_stats_t Stats() { return mstar_resource_stats_t{}; }

 private:
  template <typename T>
  friend struct ResourceTable;
  bool info_built_ = false;  // Info() was asked once; info_storage_ backs its unit until destroy
  ResourceInfo info_storage_;
};

template <typename T>
struct ResourceTable {
  static_assert(std::is_base_of_v<Resource, T>, "T must derive from mstar::sdk::Resource");
  static T* Self(void* self) { return Lifecycle<T>::Self(self); }

  static void WriteAdmission(mstar_admit_t* out, const Admission& a) {
    mstar_admit_t value{};
    value.outcome = a.outcome;
    value.wait_reason = a.wait_reason;
    value.units_short = a.units_short;
    WriteOut(out, value);
  }

  static mstar_status_t* GetInfo(void* self, mstar_resource_info_t* out) {
    T* s = Self(self);
    return Guard(s->host(), [&] {
      if (!s->info_built_) {
        s->info_storage_ = s->Info();
        s->info_built_ = true;
      }
      mstar_resource_info_t info{};
      info.flags = s->info_storage_.flags;
      info.unit = s->info_storage_.unit.c_str();
      WriteOut(out, info);
    });
  }
  static mstar_status_t* AddRequest(void* self, const mstar_request_info_t* request) {
    T* s = Self(self);
    return Guard(s->host(), [&] { s->AddRequest(RequestInfo(s->host(), request)); });
  }
  static void RemoveRequest(void* self, mstar_request_id_t id) {
    T* s = Self(self);
    GuardVoid(s->host(), s->context(), "remove_request", [&] { s->RemoveRequest(id); });
  }
  static mstar_status_t* Declare(void* self, const mstar_step_decl_t* step) {
    T* s = Self(self);
    return Guard(s->host(), [&] { s->Declare(StepDecl(s->host(), step)); });
  }
  static mstar_status_t* Admit(void* self, const mstar_step_decl_t* step, uint32_t index,
                               mstar_admit_t* out) {
    T* s = Self(self);
    return Guard(s->host(),
                 [&] { WriteAdmission(out, s->Admit(StepDecl(s->host(), step), index)); });
  }
  static mstar_status_t* Plan(void* self, const mstar_step_decl_t* step, mstar_tensor_map_t* view,
                              mstar_stream_t* stream) {
    T* s = Self(self);
    return Guard(s->host(), [&] {
      s->Plan(StepDecl(s->host(), step), TensorMapRef(s->host(), view), stream);
    });
  }
  static mstar_status_t* Commit(void* self, const mstar_step_decl_t* step, const uint8_t* succeeded,
                                mstar_stream_t* stream) {
    T* s = Self(self);
    return Guard(s->host(), [&] { s->Commit(StepDecl(s->host(), step), succeeded, stream); });
  }
  static void AbortStep(void* self, const mstar_step_decl_t* step) {
    T* s = Self(self);
    GuardVoid(s->host(), s->context(), "abort_step",
              [&] { s->AbortStep(StepDecl(s->host(), step)); });
  }
  static mstar_status_t* PreplanIsStale(void* self, const mstar_step_decl_t* step, uint32_t* out) {
    T* s = Self(self);
    return Guard(s->host(), [&] { *out = s->PreplanIsStale(StepDecl(s->host(), step)) ? 1u : 0u; });
  }
  static void ResetPrePlan(void* self, int32_t slot) {
    T* s = Self(self);
    GuardVoid(s->host(), s->context(), "reset_pre_plan", [&] { s->ResetPrePlan(slot); });
  }
  static mstar_status_t* CheckReady(void* self, const mstar_request_info_t* request,
                                    const void* published, uint64_t size, mstar_admit_t* out) {
    T* s = Self(self);
    return Guard(s->host(), [&] {
      WriteAdmission(out, s->CheckReady(RequestInfo(s->host(), request), published, size));
    });
  }
  static mstar_status_t* Publish(void* self, mstar_request_id_t id, mstar_bytes_t* out) {
    T* s = Self(self);
    return Guard(s->host(), [&] {
      BytesWriter writer(s->host(), out);
      s->Publish(id, writer);
    });
  }
  static mstar_status_t* Reclaimable(void* self, mstar_request_id_t id, uint64_t* out) {
    T* s = Self(self);
    return Guard(s->host(), [&] { *out = s->Reclaimable(id); });
  }
  static mstar_status_t* Offload(void* self, mstar_request_id_t id, uint64_t max_units,
                                 mstar_stream_t* stream, uint64_t* out) {
    T* s = Self(self);
    return Guard(s->host(), [&] { *out = s->Offload(id, max_units, stream); });
  }
  static mstar_status_t* Reload(void* self, mstar_request_id_t id, mstar_stream_t* stream,
                                uint32_t* out_done) {
    T* s = Self(self);
    return Guard(s->host(), [&] { *out_done = s->Reload(id, stream) ? 1u : 0u; });
  }
  static mstar_status_t* IsOffloaded(void* self, mstar_request_id_t id, uint32_t* out) {
    T* s = Self(self);
    return Guard(s->host(), [&] { *out = s->IsOffloaded(id) ? 1u : 0u; });
  }
  static mstar_status_t* OffloadPriority(void* self, mstar_request_id_t id, double* out) {
    T* s = Self(self);
    return Guard(s->host(), [&] { *out = s->OffloadPriority(id); });
  }
  static mstar_status_t* TakeResidentDelta(void* self, mstar_bytes_t* out) {
    T* s = Self(self);
    return Guard(s->host(), [&] {
      BytesWriter writer(s->host(), out);
      s->TakeResidentDelta(writer);
    });
  }
  static mstar_status_t* ApplyResidentDelta(void* self, const void* delta, uint64_t size,
                                            uint64_t* out_consumed, uint32_t* out_complete) {
    T* s = Self(self);
    return Guard(s->host(), [&] {
      uint64_t consumed = 0;
      bool complete = s->ApplyResidentDelta(delta, size, &consumed);
      *out_consumed = consumed;
      *out_complete = complete ? 1u : 0u;
    });
  }
  static mstar_status_t* ExtendPrefixChains(void* self, mstar_request_id_t id,
                                            const mstar_tensor_t* host_tokens) {
    T* s = Self(self);
    return Guard(s->host(), [&] { s->ExtendPrefixChains(id, TensorView(host_tokens)); });
  }
  static mstar_status_t* Stats(void* self, mstar_resource_stats_t* out) {
    T* s = Self(self);
    return Guard(s->host(), [&] { WriteOut(out, s->Stats()); });
  }

  static mstar_resource_vtable_t Build() {
    mstar_resource_vtable_t t{};
    t.struct_size = sizeof(t);
    t.struct_version = MSTAR_ABI_MINOR;
    t.create = &Lifecycle<T>::Create;
    t.destroy = &Lifecycle<T>::Destroy;
    t.info = &GetInfo;
    t.add_request = &AddRequest;
    t.remove_request = &RemoveRequest;
    t.declare = &Declare;
    t.admit = &Admit;
    t.plan = &Plan;
    t.commit = &Commit;
    t.abort_step = &AbortStep;
    if (MSTAR_SDK_OVERRIDES(T, Resource, PreplanIsStale)) t.preplan_is_stale = &PreplanIsStale;
    if (MSTAR_SDK_OVERRIDES(T, Resource, ResetPrePlan)) t.reset_pre_plan = &ResetPrePlan;
    if (MSTAR_SDK_OVERRIDES(T, Resource, CheckReady)) t.check_ready = &CheckReady;
    if (MSTAR_SDK_OVERRIDES(T, Resource, Publish)) t.publish = &Publish;
    if (MSTAR_SDK_OVERRIDES(T, Resource, Reclaimable)) t.reclaimable = &Reclaimable;
    if (MSTAR_SDK_OVERRIDES(T, Resource, Offload)) t.offload = &Offload;
    if (MSTAR_SDK_OVERRIDES(T, Resource, Reload)) t.reload = &Reload;
    if (MSTAR_SDK_OVERRIDES(T, Resource, IsOffloaded)) t.is_offloaded = &IsOffloaded;
    if (MSTAR_SDK_OVERRIDES(T, Resource, OffloadPriority)) t.offload_priority = &OffloadPriority;
    if (MSTAR_SDK_OVERRIDES(T, Resource, TakeResidentDelta))
      t.take_resident_delta = &TakeResidentDelta;
    if (MSTAR_SDK_OVERRIDES(T, Resource, ApplyResidentDelta))
      t.apply_resident_delta = &ApplyResidentDelta;
    if (MSTAR_SDK_OVERRIDES(T, Resource, ExtendPrefixChains))
      t.extend_prefix_chains = &ExtendPrefixChains;
    if (MSTAR_SDK_OVERRIDES(T, Resource, Stats)) t.stats = &Stats;
    return t;
  }
};

}  // namespace mstar::sdk

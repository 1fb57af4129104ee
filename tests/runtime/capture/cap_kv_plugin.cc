// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// cap_kv: a resource that pre-plans, for the engine's capture tests. Each request holds a count
// of the tokens its committed steps added. plan writes "held" (one row per request, then -1 per
// padding row, so the view has the captured bucket's shape); a step declared with preplan stages
// its plan under the step's slot, and a later plan of the same step promotes it (the staged plan
// becomes the step's and leaves the slot). The staged plan is stale when the step's requests or
// their counts differ from what was staged.
//
// Strict, so a pre-plan the engine forgets to drop fails the step: a pre-plan declare into a slot
// that still holds a staged plan is refused, and so is a plan of a step on a slot whose staged
// plan does not match it ("stale pre-plan not reset"). Admit reserves the step's tokens until
// commit, abort_step or the next declare (which replaces an undispatched step); stats reports
// used_units = committed + reserved tokens, so an abort_step that never came shows there.
// Counters (host metrics "<label>.pre_plan.resets" and "<label>.pre_plan.promoted"): staged plans
// dropped by reset_pre_plan, and staged plans promoted by a plan.
//
// Config: needs_slot_fence (bool) adds MSTAR_RESOURCE_NEEDS_SLOT_FENCE.
#include <map>
#include <vector>

#include "mstar/sdk.hpp"

namespace {

using namespace mstar::sdk;

class CapKv final : public Resource {
 public:
  explicit CapKv(const mstar_create_args_t& args) : Resource(args) {
    fence_ = config().get("needs_slot_fence", false);
  }

  ResourceInfo Info() override {
    return {MSTAR_RESOURCE_CAN_PRE_PLAN | (fence_ ? MSTAR_RESOURCE_NEEDS_SLOT_FENCE : 0u),
            "tokens"};
  }
  void AddRequest(const RequestInfo& request) override { held_[request.id()] = 0; }
  void RemoveRequest(mstar_request_id_t id) override { held_.erase(id); }

  void Declare(const StepDecl& step) override {
    reserved_.clear();  // replaces an undispatched step
    if (!step.preplan()) return;
    if (staged_.count(step.slot()) != 0) {
      throw FailedPrecondition("cap_kv: pre-plan into slot " + std::to_string(step.slot()) +
                               ", which still holds a staged plan (neither reset nor promoted)");
    }
    staged_[step.slot()] = Snapshot(step);
  }
  Admission Admit(const StepDecl& step, uint32_t index) override {
    if (held_.count(step.id(index)) == 0) throw InvalidArgument("cap_kv: unknown request");
    reserved_[step.id(index)] = step.num_tokens(index);
    return Admission::Ready();
  }
  void Plan(const StepDecl& step, TensorMapRef view, mstar_stream_t* stream) override {
    (void)stream;
    if (!step.preplan() && step.slot() >= 0) {
      auto it = staged_.find(step.slot());
      if (it != staged_.end()) {
        if (!(it->second == Snapshot(step))) {
          throw FailedPrecondition("cap_kv: slot " + std::to_string(step.slot()) +
                                   " holds a stale pre-plan not reset");
        }
        staged_.erase(it);
        Count("pre_plan.promoted", 1);
      }
    }
    std::vector<int64_t> rows;
    for (uint32_t i = 0; i < step.size(); ++i)
      rows.push_back(static_cast<int64_t>(held_[step.id(i)]));
    for (uint32_t i = 0; i < step.raw()->padded_rows; ++i) rows.push_back(-1);
    view.append("held", FromVector(rows));
  }
  void Commit(const StepDecl& step, const uint8_t* succeeded, mstar_stream_t* stream) override {
    (void)stream;
    for (uint32_t i = 0; i < step.size(); ++i) {
      if (succeeded[i] != 0) held_[step.id(i)] += step.num_tokens(i);
    }
    reserved_.clear();
  }
  void AbortStep(const StepDecl& step) override {
    (void)step;
    reserved_.clear();
  }

  bool PreplanIsStale(const StepDecl& step) override {
    auto it = staged_.find(step.slot());
    return it == staged_.end() || !(it->second == Snapshot(step));
  }
  void ResetPrePlan(int32_t slot) override {
    size_t dropped = 0;
    if (slot < 0) {
      dropped = staged_.size();
      staged_.clear();
    } else {
      dropped = staged_.erase(slot);
    }
    if (dropped > 0) Count("pre_plan.resets", static_cast<int64_t>(dropped));
  }
  mstar_resource_stats_t Stats() override {
    mstar_resource_stats_t s{};
    for (const auto& [id, tokens] : held_) s.used_units += tokens;
    for (const auto& [id, tokens] : reserved_) s.used_units += tokens;
    return s;
  }

 private:
  struct Staged {
    std::vector<mstar_request_id_t> ids;
    std::vector<uint64_t> held;
    bool operator==(const Staged& o) const { return ids == o.ids && held == o.held; }
  };
  Staged Snapshot(const StepDecl& step) {
    Staged s;
    for (uint32_t i = 0; i < step.size(); ++i) {
      s.ids.push_back(step.id(i));
      s.held.push_back(held_[step.id(i)]);
    }
    return s;
  }

  void Count(const char* name, int64_t delta) { host()->counter_add(context(), name, delta); }

  bool fence_ = false;
  std::map<mstar_request_id_t, uint64_t> held_;
  std::map<mstar_request_id_t, uint64_t> reserved_;  // admitted in the open step
  std::map<int32_t, Staged> staged_;
};

}  // namespace

MSTAR_PLUGIN("cap_kv", 0, ResourceFactory<CapKv>("cap_kv"));

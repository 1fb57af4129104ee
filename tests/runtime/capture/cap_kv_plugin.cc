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
// commit, abort_step (of the requests it names) or the next declare (which replaces an
// undispatched step); stats reports
// used_units = committed + reserved tokens, so an abort_step that never came shows there. A
// pre-plan declared while a step is open (declared without preplan, not yet committed or aborted)
// is refused: it would replace that step.
// Counters (host metrics "<label>.pre_plan.resets", "<label>.pre_plan.promoted" and
// "<label>.exec_plans"): staged plans dropped by reset_pre_plan, staged plans promoted by a plan,
// and plans of steps not declared with preplan (counted on entry).
//
// Config: needs_slot_fence (bool) adds MSTAR_RESOURCE_NEEDS_SLOT_FENCE; not_ready_at_exec (a
// request id) makes admit answer NOT_READY for that request in a step not declared with preplan;
// exec_plan_sleep_us holds each such plan that long (a step open for a while); refuse_dummies
// makes admit refuse the engine's dummy requests (ids from 2^62 on), so every capture fails after
// the submodule prepared its dummies.
#include <chrono>
#include <map>
#include <thread>
#include <vector>

#include "mstar/sdk.hpp"

namespace {

using namespace mstar::sdk;

class CapKv final : public Resource {
 public:
  explicit CapKv(const mstar_create_args_t& args) : Resource(args) {
    fence_ = config().get("needs_slot_fence", false);
    not_ready_at_exec_ = config().get("not_ready_at_exec", int64_t{-1});
    exec_plan_sleep_us_ = config().get("exec_plan_sleep_us", int64_t{0});
    refuse_dummies_ = config().get("refuse_dummies", false);
  }

  ResourceInfo Info() override {
    return {MSTAR_RESOURCE_CAN_PRE_PLAN | (fence_ ? MSTAR_RESOURCE_NEEDS_SLOT_FENCE : 0u),
            "tokens"};
  }
  void AddRequest(const RequestInfo& request) override { held_[request.id()] = 0; }
  void RemoveRequest(mstar_request_id_t id) override { held_.erase(id); }

  void Declare(const StepDecl& step) override {
    if (step.preplan() && exec_open_) {
      throw FailedPrecondition(
          "cap_kv: pre-plan declared while a step is open (declared, not "
          "yet committed or aborted): it would replace that step");
    }
    reserved_.clear();  // replaces an undispatched step
    if (!step.preplan()) {
      exec_open_ = true;
      return;
    }
    if (staged_.count(step.slot()) != 0) {
      throw FailedPrecondition("cap_kv: pre-plan into slot " + std::to_string(step.slot()) +
                               ", which still holds a staged plan (neither reset nor promoted)");
    }
    staged_[step.slot()] = Snapshot(step);
  }
  Admission Admit(const StepDecl& step, uint32_t index) override {
    if (held_.count(step.id(index)) == 0) throw InvalidArgument("cap_kv: unknown request");
    if (refuse_dummies_ && step.id(index) >= (uint64_t{1} << 62))
      throw FailedPrecondition("cap_kv refuses the dummy requests (refuse_dummies)");
    if (!step.preplan() && static_cast<int64_t>(step.id(index)) == not_ready_at_exec_)
      return Admission::NotReady(MSTAR_WAIT_OTHER, 0);
    reserved_[step.id(index)] = step.num_tokens(index);
    return Admission::Ready();
  }
  void Plan(const StepDecl& step, TensorMapRef view, mstar_stream_t* stream) override {
    (void)stream;
    if (!step.preplan()) {
      Count("exec_plans", 1);
      if (exec_plan_sleep_us_ > 0)
        std::this_thread::sleep_for(std::chrono::microseconds(exec_plan_sleep_us_));
    }
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
    exec_open_ = false;
  }
  // Gives back what admit reserved for the step's requests only, so an abort_step that names
  // the wrong requests shows in stats.
  void AbortStep(const StepDecl& step) override {
    for (uint32_t i = 0; i < step.size(); ++i) reserved_.erase(step.id(i));
    if (!step.preplan()) exec_open_ = false;
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
  int64_t not_ready_at_exec_ = -1;
  int64_t exec_plan_sleep_us_ = 0;
  bool refuse_dummies_ = false;
  bool exec_open_ = false;  // a step declared without preplan awaits its commit or abort
  std::map<mstar_request_id_t, uint64_t> held_;
  std::map<mstar_request_id_t, uint64_t> reserved_;  // admitted in the open step
  std::map<int32_t, Staged> staged_;
};

}  // namespace

MSTAR_PLUGIN("cap_kv", 0, ResourceFactory<CapKv>("cap_kv"));

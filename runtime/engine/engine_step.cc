// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The stages of a step: prepare, exec (declare -> admit -> plan -> forward -> commit),
// postprocess and the stop check, each isolating per-request failures.
#include <cstring>

#include "core/clock.h"
#include "core/logging.h"
#include "device/device.h"
#include "engine/engine.h"
#include "engine/engine_decl.h"
#include "engine/input_tokens.h"

namespace mstar {

void Engine::PrepareInputs(ExecutingBatch& batch) {
  if (batch.columnar != nullptr) return;  // prepared with its forward (engine_columnar.cc)
  uint64_t start = NowNs();
  NodeRuntime& node = *runtime_->node(batch.node);
  std::lock_guard<std::mutex> lock(node.mutex);  // once for the batch's calls
  for (StepRequest& r : batch.requests) {
    if (!r.active()) continue;
    r.prepared = NewTensorMap();
    mstar_prepared_t out{sizeof(mstar_prepared_t), MSTAR_ABI_MINOR, 0, 0, 0, r.prepared.get()};
    Status status = CallPlugin(*node.instance, "prepare_inputs", [&] {
      return node.table()->prepare_inputs(node.instance->self(), &r.info, r.inputs.get(), &out);
    });
    if (!status.ok()) {
      r.Fail(status.message());
    } else if (out.decline != 0) {
      r.skipped = true;
    } else {
      r.num_tokens = out.num_tokens;
      r.input_tokens = TokenInputOf(*r.inputs, node.token_input, r.num_tokens);
      r.capture_key = out.capture_key;
    }
  }
  prepare_ns_ += NowNs() - start;
}

void Engine::AbortDecl(NodeRuntime& node, Decl& decl, size_t first_resource) {
  for (size_t k = first_resource; k < node.resources.size(); ++k) {
    ResourceRuntime* resource = node.resources[k];
    std::lock_guard<std::mutex> lock(resource->mutex);
    resource->AbortStep(decl.decl);
  }
}

namespace {

// Fails each of the batch's requests at positions members with message.
// Members an earlier stage left out already (not ready, unservable) keep that outcome.
void FailMembers(ExecutingBatch& batch, const std::vector<size_t>& members,
                 const std::string& message) {
  for (size_t m : members) {
    if (batch.requests[m].active()) batch.requests[m].Fail(message);
  }
}

// Admission outcomes on a per-request batch's requests.
class RequestMarks final : public Engine::AdmitMarks {
 public:
  explicit RequestMarks(ExecutingBatch& batch) : batch_(batch) {}
  bool Active(size_t m) const override { return batch_.requests[m].active(); }
  void Unservable(size_t m, const std::string& message) override {
    batch_.requests[m].Fail("unservable: " + message);
  }
  void NotReady(size_t m, const mstar_admit_t& admit, const std::string& resource) override {
    StepRequest& r = batch_.requests[m];
    r.not_ready = true;
    r.wait_reason = admit.wait_reason;
    r.units_short = admit.units_short;
    r.waiting_on = resource;
  }

 private:
  ExecutingBatch& batch_;
};

}  // namespace

// Declares and admits until every remaining member is admitted by every resource. Members that
// are not ready or unservable leave the step (marked through marks); decl.members ends with the
// admitted ones (none when nobody was). A declare that fails aborts the declaration and is
// returned; the members the resources before it left out in that round keep their marks, and
// the caller decides what becomes of the rest.
Status Engine::AdmitAll(NodeRuntime& node, const ExecutingBatch& batch, Decl& decl,
                        AdmitMarks& marks) {
  while (!decl.members.empty()) {
    bool everyone = true;
    Status declared;
    for (ResourceRuntime* resource : node.resources) {
      std::lock_guard<std::mutex> lock(resource->mutex);
      const mstar_resource_vtable_t* t = resource->table();
      declared = CallPlugin(*resource->instance, "declare",
                            [&] { return t->declare(resource->instance->self(), &decl.decl); });
      if (!declared.ok()) break;
      for (size_t i = 0; i < decl.members.size(); ++i) {
        if (!marks.Active(decl.members[i])) continue;
        mstar_admit_t admit{sizeof(mstar_admit_t), MSTAR_ABI_MINOR, MSTAR_ADMIT_READY, 0, 0};
        Status status = CallPlugin(*resource->instance, "admit", [&] {
          return t->admit(resource->instance->self(), &decl.decl, static_cast<uint32_t>(i), &admit);
        });
        if (status.ok() && admit.outcome != MSTAR_ADMIT_READY &&
            admit.outcome != MSTAR_ADMIT_NOT_READY) {
          status = Internal(UnknownAdmitOutcome(*resource, "admit", admit.outcome));
        }
        if (!status.ok()) {
          marks.Unservable(decl.members[i], status.message());
          everyone = false;
        } else if (admit.outcome != MSTAR_ADMIT_READY) {
          marks.NotReady(decl.members[i], admit, resource->label);
          everyone = false;
        }
      }
    }
    if (!declared.ok()) {
      AbortDecl(node, decl);
      return declared;
    }
    if (everyone) return Status::Ok();
    AbortDecl(node, decl);
    decl.Keep(batch, [&](size_t m) { return marks.Active(m); });
  }
  return Status::Ok();
}

bool Engine::RetryAloneOrFail(NodeRuntime& node, ExecutingBatch& batch,
                              const std::vector<size_t>& members, bool batched,
                              const Status& failure) {
  // Members a resource found not ready in the failed attempt were measured against a batch that
  // never ran: alone, they are asked again.
  std::vector<size_t> again;
  for (size_t m : members) {
    const StepRequest& r = batch.requests[m];
    if (!r.failed && !r.skipped) again.push_back(m);
  }
  // A step of one request failed because of it; one of several may have failed because of a
  // request that is out already (unservable at an earlier resource), so even one left is retried.
  if (!batched || members.size() < 2 || again.empty()) {
    FailMembers(batch, members, failure.message());  // the active ones; not ready stays so
    return false;
  }
  Log().warn("{}: batched step of {} requests failed ({}); retrying one request at a time",
             node.instance->label(), again.size(), failure.message());
  // The retries run eagerly, one request each: a slot still leased (the step never reached its
  // replay) is given back first, or they would be declared padded to its bucket.
  if (batch.slot >= 0) ResetPrePlanForBatch(&batch);
  for (size_t m : again) {
    StepRequest& r = batch.requests[m];
    r.not_ready = false;
    r.wait_reason = 0;
    r.units_short = 0;
    r.waiting_on.clear();
    RunStep(node, batch, {m}, false);
  }
  return true;
}

bool Engine::RunStep(NodeRuntime& node, ExecutingBatch& batch, const std::vector<size_t>& members,
                     bool batched) {
  Decl decl;
  decl.Build(batch, members);
  RequestMarks marks(batch);
  if (Status admitted = AdmitAll(node, batch, decl, marks); !admitted.ok())
    return RetryAloneOrFail(node, batch, decl.members, batched, admitted);
  if (decl.members.empty()) return false;
  // Admission left members out: what was pre-planned for the slot describes another step.
  if (batch.preplanned && batch.ActiveIds() != batch.preplanned_ids)
    DropPrePlan(batch, "admission changed the batch's requests");

  ResourceViews views;
  if (Status planned = PlanResources(node, decl, views); !planned.ok())
    return RetryAloneOrFail(node, batch, decl.members, batched, planned);

  std::vector<const mstar_tensor_map_t*> inputs;
  std::vector<mstar_tensor_map_t*> outputs;
  for (size_t m : decl.members) {
    StepRequest& r = batch.requests[m];
    r.outputs = NewTensorMap();
    inputs.push_back(r.prepared.get());
    outputs.push_back(r.outputs.get());
  }
  mstar_step_t step{};
  step.struct_size = sizeof(step);
  step.struct_version = MSTAR_ABI_MINOR;
  step.node = batch.node_name.c_str();
  step.walk = batch.walk.c_str();
  step.num_requests = static_cast<uint32_t>(decl.members.size());
  step.slot = batch.slot;
  step.requests = decl.infos.data();
  step.inputs = inputs.data();
  step.num_tokens = decl.tokens.data();
  views.AttachTo(step);
  step.outputs = outputs.data();
  step.stream = NodeStreams(node).exec();
  // A replay on the batch's leased slot when it has one (engine_replay.cc), else the forward.
  Status forward = ExecAfterPlansAndCopies(node);
  if (forward.ok()) {
    for (size_t m : decl.members) batch.requests[m].forwarded = true;
    uint64_t start = NowNs();
    forward = ForwardStep(node, batch, decl.members, step, batched);
    forward_ns_ += NowNs() - start;
    ++forward_calls_;
  }
  if (!forward.ok()) {
    for (size_t m : decl.members) batch.requests[m].outputs.reset();
    AbortDecl(node, decl);
    return RetryAloneOrFail(node, batch, decl.members, batched, forward);
  }
  if (Status committed = CommitResources(node, decl); !committed.ok()) {
    FailMembers(batch, decl.members, committed.message());
    return false;
  }
  return true;
}

Status Engine::PlanResources(NodeRuntime& node, Decl& decl, ResourceViews& views) {
  for (ResourceRuntime* resource : node.resources) {
    views.maps.push_back(NewTensorMap());
    Status planned;
    {
      std::lock_guard<std::mutex> lock(resource->mutex);
      LaneUse plan(ResourceStreams(*resource), DeviceStreams::kPlan);
      planned = CallPlugin(*resource->instance, "plan", [&] {
        return resource->table()->plan(resource->instance->self(), &decl.decl,
                                       views.maps.back().get(), plan.stream());
      });
    }
    if (!planned.ok()) {
      AbortDecl(node, decl);
      return planned;
    }
    views.views.push_back({sizeof(mstar_resource_view_t), MSTAR_ABI_MINOR, resource->label.c_str(),
                           views.maps.back().get()});
  }
  return Status::Ok();
}

Status Engine::CommitResources(NodeRuntime& node, Decl& decl) {
  std::vector<uint8_t>& succeeded = decl.succeeded;
  succeeded.assign(decl.members.size(), 1);
  for (size_t k = 0; k < node.resources.size(); ++k) {
    ResourceRuntime* resource = node.resources[k];
    Status committed;
    {
      std::lock_guard<std::mutex> lock(resource->mutex);
      committed = CallPlugin(*resource->instance, "commit", [&] {
        return resource->table()->commit(resource->instance->self(), &decl.decl, succeeded.data(),
                                         NodeStreams(node).exec());
      });
    }
    if (!committed.ok()) {
      // A failed commit changed nothing: this resource and the ones after it still hold what
      // admit took, which abort_step gives back. The members fail; removing them releases what
      // the resources before it committed.
      AbortDecl(node, decl, k);
      return committed;
    }
  }
  return Status::Ok();
}

void Engine::Exec(ExecutingBatch& batch) {
  if (batch.columnar != nullptr) return ExecColumnar(batch);
  NodeRuntime& node = *runtime_->node(batch.node);
  std::vector<size_t> members;
  {
    // Open before the stale check: the next batch's pre-plan waits until the scope closes, so it
    // neither meets the reset of a batch with nobody left nor changes what the check answered.
    ExecStepScope open(node.resources);
    // A stale pre-plan is dropped; a batch with nobody left gives back its slot.
    CheckPrePlan(batch);
    for (size_t i = 0; i < batch.requests.size(); ++i) {
      if (batch.requests[i].active()) members.push_back(i);
    }
    if (members.empty()) {
      ReleaseRegionSlot(batch);
      return;
    }
    if (node.batched()) {
      batch.running_batched = true;
      RunStep(node, batch, members, true);
    } else {
      for (size_t m : members) RunStep(node, batch, {m}, false);
    }
    // Still leased: the step never reached its replay (nobody was admitted, or planning failed).
    // Inside the scope, so the next batch's pre-plan (which waits for it) is not aborted too.
    if (batch.slot >= 0) ResetPrePlanForBatch(&batch);
  }
  ReleaseRegionSlot(batch);  // still held: the forward never ran
  if (Status finished = FinishExec(node); !finished.ok()) {
    for (size_t m : members) {
      if (batch.requests[m].active()) batch.requests[m].Fail(finished.message());
    }
  }
}

void Engine::PostprocessBatch(ExecutingBatch& batch) {
  NodeRuntime& node = *runtime_->node(batch.node);
  if (node.table()->postprocess == nullptr || batch.columnar != nullptr) return;
  std::lock_guard<std::mutex> lock(node.mutex);  // once for the batch's calls
  for (StepRequest& r : batch.requests) {
    if (!r.active()) continue;
    Status status = CallPlugin(*node.instance, "postprocess", [&] {
      return node.table()->postprocess(node.instance->self(), &r.info, r.outputs.get());
    });
    if (!status.ok()) r.Fail(status.message());
  }
}

void Engine::ExecAndPostprocess(ExecutingBatch& batch) {
  Exec(batch);
  PostprocessBatch(batch);
}

bool Engine::StopInputsOnHost(const ExecutingBatch& batch) {
  if (batch.columnar != nullptr) return ColumnarStopInputsOnHost(batch);
  const NodeRuntime& node = *runtime_->node(batch.node);
  for (const StepRequest& r : batch.requests) {
    if (!r.active() || r.outputs == nullptr) continue;
    for (const std::string& name : node.stop_outputs) {
      const mstar_tensor_map::Entry* entry = r.outputs->Find(name);
      if (entry == nullptr) continue;
      for (const mstar_tensor_t* tensor : entry->tensors) {
        if (!IsHostDevice(tensor->dl.device)) return false;
      }
    }
  }
  return true;
}

void Engine::CheckStopForBatch(ExecutingBatch& batch) {
  if (batch.columnar != nullptr) return CheckStopColumnar(batch);
  uint64_t start = NowNs();
  struct Account {
    std::atomic<uint64_t>& total;
    uint64_t start;
    ~Account() { total += NowNs() - start; }
  } account{stop_ns_, start};
  NodeRuntime& node = *runtime_->node(batch.node);
  const mstar_submodule_vtable_t* t = node.table();
  std::vector<size_t> checked;
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    StepRequest& r = batch.requests[i];
    if (!r.active() || r.outputs == nullptr) continue;
    if (!node.stop_outputs.empty() && AllOnHost(*r.outputs)) {
      r.stop_view = r.outputs.get();  // nothing to copy: the check reads the outputs themselves
      checked.push_back(i);
      continue;
    }
    if (r.host_outputs == nullptr) r.host_outputs = NewTensorMap();
    r.host_outputs->Clear();  // a reused record's map
    Status copied = AppendHostCopies(node.stop_outputs, *r.outputs, r.host_outputs.get());
    if (!copied.ok()) {
      r.Fail("copying outputs for the stop check: " + copied.message());
      continue;
    }
    r.stop_view = r.host_outputs.get();
    checked.push_back(i);
  }
  if (t->check_stop == nullptr || checked.empty()) return;
  if (t->check_stop_batched != nullptr && checked.size() > 1) {
    std::vector<const mstar_request_info_t*> infos;
    std::vector<const mstar_tensor_map_t*> maps;
    for (size_t i : checked) {
      infos.push_back(&batch.requests[i].info);
      maps.push_back(batch.requests[i].stop_view);
    }
    std::vector<uint64_t> masks(checked.size(), 0);
    Status status;
    {
      std::lock_guard<std::mutex> lock(node.mutex);
      status = CallPlugin(*node.instance, "check_stop_batched", [&] {
        return t->check_stop_batched(node.instance->self(), static_cast<uint32_t>(checked.size()),
                                     infos.data(), maps.data(), masks.data());
      });
    }
    if (status.ok()) {
      for (size_t k = 0; k < checked.size(); ++k) batch.requests[checked[k]].stop_mask = masks[k];
      return;
    }
    Log().warn("{}: batched stop check failed ({}); checking one request at a time",
               node.instance->label(), status.message());
  }
  std::lock_guard<std::mutex> lock(node.mutex);  // once for the batch's calls
  for (size_t i : checked) {
    StepRequest& r = batch.requests[i];
    uint64_t mask = 0;
    Status status = CallPlugin(*node.instance, "check_stop", [&] {
      return t->check_stop(node.instance->self(), &r.info, r.stop_view, &mask);
    });
    if (status.ok()) {
      r.stop_mask = mask;
    } else {
      r.Fail(status.message());
    }
  }
}

void Engine::ExtendPrefixChains(ExecutingBatch& batch) {
  NodeRuntime& node = *runtime_->node(batch.node);
  if (node.stop_outputs.empty()) return;
  if (batch.columnar != nullptr) return ExtendPrefixChainsColumnar(node, batch);
  for (ResourceRuntime* resource : node.resources) {
    if (resource->table()->extend_prefix_chains == nullptr) continue;
    std::lock_guard<std::mutex> lock(resource->mutex);  // once for the batch
    for (StepRequest& r : batch.requests) {
      if (!r.active() || r.stop_view == nullptr) continue;
      const mstar_tensor_map::Entry* tokens = r.stop_view->Find(node.stop_outputs.front());
      if (tokens == nullptr || tokens->tensors.empty()) continue;
      Status status = CallPlugin(*resource->instance, "extend_prefix_chains", [&] {
        return resource->table()->extend_prefix_chains(resource->instance->self(), r.id,
                                                       tokens->tensors.front());
      });
      if (!status.ok()) r.Fail(status.message());
    }
  }
}

}  // namespace mstar

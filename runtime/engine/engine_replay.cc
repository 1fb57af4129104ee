// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Replay slots, pre-planning and the replay itself.
//
//   plan thread  ReserveReplaySlot (after prepare_inputs: the token counts are known) leases a
//                slot of the smallest captured bucket that holds the batch and whose templates
//                its prepared inputs match; PrePlanForBatch runs
//                declare -> admit -> plan on the node's CAN_PRE_PLAN resources into that slot
//   exec thread  CheckPrePlan drops a stale pre-plan (the batch changed, or a resource says so),
//                the regular sweep plans (resources promote what they staged), and ForwardStep
//                replays on the slot; the slot is free again once the replay's fence completes
// A lease that is not replayed (a fallback, a batch that never dispatched) is released at once,
// and a dropped pre-plan is undone with abort_step + reset_pre_plan so its padding rows return.
#include <fmt/format.h>

#include <algorithm>

#include "capture/buckets.h"
#include "capture/padded_inputs.h"
#include "core/logging.h"
#include "device/device.h"
#include "engine/engine.h"
#include "engine/engine_decl.h"

namespace mstar {
namespace {

struct BatchShape {
  uint32_t rows = 0;
  uint32_t total_tokens = 0;
  uint32_t max_tokens = 0;
};

BatchShape ShapeOf(const ExecutingBatch& batch) {
  BatchShape shape;
  for (const StepRequest& r : batch.requests) {
    if (!r.active()) continue;
    ++shape.rows;
    shape.total_tokens += r.num_tokens;
    shape.max_tokens = std::max(shape.max_tokens, r.num_tokens);
  }
  return shape;
}

// Appends from's tensors to to under their names, leaving from's entries empty.
void MoveTensors(mstar_tensor_map& from, mstar_tensor_map& to) {
  for (mstar_tensor_map::Entry& entry : from.entries()) {
    for (mstar_tensor_t*& tensor : entry.tensors) to.AppendHost(entry.name, tensor);
    entry.tensors.clear();
  }
}

bool Overlap(const DLTensor& a, const DLTensor& b) {
  const uint8_t* a_begin = TensorBytes(a);
  const uint8_t* b_begin = TensorBytes(b);
  return a_begin < b_begin + TensorNumBytes(b) && b_begin < a_begin + TensorNumBytes(a);
}

// Whether a tensor of out shares bytes with a tensor of one of inputs' rows: on the eager
// replay path a submodule reads the slot's buffers, and one that passes an input through would
// hand out bytes the next step on the slot overwrites.
bool SharesBytesWith(const mstar_tensor_map& out, const PaddedInputs& inputs) {
  for (const mstar_tensor_map::Entry& entry : out.entries()) {
    for (const mstar_tensor_t* tensor : entry.tensors) {
      for (uint32_t r = 0; r < inputs.rows(); ++r) {
        for (const mstar_tensor_map::Entry& in : inputs.row(r)->entries()) {
          for (const mstar_tensor_t* buffer : in.tensors) {
            if (Overlap(tensor->dl, buffer->dl)) return true;
          }
        }
      }
    }
  }
  return false;
}

}  // namespace

std::optional<SlotLease> Engine::ReserveReplaySlot(const ExecutingBatch& batch) {
  if (batch.node < 0 || static_cast<size_t>(batch.node) >= captures_.size()) return std::nullopt;
  NodeCaptures* captures = captures_[static_cast<size_t>(batch.node)].get();
  if (captures == nullptr || !runtime_->node(batch.node)->batched()) return std::nullopt;
  BatchShape shape = ShapeOf(batch);
  if (shape.rows == 0 || !captures->ReplaysAny(batch.walk)) return std::nullopt;
  // Every slot of a pool has the same templates, captured with CapturedRows(bucket) rows, which
  // Choose holds the batch to: the requests are checked against the pool's first slot's.
  auto mismatch = [&](int config, const SlotPool& pool) -> std::string {
    const CaptureSlot& model_slot = pool.slot(pool.first_id());
    // A config split by key replays its key's requests only: the key the scheduler grouped the
    // batch by (the capture_key hook) must also be each request's prepared key.
    const bool by_key =
        (captures->configs()[static_cast<size_t>(config)].flags & MSTAR_CAPTURE_SPLIT_BY_KEY) != 0;
    uint32_t row = 0;
    for (const StepRequest& r : batch.requests) {
      if (!r.active()) continue;
      if (r.prepared == nullptr) return "the request has no prepared inputs";
      if (std::string why = model_slot.inputs.Mismatch(row, *r.prepared); !why.empty()) return why;
      if (by_key && r.capture_key != batch.capture_key) {
        return std::string("a request's prepared capture key ")
            .append(std::to_string(r.capture_key))
            .append(" is not the batch's ")
            .append(std::to_string(batch.capture_key));
      }
      ++row;
    }
    // A bucket whose slots are all busy leaves the batch to the next larger one with a free slot.
    if (!pool.CanLease()) return "every slot of the bucket is leased or in flight";
    return "";
  };
  std::string reason;
  std::optional<CaptureChoice> choice =
      captures->Choose(batch.walk, batch.capture_key, shape.rows, shape.total_tokens,
                       shape.max_tokens, &reason, mismatch);
  if (!choice) {
    captures->Fallback(batch.walk, shape.rows, shape.total_tokens, reason);
    return std::nullopt;
  }
  std::optional<int32_t> slot = choice->pool->Lease(shape.rows);
  if (!slot) {
    captures->Fallback(batch.walk, shape.rows, shape.total_tokens,
                       "every slot of the bucket is leased or in flight");
    return std::nullopt;
  }
  uint32_t bucket_rows = choice->pool->site().bucket.batch_size;
  return SlotLease{*slot, choice->config, choice->bucket, shape.rows,
                   bucket_rows > shape.rows ? bucket_rows - shape.rows : 0};
}

void Engine::PrePlanDecl(const ExecutingBatch& batch, Decl& decl, bool as_preplanned) {
  const std::vector<RequestId>& preplanned = batch.preplanned_ids;
  std::vector<size_t> members;
  for (size_t m = 0; m < batch.requests.size(); ++m) {
    const StepRequest& r = batch.requests[m];
    const bool member =
        as_preplanned ? std::find(preplanned.begin(), preplanned.end(), r.id) != preplanned.end()
                      : r.active();
    if (member) members.push_back(m);
  }
  decl.Build(batch, std::move(members));
  decl.decl.preplan = 1;
}

bool Engine::PrePlanForBatch(ExecutingBatch& batch) {
  if (batch.slot < 0 || !CanPrePlan(batch.node)) return false;
  NodeRuntime& node = *runtime_->node(batch.node);
  Decl pre;
  PrePlanDecl(batch, pre);
  const mstar_step_decl_t& decl = pre.decl;
  if (decl.num_requests == 0) return false;
  std::vector<ResourceRuntime*> planned;
  Status status;
  for (ResourceRuntime* resource : node.resources) {
    if (!resource->pre_plans()) continue;
    std::unique_lock<std::mutex> lock(resource->mutex);
    WaitForExecSteps(*resource, lock);  // the executor's step on it commits (or aborts) first
    const mstar_resource_vtable_t* t = resource->table();
    void* self = resource->instance->self();
    planned.push_back(resource);
    status = CallPlugin(*resource->instance, "declare", [&] { return t->declare(self, &decl); });
    for (uint32_t i = 0; i < decl.num_requests && status.ok(); ++i) {
      mstar_admit_t admit{sizeof(mstar_admit_t), MSTAR_ABI_MINOR, MSTAR_ADMIT_READY, 0, 0};
      status = CallPlugin(*resource->instance, "admit",
                          [&] { return t->admit(self, &decl, i, &admit); });
      if (status.ok() && admit.outcome != MSTAR_ADMIT_READY) status = Unavailable("not ready");
    }
    if (status.ok()) {
      TensorMapPtr view = NewTensorMap();  // exec plans again and promotes what was staged
      LaneUse plan(ResourceStreams(*resource), DeviceStreams::kPlan);
      status = CallPlugin(*resource->instance, "plan",
                          [&] { return t->plan(self, &decl, view.get(), plan.stream()); });
    }
    if (!status.ok()) break;
  }
  if (!status.ok()) {
    Log().debug("{}: no pre-plan of {} requests into slot {}; the step plans when it runs: {}",
                node.name, decl.num_requests, batch.slot, status.message());
    // Exec plans inline (and sees the same not-ready or failure there, per request). An exec
    // step opened on a resource since it was pre-planned settles first: the abort must not undo
    // what that step's admit took.
    for (ResourceRuntime* resource : planned) {
      std::unique_lock<std::mutex> lock(resource->mutex);
      WaitForExecSteps(*resource, lock);
      resource->AbortStep(decl);
      resource->ResetPrePlan(batch.slot);
    }
    return false;
  }
  batch.preplanned = true;
  batch.preplanned_ids.assign(pre.ids.begin(), pre.ids.end());
  if (SlotPool* pool = captures_[static_cast<size_t>(batch.node)]->PoolOf(batch.slot)) {
    CaptureEvent event = pool->site();
    event.kind = CaptureEventKind::kPrePlan;
    event.slot = batch.slot;
    event.rows = decl.num_requests;
    event.padding = decl.padded_rows;
    BackendForCapture(node.spec->device).value()->Record(std::move(event));
  }
  return true;
}

std::string Engine::StaleReason(const ExecutingBatch& batch) {
  if (!batch.preplanned) return "";
  if (batch.ActiveIds() != batch.preplanned_ids) return "the batch's requests changed";
  NodeRuntime& node = *runtime_->node(batch.node);
  Decl pre;
  PrePlanDecl(batch, pre);
  mstar_step_decl_t& decl = pre.decl;
  decl.preplan = 0;
  for (ResourceRuntime* resource : node.resources) {
    if (!resource->pre_plans() || resource->table()->preplan_is_stale == nullptr) continue;
    uint32_t stale = 0;
    std::lock_guard<std::mutex> lock(resource->mutex);
    Status status = CallPlugin(*resource->instance, "preplan_is_stale", [&] {
      return resource->table()->preplan_is_stale(resource->instance->self(), &decl, &stale);
    });
    if (!status.ok()) return status.message();
    if (stale != 0) return "resource '" + resource->label + "' says its pre-plan is stale";
  }
  return "";
}

bool Engine::PreplanIsStale(const ExecutingBatch& batch) {
  return !StaleReason(batch).empty();
}

void Engine::ReleaseLease(ExecutingBatch& batch, const std::string& reason, mstar_stream* after) {
  if (batch.slot < 0) return;
  NodeCaptures* captures = captures_[static_cast<size_t>(batch.node)].get();
  if (SlotPool* pool = captures != nullptr ? captures->PoolOf(batch.slot) : nullptr) {
    if (!reason.empty()) {
      BatchShape shape = ShapeOf(batch);
      captures->Fallback(batch.walk, shape.rows, shape.total_tokens, reason);
    }
    // The slot's staging (host or device) stays in use until the work queued on `after` has
    // read it: the next lease of the slot waits for that.
    if (after != nullptr) {
      EndLeaseAfter(*runtime_->node(batch.node), *pool, batch.slot, after);
    } else {
      pool->Release(batch.slot);
    }
  }
  batch.slot = -1;
  batch.lease = SlotLease{};
  batch.preplanned = false;
}

void Engine::EndLeaseAfter(NodeRuntime& node, SlotPool& pool, int32_t slot, mstar_stream* after) {
  Result<CaptureBackend*> backend = BackendForCapture(node.spec->device);
  Result<FenceHandle> fence =
      backend.ok() ? backend.value()->RecordFence(after) : Result<FenceHandle>(backend.status());
  if (fence.ok()) return pool.Launched(slot, fence.value());
  // Without a fence the slot is only safe to reuse once everything on the stream has run.
  if (after->backend != nullptr) {
    Status synced = after->backend->SynchronizeStream(after->device, after->native);
    if (!synced.ok()) Log().warn("{}: {}", node.instance->label(), synced.message());
  }
  pool.Launched(slot, FenceHandle{nullptr});
}

void Engine::ResetPrePlanForBatch(ExecutingBatch* batch) {
  if (batch == nullptr) {
    for (auto& resource : runtime_->resources()) {
      if (resource->table()->reset_pre_plan == nullptr) continue;
      std::lock_guard<std::mutex> lock(resource->mutex);
      resource->ResetPrePlan(-1);
    }
    return;
  }
  if (batch->slot < 0) return;
  NodeRuntime& node = *runtime_->node(batch->node);
  if (batch->preplanned) {
    // The step as it was pre-planned. A resource may have had a later step declared since (the
    // exec step's, or the next batch's pre-plan), which replaced it; aborting it then gives back
    // what that later declaration's admits took, which its own step takes again when it runs.
    Decl pre;
    PrePlanDecl(*batch, pre, /*as_preplanned=*/true);
    const mstar_step_decl_t& decl = pre.decl;
    for (ResourceRuntime* resource : node.resources) {
      if (!resource->pre_plans()) continue;
      std::lock_guard<std::mutex> lock(resource->mutex);
      resource->AbortStep(decl);
      resource->ResetPrePlan(batch->slot);
    }
    if (SlotPool* pool = captures_[static_cast<size_t>(batch->node)]->PoolOf(batch->slot)) {
      CaptureEvent event = pool->site();
      event.kind = CaptureEventKind::kReset;
      event.slot = batch->slot;
      event.rows = batch->lease.rows;
      event.padding = batch->lease.padding;
      BackendForCapture(node.spec->device).value()->Record(std::move(event));
    }
  }
  // After the plans' staging copies: those of resources on another device were given to that
  // device's plan stream, which the node's then waits for (or, failing that, the host).
  mstar_stream* plan = NodeStreams(node).plan();
  for (DeviceStreams* source : node_streams_[static_cast<size_t>(node.index)]) {
    if (source == &NodeStreams(node)) continue;
    if (Status ordered = source->OrderAfter(plan, DeviceStreams::kPlan); !ordered.ok()) {
      Log().warn("{}: {}", node.instance->label(), ordered.message());
      if (Status synced = source->Synchronize(DeviceStreams::kPlan); !synced.ok())
        Log().warn("{}: {}", node.instance->label(), synced.message());
    }
  }
  ReleaseLease(*batch, "", plan);
}

void Engine::CheckPrePlan(ExecutingBatch& batch) {
  if (batch.slot < 0) return;
  if (batch.ActiveCount() == 0) {  // nothing will dispatch: give everything back
    ResetPrePlanForBatch(&batch);
    return;
  }
  std::string reason = StaleReason(batch);
  if (!reason.empty()) DropPrePlan(batch, reason);
}

void Engine::DropPrePlan(ExecutingBatch& batch, const std::string& reason) {
  NodeRuntime& node = *runtime_->node(batch.node);
  for (ResourceRuntime* resource : node.resources) {
    if (!resource->pre_plans() || resource->table()->reset_pre_plan == nullptr) continue;
    std::lock_guard<std::mutex> lock(resource->mutex);
    resource->ResetPrePlan(batch.slot);
  }
  batch.preplanned = false;
  if (SlotPool* pool = captures_[static_cast<size_t>(batch.node)]->PoolOf(batch.slot)) {
    CaptureEvent event = pool->site();
    event.kind = CaptureEventKind::kStaleReplan;
    event.slot = batch.slot;
    event.rows = static_cast<uint32_t>(batch.ActiveCount());
    event.reason = reason;
    BackendForCapture(node.spec->device).value()->Record(std::move(event));
  }
}

Status Engine::ForwardEager(NodeRuntime& node, mstar_step_t& step, bool batched) {
  std::lock_guard<std::mutex> lock(node.mutex);
  const mstar_submodule_vtable_t* t = node.table();
  return batched ? CallPlugin(*node.instance, "forward_batched",
                              [&] { return t->forward_batched(node.instance->self(), &step); })
                 : CallPlugin(*node.instance, "forward",
                              [&] { return t->forward(node.instance->self(), &step); });
}

Status Engine::ForwardStep(NodeRuntime& node, ExecutingBatch& batch,
                           const std::vector<size_t>& members, mstar_step_t& step, bool batched) {
  if (batch.slot >= 0) {
    NodeCaptures* captures = captures_[static_cast<size_t>(batch.node)].get();
    SlotPool* pool = captures != nullptr ? captures->PoolOf(batch.slot) : nullptr;
    if (batched && pool != nullptr) return Replay(node, batch, members, step, *pool);
    step.slot = -1;
    Status forward = ForwardWithRegions(node, batch, step, batched);
    ReleaseLease(batch, "", NodeStreams(node).exec());  // after the forward read the slot's views
    return forward;
  }
  step.slot = -1;
  return ForwardWithRegions(node, batch, step, batched);
}

Status Engine::Replay(NodeRuntime& node, ExecutingBatch& batch, const std::vector<size_t>& members,
                      mstar_step_t& step, SlotPool& pool) {
  CaptureSlot& slot = pool.slot(batch.slot);
  const uint32_t rows = static_cast<uint32_t>(members.size());
  const uint32_t bucket_rows = slot.inputs.rows();
  Result<CaptureBackend*> found = BackendForCapture(node.spec->device);
  CaptureBackend* backend = found.ok() ? found.value() : nullptr;
  std::string reason;
  if (backend == nullptr) reason = found.status().message();
  if (reason.empty() && rows > bucket_rows) reason = "the batch outgrew its bucket";
  for (uint32_t k = 0; reason.empty() && k < rows; ++k) {
    reason = slot.inputs.Mismatch(k, *batch.requests[members[k]].prepared);
  }
  if (reason.empty() && backend != nullptr && !backend->replays_eagerly()) {
    for (uint32_t k = 0; reason.empty() && k < step.num_resources; ++k) {
      reason = slot.views.Mismatch(k, *step.resources[k].tensors);
      if (!reason.empty()) reason = "resource view: " + reason;
    }
  }
  if (!reason.empty()) {
    step.slot = -1;
    Status forward = ForwardWithRegions(node, batch, step, true);
    ReleaseLease(batch, reason, NodeStreams(node).exec());  // after the forward read its views
    return forward;
  }
  mstar_stream* stream = NodeStreams(node).exec();
  Status status;
  for (uint32_t k = 0; k < rows && status.ok(); ++k) {
    status = slot.inputs.Load(k, *batch.requests[members[k]].prepared, stream->native);
  }
  if (status.ok()) status = slot.inputs.Pad(rows, stream->native);
  const uint32_t padding = bucket_rows - rows;
  if (status.ok() && padding > 0) {
    CaptureEvent event = pool.site();
    event.kind = CaptureEventKind::kPadding;
    event.slot = batch.slot;
    event.rows = rows;
    event.padding = padding;
    backend->Record(std::move(event));
  }
  if (status.ok() && backend->replays_eagerly()) {
    // The forward runs eagerly over the padded rows; the padding rows' outputs are dropped.
    std::vector<const mstar_request_info_t*> infos(step.requests, step.requests + rows);
    std::vector<const mstar_tensor_map_t*> inputs;
    std::vector<mstar_tensor_map_t*> outputs(step.outputs, step.outputs + rows);
    std::vector<uint32_t> tokens(step.num_tokens, step.num_tokens + rows);
    std::vector<TensorMapPtr> dropped;
    for (uint32_t r = 0; r < bucket_rows; ++r) inputs.push_back(slot.inputs.row(r));
    for (uint32_t r = rows; r < bucket_rows; ++r) {
      infos.push_back(&slot.dummy_rows[r]);
      tokens.push_back(slot.dummy_tokens[r]);
      dropped.push_back(NewTensorMap());
      outputs.push_back(dropped.back().get());
    }
    mstar_step_t padded = step;
    padded.requests = infos.data();
    padded.inputs = inputs.data();
    padded.outputs = outputs.data();
    padded.num_tokens = tokens.data();
    padded.padded_rows = padding;
    padded.slot = batch.slot;
    padded.stream = stream;
    status = ForwardEager(node, padded, true);
    if (status.ok()) status = backend->Launch(slot.exec, stream);
    // The outputs outlive the lease (the GPU path copies them out of the slot likewise).
    for (uint32_t k = 0; k < rows && status.ok(); ++k) {
      if (!SharesBytesWith(*step.outputs[k], slot.inputs)) continue;
      Result<TensorMapPtr> copy = CopyTensorMap(*step.outputs[k], stream->native);
      if (!copy.ok()) {
        status = copy.status();
        break;
      }
      step.outputs[k]->Clear();
      MoveTensors(*copy.value(), *step.outputs[k]);
    }
  } else if (status.ok()) {
    for (uint32_t k = 0; k < step.num_resources && status.ok(); ++k) {
      status = slot.views.Load(k, *step.resources[k].tensors, stream->native);
    }
    if (status.ok()) status = backend->Launch(slot.exec, stream);
    for (uint32_t k = 0; k < rows && status.ok(); ++k) {
      Result<TensorMapPtr> copy = CopyTensorMap(*slot.outputs[k], stream->native);
      if (!copy.ok()) {
        status = copy.status();
        break;
      }
      // The copies move from the copy's map into the step's outputs (host tensors, made above).
      MoveTensors(*copy.value(), *step.outputs[k]);
    }
  }
  if (status.ok()) {
    CaptureEvent event = pool.site();
    event.kind = CaptureEventKind::kReplay;
    event.slot = batch.slot;
    event.rows = rows;
    event.padding = padding;
    backend->Record(std::move(event));
  }
  if (!status.ok() && batch.preplanned) {
    // The step fails (and its requests may be retried eagerly): nothing staged survives it.
    for (ResourceRuntime* resource : node.resources) {
      if (!resource->pre_plans() || resource->table()->reset_pre_plan == nullptr) continue;
      std::lock_guard<std::mutex> lock(resource->mutex);
      resource->ResetPrePlan(batch.slot);
    }
  }
  // The slot is leased again once what this step gave the stream has run, failed or not (a view
  // copied into its buffers, the graph, its outputs copied out). The host reads the outputs after
  // Exec's FinishExec has waited for the stream.
  EndLeaseAfter(node, pool, batch.slot, stream);
  batch.slot = -1;  // a retry after a failure runs eagerly
  batch.preplanned = false;
  return status;
}

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Columnar steps (a cohort's step, columnar_batch.h): prepare_inputs_columnar, the node's
// resources (declare -> admit -> plan, then commit) and the columnar forward over all rows at
// once, and the columnar stop check. A failure of the whole call is retried one row at a time so
// that only the failing rows fail, as with per-request batches (except a failed commit: its rows
// fail, since a resource may have committed them). A row that a resource cannot
// admit yet is deferred: it does not run, and its request continues on the per-request path.
#include <numeric>

#include "core/clock.h"
#include "core/logging.h"
#include "device/device.h"
#include "engine/engine.h"
#include "engine/engine_decl.h"
#include "engine/input_tokens.h"
#include "plugin/columnar.h"
#include "plugin/slots.h"
#include "plugin/step_arrays.h"

namespace mstar {

// A columnar step's per-step buffers (ColumnarBatch::scratch). Each pass empties what it uses.
struct ColumnarScratch {
  std::vector<uint32_t> rows;                           // ExecColumnar: the rows run together
  std::vector<const mstar_request_info_t*> infos;       // RunColumnarRows: the step's requests
  std::vector<uint32_t> tokens;                         // and the tokens prepare gave each
  Engine::Decl decl;                                    // the step as its resources see it
  ResourceViews views;                                  // what they planned (maps emptied after)
  std::vector<const mstar_request_info_t*> stop_infos;  // CheckStopColumnar's rows that ran
  std::vector<uint64_t> stop_masks;
  std::vector<int64_t> row_dims;  // ExtendPrefixChainsColumnar: a row view's shape
  RowTokenInputs token_inputs;    // the rows' token ids for the resources
};

void ColumnarScratchDelete::operator()(ColumnarScratch* scratch) const {
  delete scratch;
}

namespace {

ColumnarScratch& ScratchOf(ColumnarBatch& c) {
  if (c.scratch == nullptr) c.scratch.reset(new ColumnarScratch);
  return *c.scratch;
}

// Still taking part in the step: neither failed nor deferred.
bool RowActive(const ColumnarRow& row) {
  return !row.failed() && !row.deferred;
}

// Admission outcomes on a columnar batch's rows: an unservable row fails, a row not ready is
// deferred (its request leaves the cohort for the per-request path, which knows memory pressure).
class RowMarks final : public Engine::AdmitMarks {
 public:
  explicit RowMarks(ExecutingBatch& batch) : batch_(batch) {}
  bool Active(size_t k) const override { return RowActive(batch_.columnar->rows[k]); }
  void Unservable(size_t k, const std::string& message) override {
    batch_.columnar->Fail(batch_.columnar->rows[k], "unservable: " + message);
  }
  void NotReady(size_t k, const mstar_admit_t& admit, const std::string& resource) override {
    (void)admit;
    (void)resource;
    batch_.columnar->rows[k].deferred = true;
  }

 private:
  ExecutingBatch& batch_;
};

// Fails a row the failed step had not already left out: one a resource could not serve keeps
// that error, and one deferred (not ready, before a later resource's declare failed) goes on
// to the per-request path.
void FailIfActive(ColumnarBatch& c, ColumnarRow& row, const std::string& message) {
  if (RowActive(row)) c.Fail(row, message);
}

// Keeps, of a columnar map over num_requests requests, those at positions keep (in order):
// *tensors and *rows are replaced by maps over those.
Status KeepRequests(const std::vector<size_t>& keep, size_t num_requests, TensorMapPtr* tensors,
                    TensorMapPtr* rows) {
  std::vector<TensorMapPtr> split;
  std::vector<mstar_tensor_map*> targets;
  for (size_t i = 0; i < num_requests; ++i) {
    split.push_back(NewTensorMap());
    targets.push_back(split.back().get());
  }
  MSTAR_RETURN_IF_ERROR(ScatterColumnar(**tensors, **rows, targets));
  std::vector<const mstar_tensor_map*> kept;
  for (size_t i : keep) kept.push_back(split[i].get());
  TensorMapPtr stacked = NewTensorMap();
  TensorMapPtr stacked_rows = NewTensorMap();
  MSTAR_RETURN_IF_ERROR(GatherColumnar(kept, "prepared input", stacked.get(), stacked_rows.get()));
  *tensors = std::move(stacked);
  *rows = std::move(stacked_rows);
  return Status::Ok();
}

// Fails every row of c that has not failed and did not wait for a later step.
void FailRowsLeft(ColumnarBatch& c, const std::string& message) {
  for (ColumnarRow& row : c.rows) {
    if (row.failed() || row.deferred) continue;
    c.Fail(row, message);
    row.out = -1;
  }
}

}  // namespace

bool Engine::RunsColumnar(int node_index) {
  NodeRuntime& node = *runtime_->node(node_index);
  const mstar_submodule_vtable_t* t = node.table();
  return node.columnar() && node.batched() && MSTAR_HAS_SLOT(t, prepare_inputs_columnar, 1) &&
         node.capture_configs.empty();
}

Status Engine::RunColumnarRows(NodeRuntime& node, ExecutingBatch& batch,
                               std::vector<uint32_t>& rows, const mstar_tensor_map& inputs,
                               const mstar_tensor_map& input_rows, ColumnarOutputs* out) {
  ColumnarBatch& c = *batch.columnar;
  const mstar_submodule_vtable_t* t = node.table();
  ColumnarScratch& scratch = ScratchOf(c);
  std::vector<const mstar_request_info_t*>& infos = scratch.infos;
  infos.clear();
  for (uint32_t k : rows) infos.push_back(c.info_ptrs[k]);
  std::vector<uint32_t>& tokens = scratch.tokens;
  tokens.assign(rows.size(), 0);
  mstar_step_t step = EagerStep(batch.node_name.c_str(), batch.walk.c_str(),
                                static_cast<uint32_t>(rows.size()), infos.data(), tokens.data());
  step.stream = NodeStreams(node).exec();
  step.columnar_inputs = &inputs;
  step.input_rows = &input_rows;
  TensorMapPtr prepared = NewTensorMap();
  TensorMapPtr prepared_rows = NewTensorMap();
  {
    std::lock_guard<std::mutex> lock(node.mutex);
    uint64_t start = NowNs();
    Status status = CallPlugin(*node.instance, "prepare_inputs_columnar", [&] {
      return t->prepare_inputs_columnar(node.instance->self(), &step, prepared.get(),
                                        prepared_rows.get(), tokens.data());
    });
    if (status.ok()) {
      status = CheckColumnar(*prepared, *prepared_rows, step.num_requests, "prepared input");
      if (!status.ok()) status = status.WithContext("prepare_inputs_columnar");
    }
    prepare_ns_ += NowNs() - start;
    if (!status.ok()) return status;
  }
  Decl& decl = scratch.decl;
  ResourceViews& views = scratch.views;
  // The plans' maps go when the step is through, not with the next step.
  struct ClearViews {
    ResourceViews& views;
    ~ClearViews() {
      views.maps.clear();
      views.views.clear();
    }
  } clear_views{views};
  const bool resources = !node.resources.empty();
  if (resources) {
    scratch.token_inputs.Build(inputs, input_rows, node.token_input, tokens);
    MSTAR_RETURN_IF_ERROR(AdmitColumnarRows(node, batch, rows, tokens, scratch.token_inputs.views(),
                                            prepared, prepared_rows, decl));
    if (rows.empty()) return Status::Ok();       // nobody was admitted: nothing runs
    step.num_requests = decl.decl.num_requests;  // the step is the admitted rows'
    step.requests = decl.infos.data();
    step.num_tokens = decl.tokens.data();
    MSTAR_RETURN_IF_ERROR(PlanResources(node, decl, views));
    views.AttachTo(step);
  }
  step.columnar_inputs = prepared.get();
  step.input_rows = prepared_rows.get();
  step.columnar_outputs = out->tensors.get();
  step.output_rows = out->rows.get();
  Status status = ExecAfterPlansAndCopies(node);
  if (status.ok()) {
    std::lock_guard<std::mutex> lock(node.mutex);
    uint64_t start = NowNs();
    status = CallPlugin(*node.instance, "forward_batched",
                        [&] { return t->forward_batched(node.instance->self(), &step); });
    forward_ns_ += NowNs() - start;
    ++forward_calls_;
  }
  if (status.ok()) {
    status = CheckColumnar(*out->tensors, *out->rows, step.num_requests, "output");
    if (!status.ok()) status = status.WithContext("columnar forward_batched");
  }
  if (!status.ok()) {
    if (resources) AbortDecl(node, decl);
  } else if (resources) {
    status = CommitResources(node, decl);
    if (!status.ok()) {
      // The resources before the failing one committed the rows: run again, one at a time, they
      // would add the step to that state twice. The rows fail, as members of a per-request step
      // do; removing their requests releases what was committed.
      for (uint32_t k : rows) c.Fail(c.rows[k], status.message());
      rows.clear();
      status = Status::Ok();
    }
  }
  if (!status.ok() || rows.empty()) {
    out->tensors->Clear();
    out->rows->Clear();
  }
  return status;
}

Status Engine::AdmitColumnarRows(NodeRuntime& node, ExecutingBatch& batch,
                                 std::vector<uint32_t>& rows, const std::vector<uint32_t>& tokens,
                                 const std::vector<const mstar_tensor_t*>& input_tokens,
                                 TensorMapPtr& prepared, TensorMapPtr& prepared_rows, Decl& decl) {
  decl.BuildRows(batch, rows, tokens, input_tokens);
  RowMarks marks(batch);
  // A failed declare is the whole step's failure: retried one row at a time, like a forward's.
  MSTAR_RETURN_IF_ERROR(AdmitAll(node, batch, decl, marks));
  if (decl.members.empty()) {
    rows.clear();
    return Status::Ok();
  }
  if (decl.members.size() == rows.size()) return Status::Ok();
  // Some rows left the step: the prepared inputs keep the others' (positions in rows).
  std::vector<size_t> keep;
  for (size_t i = 0, j = 0; i < rows.size() && j < decl.members.size(); ++i) {
    if (rows[i] == decl.members[j]) {
      keep.push_back(i);
      ++j;
    }
  }
  const size_t num_requests = rows.size();
  rows.assign(decl.members.begin(), decl.members.end());
  Status kept = KeepRequests(keep, num_requests, &prepared, &prepared_rows);
  if (!kept.ok()) AbortDecl(node, decl);
  return kept;
}

void Engine::ExecColumnar(ExecutingBatch& batch) {
  NodeRuntime& node = *runtime_->node(batch.node);
  ColumnarBatch& c = *batch.columnar;
  const auto n = static_cast<uint32_t>(c.rows.size());
  // A recycled batch kept its outputs, emptied, only if nothing else held them (its Clear).
  if (c.outputs == nullptr) c.outputs = std::make_shared<ColumnarOutputs>();
  std::vector<uint32_t>& rows = ScratchOf(c).rows;
  rows.resize(n);
  std::iota(rows.begin(), rows.end(), 0u);
  ExecStepScope open(node.resources);
  Status status = RunColumnarRows(node, batch, rows, *c.inputs, *c.input_rows, c.outputs.get());
  if (status.ok()) {
    for (uint32_t i = 0; i < rows.size(); ++i) c.rows[rows[i]].out = static_cast<int32_t>(i);
  } else if (n == 1) {
    FailIfActive(c, c.rows[0], status.message());
  } else {
    Log().warn("{}: columnar step of {} requests failed ({}); retrying one request at a time",
               node.instance->label(), n, status.message());
    RetryColumnarRows(node, batch);
  }
  if (Status finished = FinishExec(node); !finished.ok()) FailRowsLeft(c, finished.message());
}

void Engine::RetryColumnarRows(NodeRuntime& node, ExecutingBatch& batch) {
  ColumnarBatch& c = *batch.columnar;
  const auto n = static_cast<uint32_t>(c.rows.size());
  std::vector<TensorMapPtr> inputs;
  std::vector<mstar_tensor_map*> targets;
  for (uint32_t k = 0; k < n; ++k) {
    inputs.push_back(NewTensorMap());
    targets.push_back(inputs.back().get());
  }
  if (Status split = ScatterColumnar(*c.inputs, *c.input_rows, targets); !split.ok())
    return FailRowsLeft(c, "splitting the step's inputs: " + split.message());
  std::vector<std::shared_ptr<ColumnarOutputs>> outputs;
  std::vector<const mstar_tensor_map*> ran;
  for (uint32_t k = 0; k < n; ++k) {
    // A row refused or deferred by the whole step's admission is retried too: admission is
    // asked again for the row alone.
    c.rows[k].deferred = false;
    if (c.rows[k].failed()) continue;
    const mstar_tensor_map* one[] = {inputs[k].get()};
    TensorMapPtr stacked = NewTensorMap();
    TensorMapPtr rows = NewTensorMap();
    Status status = GatherColumnar(one, "input", stacked.get(), rows.get());
    auto out = std::make_shared<ColumnarOutputs>();
    std::vector<uint32_t> row = {k};
    if (status.ok()) status = RunColumnarRows(node, batch, row, *stacked, *rows, out.get());
    if (!status.ok()) {
      FailIfActive(c, c.rows[k], status.message());
      continue;
    }
    if (row.empty()) continue;  // not admitted (failed or deferred)
    c.rows[k].out = static_cast<int32_t>(ran.size());
    ran.push_back(out->tensors.get());
    outputs.push_back(std::move(out));
  }
  // One request's outputs of a one-row step are its rows: stacked, they are the step's outputs.
  Status stacked = GatherColumnar(ran, "output", c.outputs->tensors.get(), c.outputs->rows.get());
  if (!stacked.ok()) {
    for (ColumnarRow& row : c.rows) {
      if (row.out < 0) continue;
      c.Fail(row, "the requests' outputs do not stack: " + stacked.message());
      row.out = -1;
    }
  }
}

bool Engine::ColumnarStopInputsOnHost(const ExecutingBatch& batch) {
  const NodeRuntime& node = *runtime_->node(batch.node);
  const ColumnarBatch& c = *batch.columnar;
  if (c.outputs == nullptr) return true;
  for (const std::string& name : node.stop_outputs) {
    const mstar_tensor_map::Entry* entry = c.outputs->tensors->Find(name);
    if (entry == nullptr) continue;
    for (const mstar_tensor_t* tensor : entry->tensors) {
      if (!IsHostDevice(tensor->dl.device)) return false;
    }
  }
  return true;
}

void Engine::CheckStopColumnar(ExecutingBatch& batch) {
  uint64_t start = NowNs();
  NodeRuntime& node = *runtime_->node(batch.node);
  ColumnarBatch& c = *batch.columnar;
  const mstar_submodule_vtable_t* t = node.table();
  const uint32_t ran = c.ran();
  // The stop outputs' host view is made even without a stop check: resources read it to extend
  // their prefix chains (ExtendPrefixChainsColumnar), as on the per-request path.
  if (ran == 0) return;
  if (node.stop_outputs.empty()) {
    // A check that reads no output still runs (on the request's info alone), over an empty view,
    // as on the per-request path.
    if (c.host_outputs == nullptr) c.host_outputs = NewTensorMap();
    c.host_outputs->Clear();
    c.stop_view = c.host_outputs.get();
  } else if (AllOnHost(*c.outputs->tensors)) {
    // The check is promised host memory: the outputs themselves only when all of them are.
    c.stop_view = c.outputs->tensors.get();
  } else {
    if (c.host_outputs == nullptr) c.host_outputs = NewTensorMap();
    Status copied = AppendHostCopies(node.stop_outputs, *c.outputs->tensors, c.host_outputs.get());
    if (!copied.ok()) {
      for (ColumnarRow& row : c.rows) {
        if (row.out < 0) continue;
        c.Fail(row, "copying outputs for the stop check: " + copied.message());
      }
      return;
    }
    c.stop_view = c.host_outputs.get();
  }
  if (t->check_stop == nullptr) return;
  // The check's step: the rows that ran, in their output order.
  ColumnarScratch& scratch = ScratchOf(c);
  std::vector<const mstar_request_info_t*>& infos = scratch.stop_infos;
  infos.assign(ran, nullptr);
  for (uint32_t k = 0; k < c.rows.size(); ++k) {
    if (c.rows[k].out >= 0) infos[static_cast<size_t>(c.rows[k].out)] = c.info_ptrs[k];
  }
  std::vector<uint64_t>& masks = scratch.stop_masks;
  masks.assign(ran, 0);
  const bool columnar = MSTAR_HAS_SLOT(t, check_stop_columnar, 1);
  Status status;
  if (columnar) {
    mstar_step_t step =
        EagerStep(batch.node_name.c_str(), batch.walk.c_str(), ran, infos.data(), nullptr);
    std::lock_guard<std::mutex> lock(node.mutex);
    status = CallPlugin(*node.instance, "check_stop_columnar", [&] {
      return t->check_stop_columnar(node.instance->self(), &step, c.stop_view,
                                    c.outputs->rows.get(), masks.data());
    });
    if (!status.ok()) {
      Log().warn("{}: columnar stop check failed ({}); checking one request at a time",
                 node.instance->label(), status.message());
    }
  }
  if (columnar && status.ok()) {
    for (ColumnarRow& row : c.rows) {
      if (row.out >= 0) row.stop_mask = masks[static_cast<size_t>(row.out)];
    }
  } else {
    CheckStopRowByRow(node, batch);
  }
  stop_ns_ += NowNs() - start;
}

void Engine::CheckStopRowByRow(NodeRuntime& node, ExecutingBatch& batch) {
  ColumnarBatch& c = *batch.columnar;
  const uint32_t ran = c.ran();
  std::vector<TensorMapPtr> views;
  std::vector<mstar_tensor_map*> targets;
  for (uint32_t i = 0; i < ran; ++i) {
    views.push_back(NewTensorMap());
    targets.push_back(views.back().get());
  }
  Status split = ScatterColumnar(*c.stop_view, *c.outputs->rows, targets);
  std::lock_guard<std::mutex> lock(node.mutex);
  for (uint32_t k = 0; k < c.rows.size(); ++k) {
    ColumnarRow& row = c.rows[k];
    if (row.out < 0) continue;
    uint64_t mask = 0;
    Status status = split;
    if (status.ok()) {
      status = CallPlugin(*node.instance, "check_stop", [&] {
        return node.table()->check_stop(node.instance->self(), c.info_ptrs[k],
                                        views[static_cast<size_t>(row.out)].get(), &mask);
      });
    }
    if (status.ok()) {
      row.stop_mask = mask;
    } else {
      c.Fail(row, status.message());
    }
  }
}

void Engine::ExtendPrefixChainsColumnar(NodeRuntime& node, ExecutingBatch& batch) {
  ColumnarBatch& c = *batch.columnar;
  if (c.stop_view == nullptr) return;
  const std::string& name = node.stop_outputs.front();
  const mstar_tensor_map::Entry* tokens = c.stop_view->Find(name);
  if (tokens == nullptr || tokens->tensors.empty()) return;
  const RowOffsets offsets(*c.outputs->rows, name, 0);
  std::vector<int64_t>& dims = ScratchOf(c).row_dims;
  for (ResourceRuntime* resource : node.resources) {
    if (resource->table()->extend_prefix_chains == nullptr) continue;
    std::lock_guard<std::mutex> lock(resource->mutex);  // once for the batch
    for (ColumnarRow& row : c.rows) {
      if (row.out < 0 || row.failed()) continue;
      // The row's tokens: a view of its rows of the step's tensor (borrowed by the call).
      const auto out = static_cast<uint32_t>(row.out);
      mstar_tensor_t view;
      RowView(*tokens->tensors.front(), offsets.begin(out), offsets.count(out), &view, &dims);
      const mstar_request_id_t id = c.info_ptrs[&row - c.rows.data()]->request_id;
      Status status = CallPlugin(*resource->instance, "extend_prefix_chains", [&] {
        return resource->table()->extend_prefix_chains(resource->instance->self(), id, &view);
      });
      if (!status.ok()) c.Fail(row, status.message());
    }
  }
}

}  // namespace mstar

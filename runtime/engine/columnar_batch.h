// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// ColumnarBatch: one step of a cohort (conductor_cohort.cc) on its way through the engine. The
// rows are requests of one decode loop; their node inputs travel stacked as one tensor per name
// and the step runs in the columnar form of the ABI (mstar/request.h): one prepare, one forward
// and one stop check for the whole batch, instead of a map, a prepare and a check per request.
//
// Filled by the conductor under its lock when the step is formed, then used by one pipeline
// thread at a time (plan, exec, finish), like the rest of an ExecutingBatch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "host/tensor_objects.h"
#include "mstar/request.h"

namespace mstar {

struct Request;
struct Cohort;
struct CohortMember;

// What a columnar step produced: one tensor per output name over the rows that ran, and the row
// offsets of outputs not one row per request. Shared by the step (for the finisher) and its
// cohort (the next step's inputs come from it).
struct ColumnarOutputs {
  TensorMapPtr tensors = NewTensorMap();
  TensorMapPtr rows = NewTensorMap();
};

// The engine's buffers for a columnar step's exec and stop check (engine_columnar.cc), kept with
// the batch object from step to step so that a step allocates none of them again.
struct ColumnarScratch;
struct ColumnarScratchDelete {
  void operator()(ColumnarScratch* scratch) const;
};

// Plain data: a step's rows are written once per row and step.
struct ColumnarRow {
  // The membership the row was formed for: member while member->serial == serial (the row is
  // counted in member->in_flight), else ended (counted in req->in_flight). Both records outlive
  // the step.
  CohortMember* member = nullptr;
  Request* req = nullptr;
  uint64_t serial = 0;
  int32_t error = -1;  // -1, or the row failed: its message in ColumnarBatch::errors
  int32_t out = -1;    // the row's index among the outputs' rows; -1 when it did not run
  uint64_t stop_mask = 0;
  bool deferred = false;  // a resource could not admit it yet: it did not run
  bool failed() const { return error >= 0; }
};

struct ColumnarBatch {
  Cohort* cohort = nullptr;
  std::vector<ColumnarRow> rows;
  // What the hooks see per row: infos pointing into iterations and limits (one enclosing loop).
  // infos outlives Clear: info_serials names the membership each row's info was copied from, so
  // a member formed into the same row of this batch object again is not copied again (a member's
  // info does not change while it is one; serials are never reused).
  std::vector<mstar_request_info_t> infos;
  std::vector<uint64_t> info_serials;
  std::vector<const mstar_request_info_t*> info_ptrs;
  std::vector<uint32_t> iterations;
  std::vector<uint32_t> limits;
  const char* loop_name = nullptr;           // null: the node is in no loop (a one-step walk)
  TensorMapPtr inputs = NewTensorMap();      // the node inputs, stacked over rows
  TensorMapPtr input_rows = NewTensorMap();  // their offsets (names not one row per request)
  std::shared_ptr<ColumnarOutputs> outputs;  // over the rows that ran (empty before the exec)
  // What the stop check read: outputs->tensors when on the host, else host_outputs.
  TensorMapPtr host_outputs;
  const mstar_tensor_map* stop_view = nullptr;
  std::vector<std::string> errors;  // the failed rows' messages (rare; ColumnarRow::error)
  // The rows' exec results are applied to their members (by CohortAfterExec, or by the finish
  // when it follows on the same thread).
  bool rows_settled = false;
  std::unique_ptr<ColumnarScratch, ColumnarScratchDelete> scratch;  // made on first use

  // Marks row failed with message.
  [[gnu::cold]] void Fail(ColumnarRow& row, std::string message) {
    row.error = static_cast<int32_t>(errors.size());
    errors.push_back(std::move(message));
  }
  const std::string& ErrorOf(const ColumnarRow& row) const {
    return errors[static_cast<size_t>(row.error)];
  }

  // Empties the batch for reuse by a later step, keeping its buffers; the tensors go now.
  void Clear() {
    cohort = nullptr;
    rows.clear();
    info_ptrs.clear();
    iterations.clear();
    limits.clear();
    loop_name = nullptr;
    inputs->Clear();
    input_rows->Clear();
    // The outputs' maps are kept for the next step unless another holder still reads them.
    if (outputs != nullptr && outputs.use_count() == 1) {
      outputs->tensors->Clear();
      outputs->rows->Clear();
    } else {
      outputs.reset();
    }
    if (host_outputs != nullptr) host_outputs->Clear();
    stop_view = nullptr;
    errors.clear();
    rows_settled = false;
  }
  // Points row k's info at its loop counters, or at none when the node is in no loop. A row's
  // links hold from step to step while its info is not copied again and the counters' vectors
  // have not moved (CountersMoved).
  void LinkInfo(size_t k) {
    const bool in_loop = loop_name != nullptr;
    infos[k].num_loops = in_loop ? 1 : 0;
    infos[k].loop_names = in_loop ? &loop_name : nullptr;
    infos[k].loop_iterations = in_loop ? &iterations[k] : nullptr;
    infos[k].loop_max_iterations = in_loop ? &limits[k] : nullptr;
  }
  // Whether the counters' vectors moved since the last call (which notes where they are now);
  // call once their capacity is reserved for the step.
  bool CountersMoved() {
    const bool moved = iterations.data() != linked_iterations_ || limits.data() != linked_limits_;
    linked_iterations_ = iterations.data();
    linked_limits_ = limits.data();
    return moved;
  }
  uint32_t ran() const {
    uint32_t n = 0;
    for (const ColumnarRow& row : rows) n += row.out >= 0 ? 1 : 0;
    return n;
  }

 private:
  const uint32_t* linked_iterations_ = nullptr;  // where the infos' links point (CountersMoved)
  const uint32_t* linked_limits_ = nullptr;
};

}  // namespace mstar

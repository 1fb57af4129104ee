// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// DummyStep: a warmup step of dummy requests at one capture bucket's size (Engine::
// PrepareDummyStep, engine_dummy.cc). Dummy ids start at 2^62; each row's inputs are int64 zeros,
// one tensor per input the node receives in the capture walk, the bucket's tokens per row long;
// prepare_inputs turns them into the rows' prepared inputs, and the node's resources see the
// dummies as requests (add, declare, admit, plan into the step's slot).
//
// Ownership: owns the rows, their prepared inputs and the planned views; infos, ids and the
// declaration point into it, so it does not move once prepared. Leave (also run by the
// destructor) takes the dummies out of the resources again (abort_step, remove_request).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/model_runtime.h"
#include "host/host_objects.h"
#include "host/tensor_objects.h"
#include "mstar/resource.h"

namespace mstar {

// Capture slot ids an engine may give out (engine_capture.cc checks): a dummy id holds the slot
// id plus one in 20 bits, beside the row (under 2^20, kMaxCaptureBatch) and the node.
inline constexpr int64_t kMaxCaptureSlotIds = (int64_t{1} << 20) - 1;

struct DummyStep {
  DummyStep() = default;
  DummyStep(const DummyStep&) = delete;
  DummyStep& operator=(const DummyStep&) = delete;
  ~DummyStep() { Leave(); }

  const std::string* walk = nullptr;  // the capture walk's name (the model's)
  std::vector<mstar_request_info_t> rows;
  std::vector<uint32_t> tokens;        // per row, from prepare_inputs
  std::vector<TensorMapPtr> prepared;  // per row
  std::vector<mstar_request_id_t> ids;
  std::vector<const mstar_request_info_t*> infos;
  mstar_step_decl_t decl{};
  std::vector<ResourceRuntime*> joined;  // resources the dummies were added to
  std::vector<TensorMapPtr> views;       // per resource of the node, what it planned

  // The step over every row, reading inputs and writing outputs (one map per row) and the given
  // resource views (one per resource of node); the vectors must outlive the step's use.
  mstar_step_t Step(const NodeRuntime& node, const std::vector<const mstar_tensor_map_t*>& inputs,
                    const std::vector<mstar_tensor_map_t*>& outputs,
                    std::vector<mstar_resource_view_t>& resource_views,
                    const std::vector<const mstar_tensor_map*>& planned, mstar_stream* stream);
  // Takes the dummies out of the joined resources; idempotent.
  void Leave();
};

}  // namespace mstar

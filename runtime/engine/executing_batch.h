// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// ExecutingBatch: one step of one node over a batch of requests at the same walk, and everything
// the step produces on its way through the engine: prepared inputs, admission, outputs, stop
// decisions and per-request failures. A request that fails at any stage is marked failed with its
// message and leaves the step; the rest of the batch continues.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/config_tree.h"
#include "engine/columnar_batch.h"
#include "engine/output_stream.h"
#include "host/tensor_objects.h"
#include "mstar/plugin.h"

namespace mstar {

// One request's part in a step.
struct StepRequest {
  RequestId id = 0;
  // What the plugin hooks see (pointers into the storage below and into the request, which
  // outlives its steps in flight: its parameters, walk and partition names).
  mstar_request_info_t info{};
  std::vector<const char*> loop_names;
  std::vector<uint32_t> loop_iterations;
  std::vector<uint32_t> loop_limits;

  TensorMapPtr inputs;        // the node's inputs for this step
  TensorMapPtr prepared;      // what prepare_inputs made of them
  TensorMapPtr outputs;       // what the forward produced (after postprocess)
  TensorMapPtr host_outputs;  // host copies of the outputs the stop check reads
  // What the stop check read: outputs itself when all of it was in host memory, else
  // host_outputs. Null before the check.
  const mstar_tensor_map* stop_view = nullptr;
  uint32_t num_tokens = 0;
  // Its token ids for the node's resources (input_tokens.h): borrowed from inputs; null unknown.
  const mstar_tensor_t* input_tokens = nullptr;
  uint64_t capture_key = 0;

  uint64_t stop_mask = 0;  // loops the stop check ends (bit i: loop_names[i])

  bool needs_reload = false;  // it was offloaded somewhere: check readiness (reload) first
  bool reloaded = false;      // its offloaded state was reloaded for this step
  bool skipped = false;       // prepare_inputs declined it for this step
  bool not_ready = false;     // a resource could not admit it yet
  uint32_t wait_reason = 0;
  uint64_t units_short = 0;
  std::string waiting_on;  // the resource that was not ready
  bool failed = false;
  bool lost_state = false;  // failed because a resource lost its offloaded state (recomputable)
  bool forwarded = false;   // its forward (or replay) was launched, whatever came of it
  std::string error;

  // Still taking part in the step.
  bool active() const { return !skipped && !not_ready && !failed; }
  // Makes a used record fresh for another step, keeping its buffers (loop vectors, the input and
  // host-output maps, the error string) so a reused record allocates nothing. Every field is reset here.
  void Reset() {
    id = 0;
    info = mstar_request_info_t{};
    loop_names.clear();
    loop_iterations.clear();
    loop_limits.clear();
    if (inputs != nullptr) inputs->Clear();
    if (host_outputs != nullptr) host_outputs->Clear();
    stop_view = nullptr;
    prepared.reset();
    outputs.reset();
    num_tokens = 0;
    input_tokens = nullptr;
    capture_key = 0;
    stop_mask = 0;
    needs_reload = reloaded = skipped = not_ready = failed = lost_state = forwarded = false;
    wait_reason = 0;
    units_short = 0;
    waiting_on.clear();
    error.clear();
  }
  [[gnu::cold]] void Fail(std::string message) {
    failed = true;
    error = std::move(message);
  }
};

// A capture slot leased for a batch (Engine::ReserveReplaySlot): the captured bucket it replays
// and the node-wide slot id its resources pre-plan into.
struct SlotLease {
  int32_t slot = -1;
  int config = -1;       // index into the node's capture configs
  uint32_t bucket = 0;   // index into that config's buckets
  uint32_t rows = 0;     // real rows when leased
  uint32_t padding = 0;  // padding rows of the bucket
};

struct ExecutingBatch {
  int node = -1;  // the node's index in the model runtime
  std::string node_name;
  std::string walk;
  int walk_index = -1;  // the conductor's index of walk
  uint64_t capture_key = 0;
  int32_t slot = -1;                      // the leased capture slot; -1: the step runs eagerly
  SlotLease lease;                        // valid while slot >= 0
  bool preplanned = false;                // resources planned this batch ahead into the slot
  std::vector<RequestId> preplanned_ids;  // who was in the batch when it was pre-planned
  int32_t region_slot = -1;  // the region slot held for the forward's captured regions; -1: none
  bool running_batched = false;  // the forward ran once for the whole batch
  std::vector<StepRequest> requests;
  // A cohort's columnar step (then requests is empty), or null.
  std::unique_ptr<ColumnarBatch> columnar;

  // Makes this the batch of a new step of node node_index (named name) in walk walk_name (the
  // conductor's walk walk_index), keeping its buffers (a columnar batch to keep is taken out
  // first): the names are copied only when the node or walk changes, so a loop's steps copy none.
  void Reset(int node_index, const std::string& name, int walk_at, const std::string& walk_name) {
    if (node != node_index) node_name = name;
    if (walk_index != walk_at) walk = walk_name;
    node = node_index;
    walk_index = walk_at;
    capture_key = 0;
    slot = -1;
    lease = SlotLease{};
    preplanned = false;
    preplanned_ids.clear();
    region_slot = -1;
    running_batched = false;
    requests.clear();
    columnar.reset();
  }

  void Lease(const SlotLease& granted) {
    lease = granted;
    slot = granted.slot;
  }

  size_t ActiveCount() const {
    size_t n = 0;
    for (const StepRequest& r : requests) n += r.active() ? 1 : 0;
    return n;
  }
  // The ids of the requests still active, in batch order.
  std::vector<RequestId> ActiveIds() const {
    std::vector<RequestId> ids;
    for (const StepRequest& r : requests) {
      if (r.active()) ids.push_back(r.id);
    }
    return ids;
  }
};

}  // namespace mstar

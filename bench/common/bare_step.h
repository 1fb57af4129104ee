// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The benchmarks' baseline: one node step driven straight through the plugins' tables, with no
// engine. BareBatch holds what the hooks read about a fixed set of requests (infos with one loop,
// "generate", and each request's next inputs); BareStep runs prepare_inputs per request, then
// (with a resource) declare / admit / plan, one forward_batched, commit, and hands back each
// request's outputs; after a columnar step, FinishColumnar calls the hooks the engine calls on
// its outputs (the stop check, the resource's prefix chains). FeedBack routes an output to the
// next step's "tokens" input, as a loop-back edge does.
//
// Not thread-safe. Aborts (MSTAR_CHECK) on any plugin error or a request the resource does not
// admit: a benchmark has no use for a partial figure.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "config/config_tree.h"
#include "engine/input_tokens.h"
#include "host/tensor_objects.h"
#include "plugin/instance.h"

namespace mstar::bench {

struct BareBatch {
  // `count` requests with ids first_id, first_id + 1, ...; inputs start empty.
  BareBatch(size_t count, uint64_t first_id);
  BareBatch(const BareBatch&) = delete;
  BareBatch& operator=(const BareBatch&) = delete;

  size_t size() const { return infos.size(); }
  // Replaces request i's "tokens" input with a new reference to output `name` of its step.
  void FeedBack(size_t i, const TensorMapPtr& outputs, const char* name);

  std::shared_ptr<const ConfigTree> params;
  const char* loop_name = "generate";
  std::vector<mstar_request_info_t> infos;  // walk is set by each step
  std::vector<uint32_t> iterations, limits;
  std::vector<TensorMapPtr> inputs;
};

class BareStep {
 public:
  // submodule and resource (may be null) are borrowed and must outlive this; the resource is
  // seen by the forward under label.
  BareStep(PluginInstance& submodule, PluginInstance* resource, std::string label = "kv");

  // One step of every request in batch at walk. Returns each request's outputs.
  std::vector<TensorMapPtr> Run(BareBatch& batch, const char* walk);

  // The same step in the columnar form (a submodule with MSTAR_SUBMODULE_COLUMNAR): inputs holds
  // every request's node inputs stacked, input_rows their offsets; one prepare_inputs_columnar,
  // the resource's declare / admit / plan, one forward_batched, commit. Returns the outputs and
  // their row offsets.
  std::pair<TensorMapPtr, TensorMapPtr> RunColumnar(BareBatch& batch, const char* walk,
                                                    const mstar_tensor_map& inputs,
                                                    const mstar_tensor_map& input_rows);

  // What the engine calls after a columnar step of batch at walk, on its host outputs: the
  // submodule's check_stop_columnar, when it has one, and the resource's extend_prefix_chains,
  // when it has one, with each request's rows of the stop output `stop_output`. Returns each
  // request's stop mask (all 0 without a stop check), valid until the next call.
  const std::vector<uint64_t>& FinishColumnar(BareBatch& batch, const char* walk,
                                              const mstar_tensor_map& outputs,
                                              const mstar_tensor_map& output_rows,
                                              const char* stop_output);

  // Nanoseconds spent inside forward_batched over every Run so far, as the engine counts its
  // own (EngineTimings::forward_ns), so both sides' host time per step can be compared.
  uint64_t forward_ns() const { return forward_ns_; }

 private:
  // declare / admit (everyone must be admitted) / plan into view; false without a resource.
  bool PlanResource(const mstar_step_decl_t& decl, mstar_tensor_map* view);
  void CommitResource(const mstar_step_decl_t& decl);
  // forward_batched, timed.
  void Forward(const mstar_step_t& step);

  uint64_t forward_ns_ = 0;
  std::string token_input_;    // the submodule's info.token_input (empty: none)
  RowTokenInputs row_tokens_;  // a columnar step's token ids for the resource
  std::vector<const mstar_request_info_t*> infos_;  // FinishColumnar's, kept between calls
  std::vector<uint64_t> masks_;
  std::vector<int64_t> row_dims_;
  PluginInstance& submodule_;
  PluginInstance* resource_;
  std::string label_;
};

// A columnar step's output `name` (every request's rows), shared whole as the next step's
// "tokens" input with one row per request (*input_rows left empty), as a cohort's loop-back edge
// carries it. Aborts when there is no such output.
void FeedBackWhole(const mstar_tensor_map& outputs, const char* name, TensorMapPtr* inputs,
                   TensorMapPtr* input_rows);

// An int64 tensor of values, owned by the caller.
mstar_tensor_t* Int64Tensor(const std::vector<int64_t>& values);
// Aborts with the plugin's message when status is an error (what: the hook).
void CheckPlugin(mstar_status_t* status, const char* what);

}  // namespace mstar::bench

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Drives a submodule instance the way the engine does, for the conformance rules: requests with
// the settings' inputs, prepare_inputs per request, then forward per request or one
// forward_batched. When the settings pair the submodule with a resource, the driver owns an
// instance of it: every request is added to it, each forward runs between the resource's
// declare / admit / plan and its commit (or abort_step when the forward fails), with the plan's
// view handed to the forward under the settings' label. Owns every map it hands the plugins.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "rule_context.h"

namespace mstar::conformance {

class SubmoduleDriver {
 public:
  // Fails the rule when the paired resource cannot be created or refuses a request.
  SubmoduleDriver(PluginInstance& instance, const FactorySettings& settings, uint32_t requests);
  ~SubmoduleDriver();
  SubmoduleDriver(const SubmoduleDriver&) = delete;
  SubmoduleDriver& operator=(const SubmoduleDriver&) = delete;

  // prepare_inputs for every request; fails the rule on an error status (declines are kept).
  void Prepare();
  // How Run calls the forward: once per request, or once over all prepared requests in the
  // per-request or the columnar form of forward_batched.
  enum class Form { kSingle, kBatched, kColumnar };
  // Runs the prepared requests in form; outputs(i) then holds request i's outputs (for the
  // columnar form, views of its rows). Returns the status of the (last) call; fails the rule
  // when the paired resource does, or when a columnar forward's outputs break the form.
  Status Run(Form form);
  // After a per-request or batched Run: postprocess (when the submodule has it) on every
  // request that ran, as the engine does before the stop check; fails the rule on an error.
  void Postprocess();
  // After a columnar Run: the stop masks check_stop_columnar gives over its outputs, or nullopt
  // when the submodule has no such hook.
  std::optional<std::vector<uint64_t>> ColumnarStopMasks();

  uint32_t size() const { return static_cast<uint32_t>(infos_.size()); }
  TensorMapPtr& outputs(uint32_t i) { return outputs_[i]; }
  const mstar_request_info_t& info(uint32_t i) const { return infos_[i]; }
  bool declined(uint32_t i) const { return declined_[i]; }
  const mstar_submodule_vtable_t* table() const { return instance_.submodule(); }
  PluginInstance& instance() { return instance_; }

 private:
  // One call of forward or forward_batched over the chosen requests, inside the paired
  // resource's step when there is one.
  Status Step(const std::vector<uint32_t>& chosen, Form form);
  // The columnar forward itself: gathers the chosen requests' prepared inputs, calls
  // forward_batched, checks and scatters its outputs.
  Status ForwardColumnar(const std::vector<uint32_t>& chosen, mstar_step_t step);
  // With prepare_inputs_columnar: prepares the chosen requests' node inputs in one call into
  // *prepared and *rows, failing the rule unless it agrees with prepare_inputs per request.
  void PrepareColumnar(const std::vector<uint32_t>& chosen, mstar_step_t step,
                       TensorMapPtr* prepared, TensorMapPtr* rows);
  // declare, admit every member, plan into *view: fails the rule on any refusal.
  void PlanStep(const mstar_step_decl_t& decl, mstar_tensor_map* view);

  PluginInstance& instance_;
  const FactorySettings& settings_;
  std::unique_ptr<PluginInstance> resource_;  // the paired resource, or null
  std::shared_ptr<const ConfigTree> params_;
  std::vector<mstar_request_info_t> infos_;
  std::vector<TensorMapPtr> inputs_, prepared_, outputs_;
  std::vector<uint32_t> tokens_;
  std::vector<bool> declined_;
  // The last columnar Run: its requests, outputs and output rows (for ColumnarStopMasks).
  std::vector<uint32_t> columnar_members_;
  TensorMapPtr columnar_outputs_, columnar_rows_;
};

}  // namespace mstar::conformance

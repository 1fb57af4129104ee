// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Drives a submodule instance the way the engine does, for the conformance rules: requests with
// the settings' inputs, prepare_inputs per request, then forward per request or one
// forward_batched. Owns every map it hands the plugin.
#pragma once

#include <vector>

#include "rule_context.h"

namespace mstar::conformance {

class SubmoduleDriver {
 public:
  SubmoduleDriver(PluginInstance& instance, const FactorySettings& settings, uint32_t requests);

  // prepare_inputs for every request; fails the rule on an error status (declines are kept).
  void Prepare();
  // One forward per request (batched = false) or one forward_batched over all prepared requests.
  // Returns the status of the (last) call.
  Status Run(bool batched);

  uint32_t size() const { return static_cast<uint32_t>(infos_.size()); }
  TensorMapPtr& outputs(uint32_t i) { return outputs_[i]; }
  const mstar_submodule_vtable_t* table() const { return instance_.submodule(); }
  PluginInstance& instance() { return instance_; }

 private:
  PluginInstance& instance_;
  std::shared_ptr<const ConfigTree> params_;
  std::vector<mstar_request_info_t> infos_;
  std::vector<TensorMapPtr> inputs_, prepared_, outputs_;
  std::vector<uint32_t> tokens_;
  std::vector<bool> declined_;
};

}  // namespace mstar::conformance

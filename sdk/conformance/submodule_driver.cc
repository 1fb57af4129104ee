// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "submodule_driver.h"

namespace mstar::conformance {

SubmoduleDriver::SubmoduleDriver(PluginInstance& instance, const FactorySettings& settings,
                                 uint32_t requests)
    : instance_(instance), params_(std::make_shared<ConfigTree>()) {
  for (uint32_t i = 0; i < requests; ++i) {
    mstar_request_info_t info{};
    info.struct_size = sizeof(info);
    info.struct_version = MSTAR_ABI_MINOR;
    info.request_id = i + 1;
    info.walk = "conformance";
    info.partition = "main";
    info.seed = 1000 + i;
    info.params = params_->root();
    infos_.push_back(info);
    TensorMapPtr inputs = NewTensorMap();
    if (settings.inputs.empty()) {
      // The token interface most submodules share; each request gets different values.
      int64_t base = 1 + static_cast<int64_t>(i);
      (void)inputs->Append("tokens", Int64Tensor({base, base + 1, base + 2}));
    }
    for (const auto& [name, input] : settings.inputs) {
      std::vector<int64_t> ints(input.values.begin(), input.values.end());
      (void)inputs->Append(name, input.is_float ? Float32Tensor(input.values) : Int64Tensor(ints));
    }
    inputs_.push_back(std::move(inputs));
  }
}

void SubmoduleDriver::Prepare() {
  prepared_.clear();
  tokens_.assign(infos_.size(), 0);
  declined_.assign(infos_.size(), false);
  for (size_t i = 0; i < infos_.size(); ++i) {
    TensorMapPtr prepared = NewTensorMap();
    mstar_prepared_t out{sizeof(mstar_prepared_t), MSTAR_ABI_MINOR, 0, 0, 0, prepared.get()};
    Status status = CallPlugin(instance_, "prepare_inputs", [&] {
      return table()->prepare_inputs(instance_.self(), &infos_[i], inputs_[i].get(), &out);
    });
    RequireOk(status, "prepare_inputs of request " + std::to_string(i + 1) +
                          " with the conformance inputs (give inputs in --config)");
    tokens_[i] = out.num_tokens;
    declined_[i] = out.decline != 0;
    prepared_.push_back(std::move(prepared));
  }
}

Status SubmoduleDriver::Run(bool batched) {
  outputs_.clear();
  std::vector<uint32_t> members;
  for (uint32_t i = 0; i < infos_.size(); ++i) {
    outputs_.push_back(NewTensorMap());
    if (!declined_[i]) members.push_back(i);
  }
  auto step_for = [&](const std::vector<uint32_t>& chosen,
                      std::vector<const mstar_request_info_t*>& infos,
                      std::vector<const mstar_tensor_map_t*>& inputs, std::vector<uint32_t>& tokens,
                      std::vector<mstar_tensor_map_t*>& outputs) {
    for (uint32_t i : chosen) {
      infos.push_back(&infos_[i]);
      inputs.push_back(prepared_[i].get());
      tokens.push_back(tokens_[i]);
      outputs.push_back(outputs_[i].get());
    }
    mstar_step_t step{};
    step.struct_size = sizeof(step);
    step.struct_version = MSTAR_ABI_MINOR;
    step.node = "conformance";
    step.walk = "conformance";
    step.num_requests = static_cast<uint32_t>(chosen.size());
    step.slot = -1;
    step.requests = infos.data();
    step.inputs = inputs.data();
    step.num_tokens = tokens.data();
    step.outputs = outputs.data();
    return step;
  };
  if (batched) {
    std::vector<const mstar_request_info_t*> infos;
    std::vector<const mstar_tensor_map_t*> inputs;
    std::vector<uint32_t> tokens;
    std::vector<mstar_tensor_map_t*> outputs;
    mstar_step_t step = step_for(members, infos, inputs, tokens, outputs);
    return CallPlugin(instance_, "forward_batched",
                      [&] { return table()->forward_batched(instance_.self(), &step); });
  }
  Status last;
  for (uint32_t i : members) {
    std::vector<const mstar_request_info_t*> infos;
    std::vector<const mstar_tensor_map_t*> inputs;
    std::vector<uint32_t> tokens;
    std::vector<mstar_tensor_map_t*> outputs;
    mstar_step_t step = step_for({i}, infos, inputs, tokens, outputs);
    last =
        CallPlugin(instance_, "forward", [&] { return table()->forward(instance_.self(), &step); });
    if (!last.ok()) return last;
  }
  return last;
}

}  // namespace mstar::conformance

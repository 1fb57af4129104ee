// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "submodule_driver.h"

#include "plugin/step_arrays.h"

namespace mstar::conformance {
namespace {

std::unique_ptr<PluginInstance> CreateResource(const FactorySettings::Resource& settings) {
  if (settings.factory.factory == nullptr) Fail(settings.error);
  InstanceOptions options;
  options.name = settings.label;
  options.config = settings.config;
  Result<std::unique_ptr<PluginInstance>> instance =
      PluginInstance::Create(settings.factory, options);
  if (!instance.ok()) {
    Fail("creating the paired resource '" + settings.plugin +
         "' with its conformance config: " + instance.status().ToString());
  }
  return std::move(instance).value();
}

}  // namespace

SubmoduleDriver::SubmoduleDriver(PluginInstance& instance, const FactorySettings& settings,
                                 uint32_t requests)
    : instance_(instance), settings_(settings), params_(std::make_shared<ConfigTree>()) {
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
  if (!settings.resource) return;
  resource_ = CreateResource(*settings.resource);
  for (size_t i = 0; i < infos_.size(); ++i) {
    RequireOk(CallPlugin(*resource_, "add_request",
                         [&] {
                           return resource_->resource()->add_request(resource_->self(), &infos_[i]);
                         }),
              "the paired resource's add_request of request " + std::to_string(i + 1));
  }
}

SubmoduleDriver::~SubmoduleDriver() {
  if (resource_ == nullptr) return;
  for (const mstar_request_info_t& info : infos_)
    resource_->resource()->remove_request(resource_->self(), info.request_id);
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
  if (batched) return Step(members, true);
  Status last;
  for (uint32_t i : members) {
    last = Step({i}, false);
    if (!last.ok()) return last;
  }
  return last;
}

Status SubmoduleDriver::Step(const std::vector<uint32_t>& chosen, bool batched) {
  StepArrays arrays;
  for (uint32_t i : chosen)
    arrays.Add(&infos_[i], prepared_[i].get(), tokens_[i], outputs_[i].get());
  const uint32_t count = arrays.size();
  mstar_step_decl_t decl = arrays.Decl("conformance", "conformance");
  TensorMapPtr view = NewTensorMap();
  mstar_resource_view_t resource_view{sizeof(mstar_resource_view_t), MSTAR_ABI_MINOR,
                                      settings_.resource ? settings_.resource->label.c_str() : "",
                                      view.get()};
  if (resource_ != nullptr) PlanStep(decl, view.get());
  mstar_step_t step =
      arrays.Step("conformance", "conformance", resource_ != nullptr ? &resource_view : nullptr);
  Status forward =
      batched ? CallPlugin(instance_, "forward_batched",
                           [&] { return table()->forward_batched(instance_.self(), &step); })
              : CallPlugin(instance_, "forward",
                           [&] { return table()->forward(instance_.self(), &step); });
  if (resource_ == nullptr) return forward;
  const mstar_resource_vtable_t* t = resource_->resource();
  if (!forward.ok()) {
    t->abort_step(resource_->self(), &decl);
    return forward;
  }
  std::vector<uint8_t> succeeded(count, 1);
  RequireOk(
      CallPlugin(*resource_, "commit",
                 [&] { return t->commit(resource_->self(), &decl, succeeded.data(), nullptr); }),
      "the paired resource's commit");
  return forward;
}

void SubmoduleDriver::PlanStep(const mstar_step_decl_t& decl, mstar_tensor_map* view) {
  const mstar_resource_vtable_t* t = resource_->resource();
  RequireOk(CallPlugin(*resource_, "declare", [&] { return t->declare(resource_->self(), &decl); }),
            "the paired resource's declare");
  for (uint32_t i = 0; i < decl.num_requests; ++i) {
    mstar_admit_t admit{sizeof(mstar_admit_t), MSTAR_ABI_MINOR, 0, 0, 0};
    RequireOk(CallPlugin(*resource_, "admit",
                         [&] { return t->admit(resource_->self(), &decl, i, &admit); }),
              "the paired resource's admit");
    if (admit.outcome != MSTAR_ADMIT_READY) {
      t->abort_step(resource_->self(), &decl);
      Fail("the paired resource did not admit request " + std::to_string(decl.request_ids[i]) +
           (admit.outcome == MSTAR_ADMIT_NOT_READY ? " (not ready)" : " (unservable)") +
           ": give it room for the conformance requests in its config");
    }
  }
  RequireOk(CallPlugin(*resource_, "plan",
                       [&] { return t->plan(resource_->self(), &decl, view, nullptr); }),
            "the paired resource's plan");
}

}  // namespace mstar::conformance

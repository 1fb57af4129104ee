// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "submodule_driver.h"

#include <algorithm>

#include "plugin/columnar.h"
#include "plugin/slots.h"
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
    // A configured input's values are rotated by i places for request i, so that requests of a
    // batch differ and a forward that mixes up its rows shows.
    for (const auto& [name, input] : settings.inputs) {
      std::vector<double> values = input.values;
      if (!values.empty())
        std::rotate(values.begin(), values.begin() + static_cast<long>(i % values.size()),
                    values.end());
      std::vector<int64_t> ints(values.begin(), values.end());
      (void)inputs->Append(name, input.is_float ? Float32Tensor(values) : Int64Tensor(ints));
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
  // As the engine ends a request: the submodule forgets it (an exception escaping here is noted
  // and fails the rule, runner.cc), then the resource gives back what it held.
  if (table()->cleanup_request != nullptr) {
    for (const mstar_request_info_t& info : infos_) {
      CallPluginVoid(instance_, "cleanup_request",
                     [&] { table()->cleanup_request(instance_.self(), info.request_id); });
    }
  }
  if (resource_ == nullptr) return;
  for (const mstar_request_info_t& info : infos_) {
    CallPluginVoid(*resource_, "remove_request", [&] {
      resource_->resource()->remove_request(resource_->self(), info.request_id);
    });
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

Status SubmoduleDriver::Run(Form form) {
  outputs_.clear();
  std::vector<uint32_t> members;
  for (uint32_t i = 0; i < infos_.size(); ++i) {
    outputs_.push_back(NewTensorMap());
    if (!declined_[i]) members.push_back(i);
  }
  if (members.empty()) {
    Skip(
        "prepare_inputs declined every conformance request, so nothing was forwarded and "
        "nothing checked: give inputs it takes in the plugin's conformance config");
  }
  if (form != Form::kSingle) return Step(members, form);
  Status last;
  for (uint32_t i : members) {
    last = Step({i}, form);
    if (!last.ok()) return last;
  }
  return last;
}

Status SubmoduleDriver::ForwardColumnar(const std::vector<uint32_t>& chosen, mstar_step_t step) {
  std::vector<const mstar_tensor_map*> prepared;
  std::vector<mstar_tensor_map*> outputs;
  for (uint32_t i : chosen) {
    prepared.push_back(prepared_[i].get());
    outputs.push_back(outputs_[i].get());
  }
  TensorMapPtr inputs = NewTensorMap();
  TensorMapPtr input_rows = NewTensorMap();
  if (MSTAR_HAS_SLOT(table(), prepare_inputs_columnar, 1)) {
    PrepareColumnar(chosen, step, &inputs, &input_rows);
  } else {
    RequireOk(GatherColumnar(prepared, "prepared input", inputs.get(), input_rows.get()),
              "stacking the prepared inputs for a columnar step");
  }
  columnar_members_ = chosen;
  columnar_outputs_ = NewTensorMap();
  columnar_rows_ = NewTensorMap();
  step.inputs = nullptr;
  step.outputs = nullptr;
  step.columnar_inputs = inputs.get();
  step.input_rows = input_rows.get();
  step.columnar_outputs = columnar_outputs_.get();
  step.output_rows = columnar_rows_.get();
  Status forward = CallPlugin(instance_, "forward_batched (columnar)",
                              [&] { return table()->forward_batched(instance_.self(), &step); });
  if (!forward.ok()) return forward;
  Status form = CheckColumnar(*columnar_outputs_, *columnar_rows_, step.num_requests, "output");
  if (!form.ok())
    Fail("the columnar forward_batched wrote outputs the host cannot read: " + form.message());
  RequireOk(ScatterColumnar(*columnar_outputs_, *columnar_rows_, outputs),
            "splitting the columnar outputs per request");
  return forward;
}

void SubmoduleDriver::PrepareColumnar(const std::vector<uint32_t>& chosen, mstar_step_t step,
                                      TensorMapPtr* prepared, TensorMapPtr* rows) {
  std::vector<const mstar_tensor_map*> node_inputs;
  for (uint32_t i : chosen) node_inputs.push_back(inputs_[i].get());
  TensorMapPtr inputs = NewTensorMap();
  TensorMapPtr input_rows = NewTensorMap();
  RequireOk(GatherColumnar(node_inputs, "input", inputs.get(), input_rows.get()),
            "stacking the conformance inputs for prepare_inputs_columnar");
  step.inputs = nullptr;
  step.outputs = nullptr;
  step.columnar_inputs = inputs.get();
  step.input_rows = input_rows.get();
  TensorMapPtr out = NewTensorMap();
  TensorMapPtr out_rows = NewTensorMap();
  std::vector<uint32_t> tokens(chosen.size(), 0);
  RequireOk(CallPlugin(instance_, "prepare_inputs_columnar",
                       [&] {
                         return table()->prepare_inputs_columnar(instance_.self(), &step, out.get(),
                                                                 out_rows.get(), tokens.data());
                       }),
            "prepare_inputs_columnar with the conformance inputs");
  Status form = CheckColumnar(*out, *out_rows, step.num_requests, "prepared input");
  if (!form.ok())
    Fail("prepare_inputs_columnar wrote what the host cannot read: " + form.message());
  for (size_t k = 0; k < chosen.size(); ++k) {
    Require(tokens[k] == tokens_[chosen[k]],
            "request " + std::to_string(chosen[k] + 1) + ": prepare_inputs_columnar gives " +
                std::to_string(tokens[k]) + " tokens, prepare_inputs " +
                std::to_string(tokens_[chosen[k]]));
  }
  // What the per-request prepare made, request by request, must be what the columnar one made.
  std::vector<TensorMapPtr> split;
  std::vector<mstar_tensor_map*> targets;
  for (size_t k = 0; k < chosen.size(); ++k) {
    split.push_back(NewTensorMap());
    targets.push_back(split.back().get());
  }
  RequireOk(ScatterColumnar(*out, *out_rows, targets), "splitting the columnar prepared inputs");
  for (size_t k = 0; k < chosen.size(); ++k) {
    std::string why;
    const bool same = SameMaps(*prepared_[chosen[k]], *split[k], &why);
    Require(same, "request " + std::to_string(chosen[k] + 1) +
                      ": prepare_inputs_columnar differs from prepare_inputs (" + why + ")");
  }
  *prepared = std::move(out);
  *rows = std::move(out_rows);
}

void SubmoduleDriver::Postprocess() {
  if (table()->postprocess == nullptr) return;
  for (uint32_t i = 0; i < size(); ++i) {
    if (declined_[i]) continue;
    RequireOk(
        CallPlugin(
            instance_, "postprocess",
            [&] { return table()->postprocess(instance_.self(), &infos_[i], outputs_[i].get()); }),
        "postprocess of request " + std::to_string(i + 1));
  }
}

std::optional<std::vector<uint64_t>> SubmoduleDriver::ColumnarStopMasks() {
  if (!MSTAR_HAS_SLOT(table(), check_stop_columnar, 1)) return std::nullopt;
  StepArrays arrays;
  for (uint32_t i : columnar_members_)
    arrays.Add(&infos_[i], prepared_[i].get(), tokens_[i], outputs_[i].get());
  mstar_step_t step = arrays.Step("conformance", "conformance", nullptr);
  step.inputs = nullptr;
  step.outputs = nullptr;
  std::vector<uint64_t> masks(arrays.size(), 0);
  RequireOk(CallPlugin(instance_, "check_stop_columnar",
                       [&] {
                         return table()->check_stop_columnar(instance_.self(), &step,
                                                             columnar_outputs_.get(),
                                                             columnar_rows_.get(), masks.data());
                       }),
            "check_stop_columnar over the columnar forward's outputs");
  return masks;
}

Status SubmoduleDriver::Step(const std::vector<uint32_t>& chosen, Form form) {
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
  Status forward;
  if (form == Form::kColumnar) {
    forward = ForwardColumnar(chosen, step);
  } else if (form == Form::kBatched) {
    forward = CallPlugin(instance_, "forward_batched",
                         [&] { return table()->forward_batched(instance_.self(), &step); });
  } else {
    forward =
        CallPlugin(instance_, "forward", [&] { return table()->forward(instance_.self(), &step); });
  }
  if (resource_ == nullptr) return forward;
  const mstar_resource_vtable_t* t = resource_->resource();
  if (!forward.ok()) {
    CallPluginVoid(*resource_, "abort_step", [&] { t->abort_step(resource_->self(), &decl); });
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
      CallPluginVoid(*resource_, "abort_step", [&] { t->abort_step(resource_->self(), &decl); });
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

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The smallest useful M* plugin: a submodule that multiplies its float32 input "x" by a factor
// from its config and emits "y". Copy this file to start a plugin of your own.

// The SDK: base classes over the C ABI, the exception barrier, and the MSTAR_PLUGIN macro.
#include "mstar/sdk.hpp"

// Plugin code lives in an anonymous namespace: nothing but the entry point is exported anyway.
namespace {

// A submodule is a model component the engine runs one step at a time.
class ScaleSubmodule final : public mstar::sdk::Submodule {
 public:
  // The host creates an instance with its create args: config, device, host services.
  explicit ScaleSubmodule(const mstar_create_args_t& args) : Submodule(args) {
    // Config values come from the model manifest's table for this node. A missing key falls back
    // to the default; a value of the wrong type throws an error naming the file, line and key.
    scale_ = static_cast<float>(config().get("scale", 2.0));
    Log(MSTAR_LOG_INFO, "scaling by " + std::to_string(scale_));
  }

  // Static facts. This submodule processes a batch in one call, so it says it is batched by
  // overriding ForwardBatched below (the SDK sets MSTAR_SUBMODULE_BATCHED for us).
  mstar::sdk::SubmoduleInfo Info() override { return {MSTAR_SUBMODULE_DETERMINISTIC, {}}; }

  // Per request, before the step: check the inputs and pass them on to the forward. Throwing
  // here fails only this request, with this message.
  void PrepareInputs(const mstar::sdk::RequestInfo& request,
                     const mstar::sdk::TensorMapView& inputs,
                     mstar::sdk::PreparedInputs& out) override {
    (void)request;
    mstar::sdk::TensorView x = inputs.require("x");  // throws NOT_FOUND when absent
    x.RequireHost<float>("input 'x'");               // this template computes on the host
    out.tensors.append("x", mstar::sdk::Tensor::Share(host(), x));  // no copy: a new reference
    out.num_tokens = 0;  // a stateless node adds no tokens
  }

  // One request at a time (the host uses this to isolate a failing request).
  void Forward(const mstar::sdk::Step& step) override { Run(step, 0); }

  // The whole batch in one call.
  void ForwardBatched(const mstar::sdk::Step& step) override {
    for (uint32_t i = 0; i < step.size(); ++i) Run(step, i);
  }

 private:
  // y = scale * x for request i of the step.
  void Run(const mstar::sdk::Step& step, uint32_t i) {
    mstar::sdk::TensorView x = step.inputs(i).require("x");
    // Outputs are tensors in host-accounted memory, appended to the request's output map. The
    // loop below runs on the CPU, so the input must be in host memory and the output is too
    // (Alloc would place it on the node's device, which may be a GPU).
    x.RequireHost<float>("input 'x'");
    mstar::sdk::Tensor y = AllocOn(mstar::sdk::kCpu, x.dtype(), x.shape());
    const float* in = x.data<float>();
    float* out = y.mutable_data<float>();
    for (int64_t k = 0; k < x.numel(); ++k) out[k] = scale_ * in[k];
    step.outputs(i).append("y", std::move(y));
  }

  float scale_ = 2.0f;
};

}  // namespace

// The entry point: the plugin's name (as in the manifest), the oldest host ABI minor it runs on,
// and its factories (each a kind, a C++ class and the name in the manifest's [[provides]]).
MSTAR_PLUGIN("template", 0, mstar::sdk::SubmoduleFactory<ScaleSubmodule>("template_scale"));

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "model/bare_lm.h"

#include <iostream>

#include "config/config_tree.h"
#include "config/toml_reader.h"
#include "core/diagnostic.h"
#include "host/host_api.h"
#include "host/tensor_objects.h"

namespace mstar::bench {
namespace {

constexpr DLDevice kCpu{kDLCPU, 0};

void Check(mstar_status_t* status, const char* what) {
  if (status == nullptr) return;
  Status s = TakeStatus(status);
  std::cerr << "bare loop: " << what << ": " << s.ToString() << "\n";
  std::abort();
}

std::shared_ptr<const ConfigTree> Toml(const std::string& text, const std::string& path) {
  Diagnostics diagnostics;
  auto table = ParseTomlText(text, path, &diagnostics);
  MSTAR_CHECK(table.has_value());
  return std::make_shared<ConfigTree>(std::move(*table), path, "");
}

std::unique_ptr<PluginInstance> Create(const PluginRegistry& registry, uint32_t kind,
                                       const std::string& plugin, const std::string& name,
                                       const std::string& config) {
  Result<FactoryRef> factory = registry.Find(kind, plugin);
  MSTAR_CHECK(factory.ok());
  InstanceOptions options;
  options.name = name;
  options.config = Toml(config, name + ".toml");
  auto instance = PluginInstance::Create(factory.value(), options);
  if (!instance.ok()) {
    std::cerr << "bare loop: " << instance.status().ToString() << "\n";
    std::abort();
  }
  return std::move(instance).value();
}

mstar_tensor_t* Tokens(const std::vector<int64_t>& values) {
  Result<mstar_tensor_t*> t = AllocateTensor(nullptr, kCpu, DLDataType{kDLInt, 64, 1},
                                             {static_cast<int64_t>(values.size())});
  MSTAR_CHECK(t.ok());
  auto* data = static_cast<int64_t*>(t.value()->dl.data);
  for (size_t i = 0; i < values.size(); ++i) data[i] = values[i];
  return t.value();
}

}  // namespace

// The requests of one Generate call and what the hooks read about them.
struct BareLm::Batch {
  explicit Batch(size_t size) : infos(size), iterations(size, 0), limits(size, 1u << 30) {}
  std::shared_ptr<const ConfigTree> params = Toml("", "params.toml");
  const char* loop_name = "generate";
  std::vector<mstar_request_info_t> infos;
  std::vector<uint32_t> iterations, limits;
  std::vector<TensorMapPtr> inputs;  // per request: "tokens" for the next step
};

BareLm::BareLm(const PluginRegistry& registry, const std::string& lm_config,
               const std::string& kv_config)
    : kv_(Create(registry, MSTAR_KIND_RESOURCE, "kv_paged", "kv", kv_config)),
      lm_(Create(registry, MSTAR_KIND_SUBMODULE, "tiny_lm", "lm", lm_config)) {}

BareLm::~BareLm() = default;

std::vector<int64_t> BareLm::Step(Batch& batch, const char* walk) {
  const size_t size = batch.infos.size();
  std::vector<TensorMapPtr> prepared(size), outputs(size);
  std::vector<const mstar_request_info_t*> infos(size);
  std::vector<const mstar_tensor_map_t*> prepared_ptrs(size);
  std::vector<mstar_tensor_map_t*> output_ptrs(size);
  std::vector<uint32_t> tokens(size);
  std::vector<mstar_request_id_t> ids(size);
  const mstar_submodule_vtable_t* lm = lm_->submodule();
  for (size_t i = 0; i < size; ++i) {
    batch.infos[i].walk = walk;
    infos[i] = &batch.infos[i];
    ids[i] = batch.infos[i].request_id;
    prepared[i] = NewTensorMap();
    mstar_prepared_t out{sizeof(mstar_prepared_t), MSTAR_ABI_MINOR, 0, 0, 0, prepared[i].get()};
    Check(lm->prepare_inputs(lm_->self(), infos[i], batch.inputs[i].get(), &out), "prepare");
    MSTAR_CHECK(out.decline == 0);
    tokens[i] = out.num_tokens;
    prepared_ptrs[i] = prepared[i].get();
    outputs[i] = NewTensorMap();
    output_ptrs[i] = outputs[i].get();
  }
  mstar_step_decl_t decl{};
  decl.struct_size = sizeof(decl);
  decl.struct_version = MSTAR_ABI_MINOR;
  decl.node = "lm";
  decl.walk = walk;
  decl.num_requests = static_cast<uint32_t>(size);
  decl.slot = -1;
  decl.request_ids = ids.data();
  decl.num_tokens = tokens.data();
  decl.requests = infos.data();
  const mstar_resource_vtable_t* kv = kv_->resource();
  Check(kv->declare(kv_->self(), &decl), "declare");
  for (uint32_t i = 0; i < size; ++i) {
    mstar_admit_t admit{sizeof(mstar_admit_t), MSTAR_ABI_MINOR, 0, 0, 0};
    Check(kv->admit(kv_->self(), &decl, i, &admit), "admit");
    MSTAR_CHECK(admit.outcome == MSTAR_ADMIT_READY);  // the pool is sized for every request
  }
  TensorMapPtr view = NewTensorMap();
  Check(kv->plan(kv_->self(), &decl, view.get(), nullptr), "plan");
  mstar_resource_view_t resource{sizeof(mstar_resource_view_t), MSTAR_ABI_MINOR, "kv", view.get()};
  mstar_step_t step{};
  step.struct_size = sizeof(step);
  step.struct_version = MSTAR_ABI_MINOR;
  step.node = "lm";
  step.walk = walk;
  step.num_requests = static_cast<uint32_t>(size);
  step.slot = -1;
  step.requests = infos.data();
  step.inputs = prepared_ptrs.data();
  step.num_tokens = tokens.data();
  step.num_resources = 1;
  step.resources = &resource;
  step.outputs = output_ptrs.data();
  Check(lm->forward_batched(lm_->self(), &step), "forward_batched");
  std::vector<uint8_t> succeeded(size, 1);
  Check(kv->commit(kv_->self(), &decl, succeeded.data(), nullptr), "commit");

  std::vector<int64_t> sampled(size);
  for (size_t i = 0; i < size; ++i) {
    mstar_tensor_map::Entry* token = outputs[i]->Find("tokens");
    MSTAR_CHECK(token != nullptr && !token->tensors.empty());
    sampled[i] = static_cast<const int64_t*>(token->tensors[0]->dl.data)[0];
    // Feed the token back, as the engine's loop-back edge does.
    batch.inputs[i]->Remove("tokens");
    Result<mstar_tensor_t*> shared = ShareTensor(token->tensors[0]);
    MSTAR_CHECK(shared.ok() && batch.inputs[i]->Append("tokens", shared.value()).ok());
  }
  return sampled;
}

std::vector<std::vector<int64_t>> BareLm::Generate(const std::vector<std::string>& prompts,
                                                   uint32_t tokens) {
  Batch batch(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    mstar_request_info_t& info = batch.infos[i];
    info.struct_size = sizeof(info);
    info.struct_version = MSTAR_ABI_MINOR;
    info.request_id = next_request_++;
    info.partition = "main";
    info.num_loops = 1;
    info.loop_names = &batch.loop_name;
    info.loop_iterations = &batch.iterations[i];
    info.loop_max_iterations = &batch.limits[i];
    info.seed = info.request_id;
    info.params = batch.params->root();
    Check(kv_->resource()->add_request(kv_->self(), &info), "add_request");
    std::vector<int64_t> bytes(prompts[i].begin(), prompts[i].end());
    batch.inputs.push_back(NewTensorMap());
    MSTAR_CHECK(batch.inputs.back()->Append("tokens", Tokens(bytes)).ok());
  }
  std::vector<std::vector<int64_t>> generated(prompts.size());
  for (uint32_t t = 0; t < tokens; ++t) {
    std::vector<int64_t> sampled = Step(batch, t == 0 ? "prefill" : "decode");
    for (size_t i = 0; i < sampled.size(); ++i) {
      generated[i].push_back(sampled[i]);
      if (t > 0) ++batch.iterations[i];
    }
  }
  for (const mstar_request_info_t& info : batch.infos)
    kv_->resource()->remove_request(kv_->self(), info.request_id);
  return generated;
}

}  // namespace mstar::bench

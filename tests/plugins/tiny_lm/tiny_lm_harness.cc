// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "plugins/tiny_lm/tiny_lm_harness.h"

#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "config/toml_reader.h"
#include "support/test_support.h"

namespace mstar::test {
namespace {

constexpr DLDevice kCpu{kDLCPU, 0};

const PluginRegistry& Registry() {
  static const PluginRegistry registry = LoadOnly({MSTAR_TINY_LM_DIR});
  return registry;
}

std::shared_ptr<const ConfigTree> Toml(const std::string& text, const std::string& path) {
  Diagnostics d;
  auto table = ParseTomlText(text, path, &d);
  EXPECT_TRUE(table.has_value()) << JoinDiagnostics(d);
  return std::make_shared<ConfigTree>(table ? std::move(*table) : toml::table{}, path, "");
}

Result<std::unique_ptr<PluginInstance>> Create(const std::string& config_toml,
                                               const LmParallel& parallel) {
  Result<FactoryRef> factory = Registry().Find(MSTAR_KIND_SUBMODULE, "tiny_lm");
  if (!factory.ok()) return factory.status();
  InstanceOptions options;
  options.name = "lm";
  options.config = Toml(config_toml, "lm.toml");
  options.rank = parallel.rank;
  options.world_size = parallel.world;
  options.comm = parallel.comm;
  return PluginInstance::Create(factory.value(), options);
}

mstar_tensor_t* Tokens(const std::vector<int64_t>& values) {
  mstar_tensor_t* t = AllocateTensor(nullptr, kCpu, DLDataType{kDLInt, 64, 1},
                                     {static_cast<int64_t>(values.size())})
                          .value();
  if (!values.empty()) std::memcpy(t->dl.data, values.data(), values.size() * sizeof(int64_t));
  return t;
}

}  // namespace

Reference LoadReference(const std::string& name) {
  Reference r;
  r.dir = std::string(MSTAR_SOURCE_DIR) + "/tests/reference/fixtures/" + name;
  nlohmann::json config = nlohmann::json::parse(ReadFile(r.dir + "/config.json"));
  nlohmann::json expected = nlohmann::json::parse(ReadFile(r.dir + "/expected.json"));
  r.layers = config["num_hidden_layers"];
  r.kv_heads = config["num_key_value_heads"];
  r.head_dim = config["head_dim"];
  r.vocab = config["vocab_size"];
  for (const auto& c : expected["cases"]) {
    r.cases.push_back({c["prompt"].get<std::vector<int64_t>>(),
                       c["greedy"].get<std::vector<int64_t>>(),
                       c["prompt_logits"].get<std::vector<float>>()});
  }
  return r;
}

std::unique_ptr<PagedKv> MakeKv(const Reference& reference, int64_t num_pages) {
  return std::make_unique<PagedKv>(reference.layers, reference.kv_heads, reference.head_dim,
                                   num_pages, 4);
}

LmRequest::LmRequest(uint64_t id, uint64_t seed, const std::string& params_toml)
    : params(Toml(params_toml, "params")) {
  info.struct_size = sizeof(info);
  info.struct_version = MSTAR_ABI_MINOR;
  info.request_id = id;
  info.walk = "decode";
  info.partition = "default";
  info.num_loops = 1;
  info.loop_names = loop_names;
  info.loop_iterations = iterations;
  info.loop_max_iterations = max_iterations;
  info.seed = seed;
  info.params = params->root();
}

TinyLmHarness::TinyLmHarness(const std::string& config_toml, const LmParallel& parallel) {
  auto created = Create(config_toml, parallel);
  if (!created.ok()) throw std::runtime_error(created.status().ToString());
  instance_ = std::move(created.value());
}

Status TinyLmHarness::TryCreate(const std::string& config_toml, const LmParallel& parallel) {
  return Create(config_toml, parallel).status();
}

Status TinyLmHarness::TryStep(PagedKv& kv, const std::vector<LmRequest*>& requests,
                              const std::vector<std::vector<int64_t>>& inputs, TensorMapPtr view) {
  (void)kv;
  const mstar_submodule_vtable_t* t = instance_->submodule();
  std::vector<TensorMapPtr> prepared, outputs;
  std::vector<const mstar_request_info_t*> infos;
  std::vector<const mstar_tensor_map_t*> step_inputs;
  std::vector<mstar_tensor_map_t*> step_outputs;
  std::vector<uint32_t> tokens;
  for (size_t i = 0; i < requests.size(); ++i) {
    TensorMapPtr in = NewTensorMap();
    EXPECT_TRUE(in->Append("tokens", Tokens(inputs[i])).ok());
    prepared.push_back(NewTensorMap());
    mstar_prepared_t p{sizeof(p), MSTAR_ABI_MINOR, 0, 0, 0, prepared.back().get()};
    Status s = TakeStatus(t->prepare_inputs(instance_->self(), &requests[i]->info, in.get(), &p));
    if (!s.ok()) return s;
    EXPECT_EQ(p.num_tokens, inputs[i].size());
    tokens.push_back(p.num_tokens);
    outputs.push_back(NewTensorMap());
    infos.push_back(&requests[i]->info);
    step_inputs.push_back(prepared.back().get());
    step_outputs.push_back(outputs.back().get());
  }
  mstar_resource_view_t resource{sizeof(resource), MSTAR_ABI_MINOR, "kv", view.get()};
  mstar_step_t step{};
  step.struct_size = sizeof(step);
  step.struct_version = MSTAR_ABI_MINOR;
  step.node = "lm";
  step.walk = "decode";
  step.num_requests = static_cast<uint32_t>(requests.size());
  step.slot = -1;
  step.requests = infos.data();
  step.inputs = step_inputs.data();
  step.num_tokens = tokens.data();
  step.num_resources = 1;
  step.resources = &resource;
  step.outputs = step_outputs.data();
  last_outputs_ = std::move(outputs);
  return TakeStatus(requests.size() == 1 && !batched_
                        ? t->forward(instance_->self(), &step)
                        : t->forward_batched(instance_->self(), &step));
}

std::vector<StepResult> TinyLmHarness::Step(PagedKv& kv, const std::vector<LmRequest*>& requests,
                                            const std::vector<std::vector<int64_t>>& inputs,
                                            const std::vector<int64_t>& cached, bool batched) {
  std::vector<PagedKv::Entry> entries;
  for (size_t i = 0; i < requests.size(); ++i) {
    entries.push_back({requests[i]->info.request_id, static_cast<int64_t>(inputs[i].size()),
                       i < cached.size() ? cached[i] : 0});
  }
  batched_ = batched;
  Status status = TryStep(kv, requests, inputs, kv.Plan(entries));
  batched_ = true;
  EXPECT_TRUE(status.ok()) << status.ToString();
  std::vector<StepResult> results(requests.size());
  if (!status.ok()) return results;
  kv.Commit();
  for (size_t i = 0; i < requests.size(); ++i) {
    const mstar_tensor_map::Entry* token = last_outputs_[i]->Find("tokens");
    const mstar_tensor_map::Entry* logits = last_outputs_[i]->Find("logits");
    EXPECT_TRUE(token != nullptr && logits != nullptr);
    if (token == nullptr || logits == nullptr) continue;
    results[i].token = static_cast<const int64_t*>(token->tensors[0]->dl.data)[0];
    const auto* l = static_cast<const float*>(logits->tensors[0]->dl.data);
    results[i].logits.assign(l, l + TensorNumElements(logits->tensors[0]->dl));
  }
  return results;
}

std::vector<std::vector<int64_t>> TinyLmHarness::Generate(
    PagedKv& kv, const std::vector<LmRequest*>& requests,
    const std::vector<std::vector<int64_t>>& prompts, int tokens,
    const std::vector<int>& start_steps) {
  std::vector<std::vector<int64_t>> out(requests.size());
  for (int step = 0;; ++step) {
    std::vector<LmRequest*> batch;
    std::vector<std::vector<int64_t>> inputs;
    std::vector<size_t> which;
    for (size_t i = 0; i < requests.size(); ++i) {
      int start = i < start_steps.size() ? start_steps[i] : 0;
      if (step < start || static_cast<int>(out[i].size()) >= tokens) continue;
      batch.push_back(requests[i]);
      inputs.push_back(step == start ? prompts[i] : std::vector<int64_t>{out[i].back()});
      which.push_back(i);
    }
    if (batch.empty()) {
      bool pending = false;
      for (size_t i = 0; i < requests.size(); ++i)
        pending |= static_cast<int>(out[i].size()) < tokens;
      if (!pending) return out;
      continue;
    }
    std::vector<StepResult> results = Step(kv, batch, inputs);
    for (size_t k = 0; k < which.size(); ++k) out[which[k]].push_back(results[k].token);
    if (::testing::Test::HasFailure()) return out;
  }
}

uint64_t TinyLmHarness::CheckStop(LmRequest& request, int64_t token, int64_t position) {
  TensorMapPtr outputs = NewTensorMap();
  EXPECT_TRUE(outputs->Append("tokens", Tokens({token})).ok());
  if (position >= 0) {
    EXPECT_TRUE(outputs->Append("position", Tokens({position})).ok());
  }
  uint64_t mask = 0;
  Status s = TakeStatus(
      instance_->submodule()->check_stop(instance_->self(), &request.info, outputs.get(), &mask));
  EXPECT_TRUE(s.ok()) << s.ToString();
  return mask;
}

}  // namespace mstar::test

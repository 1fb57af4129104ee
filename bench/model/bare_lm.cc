// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "model/bare_lm.h"

#include <cstdlib>
#include <iostream>

#include "common/bare_step.h"
#include "config/toml_reader.h"
#include "core/diagnostic.h"
#include "plugin/slots.h"

namespace mstar::bench {
namespace {

std::unique_ptr<PluginInstance> Create(const PluginRegistry& registry, uint32_t kind,
                                       const std::string& plugin, const std::string& name,
                                       const std::string& config) {
  Result<FactoryRef> factory = registry.Find(kind, plugin);
  MSTAR_CHECK(factory.ok());
  Diagnostics diagnostics;
  auto table = ParseTomlText(config, name + ".toml", &diagnostics);
  MSTAR_CHECK(table.has_value());
  InstanceOptions options;
  options.name = name;
  options.config = std::make_shared<ConfigTree>(std::move(*table), name + ".toml", "");
  auto instance = PluginInstance::Create(factory.value(), options);
  if (!instance.ok()) {
    std::cerr << "bare loop: " << instance.status().ToString() << "\n";
    std::abort();
  }
  return std::move(instance).value();
}

}  // namespace

BareLm::BareLm(const PluginRegistry& registry, const std::string& lm_config,
               const std::string& kv_config)
    : kv_(Create(registry, MSTAR_KIND_RESOURCE, "kv_paged", "kv", kv_config)),
      lm_(Create(registry, MSTAR_KIND_SUBMODULE, "tiny_lm", "lm", lm_config)) {
  mstar_submodule_info_t info{sizeof(info), MSTAR_ABI_MINOR, 0, 0, nullptr, nullptr};
  CheckPlugin(lm_->submodule()->info(lm_->self(), &info), "info");
  columnar_ = (info.flags & MSTAR_SUBMODULE_COLUMNAR) != 0 &&
              MSTAR_HAS_SLOT(lm_->submodule(), prepare_inputs_columnar, 1);
}

BareLm::~BareLm() = default;

std::vector<std::vector<int64_t>> BareLm::Generate(const std::vector<std::string>& prompts,
                                                   uint32_t tokens) {
  BareBatch batch(prompts.size(), next_request_);
  next_request_ += prompts.size();
  for (size_t i = 0; i < prompts.size(); ++i) {
    CheckPlugin(kv_->resource()->add_request(kv_->self(), &batch.infos[i]), "add_request");
    std::vector<int64_t> bytes(prompts[i].begin(), prompts[i].end());
    MSTAR_CHECK(batch.inputs[i]->Append("tokens", Int64Tensor(bytes)).ok());
  }
  BareStep step(*lm_, kv_.get());
  std::vector<std::vector<int64_t>> generated = columnar_
                                                    ? GenerateColumnar(step, batch, prompts, tokens)
                                                    : GenerateMaps(step, batch, tokens);
  last_step_end_ = std::chrono::steady_clock::now();
  for (const mstar_request_info_t& info : batch.infos)
    kv_->resource()->remove_request(kv_->self(), info.request_id);
  steps_ += tokens;
  forward_ns_ += step.forward_ns();
  return generated;
}

std::vector<std::vector<int64_t>> BareLm::GenerateMaps(BareStep& step, BareBatch& batch,
                                                       uint32_t tokens) {
  std::vector<std::vector<int64_t>> generated(batch.size());
  for (uint32_t t = 0; t < tokens; ++t) {
    std::vector<TensorMapPtr> outputs = step.Run(batch, t == 0 ? "prefill" : "decode");
    for (size_t i = 0; i < outputs.size(); ++i) {
      const mstar_tensor_map::Entry* sampled = outputs[i]->Find("tokens");
      MSTAR_CHECK(sampled != nullptr && !sampled->tensors.empty());
      generated[i].push_back(static_cast<const int64_t*>(sampled->tensors[0]->dl.data)[0]);
      batch.FeedBack(i, outputs[i], "tokens");
      if (t > 0) ++batch.iterations[i];
    }
    if (t == 0) first_step_end_ = std::chrono::steady_clock::now();
  }
  return generated;
}

std::vector<std::vector<int64_t>> BareLm::GenerateColumnar(BareStep& step, BareBatch& batch,
                                                           const std::vector<std::string>& prompts,
                                                           uint32_t tokens) {
  // The prompts stacked, with their offsets; then each step's sampled tokens [B], fed back whole.
  std::vector<int64_t> bytes, offsets = {0};
  for (const std::string& prompt : prompts) {
    bytes.insert(bytes.end(), prompt.begin(), prompt.end());
    offsets.push_back(static_cast<int64_t>(bytes.size()));
  }
  TensorMapPtr inputs = NewTensorMap();
  TensorMapPtr input_rows = NewTensorMap();
  inputs->AppendHost("tokens", Int64Tensor(bytes));
  input_rows->AppendHost("tokens", Int64Tensor(offsets));
  std::vector<std::vector<int64_t>> generated(batch.size());
  for (uint32_t t = 0; t < tokens; ++t) {
    const char* walk = t == 0 ? "prefill" : "decode";
    auto [outputs, rows] = step.RunColumnar(batch, walk, *inputs, *input_rows);
    // The stop check and prefix chains, as the engine runs them after every step. The bench's
    // model has no end token: a stop would mean the two sides no longer run the same steps.
    const std::vector<uint64_t>& stops =
        step.FinishColumnar(batch, walk, *outputs, *rows, "tokens");
    for (size_t i = 0; i < batch.size(); ++i) {
      if (stops[i] != 0) {
        std::cerr << "bare loop: request " << i << " stopped at step " << t
                  << "; model_bench runs every request to its token budget (end_token = -1)\n";
        std::abort();
      }
    }
    const mstar_tensor_map::Entry* sampled = outputs->Find("tokens");
    MSTAR_CHECK(sampled != nullptr && !sampled->tensors.empty());
    const auto* next = static_cast<const int64_t*>(sampled->tensors[0]->dl.data);
    for (size_t i = 0; i < batch.size(); ++i) {
      generated[i].push_back(next[i]);
      if (t > 0) ++batch.iterations[i];
    }
    FeedBackWhole(*outputs, "tokens", &inputs, &input_rows);
    if (t == 0) first_step_end_ = std::chrono::steady_clock::now();
  }
  return generated;
}

}  // namespace mstar::bench

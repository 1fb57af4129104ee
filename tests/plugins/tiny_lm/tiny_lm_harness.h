// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Driving the real tiny_lm plugin (build/lib/mstar/plugins/tiny_lm) through its ABI table the way
// the engine does: prepare_inputs per request, then forward_batched (or forward) with a paged KV
// view built by PagedKv, reading back each request's "tokens" and "logits".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/config_tree.h"
#include "plugin/instance.h"
#include "plugins/tiny_lm/paged_kv.h"

namespace mstar::test {

// The HF reference of one fixture (tests/reference/fixtures/<name>/expected.json).
struct ReferenceCase {
  std::vector<int64_t> prompt;
  std::vector<int64_t> greedy;
  std::vector<float> prompt_logits;
};
struct Reference {
  std::string dir;  // the fixture directory (config.json, model.safetensors)
  int64_t layers = 0, kv_heads = 0, head_dim = 0, vocab = 0;
  std::vector<ReferenceCase> cases;
};
Reference LoadReference(const std::string& name);

// One request's engine-side bookkeeping.
struct LmRequest {
  LmRequest(uint64_t id, uint64_t seed, const std::string& params_toml = "");
  std::shared_ptr<const ConfigTree> params;
  const char* loop_names[1] = {"decode_loop"};
  uint32_t iterations[1] = {0};
  uint32_t max_iterations[1] = {64};
  mstar_request_info_t info{};
};

struct StepResult {
  int64_t token = -1;
  std::vector<float> logits;
};

// An instance's place in a tensor-parallel group (create args rank, world_size, comm).
struct LmParallel {
  uint32_t rank = 0;
  uint32_t world = 1;
  mstar_comm_t* comm = nullptr;  // borrowed; outlives the instance
};

class TinyLmHarness {
 public:
  // Creates a tiny_lm instance with config_toml as its node config.
  explicit TinyLmHarness(const std::string& config_toml, const LmParallel& parallel = {});
  // The status of creating an instance with config_toml (for error tests).
  static Status TryCreate(const std::string& config_toml, const LmParallel& parallel = {});

  // One step: request i feeds inputs[i] (cached[i] leading tokens already in kv). batched:
  // forward_batched, else forward (then exactly one request).
  std::vector<StepResult> Step(PagedKv& kv, const std::vector<LmRequest*>& requests,
                               const std::vector<std::vector<int64_t>>& inputs,
                               const std::vector<int64_t>& cached = {}, bool batched = true);
  // Step, but returns the forward's status instead of results (the KV is not committed).
  Status TryStep(PagedKv& kv, const std::vector<LmRequest*>& requests,
                 const std::vector<std::vector<int64_t>>& inputs, TensorMapPtr view);

  // Runs requests[i] from prompts[i] for `tokens` generated tokens, all in one batch per step,
  // the prompt of request i entering at step start_steps[i] (others decode meanwhile).
  std::vector<std::vector<int64_t>> Generate(PagedKv& kv, const std::vector<LmRequest*>& requests,
                                             const std::vector<std::vector<int64_t>>& prompts,
                                             int tokens, const std::vector<int>& start_steps = {});

  // check_stop on outputs holding token and, when position >= 0, the position it takes.
  uint64_t CheckStop(LmRequest& request, int64_t token, int64_t position = -1);
  const PluginInstance& instance() const { return *instance_; }

 private:
  std::unique_ptr<PluginInstance> instance_;
  bool batched_ = true;
  std::vector<TensorMapPtr> last_outputs_;  // the outputs of the last step, per request
};

// PagedKv sized for reference (page size 4, 61 pages).
std::unique_ptr<PagedKv> MakeKv(const Reference& reference, int64_t num_pages = 61);

}  // namespace mstar::test

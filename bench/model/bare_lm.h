// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// BareLm: the tiny_lm plugin and its kv_paged resource driven directly through their ABI tables
// (bench::BareStep), with no engine: one prefill step, then decode steps, each sampled token fed
// back as the next input. It runs the columnar form when the plugin declares it (as the engine's
// cohorts do), with the stop check and the resource's prefix chains after each step as the engine
// runs them, else one map per request (forward only: a fallback no reference plugin takes). It is the baseline the model benchmark puts the engine
// beside: the same plugin work on the same batches, without scheduling, routing, threads or
// client streams.
//
// Not thread-safe. Aborts on any plugin error: a benchmark has no use for a partial figure.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/bare_step.h"
#include "plugin/instance.h"
#include "plugin/registry.h"

namespace mstar::bench {

class BareLm {
 public:
  // lm_config and kv_config are the TOML bodies of the node's and the resource's config tables.
  BareLm(const PluginRegistry& registry, const std::string& lm_config,
         const std::string& kv_config);
  ~BareLm();

  // Runs prompts.size() requests together from their prompts (byte tokens) until each generated
  // `tokens` tokens: one prefill step, then tokens - 1 decode steps. Returns the tokens generated
  // per request.
  std::vector<std::vector<int64_t>> Generate(const std::vector<std::string>& prompts,
                                             uint32_t tokens);

  // When the last Generate's first step (its prefill) and its last step had run: the bare
  // loop's first and last tokens.
  std::chrono::steady_clock::time_point first_step_end() const { return first_step_end_; }
  std::chrono::steady_clock::time_point last_step_end() const { return last_step_end_; }
  // Totals over every Generate so far: steps run and nanoseconds inside forward_batched.
  uint64_t steps() const { return steps_; }
  uint64_t forward_ns() const { return forward_ns_; }

 private:
  std::vector<std::vector<int64_t>> GenerateMaps(BareStep& step, BareBatch& batch, uint32_t tokens);
  std::vector<std::vector<int64_t>> GenerateColumnar(BareStep& step, BareBatch& batch,
                                                     const std::vector<std::string>& prompts,
                                                     uint32_t tokens);

  std::unique_ptr<PluginInstance> kv_, lm_;  // kv_ outlives lm_
  bool columnar_ = false;
  uint64_t next_request_ = 1;
  uint64_t steps_ = 0;
  uint64_t forward_ns_ = 0;
  std::chrono::steady_clock::time_point first_step_end_;
  std::chrono::steady_clock::time_point last_step_end_;
};

}  // namespace mstar::bench

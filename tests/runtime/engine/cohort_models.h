// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The models and checks the cohort tests share (cohort_test.cc, cohort_resources_test.cc): every
// request of a cohort must get exactly what the per-request path gives it.
#ifndef MSTAR_TESTS_RUNTIME_ENGINE_COHORT_MODELS_H_
#define MSTAR_TESTS_RUNTIME_ENGINE_COHORT_MODELS_H_

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/engine/engine_harness.h"

namespace mstar::test {

// A language model over kit_columnar (adds 1, stops when a request's last token reaches 120):
// prefill from the prompt, then a decode loop of the whole prompt's width (every step carries as
// many tokens per request as its prompt had, so requests' rows differ).
inline std::string ColumnarModel(int max_iterations = 1000) {
  return R"(
format = 1
[model]
name = "columnar"
max_output_tokens = 100000
[nodes.lm]
plugin = "kit_columnar"
[nodes.lm.config]
add = 1
stop_at = 120
)" + LmWalks(max_iterations);
}

// ColumnarModel with a kit_counter "kv" resource in the node: every step adds its tokens to the
// request's count, and the count it saw before the step is emitted as "positions", so a step run
// twice, lost, or run on another request's state shows in the outputs.
inline std::string ColumnarKvModel() {
  return R"(
format = 1
[model]
name = "columnar-kv"
max_output_tokens = 100000
)" + KitLmNode("", "kit_columnar", 120) +
         LmWalks(1000, "{ from = \"lm.position\", emit = \"positions\" },");
}

// ColumnarKvModel with a second kit_counter, "kv2", after "kv", configured with kv2_config
// (TOML lines) besides a capacity that never runs out.
inline std::string TwoResourceModel(const std::string& kv2_config) {
  return R"(
format = 1
[model]
name = "columnar-two-resources"
max_output_tokens = 100000
)" + KitLmNode(", \"kv2\"", "kit_columnar", 120) +
         R"(
[resources.kv2]
plugin = "kit_counter"
[resources.kv2.config]
capacity = 100000
)" + kv2_config +
         "\n" + LmWalks(1000, "{ from = \"lm.position\", emit = \"positions\" },");
}

// finish_on_executor false: every step is finished on the finisher thread (as device outputs
// are), so a cohort step's rows are settled after its exec rather than in its finish.
inline RunOutput RunWith(const ModelSpec& model, const std::vector<std::string>& prompts,
                         bool cohorts, bool together = false, bool finish_on_executor = true) {
  RunOptions options;
  options.session.conductor.cohorts = cohorts;
  options.session.pipeline.finish_on_executor = finish_on_executor;
  options.together = together;
  return RunAll(model, prompts, options);
}

inline void ExpectSameOutcomes(const RunOutput& a, const RunOutput& b) {
  ASSERT_EQ(a.outcomes.size(), b.outcomes.size());
  for (size_t i = 0; i < a.outcomes.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i + 1));
    const Outcome& x = a.outcomes[i];
    const Outcome& y = b.outcomes[i];
    EXPECT_EQ(x.result.end, y.result.end) << x.result.error << " / " << y.result.error;
    EXPECT_EQ(x.result.error, y.result.error);
    EXPECT_EQ(x.result.tokens, y.result.tokens);
    // Steps are counted on a cohort member while it is one and added to its request after.
    EXPECT_EQ(x.result.steps, y.result.steps);
    EXPECT_EQ(x.text, y.text);
    EXPECT_EQ(x.values, y.values);
    EXPECT_EQ(x.element_types, y.element_types);
    EXPECT_EQ(x.chunks, y.chunks);
  }
}

// Request 3 of run failed with an error holding message; every other one is done with the
// values it has in clean.
inline void ExpectOnlyTheThirdFails(const RunOutput& run, const RunOutput& clean,
                                    const std::string& message) {
  for (size_t i = 0; i < run.outcomes.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i + 1));
    const Outcome& o = run.outcomes[i];
    if (i + 1 == 3) {
      EXPECT_EQ(o.result.end, RequestEnd::kFailed);
      EXPECT_NE(o.result.error.find(message), std::string::npos) << o.result.error;
      continue;
    }
    ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
    EXPECT_EQ(o.values, clean.outcomes[i].values);
  }
}

}  // namespace mstar::test

#endif  // MSTAR_TESTS_RUNTIME_ENGINE_COHORT_MODELS_H_

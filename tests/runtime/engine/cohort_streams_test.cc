// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Cohorts (runtime/engine/cohort.h) in a stream's consumer partition: a consumer run as a cohort
// is told its stream's last chunk and ends at the request's output limit as on the per-request
// path.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/engine/engine_harness.h"

namespace mstar {
namespace {

// kit_columnar "lm" (prefill, then a decode loop of decode_iterations: test::LmWalks) streaming
// its tokens into stream "s" (fixed chunks of 2 or 4 tokens) for partition "side", whose walk
// "chunk" runs kit_columnar "consumer" (config consumer_config) as `consumer_run`, emitting
// "chunks" with consumer_emit_keys.
test::RunOutput RunConsumer(int max_output_tokens, int decode_iterations,
                            const std::string& consumer_config, const std::string& chunk_size,
                            const std::string& consumer_run, const std::string& consumer_edges,
                            bool cohorts) {
  const ModelSpec model = test::Model(R"(
format = 1
[model]
name = "consumer"
max_output_tokens = )" + std::to_string(max_output_tokens) +
                                      R"(
[nodes.lm]
plugin = "kit_columnar"
[nodes.lm.config]
add = 1
stop_at = 110
[nodes.consumer]
plugin = "kit_columnar"
[nodes.consumer.config]
)" + consumer_config + R"(
[streams.s]
to = "side"
policy = "fixed"
size = )" + chunk_size + R"(
[partitions.side]
initial = "chunk"
transitions = { chunk = "chunk" }
[walks.chunk]
partition = "side"
run = )" + consumer_run + R"(
inputs = { "consumer.tokens" = "stream.s" }
edges = [)" + consumer_edges + R"(]
)" + test::LmWalks(decode_iterations, "{ from = \"lm.tokens\", stream = \"s\" },"));
  test::RunOptions options;
  options.session.conductor.cohorts = cohorts;
  options.together = true;
  return test::RunAll(model, std::vector<std::string>(6, "e"), options);
}

// A stream's consumer run as a cohort is told its last chunk (MSTAR_REQUEST_FINAL_CHUNK) as on
// the per-request path: kit_columnar adds 1000 to the tokens of a step so flagged.
TEST(CohortStreams, AConsumerInACohortIsToldItsStreamsLastChunk) {
  for (bool cohorts : {true, false}) {
    SCOPED_TRACE(cohorts ? "cohorts" : "per request");
    // "e" is 101: prefill gives 102, decode 103 ... 110, nine tokens: chunks of 4, 4 and 1.
    test::RunOutput run =
        RunConsumer(100000, 1000, "add = 0\nfinal_chunk_add = 1000", "4", "\"consumer\"",
                    "{ from = \"consumer.tokens\", emit = \"chunks\" }", cohorts);
    for (const test::Outcome& o : run.outcomes) {
      ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
      const std::vector<std::vector<int64_t>> expected = {
          {102, 103, 104, 105}, {106, 107, 108, 109}, {1110}};
      EXPECT_EQ(o.chunks.at("chunks"), expected);
    }
    if (cohorts) {
      EXPECT_GT(run.stats.cohort_batches, 0u);
    }
  }
}

// The output limit counts a request's tokens across partitions: once the producer's outputs
// reach it, the consumer's decode loop (a cohort) ends at its next step, as on the per-request
// path, rather than stepping on to its loop limit with nothing sent.
TEST(CohortStreams, TheOutputLimitReachedByAnotherPartitionEndsACohortsLoop) {
  // Which partition reaches the limit first depends on how their steps interleave, so the two
  // paths are held to the same bound rather than to the same outputs: the limit is reached
  // within 5 steps of each partition, and each ends a step or two (one in flight) after it,
  // far short of the consumer loop's 30 iterations.
  for (bool cohorts : {true, false}) {
    SCOPED_TRACE(cohorts ? "cohorts" : "per request");
    test::RunOutput run = RunConsumer(
        5, 40, "add = 1", "2", "{ loop = \"inner\", max_iterations = 30, body = \"consumer\" }",
        "{ from = \"consumer.tokens\", to = \"consumer.tokens\" }, { from = \"consumer.tokens\", "
        "emit = \"side\", counts_tokens = true }",
        cohorts);
    for (const test::Outcome& o : run.outcomes) {
      EXPECT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
      EXPECT_EQ(o.result.tokens, 5u);
      EXPECT_LT(o.result.steps + o.result.wasted_steps, 20u);
    }
    if (cohorts) {
      EXPECT_GT(run.stats.cohort_batches, 0u);
    }
  }
}

}  // namespace
}  // namespace mstar

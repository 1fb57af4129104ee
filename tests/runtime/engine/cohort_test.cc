// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Cohorts (runtime/engine/cohort.h): decode loops of columnar nodes run as one columnar step over
// their requests. Every request must get exactly what the per-request path gives it (cohorts
// off), whatever else runs beside it, and a request that fails at any stage of a cohort's step
// fails alone.
#include <gtest/gtest.h>

#include <tuple>

#include "core/metrics.h"
#include "host/memory_ledger.h"
#include "runtime/engine/cohort_models.h"
#include "runtime/engine/engine_harness.h"

namespace mstar {
namespace {

using test::ColumnarKvModel;
using test::ColumnarModel;
using test::ExpectSameOutcomes;
using test::Model;
using test::RunAll;
using test::RunWith;
using test::ShippedModel;
using test::TwoResourceModel;

// A cancel that lands while a cohort's step executes (its forward made slow) ends the cohort's
// last membership before the step's results are taken: the step's fed-back outputs must not be
// kept for a cohort with no one left to read them.
TEST(Cohort, ACancelDuringAStepLeavesNoHostMemoryHeld) {
  const ModelSpec model = Model(ColumnarModel(), {"nodes.lm.config.forward_sleep_us=20000"});
  for (bool on_executor : {true, false}) {
    SCOPED_TRACE(on_executor ? "finished on the executor" : "finished on the finisher thread");
    SessionOptions options;
    options.pipeline.finish_on_executor = on_executor;
    Result<std::unique_ptr<Session>> session = Session::Open(model, test::TestRegistry(), options);
    ASSERT_TRUE(session.ok());
    const DLDevice cpu{kDLCPU, 0};
    const uint64_t before = MemoryLedger::Global().Used(cpu);
    SubmitSpec spec;
    spec.prompt = "abc";
    auto stream = (*session)->Submit(spec);
    ASSERT_TRUE(stream.ok());
    OutputChunk chunk;
    ASSERT_TRUE(stream.value()->Next(&chunk));  // the prefill's
    ASSERT_TRUE(stream.value()->Next(&chunk));  // a decode step's: the next one is executing
    EXPECT_TRUE((*session)->Cancel(stream.value()->id()));
    EXPECT_EQ(stream.value()->Wait().end, RequestEnd::kCancelled);
    (*session)->WaitIdle();
    EXPECT_EQ(test::HostMemoryAfterSettling(before), before);
    (*session)->Close();
  }
}

// A member record that a step in flight names outlives its membership even when a later
// membership reuses it and ends before that step. Long requests run among a burst of 1100 short
// ones, which leave the spare list full (1024 records) when they end. Then, for each long one: it
// is cancelled while its decode step executes (its record is kept for the row: 1025), a new
// request joins with that record and is cancelled at once (1024 again: its record, were it not
// named, would be freed), and the step's row must then find its membership ended, not freed
// memory. Whether the new request is cancelled before a step of its own forms depends on the
// threads' timing, hence several tries; freed memory shows under AddressSanitizer.
TEST(Cohort, AMemberRecordOutlivesTheRowsOfItsEarlierMemberships) {
  const ModelSpec model = Model(ColumnarModel(), {"nodes.lm.config.forward_sleep_us=50000"});
  Result<std::unique_ptr<Session>> session = Session::Open(model, test::TestRegistry());
  ASSERT_TRUE(session.ok());
  constexpr size_t kLong = 5;
  std::vector<SubmitSpec> burst(1100 + kLong);
  for (size_t i = 0; i < burst.size(); ++i) burst[i].prompt = i < kLong ? "abc" : "xyz";
  auto streams = (*session)->SubmitAll(std::move(burst));
  for (size_t i = kLong; i < streams.size(); ++i) {
    ASSERT_TRUE(streams[i].ok());
    ASSERT_EQ(streams[i].value()->Wait().end, RequestEnd::kDone);
  }
  SubmitSpec spec;
  spec.prompt = "abc";
  for (size_t i = 0; i < kLong; ++i) {
    ASSERT_TRUE(streams[i].ok());
    const std::shared_ptr<RequestStream>& running = streams[i].value();
    OutputChunk chunk;
    ASSERT_TRUE(running->Next(&chunk));
    EXPECT_TRUE((*session)->Cancel(running->id()));
    auto joiner = (*session)->Submit(spec);
    ASSERT_TRUE(joiner.ok());
    (*session)->Cancel(joiner.value()->id());
    EXPECT_EQ(running->Wait().end, RequestEnd::kCancelled);
    joiner.value()->Wait();
  }
  (*session)->WaitIdle();
  // The session still runs requests to their end.
  auto last = (*session)->Submit(spec);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last.value()->Wait().end, RequestEnd::kDone);
  (*session)->Close();
}

// A stop check that reads no output (stop_outputs is empty) still runs on a cohort's steps, as it
// does on the per-request path: here it ends the decode loop at its third iteration.
TEST(Cohort, AStopCheckThatReadsNoOutputRunsAsOnThePerRequestPath) {
  ModelSpec model = Model(ColumnarModel(), {"nodes.lm.config.stop_after=3"});
  std::vector<std::string> prompts = test::RandomPrompts(12, 5, 4);
  test::RunOutput cohorts = RunWith(model, prompts, true, true);
  test::RunOutput per_request = RunWith(model, prompts, false, true);
  ExpectSameOutcomes(cohorts, per_request);
  for (const test::Outcome& o : cohorts.outcomes) {
    ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
    EXPECT_LE(o.result.steps, 6u) << "the loop ran past its stop";  // prefill, 4 decodes, 1 ahead
  }
  EXPECT_GT(cohorts.stats.cohort_batches, 0u);
}

// The node's token input reaches its resource with every step, as a cohort's columnar rows and
// on the per-request path: no committed step comes without its ids, and each request's first
// step brings exactly its prompt's bytes. Without a token input, no step has ids.
TEST(Cohort, EveryStepsTokenIdsReachTheResourceOnBothPaths) {
  const std::vector<std::string> prompts = {"ab", "c", "def", "gh"};
  int64_t prompt_sum = 0;
  for (const std::string& p : prompts)
    for (char c : p) prompt_sum += static_cast<unsigned char>(c);
  auto counter = [](const char* name) {
    return Metrics::Global().Counter(std::string("kit/kv.") + name);
  };
  for (bool cohorts : {true, false}) {
    SCOPED_TRACE(cohorts ? "cohorts" : "per request");
    const int64_t without = counter("steps_without_ids"), ids = counter("input_ids");
    const int64_t firsts = counter("first_step_id_sum");
    test::RunOutput run = RunWith(Model(ColumnarKvModel(), {"nodes.lm.config.token_input=tokens"}),
                                  prompts, cohorts, /*together=*/true);
    for (const test::Outcome& o : run.outcomes) ASSERT_EQ(o.result.end, RequestEnd::kDone);
    EXPECT_EQ(run.stats.cohort_batches > 0, cohorts);
    EXPECT_EQ(counter("steps_without_ids"), without);
    EXPECT_GT(counter("input_ids"), ids);
    EXPECT_EQ(counter("first_step_id_sum") - firsts, prompt_sum);
  }
  const int64_t without = counter("steps_without_ids");
  test::RunOutput run = RunWith(Model(ColumnarKvModel()), prompts, true, true);
  EXPECT_GT(counter("steps_without_ids"), without);
}

// A step's second resource fails its commit after the first committed: the step's rows fail, as
// the members of a per-request step do, instead of running again one at a time on the first
// resource's advanced state (which would show in the positions of the requests that survived).
TEST(Cohort, ARowsFailedCommitFailsItsStepRatherThanRunningItAgain) {
  const std::string model = TwoResourceModel("fail_commit_request = 2");
  const std::vector<std::string> prompts = {"ab", "cd", "ef"};
  test::RunOutput cohort = RunWith(Model(model), prompts, true, /*together=*/true);
  test::RunOutput per_request = RunWith(Model(model), prompts, false, /*together=*/true);
  ExpectSameOutcomes(cohort, per_request);
  EXPECT_EQ(cohort.outcomes[1].result.end, RequestEnd::kFailed);
  EXPECT_NE(cohort.outcomes[1].result.error.find("fails the commit of request 2"),
            std::string::npos)
      << cohort.outcomes[1].result.error;
}

TEST(Cohort, RowsOfDifferentWidthsGetWhatThePerRequestPathGives) {
  ModelSpec model = Model(ColumnarModel());
  std::vector<std::string> prompts = test::RandomPrompts(120, 6, 11);
  for (bool together : {false, true}) {
    SCOPED_TRACE(together ? "submitted together" : "submitted one by one");
    test::RunOutput cohorts = RunWith(model, prompts, true, together);
    test::RunOutput per_request = RunWith(model, prompts, false, together);
    for (const test::Outcome& o : cohorts.outcomes)
      ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
    ExpectSameOutcomes(cohorts, per_request);
    // The prefill (one step) and the decode loop both run as cohorts: every batch is columnar.
    EXPECT_EQ(cohorts.stats.cohort_batches, cohorts.stats.batches);
    EXPECT_EQ(per_request.stats.cohort_batches, 0u);
    // Speculation keeps its rule: at most the one step after a stop is wasted.
    for (const test::Outcome& o : cohorts.outcomes) EXPECT_LE(o.result.wasted_steps, 1u);
    EXPECT_EQ(cohorts.stats.requests_done, prompts.size());
  }
}

TEST(Cohort, ARequestsOutputIsIndependentOfItsCompany) {
  // Alone, and among 63 others: the same tokens.
  ModelSpec model = Model(ColumnarModel());
  std::vector<std::string> crowd = test::RandomPrompts(64, 6, 5);
  test::RunOutput alone = RunWith(model, {crowd[17]}, true);
  test::RunOutput together = RunWith(model, crowd, true, true);
  ASSERT_EQ(alone.outcomes[0].result.end, RequestEnd::kDone);
  EXPECT_EQ(alone.outcomes[0].values, together.outcomes[17].values);
  EXPECT_GT(together.stats.nodes.at("lm").mean(), 8.0) << "the decode steps should share batches";
}

TEST(Cohort, EchoWithStreamsAndChunksIsTheSameEitherWay) {
  ModelSpec model = ShippedModel("echo");
  std::vector<std::string> prompts = test::RandomPrompts(80, 30, 3);
  test::RunOutput cohorts = RunWith(model, prompts, true, true);
  test::RunOutput per_request = RunWith(model, prompts, false, true);
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(cohorts.outcomes[i].text, prompts[i]);
  ExpectSameOutcomes(cohorts, per_request);
  EXPECT_GT(cohorts.stats.cohort_batches, 0u);
}

// The cohort keeps of a step's outputs only what its next step reads: an output no edge takes
// (kit_columnar's "side", as a model's logits) is gone before the next step runs, as in a plain
// loop, rather than held until that step's outputs replace it.
TEST(Cohort, AnOutputNoEdgeReadsIsNotHeldIntoTheNextStep) {
  ModelSpec model = Model(ColumnarModel(), {"nodes.lm.config.side_floats=4096"});
  std::vector<std::string> prompts = {"a", "bc", "def"};
  test::RunOutput run = RunWith(model, prompts, true, true);
  ExpectSameOutcomes(run, RunWith(Model(ColumnarModel()), prompts, true, true));
  for (const test::Outcome& o : run.outcomes)
    EXPECT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
}

TEST(Cohort, LoopLimitAndOutputLimitEndAMember) {
  // The loop's own limit (3 iterations) and, separately, the output-token limit (5 tokens).
  ModelSpec limited = Model(ColumnarModel(3));
  std::vector<std::string> prompts = {"a", "bc", "def"};
  ExpectSameOutcomes(RunWith(limited, prompts, true, true), RunWith(limited, prompts, false, true));
  EXPECT_EQ(RunWith(limited, {"a"}, true).outcomes[0].result.tokens, 4u);  // prefill + 3

  ModelSpec capped = Model(ColumnarModel(), {"model.max_output_tokens=5"});
  test::RunOutput run = RunWith(capped, prompts, true, true);
  ExpectSameOutcomes(run, RunWith(capped, prompts, false, true));
  for (const test::Outcome& o : run.outcomes) EXPECT_EQ(o.result.tokens, 5u);
}

TEST(Cohort, CapSplitsTheLoopIntoSeveralCohorts) {
  ModelSpec model = Model(ColumnarModel(), {"nodes.lm.config.add=1"});
  test::RunOptions options;
  options.session.conductor.max_batch = 5;
  options.together = true;
  std::vector<std::string> prompts = test::RandomPrompts(23, 4, 9);
  test::RunOutput run = RunAll(model, prompts, options);
  options.session.conductor.cohorts = false;
  ExpectSameOutcomes(run, RunAll(model, prompts, options));
  EXPECT_EQ(run.stats.largest_batch.at("lm"), 5u);  // reached, never exceeded
}

TEST(Cohort, RowsThatDoNotAddUpFailTheirRequestsWithTheReason) {
  // Every columnar step of kit_columnar writes one row too many: the host refuses what it wrote,
  // retries each row alone (which fails the same way), and fails each request naming the output.
  ModelSpec model = Model(ColumnarModel(), {"nodes.lm.config.extra_row=true"});
  test::RunOutput run = RunWith(model, {"ab", "c"}, true, true);
  for (const test::Outcome& o : run.outcomes) {
    EXPECT_EQ(o.result.end, RequestEnd::kFailed);
    // "... row offsets end at 2 but the tensor has 3 rows" or "... has 2 rows for 1 requests".
    EXPECT_NE(o.result.error.find("columnar forward_batched: columnar output 'tokens'"),
              std::string::npos)
        << o.result.error;
    EXPECT_NE(o.result.error.find(" rows"), std::string::npos) << o.result.error;
    // The prefill is a cohort's step too: the requests fail there.
    EXPECT_NE(o.result.error.find("node 'lm' in walk 'prefill'"), std::string::npos)
        << o.result.error;
  }
  // The per-request path never asks for the columnar form: the same model runs through it.
  for (const test::Outcome& o : RunWith(model, {"ab", "c"}, false, true).outcomes)
    EXPECT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
}

// A request whose first input does not stack with the others' (here one column, [n, 1], where
// the others are [n]; a controller's inputs may differ by prompt) fails alone: the rest of the
// cohort steps without it and gets what it gets without that request.
TEST(Cohort, ARowThatDoesNotStackWithTheOthersFailsItsRequestAlone) {
  std::string manifest = ColumnarModel();
  auto replace = [&](const std::string& from, const std::string& to) {
    manifest.replace(manifest.find(from), from.size(), to);
  };
  replace("[model]\n", "[model]\ncontroller = \"kit_model_plain\"\nprompt = \"tokens\"\n");
  replace("request.prompt", "request.tokens");
  const ModelSpec model = Model(manifest);
  test::RunOptions options;
  options.session.conductor.cohorts = true;
  options.together = true;
  options.request_params = {{}, {"two_dimensional = true"}, {}};
  test::RunOutput run = RunAll(model, {"ab", "cd", "ef"}, options);
  ASSERT_EQ(run.outcomes.size(), 3u);
  EXPECT_EQ(run.outcomes[1].result.end, RequestEnd::kFailed);
  EXPECT_NE(run.outcomes[1].result.error.find(
                "input 'tokens' of request 2 is not a contiguous host tensor, or differs in dtype "
                "or dimensions after the first from the other requests'"),
            std::string::npos)
      << run.outcomes[1].result.error;
  options.request_params.clear();
  test::RunOutput alone = RunAll(model, {"ab", "ef"}, options);
  for (size_t i : {0, 2}) {
    ASSERT_EQ(run.outcomes[i].result.end, RequestEnd::kDone) << run.outcomes[i].result.error;
    EXPECT_EQ(run.outcomes[i].values, alone.outcomes[i / 2].values) << "request " << i + 1;
  }
}

// A stage of a cohort's step, in the prefill's single step or in the decode loop, with steps
// finished on the executor or on the finisher thread.
class CohortFailure : public testing::TestWithParam<std::tuple<const char*, const char*, bool>> {};

TEST_P(CohortFailure, OneRequestFailsAloneInItsWalk) {
  const std::string stage = std::get<0>(GetParam());
  const std::string walk = std::get<1>(GetParam());
  const bool on_executor = std::get<2>(GetParam());
  ModelSpec clean = Model(ColumnarModel());
  ModelSpec failing = Model(
      ColumnarModel(), {"nodes.lm.config.fail_request=3", "nodes.lm.config.fail_stage=" + stage,
                        "nodes.lm.config.fail_walk=" + walk});
  std::vector<std::string> prompts = test::RandomPrompts(8, 4, 21);
  test::RunOutput expected = RunWith(clean, prompts, true, true, on_executor);
  test::RunOutput run = RunWith(failing, prompts, true, true, on_executor);
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i + 1));
    const test::Outcome& o = run.outcomes[i];
    if (i + 1 == 3) {
      EXPECT_EQ(o.result.end, RequestEnd::kFailed);
      EXPECT_NE(o.result.error.find("kit_columnar fails request 3 in " + stage + " on purpose"),
                std::string::npos)
          << o.result.error;
      EXPECT_NE(o.result.error.find("node 'lm' in walk '" + walk + "'"), std::string::npos)
          << o.result.error;
      continue;
    }
    ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
    EXPECT_EQ(o.values, expected.outcomes[i].values);
  }
  EXPECT_EQ(run.stats.requests_failed, 1u);
  EXPECT_GT(run.stats.cohort_batches, 0u);
}

INSTANTIATE_TEST_SUITE_P(Stages, CohortFailure,
                         testing::Combine(testing::Values("prepare", "forward", "stop"),
                                          testing::Values("prefill", "decode"), testing::Bool()));

}  // namespace
}  // namespace mstar

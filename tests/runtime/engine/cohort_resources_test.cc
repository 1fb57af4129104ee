// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Cohorts with resources (runtime/engine/cohort.h): declare, admit, plan and commit run over a
// columnar step's rows. Under memory pressure members leave their cohort for the per-request path
// and come back, a newcomer waits behind the request room is made for, and a row its resource
// fails or cannot serve fails alone; every other request gets what it gets unconstrained.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <random>
#include <thread>

#include "runtime/engine/cohort_models.h"
#include "runtime/engine/engine_harness.h"

namespace mstar {
namespace {

using test::ColumnarKvModel;
using test::ExpectOnlyTheThirdFails;
using test::ExpectSameOutcomes;
using test::Model;
using test::RunAll;
using test::RunWith;
using test::TwoResourceModel;

TEST(Cohort, ResourcesTakePartInTheColumnarStep) {
  // declare / admit / plan / commit over the rows: the positions each request saw are those of
  // the per-request path, and every batch is columnar.
  ModelSpec model = Model(ColumnarKvModel());
  std::vector<std::string> prompts = test::RandomPrompts(40, 6, 11);
  test::RunOutput cohorts = RunWith(model, prompts, true, true);
  test::RunOutput per_request = RunWith(model, prompts, false, true);
  for (const test::Outcome& o : cohorts.outcomes) {
    ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
    ASSERT_FALSE(o.values.at("positions").empty());
  }
  ExpectSameOutcomes(cohorts, per_request);
  EXPECT_EQ(cohorts.stats.cohort_batches, cohorts.stats.batches);
  EXPECT_EQ(cohorts.stats.cohort_handoffs, 0u);
}

// The most tokens one request of run held: its last position plus its last step's tokens (the
// prompt's width), over the requests.
uint64_t MostHeld(const test::RunOutput& run, const std::vector<std::string>& prompts) {
  uint64_t most = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::vector<int64_t>& positions = run.outcomes[i].values.at("positions");
    most = std::max(most, static_cast<uint64_t>(positions.back()) + prompts[i].size());
  }
  return most;
}

TEST(Cohort, MembersNotAdmittedContinueOnThePerRequestPath) {
  // A capacity that holds any one request but not all of them: members whose step cannot be
  // admitted leave their cohort for the per-request path (which evicts and reloads), and every
  // request still gets exactly what it gets unconstrained.
  std::vector<std::string> prompts = test::RandomPrompts(12, 6, 4);
  test::RunOutput clean = RunWith(Model(ColumnarKvModel()), prompts, true, true);
  const uint64_t capacity = MostHeld(clean, prompts);
  ModelSpec tight =
      Model(ColumnarKvModel(), {"resources.kv.config.capacity=" + std::to_string(capacity)});
  for (bool on_executor : {true, false}) {
    for (EvictionPolicy policy : {EvictionPolicy::kLru, EvictionPolicy::kPriority}) {
      SCOPED_TRACE(std::string(on_executor ? "finished on the executor" : "on the finisher") +
                   (policy == EvictionPolicy::kLru ? ", lru" : ", priority"));
      test::RunOptions options;
      options.together = true;
      options.session.pipeline.finish_on_executor = on_executor;
      options.session.conductor.eviction = policy;
      test::RunOutput run = RunAll(tight, prompts, options);
      for (size_t i = 0; i < prompts.size(); ++i) {
        ASSERT_EQ(run.outcomes[i].result.end, RequestEnd::kDone)
            << i << ": " << run.outcomes[i].result.error;
        EXPECT_EQ(run.outcomes[i].values, clean.outcomes[i].values) << "request " << i + 1;
      }
      EXPECT_GT(run.stats.cohort_handoffs, 0u);
      EXPECT_GT(run.stats.cohort_batches, 0u);
      EXPECT_GT(run.stats.evictions, 0u);
    }
  }
}

// Capacity 24, nothing evictable, each columnar step 2 ms. B ("A") holds one token more each
// step for 20 steps (the output limit); W's 24 never fit beside it, so W waits, per request,
// until B ends (its prefill alone then ends it at the limit). S, submitted once W was found short,
// would fit beside B; it waits behind W instead, outside its cohort, and joins the cohort once W
// has run (whether its prefill then runs in the cohort or, W's room not given back yet, is handed
// off to the per-request path depends on timing, so only the order is checked).
TEST(Cohort, ANewcomerOfACohortNodeWaitsBehindTheRequestRoomIsMadeFor) {
  const std::vector<std::string> overrides = {"model.max_output_tokens=20",
                                              "nodes.lm.config.forward_sleep_us=2000"};
  std::vector<std::string> tight = overrides;
  tight.insert(tight.end(),
               {"resources.kv.config.capacity=24", "resources.kv.config.evictable=false"});
  Result<std::unique_ptr<Session>> session =
      Session::Open(Model(ColumnarKvModel(), tight), test::TestRegistry(), SessionOptions{});
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  const std::vector<std::string> prompts = {"A", std::string(24, 'B'), "w"};
  std::mutex mutex;
  int firsts = 0;
  std::vector<int> first(prompts.size(), -1);
  std::vector<std::vector<int64_t>> tokens(prompts.size());
  std::vector<std::shared_ptr<RequestStream>> streams;
  auto submit = [&](size_t i) {
    auto stream = std::make_shared<RequestStream>(i + 1);
    stream->SetCallbacks(
        [&, i](const OutputChunk& chunk) {
          std::lock_guard<std::mutex> lock(mutex);
          if (first[i] < 0) first[i] = firsts++;
          if (chunk.name == "tokens")
            tokens[i].insert(tokens[i].end(), chunk.values.begin(), chunk.values.end());
        },
        nullptr);
    SubmitSpec spec;
    spec.prompt = prompts[i];
    spec.id = i + 1;
    spec.stream = stream;
    ASSERT_TRUE((*session)->Submit(std::move(spec)).ok());
    streams.push_back(stream);
  };
  submit(0);
  submit(1);
  for (int tries = 0; tries < 100000 && (*session)->stats().capacity_waits == 0; ++tries)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  ASSERT_GT((*session)->stats().capacity_waits, 0u);  // W waits
  submit(2);
  for (const auto& stream : streams) {
    const RequestResult result = stream->Wait();
    EXPECT_EQ(result.end, RequestEnd::kDone) << result.error;
  }
  const ConductorStats stats = (*session)->stats();
  (*session)->Close();
  EXPECT_EQ(first, (std::vector<int>{0, 1, 2}));  // W's first output before S's
  EXPECT_EQ(stats.evictions, 0u);
  test::RunOutput clean = RunAll(Model(ColumnarKvModel(), overrides), prompts);
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(tokens[i], clean.outcomes[i].values["tokens"]) << "request " << i + 1;
}

TEST(Cohort, RandomWorkloadsUnderMemoryPressureGiveTheUnconstrainedOutputs) {
  // Random prompts, capacities from "any one request fits" upward, batch caps, both eviction
  // policies and both finishing threads: members leave their cohorts at random points, and every
  // request still gets exactly what it gets with room for all.
  uint64_t handoffs = 0, evictions = 0;
  for (unsigned seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 random(seed);
    std::vector<std::string> prompts =
        test::RandomPrompts(10 + static_cast<int>(random() % 10), 6, seed);
    test::RunOutput clean = RunWith(Model(ColumnarKvModel()), prompts, true, true);
    const uint64_t capacity = MostHeld(clean, prompts) + random() % 24;
    test::RunOptions options;
    options.together = true;
    options.session.pipeline.finish_on_executor = random() % 2 == 0;
    options.session.conductor.eviction =
        random() % 2 == 0 ? EvictionPolicy::kLru : EvictionPolicy::kPriority;
    options.session.conductor.max_batch = random() % 2 == 0 ? 0u : 3 + random() % 6;
    test::RunOutput run = RunAll(
        Model(ColumnarKvModel(), {"resources.kv.config.capacity=" + std::to_string(capacity)}),
        prompts, options);
    for (size_t i = 0; i < prompts.size(); ++i) {
      ASSERT_EQ(run.outcomes[i].result.end, RequestEnd::kDone)
          << i << ": " << run.outcomes[i].result.error;
      EXPECT_EQ(run.outcomes[i].values, clean.outcomes[i].values) << "request " << i + 1;
    }
    handoffs += run.stats.cohort_handoffs;
    evictions += run.stats.evictions;
  }
  EXPECT_GT(handoffs, 0u);
  EXPECT_GT(evictions, 0u);
}

TEST(Cohort, AFailedForwardGivesBackWhatItsRowsWereAdmittedFor) {
  // Request 3's forward fails at every step of its decode loop: the whole columnar step is
  // aborted (what kit_counter reserved for every row is given back) and retried one row at a
  // time, each admitted again alone. kit_counter refuses the retry's declare if the failed step
  // was not aborted, which fails a request that should be done. The other requests' positions
  // show that nothing was counted twice or lost.
  std::vector<std::string> prompts = test::RandomPrompts(8, 4, 21);
  test::RunOutput clean = RunWith(Model(ColumnarKvModel()), prompts, true, true);
  for (bool on_executor : {true, false}) {
    SCOPED_TRACE(on_executor ? "finished on the executor" : "on the finisher");
    test::RunOutput run = RunWith(Model(ColumnarKvModel(), {"nodes.lm.config.fail_request=3",
                                                            "nodes.lm.config.fail_walk=decode"}),
                                  prompts, true, true, on_executor);
    ExpectOnlyTheThirdFails(run, clean, "kit_columnar fails request 3 in forward on purpose");
  }
}

TEST(Cohort, ARowItsResourceCannotServeFailsAlone) {
  ModelSpec model = Model(ColumnarKvModel(), {"resources.kv.config.fail_request=3"});
  std::vector<std::string> prompts = test::RandomPrompts(8, 4, 21);
  test::RunOutput clean = RunWith(Model(ColumnarKvModel()), prompts, true, true);
  test::RunOutput run = RunWith(model, prompts, true, true);
  ExpectOnlyTheThirdFails(run, clean,
                          "unservable: kit/kv: admit: kit_counter cannot serve request 3");
}

// A declare or plan of the columnar step failing for a step holding request 3 fails the whole
// step; it runs again one row at a time and only request 3 fails.
TEST(Cohort, ADeclareOrPlanFailingForOneRowFailsOnlyIt) {
  std::vector<std::string> prompts = test::RandomPrompts(8, 4, 21);
  test::RunOutput clean = RunWith(Model(ColumnarKvModel()), prompts, true, true);
  for (const char* hook : {"declare", "plan"}) {
    SCOPED_TRACE(hook);
    test::RunOutput run = RunWith(
        Model(ColumnarKvModel(), {std::string("resources.kv.config.fail_") + hook + "_request=3"}),
        prompts, true, true);
    ExpectOnlyTheThirdFails(
        run, clean, std::string("kit_counter fails the ") + hook + " of a step holding request 3");
  }
}

// In a decode step, kv cannot serve one request and kv2's declare fails for any step holding it:
// that request fails with kv's reason (kept, not replaced by the declare's), alone and among
// others, and the others are done, as on the per-request path.
TEST(Cohort, ARowLeftOutBeforeADeclareFailedKeepsItsOutcome) {
  const std::string model = TwoResourceModel("fail_after_tokens = 1");
  // The failing request alone (a cohort of one row), and among others.
  const std::pair<std::vector<std::string>, int> cases[] = {
      {{"ab"}, 1}, {{"a", "bc"}, 2}, {{"ab", "cd", "ef"}, 2}};
  for (const auto& [prompts, failing] : cases) {
    SCOPED_TRACE(std::to_string(prompts.size()) + " requests");
    const std::string id = std::to_string(failing);
    const std::vector<std::string> faults = {"resources.kv.config.fail_request=" + id,
                                             "resources.kv.config.fail_after_tokens=1",
                                             "resources.kv2.config.fail_declare_request=" + id};
    test::RunOutput cohort = RunWith(Model(model, faults), prompts, true, /*together=*/true);
    test::RunOutput per_request = RunWith(Model(model, faults), prompts, false, /*together=*/true);
    ExpectSameOutcomes(cohort, per_request);
    const test::Outcome& o = cohort.outcomes[failing - 1];
    EXPECT_EQ(o.result.end, RequestEnd::kFailed);
    EXPECT_NE(
        o.result.error.find("unservable: kit/kv: admit: kit_counter cannot serve request " + id),
        std::string::npos)
        << o.result.error;
    EXPECT_GT(cohort.stats.cohort_batches, 0u);
  }
}

}  // namespace
}  // namespace mstar

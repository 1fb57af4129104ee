// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Failure isolation and memory pressure through a real Session: a request that fails at any stage
// fails alone with a message naming the stage; an unservable admission fails the request;
// eviction, offload and reload leave outputs identical to an unconstrained run; requests that can
// never be admitted fail instead of waiting forever. Raw-ABI plugins (tests/plugins/
// faulty_plugin.cc) that break the ABI at run time: a hook that cannot fail and throws anyway is
// logged and ignored; a strided forward output fails its request.
#include <gtest/gtest.h>

#include "runtime/engine/engine_harness.h"

namespace mstar {
namespace {

using test::Model;
using test::RunAll;

const std::string& kKit = test::kKitModel;

std::vector<std::string> Prompts() {
  return {"AB", "C", "DEF", "G", "HI", "JKL"};
}

TEST(EngineFailures, CleanRunIsDeterministic) {
  test::RunOutput run = RunAll(Model(kKit), Prompts());
  for (size_t i = 0; i < run.outcomes.size(); ++i) {
    const test::Outcome& o = run.outcomes[i];
    ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
    // The last token of the prompt grows by one per step until it reaches 90.
    int64_t last = Prompts()[i].back();
    EXPECT_EQ(o.values.at("tokens").back(), 90 + 0 * last) << i;
    // Positions count the tokens held before each step: 0, n, 2n, ...
    const std::vector<int64_t>& positions = o.values.at("positions");
    int64_t n = static_cast<int64_t>(Prompts()[i].size());
    for (size_t k = 0; k < positions.size(); ++k)
      ASSERT_EQ(positions[k], static_cast<int64_t>(k) * n) << i << " " << k;
  }
}

TEST(EngineFailures, EachStageFailsOnlyItsRequest) {
  test::RunOutput clean = RunAll(Model(kKit), Prompts());
  for (const char* stage : {"prepare", "forward", "postprocess", "stop"}) {
    test::RunOutput run = RunAll(Model(kKit, {"nodes.lm.config.fail_request=3",
                                              std::string("nodes.lm.config.fail_stage=") + stage}),
                                 Prompts());
    for (size_t i = 0; i < run.outcomes.size(); ++i) {
      const test::Outcome& o = run.outcomes[i];
      if (i + 1 == 3) {
        ASSERT_EQ(o.result.end, RequestEnd::kFailed) << stage;
        EXPECT_NE(o.result.error.find(std::string("fails request 3 in ") + stage + " on purpose"),
                  std::string::npos)
            << stage << ": " << o.result.error;
        EXPECT_NE(o.result.error.find("node 'lm'"), std::string::npos) << o.result.error;
      } else {
        ASSERT_EQ(o.result.end, RequestEnd::kDone)
            << stage << " request " << i + 1 << ": " << o.result.error;
        EXPECT_EQ(o.values, clean.outcomes[i].values) << stage << " request " << i + 1;
      }
    }
  }
}

TEST(EngineFailures, FailingBatchedForwardIsRetriedPerRequest) {
  test::LogCapture log;
  test::RunOptions together;
  together.together = true;  // so the first step batches all six
  test::RunOutput run =
      RunAll(Model(kKit, {"nodes.lm.config.fail_request=2"}), Prompts(), together);
  EXPECT_TRUE(log.Contains("retrying one request at a time"));
  EXPECT_EQ(run.outcomes[1].result.end, RequestEnd::kFailed);
  for (size_t i : {0u, 2u, 3u, 4u, 5u})
    EXPECT_EQ(run.outcomes[i].result.end, RequestEnd::kDone) << i;
}

TEST(EngineFailures, ADeclinedStepProducesNothingAndTheWalkGoesOn) {
  const char* manifest = R"(
format = 1
[model]
name = "decline"
[nodes.a]
plugin = "kit_add"
[nodes.b]
plugin = "kit_add"
[nodes.b.config]
decline_request = 1
[partitions.main]
initial = "w"
[walks.w]
partition = "main"
run = { sequence = ["a", "b"] }
inputs = { "a.tokens" = "request.prompt", "b.tokens" = "request.prompt" }
edges = [{ from = "a.tokens", emit = "a" }, { from = "b.tokens", emit = "b" }]
)";
  test::RunOutput run = RunAll(Model(manifest), {"\x01", "\x02"});
  ASSERT_EQ(run.outcomes[0].result.end, RequestEnd::kDone) << run.outcomes[0].result.error;
  EXPECT_EQ(run.outcomes[0].values.at("a"), std::vector<int64_t>{2});
  EXPECT_EQ(run.outcomes[0].values.count("b"), 0u);  // declined
  EXPECT_EQ(run.outcomes[1].values.at("b"), std::vector<int64_t>{3});
}

TEST(EngineFailures, AWalkThatCanNeverContinueFailsItsRequest) {
  // A declined loop step leaves the loop-back input empty: nothing can ever feed it again.
  const char* manifest = R"(
format = 1
[model]
name = "stuck"
[nodes.x]
plugin = "kit_add"
[nodes.x.config]
decline_request = 2
[partitions.main]
initial = "w"
[walks.w]
partition = "main"
run = { loop = "gen", max_iterations = 3, body = "x" }
inputs = { "x.tokens" = "request.prompt" }
edges = [{ from = "x.tokens", to = "x.tokens" }, { from = "x.tokens", emit = "x" }]
)";
  test::RunOutput run = RunAll(Model(manifest), {"\x01", "\x01"});
  ASSERT_EQ(run.outcomes[0].result.end, RequestEnd::kDone) << run.outcomes[0].result.error;
  EXPECT_EQ(run.outcomes[0].values.at("x"), (std::vector<int64_t>{2, 3, 4}));
  ASSERT_EQ(run.outcomes[1].result.end, RequestEnd::kFailed);
  EXPECT_NE(run.outcomes[1].result.error.find(
                "walk 'w' cannot continue: node 'x' waits for input 'tokens'"),
            std::string::npos)
      << run.outcomes[1].result.error;
}

// Request 4 of Prompts() failed with an error holding `message`; every other one is done.
void ExpectOnlyTheFourthFails(const test::RunOutput& run, const std::string& message) {
  ASSERT_EQ(run.outcomes[3].result.end, RequestEnd::kFailed);
  EXPECT_NE(run.outcomes[3].result.error.find(message), std::string::npos)
      << run.outcomes[3].result.error;
  for (size_t i : {0u, 1u, 2u, 4u, 5u})
    EXPECT_EQ(run.outcomes[i].result.end, RequestEnd::kDone) << i;
}

TEST(EngineFailures, UnservableAdmissionFailsTheRequest) {
  test::RunOutput run = RunAll(Model(kKit, {"resources.kv.config.fail_request=4"}), Prompts());
  ExpectOnlyTheFourthFails(run, "unservable: kit/kv: admit: kit_counter cannot serve request 4");
}

// A resource whose declare or plan fails for a step holding request 4 fails the whole batched
// step; it runs again one request at a time, and only request 4 fails, with the outputs of the
// others unchanged (kit_counter refuses a declare while an earlier step is still open, so a step
// the engine forgot to abort would fail another request).
TEST(EngineFailures, ADeclareOrPlanFailingForOneRequestFailsOnlyIt) {
  test::RunOptions together;
  together.together = true;  // so the first step batches all six
  test::RunOutput clean = RunAll(Model(kKit), Prompts(), together);
  for (const char* hook : {"declare", "plan"}) {
    SCOPED_TRACE(hook);
    test::LogCapture log;
    test::RunOutput run =
        RunAll(Model(kKit, {std::string("resources.kv.config.fail_") + hook + "_request=4"}),
               Prompts(), together);
    EXPECT_TRUE(log.Contains("retrying one request at a time"));
    ExpectOnlyTheFourthFails(
        run, std::string("kit_counter fails the ") + hook + " of a step holding request 4");
    for (size_t i : {0u, 1u, 2u, 4u, 5u})
      EXPECT_EQ(run.outcomes[i].values, clean.outcomes[i].values) << i;
  }
}

// An admission outcome that is neither READY nor NOT_READY is the resource's fault: the request
// fails at once naming the value, instead of waiting as if not ready.
TEST(EngineFailures, AnAdmissionOutcomeOfNoKnownValueFailsTheRequestNamingIt) {
  test::RunOutput run =
      RunAll(Model(kKit, {"resources.kv.config.bad_outcome_request=4"}), Prompts());
  ExpectOnlyTheFourthFails(
      run,
      "resource 'kv' (kit/kv): admit answered outcome 57005, which is neither READY nor "
      "NOT_READY");
}

// A request a resource never admits, for a reason other than capacity, fails once nothing else
// runs, with that reason: evicting others would not help it.
TEST(EngineFailures, ARequestNeverReadyForAnotherReasonFailsSayingSo) {
  test::RunOutput run = RunAll(Model(kKit, {"resources.kv.config.wait_request=4"}), Prompts());
  ExpectOnlyTheFourthFails(
      run,
      "cannot be admitted at node 'lm': resource 'kv' keeps answering not ready (a "
      "reason other than capacity) while nothing else runs");
}

// A batch counts when one of its requests reached the forward: one refused at admission did not.
TEST(EngineFailures, ABatchWhoseRequestsNeverReachTheForwardIsNotCounted) {
  test::RunOutput run = RunAll(Model(kKit, {"resources.kv.config.fail_request=1"}), {"G"});
  ASSERT_EQ(run.outcomes[0].result.end, RequestEnd::kFailed);
  auto lm = run.stats.nodes.find("lm");
  const uint64_t batches = lm == run.stats.nodes.end() ? 0 : lm->second.batches;
  EXPECT_EQ(batches, 0u);  // what `mstar run` reports as the node's steps
}

TEST(EngineFailures, EvictionKeepsOutputsIdentical) {
  // The requests hold 238 tokens in all at the end and at most 63 each; a capacity of 100 fits any
  // one but not all six:
  // requests are offloaded and reloaded, and every output matches the unconstrained run.
  test::RunOutput clean = RunAll(Model(kKit), Prompts());
  for (const char* policy : {"lru", "priority"}) {
    test::RunOptions options;
    options.together = true;  // one by one, early requests could finish before late ones arrive
    options.session.conductor.eviction =
        std::string(policy) == "lru" ? EvictionPolicy::kLru : EvictionPolicy::kPriority;
    test::RunOutput tight =
        RunAll(Model(kKit, {"resources.kv.config.capacity=100"}), Prompts(), options);
    for (size_t i = 0; i < tight.outcomes.size(); ++i) {
      ASSERT_EQ(tight.outcomes[i].result.end, RequestEnd::kDone)
          << policy << " " << i << ": " << tight.outcomes[i].result.error;
      EXPECT_EQ(tight.outcomes[i].values, clean.outcomes[i].values)
          << policy << " request " << i + 1;
    }
    EXPECT_GT(tight.stats.evictions, 0u) << policy;
  }
}

TEST(EngineFailures, CapacityGoesToTheHigherPriorityAndOnlyLowerOnesAreEvictedForIt) {
  // Two requests hold 4 tokens each of a capacity of 10 and each needs 4 more: the step of both
  // is short. The newer one has the higher priority, so it gets the room: the older one is
  // offloaded for it, never the other way round (kit_counter refuses to offload request 2, which
  // would leave both waiting and fail one).
  test::RunOptions options;
  options.together = true;
  options.priorities = {0, 10};
  test::RunOutput run =
      RunAll(Model(kKit, {"resources.kv.config.capacity=10", "resources.kv.config.refuse_offload=2",
                          "model.max_output_tokens=8"}),
             {"ABCD", "EFGH"}, options);
  test::RunOutput clean = RunAll(Model(kKit, {"model.max_output_tokens=8"}), {"ABCD", "EFGH"});
  ASSERT_EQ(run.outcomes.size(), 2u);
  for (size_t i = 0; i < run.outcomes.size(); ++i) {
    ASSERT_EQ(run.outcomes[i].result.end, RequestEnd::kDone)
        << i << ": " << run.outcomes[i].result.error;
    EXPECT_EQ(run.outcomes[i].values, clean.outcomes[i].values) << i;
  }
  EXPECT_GT(run.stats.evictions, 0u);
}

// Of two requests, one finished and the other failed for want of room at node 'lm'.
void ExpectOneDoneAndOneNeverAdmitted(const test::RunOutput& run) {
  ASSERT_EQ(run.outcomes.size(), 2u);
  int done = 0;
  for (const test::Outcome& o : run.outcomes) {
    if (o.result.end == RequestEnd::kDone) {
      ++done;
      continue;
    }
    ASSERT_EQ(o.result.end, RequestEnd::kFailed);
    EXPECT_NE(o.result.error.find("cannot be admitted at node 'lm'"), std::string::npos)
        << o.result.error;
  }
  EXPECT_EQ(done, 1);
}

TEST(EngineFailures, RequestsThatCanNeverBeAdmittedFailInsteadOfWaiting) {
  // Two requests hold 4 tokens each of a capacity of 10 and each needs 4 more; nothing can be
  // evicted, so neither could ever run again. One fails (the newer one among those waiting), which
  // frees its 4 tokens, and the other finishes (its prompt echoed, then one decode step of 4 more).
  // Submitted at once, so both hold their prompts before either decodes.
  test::RunOptions options;
  options.together = true;
  test::RunOutput run =
      RunAll(Model(kKit, {"resources.kv.config.capacity=10", "resources.kv.config.evictable=false",
                          "model.max_output_tokens=8"}),
             {"ABCD", "EFGH"}, options);
  ExpectOneDoneAndOneNeverAdmitted(run);
}

// Eviction frees room in the resource that was short, not elsewhere: the node's "pool" (not
// evictable) is full while its "kv" (evictable) has room to spare. Offloading kv would free
// nothing the waiters need, so nothing is evicted, and once idle one request fails instead.
TEST(EngineFailures, EvictionOffloadsOnlyFromTheResourceThatWasShort) {
  const std::string manifest = "format = 1\n[model]\nname = \"kit_pool\"\n" +
                               test::KitLmNode(", \"pool\"") +
                               "[resources.pool]\nplugin = \"kit_counter\"\n"
                               "[resources.pool.config]\ncapacity = 10\nevictable = false\n" +
                               test::LmWalks();
  test::RunOptions options;
  options.together = true;
  test::RunOutput run =
      RunAll(Model(manifest, {"model.max_output_tokens=8"}), {"ABCD", "EFGH"}, options);
  ExpectOneDoneAndOneNeverAdmitted(run);
  EXPECT_EQ(run.stats.evictions, 0u);
}

TEST(EngineFailures, AVictimWaitingForItsBeneficiaryIsNotFailedBeforeTheRequestsHoldingRoom) {
  // Capacity 10: R holds 4 (and refuses to be offloaded), V 2, P 4; each decode step needs as
  // many tokens again. P has the higher priority: V is offloaded for it, which frees too little,
  // and nothing else can be. Once idle, one waiter must fail: R (it holds the room P needs), not
  // V, which holds nothing any more and only waits for P. Then P runs, V comes back and runs.
  test::RunOptions options;
  options.together = true;
  options.priorities = {0, 0, 10};
  test::RunOutput run =
      RunAll(Model(kKit, {"resources.kv.config.capacity=10", "resources.kv.config.refuse_offload=1",
                          "model.max_output_tokens=8"}),
             {"ABCD", "EF", "IJKL"}, options);
  test::RunOutput clean =
      RunAll(Model(kKit, {"model.max_output_tokens=8"}), {"ABCD", "EF", "IJKL"});
  ASSERT_EQ(run.outcomes.size(), 3u);
  EXPECT_EQ(run.outcomes[0].result.end, RequestEnd::kFailed);
  for (size_t i : {1, 2}) {
    ASSERT_EQ(run.outcomes[i].result.end, RequestEnd::kDone)
        << i << ": " << run.outcomes[i].result.error;
    EXPECT_EQ(run.outcomes[i].values, clean.outcomes[i].values) << i;
  }
  EXPECT_GT(run.stats.evictions, 0u);
}

TEST(EngineFailures, ANewcomerWaitsBehindTheRequestRoomIsMadeFor) {
  // Capacity 12, nothing evictable, two requests per step; a step holds as many tokens again as
  // its prompt has, and the output limit of 10 tokens ends B after one decode step and W after
  // its prefill. B and W prefill together: B holds 5 tokens (then 10), W's 10 never fit beside
  // them, so W waits until B ends. S (of a lower priority, so it prefills after them) fits beside
  // B, but it came after W was found short: it waits behind W, or a steady flow of such
  // newcomers would keep W waiting forever.
  test::RunOptions options;
  options.together = true;
  options.session.conductor.max_batch = 2;
  options.priorities = {0, 0, -1};
  const std::vector<std::string> prompts = {"ABCDE", "ABCDEFGHIJ", "AB"};
  test::RunOutput run =
      RunAll(Model(kKit, {"resources.kv.config.capacity=12", "resources.kv.config.evictable=false",
                          "model.max_output_tokens=10"}),
             prompts, options);
  test::RunOutput clean = RunAll(Model(kKit, {"model.max_output_tokens=10"}), prompts);
  ASSERT_EQ(run.outcomes.size(), 3u);
  for (size_t i = 0; i < run.outcomes.size(); ++i) {
    ASSERT_EQ(run.outcomes[i].result.end, RequestEnd::kDone)
        << i << ": " << run.outcomes[i].result.error;
    EXPECT_EQ(run.outcomes[i].values, clean.outcomes[i].values) << i;
  }
  EXPECT_EQ(run.outcomes[0].first_chunk, 0);
  EXPECT_EQ(run.outcomes[1].first_chunk, 1);  // W before S
  EXPECT_EQ(run.outcomes[2].first_chunk, 2);
  EXPECT_GT(run.stats.capacity_waits, 0u);
  EXPECT_EQ(run.stats.evictions, 0u);
}

TEST(EngineFailures, MissingOutputFailsTheRequestNamingTheEdge) {
  test::RunOutput run =
      RunAll(Model(kKit, {"walks.prefill.edges=[{ from = \"lm.tokens\", persist = \"last\" }, { "
                          "from = \"lm.nothing\", emit = \"x\" }]"}),
             {"A"});
  ASSERT_EQ(run.outcomes[0].result.end, RequestEnd::kFailed);
  EXPECT_NE(run.outcomes[0].result.error.find("produced no output 'nothing'"), std::string::npos)
      << run.outcomes[0].result.error;
}

// An output a node edge needs (here the decode loop's feedback) fails the step like a failed
// forward: the request fails naming the node, walk and edge.
TEST(EngineFailures, AMissingOutputForANodeEdgeFailsTheStepNamingTheEdge) {
  test::RunOutput run = RunAll(
      Model(kKit, {"walks.decode.edges=[{ from = \"lm.nothing\", to = \"lm.tokens\" }]"}), {"A"});
  ASSERT_EQ(run.outcomes[0].result.end, RequestEnd::kFailed);
  EXPECT_NE(run.outcomes[0].result.error.find(
                "node 'lm' in walk 'decode': produced no output 'nothing' for the edge at"),
            std::string::npos)
      << run.outcomes[0].result.error;
}

const PluginRegistry& FaultyRegistry() {
  static const PluginRegistry registry = test::LoadOnly(
      {test::TestPluginDir("fault_cleanup_throws"), test::TestPluginDir("fault_expanded_output")});
  return registry;
}

// cleanup_request cannot fail; a plugin built without the SDK's barrier that throws from it is
// logged once, naming the plugin and the hook, and every request still completes.
TEST(EngineFailures, AVoidHookThatThrowsIsLoggedOnceAndRequestsComplete) {
  test::LogCapture log;
  test::RunOptions options;
  options.registry = &FaultyRegistry();
  test::RunOutput run = RunAll(test::OneNodeModel("cleanup_throws_thing", FaultyRegistry()),
                               {"AB", "C", "D"}, options);
  for (const test::Outcome& o : run.outcomes)
    EXPECT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
  const std::string logged =
      "[fault_cleanup_throws/n] cleanup_request threw an exception through the ABI: deliberate "
      "exception from cleanup_request; ignored (the hook cannot fail";
  size_t count = 0;
  for (const std::string& line : log.Lines()) count += line.find(logged) != std::string::npos;
  EXPECT_EQ(count, 1u) << "logged once, not per request";
}

// An expanded output (stride 0) would be copied as numel * 8 contiguous bytes, reading past its
// one element: the host refuses it, and the request fails saying the tensor must be contiguous.
TEST(EngineFailures, AnExpandedForwardOutputFailsItsRequestAsNotContiguous) {
  test::RunOptions options;
  options.registry = &FaultyRegistry();
  test::RunOutput run =
      RunAll(test::OneNodeModel("expanded_output_thing", FaultyRegistry()), {"AB"}, options);
  const test::Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.result.end, RequestEnd::kFailed);
  EXPECT_NE(o.result.error.find("tensor 'tokens': strides {0} are not the contiguous row-major "
                                "strides of shape {4}"),
            std::string::npos)
      << o.result.error;
  EXPECT_NE(o.result.error.find("call .contiguous() first"), std::string::npos) << o.result.error;
}

}  // namespace
}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Whole models through a real Session: walks, loops and their stops, parallel branches, streams
// and chunk policies, batching across requests, output limits, cancellation, many requests.
// Models with a controller are in conductor_controller_test.cc.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "config/toml_reader.h"
#include "host/memory_ledger.h"

#include "runtime/engine/engine_harness.h"

namespace mstar {
namespace {

using test::Model;
using test::RunAll;
using test::ShippedModel;

std::vector<int64_t> Bytes(const std::string& text) {
  return std::vector<int64_t>(text.begin(), text.end());
}

TEST(Conductor, EchoEchoesThePromptAndStreamsSlidingChunks) {
  test::RunOutput run = RunAll(ShippedModel("echo"), {"hello"});
  const test::Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
  EXPECT_EQ(o.text, "hello");
  EXPECT_EQ(o.result.tokens, 5u);
  // window 4, stride 2 over "hello": [h e l l], then the final [l l o] once the producer is done.
  ASSERT_EQ(o.chunks.at("chunks").size(), 2u);
  EXPECT_EQ(o.chunks.at("chunks")[0], Bytes("hell"));
  EXPECT_EQ(o.chunks.at("chunks")[1], Bytes("llo"));
  EXPECT_LE(o.result.wasted_steps, 1u);  // a stop costs at most the one step after it
}

// A consumer partition done after its first chunk (no transition back) ends while the producer
// runs on: the producer's text is whole, the consumer emitted what it took, and the request ends.
TEST(Conductor, AConsumerDoneEarlyLeavesTheProducerToFinish) {
  ModelSpec model = ShippedModel("echo");
  model.partitions.at("chunks").transitions.clear();
  test::RunOutput run = RunAll(model, {"a longer prompt than one window"});
  const test::Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
  EXPECT_EQ(o.text, "a longer prompt than one window");
  ASSERT_EQ(o.chunks.at("chunks").size(), 1u);
  EXPECT_EQ(o.chunks.at("chunks")[0], Bytes("a lo"));
}

TEST(Conductor, FixedChunkPolicy) {
  ModelSpec model = ShippedModel("echo");
  model.streams.at("tokens").policy = {ChunkPolicySpec::Kind::kFixed, 3, 3};
  test::RunOutput run = RunAll(model, {"abcdefgh"});
  const test::Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
  std::vector<std::vector<int64_t>> expected = {Bytes("abc"), Bytes("def"), Bytes("gh")};
  EXPECT_EQ(o.chunks.at("chunks"), expected);
}

TEST(Conductor, RequestsBatchTogether) {
  std::vector<std::string> prompts(16, "continuous batching");
  // Submitted at once: one at a time, each may run to its end before the next arrives.
  test::RunOptions options;
  options.together = true;
  test::RunOutput run = RunAll(ShippedModel("echo"), prompts, options);
  for (const test::Outcome& o : run.outcomes) {
    ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
    EXPECT_EQ(o.text, "continuous batching");
  }
  double mean_batch = static_cast<double>(run.stats.steps) / static_cast<double>(run.stats.batches);
  EXPECT_GT(mean_batch, 4.0) << "16 requests at the same walk should share steps";
}

TEST(Conductor, BatchesRespectTheNodeCap) {
  std::vector<std::string> prompts(10, "capped");
  test::RunOptions options;
  options.together = true;  // all submitted before the first step, so a batch can reach the cap
  test::RunOutput run =
      RunAll(ShippedModel("echo", {"nodes.echo.config.max_batch=3"}), prompts, options);
  for (const test::Outcome& o : run.outcomes) EXPECT_EQ(o.text, "capped");
  EXPECT_EQ(run.stats.largest_batch.at("echo"), 3u);  // reached, never exceeded
}

TEST(Conductor, ThousandConcurrentRequestsWithRandomLengths) {
  std::vector<std::string> prompts = test::RandomPrompts(1000, 40, 7);
  test::RunOutput run = RunAll(ShippedModel("echo"), prompts);
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(run.outcomes[i].result.end, RequestEnd::kDone)
        << i << ": " << run.outcomes[i].result.error;
    ASSERT_EQ(run.outcomes[i].text, prompts[i]) << i;
  }
  EXPECT_EQ(run.stats.requests_done, 1000u);
}

TEST(Conductor, OutputTokenLimitCutsTheOutput) {
  test::RunOptions options;
  options.params = {"max_tokens = 3"};
  test::RunOutput run = RunAll(ShippedModel("echo"), {"truncate me"}, options);
  const test::Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
  EXPECT_EQ(o.text, "tru");
  EXPECT_EQ(o.result.tokens, 3u);
}

// Transitions that lead back into the partition's walks (which the validator refuses, and which a
// model controller's next_walk can still make) end the request: with an error once its walks stop
// emitting output tokens (echo emits only its end token after the prompt), at the output limit
// while they emit.
TEST(Conductor, AWalkCycleEndsTheRequest) {
  test::RunOptions options;
  options.params = {"max_tokens = 5"};
  for (const char* back : {"prefill", "decode"}) {
    ModelSpec model = ShippedModel("echo");
    model.partitions.at("main").transitions["decode"] = back;
    test::RunOutput run = RunAll(model, {"hi"}, options);
    const test::Outcome& o = run.outcomes[0];
    ASSERT_EQ(o.result.end, RequestEnd::kFailed) << back;
    EXPECT_EQ(o.text, "hi");
    const std::string cycle =
        std::string(back) == "prefill" ? "prefill -> decode -> prefill" : "decode -> decode";
    EXPECT_EQ(o.result.error,
              "partition 'main' ran 1024 walks in a row without emitting an output "
              "token (" +
                  cycle +
                  "); its transitions, or the model controller's next_walk, "
                  "never end it");
  }
  ModelSpec model = ShippedModel("echo", {"nodes.echo.config.repeat=1000000",
                                          "walks.decode.run.max_iterations_param=loop_limit"});
  model.partitions.at("main").transitions["decode"] = "prefill";
  options.params = {"max_tokens = 40", "loop_limit = 3"};  // 20 walks of 1 and 3 tokens
  options.session.conductor.max_idle_walks = 2;            // every walk emits, so none is idle
  test::RunOutput run = RunAll(model, {"ab"}, options);
  ASSERT_EQ(run.outcomes[0].result.end, RequestEnd::kDone) << run.outcomes[0].result.error;
  EXPECT_EQ(run.outcomes[0].result.tokens, 40u);
}

TEST(Conductor, LoopLimitFromARequestParameter) {
  // The decode loop's max_iterations_param names loop_limit, a parameter nothing else reads; the
  // echo repeats forever (repeat is huge) and the loop's own max_iterations and the output cap
  // (max_tokens) are far above it, so only the parameter ends the loop: 1 prefill token + 5
  // decode tokens.
  test::RunOptions options;
  options.params = {"loop_limit = 5", "max_tokens = 200"};
  ModelSpec model = ShippedModel(
      "echo", {"nodes.echo.config.repeat=1000000", "walks.decode.run.max_iterations=100",
               "walks.decode.run.max_iterations_param=loop_limit"});
  test::RunOutput run = RunAll(model, {"ab"}, options);
  const test::Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
  EXPECT_EQ(o.result.tokens, 6u);
  EXPECT_EQ(o.text, "ababab");
}

// max_iterations_param = "" names no parameter: a request's parameter whose key is "" (the empty
// TOML key) neither shortens the loop nor lifts its limit.
TEST(Conductor, ALoopWithoutALimitParameterIgnoresAParameterNamedEmpty) {
  ModelSpec model =
      ShippedModel("echo", {"nodes.echo.config.repeat=1000000", "walks.decode.run.max_iterations=3",
                            "walks.decode.run.max_iterations_param=\"\""});
  for (const char* param : {"\"\" = 1", "\"\" = 10"}) {
    test::RunOptions options;
    options.params = {param, "max_tokens = 200"};
    test::RunOutput run = RunAll(model, {"ab"}, options);
    const test::Outcome& o = run.outcomes[0];
    ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
    EXPECT_EQ(o.result.tokens, 4u) << param;  // 1 prefill token + 3 decode tokens
  }
}

// The output limit reached by a node before a loop of the same walk ends the partition there:
// the loop does not run its thousand iterations with nothing to send.
TEST(Conductor, TheOutputLimitReachedBeforeALoopOfTheSameWalkEndsIt) {
  ModelSpec model = Model(R"(
format = 1
[model]
name = "one-walk"
[nodes.first]
plugin = "echo"
[nodes.rest]
plugin = "echo"
[nodes.rest.config]
repeat = 1000000
[partitions.main]
initial = "all"
[walks.all]
partition = "main"
run = { sequence = ["first", { loop = "generate", max_iterations = 1000, body = "rest" }] }
inputs = { "first.tokens" = "request.prompt", "rest.tokens" = "request.prompt" }
edges = [
  { from = "rest.token", to = "rest.tokens" },
  { from = "first.text", emit = "text", modality = "text", counts_tokens = true },
  { from = "rest.text", emit = "text", modality = "text", counts_tokens = true },
]
)");
  for (int64_t max_tokens : {1, 3}) {
    test::RunOptions options;
    options.params = {"max_tokens = " + std::to_string(max_tokens)};
    test::RunOutput run = RunAll(model, {"abc"}, options);
    const test::Outcome& o = run.outcomes[0];
    ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
    EXPECT_EQ(o.result.tokens, static_cast<uint64_t>(max_tokens));
    // "first" once, and "rest" until the limit (a step may run ahead of the stop).
    EXPECT_LE(o.result.steps, static_cast<uint64_t>(max_tokens) + 2) << "max_tokens " << max_tokens;
  }
}

// Parameters that bound a request are checked at submission against the manifest's own bounds:
// a value past them (here one that would wrap to 0 as a 32-bit loop limit) or below them (0 for
// max_tokens, which must allow one token; below 0 for a loop limit), or a value that is no integer,
// fails the request with the parameter's name, not cutting it short or lifting its limit without a
// word.
TEST(Conductor, LimitParametersOutsideTheirRangeFailTheRequest) {
  ModelSpec model = ShippedModel(
      "echo", {"nodes.echo.config.repeat=1000000", "walks.decode.run.max_iterations=100",
               "walks.decode.run.max_iterations_param=loop_limit"});
  test::RunOptions options;
  options.tolerate_failures = true;
  options.request_params = {{"loop_limit = 4294967296"},
                            {"max_tokens = -5"},
                            {"loop_limit = 2"},
                            {"max_tokens = 0"},
                            {"loop_limit = 2.5"}};
  test::RunOutput run = RunAll(model, {"ab", "ab", "ab", "ab", "ab"}, options);
  ASSERT_EQ(run.outcomes.size(), 5u);
  EXPECT_EQ(run.outcomes[0].result.end, RequestEnd::kFailed);
  EXPECT_NE(run.outcomes[0].result.error.find(
                "request parameter 'loop_limit' must be in [0, 1000000000], got 4294967296"),
            std::string::npos)
      << run.outcomes[0].result.error;
  EXPECT_EQ(run.outcomes[1].result.end, RequestEnd::kFailed);
  EXPECT_NE(run.outcomes[1].result.error.find("'max_tokens' must be in [1, 100000000], got -5"),
            std::string::npos)
      << run.outcomes[1].result.error;
  // No output at all is no request: its streams would still carry the prefill's token.
  EXPECT_EQ(run.outcomes[3].result.end, RequestEnd::kFailed);
  EXPECT_NE(run.outcomes[3].result.error.find("'max_tokens' must be in [1, 100000000], got 0"),
            std::string::npos)
      << run.outcomes[3].result.error;
  EXPECT_EQ(run.outcomes[4].result.end, RequestEnd::kFailed);
  EXPECT_NE(run.outcomes[4].result.error.find("'loop_limit' must be an integer in [0, 1000000000]"),
            std::string::npos)
      << run.outcomes[4].result.error;
  ASSERT_EQ(run.outcomes[2].result.end, RequestEnd::kDone) << run.outcomes[2].result.error;
  EXPECT_EQ(run.outcomes[2].result.tokens, 3u);
}

TEST(Conductor, CancellationEndsOneRequest) {
  ModelSpec model = test::EndlessEcho();
  Result<std::unique_ptr<Session>> session = Session::Open(model, test::TestRegistry());
  ASSERT_TRUE(session.ok());
  SubmitSpec endless;
  endless.prompt = "forever";
  auto stream = (*session)->Submit(endless);
  SubmitSpec quick;  // the same endless echo, but cut after 2 tokens
  quick.prompt = "ok";
  Diagnostics problems;
  quick.params = std::make_shared<ConfigTree>(*ParseTomlText("max_tokens = 2", "params", &problems),
                                              "params", "");
  auto other = (*session)->Submit(quick);
  ASSERT_TRUE(stream.ok() && other.ok());
  OutputChunk chunk;
  ASSERT_TRUE(stream.value()->Next(&chunk));  // it is running
  EXPECT_TRUE((*session)->Cancel(stream.value()->id()));
  RequestResult result = stream.value()->Wait();
  EXPECT_EQ(result.end, RequestEnd::kCancelled);
  EXPECT_EQ(other.value()->Wait().end, RequestEnd::kDone);
  EXPECT_FALSE((*session)->Cancel(stream.value()->id()));  // finished already
  (*session)->Close();
}

// Clients keep submitting while the session closes: each submission is refused (the session is
// closed or shutting down) or gets a stream that ends; nothing is left waiting, and calls after
// the close are refused.
TEST(Conductor, ClosingWhileClientsSubmitEndsEveryRequest) {
  Result<std::unique_ptr<Session>> session =
      Session::Open(ShippedModel("echo"), test::TestRegistry());
  ASSERT_TRUE(session.ok());
  std::atomic<int> ended{0};
  std::vector<std::thread> clients;
  for (size_t c = 0; c < 2; ++c) {
    clients.emplace_back([&] {
      while (true) {  // until the session refuses
        SubmitSpec spec;
        spec.prompt = "closing";
        auto stream = (*session)->Submit(spec);
        if (!stream.ok()) {
          EXPECT_EQ(stream.status().code(), Code::kUnavailable) << stream.status().ToString();
          break;
        }
        RequestResult result = stream.value()->Wait();  // done, or cancelled by the close
        if (result.end == RequestEnd::kDone) {
          EXPECT_EQ(result.tokens, 7u);
        } else {
          EXPECT_EQ(result.end, RequestEnd::kCancelled) << result.error;
        }
        ++ended;
      }
    });
  }
  while (ended.load() < 10) std::this_thread::yield();
  (*session)->Close();
  for (std::thread& t : clients) t.join();  // each client was refused in the end (no hang)
  // After the close every call is refused or does nothing.
  SubmitSpec late;
  late.prompt = "late";
  auto after = (*session)->Submit(late);
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), Code::kUnavailable) << after.status().ToString();
  std::vector<SubmitSpec> lates(2, late);
  for (auto& refusal : (*session)->SubmitAll(lates)) EXPECT_FALSE(refusal.ok());
  EXPECT_FALSE((*session)->Cancel(1));
  (*session)->WaitIdle();  // returns at once: nothing runs
  (*session)->Close();     // again: nothing left to close
}

// The requests a close cancels end while the close runs; their streams' end callbacks may call
// the session (here for its stats) without waiting on the close.
TEST(Conductor, EndCallbacksOfRequestsAClosesCancelsMayCallTheSession) {
  ModelSpec model = test::EndlessEcho();
  Result<std::unique_ptr<Session>> session = Session::Open(model, test::TestRegistry());
  ASSERT_TRUE(session.ok());
  std::atomic<int> ended{0};
  std::atomic<uint64_t> chunks{0};
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (RequestId id = 1; id <= 2; ++id) {
    auto stream = std::make_shared<RequestStream>(id);
    stream->SetCallbacks([&](const OutputChunk&) { ++chunks; },
                         [&](const RequestResult& result) {
                           EXPECT_EQ(result.end, RequestEnd::kCancelled);
                           EXPECT_EQ(result.error, "the engine shut down");
                           (void)(*session)->stats();
                           ++ended;
                         });
    SubmitSpec spec;
    spec.prompt = "long";
    spec.id = id;
    spec.stream = stream;
    ASSERT_TRUE((*session)->Submit(std::move(spec)).ok());
    streams.push_back(stream);
  }
  while (chunks.load() < 10) std::this_thread::yield();
  (*session)->Close();
  EXPECT_EQ(ended.load(), 2);
}

// Walk runs and cohort records are kept for later requests; what they held is not.
TEST(Conductor, FinishedRequestsLeaveNoHostMemoryHeldWhileTheSessionRuns) {
  for (bool cohorts : {true, false}) {
    SCOPED_TRACE(cohorts ? "cohorts" : "per request");
    SessionOptions options;
    options.conductor.cohorts = cohorts;
    Result<std::unique_ptr<Session>> session =
        Session::Open(ShippedModel("echo"), test::TestRegistry(), options);
    ASSERT_TRUE(session.ok());
    const DLDevice cpu{kDLCPU, 0};
    const uint64_t before = MemoryLedger::Global().Used(cpu);
    for (int wave = 0; wave < 2; ++wave) {  // the second wave restarts the first's runs
      std::vector<SubmitSpec> specs(8);
      for (size_t i = 0; i < specs.size(); ++i) specs[i].prompt = std::string(3 + i, 'a' + i);
      for (auto& stream : (*session)->SubmitAll(std::move(specs))) {
        ASSERT_TRUE(stream.ok());
        EXPECT_EQ(stream.value()->Wait().end, RequestEnd::kDone);
      }
      (*session)->WaitIdle();
      EXPECT_EQ(test::HostMemoryAfterSettling(before), before) << "wave " << wave;
    }
    (*session)->Close();
  }
}

const char* kLoops = R"(
format = 1
[model]
name = "loops"
max_output_tokens = 100000
[nodes.x]
plugin = "kit_add"
[nodes.x.config]
add = 1
stop_at = 1000
[partitions.main]
initial = "w"
[walks.w]
partition = "main"
run = { loop = "outer", max_iterations = 3, body = { loop = "inner", max_iterations = 5, body = "x" } }
inputs = { "x.tokens" = "request.prompt" }
edges = [
  { from = "x.tokens", to = "x.tokens" },
  { from = "x.tokens", emit = "tokens", modality = "tokens", counts_tokens = true },
]
)";

TEST(Conductor, NestedLoopsRunTheirIterations) {
  test::RunOutput run = RunAll(Model(kLoops), {"A"});
  const test::Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
  std::vector<int64_t> expected;
  for (int k = 1; k <= 15; ++k) expected.push_back('A' + k);  // 3 x 5 iterations
  EXPECT_EQ(o.values.at("tokens"), expected);
}

TEST(Conductor, StopChecksEndTheNamedLoop) {
  // x stops at 'A' + 3: naming "inner" ends each inner loop there; naming "outer" ends the walk.
  test::RunOutput inner =
      RunAll(Model(kLoops, {"nodes.x.config.stop_at=68", "nodes.x.config.stop_loop=inner"}), {"A"});
  test::RunOutput outer =
      RunAll(Model(kLoops, {"nodes.x.config.stop_at=68", "nodes.x.config.stop_loop=outer"}), {"A"});
  ASSERT_EQ(inner.outcomes[0].result.end, RequestEnd::kDone) << inner.outcomes[0].result.error;
  ASSERT_EQ(outer.outcomes[0].result.end, RequestEnd::kDone) << outer.outcomes[0].result.error;
  // inner: iterations stop once a token reaches 68, then each later inner loop stops after its
  // first iteration (the tokens only grow): 66 67 68 | 69 | 70.
  EXPECT_EQ(inner.outcomes[0].values.at("tokens"), (std::vector<int64_t>{66, 67, 68, 69, 70}));
  EXPECT_EQ(outer.outcomes[0].values.at("tokens"), (std::vector<int64_t>{66, 67, 68}));
  EXPECT_LE(outer.outcomes[0].result.wasted_steps, 1u);
}

// kit_add nodes a (+10), b (+20), c (+1) and e (+100) over one partition; the walk is appended.
std::string AddNodes(const std::string& walk) {
  return R"(
format = 1
[model]
name = "graph"
[nodes.a]
plugin = "kit_add"
[nodes.a.config]
add = 10
[nodes.b]
plugin = "kit_add"
[nodes.b.config]
add = 20
[nodes.c]
plugin = "kit_add"
[nodes.c.config]
add = 1
[nodes.e]
plugin = "kit_add"
[nodes.e.config]
add = 100
[partitions.main]
initial = "w"
[walks.w]
partition = "main"
)" + walk;
}

TEST(Conductor, AnEdgeBetweenParallelBranchesFeedsTheSiblingAlreadyReached) {
  // b is reached with a; its input comes only from a's output.
  test::RunOutput run = RunAll(Model(AddNodes(R"(run = { parallel = ["a", "b"] }
inputs = { "a.tokens" = "request.prompt" }
edges = [{ from = "a.tokens", to = "b.tokens" }, { from = "b.tokens", emit = "b" }]
)")),
                               {"\x01"});
  const test::Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
  EXPECT_EQ(o.values.at("b"), std::vector<int64_t>{31});
}

TEST(Conductor, AnInputFedFromOutsideALoopIsReadByEveryIteration) {
  // e runs once; its output (101) is c's bias in each of the loop's 4 iterations (c's own tokens
  // loop back), as an encoder's output feeds every step of a decoder.
  test::RunOutput run = RunAll(
      Model(AddNodes(R"(run = { sequence = ["e", { loop = "gen", max_iterations = 4, body = "c" }] }
inputs = { "e.tokens" = "request.prompt", "c.tokens" = "request.prompt" }
edges = [
  { from = "e.tokens", to = "c.bias" },
  { from = "c.tokens", to = "c.tokens" },
  { from = "c.tokens", emit = "tokens" },
]
)")),
      {"\x01"});
  const test::Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
  EXPECT_EQ(o.values.at("tokens"), (std::vector<int64_t>{103, 205, 307, 409}));
}

TEST(Conductor, ANodeAfterALoopReadsItsLastIteration) {
  test::RunOutput run = RunAll(
      Model(AddNodes(R"(run = { sequence = [{ loop = "gen", max_iterations = 3, body = "c" }, "b"] }
inputs = { "c.tokens" = "request.prompt" }
edges = [
  { from = "c.tokens", to = "c.tokens" },
  { from = "c.tokens", to = "b.tokens" },
  { from = "b.tokens", emit = "b" },
]
)")),
      {"\x01"});
  const test::Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
  EXPECT_EQ(o.values.at("b"), std::vector<int64_t>{24});  // 1 + 3 iterations of +1, then +20
}

TEST(Conductor, OutputPastTheTokenLimitIsNotSent) {
  // a's two tokens reach the limit; b, after it, still runs but sends nothing (not an empty chunk).
  test::RunOptions options;
  options.params = {"max_tokens = 2"};
  test::RunOutput run = RunAll(Model(AddNodes(R"(run = { sequence = ["a", "b"] }
inputs = { "a.tokens" = "request.prompt" }
edges = [
  { from = "a.tokens", to = "b.tokens" },
  { from = "a.tokens", emit = "a", counts_tokens = true },
  { from = "b.tokens", emit = "b", counts_tokens = true },
]
)")),
                               {"\x01\x02"}, options);
  const test::Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
  EXPECT_EQ(o.values.at("a"), (std::vector<int64_t>{11, 12}));
  EXPECT_EQ(o.chunks.count("b"), 0u);
  EXPECT_EQ(o.result.tokens, 2u);
}

TEST(Conductor, ParallelBranchesAndASequenceAfterThem) {
  const std::string manifest = AddNodes(R"(run = { sequence = [{ parallel = ["a", "b"] }, "c"] }
inputs = { "a.tokens" = "request.prompt", "b.tokens" = "request.prompt" }
edges = [
  { from = "a.tokens", to = "c.tokens" },
  { from = "b.tokens", emit = "b" },
  { from = "c.tokens", emit = "c" },
]
)");
  test::RunOutput run = RunAll(Model(manifest), {"\x01\x02"});
  const test::Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
  EXPECT_EQ(o.values.at("b"), (std::vector<int64_t>{21, 22}));
  EXPECT_EQ(o.values.at("c"), (std::vector<int64_t>{12, 13}));  // a (+10) then c (+1)
  EXPECT_EQ(o.result.steps, 3u);
}

}  // namespace
}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Models with a controller (kit_model) through a real Session: it encodes outputs with each
// request's parameters, fails a request whose output it cannot encode, feeds the inputs it gives
// with a walk, and a stream consumer it sends to a walk not its own fails the request.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "runtime/engine/engine_harness.h"
#include "support/test_support.h"

namespace mstar {
namespace {

using test::Model;
using test::RunAll;

// A stream consumer whose first walk (a model controller's choice) is not one of its walks fails
// the request with that reason at once, rather than leaving it waiting for a chunk with no walk to
// start.
TEST(Conductor, AConsumerSentToAWalkNotItsOwnFailsTheRequest) {
  std::string manifest =
      test::ReadFile(std::string(MSTAR_SOURCE_DIR) + "/manifests/models/echo.toml");
  auto replace = [&](const std::string& from, const std::string& to) {
    for (size_t at = manifest.find(from); at != std::string::npos;
         at = manifest.find(from, at + to.size())) {
      manifest.replace(at, from.size(), to);
    }
  };
  replace("[model]\n", "[model]\ncontroller = \"kit_model\"\nprompt = \"tokens\"\n");
  replace("request.prompt", "request.tokens");
  for (const std::string walk : {"", "prefill"}) {
    test::RunOptions options;
    options.request_params = {{"first_walk_of = \"chunks\"", "first_walk = \"" + walk + "\""}};
    test::RunOutput run = RunAll(Model(manifest), {"hello"}, options);
    const test::Outcome& o = run.outcomes[0];
    EXPECT_EQ(o.result.end, RequestEnd::kFailed) << "walk '" << walk << "'";
    EXPECT_NE(o.result.error.find("partition 'chunks' was sent to walk '" + walk +
                                  "', which is not one of its walks"),
              std::string::npos)
        << o.result.error;
  }
}

// kit_model's walks (prefill, then a decode loop of 3) over kit_add nodes; decode's emit has the
// modality (output "text" when it is text, "more" otherwise: one output has one modality), and its
// inputs are given.
std::string Controlled(const std::string& decode_modality,
                       const std::string& decode_inputs = R"("c.tokens" = "request.tokens")") {
  return R"(
format = 1
[model]
name = "controlled"
controller = "kit_model"
prompt = "tokens"
[nodes.a]
plugin = "kit_add"
[nodes.a.config]
add = 0
[nodes.c]
plugin = "kit_add"
[partitions.main]
initial = "prefill"
transitions = { prefill = "decode" }
[walks.prefill]
partition = "main"
run = "a"
inputs = { "a.tokens" = "request.tokens" }
edges = [{ from = "a.tokens", emit = "text", modality = "text" }]
[walks.decode]
partition = "main"
run = { loop = "gen", max_iterations = 3, body = "c" }
inputs = { )" +
         decode_inputs + R"( }
edges = [
  { from = "c.tokens", to = "c.tokens" },
  { from = "c.tokens", emit = ")" +
         std::string(decode_modality == "text" ? "text" : "more") + R"(", modality = ")" +
         decode_modality + R"(" },
]
)";
}

TEST(Conductor, AControllerEncodesOutputsWithTheRequestsParameters) {
  // The client's parameters are held only by the request, which has left the conductor's table
  // when its last output is encoded (ASan would see the freed parameters), and each output is
  // encoded with the loop iteration of its own step, not of a later one.
  test::RunOptions options;
  options.request_params = {{"upper = true"}};
  test::RunOutput run = RunAll(Model(Controlled("text")), {"ab"}, options);
  const test::Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error << " " << run.open_error;
  EXPECT_EQ(o.text, "ABBC#0CD#1DE#2");
}

// The tenant salt in the info an output is encoded with is the request's, held for the encoding:
// the request has left the conductor's table when its last output is encoded (ASan would see
// the freed salt).
TEST(Conductor, AControllerEncodesOutputsWithTheRequestsTenant) {
  test::RunOptions options;
  options.tenants = {"tenant-with-a-name-longer-than-a-short-string"};
  test::RunOutput run = RunAll(Model(Controlled("text")), {"ab"}, options);
  const test::Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error << " " << run.open_error;
  const std::string at = "@" + options.tenants[0];
  EXPECT_EQ(o.text, "ab" + at + "bc#0" + at + "cd#1" + at + "de#2" + at);
}

// A cancel that comes while the request is being made (its prompt encoded, outside the
// conductor's lock) is not lost: Cancel says yes and the request ends cancelled without a step.
TEST(Conductor, ACancelWhileTheRequestIsBeingMadeEndsItCancelled) {
  test::TempDir dir;
  const std::string entered = dir.file("entered"), go = dir.file("go");
  Result<std::unique_ptr<Session>> session =
      Session::Open(Model(Controlled("text")), test::TestRegistry());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  SubmitSpec spec;
  spec.id = 7;
  spec.prompt = "ab";
  spec.params = test::Params({"entered_file = \"" + entered + "\"", "go_file = \"" + go + "\""});
  Result<std::shared_ptr<RequestStream>> submitted = InvalidArgument("not submitted");
  std::thread client([&] { submitted = (*session)->Submit(std::move(spec)); });
  while (!std::ifstream(entered)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE((*session)->Cancel(7));
  test::WriteFile(go, "");
  client.join();
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  const RequestResult result = submitted.value()->Wait();
  EXPECT_EQ(result.end, RequestEnd::kCancelled);
  EXPECT_EQ(result.error, "cancelled by the client");
  EXPECT_EQ(result.steps, 0u);
  (*session)->Close();
}

TEST(Conductor, AnOutputTheControllerCannotEncodeFailsTheRequest) {
  test::RunOutput run = RunAll(Model(Controlled("tokens")), {"ab"});
  const test::Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.result.end, RequestEnd::kFailed);
  EXPECT_NE(o.result.error.find("the model controller's encode_output failed on output 'more'"),
            std::string::npos)
      << o.result.error;
  EXPECT_NE(o.result.error.find("kit_model encodes only text"), std::string::npos)
      << o.result.error;
  EXPECT_EQ(o.text, "ab");  // what was encoded before the failure
  EXPECT_EQ(run.stats.requests_failed, 1u);
  EXPECT_EQ(run.stats.requests_done, 0u);
}

TEST(Conductor, TensorsTheControllerGivesWithAWalkFeedItsInputs) {
  test::RunOptions options;
  options.request_params = {{"decode_bias = 5"}, {}};
  options.tolerate_failures = true;
  test::RunOutput run = RunAll(
      Model(Controlled("text", R"("c.tokens" = "request.tokens", "c.bias" = "controller.bias")")),
      {"ab", "ab"}, options);
  const test::Outcome& fed = run.outcomes[0];
  ASSERT_EQ(fed.result.end, RequestEnd::kDone) << fed.result.error;
  EXPECT_EQ(fed.text, "abgh#0mn#1st#2");  // decode: + 1 + 5 in each iteration
  const test::Outcome& wrong = run.outcomes[1];
  ASSERT_EQ(wrong.result.end, RequestEnd::kFailed);
  EXPECT_NE(wrong.result.error.find(
                "walk 'decode': the model controller gave no 'bias' for input 'c.bias'"),
            std::string::npos)
      << wrong.result.error;
}

}  // namespace
}  // namespace mstar

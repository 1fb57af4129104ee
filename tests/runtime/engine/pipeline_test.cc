// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The pipeline's two ways to finish a batch: on the executor (host outputs, the default on CPU)
// and on the finisher thread (device outputs; here forced with finish_on_executor = false, so
// the finisher's hand-offs, holds and recycling on the planner run on a CPU build too). Both
// must give the same outputs, stops, failures and evictions. And a submission to an idle engine,
// which forms its first batch itself and launches it on the executor (IdleLauncher).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "runtime/engine/engine_harness.h"

namespace mstar {
namespace {

using test::Model;
using test::RunAll;
using test::ShippedModel;

test::RunOptions OnFinisher(test::RunOptions options = {}) {
  options.session.pipeline.finish_on_executor = false;
  return options;
}

// The text output a request of the echo model streamed back, read chunk by chunk until its end.
std::string EchoText(Session& session, const std::string& prompt) {
  SubmitSpec spec;
  spec.prompt = prompt;
  Result<std::shared_ptr<RequestStream>> stream = session.Submit(std::move(spec));
  EXPECT_TRUE(stream.ok()) << stream.status().ToString();
  if (!stream.ok()) return "";
  std::string text;
  OutputChunk chunk;
  while (stream.value()->Next(&chunk)) {
    if (chunk.modality == "text") text.append(chunk.bytes.begin(), chunk.bytes.end());
  }
  EXPECT_EQ(stream.value()->Wait().end, RequestEnd::kDone);
  return text;
}

std::vector<std::string> KitPrompts() {
  return {"AB", "C", "DEF", "G", "HI", "JKL"};
}

TEST(Pipeline, TheFinisherThreadGivesTheSameOutputsAsTheExecutor) {
  std::vector<std::string> prompts = test::RandomPrompts(200, 30, 11);
  test::RunOutput here = RunAll(ShippedModel("echo"), prompts);
  test::RunOutput there = RunAll(ShippedModel("echo"), prompts, OnFinisher());
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(there.outcomes[i].result.end, RequestEnd::kDone) << there.outcomes[i].result.error;
    EXPECT_EQ(there.outcomes[i].text, prompts[i]) << i;
    EXPECT_EQ(there.outcomes[i].chunks, here.outcomes[i].chunks) << i;
  }
  EXPECT_EQ(there.stats.requests_done, prompts.size());
}

TEST(Pipeline, RequestsBatchTogetherOnTheFinisherThread) {
  test::RunOptions options = OnFinisher();
  options.together = true;
  test::RunOutput run =
      RunAll(ShippedModel("echo"), std::vector<std::string>(16, "batching"), options);
  for (const test::Outcome& o : run.outcomes) EXPECT_EQ(o.text, "batching");
  double mean_batch = static_cast<double>(run.stats.steps) / static_cast<double>(run.stats.batches);
  EXPECT_GT(mean_batch, 4.0);
}

TEST(Pipeline, StopsAndTheOutputLimitAreExactOnTheFinisherThread) {
  test::RunOptions options = OnFinisher();
  options.params = {"max_tokens = 3"};
  test::RunOutput run = RunAll(ShippedModel("echo"), {"truncate me", "ok"}, options);
  EXPECT_EQ(run.outcomes[0].text, "tru");
  EXPECT_EQ(run.outcomes[1].text, "ok");
  for (const test::Outcome& o : run.outcomes) EXPECT_LE(o.result.wasted_steps, 1u);
}

TEST(Pipeline, FailuresStayWithTheirRequestOnTheFinisherThread) {
  test::RunOutput clean = RunAll(Model(test::kKitModel), KitPrompts());
  for (const char* stage : {"forward", "stop"}) {
    test::RunOutput run =
        RunAll(Model(test::kKitModel, {"nodes.lm.config.fail_request=3",
                                       std::string("nodes.lm.config.fail_stage=") + stage}),
               KitPrompts(), OnFinisher());
    for (size_t i = 0; i < run.outcomes.size(); ++i) {
      if (i + 1 == 3) {
        EXPECT_EQ(run.outcomes[i].result.end, RequestEnd::kFailed) << stage;
      } else {
        ASSERT_EQ(run.outcomes[i].result.end, RequestEnd::kDone) << stage << " " << i;
        EXPECT_EQ(run.outcomes[i].values, clean.outcomes[i].values) << stage << " " << i;
      }
    }
  }
}

TEST(Pipeline, EvictionKeepsOutputsIdenticalOnTheFinisherThread) {
  test::RunOutput clean = RunAll(Model(test::kKitModel), KitPrompts());
  test::RunOptions options = OnFinisher();
  options.together = true;  // one by one, early requests could finish before late ones arrive
  test::RunOutput tight =
      RunAll(Model(test::kKitModel, {"resources.kv.config.capacity=100"}), KitPrompts(), options);
  for (size_t i = 0; i < tight.outcomes.size(); ++i) {
    ASSERT_EQ(tight.outcomes[i].result.end, RequestEnd::kDone) << tight.outcomes[i].result.error;
    EXPECT_EQ(tight.outcomes[i].values, clean.outcomes[i].values) << i;
  }
  EXPECT_GT(tight.stats.evictions, 0u);
}

// The executor is idle once a request's last step is through; a pause after each request lets it
// get there, so some submission must find it idle (the test fails only if none launches).
TEST(Pipeline, ASubmissionToAnIdleEngineLaunchesItsFirstStepItself) {
  Result<std::unique_ptr<Session>> session =
      Session::Open(ShippedModel("echo"), test::TestRegistry());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  int requests = 0;
  while (requests < 100 && (*session)->stats().idle_launches == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::string prompt = "idle " + std::to_string(requests++);
    EXPECT_EQ(EchoText(**session, prompt), prompt);
  }
  ConductorStats stats = (*session)->stats();
  EXPECT_GT(stats.idle_launches, 0u);
  EXPECT_LE(stats.idle_launches, stats.batches);
  EXPECT_EQ(stats.requests_done, static_cast<uint64_t>(requests));
  (*session)->Close();
}

// Clients submitting at once race each other, the scheduler and the finishing executor to launch
// on the idle executor: each request still runs once, with its own outputs.
TEST(Pipeline, ClientsRacingToLaunchOnTheIdleExecutorEachGetTheirOwnOutputs) {
  for (bool on_finisher : {false, true}) {
    SCOPED_TRACE(on_finisher ? "finisher thread" : "executor");
    SessionOptions options;
    options.pipeline.finish_on_executor = !on_finisher;
    Result<std::unique_ptr<Session>> session =
        Session::Open(ShippedModel("echo"), test::TestRegistry(), options);
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    constexpr int kClients = 4, kEach = 20;
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c) {
      clients.emplace_back([&, c] {
        for (int i = 0; i < kEach; ++i) {
          std::string prompt = "client " + std::to_string(c) + " request " + std::to_string(i);
          EXPECT_EQ(EchoText(**session, prompt), prompt);
          if (i % 4 == c % 4) std::this_thread::sleep_for(std::chrono::microseconds(500));
        }
      });
    }
    for (std::thread& client : clients) client.join();
    EXPECT_EQ((*session)->stats().requests_done, static_cast<uint64_t>(kClients * kEach));
    (*session)->Close();
  }
}

}  // namespace
}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The pipeline's two ways to finish a batch: on the executor (host outputs, the default on CPU)
// and on the finisher thread (device outputs; here forced with finish_on_executor = false, so
// the finisher's hand-offs, holds and recycling on the planner run on a CPU build too). Both
// must give the same outputs, stops, failures and evictions. And a submission to an idle engine,
// which forms its first batch itself and launches it on the executor (IdleLauncher); the
// executor's poll for work before it sleeps (WorkQueue::Pop with a spin); no scheduler wake for
// nothing to schedule.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
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

// The text a request streamed back, read chunk by chunk until its end (which must be done).
std::string TextOf(RequestStream& stream) {
  std::string text;
  OutputChunk chunk;
  while (stream.Next(&chunk)) {
    if (chunk.modality == "text") text.append(chunk.bytes.begin(), chunk.bytes.end());
  }
  EXPECT_EQ(stream.Wait().end, RequestEnd::kDone);
  return text;
}

// The text output of a request of the echo model.
std::string EchoText(Session& session, const std::string& prompt) {
  SubmitSpec spec;
  spec.prompt = prompt;
  Result<std::shared_ptr<RequestStream>> stream = session.Submit(std::move(spec));
  EXPECT_TRUE(stream.ok()) << stream.status().ToString();
  if (!stream.ok()) return "";
  return TextOf(**stream);
}

// How many times a thread of this process went to sleep (its voluntary context switches), by
// Linux's account; -1 when there is none.
long SleepsOf(pid_t tid) {
  std::ifstream status("/proc/self/task/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("voluntary_ctxt_switches:", 0) == 0) return std::stol(line.substr(24));
  }
  return -1;
}

// The thread of this process with that name (threads are named by the pipeline), or 0.
pid_t ThreadNamed(const std::string& name) {
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
    std::ifstream comm(task.path() / "comm");
    std::string text;
    if (std::getline(comm, text) && text == name) return std::stoi(task.path().filename());
  }
  return 0;
}

// Whether thread tid is asleep (state S in /proc); false once it has exited.
bool Asleep(pid_t tid) {
  std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t end = text.rfind(')');
  return end != std::string::npos && end + 2 < text.size() && text[end + 2] == 'S';
}

// Waits until thread tid sleeps where it will stay: asleep, with no new sleep over a window long
// enough that a thread only blocked for a moment (on a lock, say, while the session starts) would
// have woken. A thread that never settles fails the calling test after a few seconds.
void WaitUntilSettled(pid_t tid) {
  constexpr auto kWindow = std::chrono::milliseconds(100);
  for (int attempt = 0; attempt < 50; ++attempt) {
    const long sleeps = SleepsOf(tid);
    std::this_thread::sleep_for(kWindow);
    if (Asleep(tid) && SleepsOf(tid) == sleeps) return;
  }
  ADD_FAILURE() << "thread " << tid << " never settled into one sleep";
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

// Work pushed while a Pop with a spin budget polls is taken without the popper waiting for it
// (nor waking: the pusher makes no wake call); without a budget the same Pop sleeps until it. The
// spinning popper's wait is counted by the queue itself: the kernel's count of the thread's
// voluntary sleeps also counts blocking elsewhere (a sanitizer's allocator lock, reading /proc)
// that has nothing to do with the queue.
TEST(WorkQueue, APopThatSpinsTakesWorkPushedMeanwhileWithoutSleeping) {
  if (!std::filesystem::exists("/proc/self/task")) GTEST_SKIP() << "no /proc";
  for (bool spin : {true, false}) {
    SCOPED_TRACE(spin ? "spinning" : "not spinning");
    WorkQueue queue;
    std::atomic<pid_t> popper_tid{0};
    long sleeps = -1;
    std::unique_ptr<BatchWork> popped;
    std::thread popper([&] {
      const pid_t tid = static_cast<pid_t>(gettid());
      const long before = SleepsOf(tid);
      popper_tid = tid;
      popped = queue.Pop(spin ? std::chrono::nanoseconds(std::chrono::seconds(60))
                              : std::chrono::nanoseconds(0));
      sleeps = SleepsOf(tid) - before;
    });
    while (popper_tid == 0) std::this_thread::yield();
    if (spin) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } else {
      while (!Asleep(popper_tid)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    auto work = std::make_unique<BatchWork>();
    work->sequence = 7;
    queue.Push(std::move(work));
    popper.join();
    ASSERT_NE(popped, nullptr);
    EXPECT_EQ(popped->sequence, 7u);
    if (spin) {
      EXPECT_EQ(queue.pops_that_waited(), 0u);
    } else {
      EXPECT_EQ(queue.pops_that_waited(), 1u);
      EXPECT_GT(sleeps, 0);
    }
  }
}

// The executor's poll before it sleeps: as configured, else by how many hardware threads there are.
TEST(WorkQueue, TheExecutorsPollIsConfiguredOrFitsTheMachine) {
  PipelineOptions options;
  options.idle_spin = std::chrono::microseconds(30);
  EXPECT_EQ(IdleSpinFor(options), std::chrono::microseconds(30));
  options.idle_spin = std::chrono::microseconds(0);
  EXPECT_EQ(IdleSpinFor(options), std::chrono::microseconds(0));
  const bool enough = std::thread::hardware_concurrency() >= kIdleSpinMinThreads;
  EXPECT_EQ(IdleSpinFor(PipelineOptions{}), enough ? kIdleSpin : std::chrono::microseconds(0));
}

// A spinning Pop on a queue that closes meanwhile ends (nullptr) without waiting out its budget.
TEST(WorkQueue, APopThatSpinsEndsWhenTheQueueCloses) {
  WorkQueue queue;
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    queue.Close();
  });
  EXPECT_EQ(queue.Pop(std::chrono::hours(1)), nullptr);
  closer.join();
}

// A request submitted from another's end callback reaches the executor while that still finishes
// the batch that ended it (its outputs are being delivered): nothing else is in flight, so the
// client launches the new request's first step there itself.
TEST(Pipeline, ASubmissionWhileTheLastBatchFinishesLaunchesOnTheExecutor) {
  Result<std::unique_ptr<Session>> session =
      Session::Open(ShippedModel("echo"), test::TestRegistry());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Session& s = **session;
  std::promise<std::shared_ptr<RequestStream>> second;
  std::promise<uint64_t> launches_before;
  auto first = std::make_shared<RequestStream>(1);
  first->SetCallbacks(nullptr, [&](const RequestResult&) {
    launches_before.set_value(s.stats().idle_launches);
    SubmitSpec spec;
    spec.prompt = "second";
    Result<std::shared_ptr<RequestStream>> submitted = s.Submit(std::move(spec));
    second.set_value(submitted.ok() ? *submitted : nullptr);
  });
  SubmitSpec spec;
  spec.prompt = "first";
  spec.stream = first;
  ASSERT_TRUE(s.Submit(std::move(spec)).ok());
  EXPECT_EQ(first->Wait().end, RequestEnd::kDone);
  std::shared_ptr<RequestStream> next = second.get_future().get();
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(TextOf(*next), "second");
  EXPECT_EQ(s.stats().idle_launches, launches_before.get_future().get() + 1);
  s.Close();
}

// Requests one after another, each launched on the idle executor by its client and run to its
// end there: the scheduler thread has nothing to form, and is never woken to find that out. The
// engine's own count says nobody notified it; the kernel's count of the thread's sleeps, read once
// the thread has settled into its wait, says nothing else woke it either.
TEST(Pipeline, RequestsOneAfterAnotherNeverWakeTheScheduler) {
  if (!std::filesystem::exists("/proc/self/task")) GTEST_SKIP() << "no /proc";
  Result<std::unique_ptr<Session>> session =
      Session::Open(ShippedModel("echo"), test::TestRegistry());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  const pid_t scheduler = ThreadNamed("mstar-sched");
  ASSERT_NE(scheduler, 0);
  WaitUntilSettled(scheduler);
  const long before = SleepsOf(scheduler);
  constexpr int kRequests = 20;
  for (int i = 0; i < kRequests; ++i) {
    std::string prompt = "one after another " + std::to_string(i);
    EXPECT_EQ(EchoText(**session, prompt), prompt);
  }
  EXPECT_EQ((*session)->stats().scheduler_wakes, 0u);
  EXPECT_EQ(SleepsOf(scheduler) - before, 0);
  EXPECT_EQ((*session)->stats().idle_launches, static_cast<uint64_t>(kRequests));
  (*session)->Close();
}

}  // namespace
}  // namespace mstar

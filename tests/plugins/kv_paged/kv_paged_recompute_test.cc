// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Recomputation under a real session: kv_paged offloads requests to a kit_memory tier that loses
// blocks (DATA_LOSS on GET, as a tier whose blocks were damaged reports), so a reload fails and
// the engine starts the request again from its prompt. The client sees exactly the outputs of a
// run where nothing was lost, each once; a tier that keeps losing blocks fails the request after
// ConductorOptions::max_recomputes attempts; a model that does not reproduce what it sent, or
// does not declare itself deterministic, fails the request with the reason.
#include <gtest/gtest.h>
#include <spdlog/sinks/base_sink.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/logging.h"

#include "runtime/engine/engine_harness.h"

namespace mstar {
namespace {

using test::Model;
using test::RunAll;

std::vector<std::string> Prompts() {
  return {"AB", "C", "DEF", "G", "HI", "JKL"};
}

// The kit model over kv_paged, with a pool too small for every request at once (24 pages of 4
// tokens; the requests end holding about 65 pages), offloading to kit_memory; more: overrides.
test::RunOutput RunTight(std::vector<std::string> more, uint32_t max_recomputes = 2) {
  std::vector<std::string> overrides = {"resources.pages.config.num_pages=24"};
  overrides.insert(overrides.end(), more.begin(), more.end());
  test::RunOptions options;
  options.together = true;  // one by one, early requests could finish before late ones arrive
  options.session.conductor.max_recomputes = max_recomputes;
  return RunAll(Model(test::kKitKvPagedModel, overrides), Prompts(), options);
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Checks a run against the clean one: a request that finished sent the clean run's outputs, and
// one that failed sent a prefix of them (each once), and is handed to check_failed. Returns how
// many failed.
template <typename CheckFailed>
size_t CheckOutcomes(const test::RunOutput& run, const test::RunOutput& clean,
                     CheckFailed check_failed) {
  size_t failed = 0;
  for (size_t i = 0; i < run.outcomes.size(); ++i) {
    const test::Outcome& o = run.outcomes[i];
    if (o.result.end == RequestEnd::kDone) {
      EXPECT_EQ(o.values, clean.outcomes[i].values) << "request " << i + 1;
      continue;
    }
    ++failed;
    EXPECT_EQ(o.result.end, RequestEnd::kFailed) << "request " << i + 1;
    for (const auto& [name, values] : o.values) {
      const std::vector<int64_t>& want = clean.outcomes[i].values.at(name);
      EXPECT_LE(values.size(), want.size()) << name;
      EXPECT_TRUE(values.size() <= want.size() &&
                  std::equal(values.begin(), values.end(), want.begin()))
          << name;
    }
    check_failed(o);
  }
  return failed;
}

TEST(KvPagedRecompute, ARequestWhoseBlocksWereLostIsRecomputedAndSendsEachOutputOnce) {
  test::RunOutput clean = RunAll(Model(test::kKitKvPagedModel), Prompts());
  test::RunOutput lossy = RunTight({"tiers.mem.config.lose_gets=1"});
  ASSERT_GT(lossy.stats.evictions, 0u);
  uint32_t recomputes = 0;
  for (size_t i = 0; i < lossy.outcomes.size(); ++i) {
    const test::Outcome& o = lossy.outcomes[i];
    ASSERT_EQ(o.result.end, RequestEnd::kDone) << i << ": " << o.result.error;
    EXPECT_EQ(o.values, clean.outcomes[i].values) << "request " << i + 1;
    EXPECT_EQ(o.chunks, clean.outcomes[i].chunks) << "request " << i + 1;
    recomputes += o.result.recomputes;
  }
  EXPECT_EQ(recomputes, 1u);  // the one reload that met the lost block
  EXPECT_EQ(lossy.stats.recomputes, 1u);
  EXPECT_EQ(lossy.stats.requests_done, Prompts().size());
}

// Every reload meets a lost block, and a request is recomputed once at most: a request offloaded
// again after its recomputation fails. Which requests are offloaded twice is the schedule's
// choice, so the run is repeated (a few times at most) until one is.
TEST(KvPagedRecompute, ATierThatKeepsLosingBlocksFailsTheRequestOnceItsRecomputesAreSpent) {
  test::RunOutput clean = RunAll(Model(test::kKitKvPagedModel), Prompts());
  size_t failed = 0;
  for (int run = 0; run < 5 && failed == 0; ++run) {
    test::RunOutput lossy = RunTight({"tiers.mem.config.lose_gets=1000000"}, 1);
    ASSERT_GT(lossy.stats.evictions, 0u);
    failed = CheckOutcomes(lossy, clean, [](const test::Outcome& o) {
      EXPECT_EQ(o.result.recomputes, 1u) << o.result.error;
      EXPECT_TRUE(Contains(o.result.error, "reloading its offloaded state")) << o.result.error;
      EXPECT_TRUE(Contains(o.result.error, "DATA_LOSS")) << o.result.error;
      EXPECT_TRUE(Contains(o.result.error, "(recomputed 1 time already)")) << o.result.error;
    });
    uint64_t recomputes = 0;
    for (const test::Outcome& o : lossy.outcomes) recomputes += o.result.recomputes;
    EXPECT_GT(recomputes, 0u);
    EXPECT_EQ(lossy.stats.recomputes, recomputes);
  }
  EXPECT_GT(failed, 0u);
}

TEST(KvPagedRecompute, WithRecomputingOffALostBlockFailsItsRequestAlone) {
  test::RunOutput clean = RunAll(Model(test::kKitKvPagedModel), Prompts());
  test::RunOutput lossy = RunTight({"tiers.mem.config.lose_gets=1"}, /*max_recomputes=*/0);
  size_t failed = CheckOutcomes(lossy, clean, [](const test::Outcome& o) {
    EXPECT_TRUE(Contains(o.result.error, "(not recomputed: recomputing is off)")) << o.result.error;
    EXPECT_EQ(o.result.recomputes, 0u);
  });
  EXPECT_EQ(failed, 1u);
  EXPECT_EQ(lossy.stats.recomputes, 0u);
}

TEST(KvPagedRecompute, ARecomputationThatDiffersFromWhatWasSentFailsTheRequest) {
  // kit_add adds the times its request was cleaned up: the recomputed attempt's first token is
  // one more than the one the client holds. Nothing of the differing attempt reaches the client.
  test::RunOutput clean =
      RunAll(Model(test::kKitKvPagedModel, {"nodes.lm.config.vary_after_cleanup=true"}), Prompts());
  test::RunOutput lossy =
      RunTight({"tiers.mem.config.lose_gets=1", "nodes.lm.config.vary_after_cleanup=true"});
  size_t failed = CheckOutcomes(lossy, clean, [](const test::Outcome& o) {
    EXPECT_TRUE(Contains(o.result.error,
                         "recomputed after its offloaded state was lost, its output 'tokens' "
                         "chunk 1 of "))
        << o.result.error;
    EXPECT_TRUE(Contains(o.result.error, "differs when recomputed")) << o.result.error;
    EXPECT_EQ(o.result.recomputes, 1u);
  });
  EXPECT_EQ(failed, 1u);
}

TEST(KvPagedRecompute, ANodeThatDoesNotDeclareItselfDeterministicIsNotRecomputed) {
  test::RunOutput clean = RunAll(Model(test::kKitKvPagedModel), Prompts());
  test::RunOutput lossy =
      RunTight({"tiers.mem.config.lose_gets=1", "nodes.lm.config.deterministic=false"});
  size_t failed = CheckOutcomes(lossy, clean, [](const test::Outcome& o) {
    EXPECT_TRUE(
        Contains(o.result.error,
                 "(not recomputed: node 'lm' does not declare MSTAR_SUBMODULE_DETERMINISTIC"))
        << o.result.error;
  });
  EXPECT_EQ(failed, 1u);
}

// Tells which request starts again from its prompt, from the conductor's warning (0 once Abandon
// is called without one).
class RecomputeWatch : public spdlog::sinks::base_sink<std::mutex> {
 public:
  RequestId Wait() {
    std::unique_lock<std::mutex> lock(seen_mutex_);
    seen_cv_.wait(lock, [&] { return seen_ != 0 || abandoned_; });
    return seen_;
  }
  void Abandon() {
    std::lock_guard<std::mutex> lock(seen_mutex_);
    abandoned_ = true;
    seen_cv_.notify_all();
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string text(msg.payload.data(), msg.payload.size());
    if (text.find("it starts again from its prompt") == std::string::npos) return;
    std::lock_guard<std::mutex> lock(seen_mutex_);
    if (seen_ == 0) seen_ = std::stoull(text.substr(text.find("request ") + 8));
    seen_cv_.notify_all();
  }
  void flush_() override {}

 private:
  std::mutex seen_mutex_;
  std::condition_variable seen_cv_;
  RequestId seen_ = 0;
  bool abandoned_ = false;
};

// One run of ACancelWhileARequestIsRecomputedEndsItCancelled: which request was recomputed (0 when
// none was), whether the client's cancel of it was taken, and every request's result.
struct CancelledRecompute {
  RequestId id = 0;
  bool cancelled = false;
  std::vector<std::pair<RequestId, RequestResult>> results;
};

CancelledRecompute CancelTheRecomputedRequest() {
  auto watch = std::make_shared<RecomputeWatch>();
  AddLogSink(watch);
  ModelSpec model = Model(test::kKitKvPagedModel,
                          {"resources.pages.config.num_pages=24", "tiers.mem.config.lose_gets=1",
                           "resources.kv.config.hold_readded=true"});
  auto session = Session::Open(model, test::TestRegistry(), SessionOptions{});
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  CancelledRecompute run;
  if (!session.ok()) {
    RemoveLogSink(watch);
    return run;
  }
  std::vector<SubmitSpec> specs;
  for (const std::string& prompt : Prompts()) {
    SubmitSpec spec;
    spec.prompt = prompt;
    specs.push_back(std::move(spec));
  }
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (auto& submitted : (*session)->SubmitAll(std::move(specs))) {
    EXPECT_TRUE(submitted.ok()) << submitted.status().ToString();
    if (submitted.ok()) streams.push_back(*submitted);
  }
  std::thread client([&] {
    for (const auto& stream : streams) run.results.emplace_back(stream->id(), stream->Wait());
    watch->Abandon();
  });
  run.id = watch->Wait();
  run.cancelled = run.id != 0 && (*session)->Cancel(run.id);
  client.join();
  (*session)->Close();
  RemoveLogSink(watch);
  return run;
}

// The client cancels a request as soon as it is to be recomputed: whether its old attempt is still
// ending, it is between attempts, or its new one has started (kit_counter never admits a request
// added again, so the new attempt cannot finish first), the cancel is honoured and the request
// ends cancelled. The held request is failed as stuck once every other request has finished; when
// that happens before the client's cancel arrives (a busy machine can delay the client's thread),
// the run shows nothing and is repeated, a few times at most.
TEST(KvPagedRecompute, ACancelWhileARequestIsRecomputedEndsItCancelled) {
  bool shown = false;
  for (int attempt = 0; attempt < 5 && !shown; ++attempt) {
    const CancelledRecompute run = CancelTheRecomputedRequest();
    ASSERT_NE(run.id, 0u) << "no request was recomputed";
    ASSERT_EQ(run.results.size(), Prompts().size());
    for (const auto& [id, result] : run.results) {
      if (id != run.id) {
        EXPECT_EQ(result.end, RequestEnd::kDone) << result.error;
      } else if (run.cancelled) {
        EXPECT_EQ(result.end, RequestEnd::kCancelled) << result.error;
      } else {  // the cancel came too late: the request had failed as stuck
        EXPECT_EQ(result.end, RequestEnd::kFailed) << result.error;
        EXPECT_TRUE(Contains(result.error, "keeps answering not ready")) << result.error;
      }
    }
    shown = run.cancelled;
  }
  EXPECT_TRUE(shown) << "in every run the recomputed request failed before its cancel arrived";
}

}  // namespace
}  // namespace mstar

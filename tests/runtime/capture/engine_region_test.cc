// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Piecewise (region) capture through the engine on CPU, with the recording backend: the
// cap_region submodule, whose batched forward runs region "affine" through region_launch. Steps
// go through the Engine API directly (no pipeline threads), so each stage's order is the test's;
// whole runs go through a Session to compare outputs with capture on and off.
#include <gtest/gtest.h>

#include <set>

#include "engine/engine.h"
#include "engine/session.h"
#include "model/model_manifest.h"
#include "runtime/capture/capture_test_util.h"
#include "runtime/engine/engine_harness.h"
#include "support/test_support.h"

namespace mstar {
namespace {

using test::ExpectNoDoubleLease;
using test::Int64Tensor;
using test::Int64Values;

const PluginRegistry& Registry() {
  static const PluginRegistry registry = test::LoadOnly(
      {std::string(MSTAR_BUILD_DIR) + "/lib/mstar/plugins", test::TestPluginDir("cap_region")});
  return registry;
}

// A decode loop of cap_region with the given node config lines.
ModelSpec Model(const std::string& config) {
  std::string text = R"(
format = 1
[model]
name = "regions"
[nodes.lm]
plugin = "cap_region"
[nodes.lm.config]
)" + config + R"(
[partitions.main]
initial = "decode"
[walks.decode]
partition = "main"
run = { loop = "gen", max_iterations = 4, body = "lm" }
inputs = { "lm.tokens" = "request.prompt" }
edges = [
  { from = "lm.token", to = "lm.tokens" },
  { from = "lm.token", emit = "token" },
  { from = "lm.y", emit = "y" },
]
)";
  ModelParse parse = ParseModelManifestText(text, "regions.toml", {}, &Registry());
  EXPECT_TRUE(parse.model.has_value()) << JoinDiagnostics(parse.diagnostics);
  return parse.model ? *parse.model : ModelSpec{};
}

// What cap_region computes for a request whose last token is t (width 2).
std::vector<int64_t> ExpectedY(int64_t t) {
  int64_t scale = t % 3 + 1;
  return {t * scale + 7, (t + 1) * scale + 7};
}

std::vector<CaptureEvent> Only(const std::vector<CaptureEvent>& events, CaptureEventKind kind) {
  std::vector<CaptureEvent> out;
  for (const CaptureEvent& e : events) {
    if (e.kind == kind) out.push_back(e);
  }
  return out;
}

class EngineRegions : public ::testing::Test {
 protected:
  void Open(const std::string& config) {
    Result<std::unique_ptr<Engine>> engine = Engine::Load(Model(config), Registry());
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(engine).value();
    Status warm = engine_->Warmup();
    ASSERT_TRUE(warm.ok()) << warm.ToString();
    log_ = engine_->capture_log();
    ASSERT_NE(log_, nullptr);
    node_ = engine_->runtime().node("lm")->index;
    regions_ = engine_->regions(node_);
    ASSERT_NE(regions_, nullptr);
  }

  // A prepared decode batch: one request per token, whose input is that token.
  ExecutingBatch Batch(const std::vector<int64_t>& tokens) {
    ExecutingBatch batch;
    batch.node = node_;
    batch.node_name = "lm";
    batch.walk = "decode";
    for (size_t i = 0; i < tokens.size(); ++i) {
      StepRequest r;
      r.id = next_id_++;
      r.info.struct_size = sizeof(r.info);
      r.info.struct_version = MSTAR_ABI_MINOR;
      r.info.request_id = r.id;
      r.info.walk = "decode";
      r.info.partition = "main";
      r.info.params = params_.root();
      EXPECT_TRUE(engine_->AddRequest(r.info).ok());
      r.inputs = NewTensorMap();
      EXPECT_TRUE(r.inputs->Append("tokens", Int64Tensor({tokens[i]})).ok());
      batch.requests.push_back(std::move(r));
    }
    engine_->PrepareInputs(batch);
    return batch;
  }

  void ExpectOutputs(const ExecutingBatch& batch, const std::vector<int64_t>& tokens) {
    ASSERT_EQ(batch.requests.size(), tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
      const StepRequest& r = batch.requests[i];
      ASSERT_TRUE(r.active()) << r.error;
      ASSERT_NE(r.outputs, nullptr);
      EXPECT_EQ(Int64Values(*r.outputs, "y"), ExpectedY(tokens[i])) << "token " << tokens[i];
      EXPECT_EQ(Int64Values(*r.outputs, "token"),
                (std::vector<int64_t>{ExpectedY(tokens[i])[0] % 1000}));
    }
  }

  std::vector<CaptureEvent> Events(CaptureEventKind kind) { return Only(log_->Events(), kind); }

  ConfigTree params_;
  std::unique_ptr<Engine> engine_;
  CaptureLog* log_ = nullptr;
  RegionCaptures* regions_ = nullptr;
  int node_ = -1;
  RequestId next_id_ = 1;
};

TEST_F(EngineRegions, WarmupCapturesEveryBucketOnEverySlotWithTheCaptureHooks) {
  Open("region_buckets = [1, 2, 4]\nregion_slots = 3");
  std::vector<CaptureEvent> captures = Events(CaptureEventKind::kCapture);
  ASSERT_EQ(captures.size(), 9u);  // 3 buckets x 3 slots
  EXPECT_EQ(regions_->num_slots(), 3u);
  const uint32_t order[] = {4, 2, 1};  // largest first, every slot of a bucket in turn
  for (size_t i = 0; i < captures.size(); ++i) {
    const CaptureEvent& e = captures[i];
    EXPECT_EQ(e.region, "affine");
    EXPECT_EQ(e.walk, "decode");
    EXPECT_EQ(e.bucket.batch_size, order[i / 3]) << e.ToString();
    EXPECT_EQ(e.rows, e.bucket.batch_size);
    EXPECT_EQ(e.slot, regions_->first_slot() + static_cast<int32_t>(i % 3)) << e.ToString();
    RegionGraph* graph = regions_->Find("affine", e.rows, e.slot);
    ASSERT_NE(graph, nullptr) << e.ToString();
    // The template came from the eager forward over dummy rows (token 0: x = [0, 1], scale 1).
    std::vector<int64_t> x;
    for (uint32_t r = 0; r < e.rows; ++r) x.insert(x.end(), {0, 1});
    EXPECT_EQ(Int64Values(*graph->inputs.map(), "x"), x);
  }
  // Distinct buffers per slot: the three graphs of a bucket share no storage.
  std::set<const void*> storage;
  for (int32_t k = 0; k < 3; ++k) {
    const mstar_tensor_map* map =
        regions_->Find("affine", 4, regions_->first_slot() + k)->inputs.map();
    storage.insert(map->Find("x")->tensors[0]->dl.data);
  }
  EXPECT_EQ(storage.size(), 3u);
}

TEST_F(EngineRegions, AStepReplaysTheSmallestBucketThatHoldsItsRowsWithPadding) {
  Open("region_buckets = [1, 2, 4]");
  log_->Clear();
  const std::vector<int64_t> tokens = {10, 11, 12};
  ExecutingBatch batch = Batch(tokens);
  engine_->Exec(batch);
  ExpectOutputs(batch, tokens);
  std::vector<CaptureEvent> events = log_->Events();
  std::vector<CaptureEvent> replays = Only(events, CaptureEventKind::kReplay);
  ASSERT_EQ(replays.size(), 1u);
  EXPECT_EQ(replays[0].region, "affine");
  EXPECT_EQ(replays[0].bucket.batch_size, 4u);
  EXPECT_EQ(replays[0].rows, 3u);
  EXPECT_EQ(replays[0].padding, 1u);
  std::vector<CaptureEvent> paddings = Only(events, CaptureEventKind::kPadding);
  ASSERT_EQ(paddings.size(), 1u);
  EXPECT_EQ(paddings[0].slot, replays[0].slot);
  EXPECT_EQ(paddings[0].padding, 1u);
  // The slot's static inputs: the real rows, then the template's padding row.
  RegionGraph* graph = regions_->Find("affine", 4, replays[0].slot);
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(Int64Values(*graph->inputs.map(), "x"),
            (std::vector<int64_t>{10, 11, 11, 12, 12, 13, 0, 1}));
  EXPECT_EQ(Int64Values(*graph->inputs.map(), "scale"), (std::vector<int64_t>{2, 3, 1, 1}));
  // Single rows take bucket 1 without padding.
  ExecutingBatch one = Batch({5});
  engine_->Exec(one);
  ExpectOutputs(one, {5});
  replays = Events(CaptureEventKind::kReplay);
  ASSERT_EQ(replays.size(), 2u);
  EXPECT_EQ(replays[1].bucket.batch_size, 1u);
  EXPECT_EQ(replays[1].padding, 0u);
  EXPECT_EQ(Events(CaptureEventKind::kPadding).size(), 1u);
  EXPECT_TRUE(Events(CaptureEventKind::kEagerFallback).empty());
}

TEST_F(EngineRegions, ABatchPlannedAheadHoldsItsOwnSlotAndNeverTouchesTheOther) {
  Open("region_buckets = [2]");
  log_->Clear();
  // Batch N leases a region slot; N+1 is planned while N has not run yet and gets the other.
  ExecutingBatch first = Batch({20, 21});
  std::optional<int32_t> a = engine_->ReserveRegionSlot(first);
  ASSERT_TRUE(a.has_value());
  first.region_slot = *a;
  ExecutingBatch second = Batch({30, 31});
  std::optional<int32_t> b = engine_->ReserveRegionSlot(second);
  ASSERT_TRUE(b.has_value());
  second.region_slot = *b;
  EXPECT_NE(*a, *b);
  ExecutingBatch third = Batch({40});
  EXPECT_FALSE(engine_->ReserveRegionSlot(third).has_value());  // both slots held

  // Poison N+1's buffers before N runs: N must neither read nor write them.
  RegionGraph* slot_a = regions_->Find("affine", 2, *a);
  RegionGraph* slot_b = regions_->Find("affine", 2, *b);
  ASSERT_NE(slot_a, nullptr);
  ASSERT_NE(slot_b, nullptr);
  ASSERT_TRUE(slot_b->inputs.Fill(0xAB).ok());
  const std::vector<int64_t> poison(4, static_cast<int64_t>(0xABABABABABABABABull));
  engine_->Exec(first);
  ExpectOutputs(first, {20, 21});
  EXPECT_EQ(Int64Values(*slot_b->inputs.map(), "x"), poison);
  EXPECT_EQ(Int64Values(*slot_a->inputs.map(), "x"), (std::vector<int64_t>{20, 21, 21, 22}));

  // N+1 runs on its own slot (its poisoned rows are all reloaded) and leaves N's alone.
  engine_->Exec(second);
  ExpectOutputs(second, {30, 31});
  EXPECT_EQ(Int64Values(*slot_b->inputs.map(), "x"), (std::vector<int64_t>{30, 31, 31, 32}));
  EXPECT_EQ(Int64Values(*slot_a->inputs.map(), "x"), (std::vector<int64_t>{20, 21, 21, 22}));

  std::vector<CaptureEvent> replays = Events(CaptureEventKind::kReplay);
  ASSERT_EQ(replays.size(), 2u);
  EXPECT_EQ(replays[0].slot, *a);
  EXPECT_EQ(replays[1].slot, *b);
  // The third batch finds a slot once N's replay completed (on CPU: at once).
  std::optional<int32_t> c = engine_->ReserveRegionSlot(third);
  ASSERT_TRUE(c.has_value());
  third.region_slot = *c;
  engine_->Exec(third);
  ExpectOutputs(third, {40});
  EXPECT_EQ(ExpectNoDoubleLease(log_->Events()), 3u);
  EXPECT_TRUE(Events(CaptureEventKind::kEagerFallback).empty());
}

TEST_F(EngineRegions, ABatchThatNeverRunsGivesItsSlotBack) {
  Open("region_buckets = [1, 2]");
  log_->Clear();
  ExecutingBatch batch = Batch({3});
  std::optional<int32_t> slot = engine_->ReserveRegionSlot(batch);
  ASSERT_TRUE(slot.has_value());
  batch.region_slot = *slot;
  batch.requests[0].skipped = true;
  engine_->Exec(batch);
  EXPECT_EQ(batch.region_slot, -1);
  EXPECT_EQ(Events(CaptureEventKind::kRelease).size(), 1u);
  EXPECT_TRUE(Events(CaptureEventKind::kReplay).empty());
  EXPECT_EQ(ExpectNoDoubleLease(log_->Events()), 1u);
}

TEST_F(EngineRegions, WhatNoGraphFitsRunsEagerlyLoggedOncePerShape) {
  Open("region_buckets = [1, 2]\nwide_token = 99");
  log_->Clear();
  for (int i = 0; i < 2; ++i) {
    ExecutingBatch three = Batch({1, 2, 3});  // more rows than the largest bucket
    engine_->Exec(three);
    ExpectOutputs(three, {1, 2, 3});
    ExecutingBatch wide = Batch({99});  // x has 3 columns where the capture has 2
    engine_->Exec(wide);
    ASSERT_TRUE(wide.requests[0].active()) << wide.requests[0].error;
    int64_t scale = 99 % 3 + 1;
    EXPECT_EQ(Int64Values(*wide.requests[0].outputs, "y"),
              (std::vector<int64_t>{99 * scale + 7, 100 * scale + 7, 101 * scale + 7}));
  }
  std::vector<CaptureEvent> fallbacks = Events(CaptureEventKind::kEagerFallback);
  ASSERT_EQ(fallbacks.size(), 2u);  // once per shape and reason
  EXPECT_EQ(fallbacks[0].region, "affine");
  EXPECT_EQ(fallbacks[0].rows, 3u);
  EXPECT_NE(fallbacks[0].reason.find("no captured bucket of region 'affine' holds 3 rows"),
            std::string::npos)
      << fallbacks[0].reason;
  EXPECT_EQ(fallbacks[1].rows, 1u);
  EXPECT_NE(fallbacks[1].reason.find("'x' has shape [1,3]; the capture has [1,2]"),
            std::string::npos)
      << fallbacks[1].reason;
  EXPECT_TRUE(Events(CaptureEventKind::kReplay).empty());
}

// The bucket of 2 rows was captured with x 3 columns wide: a step of 2 rows skips it for the
// next larger graph whose inputs have its shapes, padded, instead of running eagerly.
TEST_F(EngineRegions, ABucketCapturedWithOtherShapesLeavesItsRowsToTheNextThatMatches) {
  Open("region_buckets = [1, 2, 4]\nwide_dummy_rows = 2");
  ASSERT_EQ(regions_->Find("affine", 2, regions_->first_slot())
                ->inputs.map()
                ->Find("x")
                ->tensors[0]
                ->dl.shape[1],
            3);
  log_->Clear();
  ExecutingBatch two = Batch({4, 5});
  engine_->Exec(two);
  ExpectOutputs(two, {4, 5});
  std::vector<CaptureEvent> replays = Events(CaptureEventKind::kReplay);
  ASSERT_EQ(replays.size(), 1u);
  EXPECT_EQ(replays[0].bucket.batch_size, 4u);
  EXPECT_EQ(replays[0].rows, 2u);
  EXPECT_EQ(replays[0].padding, 2u);
  EXPECT_TRUE(Events(CaptureEventKind::kEagerFallback).empty());

  // With no larger graph, the mismatch is the reason of the fallback.
  Open("region_buckets = [1, 2]\nwide_dummy_rows = 2");
  log_->Clear();
  ExecutingBatch again = Batch({4, 5});
  engine_->Exec(again);
  ExpectOutputs(again, {4, 5});
  EXPECT_TRUE(Events(CaptureEventKind::kReplay).empty());
  std::vector<CaptureEvent> fallbacks = Events(CaptureEventKind::kEagerFallback);
  ASSERT_EQ(fallbacks.size(), 1u);
  EXPECT_NE(fallbacks[0].reason.find("'x' has shape [2,2]; the capture has [2,3]"),
            std::string::npos)
      << fallbacks[0].reason;
}

TEST_F(EngineRegions, AStepWithoutAFreeSlotRunsItsRegionsEagerly) {
  Open("region_buckets = [1]\nregion_slots = 1");
  log_->Clear();
  ExecutingBatch holder = Batch({1});
  std::optional<int32_t> held = engine_->ReserveRegionSlot(holder);
  ASSERT_TRUE(held.has_value());
  holder.region_slot = *held;
  ExecutingBatch batch = Batch({2});
  engine_->Exec(batch);  // the only slot is held by the batch planned ahead
  ExpectOutputs(batch, {2});
  std::vector<CaptureEvent> fallbacks = Events(CaptureEventKind::kEagerFallback);
  ASSERT_EQ(fallbacks.size(), 1u);
  EXPECT_NE(fallbacks[0].reason.find("every region slot is leased or in flight"), std::string::npos)
      << fallbacks[0].reason;
  engine_->Exec(holder);
  ExpectOutputs(holder, {1});
  EXPECT_EQ(Events(CaptureEventKind::kReplay).size(), 1u);
}

// Every prompt at once through a session; per request, the "token" and "y" values it emitted.
std::vector<std::map<std::string, std::vector<int64_t>>> RunPrompts(
    const ModelSpec& model, const CaptureOptions& capture, std::vector<CaptureEvent>* events) {
  test::RunOptions options;
  options.session.capture = capture;
  options.together = true;
  options.registry = &Registry();
  options.before_close = [&](Session& session) {
    if (CaptureLog* log = session.engine().capture_log()) *events = log->Events();
  };
  test::RunOutput run = test::RunAll(model, {"ab", "c", "defg", "hi", "j"}, options);
  std::vector<std::map<std::string, std::vector<int64_t>>> values;
  for (const test::Outcome& o : run.outcomes) {
    EXPECT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
    values.push_back(o.values);
  }
  return values;
}

TEST(EngineRegionRuns, OutputsEqualAnEagerRun) {
  ModelSpec model = Model("region_buckets = [1, 2, 4, 8]");  // five requests: bucket 8
  std::vector<CaptureEvent> on_events, off_events;
  auto on = RunPrompts(model, CaptureOptions{}, &on_events);
  CaptureOptions off;
  off.enabled = false;
  auto off_values = RunPrompts(model, off, &off_events);
  EXPECT_FALSE(Only(on_events, CaptureEventKind::kReplay).empty());
  EXPECT_TRUE(off_events.empty());
  ASSERT_EQ(on.size(), off_values.size());
  for (size_t i = 0; i < on.size(); ++i) {
    EXPECT_EQ(on[i].at("token").size(), 4u);  // four decode steps
    EXPECT_EQ(on[i], off_values[i]) << "request " << i;
  }
  ExpectNoDoubleLease(on_events);
}

TEST(EngineRegionRuns, AFailingRegionCaptureIsAnErrorAtWarmup) {
  ModelSpec model = Model("region_buckets = [1, 4]\nfail_region = true");
  Result<std::unique_ptr<Session>> session = Session::Open(model, Registry());
  ASSERT_FALSE(session.ok());
  const std::string& message = session.status().message();
  EXPECT_NE(message.find("node 'lm' region 'affine' (walk 'decode')"), std::string::npos)
      << message;
  EXPECT_NE(message.find("batch 4 with 4 tokens"), std::string::npos) << message;
  EXPECT_NE(message.find("fail_region is set"), std::string::npos) << message;
  EXPECT_NE(message.find("capture.allow_fallback"), std::string::npos) << message;
}

TEST(EngineRegionRuns, AllowFallbackRunsAFailedRegionEagerly) {
  ModelSpec model = Model("region_buckets = [1, 4]\nfail_region = true");
  CaptureOptions options;
  options.allow_fallback = true;
  std::vector<CaptureEvent> events;
  auto values = RunPrompts(model, options, &events);
  EXPECT_EQ(Only(events, CaptureEventKind::kCaptureFailed).size(), 2u);
  EXPECT_TRUE(Only(events, CaptureEventKind::kReplay).empty());
  CaptureOptions off;
  off.enabled = false;
  std::vector<CaptureEvent> none;
  EXPECT_EQ(values, RunPrompts(model, off, &none));
}

TEST(EngineRegionRuns, ARegionTheForwardNeverLaunchesIsAnErrorAtWarmup) {
  ModelSpec model = Model("region_buckets = [2]\nskip_region = true");
  Result<std::unique_ptr<Session>> session = Session::Open(model, Registry());
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.status().message().find("never launched region 'affine'"), std::string::npos)
      << session.status().message();
}

}  // namespace
}  // namespace mstar

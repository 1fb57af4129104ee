// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Replay slots and pre-planning through the Engine API directly (no pipeline threads), so each
// step's order is the test's: the echo plugin with capture configurations and the cap_kv
// resource, which pre-plans into leased slots and reports its plan stale when the batch's
// requests or their committed tokens changed. cap_kv refuses a pre-plan into a slot that still
// holds one and a plan over a stale staged plan, counts the staged plans it dropped (resets) and
// promoted, and reports what admit reserved and nobody committed or aborted in its used units.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include <thread>

#include "core/metrics.h"
#include "engine/engine.h"
#include "host/host_api.h"
#include "model/model_manifest.h"
#include "runtime/capture/capture_test_util.h"
#include "support/test_support.h"

namespace mstar {
namespace {

using test::ExpectNoDoubleLease;
using test::Int64Tensor;

const char* const kModel = R"(
format = 1
[model]
name = "preplan"
[nodes.echo]
plugin = "echo"
resources = ["kv"]
[nodes.echo.config]
end_token = 0
batched = true
capture_walks = ["decode"]
capture_batch_sizes = [1, 2, 4]
[resources.kv]
plugin = "cap_kv"
[partitions.main]
initial = "decode"
[walks.decode]
partition = "main"
run = { loop = "generate", max_iterations = 8, body = "echo" }
inputs = { "echo.tokens" = "request.prompt" }
edges = [{ from = "echo.text", emit = "text", modality = "text" }]
)";

class EnginePrePlan : public ::testing::Test {
 protected:
  void SetUp() override { Load({}); }

  // Loads the model with overrides (replacing any engine loaded before), warms it up and adds
  // requests 1, 2 and 3; the counters start from here.
  void Load(const std::vector<std::string>& overrides) {
    engine_.reset();
    engine_ = WarmEngine(kModel, overrides);
    ASSERT_NE(engine_, nullptr);
    log_ = engine_->capture_log();
    ASSERT_NE(log_, nullptr);
    log_->Clear();  // the warmup's captures
    for (RequestId id : {1, 2, 3}) ASSERT_TRUE(engine_->AddRequest(Info(id)).ok());
    kv_ = engine_->runtime().resources().front().get();
    ASSERT_EQ(kv_->label, "kv");
    resets_before_ = Metrics::Global().Counter(Metric("pre_plan.resets"));
    promoted_before_ = Metrics::Global().Counter(Metric("pre_plan.promoted"));
  }

  // An engine of model text with overrides, warmed up (capture: the runtime config's capture
  // options); null after a test failure saying why.
  static std::unique_ptr<Engine> WarmEngine(const std::string& text,
                                            const std::vector<std::string>& overrides,
                                            const CaptureOptions& capture = {}) {
    static const PluginRegistry registry = test::LoadOnly(
        {std::string(MSTAR_BUILD_DIR) + "/lib/mstar/plugins", test::TestPluginDir("cap_kv")});
    ModelParse parse = ParseModelManifestText(text, "preplan.toml", overrides, &registry);
    if (!parse.model.has_value()) {
      ADD_FAILURE() << JoinDiagnostics(parse.diagnostics);
      return nullptr;
    }
    Result<std::unique_ptr<Engine>> engine = Engine::Load(*parse.model, registry);
    if (!engine.ok()) {
      ADD_FAILURE() << engine.status().ToString();
      return nullptr;
    }
    engine.value()->ConfigureCapture(capture);
    if (Status warm = engine.value()->Warmup(); !warm.ok()) {
      ADD_FAILURE() << warm.ToString();
      return nullptr;
    }
    return std::move(engine).value();
  }

  std::string Metric(const char* name) const { return kv_->instance->label() + "." + name; }
  // Staged plans cap_kv dropped in reset_pre_plan, and promoted in plan, since Load.
  int64_t Resets() const {
    return Metrics::Global().Counter(Metric("pre_plan.resets")) - resets_before_;
  }
  int64_t Promoted() const {
    return Metrics::Global().Counter(Metric("pre_plan.promoted")) - promoted_before_;
  }
  // cap_kv's committed tokens plus what admit reserved and no commit or abort_step settled.
  uint64_t KvUsed() {
    mstar_resource_stats_t stats{sizeof(stats), MSTAR_ABI_MINOR, 0, 0, 0, 0};
    std::lock_guard<std::mutex> lock(kv_->mutex);
    mstar_status_t* status = kv_->table()->stats(kv_->instance->self(), &stats);
    EXPECT_TRUE(TakeStatus(status).ok());
    return stats.used_units;
  }

  mstar_request_info_t Info(RequestId id) {
    mstar_request_info_t info{};
    info.struct_size = sizeof(info);
    info.struct_version = MSTAR_ABI_MINOR;
    info.request_id = id;
    info.walk = "decode";
    info.partition = "main";
    info.params = params_.root();
    return info;
  }

  // A prepared decode batch of ids, each with a one-token input.
  ExecutingBatch Batch(const std::vector<RequestId>& ids) {
    ExecutingBatch batch;
    batch.node = engine_->runtime().node("echo")->index;
    batch.node_name = "echo";
    batch.walk = "decode";
    for (RequestId id : ids) {
      StepRequest r;
      r.id = id;
      r.info = Info(id);
      r.inputs = NewTensorMap();
      EXPECT_TRUE(r.inputs->Append("tokens", Int64Tensor({static_cast<int64_t>(id) + 10})).ok());
      batch.requests.push_back(std::move(r));
    }
    engine_->PrepareInputs(batch);
    return batch;
  }

  // Leases a slot and pre-plans into it; the batch keeps the lease.
  void LeaseAndPrePlan(ExecutingBatch& batch) {
    std::optional<SlotLease> lease = engine_->ReserveReplaySlot(batch);
    ASSERT_TRUE(lease.has_value());
    batch.Lease(*lease);
    ASSERT_TRUE(engine_->PrePlanForBatch(batch));
  }

  std::vector<CaptureEvent> Events(CaptureEventKind kind) {
    std::vector<CaptureEvent> out;
    for (const CaptureEvent& e : log_->Events()) {
      if (e.kind == kind) out.push_back(e);
    }
    return out;
  }

  ConfigTree params_;
  std::unique_ptr<Engine> engine_;
  CaptureLog* log_ = nullptr;
  ResourceRuntime* kv_ = nullptr;
  int64_t resets_before_ = 0;
  int64_t promoted_before_ = 0;
};

TEST_F(EnginePrePlan, CapKvPrePlansWithoutASlotFence) {
  int node = engine_->runtime().node("echo")->index;
  EXPECT_TRUE(engine_->CanPrePlan(node));
  EXPECT_FALSE(engine_->NeedsSlotFence(node));
}

// A slot whose batch does not replay is leased again only after the work that read what was
// staged there (the plan's copies, or the batch's eager forward), never the moment the lease
// ends: every release of such a slot is "fenced", whether a resource stages into reused host
// buffers (NEEDS_SLOT_FENCE) or, as an exec-time plan may, into the slot's device buffers.
TEST_F(EnginePrePlan, ASlotWhoseBatchDidNotReplayIsLeasedAgainOnlyAfterItsWorkHasRun) {
  for (bool fence : {true, false}) {
    Load({"resources.kv.config.needs_slot_fence=" + std::string(fence ? "true" : "false")});
    EXPECT_EQ(engine_->NeedsSlotFence(engine_->runtime().node("echo")->index), fence);
    ExecutingBatch dropped = Batch({1, 2, 3});  // pre-planned, then never dispatched
    LeaseAndPrePlan(dropped);
    engine_->ResetPrePlanForBatch(&dropped);
    ExecutingBatch eager = Batch({1});  // leased, then its inputs no longer match the capture
    std::optional<SlotLease> lease = engine_->ReserveReplaySlot(eager);
    ASSERT_TRUE(lease.has_value());
    eager.Lease(*lease);
    eager.requests[0].prepared = NewTensorMap();
    ASSERT_TRUE(eager.requests[0].prepared->Append("tokens", Int64Tensor({1, 2})).ok());
    engine_->Exec(eager);
    EXPECT_TRUE(eager.requests[0].active()) << eager.requests[0].error;
    EXPECT_TRUE(Events(CaptureEventKind::kReplay).empty());
    std::vector<CaptureEvent> releases = Events(CaptureEventKind::kRelease);
    ASSERT_EQ(releases.size(), 2u);
    for (const CaptureEvent& e : releases) EXPECT_EQ(e.reason, "fenced") << e.ToString();
  }
}

TEST_F(EnginePrePlan, ALeaseTakesTheSmallestBucketThatHoldsTheBatch) {
  ExecutingBatch three = Batch({1, 2, 3});
  std::optional<SlotLease> lease = engine_->ReserveReplaySlot(three);
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->rows, 3u);
  EXPECT_EQ(lease->padding, 1u);  // bucket 4
  three.Lease(*lease);
  engine_->Exec(three);
  std::vector<CaptureEvent> replays = Events(CaptureEventKind::kReplay);
  ASSERT_EQ(replays.size(), 1u);
  EXPECT_EQ(replays[0].bucket.batch_size, 4u);
  EXPECT_EQ(replays[0].padding, 1u);
  EXPECT_EQ(Events(CaptureEventKind::kPadding).size(), 1u);
  for (const StepRequest& r : three.requests) {
    ASSERT_TRUE(r.active()) << r.error;
    ASSERT_NE(r.outputs, nullptr);
    EXPECT_EQ(test::Int64Values(*r.outputs, "token"),
              (std::vector<int64_t>{static_cast<int64_t>(r.id) + 10}));
  }
}

TEST_F(EnginePrePlan, PrePlanningNextBatchNeverTakesTheSlotInFlight) {
  ExecutingBatch first = Batch({1, 2});
  LeaseAndPrePlan(first);
  ExecutingBatch second = Batch({1, 2});
  LeaseAndPrePlan(second);
  EXPECT_NE(first.slot, second.slot);
  // Both slots of bucket 2 busy: the next larger bucket takes the batch, padded, while it has a
  // free slot; then nothing does, and the reason says why.
  ExecutingBatch third = Batch({1, 2});
  LeaseAndPrePlan(third);
  EXPECT_EQ(third.lease.padding, 2u);  // bucket 4
  ExecutingBatch fourth = Batch({1, 2});
  LeaseAndPrePlan(fourth);
  EXPECT_EQ(fourth.lease.padding, 2u);
  ExecutingBatch fifth = Batch({1, 2});
  EXPECT_FALSE(engine_->ReserveReplaySlot(fifth).has_value());
  std::vector<CaptureEvent> fallbacks = Events(CaptureEventKind::kEagerFallback);
  ASSERT_FALSE(fallbacks.empty());
  EXPECT_EQ(fallbacks.back().reason, "every slot of the bucket is leased or in flight");
  const int32_t first_slot = first.slot;
  engine_->Exec(first);
  std::optional<SlotLease> freed = engine_->ReserveReplaySlot(fifth);
  ASSERT_TRUE(freed.has_value());
  EXPECT_EQ(freed->slot, first_slot);  // bucket 2 again
  fifth.Lease(*freed);
  for (ExecutingBatch* batch : {&second, &third, &fourth, &fifth}) engine_->Exec(*batch);
  EXPECT_EQ(ExpectNoDoubleLease(log_->Events()), 5u);
  EXPECT_EQ(Events(CaptureEventKind::kReplay).size(), 5u);
}

// On CPU a replay runs the forward over the slot's input buffers: an output that passes an
// input through is copied out, so the next batch loaded into the slot leaves it as it was.
TEST_F(EnginePrePlan, AReplayedOutputOutlivesItsSlotsNextBatch) {
  Load({"nodes.echo.config.pass_tokens=true", "nodes.echo.config.capture_slots=1"});
  ExecutingBatch first = Batch({1});
  LeaseAndPrePlan(first);
  const int32_t slot = first.slot;
  engine_->Exec(first);
  ASSERT_TRUE(first.requests[0].active()) << first.requests[0].error;
  ASSERT_NE(first.requests[0].outputs, nullptr);
  EXPECT_EQ(test::Int64Values(*first.requests[0].outputs, "tokens"), std::vector<int64_t>{11});
  ExecutingBatch second = Batch({2});
  LeaseAndPrePlan(second);
  EXPECT_EQ(second.slot, slot);  // the bucket's only slot, loaded with request 2's input
  engine_->Exec(second);
  ASSERT_TRUE(second.requests[0].active()) << second.requests[0].error;
  EXPECT_EQ(Events(CaptureEventKind::kReplay).size(), 2u);
  EXPECT_EQ(test::Int64Values(*second.requests[0].outputs, "tokens"), std::vector<int64_t>{12});
  EXPECT_EQ(test::Int64Values(*first.requests[0].outputs, "tokens"), std::vector<int64_t>{11});
}

TEST_F(EnginePrePlan, AStalePrePlanIsRedoneBeforeTheReplay) {
  ExecutingBatch ahead = Batch({1, 2});
  LeaseAndPrePlan(ahead);
  EXPECT_FALSE(engine_->PreplanIsStale(ahead));
  // Another step of the same requests commits first: what was staged no longer holds.
  ExecutingBatch now = Batch({1, 2});
  engine_->Exec(now);
  EXPECT_TRUE(engine_->PreplanIsStale(ahead));
  int32_t slot = ahead.slot;
  engine_->Exec(ahead);
  std::vector<CaptureEvent> stale = Events(CaptureEventKind::kStaleReplan);
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_EQ(stale[0].slot, slot);
  EXPECT_NE(stale[0].reason.find("resource 'kv'"), std::string::npos) << stale[0].reason;
  // cap_kv dropped the stale plan (it refuses to plan over one) and promoted nothing.
  EXPECT_EQ(Resets(), 1);
  EXPECT_EQ(Promoted(), 0);
  std::vector<CaptureEvent> replays = Events(CaptureEventKind::kReplay);
  ASSERT_EQ(replays.size(), 1u);
  EXPECT_EQ(replays[0].slot, slot);
  for (const StepRequest& r : ahead.requests) EXPECT_TRUE(r.active()) << r.error;
}

TEST_F(EnginePrePlan, AFreshPrePlanIsNotRedone) {
  ExecutingBatch batch = Batch({1, 2});
  LeaseAndPrePlan(batch);
  engine_->Exec(batch);
  EXPECT_TRUE(Events(CaptureEventKind::kStaleReplan).empty());
  EXPECT_EQ(Events(CaptureEventKind::kReplay).size(), 1u);
  EXPECT_EQ(Promoted(), 1);  // the step's plan took over what was staged
  EXPECT_EQ(Resets(), 0);
  for (const StepRequest& r : batch.requests) EXPECT_TRUE(r.active()) << r.error;
}

TEST_F(EnginePrePlan, ABatchThatChangedIsStale) {
  ExecutingBatch batch = Batch({1, 2});
  LeaseAndPrePlan(batch);
  batch.requests[1].not_ready = true;
  EXPECT_TRUE(engine_->PreplanIsStale(batch));
  engine_->Exec(batch);
  std::vector<CaptureEvent> stale = Events(CaptureEventKind::kStaleReplan);
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_NE(stale[0].reason.find("requests changed"), std::string::npos) << stale[0].reason;
  EXPECT_EQ(Resets(), 1);
  std::vector<CaptureEvent> replays = Events(CaptureEventKind::kReplay);
  ASSERT_EQ(replays.size(), 1u);
  EXPECT_EQ(replays[0].rows, 1u);
  EXPECT_EQ(replays[0].padding, 1u);  // still the bucket it leased
}

// A pre-planned batch whose admission at exec leaves a member out plans afresh for the rest:
// what was staged describes a step with that member (cap_kv refuses a plan over it).
TEST_F(EnginePrePlan, APrePlanIsDroppedWhenAdmissionLeavesAMemberOut) {
  Load({"resources.kv.config.not_ready_at_exec=2"});
  ExecutingBatch batch = Batch({1, 2, 3});
  LeaseAndPrePlan(batch);
  engine_->Exec(batch);
  EXPECT_TRUE(batch.requests[0].active()) << batch.requests[0].error;
  EXPECT_TRUE(batch.requests[1].not_ready);
  EXPECT_TRUE(batch.requests[2].active()) << batch.requests[2].error;
  std::vector<CaptureEvent> stale = Events(CaptureEventKind::kStaleReplan);
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_NE(stale[0].reason.find("admission changed"), std::string::npos) << stale[0].reason;
  EXPECT_EQ(Resets(), 1);
  EXPECT_EQ(Promoted(), 0);
  std::vector<CaptureEvent> replays = Events(CaptureEventKind::kReplay);
  ASSERT_EQ(replays.size(), 1u);
  EXPECT_EQ(replays[0].rows, 2u);
}

// The plan thread pre-plans a batch while the executor runs another step on the same resource:
// the pre-plan's declare waits for that step's commit (cap_kv refuses a pre-plan declared while
// a step is open, as it would replace the step).
TEST_F(EnginePrePlan, APrePlanWaitsForTheStepOpenOnItsResource) {
  Load({"resources.kv.config.exec_plan_sleep_us=100000"});
  const int64_t plans_before = Metrics::Global().Counter(Metric("exec_plans"));
  ExecutingBatch running = Batch({1, 2});
  std::thread executor([&] { engine_->Exec(running); });
  // The executor's step is declared and admitted, and its plan is under way.
  while (Metrics::Global().Counter(Metric("exec_plans")) == plans_before) std::this_thread::yield();
  ExecutingBatch ahead = Batch({3});
  std::optional<SlotLease> lease = engine_->ReserveReplaySlot(ahead);
  ASSERT_TRUE(lease.has_value());
  ahead.Lease(*lease);
  const bool preplanned = engine_->PrePlanForBatch(ahead);
  executor.join();
  EXPECT_TRUE(preplanned);
  for (const StepRequest& r : running.requests) EXPECT_TRUE(r.active()) << r.error;
  engine_->Exec(ahead);
  EXPECT_EQ(Promoted(), 1);
  EXPECT_TRUE(ahead.requests[0].active()) << ahead.requests[0].error;
  EXPECT_EQ(KvUsed(), 3u);  // three one-token steps committed, nothing left reserved
}

TEST_F(EnginePrePlan, ADroppedPrePlanIsResetAndItsSlotReturned) {
  // One slot per bucket: the next lease of bucket 4 takes the same slot, which cap_kv refuses
  // to pre-plan into while it still holds the dropped plan.
  Load({"nodes.echo.config.capture_slots=1"});
  const uint64_t used = KvUsed();
  ExecutingBatch batch = Batch({1, 2, 3});
  LeaseAndPrePlan(batch);
  int32_t slot = batch.slot;
  EXPECT_EQ(KvUsed(), used + 3);  // admit reserved each row's token
  engine_->ResetPrePlanForBatch(&batch);
  EXPECT_EQ(batch.slot, -1);
  EXPECT_FALSE(batch.preplanned);
  EXPECT_EQ(Resets(), 1);
  EXPECT_EQ(KvUsed(), used);  // abort_step gave the reservation back
  std::vector<CaptureEvent> events = log_->Events();
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[events.size() - 2].kind, CaptureEventKind::kReset);
  EXPECT_EQ(events[events.size() - 2].slot, slot);
  EXPECT_EQ(events[events.size() - 2].padding, 1u);  // the padding row goes back too
  EXPECT_EQ(events.back().kind, CaptureEventKind::kRelease);
  EXPECT_EQ(events.back().slot, slot);
  // The reset plan is gone: the same rows lease and plan again without anything stale.
  ExecutingBatch again = Batch({1, 2, 3});
  LeaseAndPrePlan(again);
  EXPECT_EQ(again.slot, slot);
  engine_->Exec(again);
  EXPECT_TRUE(Events(CaptureEventKind::kStaleReplan).empty());
  EXPECT_EQ(ExpectNoDoubleLease(log_->Events()), 2u);
  EXPECT_EQ(Promoted(), 1);
  EXPECT_EQ(Resets(), 1);
  for (const StepRequest& r : again.requests) EXPECT_TRUE(r.active()) << r.error;
}

// Two captured nodes that share a pre-planning resource: their slots have different ids, so what
// the resource stages for one node's slot is never another node's.
TEST_F(EnginePrePlan, NodesSharingAResourceNeverShareASlotId) {
  std::string text = kModel;
  text.insert(text.find("[resources.kv]"), R"([nodes.echo2]
plugin = "echo"
resources = ["kv"]
[nodes.echo2.config]
end_token = 0
batched = true
capture_walks = ["decode2"]
capture_batch_sizes = [1, 2, 4]
)");
  text += R"(
[partitions.second]
initial = "decode2"
[walks.decode2]
partition = "second"
run = { loop = "generate2", max_iterations = 8, body = "echo2" }
inputs = { "echo2.tokens" = "request.prompt" }
edges = [{ from = "echo2.text", emit = "text", modality = "text" }]
)";
  std::unique_ptr<Engine> engine = WarmEngine(text, {});
  ASSERT_NE(engine, nullptr);
  std::map<std::string, std::set<int32_t>> slots;
  for (const CaptureEvent& e : engine->capture_log()->Events()) {
    if (e.kind == CaptureEventKind::kCapture) slots[e.node].insert(e.slot);
  }
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots["echo"].size(), 6u);  // three buckets of two slots
  for (int32_t slot : slots["echo"]) EXPECT_EQ(slots["echo2"].count(slot), 0u) << slot;
}

TEST_F(EnginePrePlan, ABatchWhoseRequestsAllLeftNeverDispatches) {
  const uint64_t used = KvUsed();
  ExecutingBatch batch = Batch({1});
  LeaseAndPrePlan(batch);
  batch.requests[0].skipped = true;
  engine_->Exec(batch);
  EXPECT_EQ(Events(CaptureEventKind::kReset).size(), 1u);
  EXPECT_EQ(Events(CaptureEventKind::kRelease).size(), 1u);
  EXPECT_TRUE(Events(CaptureEventKind::kReplay).empty());
  EXPECT_EQ(Resets(), 1);     // cap_kv dropped the staged plan
  EXPECT_EQ(KvUsed(), used);  // and what its admit reserved came back
}

TEST_F(EnginePrePlan, InputsThatDoNotMatchTheCaptureRunEagerlyOncePerShape) {
  for (int i = 0; i < 3; ++i) {
    ExecutingBatch batch = Batch({1});
    batch.requests[0].prepared = NewTensorMap();  // two tokens where the capture has one
    ASSERT_TRUE(batch.requests[0].prepared->Append("tokens", Int64Tensor({1, 2})).ok());
    EXPECT_FALSE(engine_->ReserveReplaySlot(batch).has_value());
  }
  std::vector<CaptureEvent> fallbacks = Events(CaptureEventKind::kEagerFallback);
  ASSERT_EQ(fallbacks.size(), 1u);
  EXPECT_NE(fallbacks[0].reason.find("shape [2]; the capture has [1]"), std::string::npos)
      << fallbacks[0].reason;
}

// A config split by key replays a batch only when every request's prepared capture key is the
// key the batch was grouped by; otherwise the batch runs eagerly, saying why.
TEST_F(EnginePrePlan, ARequestPreparedWithAnotherCaptureKeyIsNotReplayed) {
  Load({"nodes.echo.config.capture_split_key=0"});
  ExecutingBatch same = Batch({1, 2});
  std::optional<SlotLease> lease = engine_->ReserveReplaySlot(same);
  ASSERT_TRUE(lease.has_value());
  same.Lease(*lease);
  engine_->ResetPrePlanForBatch(&same);
  ExecutingBatch mixed = Batch({1, 2});
  mixed.requests[1].capture_key = 1;  // as prepare_inputs may say
  EXPECT_FALSE(engine_->ReserveReplaySlot(mixed).has_value());
  std::vector<CaptureEvent> fallbacks = Events(CaptureEventKind::kEagerFallback);
  ASSERT_EQ(fallbacks.size(), 1u);
  EXPECT_NE(fallbacks[0].reason.find("a request's prepared capture key 1 is not the batch's 0"),
            std::string::npos)
      << fallbacks[0].reason;
}

// Batches split by capture key only where a graph captured for a key replays the walk: not in
// a walk no capture replays, and not with capture off (the scheduler would group requests for
// nothing, and columnar cohorts would be off).
TEST_F(EnginePrePlan, BatchesSplitByKeyOnlyWhereAKeyedGraphReplays) {
  Load({"nodes.echo.config.capture_split_key=0"});
  const int node = engine_->runtime().node("echo")->index;
  EXPECT_TRUE(engine_->SplitsByCaptureKey(node, "decode"));
  EXPECT_FALSE(engine_->SplitsByCaptureKey(node, "prefill"));

  CaptureOptions off_options;
  off_options.enabled = false;
  std::unique_ptr<Engine> off =
      WarmEngine(kModel, {"nodes.echo.config.capture_split_key=0"}, off_options);
  ASSERT_NE(off, nullptr);
  EXPECT_FALSE(off->SplitsByCaptureKey(node, "decode"));
}

}  // namespace
}  // namespace mstar

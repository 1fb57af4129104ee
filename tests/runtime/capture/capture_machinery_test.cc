// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The capture machinery on its own, with the recording backend and a backend whose fences the
// test completes by hand: bucket choice, slot leasing, padded inputs, fallbacks.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "capture/buckets.h"
#include "capture/capture_backend.h"
#include "capture/fallback_memo.h"
#include "capture/node_captures.h"
#include "capture/padded_inputs.h"
#include "capture/slot_pool.h"
#include "runtime/capture/capture_test_util.h"

namespace mstar {
namespace {

using test::ExpectNoDoubleLease;
using test::Int64Tensor;
using test::Int64Values;

const char* const kDecode[] = {"decode"};
const char* const kPrefill[] = {"prefill"};

mstar_capture_config_t Config(const std::vector<mstar_capture_bucket_t>& buckets, uint32_t flags,
                              const char* const* walks = kDecode) {
  mstar_capture_config_t c{};
  c.struct_size = sizeof(c);
  c.capture_walk = walks[0];
  c.num_replay_walks = 1;
  c.replay_walks = walks;
  c.flags = flags;
  c.num_buckets = static_cast<uint32_t>(buckets.size());
  c.buckets = buckets.data();
  return c;
}

TEST(Buckets, BatchedTakesTheSmallestBatchThatHolds) {
  std::vector<mstar_capture_bucket_t> b = {{8, 8}, {1, 1}, {4, 4}, {2, 2}};
  mstar_capture_config_t c = Config(b, 0);
  EXPECT_EQ(ChooseBucket(c, 1, 1, 1), 1u);
  EXPECT_EQ(ChooseBucket(c, 2, 2, 1), 3u);
  EXPECT_EQ(ChooseBucket(c, 3, 3, 1), 2u);
  EXPECT_EQ(ChooseBucket(c, 5, 5, 1), 0u);
  EXPECT_EQ(ChooseBucket(c, 9, 9, 1), std::nullopt);
  EXPECT_EQ(ChooseBucket(c, 0, 0, 0), std::nullopt);
}

TEST(Buckets, BatchedRowsMustHoldEachRequestsTokens) {
  std::vector<mstar_capture_bucket_t> b = {{4, 4}, {4, 16}};  // 1 and 4 tokens per row
  mstar_capture_config_t c = Config(b, 0);
  EXPECT_EQ(RowTokens(b[1]), 4u);
  EXPECT_EQ(ChooseBucket(c, 3, 3, 1), 0u);
  EXPECT_EQ(ChooseBucket(c, 3, 6, 2), 1u);
  EXPECT_EQ(ChooseBucket(c, 2, 10, 5), std::nullopt);
}

TEST(Buckets, PackedConfigsChooseByTotalTokens) {
  std::vector<mstar_capture_bucket_t> b = {{4, 1024}, {4, 64}, {0, 256}, {16, 64}};
  mstar_capture_config_t c = Config(b, MSTAR_CAPTURE_PACKED, kPrefill);
  EXPECT_EQ(ChooseBucket(c, 2, 60, 50), 1u);    // 64 tokens, batch 4 is the smallest
  EXPECT_EQ(ChooseBucket(c, 8, 60, 10), 3u);    // batch 8 needs the batch-16 bucket
  EXPECT_EQ(ChooseBucket(c, 30, 200, 10), 2u);  // batch size 0: any batch
  EXPECT_EQ(ChooseBucket(c, 2, 1000, 999), 0u);
  EXPECT_EQ(ChooseBucket(c, 2, 2000, 1000), std::nullopt);
}

TEST(Buckets, OnlyReplayWalksOfWholeForwardConfigs) {
  std::vector<mstar_capture_bucket_t> b = {{1, 1}};
  mstar_capture_config_t c = Config(b, 0);
  EXPECT_TRUE(ConfigReplaysWalk(c, "decode"));
  EXPECT_FALSE(ConfigReplaysWalk(c, "prefill"));
  c.region = "block";
  EXPECT_FALSE(ConfigReplaysWalk(c, "decode"));
}

TEST(RecordingBackend, CapturesAreTokensAndFencesCompleteAtOnce) {
  std::unique_ptr<CaptureBackend> backend = MakeRecordingBackend();
  EXPECT_TRUE(backend->replays_eagerly());
  EXPECT_FALSE(backend->EndCapture(nullptr).ok());  // no capture in progress
  ASSERT_TRUE(backend->BeginCapture(nullptr).ok());
  EXPECT_FALSE(backend->BeginCapture(nullptr).ok());  // one at a time
  Result<GraphHandle> graph = backend->EndCapture(nullptr);
  ASSERT_TRUE(graph.ok());
  Result<ExecHandle> exec = backend->Instantiate(graph.value());
  ASSERT_TRUE(exec.ok());
  EXPECT_TRUE(backend->Launch(exec.value(), nullptr).ok());
  EXPECT_FALSE(backend->Launch(nullptr, nullptr).ok());
  Result<FenceHandle> fence = backend->RecordFence(nullptr);
  ASSERT_TRUE(fence.ok());
  EXPECT_TRUE(backend->FenceDone(fence.value()));
  backend->DestroyExec(exec.value());
  backend->DestroyGraph(graph.value());
}

TEST(RecordingBackend, ItsLogIsBounded) {
  std::unique_ptr<CaptureBackend> backend = MakeRecordingBackend(3);
  for (int i = 0; i < 5; ++i) backend->Record(CaptureEvent{});
  EXPECT_EQ(backend->log().Events().size(), 3u);
  EXPECT_EQ(backend->log().dropped(), 2u);
}

// Counts per node keep counting past the bound: a whole forward's replays and a region's apart,
// captures and failed captures; other events count nothing; Clear starts over.
TEST(RecordingBackend, CountsPerNodeOutliveTheBound) {
  std::unique_ptr<CaptureBackend> backend = MakeRecordingBackend(2);
  auto event = [](CaptureEventKind kind, const char* node, const char* region = "") {
    CaptureEvent e;
    e.kind = kind;
    e.node = node;
    e.region = region;
    return e;
  };
  backend->Record(event(CaptureEventKind::kCapture, "lm"));
  backend->Record(event(CaptureEventKind::kCapture, "lm", "mlp.0"));
  for (int i = 0; i < 5; ++i) backend->Record(event(CaptureEventKind::kReplay, "lm"));
  for (int i = 0; i < 3; ++i) backend->Record(event(CaptureEventKind::kReplay, "lm", "mlp.0"));
  backend->Record(event(CaptureEventKind::kCaptureFailed, "codec"));
  backend->Record(event(CaptureEventKind::kLease, "codec"));
  std::map<std::string, CaptureCounts> counts = backend->log().CountsByNode();
  ASSERT_EQ(counts.size(), 2u);
  EXPECT_EQ(counts["lm"].captures, 2u);
  EXPECT_EQ(counts["lm"].replays, 5u);
  EXPECT_EQ(counts["lm"].region_replays, 3u);
  EXPECT_EQ(counts["lm"].failed_captures, 0u);
  EXPECT_EQ(counts["codec"].failed_captures, 1u);
  EXPECT_EQ(counts["codec"].captures + counts["codec"].replays, 0u);
  EXPECT_EQ(backend->log().Events().size(), 2u);
  backend->log().Clear();
  EXPECT_TRUE(backend->log().CountsByNode().empty());
}

TEST(RecordingBackend, HostDevicesGetIt) {
  Result<std::unique_ptr<CaptureBackend>> backend = MakeCaptureBackend(DLDevice{kDLCPU, 0});
  ASSERT_TRUE(backend.ok());
  EXPECT_EQ(backend.value()->name(), "recording");
}

// A recording backend whose fences complete only when the test says so.
class ManualFenceBackend final : public CaptureBackend {
 public:
  ManualFenceBackend() : CaptureBackend(0), inner_(MakeRecordingBackend()) {}
  std::string_view name() const override { return "manual"; }
  bool replays_eagerly() const override { return true; }
  Status BeginCapture(mstar_stream* s) override { return inner_->BeginCapture(s); }
  Result<GraphHandle> EndCapture(mstar_stream* s) override { return inner_->EndCapture(s); }
  Result<ExecHandle> Instantiate(GraphHandle g) override { return inner_->Instantiate(g); }
  Status Launch(ExecHandle e, mstar_stream* s) override { return inner_->Launch(e, s); }
  void DestroyGraph(GraphHandle g) override { (void)g; }
  void DestroyExec(ExecHandle e) override { (void)e; }
  Result<FenceHandle> RecordFence(mstar_stream* s) override {
    (void)s;
    return FenceHandle(reinterpret_cast<void*>(static_cast<uintptr_t>(++next_)));
  }
  bool FenceDone(FenceHandle f) override { return done_.count(f) != 0; }
  void WaitFence(FenceHandle f) override {
    waited_.push_back(f);
    done_.insert(f);
  }
  void DestroyFence(FenceHandle f) override {
    destroyed_.insert(f);
    if (f != nullptr && done_.count(f) == 0) ++destroyed_while_pending_;
  }

  void Complete(FenceHandle f) { done_.insert(f); }
  std::set<FenceHandle> destroyed_;
  std::vector<FenceHandle> waited_;  // every WaitFence, in order
  int destroyed_while_pending_ = 0;  // fences destroyed before they completed or were waited

 private:
  std::unique_ptr<CaptureBackend> inner_;
  uintptr_t next_ = 0;
  std::set<FenceHandle> done_;
};

CaptureEvent Site() {
  CaptureEvent site;
  site.node = "lm";
  site.walk = "decode";
  site.config = 0;
  site.bucket = {4, 4};
  return site;
}

TEST(SlotPool, NoSlotIsLeasedAgainWhileItsReplayIsInFlight) {
  ManualFenceBackend backend;
  SlotPool pool(&backend, Site(), /*first_id=*/10, /*num_slots=*/2);
  std::optional<int32_t> a = pool.Lease(3);
  std::optional<int32_t> b = pool.Lease(4);
  ASSERT_TRUE(a && b);
  EXPECT_NE(*a, *b);
  EXPECT_TRUE(pool.Owns(*a) && pool.Owns(*b));
  EXPECT_EQ(pool.Lease(1), std::nullopt);  // both leased

  FenceHandle fence = backend.RecordFence(nullptr).value();
  pool.Launched(*a, fence);
  EXPECT_EQ(pool.state(*a), CaptureSlot::State::kInFlight);
  EXPECT_EQ(pool.Lease(1), std::nullopt);  // a's replay has not completed

  backend.Complete(fence);
  std::optional<int32_t> again = pool.Lease(2);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *a);
  EXPECT_EQ(backend.destroyed_.count(fence), 1u);  // the pool owns and frees fences

  pool.Release(*b);  // b's batch never dispatched
  EXPECT_EQ(pool.state(*b), CaptureSlot::State::kFree);
  EXPECT_EQ(pool.Lease(1), *b);

  std::vector<CaptureEvent> events = backend.log().Events();
  EXPECT_EQ(ExpectNoDoubleLease(events), 4u);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].kind, CaptureEventKind::kLease);
  EXPECT_EQ(events[0].rows, 3u);
  EXPECT_EQ(events[0].padding, 1u);
}

TEST(SlotPool, ConsecutiveLeasesAlternateSlots) {
  std::unique_ptr<CaptureBackend> backend = MakeRecordingBackend();
  SlotPool pool(backend.get(), Site(), 0, 2);
  std::vector<int32_t> slots;
  for (int i = 0; i < 4; ++i) {
    std::optional<int32_t> slot = pool.Lease(1);
    ASSERT_TRUE(slot);
    slots.push_back(*slot);
    pool.Launched(*slot, backend->RecordFence(nullptr).value());  // CPU: free at once
  }
  EXPECT_EQ(slots, (std::vector<int32_t>{0, 1, 0, 1}));
  EXPECT_EQ(ExpectNoDoubleLease(backend->log().Events()), 4u);
  EXPECT_EQ(backend->log().Count(CaptureEventKind::kRelease), 4u);
}

TEST(SlotPool, DrainWaitsForEveryReplay) {
  ManualFenceBackend backend;
  SlotPool pool(&backend, Site(), 0, 3);
  int32_t a = *pool.Lease(1);
  int32_t b = *pool.Lease(1);
  int32_t leased = *pool.Lease(1);  // leased, never launched: nothing to wait for
  FenceHandle fa = backend.RecordFence(nullptr).value();
  FenceHandle fb = backend.RecordFence(nullptr).value();
  pool.Launched(a, fa);
  pool.Launched(b, fb);
  pool.Drain();
  // Each replay's fence was waited on before its slot was freed (which destroys the fence).
  EXPECT_EQ(backend.waited_, (std::vector<FenceHandle>{fa, fb}));
  EXPECT_EQ(backend.destroyed_while_pending_, 0);
  EXPECT_EQ(backend.destroyed_, (std::set<FenceHandle>{fa, fb}));
  EXPECT_EQ(pool.state(a), CaptureSlot::State::kFree);
  EXPECT_EQ(pool.state(b), CaptureSlot::State::kFree);
  EXPECT_EQ(pool.state(leased), CaptureSlot::State::kLeased);
}

TensorMapPtr Row(const std::vector<int64_t>& tokens) {
  TensorMapPtr map = NewTensorMap();
  EXPECT_TRUE(map->Append("tokens", Int64Tensor(tokens)).ok());
  return map;
}

TEST(PaddedInputs, RealRowsAreCopiedInAndPaddingIsRefilledFromTheTemplate) {
  TensorMapPtr t0 = Row({0, 0});
  TensorMapPtr t1 = Row({7, 7});
  PaddedInputs inputs;
  ASSERT_TRUE(inputs.Init({t0.get(), t1.get(), t0.get()}).ok());
  ASSERT_EQ(inputs.rows(), 3u);
  const mstar_tensor_t* buffer = inputs.row(1)->Find("tokens")->tensors[0];

  TensorMapPtr real = Row({5, 6});
  ASSERT_EQ(inputs.Mismatch(1, *real), "");
  ASSERT_TRUE(inputs.Load(0, *real, nullptr).ok());
  ASSERT_TRUE(inputs.Load(1, *real, nullptr).ok());
  EXPECT_EQ(Int64Values(*inputs.row(1), "tokens"), (std::vector<int64_t>{5, 6}));

  // The next replay has one real row: rows 1 and 2 are padding, refilled from their templates.
  ASSERT_TRUE(inputs.Pad(1, nullptr).ok());
  EXPECT_EQ(Int64Values(*inputs.row(0), "tokens"), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(Int64Values(*inputs.row(1), "tokens"), (std::vector<int64_t>{7, 7}));
  EXPECT_EQ(Int64Values(*inputs.row(2), "tokens"), (std::vector<int64_t>{0, 0}));
  // The static buffer never moves (a captured graph reads its address).
  EXPECT_EQ(inputs.row(1)->Find("tokens")->tensors[0], buffer);

  // The templates are the host's copies: changing the original changes nothing.
  static_cast<int64_t*>(t1->Find("tokens")->tensors[0]->dl.data)[0] = 99;
  ASSERT_TRUE(inputs.Pad(1, nullptr).ok());
  EXPECT_EQ(Int64Values(*inputs.row(1), "tokens"), (std::vector<int64_t>{7, 7}));
}

TEST(PaddedInputs, MismatchesSayWhy) {
  TensorMapPtr t = Row({0});
  PaddedInputs inputs;
  ASSERT_TRUE(inputs.Init({t.get()}).ok());
  TensorMapPtr longer = Row({1, 2, 3});
  EXPECT_NE(inputs.Mismatch(0, *longer).find("shape [3]; the capture has [1]"), std::string::npos)
      << inputs.Mismatch(0, *longer);
  EXPECT_FALSE(inputs.Load(0, *longer, nullptr).ok());
  TensorMapPtr renamed = NewTensorMap();
  ASSERT_TRUE(renamed->Append("ids", Int64Tensor({1})).ok());
  EXPECT_NE(inputs.Mismatch(0, *renamed).find("'tokens' is missing"), std::string::npos);
}

TEST(PaddedInputs, PoisonedRowsAreVisible) {
  TensorMapPtr t = Row({1});
  PaddedInputs inputs;
  ASSERT_TRUE(inputs.Init({t.get()}).ok());
  ASSERT_TRUE(inputs.Fill(0, 0xff).ok());
  EXPECT_EQ(Int64Values(*inputs.row(0), "tokens"), (std::vector<int64_t>{-1}));
  ASSERT_TRUE(inputs.Pad(0, nullptr).ok());
  EXPECT_EQ(Int64Values(*inputs.row(0), "tokens"), (std::vector<int64_t>{1}));
}

// A stable tensor (a resource's pool) is kept by reference: loading never copies it, poisoning a
// slot leaves it alone, and a row matches only when it hands over the same storage.
TEST(PaddedInputs, StableTensorsAreSharedNotCopied) {
  mstar_tensor_t* pool = Int64Tensor({1, 2, 3});
  pool->flags |= MSTAR_TENSOR_FLAG_STABLE;
  TensorMapPtr view = NewTensorMap();
  ASSERT_TRUE(view->Append("kv_pool", pool).ok());
  ASSERT_TRUE(view->Append("table", Int64Tensor({0})).ok());
  PaddedInputs inputs;
  ASSERT_TRUE(inputs.Init({view.get()}).ok());
  const mstar_tensor_t* kept = inputs.row(0)->Find("kv_pool")->tensors[0];
  EXPECT_EQ(kept->dl.data, pool->dl.data);
  EXPECT_NE(inputs.row(0)->Find("table")->tensors[0]->dl.data,
            view->Find("table")->tensors[0]->dl.data);

  ASSERT_TRUE(inputs.Fill(0, 0xff).ok());
  EXPECT_EQ(Int64Values(*view, "kv_pool"), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(Int64Values(*inputs.row(0), "table"), (std::vector<int64_t>{-1}));

  // The next step's view shares the same pool: it loads; the pool's contents are the step's own.
  TensorMapPtr next = NewTensorMap();
  ASSERT_TRUE(next->Append("kv_pool", ShareTensor(pool).value()).ok());
  ASSERT_TRUE(next->Append("table", Int64Tensor({4})).ok());
  ASSERT_EQ(inputs.Mismatch(0, *next), "");
  static_cast<int64_t*>(pool->dl.data)[0] = 9;
  ASSERT_TRUE(inputs.Load(0, *next, nullptr).ok());
  EXPECT_EQ(Int64Values(*inputs.row(0), "kv_pool"), (std::vector<int64_t>{9, 2, 3}));
  EXPECT_EQ(Int64Values(*inputs.row(0), "table"), (std::vector<int64_t>{4}));

  // Another pool of the same shape is not what the capture read.
  mstar_tensor_t* other = Int64Tensor({1, 2, 3});
  other->flags |= MSTAR_TENSOR_FLAG_STABLE;
  TensorMapPtr moved = NewTensorMap();
  ASSERT_TRUE(moved->Append("kv_pool", other).ok());
  ASSERT_TRUE(moved->Append("table", Int64Tensor({4})).ok());
  EXPECT_NE(inputs.Mismatch(0, *moved).find("stable tensor 'kv_pool' is not at the address"),
            std::string::npos)
      << inputs.Mismatch(0, *moved);
  EXPECT_FALSE(inputs.Load(0, *moved, nullptr).ok());
}

TEST(NodeCaptures, ChoosesACapturedBucketAndLogsEachFallbackOnce) {
  std::vector<mstar_capture_bucket_t> b = {{1, 1}, {2, 2}, {4, 4}};
  std::vector<mstar_capture_config_t> configs = {Config(b, 0)};
  std::unique_ptr<CaptureBackend> backend = MakeRecordingBackend();
  NodeCaptures node("lm", &configs, backend.get());
  node.AddPool(0, 0, 2);
  SlotPool* two = node.AddPool(0, 1, 2);
  node.AddPool(0, 2, 3);
  EXPECT_EQ(two->first_id(), 2);  // ids are unique across the node's pools
  EXPECT_EQ(node.PoolOf(3), two);
  EXPECT_EQ(node.PoolOf(7), nullptr);

  std::string reason;
  std::optional<CaptureChoice> choice = node.Choose("decode", 0, 2, 2, 1, &reason);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->bucket, 1u);
  EXPECT_EQ(choice->pool, two);
  EXPECT_FALSE(node.Choose("decode", 0, 5, 5, 1, &reason));
  EXPECT_NE(reason.find("no captured bucket holds 5 requests"), std::string::npos) << reason;
  EXPECT_FALSE(node.Choose("prefill", 0, 1, 9, 9, &reason));
  EXPECT_NE(reason.find("replays no capture"), std::string::npos) << reason;

  // Bucket 2's capture failed: batches of 2 take the next larger captured bucket (4 rows), and
  // with that gone too, no graph.
  node.RemovePool(0, 1);
  choice = node.Choose("decode", 0, 2, 2, 1, &reason);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->bucket, 2u);
  EXPECT_EQ(choice->pool, node.PoolOf(4));
  EXPECT_EQ(node.Choose("decode", 0, 1, 1, 1, &reason)->bucket, 0u);  // still the smallest
  node.RemovePool(0, 2);
  EXPECT_FALSE(node.Choose("decode", 0, 2, 2, 1, &reason));
  EXPECT_NE(reason.find("no captured bucket holds 2 requests"), std::string::npos) << reason;

  EXPECT_TRUE(node.Fallback("decode", 5, 5, "why"));
  EXPECT_FALSE(node.Fallback("decode", 5, 5, "why"));
  EXPECT_TRUE(node.Fallback("decode", 6, 6, "why"));
  EXPECT_EQ(backend->log().Count(CaptureEventKind::kEagerFallback), 2u);
}

// A pool whose templates the batch does not match is passed over for the next larger bucket, in
// its config or the next; when every bucket that holds the batch mismatches, the first mismatch
// is the reason.
TEST(NodeCaptures, ABucketWhoseTemplatesMismatchLeavesTheBatchToTheNextThatMatches) {
  std::vector<mstar_capture_bucket_t> b = {{1, 1}, {2, 2}, {4, 4}};
  std::vector<mstar_capture_config_t> configs = {Config(b, 0), Config(b, 0)};
  std::unique_ptr<CaptureBackend> backend = MakeRecordingBackend();
  NodeCaptures node("lm", &configs, backend.get());
  for (int c = 0; c < 2; ++c) {
    for (uint32_t k = 0; k < 3; ++k) node.AddPool(c, k, 1);
  }
  std::set<std::pair<int, uint32_t>> mismatched;
  auto mismatch = [&](int config, const SlotPool& pool) -> std::string {
    uint32_t bucket = pool.site().bucket.batch_size;
    return mismatched.count({config, bucket}) != 0
               ? "bucket " + std::to_string(bucket) + " of config " + std::to_string(config)
               : "";
  };
  std::string reason;
  mismatched = {{0, 1}};
  std::optional<CaptureChoice> choice = node.Choose("decode", 0, 1, 1, 1, &reason, mismatch);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->config, 0);
  EXPECT_EQ(choice->bucket, 1u);  // 2 rows
  mismatched = {{0, 1}, {0, 2}, {0, 4}};
  choice = node.Choose("decode", 0, 1, 1, 1, &reason, mismatch);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->config, 1);
  EXPECT_EQ(choice->bucket, 0u);
  mismatched = {{0, 2}, {0, 4}, {1, 2}, {1, 4}};
  EXPECT_FALSE(node.Choose("decode", 0, 2, 2, 1, &reason, mismatch));
  EXPECT_EQ(reason.rfind("bucket ", 0), 0u) << reason;
  EXPECT_NE(reason.find("of config 0"), std::string::npos) << reason;
  // Without a predicate every captured bucket matches.
  choice = node.Choose("decode", 0, 2, 2, 1, &reason);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->bucket, 1u);
}

// Each fallback is logged once, and only the first `limit` of them: new shapes keep coming
// with prefill traffic, and the memo must not grow with them.
TEST(FallbackMemo, RemembersEachKeyOnceUpToItsLimit) {
  FallbackMemo<int> memo(2);
  using Seen = FallbackMemo<int>::Seen;
  EXPECT_EQ(memo.Note(1), Seen::kFirst);
  EXPECT_EQ(memo.Note(1), Seen::kAgain);
  EXPECT_EQ(memo.Note(2), Seen::kFirst);
  EXPECT_EQ(memo.Note(3), Seen::kJustFull);
  EXPECT_EQ(memo.Note(4), Seen::kUnrecorded);
  EXPECT_EQ(memo.Note(2), Seen::kAgain);
  EXPECT_EQ(memo.size(), 2u);
  EXPECT_EQ(memo.unrecorded(), 2u);
}

// A PACKED bucket of any batch size is captured with one request: a batch of several whose
// tokens it holds takes the next bucket that holds its requests instead of running eagerly.
TEST(NodeCaptures, ABatchPassesOverAPackedBucketCapturedWithFewerRows) {
  std::vector<mstar_capture_bucket_t> b = {{0, 512}, {8, 1024}};
  std::vector<mstar_capture_config_t> configs = {Config(b, MSTAR_CAPTURE_PACKED)};
  std::unique_ptr<CaptureBackend> backend = MakeRecordingBackend();
  NodeCaptures node("lm", &configs, backend.get());
  node.AddPool(0, 0, 1);
  node.AddPool(0, 1, 1);
  std::string reason;
  EXPECT_EQ(node.Choose("decode", 0, 1, 300, 300, &reason)->bucket, 0u);
  EXPECT_EQ(node.Choose("decode", 0, 4, 300, 100, &reason)->bucket, 1u);
  EXPECT_FALSE(node.Choose("decode", 0, 9, 300, 100, &reason));
  EXPECT_EQ(CapturedRows(b[0]), 1u);
  EXPECT_EQ(CapturedRows(b[1]), 8u);
}

// A config that splits by key replays only batches of its own key; one that does not split
// replays any.
TEST(NodeCaptures, ASplitByKeyConfigReplaysOnlyItsKey) {
  std::vector<mstar_capture_bucket_t> b = {{4, 4}};
  std::vector<mstar_capture_config_t> configs = {Config(b, MSTAR_CAPTURE_SPLIT_BY_KEY)};
  configs[0].capture_key = 3;
  std::unique_ptr<CaptureBackend> backend = MakeRecordingBackend();
  NodeCaptures node("lm", &configs, backend.get());
  node.AddPool(0, 0, 1);
  std::string reason;
  EXPECT_TRUE(node.Choose("decode", 3, 2, 2, 1, &reason));
  EXPECT_FALSE(node.Choose("decode", 0, 2, 2, 1, &reason));
  EXPECT_NE(reason.find("no capture of walk 'decode' is for capture key 0"), std::string::npos)
      << reason;

  configs[0].flags = 0;
  EXPECT_TRUE(node.Choose("decode", 0, 2, 2, 1, &reason));
  EXPECT_TRUE(node.Choose("decode", 7, 2, 2, 1, &reason));
}

}  // namespace
}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Graph capture through the engine on CPU, with the recording backend: the echo plugin given a
// batched forward and capture configurations through its manifest config, and the cap_kv test
// resource where pre-planning matters. Every check reads the capture log.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "config/toml_reader.h"
#include "core/metrics.h"
#include "engine/session.h"
#include "model/model_manifest.h"
#include "runtime/capture/capture_test_util.h"
#include "runtime/engine/engine_harness.h"
#include "support/test_support.h"

namespace mstar {
namespace {

using test::ExpectNoDoubleLease;
using test::LoadOnly;
using test::TestPluginDir;

const PluginRegistry& Registry() {
  static const PluginRegistry registry =
      LoadOnly({std::string(MSTAR_BUILD_DIR) + "/lib/mstar/plugins", TestPluginDir("cap_kv")});
  return registry;
}

// Prefill by node "echo", then a decode loop by decoder (an echo node too).
std::string EchoWalks(const std::string& decoder) {
  return R"(
[partitions.main]
initial = "prefill"
transitions = { prefill = "decode", decode = "done" }
[walks.prefill]
partition = "main"
run = "echo"
inputs = { "echo.tokens" = "request.prompt" }
edges = [
  { from = "echo.token", persist = "last_token" },
  { from = "echo.text", emit = "text", modality = "text", counts_tokens = true },
]
[walks.decode]
partition = "main"
run = { loop = "generate", max_iterations = 256, body = ")" +
         decoder + R"(" }
inputs = { ")" +
         decoder + R"(.tokens" = "persisted.last_token" }
edges = [
  { from = ")" +
         decoder + R"(.token", to = ")" + decoder + R"(.tokens" },
  { from = ")" +
         decoder + R"(.text", emit = "text", modality = "text", counts_tokens = true },
]
)";
}

// The echo model (prefill, then a decode loop) with echo's capture settings and, optionally, a
// cap_kv resource.
std::string EchoModel(const std::string& echo_config, bool with_kv = false) {
  std::string text = R"(
format = 1
[model]
name = "echo_capture"
max_output_tokens = 256
[nodes.echo]
plugin = "echo"
)";
  if (with_kv) text += "resources = [\"kv\"]\n";
  text += "[nodes.echo.config]\nend_token = 0\nbatched = true\n" + echo_config + "\n";
  if (with_kv) text += "[resources.kv]\nplugin = \"cap_kv\"\n";
  return text + EchoWalks("echo");
}

ModelSpec Parse(const std::string& text) {
  ModelParse parse = ParseModelManifestText(text, "capture_test.toml", {}, &Registry());
  EXPECT_TRUE(parse.model.has_value()) << JoinDiagnostics(parse.diagnostics);
  return parse.model ? *parse.model : ModelSpec{};
}

struct CaptureRun {
  std::vector<std::string> texts;  // per prompt
  std::vector<CaptureEvent> events;
  bool logged = false;  // the engine had a capture log
};

// Runs every prompt at once through a session and reads the capture log before it closes.
CaptureRun RunPrompts(const ModelSpec& model, const std::vector<std::string>& prompts,
                      const CaptureOptions& capture = {}) {
  CaptureRun out;
  test::RunOptions options;
  options.session.capture = capture;
  options.together = true;
  options.registry = &Registry();
  options.before_close = [&](Session& session) {
    if (CaptureLog* log = session.engine().capture_log()) {
      out.logged = true;
      out.events = log->Events();
    }
  };
  test::RunOutput run = test::RunAll(model, prompts, options);
  for (const test::Outcome& o : run.outcomes) {
    EXPECT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
    out.texts.push_back(o.text);
  }
  return out;
}

std::vector<CaptureEvent> Only(const std::vector<CaptureEvent>& events, CaptureEventKind kind) {
  std::vector<CaptureEvent> out;
  for (const CaptureEvent& e : events) {
    if (e.kind == kind) out.push_back(e);
  }
  return out;
}

const std::vector<std::string> kPrompts = {"abcdef", "ghijkl", "mnopqr"};

TEST(EngineCapture, WarmupCapturesEveryBucketOnEverySlot) {
  CaptureRun run =
      RunPrompts(Parse(EchoModel("capture_walks = [\"decode\"]\ncapture_batch_sizes = [1, 2, 4]\n"
                                 "capture_slots = 3")),
                 {"a"});
  ASSERT_TRUE(run.logged);
  std::vector<CaptureEvent> captures = Only(run.events, CaptureEventKind::kCapture);
  ASSERT_EQ(captures.size(), 9u);  // 3 buckets x 3 slots
  std::set<int32_t> slots;
  for (const CaptureEvent& e : captures) {
    EXPECT_EQ(e.walk, "decode");
    EXPECT_EQ(e.rows, e.bucket.batch_size);
    slots.insert(e.slot);
  }
  EXPECT_EQ(slots.size(), 9u);  // slot ids are unique across the node's buckets
  EXPECT_EQ(captures.front().bucket.batch_size, 4u);  // largest first
}

// echo runs prefill with the given capture settings; decode is another node's loop.
std::string ElsewhereModel(const std::string& echo_captures) {
  return R"(
format = 1
[model]
name = "capture_elsewhere"
[nodes.echo]
plugin = "echo"
[nodes.echo.config]
end_token = 0
batched = true
)" + echo_captures +
         R"(
[nodes.other]
plugin = "echo"
[nodes.other.config]
end_token = 0
batched = true
)" + EchoWalks("other");
}

// A node whose plugin publishes captures for a walk the node does not run in (here "decode", run
// by another node) loads and runs eagerly: nothing would ever replay such graphs.
TEST(EngineCapture, ACaptureForAWalkTheNodeIsNotInIsSkipped) {
  CaptureRun run = RunPrompts(
      Parse(ElsewhereModel("capture_walks = [\"decode\"]\ncapture_batch_sizes = [1, 2]")),
      kPrompts);
  ASSERT_TRUE(run.logged);
  EXPECT_TRUE(Only(run.events, CaptureEventKind::kCapture).empty());
  EXPECT_EQ(run.texts, RunPrompts(Parse(ElsewhereModel("")), kPrompts).texts);
}

// warmup_runs eager runs before a bucket's first capture, on the slot captured first, and one
// before each further slot's capture, on that slot.
TEST(EngineCapture, EachBucketAndSlotRunsItsStepEagerlyBeforeItsCapture) {
  const ModelSpec model = Parse(EchoModel(
      "capture_walks = [\"decode\"]\ncapture_batch_sizes = [1, 2, 4]\ncapture_slots = 2"));
  for (uint32_t runs : {0u, 1u, 2u}) {
    SCOPED_TRACE("warmup_runs = " + std::to_string(runs));
    CaptureOptions options;
    options.warmup_runs = runs;
    CaptureRun run = RunPrompts(model, {"abc"}, options);
    ASSERT_TRUE(run.logged);
    using BucketSlot = std::pair<uint32_t, int32_t>;
    std::map<BucketSlot, uint32_t> warmups;  // (bucket batch size, slot) -> its warmup runs
    std::map<uint32_t, std::vector<int32_t>> captured;  // bucket -> its slots, in capture order
    for (const CaptureEvent& e : run.events) {
      const uint32_t bucket = e.bucket.batch_size;
      if (e.kind == CaptureEventKind::kWarmupRun) {
        const std::vector<int32_t>& slots = captured[bucket];
        EXPECT_EQ(std::count(slots.begin(), slots.end(), e.slot), 0)
            << "a warmup run after its slot's capture: " << e.ToString();
        EXPECT_EQ(e.rows, bucket);
        ++warmups[{bucket, e.slot}];
      } else if (e.kind == CaptureEventKind::kCapture) {
        captured[bucket].push_back(e.slot);
      }
    }
    for (uint32_t bucket : {1u, 2u, 4u}) {
      ASSERT_EQ(captured[bucket].size(), 2u) << "bucket " << bucket;
      EXPECT_EQ((warmups[{bucket, captured[bucket][0]}]), runs) << "bucket " << bucket;
      EXPECT_EQ((warmups[{bucket, captured[bucket][1]}]), std::min(runs, 1u))
          << "bucket " << bucket;
    }
    EXPECT_EQ(run.texts[0], "abc");
  }
}

TEST(EngineCapture, EachBatchReplaysTheSmallestBucketWithPaddingRows) {
  CaptureRun run = RunPrompts(
      Parse(EchoModel("capture_walks = [\"decode\"]\ncapture_batch_sizes = [1, 2, 4]")), kPrompts);
  ASSERT_TRUE(run.logged);
  std::vector<CaptureEvent> replays = Only(run.events, CaptureEventKind::kReplay);
  ASSERT_FALSE(replays.empty());
  bool padded = false;
  for (const CaptureEvent& e : replays) {
    EXPECT_EQ(e.walk, "decode");
    uint32_t smallest = e.rows <= 1 ? 1 : e.rows <= 2 ? 2 : 4;
    EXPECT_EQ(e.bucket.batch_size, smallest) << e.ToString();
    EXPECT_EQ(e.rows + e.padding, e.bucket.batch_size) << e.ToString();
    padded |= e.padding > 0;
  }
  EXPECT_TRUE(padded) << "three requests decode together: bucket 4 with one padding row";
  // Every replay with padding rows was preceded by filling them (the plan thread may log other
  // slots' events in between).
  for (size_t i = 0; i < run.events.size(); ++i) {
    const CaptureEvent& e = run.events[i];
    if (e.kind != CaptureEventKind::kReplay || e.padding == 0) continue;
    size_t before = i;
    while (before > 0 && run.events[before - 1].slot != e.slot) --before;
    ASSERT_GT(before, 0u) << e.ToString();
    EXPECT_EQ(run.events[before - 1].kind, CaptureEventKind::kPadding) << e.ToString();
    EXPECT_EQ(run.events[before - 1].padding, e.padding);
  }
  EXPECT_EQ(ExpectNoDoubleLease(run.events), replays.size());
  // Prefill replays no capture: it falls back eagerly, logged once per shape.
  std::set<std::tuple<std::string, uint32_t, uint32_t, std::string>> shapes;
  for (const CaptureEvent& e : Only(run.events, CaptureEventKind::kEagerFallback)) {
    EXPECT_TRUE(shapes.insert({e.walk, e.rows, e.bucket.num_tokens, e.reason}).second)
        << "logged twice: " << e.ToString();
    EXPECT_FALSE(e.reason.empty());
  }
}

// A PACKED bucket of any batch size (batch_size 0) is captured with one row: a decode batch of
// several requests fits its tokens but not its rows, so no bucket holds it and it runs eagerly
// (logged), never reading the slot's inputs past the rows it has. A single request whose
// prepared inputs have the bucket's tokens (echo's decode step has one) replays it.
TEST(EngineCapture, APackedBucketOfAnyBatchSizeReplaysOnlyTheRowsItWasCapturedWith) {
  const ModelSpec model =
      Parse(EchoModel("capture_walks = [\"decode\"]\ncapture_packed_tokens = 8", true));
  CaptureRun run = RunPrompts(model, kPrompts);
  ASSERT_TRUE(run.logged);
  ASSERT_EQ(run.texts.size(), kPrompts.size());
  for (size_t i = 0; i < kPrompts.size(); ++i) EXPECT_EQ(run.texts[i], kPrompts[i]);
  bool refused = false;
  for (const CaptureEvent& e : Only(run.events, CaptureEventKind::kEagerFallback))
    refused |= e.rows > 1 && e.reason.find("no captured bucket holds") != std::string::npos;
  EXPECT_TRUE(refused) << "three requests decode together";
  for (const CaptureEvent& e : Only(run.events, CaptureEventKind::kReplay)) EXPECT_EQ(e.rows, 1u);
  CaptureRun alone =
      RunPrompts(Parse(EchoModel("capture_walks = [\"decode\"]\ncapture_packed_tokens = 1", true)),
                 {kPrompts[0]});
  ASSERT_EQ(alone.texts, std::vector<std::string>{kPrompts[0]});
  const std::vector<CaptureEvent> replays = Only(alone.events, CaptureEventKind::kReplay);
  EXPECT_EQ(replays.size(), kPrompts[0].size()) << "every decode step but the end token's";
  for (const CaptureEvent& e : replays) EXPECT_EQ(e.rows, 1u);
}

TEST(EngineCapture, OutputsAreTheSameWithCaptureOnAndOff) {
  ModelSpec model =
      Parse(EchoModel("capture_walks = [\"decode\"]\ncapture_batch_sizes = [1, 2, 4]", true));
  CaptureRun on = RunPrompts(model, kPrompts);
  CaptureOptions off_options;
  off_options.enabled = false;
  CaptureRun off = RunPrompts(model, kPrompts, off_options);
  EXPECT_TRUE(on.logged);
  EXPECT_FALSE(off.logged);  // nothing captured, nothing replayed
  EXPECT_FALSE(Only(on.events, CaptureEventKind::kReplay).empty());
  ASSERT_EQ(on.texts.size(), kPrompts.size());
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    EXPECT_EQ(on.texts[i], kPrompts[i]);
    EXPECT_EQ(on.texts[i], off.texts[i]);
  }
}

TEST(EngineCapture, NoBucketFitsRunsEagerlyAndLogsOncePerShape) {
  CaptureRun run = RunPrompts(
      Parse(EchoModel("capture_walks = [\"decode\"]\ncapture_batch_sizes = [1, 2]")), kPrompts);
  ASSERT_TRUE(run.logged);
  size_t three = 0;
  for (const CaptureEvent& e : Only(run.events, CaptureEventKind::kEagerFallback)) {
    if (e.walk == "decode" && e.rows == 3) {
      ++three;
      EXPECT_NE(e.reason.find("no captured bucket holds 3 requests"), std::string::npos)
          << e.reason;
    }
  }
  EXPECT_EQ(three, 1u);
  for (size_t i = 0; i < kPrompts.size(); ++i) EXPECT_EQ(run.texts[i], kPrompts[i]);
}

// Bucket [1 request, 2 tokens] was captured with rows of 2 tokens; a decode step has 1 token per
// request, so a single request takes bucket [2, 2] (rows of 1 token), padded, not the eager path.
TEST(EngineCapture, ABucketCapturedWithOtherShapesLeavesTheBatchToTheNextThatMatches) {
  const std::string config = "capture_walks = [\"decode\"]\ncapture_buckets = ";
  CaptureRun run = RunPrompts(Parse(EchoModel(config + "[[1, 2], [2, 2]]")), {"abc"});
  ASSERT_TRUE(run.logged);
  EXPECT_EQ(run.texts[0], "abc");
  std::vector<CaptureEvent> replays = Only(run.events, CaptureEventKind::kReplay);
  ASSERT_FALSE(replays.empty());
  for (const CaptureEvent& e : replays) {
    EXPECT_EQ(e.bucket.batch_size, 2u) << e.ToString();
    EXPECT_EQ(e.padding, 1u) << e.ToString();
  }
  for (const CaptureEvent& e : Only(run.events, CaptureEventKind::kEagerFallback))
    EXPECT_NE(e.walk, "decode") << e.ToString();

  // With only the bucket of other shapes, decode runs eagerly and the mismatch is the reason.
  run = RunPrompts(Parse(EchoModel(config + "[[1, 2]]")), {"abc"});
  EXPECT_EQ(run.texts[0], "abc");
  EXPECT_TRUE(Only(run.events, CaptureEventKind::kReplay).empty());
  size_t decode_fallbacks = 0;
  for (const CaptureEvent& e : Only(run.events, CaptureEventKind::kEagerFallback)) {
    if (e.walk != "decode") continue;
    ++decode_fallbacks;
    EXPECT_NE(e.reason.find("'tokens' has shape [1]; the capture has [2]"), std::string::npos)
        << e.reason;
  }
  EXPECT_EQ(decode_fallbacks, 1u);
}

TEST(EngineCapture, AFailedCaptureIsAnErrorAtWarmupNamingWhatFailed) {
  ModelSpec model = Parse(
      EchoModel("capture_walks = [\"decode\"]\ncapture_batch_sizes = [1, 2]\ncapture_fail = true"));
  Result<std::unique_ptr<Session>> session = Session::Open(model, Registry());
  ASSERT_FALSE(session.ok());
  const std::string& message = session.status().message();
  EXPECT_NE(message.find("node 'echo'"), std::string::npos) << message;
  EXPECT_NE(message.find("walk 'decode'"), std::string::npos) << message;
  EXPECT_NE(message.find("batch 2 with 2 tokens"), std::string::npos) << message;
  EXPECT_NE(message.find("capture_fail is set"), std::string::npos) << message;
  EXPECT_NE(message.find("capture.allow_fallback"), std::string::npos) << message;
}

// A dummy request id holds its capture slot's id in 20 bits: captures asking for more slots in all
// (here 4 configs of 4096 buckets of 64 slots) are refused at warmup, before any is captured.
TEST(EngineCapture, MoreCaptureSlotsThanDummyIdsHoldAreRefused) {
  std::string sizes;
  for (int size = 1; size <= 4096; ++size)
    sizes.append(size > 1 ? ", " : "").append(std::to_string(size));
  ModelSpec model = Parse(EchoModel(
      "capture_walks = [\"decode\", \"decode\", \"decode\", \"decode\"]\ncapture_slots = 64\n"
      "capture_batch_sizes = [" +
      sizes + "]"));
  Result<std::unique_ptr<Session>> session = Session::Open(model, Registry());
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.status().message().find("node 'echo': the model's capture configurations ask "
                                            "for 1048576 graph slots"),
            std::string::npos)
      << session.status().ToString();
}

// The eager run before a bucket's first capture is part of that capture: its failure fails warmup
// with the reason, or with allow_fallback leaves only that bucket eager.
TEST(EngineCapture, AFailedWarmupRunFailsItsBucketsCapture) {
  const std::string config =
      "capture_walks = [\"decode\"]\ncapture_batch_sizes = [1, 2]\nfirst_batched_fails = true";
  Result<std::unique_ptr<Session>> session = Session::Open(Parse(EchoModel(config)), Registry());
  ASSERT_FALSE(session.ok());
  const std::string& message = session.status().message();
  EXPECT_NE(message.find("capturing node 'echo' walk 'decode' at batch "), std::string::npos)
      << message;
  EXPECT_NE(message.find("the eager run before the capture"), std::string::npos) << message;
  EXPECT_NE(message.find("first_batched_fails is set"), std::string::npos) << message;
  EXPECT_NE(message.find("capture.allow_fallback"), std::string::npos) << message;

  CaptureOptions options;
  options.allow_fallback = true;
  CaptureRun run = RunPrompts(Parse(EchoModel(config)), kPrompts, options);
  ASSERT_TRUE(run.logged);
  const std::vector<CaptureEvent> failed = Only(run.events, CaptureEventKind::kCaptureFailed);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_NE(failed[0].reason.find("first_batched_fails is set"), std::string::npos)
      << failed[0].reason;
  // The largest bucket (2) warms up first and fails; bucket 1 warms up on each of its two slots
  // (the default) and captures.
  EXPECT_EQ(failed[0].bucket.batch_size, 2u);
  const std::vector<CaptureEvent> warmups = Only(run.events, CaptureEventKind::kWarmupRun);
  ASSERT_EQ(warmups.size(), 2u);
  for (const CaptureEvent& e : warmups) EXPECT_EQ(e.bucket.batch_size, 1u) << e.ToString();
  const std::vector<CaptureEvent> captured = Only(run.events, CaptureEventKind::kCapture);
  EXPECT_FALSE(captured.empty());
  for (const CaptureEvent& e : captured) EXPECT_EQ(e.bucket.batch_size, 1u) << e.ToString();
  for (size_t i = 0; i < kPrompts.size(); ++i) EXPECT_EQ(run.texts[i], kPrompts[i]);
}

// A request's capture key for a walk is asked once, not at every step: each ask waits, under
// the conductor's lock, for the node's forward in flight. Three requests, each decoding its six
// bytes at a node that splits by key: three asks.
TEST(EngineCapture, ARequestsCaptureKeyIsAskedOncePerWalk) {
  ModelSpec model = Parse(EchoModel(
      "capture_walks = [\"decode\"]\ncapture_batch_sizes = [1, 2, 4]\ncapture_split_key = 0"));
  const int64_t before = Metrics::Global().Counter("echo/echo.capture_key_calls");
  CaptureRun run = RunPrompts(model, kPrompts);
  for (size_t i = 0; i < kPrompts.size(); ++i) EXPECT_EQ(run.texts[i], kPrompts[i]);
  EXPECT_FALSE(Only(run.events, CaptureEventKind::kReplay).empty());
  EXPECT_EQ(Metrics::Global().Counter("echo/echo.capture_key_calls") - before,
            static_cast<int64_t>(kPrompts.size()));
}

// A resource that refuses the dummy requests fails every capture after echo prepared its
// dummies: the engine has echo forget them again (cleanup_request; echo itself keeps a request
// only from its first forward, so it would hold nothing either way) and the decode runs eagerly.
TEST(EngineCapture, DummiesAResourceRefusesFailTheCaptureAndTheWalkRunsEagerly) {
  std::string text = EchoModel("capture_walks = [\"decode\"]\ncapture_batch_sizes = [1, 2]", true);
  text.replace(text.find("plugin = \"cap_kv\"\n"), std::string("plugin = \"cap_kv\"\n").size(),
               "plugin = \"cap_kv\"\nconfig = { refuse_dummies = true }\n");
  CaptureOptions options;
  options.allow_fallback = true;
  const int64_t held_before = Metrics::Global().Counter("echo/echo.requests_held");
  CaptureRun run = RunPrompts(Parse(text), kPrompts, options);
  EXPECT_EQ(Metrics::Global().Counter("echo/echo.requests_held"), held_before);
  const std::vector<CaptureEvent> failed = Only(run.events, CaptureEventKind::kCaptureFailed);
  ASSERT_EQ(failed.size(), 2u);
  EXPECT_NE(failed[0].reason.find("cap_kv refuses the dummy requests"), std::string::npos)
      << failed[0].reason;
  for (size_t i = 0; i < kPrompts.size(); ++i) EXPECT_EQ(run.texts[i], kPrompts[i]);
}

// The failed buckets' dummy requests, which their warmup runs made known to echo, are forgotten
// again (cleanup_request) when their pools go: echo holds no request once the prompts are done.
TEST(EngineCapture, AllowFallbackRunsAFailedBucketEagerly) {
  ModelSpec model = Parse(
      EchoModel("capture_walks = [\"decode\"]\ncapture_batch_sizes = [1, 2]\ncapture_fail = true"));
  CaptureOptions options;
  options.allow_fallback = true;
  const int64_t held_before = Metrics::Global().Counter("echo/echo.requests_held");
  CaptureRun run = RunPrompts(model, kPrompts, options);
  EXPECT_EQ(Metrics::Global().Counter("echo/echo.requests_held"), held_before);
  ASSERT_TRUE(run.logged);
  EXPECT_EQ(Only(run.events, CaptureEventKind::kCaptureFailed).size(), 2u);
  EXPECT_TRUE(Only(run.events, CaptureEventKind::kReplay).empty());
  for (size_t i = 0; i < kPrompts.size(); ++i) EXPECT_EQ(run.texts[i], kPrompts[i]);
}

TEST(EngineCapture, PrePlannedBatchesStayOnTheirSlots) {
  CaptureRun run = RunPrompts(
      Parse(EchoModel("capture_walks = [\"decode\"]\ncapture_batch_sizes = [1, 2, 4]", true)),
      kPrompts);
  ASSERT_TRUE(run.logged);
  EXPECT_FALSE(Only(run.events, CaptureEventKind::kPrePlan).empty());
  ExpectNoDoubleLease(run.events);
  // A pre-plan and the replay of its batch share the slot; nothing else leases it in between.
  std::map<int32_t, CaptureEventKind> last;
  for (const CaptureEvent& e : run.events) {
    if (e.slot < 0) continue;
    if (e.kind == CaptureEventKind::kPrePlan) {
      EXPECT_EQ(last[e.slot], CaptureEventKind::kLease) << e.ToString();
    }
    last[e.slot] = e.kind;
  }
  for (size_t i = 0; i < kPrompts.size(); ++i) EXPECT_EQ(run.texts[i], kPrompts[i]);
}

}  // namespace
}  // namespace mstar

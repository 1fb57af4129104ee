// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// tiny_lm through the whole engine (real Session, kv_paged, tiers) against the HF transformers
// references: every prompt of a fixture decoded alone and all of them together in one run (mixed
// prompt lengths, so prefill and decode share batches) gives exactly the reference's greedy
// tokens; and so does a run whose KV pool is forced small with overrides, so the engine offloads
// requests to the host and disk tiers (or the disk alone, or a host tier too small for a request,
// spilling to disk) and reloads them mid-generation.
#include <gtest/gtest.h>

#include "capture/capture_log.h"
#include "core/metrics.h"
#include "plugins/tiny_lm/tiny_lm_harness.h"
#include "runtime/engine/engine_harness.h"

namespace mstar::test {
namespace {

const char* const kModels[] = {"llama_mha_tied", "llama_gqa2_untied", "qwen3_gqa4_untied"};

// The tiny-llm shape (prefill, then a greedy decode loop) over a fixture's weights, emitting the
// tokens (LmWalks). Pages of 4 tokens; the pool is large enough for everything unless overridden.
std::string Manifest(const Reference& r, const std::string& disk_dir) {
  return R"(
format = 1
[model]
name = "tiny_lm_engine"
max_output_tokens = )" +
         std::to_string(r.cases[0].greedy.size()) + R"(
[nodes.lm]
plugin = "tiny_lm"
resources = ["kv"]
[nodes.lm.config]
weights = ")" +
         r.dir + R"("
[resources.kv]
plugin = "kv_paged"
tiers = ["host", "disk"]
[resources.kv.config]
page_size = 4
num_pages = 256
layers = )" +
         std::to_string(r.layers) + "\nkv_heads = " + std::to_string(r.kv_heads) +
         "\nhead_dim = " + std::to_string(r.head_dim) + R"(
dtype = "float32"
[tiers.host]
plugin = "tier_host"
[tiers.host.config]
capacity_bytes = 16777216
[tiers.disk]
plugin = "tier_disk"
[tiers.disk.config]
directory = ")" +
         disk_dir + R"("
)" + LmWalks(64);
}

// The fixture prompts are byte-sized ids, so each is the prompt string of its bytes.
std::string PromptText(const ReferenceCase& c) {
  std::string text;
  for (int64_t id : c.prompt) text.push_back(static_cast<char>(id));
  return text;
}

// Every case's prompt `copies` times, in case order.
std::vector<std::string> Prompts(const Reference& r, int copies) {
  std::vector<std::string> prompts;
  for (int i = 0; i < copies; ++i)
    for (const ReferenceCase& c : r.cases) prompts.push_back(PromptText(c));
  return prompts;
}

void ExpectGreedy(const Reference& r, const RunOutput& run, const std::string& what) {
  ASSERT_EQ(run.outcomes.size() % r.cases.size(), 0u) << what;
  for (size_t i = 0; i < run.outcomes.size(); ++i) {
    const Outcome& o = run.outcomes[i];
    ASSERT_EQ(o.result.end, RequestEnd::kDone)
        << what << " request " << i << ": " << o.result.error;
    auto tokens = o.values.find("tokens");
    ASSERT_NE(tokens, o.values.end()) << what << " request " << i;
    EXPECT_EQ(tokens->second, r.cases[i % r.cases.size()].greedy) << what << " request " << i;
  }
}

class TinyLmEngine : public ::testing::TestWithParam<const char*> {
 protected:
  TempDir disk_;
};

TEST_P(TinyLmEngine, AloneAndBatchedTogetherMatchHf) {
  Reference r = LoadReference(GetParam());
  ModelSpec model = Model(Manifest(r, disk_.path()));
  for (size_t c = 0; c < r.cases.size(); ++c) {
    Reference one = r;
    one.cases = {r.cases[c]};
    ExpectGreedy(one, RunAll(model, Prompts(one, 1)), "alone, case " + std::to_string(c));
  }
  RunOptions together;
  together.together = true;
  RunOutput batched = RunAll(model, Prompts(r, 2), together);
  ExpectGreedy(r, batched, "together");
  // Submitted at once, the requests really did share steps.
  EXPECT_GT(batched.stats.largest_batch["lm"], 1u);
  // Without captures every step is a cohort's columnar step (prefill and decode), with kv_paged
  // declaring, admitting, planning and committing over its rows; the per-request path gives the
  // same tokens.
  EXPECT_EQ(batched.stats.cohort_batches, batched.stats.batches);
  EXPECT_EQ(batched.stats.cohort_handoffs, 0u);
  together.session.conductor.cohorts = false;
  RunOutput per_request = RunAll(model, Prompts(r, 2), together);
  ExpectGreedy(r, per_request, "per request");
  EXPECT_EQ(per_request.stats.cohort_batches, 0u);
}

TEST_P(TinyLmEngine, ForcedSmallKvOffloadsAndReloadsWithIdenticalOutputs) {
  Reference r = LoadReference(GetParam());
  // Each request ends holding its prompt and 11 generated tokens (16, 20 or 24: 4 to 6 pages of
  // 4); the six of them need 30 pages. A pool of 8 holds any one, never all.
  const std::vector<std::string> tight = {"resources.kv.config.num_pages=8"};
  RunOptions together;
  together.together = true;
  RunOutput run = RunAll(Model(Manifest(r, disk_.path()), tight), Prompts(r, 2), together);
  ExpectGreedy(r, run, "num_pages=8");
  EXPECT_GT(run.stats.evictions, 0u);  // and every evicted request was reloaded to finish
  // Cohort members whose next page could not be admitted went on per request.
  EXPECT_GT(run.stats.cohort_handoffs, 0u);

  // The same through the disk tier alone: every offloaded page goes to a file and back.
  std::vector<std::string> disk_only = tight;
  disk_only.push_back("resources.kv.tiers=[\"disk\"]");
  RunOutput disk = RunAll(Model(Manifest(r, disk_.path()), disk_only), Prompts(r, 2), together);
  ExpectGreedy(r, disk, "disk tier only");
  EXPECT_GT(disk.stats.evictions, 0u);

  // A host tier of one page: offloads that do not fit there go on to the disk tier (the host
  // tier's LRU never silently drops a page an offloaded request still needs).
  std::vector<std::string> spill = tight;
  spill.push_back("tiers.host.config.capacity_bytes=" +
                  std::to_string(4 * 2 * r.layers * r.kv_heads * r.head_dim * 4));
  RunOutput spilled = RunAll(Model(Manifest(r, disk_.path()), spill), Prompts(r, 2), together);
  ExpectGreedy(r, spilled, "host tier of one page");
  EXPECT_GT(spilled.stats.evictions, 0u);
}

// Each prompt twice, one request after another: the second copy finds the first's full pages in
// kv_paged's prefix cache (keyed by the token ids the engine hands the resource, not by anything
// the client says), computes only the rest, and still gives exactly the reference's tokens; per
// request and in cohorts (the columnar path hands the ids over too). With the cache off, nothing
// is reused and the tokens are the same.
TEST_P(TinyLmEngine, ASecondRequestWithTheSamePromptReusesItsPagesWithTheReferenceTokens) {
  Reference r = LoadReference(GetParam());
  const std::string hits = "kv_paged/kv.prefix.hit_tokens";
  const std::string prompt_tokens = "kv_paged/kv.prefix.prompt_tokens";
  int64_t expected_hits = 0, all_prompts = 0;  // full pages of 4 before each last token
  for (const ReferenceCase& c : r.cases) {
    expected_hits += (static_cast<int64_t>(c.prompt.size()) - 1) / 4 * 4;
    all_prompts += 2 * static_cast<int64_t>(c.prompt.size());
  }
  for (bool cohorts : {true, false}) {
    const std::string what = cohorts ? "cohorts" : "per request";
    RunOptions one_by_one;
    one_by_one.one_at_a_time = true;
    one_by_one.session.conductor.cohorts = cohorts;
    const int64_t hits_before = Metrics::Global().Counter(hits);
    const int64_t prompts_before = Metrics::Global().Counter(prompt_tokens);
    RunOutput run = RunAll(Model(Manifest(r, disk_.path())), Prompts(r, 2), one_by_one);
    ExpectGreedy(r, run, what);
    EXPECT_EQ(run.stats.cohort_batches > 0, cohorts) << what;
    EXPECT_EQ(Metrics::Global().Counter(hits) - hits_before, expected_hits) << what;
    EXPECT_EQ(Metrics::Global().Counter(prompt_tokens) - prompts_before, all_prompts) << what;
  }
  const int64_t hits_before = Metrics::Global().Counter(hits);
  RunOptions one_by_one;
  one_by_one.one_at_a_time = true;
  ExpectGreedy(r,
               RunAll(Model(Manifest(r, disk_.path()), {"resources.kv.config.prefix_cache=false"}),
                      Prompts(r, 2), one_by_one),
               "prefix cache off");
  EXPECT_EQ(Metrics::Global().Counter(hits), hits_before);
}

// An end token sampled by the prefill ends the request there: no decode loop follows, per request
// and in cohorts. One of the reference's greedy first tokens is made the end token: its request
// sends that token alone; the others, whose tokens never equal it, run as before.
TEST_P(TinyLmEngine, AnEndTokenSampledByThePrefillEndsTheRequest) {
  Reference r = LoadReference(GetParam());
  const ReferenceCase& stopped = r.cases[0];
  const int64_t end = stopped.greedy[0];
  for (bool cohorts : {true, false}) {
    RunOptions options;
    options.together = true;
    options.session.conductor.cohorts = cohorts;
    RunOutput run = RunAll(
        Model(Manifest(r, disk_.path()), {"nodes.lm.config.end_token=" + std::to_string(end)}),
        Prompts(r, 1), options);
    for (size_t i = 0; i < r.cases.size(); ++i) {
      const Outcome& o = run.outcomes[i];
      ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
      std::vector<int64_t> want;
      for (int64_t token : r.cases[i].greedy) {  // up to and with the end token
        want.push_back(token);
        if (token == end) break;
      }
      EXPECT_EQ(o.values.at("tokens"), want) << "case " << i << (cohorts ? " (cohorts)" : "");
    }
    EXPECT_EQ(run.outcomes[0].values.at("tokens").size(), 1u);
  }
}

// The disk tier alone, and its first block write torn (half written, reported done): the reload
// that reads that block gets DATA_LOSS from the tier, so the engine recomputes its request from
// the prompt. The client still gets exactly the reference's tokens, each once; and so does a
// sampled run (temperature 0.8, the request's seed), whose tokens depend on the seed and position
// alone, against the same run with nothing lost. The prefix cache is off: with it, a reload
// takes back the pages still cached since the offload without reading their blocks, and the
// torn block is one of those.
TEST_P(TinyLmEngine, ABlockLostOnDiskIsRecomputedWithTheSameTokens) {
  Reference r = LoadReference(GetParam());
  const std::vector<std::string> torn = {
      "resources.kv.config.num_pages=8", "resources.kv.config.prefix_cache=false",
      "resources.kv.tiers=[\"disk\"]", "tiers.disk.config.faults.truncate_on_write=true"};
  RunOptions together;
  together.together = true;
  RunOutput run = RunAll(Model(Manifest(r, disk_.path()), torn), Prompts(r, 2), together);
  ExpectGreedy(r, run, "a torn block write");
  EXPECT_EQ(run.stats.recomputes, 1u);

  together.params = {"temperature = 0.8", "seed = 7"};
  const std::vector<std::string> clean_disk = {"resources.kv.config.num_pages=8",
                                               "resources.kv.config.prefix_cache=false",
                                               "resources.kv.tiers=[\"disk\"]"};
  RunOutput clean = RunAll(Model(Manifest(r, disk_.path()), clean_disk), Prompts(r, 2), together);
  RunOutput sampled = RunAll(Model(Manifest(r, disk_.path()), torn), Prompts(r, 2), together);
  EXPECT_EQ(sampled.stats.recomputes, 1u);
  ASSERT_EQ(sampled.outcomes.size(), clean.outcomes.size());
  for (size_t i = 0; i < clean.outcomes.size(); ++i) {
    ASSERT_EQ(sampled.outcomes[i].result.end, RequestEnd::kDone)
        << sampled.outcomes[i].result.error;
    EXPECT_EQ(sampled.outcomes[i].values, clean.outcomes[i].values) << "request " << i + 1;
  }
}

// Capture on (on CPU a replay is the eager forward over the slot's padded rows, through the
// static-shape path that a graph would record): decode steps replay on the smallest bucket that
// holds them, padded, with exactly the reference's tokens; a batch over the largest bucket, or a
// context past capture_context (the view's static width), runs eagerly, just as right.
std::vector<std::string> Captured(const std::string& sizes, int context) {
  return {"nodes.lm.config.capture=true", "nodes.lm.config.capture_batch_sizes=" + sizes,
          "resources.kv.config.capture_context=" + std::to_string(context)};
}

struct CapturedRun {
  RunOutput run;
  std::vector<CaptureEvent> events;
  size_t Count(CaptureEventKind kind) const {
    size_t n = 0;
    for (const CaptureEvent& e : events) n += e.kind == kind ? 1 : 0;
    return n;
  }
};

CapturedRun RunCaptured(const ModelSpec& model, const std::vector<std::string>& prompts,
                        RunOptions options = {}) {
  CapturedRun out;
  options.together = true;
  options.before_close = [&](Session& session) {
    if (CaptureLog* log = session.engine().capture_log()) out.events = log->Events();
  };
  out.run = RunAll(model, prompts, options);
  return out;
}

// The fixtures have 128 positions. A request whose sampled token takes position 128 ends there,
// done, with that token output (no step could take it in); a prompt of more than 128 tokens
// fails alone, in prepare_inputs, naming the limit; the others are untouched. In cohorts (one
// columnar step for all), per request, and on capture slots.
TEST_P(TinyLmEngine, AContextReachingTheModelsLastPositionEndsTheRequest) {
  Reference r = LoadReference(GetParam());
  auto digits = [](size_t n) {
    std::string text;
    for (size_t i = 0; i < n; ++i) text.push_back(static_cast<char>('0' + i % 10));
    return text;
  };
  const std::vector<std::string> prompts{digits(126), digits(128), digits(129),
                                         PromptText(r.cases[0])};
  struct Variant {
    const char* what;
    bool cohorts;
    std::vector<std::string> overrides;
  };
  const Variant variants[] = {{"cohorts", true, {}},
                              {"per request", false, {}},
                              {"captured", false, Captured("[1, 2, 4]", 128)}};
  for (const Variant& v : variants) {
    RunOptions options;
    options.together = true;
    options.session.conductor.cohorts = v.cohorts;
    RunOutput run = RunAll(Model(Manifest(r, disk_.path()), v.overrides), prompts, options);
    ASSERT_EQ(run.outcomes.size(), 4u) << v.what;
    for (size_t i : {size_t{0}, size_t{1}, size_t{3}}) {
      ASSERT_EQ(run.outcomes[i].result.end, RequestEnd::kDone)
          << v.what << ", request " << i << ": " << run.outcomes[i].result.error;
    }
    EXPECT_EQ(run.outcomes[0].values.at("tokens").size(), 3u) << v.what;  // positions 126-128
    EXPECT_EQ(run.outcomes[1].values.at("tokens").size(), 1u) << v.what;  // position 128
    EXPECT_EQ(run.outcomes[2].result.end, RequestEnd::kFailed) << v.what;
    EXPECT_NE(run.outcomes[2].result.error.find(
                  "129 input tokens exceed the model's 128 positions (max_position_embeddings)"),
              std::string::npos)
        << v.what << ": " << run.outcomes[2].result.error;
    EXPECT_EQ(run.outcomes[3].values.at("tokens"), r.cases[0].greedy) << v.what;
  }
}

TEST_P(TinyLmEngine, CapturedDecodeReplaysPaddedBucketsWithTheReferenceTokens) {
  Reference r = LoadReference(GetParam());
  // Six requests: bucket 8 with two padding rows, then smaller buckets as requests finish.
  CapturedRun six =
      RunCaptured(Model(Manifest(r, disk_.path()), Captured("[1, 2, 8]", 64)), Prompts(r, 2));
  ExpectGreedy(r, six.run, "captured, buckets 1, 2, 8");
  EXPECT_EQ(six.Count(CaptureEventKind::kCapture), 6u);  // three buckets, two slots each
  EXPECT_GT(six.Count(CaptureEventKind::kReplay), 0u);
  EXPECT_GT(six.Count(CaptureEventKind::kPadding), 0u);
  EXPECT_EQ(six.Count(CaptureEventKind::kCaptureFailed), 0u);

  // No bucket holds six: every decode step falls back to eager, with the same tokens.
  CapturedRun wide =
      RunCaptured(Model(Manifest(r, disk_.path()), Captured("[1, 2]", 64)), Prompts(r, 2));
  ExpectGreedy(r, wide.run, "captured, buckets 1, 2");
  EXPECT_GT(wide.Count(CaptureEventKind::kEagerFallback), 0u);

  // A static width of 8 tokens holds no request's context: the views keep their dynamic width
  // and the replays still give the reference's tokens.
  CapturedRun narrow =
      RunCaptured(Model(Manifest(r, disk_.path()), Captured("[8]", 8)), Prompts(r, 2));
  ExpectGreedy(r, narrow.run, "captured, capture_context 8");
  EXPECT_GT(narrow.Count(CaptureEventKind::kReplay), 0u);

  // And under memory pressure: requests offloaded to the tiers and reloaded between replays (the
  // pool's scratch page for padding rows must not shift where pages are copied from and to).
  std::vector<std::string> tight = Captured("[1, 2, 8]", 64);
  tight.push_back("resources.kv.config.num_pages=8");
  CapturedRun pressed = RunCaptured(Model(Manifest(r, disk_.path()), tight), Prompts(r, 2));
  ExpectGreedy(r, pressed.run, "captured, num_pages=8");
  EXPECT_GT(pressed.run.stats.evictions, 0u);
  EXPECT_GT(pressed.Count(CaptureEventKind::kReplay), 0u);
}

// Each layer's MLP block as a piecewise region of the decode walk, the attention eager around it:
// captured per layer, bucket and slot, replayed for the batch's rows (padded up to the bucket),
// with the reference's tokens.
TEST_P(TinyLmEngine, MlpBlocksAsCapturedRegionsReplayWithTheReferenceTokens) {
  Reference r = LoadReference(GetParam());
  CapturedRun run = RunCaptured(
      Model(Manifest(r, disk_.path()), {"nodes.lm.config.capture_regions=true",
                                        "nodes.lm.config.capture_batch_sizes=[1, 2, 8]"}),
      Prompts(r, 2));
  ExpectGreedy(r, run.run, "MLP blocks as captured regions");
  size_t captures = 0, replays = 0, padded = 0;
  for (const CaptureEvent& e : run.events) {
    if (e.region.rfind("mlp.", 0) != 0) continue;
    captures += e.kind == CaptureEventKind::kCapture ? 1 : 0;
    replays += e.kind == CaptureEventKind::kReplay ? 1 : 0;
    padded += e.kind == CaptureEventKind::kPadding ? 1 : 0;
  }
  EXPECT_GT(captures, 0u);
  EXPECT_EQ(captures % 6, 0u) << "three buckets, two slots each, per layer";
  EXPECT_GT(replays, 0u);
  EXPECT_GT(padded, 0u);
  EXPECT_EQ(run.Count(CaptureEventKind::kCaptureFailed), 0u);
}

// The same on the prefill walk over packed tokens (MSTAR_CAPTURE_PACKED): a prefill step's MLP
// blocks replay the graph of the smallest token bucket holding all its requests' tokens.
TEST_P(TinyLmEngine, PrefillMlpBlocksAsPackedRegionsReplayWithTheReferenceTokens) {
  Reference r = LoadReference(GetParam());
  CapturedRun run = RunCaptured(
      Model(Manifest(r, disk_.path()), {"nodes.lm.config.capture_prefill_tokens=[32, 64, 128]"}),
      Prompts(r, 2));
  ExpectGreedy(r, run.run, "prefill MLP blocks as packed regions");
  size_t captures = 0, replays = 0;
  for (const CaptureEvent& e : run.events) {
    if (e.region.rfind("prefill_mlp.", 0) != 0) continue;
    captures += e.kind == CaptureEventKind::kCapture ? 1 : 0;
    replays += e.kind == CaptureEventKind::kReplay ? 1 : 0;
  }
  EXPECT_GT(captures, 0u);
  EXPECT_EQ(captures % 6, 0u) << "three token buckets, two slots each, per layer";
  EXPECT_GT(replays, 0u);
  EXPECT_EQ(run.Count(CaptureEventKind::kCaptureFailed), 0u);
}

// Without kv_paged's capture_context the view has no padding rows: a padded replay fails its
// forward, the engine retries each request eagerly, and the tokens are still the reference's.
TEST_P(TinyLmEngine, CaptureWithoutAStaticKvWidthStillDecodesRight) {
  Reference r = LoadReference(GetParam());
  CapturedRun run = RunCaptured(
      Model(Manifest(r, disk_.path()),
            {"nodes.lm.config.capture=true", "nodes.lm.config.capture_batch_sizes=[8]"}),
      Prompts(r, 1));
  ExpectGreedy(r, run.run, "capture without capture_context");
  EXPECT_GT(run.Count(CaptureEventKind::kCapture), 0u);
  EXPECT_GT(run.Count(CaptureEventKind::kPadding), 0u) << "a padded replay was tried";
  EXPECT_EQ(run.Count(CaptureEventKind::kReplay), 0u) << "and none succeeded";
}

// Greedy and sampled requests in one run: the greedy ones replay the captured decode and give the
// reference's tokens; the sampled ones (capture key 1, which has no configuration) run eagerly
// beside them, with the tokens of the same requests in a run without capture.
TEST_P(TinyLmEngine, SampledRequestsRunEagerlyBesideCapturedOnesAndMatchAnUncapturedRun) {
  Reference r = LoadReference(GetParam());
  const std::vector<std::string> prompts = Prompts(r, 2);
  RunOptions mixed;
  for (size_t i = 0; i < prompts.size(); ++i) {
    mixed.request_params.push_back(
        i < r.cases.size() ? std::vector<std::string>{}
                           : std::vector<std::string>{"temperature = 0.8", "top_k = 8"});
  }
  RunOutput plain = RunAll(Model(Manifest(r, disk_.path())), prompts, mixed);
  CapturedRun captured =
      RunCaptured(Model(Manifest(r, disk_.path()), Captured("[1, 2, 4, 8]", 64)), prompts, mixed);
  ASSERT_EQ(plain.outcomes.size(), captured.run.outcomes.size());
  for (size_t i = 0; i < plain.outcomes.size(); ++i) {
    const Outcome& o = captured.run.outcomes[i];
    ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
    EXPECT_EQ(o.values, plain.outcomes[i].values) << "request " << i;
    if (i < r.cases.size()) {
      auto tokens = o.values.find("tokens");
      ASSERT_NE(tokens, o.values.end()) << "request " << i;
      EXPECT_EQ(tokens->second, r.cases[i].greedy) << "greedy request " << i;
    }
  }
  EXPECT_GT(captured.Count(CaptureEventKind::kReplay), 0u) << "the greedy requests' decode";
  EXPECT_GT(captured.Count(CaptureEventKind::kEagerFallback), 0u) << "the sampled requests'";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TinyLmEngine, ::testing::ValuesIn(kModels));

// A KV pool sized for another model fails the request with the kv_paged config keys to change
// and the model's values (not only the pool's shape).
TEST(TinyLmEngineKv, APoolOfAnotherShapeNamesTheResourceKeysAndTheModelsValues) {
  const Reference r = LoadReference("llama_gqa2_untied");
  TempDir disk;
  RunOutput run = RunAll(Model(Manifest(r, disk.path()),
                               {"resources.kv.config.layers=" + std::to_string(r.layers + 1),
                                "resources.kv.config.head_dim=" + std::to_string(r.head_dim * 2)}),
                         {PromptText(r.cases[0])});
  const Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.result.end, RequestEnd::kFailed);
  const std::string layers = std::to_string(r.layers), head_dim = std::to_string(r.head_dim);
  EXPECT_NE(
      o.result.error.find(
          "layers " + std::to_string(r.layers + 1) + ", the model's " + layers +
          " (num_hidden_layers in config.json): set "
          "resources.kv.config.layers = " +
          layers + "; head_dim " + std::to_string(r.head_dim * 2) + ", the model's " + head_dim +
          " (head_dim in config.json): set resources.kv.config.head_dim = " + head_dim),
      std::string::npos)
      << o.result.error;
}

}  // namespace
}  // namespace mstar::test

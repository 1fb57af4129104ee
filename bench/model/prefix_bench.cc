// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// What kv_paged's prefix cache saves through the whole engine (a Session over tiny_lm and
// kv_paged, LibTorch on CPU), measured side by side in one run:
//   model.prefix.ttft        the time from submitting a request to its first token, when its
//                            prompt (--prefix shared tokens, then 16 of its own) shares the
//                            prefix with a request that finished just before, with the prefix
//                            cache on (the figure) and off (the baseline): the best round of
//                            each. Target: at most 0.5 of the baseline at a 496-token prefix.
//   model.prefix.ttft_paired the median over rounds of the two back-to-back runs' ratio, with its
//                            95% confidence interval in the note.
//   model.prefix.hit_tokens  prompt tokens the cache spared each timed request (the engine's
//                            counter kv_paged/kv.prefix.hit_tokens over the rounds), beside the
//                            whole prompt (diagnostic).
// Both sides run the same model in two Sessions that differ only in the cache's switch; the
// sides take turns going first. Each round's request has a suffix of its own, so only the shared
// prefix can hit. Its first token must be the same on both sides, or the benchmark fails.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "common/bench.h"
#include "common/built_plugins.h"
#include "core/logging.h"
#include "core/metrics.h"
#include "engine/session.h"
#include "model/model_manifest.h"
#include "plugin/registry.h"

namespace mstar {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int rounds = 15;
  int prefix = 496;  // shared prompt tokens (bytes)
  std::string weights = MSTAR_BENCH_WEIGHTS_DIR;
};

// A prefill-only model: the first token is the whole answer.
std::string Manifest(const Options& o) {
  return "format = 1\n[model]\nname = \"tiny-llm-prefix\"\nmax_output_tokens = 1\n"
         "[nodes.lm]\nplugin = \"tiny_lm\"\nresources = [\"kv\"]\n[nodes.lm.config]\n"
         "weights = \"" +
         o.weights +
         "\"\nend_token = -1\n[resources.kv]\nplugin = \"kv_paged\"\n[resources.kv.config]\n"
         "page_size = 16\nnum_pages = 512\nlayers = 2\nkv_heads = 2\nhead_dim = 16\n"
         "dtype = \"float32\"\n"
         R"([partitions.main]
initial = "prefill"
transitions = { prefill = "done" }
[walks.prefill]
partition = "main"
run = "lm"
inputs = { "lm.tokens" = "request.prompt" }
edges = [{ from = "lm.tokens", emit = "tokens", modality = "tokens", counts_tokens = true }]
)";
}

// The shared prefix: prefix bytes of a fixed text; then 16 bytes of the request's own.
std::string Prompt(const Options& o, const std::string& own) {
  std::string p;
  while (static_cast<int>(p.size()) < o.prefix)
    p.push_back(static_cast<char>('a' + (p.size() * 7 + p.size() / 26) % 26));
  std::string tail = own;
  tail.resize(16, '.');
  return p + tail;
}

struct Answer {
  double seconds = 0;  // from submission to the request's end (its first and only token)
  std::vector<int64_t> tokens;
};

Answer Ask(Session& session, const std::string& prompt) {
  static RequestId next_id = 1;  // one at a time: each request ends before the next
  auto stream = std::make_shared<RequestStream>(next_id++);
  Answer answer;
  stream->SetCallbacks(
      [&answer](const OutputChunk& c) {
        answer.tokens.insert(answer.tokens.end(), c.values.begin(), c.values.end());
      },
      nullptr);
  SubmitSpec spec;
  spec.prompt = prompt;
  spec.stream = stream;
  const Clock::time_point start = Clock::now();
  MSTAR_CHECK(session.Submit(std::move(spec)).ok());
  MSTAR_CHECK(stream->Wait().end == RequestEnd::kDone);
  answer.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return answer;
}

int Usage(bool asked = false) {
  (asked ? std::cout : std::cerr)
      << "usage: prefix_bench [--rounds N] [--prefix N] [--weights DIR]\n"
         "  --rounds N   timed rounds (default 15)\n"
         "  --prefix N   prompt tokens the requests share, 16 to 1900 (default 496)\n"
         "  --weights D  tiny_lm weights (default: the build's, made when missing)\n";
  return asked ? 0 : 2;
}

int Run(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--rounds" && has_value) {
      o.rounds = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--prefix" && has_value) {
      o.prefix = std::clamp(std::atoi(argv[++i]), 16, 1900);
    } else if (arg == "--weights" && has_value) {
      o.weights = argv[++i];
    } else if (arg == "--help" || arg == "-h") {
      return Usage(true);
    } else {
      return Usage();
    }
  }
  Log().set_level(spdlog::level::warn);
  if (!bench::MakeTinyWeightsIfMissing(o.weights, MSTAR_MAKE_TINY_WEIGHTS)) return 1;
  PluginRegistry registry = bench::LoadBuiltPlugins({"tiny_lm", "kv_paged"});
  std::unique_ptr<Session> sides[2];  // [0]: cache on, [1]: off
  for (int side = 0; side < 2; ++side) {
    ModelParse model =
        ParseModelManifestText(Manifest(o), "prefix_bench.toml",
                               {side == 0 ? "resources.kv.config.prefix_cache=true"
                                          : "resources.kv.config.prefix_cache=false"},
                               &registry);
    if (!model.model) {
      std::cerr << JoinDiagnostics(model.diagnostics) << "\n";
      return 1;
    }
    auto session = Session::Open(*model.model, registry, SessionOptions{});
    if (!session.ok()) {
      std::cerr << session.status().ToString() << "\n";
      return 1;
    }
    sides[side] = std::move(*session);
  }
  std::cerr << "prefix_bench: tiny_lm (" << o.weights << "), prompts of " << o.prefix
            << " shared + 16 own tokens, " << o.rounds << " rounds\n";
  const std::string hits = "kv_paged/kv.prefix.hit_tokens";
  std::vector<double> seconds[2], paired;
  int64_t timed_hits = 0;
  // Round -1 warms both sides up (first allocations, LibTorch's first calls) and is not timed.
  for (int round = -1; round < o.rounds; ++round) {
    Answer timed[2];
    for (int k = 0; k < 2; ++k) {
      const int side = (round + k) % 2 == 0 ? 0 : 1;  // the sides take turns going first
      Session& session = *sides[side];
      Ask(session, Prompt(o, "first " + std::to_string(round)));  // leaves the prefix cached
      const int64_t hits_before = Metrics::Global().Counter(hits);
      timed[side] = Ask(session, Prompt(o, "second " + std::to_string(round)));
      if (side == 0 && round >= 0) timed_hits += Metrics::Global().Counter(hits) - hits_before;
    }
    if (timed[0].tokens != timed[1].tokens) {
      std::cerr << "prefix_bench: the first token differs with the cache on and off\n";
      return 1;
    }
    if (round < 0) continue;
    for (int side = 0; side < 2; ++side) seconds[side].push_back(timed[side].seconds);
    paired.push_back(timed[0].seconds / timed[1].seconds);
  }
  for (auto& side : sides) side->Close();
  const double best_on = *std::min_element(seconds[0].begin(), seconds[0].end());
  const double best_off = *std::min_element(seconds[1].begin(), seconds[1].end());
  const std::string target = "ratio <= 0.5 at a 496-token prefix";
  bench::Emit({"model.prefix.ttft", best_on * 1e3, "ms", best_off * 1e3, target});
  const bench::MedianInterval ratio = bench::MedianWithInterval(paired);
  char note[96];
  std::snprintf(note, sizeof(note), "95%% CI %.3f-%.3f over %zu rounds", ratio.low, ratio.high,
                paired.size());
  bench::Emit({"model.prefix.ttft_paired", ratio.median, "on/off", 1.0,
               "median of the rounds' ratios: " + target},
              note);
  bench::Emit({"model.prefix.hit_tokens", static_cast<double>(timed_hits) / o.rounds,
               "tokens/request", static_cast<double>(o.prefix + 16), "diagnostic"});
  return 0;
}

}  // namespace
}  // namespace mstar

int main(int argc, char** argv) {
  return mstar::Run(argc, argv);
}

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Decode throughput of the tiny LLM (tiny_lm + kv_paged, LibTorch on CPU) at 1, 8 and 32
// concurrent requests, in one run:
//   model.decode.cN   decode tokens/s through the engine (a Session: scheduler, plan/exec/finish
//                     threads, continuous batching, client streams), beside a bare loop that calls
//                     the same plugins directly on the same batches (BareLm): the tokens after each
//                     request's first, over the time from a round's first token to its last (the
//                     engine: as its clients' callbacks see them; the bare loop: the ends of its
//                     first and last steps). Target: the ratio is at least 0.95.
//   model.decode_paired.cN  the median over rounds of bare time / engine time for the same
//                     span, each round's two runs back to back (the engine first in even rounds,
//                     the bare loop first in odd ones): less at the mercy of one lucky run than
//                     best-of figures on a shared machine. Its note gives the median's 95%
//                     confidence interval. Target: at least 0.95.
//   model.round.cN, model.round_paired.cN  the same two figures over whole rounds: from the first
//                     submission until every client's Wait has returned (the bare loop: until its
//                     requests are removed), so with each round's start (model.first_token) and
//                     the clients' wakes at the end: request throughput of an idle engine, reported.
//   model.host_per_step.cN  the median over rounds of each side's host time per step (wall time
//                     outside its forward calls, per step), engine beside bare loop: what the engine
//                     adds, without the forward's own drift on a shared machine (diagnostic).
//   model.forward_per_step.cN  the median over rounds of each side's time per step inside its
//                     forward calls, engine beside bare loop (diagnostic).
//   model.first_token.cN  the median over rounds of the time from a round's start to its first
//                     token at a client (the bare loop: to the end of its first step) (diagnostic).
//   model.hf.cN       tokens/s of HF transformers' generate() on the same weights and batches
//                     (the engine's whole rounds as the figure), when a Python with torch and
//                     transformers is given (--hf-python or MSTAR_HF_PYTHON); skipped otherwise.
// Every request generates exactly --tokens tokens (the end token is disabled) from its own prompt;
// the engine's tokens must equal the bare loop's (both greedy), or the benchmark fails. Each
// concurrency level runs rounds, engine and bare loop alternating, until both sides together have
// run --seconds (default 4) and at least 15 rounds have passed (--rounds N: exactly N rounds); the
// best-of figures are each side's best round, the paired ones medians over rounds. One Session per
// concurrency level serves all its rounds, as BareLm's instances serve all of theirs, so neither
// side pays for cold instances (fresh KV pool pages, workspaces) in the rounds that count.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/bench.h"
#include "common/built_plugins.h"
#include "core/logging.h"
#include "engine/session.h"
#include "model/bare_lm.h"
#include "model/model_manifest.h"
#include "plugin/registry.h"

namespace mstar {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<uint32_t> concurrency;
  uint32_t tokens = 64;
  // Best-of needs enough rounds for each side to meet a quiet moment on a shared machine: with 5,
  // one side often had none (paired per-round ratios then spread from 0.6 to 1.4). Paired medians
  // need more: per-round ratios at 1 request spread by about 0.05 on the shared 2-core machine,
  // so a median of 15 moved by about 0.015 from run to run; a time budget gives short rounds
  // (1 request: about 20 ms a round) a couple of hundred samples and long ones (32) a few dozen.
  int rounds = 15;     // the least number of rounds; exactly this many when seconds is 0
  double seconds = 4;  // the least time, both sides together, per concurrency level
  std::string weights = MSTAR_BENCH_WEIGHTS_DIR;
  std::string hf_python;
  bool engine_only = false;  // for profiling: no bare loop, no ratio
  bool bare_only = false;    // for profiling: no engine, no ratio
  bool trace = false;        // each round's times on stderr
  int idle_spin_us = -1;     // the engine's PipelineOptions::idle_spin; -1: its default
};

std::string LmConfig(const Options& o) {
  return "weights = \"" + o.weights + "\"\nend_token = -1\n";
}
// 32 requests of at most 24 + 64 tokens need 192 pages of 16; no request ever waits for pages.
const char* kKvConfig =
    "page_size = 16\nnum_pages = 1024\nlayers = 2\nkv_heads = 2\nhead_dim = 16\n"
    "dtype = \"float32\"\n";

std::string Manifest(const Options& o) {
  return "format = 1\n[model]\nname = \"tiny-llm-bench\"\nmax_output_tokens = " +
         std::to_string(o.tokens) + "\n[nodes.lm]\nplugin = \"tiny_lm\"\nresources = [\"kv\"]\n" +
         "[nodes.lm.config]\n" + LmConfig(o) + "[resources.kv]\nplugin = \"kv_paged\"\n" +
         "[resources.kv.config]\n" + kKvConfig + R"(
[partitions.main]
initial = "prefill"
transitions = { prefill = "decode", decode = "done" }
[walks.prefill]
partition = "main"
run = "lm"
inputs = { "lm.tokens" = "request.prompt" }
edges = [{ from = "lm.tokens", persist = "last" },
         { from = "lm.tokens", emit = "tokens", modality = "tokens", counts_tokens = true }]
[walks.decode]
partition = "main"
run = { loop = "generate", max_iterations = 100000, body = "lm" }
inputs = { "lm.tokens" = "persisted.last" }
edges = [{ from = "lm.tokens", to = "lm.tokens" },
         { from = "lm.tokens", emit = "tokens", modality = "tokens", counts_tokens = true }]
)";
}

// Distinct prompts of different lengths (8 to 23 bytes), so no two requests share a prefix.
std::vector<std::string> Prompts(uint32_t count) {
  std::vector<std::string> prompts;
  for (uint32_t i = 0; i < count; ++i) {
    std::string p = "request " + std::to_string(i) + ":";
    while (p.size() < 8 + (i * 5) % 16) p.push_back(static_cast<char>('a' + (i + p.size()) % 26));
    prompts.push_back(p);
  }
  return prompts;
}

// A round's times, in seconds from its start: to its first token, to its last token, and to
// its end (every request finished and handed back).
struct RoundTimes {
  double first_token_s = 0;
  double last_token_s = 0;
  double end_s = 0;

  double decode_s() const { return last_token_s - first_token_s; }
};

double SecondsSince(Clock::time_point start, Clock::time_point t) {
  return std::chrono::duration<double>(t - start).count();
}

// Runs the prompts through session; tokens receives each request's tokens. The first and last
// tokens are timed as the clients' callbacks see them (on the engine's delivering thread), the
// end when every client's Wait has returned. The session lives across rounds, as a serving
// engine does (and as BareLm's instances do).
RoundTimes EngineRun(Session& session, const std::vector<std::string>& prompts,
                     std::vector<std::vector<int64_t>>* tokens) {
  tokens->assign(prompts.size(), {});
  std::vector<std::shared_ptr<RequestStream>> streams;
  std::vector<SubmitSpec> specs;
  const Clock::time_point start = Clock::now();
  // Written by the engine's delivering threads, read after every stream has ended.
  std::atomic<int64_t> first_ns{-1}, last_ns{-1};
  auto since_start = [start] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  };
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto stream = std::make_shared<RequestStream>(i + 1);
    std::vector<int64_t>* out = &(*tokens)[i];
    stream->SetCallbacks(
        [out, &first_ns, &since_start](const OutputChunk& c) {
          if (first_ns.load(std::memory_order_relaxed) < 0)
            first_ns.store(since_start(), std::memory_order_relaxed);
          out->insert(out->end(), c.values.begin(), c.values.end());
        },
        [&last_ns, &since_start](const RequestResult&) {
          const int64_t now = since_start();
          int64_t seen = last_ns.load(std::memory_order_relaxed);
          while (seen < now &&
                 !last_ns.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
          }
        });
    SubmitSpec spec;
    spec.prompt = prompts[i];
    spec.stream = stream;
    specs.push_back(std::move(spec));
    streams.push_back(stream);
  }
  for (auto& submitted : session.SubmitAll(std::move(specs))) MSTAR_CHECK(submitted.ok());
  for (auto& stream : streams) MSTAR_CHECK(stream->Wait().end == RequestEnd::kDone);
  RoundTimes times;
  times.end_s = SecondsSince(start, Clock::now());
  times.first_token_s = static_cast<double>(first_ns.load(std::memory_order_relaxed)) * 1e-9;
  times.last_token_s = static_cast<double>(last_ns.load(std::memory_order_relaxed)) * 1e-9;
  return times;
}

// Where a side's clocks stand: nanoseconds inside forward calls and steps run, so far.
struct HostClock {
  uint64_t forward_ns = 0;
  uint64_t steps = 0;
};

HostClock EngineClock(Session& session) {
  return HostClock{session.engine().timings().forward_ns, session.stats().batches};
}

// Microseconds per step inside and outside the forward calls, over a run of `seconds` between
// two clocks.
struct PerStep {
  double forward_us = 0;
  double host_us = 0;
};
PerStep UsPerStep(double seconds, const HostClock& before, const HostClock& after) {
  const auto steps = static_cast<double>(std::max<uint64_t>(after.steps - before.steps, 1));
  const double forward_s = static_cast<double>(after.forward_ns - before.forward_ns) * 1e-9;
  return PerStep{forward_s * 1e6 / steps, (seconds - forward_s) * 1e6 / steps};
}

// One side's figures over a concurrency level's rounds.
struct SideRounds {
  double best_round_s = 1e9;       // the fastest whole round
  double best_decode_s = 1e9;      // the fastest first-to-last-token span
  std::vector<double> host_us;     // per round: time per step outside the forward calls
  std::vector<double> forward_us;  // inside them
  std::vector<double> first_us;    // to the first token

  void Add(const RoundTimes& times, const PerStep& per_step) {
    best_round_s = std::min(best_round_s, times.end_s);
    best_decode_s = std::min(best_decode_s, times.decode_s());
    host_us.push_back(per_step.host_us);
    forward_us.push_back(per_step.forward_us);
    first_us.push_back(times.first_token_s * 1e6);
  }
};

// "95% CI 0.962-0.975 over 180 rounds"
std::string FormatInterval(const bench::MedianInterval& interval, size_t rounds) {
  char text[96];
  std::snprintf(text, sizeof text, "95%% CI %.3f-%.3f over %zu rounds", interval.low, interval.high,
                rounds);
  return text;
}

// Runs the prompts through the bare loop (tokens into *out), timed as EngineRun's: the first and
// last tokens at the ends of its first and last steps, the end when its requests are removed.
RoundTimes BareRun(bench::BareLm& bare, const std::vector<std::string>& prompts, uint32_t tokens,
                   std::vector<std::vector<int64_t>>* out) {
  const Clock::time_point start = Clock::now();
  *out = bare.Generate(prompts, tokens);
  RoundTimes times;
  times.end_s = SecondsSince(start, Clock::now());
  times.first_token_s = SecondsSince(start, bare.first_step_end());
  times.last_token_s = SecondsSince(start, bare.last_step_end());
  return times;
}

// tokens/s of HF generate() on the same prompts (greedy, no early stop); 0 when unavailable.
double HfRun(const Options& o, uint32_t concurrency) {
  if (o.hf_python.empty()) return 0;
  std::string command = "'" + o.hf_python + "' '" + MSTAR_BENCH_SOURCE_DIR +
                        "/model/hf_generate.py' --weights '" + o.weights + "' --concurrency " +
                        std::to_string(concurrency) + " --tokens " + std::to_string(o.tokens) +
                        " --rounds " + std::to_string(o.rounds);
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return 0;
  std::string text;
  char buffer[512];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) text.append(buffer, n);
  if (pclose(pipe) != 0) {
    std::cerr << "  HF generate failed (" << command << ")\n";
    return 0;
  }
  return nlohmann::json::parse(text, nullptr, false).value("tokens_per_s", 0.0);
}

// Prints the usage; returns the exit status for it (0 when asked for with --help).
int Usage(bool asked = false) {
  (asked ? std::cout : std::cerr)
      << "usage: model_bench [--concurrency N]... [--tokens N] [--seconds S] [--rounds N]\n"
         "                   [--weights DIR] [--hf-python PATH] [--engine-only | --bare-only]\n"
         "                   [--trace] [--idle-spin-us N]\n"
         "  --concurrency N  requests at once (repeatable; default 1, 8 and 32)\n"
         "  --tokens N       tokens each request generates (default 64)\n"
         "  --seconds S      run each concurrency level until both sides together have run S\n"
         "                   seconds and at least 15 rounds have passed (default 4)\n"
         "  --rounds N       exactly N rounds a level (with --seconds: at least N)\n"
         "  --engine-only, --bare-only  one side alone, for profiling (no ratios)\n"
         "  --trace          each round's times on stderr\n"
         "  --idle-spin-us N how long the engine's executor polls for work before it sleeps\n"
         "                   (default: the engine's, as the runtime config's engine.idle_spin_us)\n"
         "  --hf-python PATH (or MSTAR_HF_PYTHON) a Python with torch and transformers, to put\n"
         "                   HF generate() beside the engine on the same weights\n";
  return asked ? 0 : 2;
}

}  // namespace
}  // namespace mstar

int main(int argc, char** argv) {
  using namespace mstar;
  Options o;
  bool seconds_given = false;
  if (const char* python = std::getenv("MSTAR_HF_PYTHON")) o.hf_python = python;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool has_value = i + 1 < argc;
    if (arg == "--concurrency" && has_value) {
      o.concurrency.push_back(static_cast<uint32_t>(std::atoi(argv[++i])));
    } else if (arg == "--tokens" && has_value) {
      o.tokens = static_cast<uint32_t>(std::max(2, std::atoi(argv[++i])));
    } else if (arg == "--rounds" && has_value) {
      o.rounds = std::max(1, std::atoi(argv[++i]));
      if (!seconds_given) o.seconds = 0;
    } else if (arg == "--seconds" && has_value) {
      o.seconds = std::max(0.0, std::atof(argv[++i]));
      seconds_given = true;
    } else if (arg == "--weights" && has_value) {
      o.weights = argv[++i];
    } else if (arg == "--engine-only") {
      o.engine_only = true;
    } else if (arg == "--bare-only") {
      o.bare_only = true;
    } else if (arg == "--idle-spin-us" && has_value) {
      o.idle_spin_us = std::max(0, std::atoi(argv[++i]));
    } else if (arg == "--help" || arg == "-h") {
      return Usage(/*asked=*/true);
    } else if (arg == "--trace") {
      o.trace = true;
    } else if (arg == "--hf-python" && has_value) {
      o.hf_python = argv[++i];
    } else {
      return Usage();
    }
  }
  if (o.engine_only && o.bare_only) return Usage();
  if (o.concurrency.empty()) o.concurrency = {1u, 8u, 32u};
  Log().set_level(spdlog::level::warn);
  if (!bench::MakeTinyWeightsIfMissing(o.weights, MSTAR_MAKE_TINY_WEIGHTS)) return 1;
  PluginRegistry registry = bench::LoadBuiltPlugins({"tiny_lm", "kv_paged"});
  ModelParse model = ParseModelManifestText(Manifest(o), "model_bench.toml", {}, &registry);
  if (!model.model) {
    std::cerr << JoinDiagnostics(model.diagnostics) << "\n";
    return 1;
  }
  std::cerr << "model_bench: tiny_lm (" << o.weights << "), " << o.tokens
            << " tokens per request\n";
  if (o.hf_python.empty())
    std::cerr << "  (HF generate skipped: give --hf-python or MSTAR_HF_PYTHON)\n";
  bench::BareLm bare(registry, LmConfig(o), kKvConfig);
  for (uint32_t c : o.concurrency) {
    std::vector<std::string> prompts = Prompts(c);
    SideRounds engine_rounds, bare_rounds;
    // Per round, bare time / engine time of the two back-to-back runs: whole rounds, and the
    // spans from the first token to the last.
    std::vector<double> paired_round, paired_decode;
    SessionOptions session_options;
    if (o.idle_spin_us >= 0)
      session_options.pipeline.idle_spin = std::chrono::microseconds(o.idle_spin_us);
    auto session = Session::Open(*model.model, registry, session_options);
    MSTAR_CHECK(session.ok());
    double spent_s = 0;  // both sides' run time at this concurrency level, so far
    for (int round = 0; round < o.rounds || spent_s < o.seconds; ++round) {
      std::vector<std::vector<int64_t>> engine_tokens, bare_tokens;
      RoundTimes engine_times, bare_times;
      auto run_engine = [&] {
        const HostClock before = EngineClock(**session);
        engine_times = EngineRun(**session, prompts, &engine_tokens);
        engine_rounds.Add(engine_times,
                          UsPerStep(engine_times.end_s, before, EngineClock(**session)));
      };
      auto run_bare = [&] {
        const HostClock before{bare.forward_ns(), bare.steps()};
        bare_times = BareRun(bare, prompts, o.tokens, &bare_tokens);
        bare_rounds.Add(bare_times, UsPerStep(bare_times.end_s, before,
                                              HostClock{bare.forward_ns(), bare.steps()}));
      };
      if (o.engine_only || o.bare_only) {
        o.engine_only ? run_engine() : run_bare();
        spent_s += engine_times.end_s + bare_times.end_s;
        continue;
      }
      // The sides take turns going first, so that neither always meets the other's leftovers
      // (caches, clock speed) or a drift of the machine within the round.
      if (round % 2 == 0) {
        run_engine();
        run_bare();
      } else {
        run_bare();
        run_engine();
      }
      spent_s += engine_times.end_s + bare_times.end_s;
      paired_round.push_back(bare_times.end_s / engine_times.end_s);
      paired_decode.push_back(bare_times.decode_s() / engine_times.decode_s());
      if (o.trace)
        std::cerr << "  round " << round << " c" << c << ": engine " << engine_times.end_s * 1e3
                  << " ms (decode " << engine_times.decode_s() * 1e3 << "), bare "
                  << bare_times.end_s * 1e3 << " ms (decode " << bare_times.decode_s() * 1e3
                  << "), decode ratio " << paired_decode.back() << "\n";
      if (engine_tokens != bare_tokens) {
        std::cerr << "model_bench: the engine's tokens differ from the bare loop's at " << c
                  << " concurrent requests\n";
        return 1;
      }
    }
    (*session)->Close();
    const double generated = static_cast<double>(c) * o.tokens;
    const double decoded = static_cast<double>(c) * (o.tokens - 1);  // after each first token
    const double engine_tps = generated / engine_rounds.best_round_s;
    const double bare_tps = generated / bare_rounds.best_round_s;
    std::string name = "c" + std::to_string(c);
    if (o.engine_only || o.bare_only) {
      std::cerr << "  model." << (o.engine_only ? "engine." : "bare.") << name << ": "
                << (o.engine_only ? engine_tps : bare_tps) << " tokens/s\n";
      continue;
    }
    // Best-of and paired figures, engine beside bare loop. The paired ones are steadier on a
    // shared machine: engine and bare loop run back to back within a round, so a slow stretch
    // of the machine tends to hit both.
    auto throughput = [&](const char* row, double engine_figure, double bare_figure,
                          const std::vector<double>& paired, const char* target) {
      bench::Emit({std::string("model.") + row + "." + name, engine_figure, "tokens/s", bare_figure,
                   target});
      const bench::MedianInterval ratio = bench::MedianWithInterval(paired);
      bench::Emit({std::string("model.") + row + "_paired." + name, ratio.median, "engine/bare",
                   1.0, std::string("median of the rounds' engine/bare ratios: ") + target},
                  FormatInterval(ratio, paired.size()));
    };
    throughput("decode", decoded / engine_rounds.best_decode_s, decoded / bare_rounds.best_decode_s,
               paired_decode, "ratio >= 0.95");
    throughput("round", engine_tps, bare_tps, paired_round,
               "ratio reported (with each round's start and the clients' wakes)");
    // A diagnostic row: the median over rounds, engine beside bare loop.
    auto diagnostic = [&](const char* row, const char* unit, const std::vector<double>& engine_side,
                          const std::vector<double>& bare_side) {
      bench::Emit({std::string("model.") + row + "." + name,
                   bench::MedianWithInterval(engine_side).median, unit,
                   bench::MedianWithInterval(bare_side).median, "ratio reported (diagnostic)"});
    };
    // What the engine adds besides the forward, free of the forward's own drift: median host
    // microseconds per step (wall time outside forward calls), engine beside bare loop.
    diagnostic("host_per_step", "us/step", engine_rounds.host_us, bare_rounds.host_us);
    // The forward calls themselves, engine beside bare loop: the same plugin on the same batches,
    // so a ratio above 1 is what running beside the engine's own work costs the forward (caches).
    diagnostic("forward_per_step", "us/step", engine_rounds.forward_us, bare_rounds.forward_us);
    // Starting a round: from the first submission to the first token at a client (engine: the
    // wake of an idle executor, admission, the prefill, delivery) beside the bare loop's time to
    // the end of its first step. Part of every round, so of the round figures above (not of the
    // decode ones, which start at the first token).
    diagnostic("first_token", "us", engine_rounds.first_us, bare_rounds.first_us);
    if (double hf_tps = HfRun(o, c); hf_tps > 0)
      bench::Emit({"model.hf." + name, engine_tps, "tokens/s", hf_tps,
                   c > 1 ? "ratio > 1 (continuous batching)" : "ratio reported"});
  }
  return 0;
}

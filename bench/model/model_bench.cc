// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Decode throughput of the tiny LLM (tiny_lm + kv_paged, LibTorch on CPU) at 1, 8 and 32
// concurrent requests, in one run:
//   model.engine.cN   tokens/s through the engine (a Session: scheduler, plan/exec/finish
//                     threads, continuous batching, client streams), beside a bare loop that calls
//                     the same plugins directly on the same batches (BareLm). Target: the ratio is
//                     at least 0.95.
//   model.engine_paired.cN  the median over rounds of bare time / engine time, each round's two
//                     runs back to back (the engine first in even rounds, the bare loop first in
//                     odd ones): less at the mercy of one lucky run than best-of figures on a
//                     shared machine. Its note gives the median's 95% confidence interval.
//   model.host_per_step.cN  the median over rounds of each side's host time per step (wall time
//                     outside its forward calls, per step), engine beside bare loop: what the engine
//                     adds, without the forward's own drift on a shared machine (diagnostic).
//   model.forward_per_step.cN  the median over rounds of each side's time per step inside its
//                     forward calls, engine beside bare loop (diagnostic).
//   model.first_token.cN  the median over rounds of the time from a round's start to its first
//                     token at a client (the bare loop: to the end of its first step) (diagnostic).
//   model.hf.cN       tokens/s of HF transformers' generate() on the same weights and batches
//                     (the engine as the figure), when a Python with torch and transformers is
//                     given (--hf-python or MSTAR_HF_PYTHON); skipped with a note otherwise.
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
#include <filesystem>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/bench.h"
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

// Seconds for the prompts to finish through session; tokens receives each request's tokens and
// *first_token_s the seconds until the first of them reached its client. The session lives
// across rounds, as a serving engine does (and as BareLm's instances do).
double EngineRun(Session& session, const std::vector<std::string>& prompts,
                 std::vector<std::vector<int64_t>>* tokens, double* first_token_s) {
  tokens->assign(prompts.size(), {});
  std::vector<std::shared_ptr<RequestStream>> streams;
  std::vector<SubmitSpec> specs;
  Clock::time_point start = Clock::now();
  // Written by the engine's delivering thread, read after every stream has ended.
  std::atomic<int64_t> first_ns{-1};
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto stream = std::make_shared<RequestStream>(i + 1);
    std::vector<int64_t>* out = &(*tokens)[i];
    stream->SetCallbacks(
        [out, start, &first_ns](const OutputChunk& c) {
          if (first_ns.load(std::memory_order_relaxed) < 0) {
            first_ns.store(
                std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count(),
                std::memory_order_relaxed);
          }
          out->insert(out->end(), c.values.begin(), c.values.end());
        },
        nullptr);
    SubmitSpec spec;
    spec.prompt = prompts[i];
    spec.stream = stream;
    specs.push_back(std::move(spec));
    streams.push_back(stream);
  }
  for (auto& submitted : session.SubmitAll(std::move(specs))) MSTAR_CHECK(submitted.ok());
  for (auto& stream : streams) MSTAR_CHECK(stream->Wait().end == RequestEnd::kDone);
  *first_token_s = static_cast<double>(first_ns.load(std::memory_order_relaxed)) * 1e-9;
  return std::chrono::duration<double>(Clock::now() - start).count();
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
  double best_s = 1e9;             // the fastest round
  std::vector<double> host_us;     // per round: time per step outside the forward calls
  std::vector<double> forward_us;  // inside them
  std::vector<double> first_us;    // to the first token

  void Add(double seconds, double first_token_s, const PerStep& per_step) {
    best_s = std::min(best_s, seconds);
    host_us.push_back(per_step.host_us);
    forward_us.push_back(per_step.forward_us);
    first_us.push_back(first_token_s * 1e6);
  }
};

// "95% CI 0.962-0.975 over 180 rounds"
std::string FormatInterval(const bench::MedianInterval& interval, size_t rounds) {
  char text[96];
  std::snprintf(text, sizeof text, "95%% CI %.3f-%.3f over %zu rounds", interval.low, interval.high,
                rounds);
  return text;
}

// Seconds for the bare loop to generate tokens for the prompts (into *out); *first_token_s: the
// seconds until its first step had run, as EngineRun's.
double BareRun(bench::BareLm& bare, const std::vector<std::string>& prompts, uint32_t tokens,
               std::vector<std::vector<int64_t>>* out, double* first_token_s) {
  Clock::time_point start = Clock::now();
  *out = bare.Generate(prompts, tokens);
  *first_token_s = std::chrono::duration<double>(bare.first_step_end() - start).count();
  return std::chrono::duration<double>(Clock::now() - start).count();
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
  if (!std::filesystem::exists(o.weights + "/config.json")) {
    std::string make = std::string("'") + MSTAR_MAKE_TINY_WEIGHTS + "' '" +
                       std::filesystem::path(o.weights).parent_path().string() + "' >&2";
    if (std::system(make.c_str()) != 0) return 1;
  }
  PluginRegistry::Options options;
  options.discovery.explicit_paths = {std::string(MSTAR_BENCH_PLUGIN_DIR) + "/tiny_lm",
                                      std::string(MSTAR_BENCH_PLUGIN_DIR) + "/kv_paged"};
  options.discovery.use_environment = false;
  options.discovery.use_install_dir = false;
  PluginRegistry registry = PluginRegistry::Load(options);
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
    std::vector<double> paired;  // bare time / engine time of each round's back-to-back runs
    SessionOptions session_options;
    if (o.idle_spin_us >= 0)
      session_options.pipeline.idle_spin = std::chrono::microseconds(o.idle_spin_us);
    auto session = Session::Open(*model.model, registry, session_options);
    MSTAR_CHECK(session.ok());
    double spent_s = 0;  // both sides' run time at this concurrency level, so far
    for (int round = 0; round < o.rounds || spent_s < o.seconds; ++round) {
      std::vector<std::vector<int64_t>> engine_tokens, bare_tokens;
      double engine_s = 0, bare_s = 0;
      auto run_engine = [&] {
        const HostClock before = EngineClock(**session);
        double first_s = 0;
        engine_s = EngineRun(**session, prompts, &engine_tokens, &first_s);
        engine_rounds.Add(engine_s, first_s, UsPerStep(engine_s, before, EngineClock(**session)));
      };
      auto run_bare = [&] {
        const HostClock before{bare.forward_ns(), bare.steps()};
        double first_s = 0;
        bare_s = BareRun(bare, prompts, o.tokens, &bare_tokens, &first_s);
        bare_rounds.Add(bare_s, first_s,
                        UsPerStep(bare_s, before, HostClock{bare.forward_ns(), bare.steps()}));
      };
      if (o.engine_only || o.bare_only) {
        o.engine_only ? run_engine() : run_bare();
        spent_s += engine_s + bare_s;
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
      spent_s += engine_s + bare_s;
      paired.push_back(bare_s / engine_s);
      if (o.trace)
        std::cerr << "  round " << round << " c" << c << ": engine " << engine_s * 1e3
                  << " ms, bare " << bare_s * 1e3 << " ms, ratio " << bare_s / engine_s << "\n";
      if (engine_tokens != bare_tokens) {
        std::cerr << "model_bench: the engine's tokens differ from the bare loop's at " << c
                  << " concurrent requests\n";
        return 1;
      }
    }
    (*session)->Close();
    double generated = static_cast<double>(c) * o.tokens;
    double engine_tps = generated / engine_rounds.best_s, bare_tps = generated / bare_rounds.best_s;
    std::string name = "c" + std::to_string(c);
    if (o.engine_only || o.bare_only) {
      std::cerr << "  model." << (o.engine_only ? "engine." : "bare.") << name << ": "
                << (o.engine_only ? engine_tps : bare_tps) << " tokens/s\n";
      continue;
    }
    bench::Emit({"model.engine." + name, engine_tps, "tokens/s", bare_tps, "ratio >= 0.95"});
    // The same comparison, steadier on a shared machine: engine and bare loop run back to back
    // within a round, so a slow stretch of the machine tends to hit both.
    const bench::MedianInterval ratio = bench::MedianWithInterval(paired);
    bench::Emit({"model.engine_paired." + name, ratio.median, "engine/bare", 1.0,
                 "median of the rounds' engine/bare ratios >= 0.95"},
                FormatInterval(ratio, paired.size()));
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
    // the end of its first step. Part of every round, so of the throughput figures above.
    diagnostic("first_token", "us", engine_rounds.first_us, bare_rounds.first_us);
    if (double hf_tps = HfRun(o, c); hf_tps > 0)
      bench::Emit({"model.hf." + name, engine_tps, "tokens/s", hf_tps,
                   c > 1 ? "ratio > 1 (continuous batching)" : "ratio reported"});
  }
  return 0;
}

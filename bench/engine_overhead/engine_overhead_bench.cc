// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The engine's host overhead per step, with the echo plugin as the null model: B requests decode
// together (every decode step is one batch of B), through the full engine (four threads, a
// cohort for the decode loop, routing, stop checks, client streams), beside bare loops that call
// the same plugin directly on the same batches, in the same run: one in the columnar form the
// engine's cohort uses (prepare_inputs_columnar, forward_batched, check_stop_columnar, the token
// fed back whole), one per request (prepare_inputs and check_stop per request, a map each).
// Every figure but the last two is over requests of 48 decode steps (--steps), so a step's
// figure also carries 1/49 of each request's submission, walk starts and end:
//   engine.step.bB          engine time per step vs the bare columnar loop's
//   engine.overhead.bB      the difference, per step
//   bare.columnar_vs_maps.bB  the bare columnar loop's time per step vs the per-request one's
// and the same run again with requests ten times as long, which spreads each request's own cost
// ten times thinner, to tell the two costs apart:
//   engine.decode_overhead.bB  the overhead per step with the long requests: the decode step's
//                           own cost, what a scheduler's per-step figure means (target at batch
//                           256: <= 12 us/step)
//   engine.request_cost.bB  each request's own cost (submission, walk starts, leaving its
//                           cohorts, its end and delivery), us per request, from the two
//                           overheads: overhead(L) = step + B * request / (L + 1) (batches of
//                           64 and more; no baseline)
//
// The engine's cohorts can be turned off (--per-request: every step through the ready queues,
// one map per request) to compare with the per-request bare loop.
//
// Flags (for profiling): --batch N (repeatable; default 1, 64, 256), --rounds N (default 10),
// --steps N (decode steps per request, default 48: more spreads each request's submission, walk
// starts and end over more steps, leaving the per-step cost),
// --engine-only (skip the bare loop; prints nothing but progress), --finish-on-thread (every
// batch's stop checks and client outputs on the finisher thread, as with device outputs),
// --per-request (no cohorts), --trace (each engine round's submission and total time).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "common/bare_step.h"
#include "common/bench.h"
#include "core/logging.h"
#include "engine/session.h"
#include "host/tensor_objects.h"
#include "model/model_manifest.h"
#include "plugin/registry.h"
#include "plugin/step_arrays.h"

namespace mstar {
namespace {

using Clock = std::chrono::steady_clock;

// Prefill then a decode loop of one echo node: one step per output token, no streams.
const char* kModel = R"(
format = 1
[model]
name = "echo_lm"
max_output_tokens = 100000
[nodes.echo]
plugin = "echo"
[partitions.main]
initial = "prefill"
transitions = { prefill = "decode" }
[walks.prefill]
partition = "main"
run = "echo"
inputs = { "echo.tokens" = "request.prompt" }
edges = [{ from = "echo.token", persist = "last" }, { from = "echo.text", emit = "text", modality = "text", counts_tokens = true }]
[walks.decode]
partition = "main"
run = { loop = "generate", max_iterations = 100000, body = "echo" }
inputs = { "echo.tokens" = "persisted.last" }
edges = [{ from = "echo.token", to = "echo.tokens" }, { from = "echo.text", emit = "text", modality = "text", counts_tokens = true }]
)";

// Decode steps per request (plus the end token): the prompt's length (--steps).
int prompt_length = 48;

std::string Prompt() {
  return std::string(static_cast<size_t>(prompt_length), 'x');
}

// Seconds for `batch` requests to finish through a Session, and the steps taken. With trace,
// the round's submission and total times go to stderr.
std::pair<double, uint64_t> EngineRun(const ModelSpec& model, const PluginRegistry& registry,
                                      uint32_t batch, const SessionOptions& options, bool trace) {
  auto session = Session::Open(model, registry, options);
  MSTAR_CHECK(session.ok());
  // The client's side (streams, specs) is made before the clock starts: the bare loops time
  // nothing of the kind either.
  std::vector<std::shared_ptr<RequestStream>> streams;
  std::vector<SubmitSpec> specs;
  for (uint32_t i = 0; i < batch; ++i) {
    SubmitSpec spec;
    spec.prompt = Prompt();
    auto stream = std::make_shared<RequestStream>(i + 1);
    stream->SetCallbacks([](const OutputChunk&) {}, nullptr);
    spec.stream = stream;
    specs.push_back(std::move(spec));
    streams.push_back(stream);
  }
  Clock::time_point start = Clock::now();
  for (auto& submitted : (*session)->SubmitAll(std::move(specs))) MSTAR_CHECK(submitted.ok());
  Clock::time_point submitted = Clock::now();
  for (auto& stream : streams) MSTAR_CHECK(stream->Wait().end == RequestEnd::kDone);
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  uint64_t steps = (*session)->stats().batches;
  if (trace) {
    std::cerr << "  round b" << batch << ": submit "
              << std::chrono::duration<double, std::micro>(submitted - start).count()
              << " us, total " << seconds * 1e6 << " us, " << steps << " steps\n";
  }
  (*session)->Close();
  return {seconds, steps};
}

// A fresh instance of the echo submodule, for a bare loop.
std::unique_ptr<PluginInstance> EchoInstance(const PluginRegistry& registry) {
  Result<FactoryRef> factory = registry.Find(MSTAR_KIND_SUBMODULE, "echo");
  MSTAR_CHECK(factory.ok());
  InstanceOptions options;
  options.name = "echo";
  auto instance = PluginInstance::Create(factory.value(), options);
  MSTAR_CHECK(instance.ok());
  return std::move(instance).value();
}

// The same plugin work without the engine: per step, prepare each request, one batched forward,
// a stop check per request, each token fed back.
double BareRun(const PluginRegistry& registry, uint32_t batch_size, uint64_t steps) {
  std::unique_ptr<PluginInstance> instance = EchoInstance(registry);
  PluginInstance& echo = *instance;
  const mstar_submodule_vtable_t* t = echo.submodule();
  bench::BareBatch batch(batch_size, 1);
  for (uint32_t i = 0; i < batch_size; ++i)
    MSTAR_CHECK(batch.inputs[i]
                    ->Append("tokens", bench::Int64Tensor(std::vector<int64_t>(
                                           static_cast<size_t>(prompt_length), 'x')))
                    .ok());
  bench::BareStep step(echo, nullptr);
  Clock::time_point start = Clock::now();
  for (uint64_t s = 0; s < steps; ++s) {
    std::vector<TensorMapPtr> outputs = step.Run(batch, "decode");
    for (uint32_t i = 0; i < batch_size; ++i) {
      uint64_t mask = 0;
      bench::CheckPlugin(t->check_stop(echo.self(), &batch.infos[i], outputs[i].get(), &mask),
                         "check_stop");
      bench::DoNotOptimize(mask);
      batch.FeedBack(i, outputs[i], "token");
    }
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The columnar form of BareRun: the batch's tokens stacked in one tensor, one call of each hook
// per step, the "token" output fed back whole.
double BareColumnarRun(const PluginRegistry& registry, uint32_t batch_size, uint64_t steps) {
  std::unique_ptr<PluginInstance> instance = EchoInstance(registry);
  PluginInstance& echo = *instance;
  bench::BareBatch batch(batch_size, 1);
  TensorMapPtr inputs = NewTensorMap();
  TensorMapPtr input_rows = NewTensorMap();
  std::vector<int64_t> offsets(batch_size + 1);
  for (uint32_t i = 0; i <= batch_size; ++i) offsets[i] = int64_t{prompt_length} * i;
  inputs->AppendHost("tokens", bench::Int64Tensor(std::vector<int64_t>(
                                   static_cast<size_t>(prompt_length) * batch_size, 'x')));
  input_rows->AppendHost("tokens", bench::Int64Tensor(offsets));
  bench::BareStep step(echo, nullptr);
  Clock::time_point start = Clock::now();
  for (uint64_t s = 0; s < steps; ++s) {
    auto [outputs, rows] = step.RunColumnar(batch, "decode", *inputs, *input_rows);
    bench::DoNotOptimize(step.FinishColumnar(batch, "decode", *outputs, *rows, "token").data());
    bench::FeedBackWhole(*outputs, "token", &inputs, &input_rows);
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Each side's best time per step over rounds, with requests of prompt_length decode steps.
struct Timings {
  double engine = 1e9;
  double columnar = 1e9;
  double maps = 1e9;  // only when asked (it is slow at large batches)
  uint64_t steps = 0;
};

Timings Measure(const ModelSpec& model, const PluginRegistry& registry, uint32_t batch,
                const SessionOptions& options, int rounds, bool engine_only, bool trace,
                bool maps) {
  Timings t;
  for (int round = 0; round < rounds; ++round) {
    auto [seconds, taken] = EngineRun(model, registry, batch, options, trace);
    t.steps = taken;
    t.engine = std::min(t.engine, seconds / static_cast<double>(taken));
    if (engine_only) continue;
    t.columnar =
        std::min(t.columnar, BareColumnarRun(registry, batch, taken) / static_cast<double>(taken));
    if (maps)
      t.maps = std::min(t.maps, BareRun(registry, batch, taken) / static_cast<double>(taken));
  }
  return t;
}

}  // namespace
}  // namespace mstar

int main(int argc, char** argv) {
  using namespace mstar;
  std::vector<uint32_t> batches;
  int rounds = 10;
  bool engine_only = false;
  bool trace = false;
  SessionOptions session_options;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--batch") == 0 && i + 1 < argc) {
      batches.push_back(static_cast<uint32_t>(std::atoi(argv[++i])));
    } else if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc) {
      prompt_length = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--engine-only") == 0) {
      engine_only = true;
    } else if (std::strcmp(argv[i], "--trace") == 0) {
      trace = true;
    } else if (std::strcmp(argv[i], "--finish-on-thread") == 0) {
      session_options.pipeline.finish_on_executor = false;
    } else if (std::strcmp(argv[i], "--per-request") == 0) {
      session_options.conductor.cohorts = false;
    } else {
      std::cerr << "usage: engine_overhead_bench [--batch N]... [--rounds N] [--steps N]"
                   " [--engine-only] [--finish-on-thread] [--per-request] [--trace]\n";
      return 2;
    }
  }
  if (batches.empty()) batches = {1u, 64u, 256u};
  Log().set_level(spdlog::level::warn);
  // Only the echo plugin: the model needs nothing else, and loading LibTorch plugins would only
  // slow the start.
  PluginRegistry::Options options;
  options.discovery.explicit_paths = {std::string(MSTAR_BENCH_PLUGIN_DIR) + "/echo"};
  options.discovery.use_environment = false;
  options.discovery.use_install_dir = false;
  PluginRegistry registry = PluginRegistry::Load(options);
  ModelParse model = ParseModelManifestText(kModel, "engine_overhead.toml", {}, &registry);
  if (!model.model) {
    std::cerr << JoinDiagnostics(model.diagnostics) << "\n";
    return 1;
  }
  std::cerr << "engine_overhead_bench\n";
  const int short_length = prompt_length;
  for (uint32_t batch : batches) {
    prompt_length = short_length;
    const Timings timings =
        Measure(*model.model, registry, batch, session_options, rounds, engine_only, trace, true);
    std::string b = "b";
    b += std::to_string(batch);
    if (engine_only) {
      std::cerr << "engine.step." << b << ": " << timings.engine * 1e6 << " us/step ("
                << timings.steps << " steps)\n";
      continue;
    }
    // The engine is compared with the bare loop of the form it runs: columnar with cohorts.
    const bool cohorts = session_options.conductor.cohorts;
    const double bare = cohorts ? timings.columnar : timings.maps;
    const double overhead_us = (timings.engine - bare) * 1e6;
    bench::Emit({"engine.step." + b, timings.engine * 1e6, "us/step", bare * 1e6,
                 "ratio as low as possible"});
    bench::Emit({"engine.overhead." + b, overhead_us, "us/step", bare * 1e6, ""});
    bench::Emit({"engine.overhead_per_request." + b, overhead_us * 1e3 / batch, "ns/request-step",
                 bare * 1e9 / batch, ""});
    bench::Emit({"bare.columnar_vs_maps." + b, timings.columnar * 1e6, "us/step",
                 timings.maps * 1e6, "ratio as low as possible"});

    prompt_length = short_length * 10;
    const Timings long_timings =
        Measure(*model.model, registry, batch, session_options, rounds, false, trace, !cohorts);
    const double long_bare = cohorts ? long_timings.columnar : long_timings.maps;
    const double decode_us = (long_timings.engine - long_bare) * 1e6;
    bench::Emit({"engine.decode_overhead." + b, decode_us, "us/step", long_bare * 1e6,
                 batch == 256 ? "figure <= 12 us/step" : ""});
    // At small batches the requests' share of a step is within the noise of the two overheads.
    if (batch < 64) continue;
    const double per_step_share = static_cast<double>(batch) / (short_length + 1) -
                                  static_cast<double>(batch) / (prompt_length + 1);
    bench::Emit({"engine.request_cost." + b, (overhead_us - decode_us) / per_step_share,
                 "us/request", 0, ""});
  }
  return 0;
}

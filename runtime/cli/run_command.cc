// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// `mstar run MANIFEST (--prompt TEXT | --prompts FILE) ...`: runs requests to completion through
// the engine, streaming outputs, then prints a summary (or one JSON object with --json).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/audio_output.h"
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/plugin_report.h"
#include "cli/run_summary.h"
#include "config/toml_reader.h"
#include "core/logging.h"
#include "engine/session.h"
#include "model/model_manifest.h"
#include "model/request_limits.h"
#include "plugin/discovery.h"
#include "plugin/registry.h"

namespace mstar::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The most requests one run makes (each is held in memory from submission to the summary).
constexpr uint32_t kMaxRequests = 1000000;

struct RunFlags {
  std::string manifest;
  bool has_prompt = false;   // --prompt was given (its text may be empty)
  bool has_prompts = false;  // --prompts was given
  std::string prompt;
  std::string prompts_file;
  uint32_t requests = 0;  // 0: one per prompt (--prompt: one)
  int64_t max_tokens = -1;
  std::vector<std::string> overrides;
  std::vector<std::string> params;
  std::vector<std::string> plugin_paths;
  uint32_t max_batch = 0;
  std::string eviction = "lru";
  uint32_t max_recomputes = 2;
  bool one_at_a_time = false;
  std::string tenant;
  std::string audio = "out.wav";
  uint32_t audio_rate = 0;  // 0: each output's declared rate
  bool json = false;
  bool quiet = false;
};

// The longest prompt line, and the most bytes of prompts a run reads or submits (every request's
// prompt is held in memory from submission to the summary, repeated ones too).
constexpr size_t kMaxPromptBytes = size_t{16} << 20;
constexpr uint64_t kMaxPromptsBytes = uint64_t{1} << 30;

// Reads a line of in (without its '\n') into *line, stopping one byte past kMaxPromptBytes so that
// a file without line ends (/dev/zero) is not read whole; false at the end of the input.
bool ReadBoundedLine(std::istream& in, std::string* line) {
  line->clear();
  std::istream::int_type c = 0;
  while ((c = in.get()) != std::istream::traits_type::eof() && c != '\n') {
    line->push_back(static_cast<char>(c));
    if (line->size() > kMaxPromptBytes) return true;
  }
  return c != std::istream::traits_type::eof() || !line->empty();
}

// Refuses a run whose requests' prompts add up to more than kMaxPromptsBytes (a long prompt
// repeated by --requests).
Status CheckPromptBytes(const char* flag, uint64_t bytes) {
  if (bytes <= kMaxPromptsBytes) return Status::Ok();
  return InvalidArgument(std::string(flag) + ": the requests' prompts add up to " +
                         std::to_string(bytes >> 20) + " MiB, more than " +
                         std::to_string(kMaxPromptsBytes >> 20) +
                         " MiB (fewer --requests, or shorter prompts)");
}

// The prompt of each request: --prompt's text --requests times, or the lines of --prompts (the
// first --requests of them, or all of them reused in turn up to --requests). Empty lines are no
// prompt; *skipped counts them.
Result<std::vector<std::string>> ReadPrompts(const RunFlags& flags, size_t* skipped) {
  if (flags.has_prompts && flags.prompts_file.empty())
    return InvalidArgument("--prompts: an empty path names no file (- reads standard input)");
  if (flags.has_prompt == flags.has_prompts) {
    return InvalidArgument("give exactly one of --prompt TEXT or --prompts FILE");
  }
  std::vector<std::string> prompts;
  if (flags.has_prompt) {
    if (flags.prompt.empty()) return InvalidArgument("--prompt: the prompt is empty");
    const size_t count = std::max<uint32_t>(flags.requests, 1);
    MSTAR_RETURN_IF_ERROR(CheckPromptBytes("--prompt", flags.prompt.size() * uint64_t{count}));
    prompts.assign(count, flags.prompt);
    return prompts;
  }
  std::error_code ec;
  if (std::filesystem::is_directory(flags.prompts_file, ec))
    return InvalidArgument("--prompts: " + flags.prompts_file + " is a directory");
  std::ifstream file;
  const bool from_stdin = flags.prompts_file == "-";
  if (!from_stdin) {
    file.open(flags.prompts_file);
    if (!file) {
      return InvalidArgument("--prompts: cannot read " + flags.prompts_file + ": " +
                             std::strerror(errno));
    }
  }
  std::istream& in = from_stdin ? std::cin : file;
  std::vector<std::string> lines;
  uint64_t total = 0, line_number = 0;
  // With --requests, the lines past that many are not read (nor held to the limits).
  const auto enough = [&] { return flags.requests > 0 && lines.size() == flags.requests; };
  for (std::string line; !enough() && ReadBoundedLine(in, &line);) {
    ++line_number;
    total += line.size();
    if (line.size() > kMaxPromptBytes || total > kMaxPromptsBytes) {
      return InvalidArgument(
          "--prompts: " + flags.prompts_file + ": " +
          (line.size() > kMaxPromptBytes
               ? "line " + std::to_string(line_number) + " is longer than " +
                     std::to_string(kMaxPromptBytes >> 20) + " MiB"
               : "more than " + std::to_string(kMaxPromptsBytes >> 20) + " MiB of prompts"));
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();  // CRLF line ends
    if (line.empty()) {
      ++*skipped;
      continue;
    }
    lines.push_back(line);
    if (lines.size() > kMaxRequests) {
      return InvalidArgument("--prompts: " + flags.prompts_file + " has more than " +
                             std::to_string(kMaxRequests) + " prompts");
    }
  }
  if (lines.empty())
    return InvalidArgument("--prompts: " + flags.prompts_file + " has no prompts (one per line)");
  const size_t count = flags.requests > 0 ? flags.requests : lines.size();
  uint64_t submitted = 0;
  for (size_t i = 0; i < count; ++i) submitted += lines[i % lines.size()].size();
  MSTAR_RETURN_IF_ERROR(CheckPromptBytes("--prompts", submitted));
  for (size_t i = 0; i < count; ++i) prompts.push_back(lines[i % lines.size()]);
  return prompts;
}

// --max-tokens and --param key=value become the requests' parameters.
// Adds what from holds to *into (tables merge, as dotted keys do in one TOML document); a key
// both hold otherwise is an error naming it (path: the keys above from, "a.b.").
Status MergeParams(toml::table* into, const toml::table& from, const std::string& path) {
  for (const auto& [key, value] : from) {
    const std::string name = path + std::string(key.str());
    toml::node* held = into->get(key.str());
    if (held == nullptr) {
      into->insert(key, value);
    } else if (held->is_table() && value.is_table()) {
      MSTAR_RETURN_IF_ERROR(MergeParams(held->as_table(), *value.as_table(), name + "."));
    } else {
      return InvalidArgument("--param: request parameter '" + name + "' is given twice");
    }
  }
  return Status::Ok();
}

// A request parameter that no plugin read in the whole run (nor the host: the bounds, the seed)
// is most likely misspelt ("max_token", "temprature"): it would otherwise silently keep its
// default. Told only after a run whose requests got to run (some ended done).
void WarnOfUnreadParams(const ConfigTree& params, const ModelSpec& model) {
  ConfigLookup(params.root(), "seed");  // read by the host (marks it read)
  for (const RequestLimit& limit : RequestLimits(model))
    ConfigLookup(params.root(), limit.name.c_str());
  for (const std::string& where : UnreadKeys(params.root())) {
    Log().warn(
        "{}: no plugin read this request parameter in the run (misspelt, or not one the "
        "model reads)",
        where);
  }
}

// Each --param is a TOML document of its own ("key=value"), so an error names the one at fault,
// at its own column; --max-tokens is max_tokens.
Result<std::shared_ptr<const ConfigTree>> RequestParams(const RunFlags& flags) {
  std::vector<std::string> documents;
  if (flags.max_tokens >= 0)
    documents.push_back("max_tokens = " + std::to_string(flags.max_tokens));
  for (const std::string& param : flags.params) {
    if (param.find('=') == std::string::npos)
      return InvalidArgument("--param expects key=value, got '" + param + "'");
    documents.push_back(param);
  }
  toml::table params;
  for (size_t i = 0; i < documents.size(); ++i) {
    const bool from_flag = flags.max_tokens >= 0 && i == 0;
    const std::string source = from_flag ? "--max-tokens" : "--param '" + documents[i] + "'";
    Diagnostics problems;
    std::optional<toml::table> table = ParseTomlText(documents[i] + "\n", source, &problems);
    if (!table) return InvalidArgument(JoinDiagnostics(problems));
    MSTAR_RETURN_IF_ERROR(MergeParams(&params, *table, ""));
  }
  return std::shared_ptr<const ConfigTree>(
      std::make_shared<ConfigTree>(std::move(params), "--param", "", "--param"));
}

// How many of the run's requests have ended, and whether the run is over, for threads that wait
// for either. Thread-safe.
class EndedCount {
 public:
  void Add() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++count_;
    }
    changed_.notify_all();
  }
  // The run is over: wakes the threads in WaitClosed.
  void Close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    changed_.notify_all();
  }
  size_t count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return count_;
  }
  // Whether at least n have ended, waiting up to timeout for it.
  bool WaitFor(size_t n, std::chrono::milliseconds timeout) const {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return count_ >= n; });
  }
  // Whether the run is over, waiting up to timeout for it.
  bool WaitClosed(std::chrono::milliseconds timeout) const {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return closed_; });
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  size_t count_ = 0;
  bool closed_ = false;
};

// How often a waiting thread looks for an interrupt or a closed stdout.
constexpr std::chrono::milliseconds kStopPoll{20};

// Whether the run should stop early: an interrupt was caught, or stdout can no longer be written
// (`mstar run ... | head`): what the requests would still produce has nowhere to go.
bool StopAsked(const InterruptWatch& interrupt) {
  return interrupt.caught() != 0 || FirstOutputErrno().load() != 0;
}

// Blocks until the first `submitted` requests have ended. Once the run is asked to stop, cancels
// them all (their outputs so far are kept); one that already ended is left as it ended.
void WaitForRequests(Session& session, const InterruptWatch& interrupt, size_t submitted,
                     const EndedCount& finished) {
  bool cancelled = false;
  while (!finished.WaitFor(submitted, kStopPoll)) {
    if (StopAsked(interrupt) && !cancelled) {
      if (interrupt.caught() != 0) {
        std::cerr << "\nmstar run: interrupted; cancelling the requests still running (another "
                     "interrupt ends the program at once)\n";
      } else {
        std::cerr << "\nmstar run: cannot write to stdout ("
                  << std::strerror(FirstOutputErrno().load())
                  << "); cancelling the requests still running\n";
      }
      for (size_t id = 1; id <= submitted; ++id) session.Cancel(id);
      cancelled = true;
    }
  }
}

int Run(const RunFlags& flags, const Globals& globals) {
  // Until the model is loaded a signal takes its default action: there is nothing to report yet,
  // and reading prompts from a FIFO or loading a large model must not outlast a Ctrl-C.
  size_t skipped_lines = 0;
  Result<std::vector<std::string>> prompts = ReadPrompts(flags, &skipped_lines);
  if (!prompts.ok()) {
    std::cerr << "mstar run: " << prompts.status().message() << "\n";
    return kExitInvalid;
  }
  if (skipped_lines > 0 && !flags.quiet)
    Log().info("--prompts: skipped {} empty lines", skipped_lines);
  Result<std::shared_ptr<const ConfigTree>> params = RequestParams(flags);
  if (!params.ok()) {
    std::cerr << "mstar run: " << params.status().message() << "\n";
    return kExitInvalid;
  }
  if (flags.eviction != "lru" && flags.eviction != "priority") {
    std::cerr << "mstar run: --eviction is lru or priority\n";
    return kExitInvalid;
  }
  if (Status paths = CheckPluginPaths(flags.plugin_paths); !paths.ok()) {
    std::cerr << "mstar run: " << paths.message() << "\n";
    return kExitInvalid;
  }
  PluginRegistry::Options options;
  options.discovery.plugin_paths = flags.plugin_paths;
  options.discovery.config_roots = globals.config.plugin_roots;
  PluginRegistry registry = PluginRegistry::Load(options);
  ModelParse model =
      ParseModelManifestFile(flags.manifest, flags.overrides, &registry, globals.config.device);
  for (const Diagnostic& d : model.diagnostics) std::cerr << d.ToString() << "\n";
  if (!model.model) return kExitInvalid;
  if (Status limits = CheckRequestLimits(RequestLimits(*model.model), **params); !limits.ok()) {
    std::cerr << "mstar run: --param: " << limits.message() << "\n";
    return kExitInvalid;
  }
  const AudioOutputs audio_outputs(*model.model, flags.audio_rate);
  if (!flags.audio.empty() && !audio_outputs.empty()) {
    if (Status writable = CheckAudioPath(audio_outputs.FirstPath(flags.audio, prompts->size()));
        !writable.ok()) {
      std::cerr << "mstar run: " << writable.message() << "\n";
      return kExitInvalid;
    }
    for (const std::string& output : audio_outputs.undeclared()) {
      Log().warn(
          "audio output '{}' declares no sample_rate on its emit edge; writing it at {} Hz "
          "(give --audio-rate to choose)",
          output, kDefaultAudioRate);
    }
  }

  if (!flags.quiet)
    Log().info("loading model '{}' ({} nodes)", model.model->name, model.model->nodes.size());
  SessionOptions session_options;
  session_options.capture = globals.config.capture;
  if (globals.config.idle_spin_us)
    session_options.pipeline.idle_spin = std::chrono::microseconds(*globals.config.idle_spin_us);
  session_options.conductor.max_batch = flags.max_batch;
  session_options.conductor.max_recomputes = flags.max_recomputes;
  session_options.conductor.eviction =
      flags.eviction == "priority" ? EvictionPolicy::kPriority : EvictionPolicy::kLru;
  Clock::time_point load_start = Clock::now();
  Result<std::unique_ptr<Session>> session = Session::Open(*model.model, registry, session_options);
  if (!session.ok()) {
    std::cerr << "mstar run: cannot load the model: " << session.status().message() << "\n";
    // A plugin refusing its config or a path that is not there is bad input; the rest (out of
    // memory, a device error, a plugin failing) is failed work.
    const Code code = session.status().code();
    return code == Code::kInvalidArgument || code == Code::kNotFound ? kExitInvalid : kExitFailed;
  }
  // From here on, a first Ctrl-C (or SIGTERM) cancels the requests and the run still reports.
  InterruptWatch interrupt;
  double load_s = std::chrono::duration<double>(Clock::now() - load_start).count();
  if (!flags.quiet)
    Log().info("model ready in {:.2f} s; running {} requests", load_s, prompts->size());

  const size_t n = prompts->size();
  std::vector<Collected> collected(n);
  std::mutex collected_mutex;
  EndedCount finished;
  std::atomic<uint64_t> tokens{0};
  // A single request's text goes to stdout as it comes; until some does (and for a model that
  // emits none: tokens, audio), progress shows on stderr.
  const bool stream_text = !flags.json && n == 1;
  std::atomic<bool> streamed{false};
  std::atomic<bool> progress_on_tty{false};  // a progress line is open on a terminal
  Clock::time_point start = Clock::now();
  // Progress on stderr while the requests run. The thread waits for the run to close rather
  // than sleeping, so that the run does not outlast its requests by a progress period.
  std::thread progress([&] {
    const bool tty = isatty(STDERR_FILENO) != 0;
    const auto period = std::chrono::milliseconds(tty ? 200 : 1000);
    while (!finished.WaitClosed(period)) {
      if (flags.quiet || streamed) continue;
      double s = std::chrono::duration<double>(Clock::now() - start).count();
      progress_on_tty = tty;
      std::cerr << (tty ? "\r" : "") << "[" << finished.count() << "/" << n << " requests, "
                << tokens.load() << " tokens, "
                << static_cast<int>(tokens.load() / std::max(s, 1e-9)) << " tok/s]"
                << (tty ? "" : "\n") << std::flush;
    }
  });
  size_t submitted = 0;
  for (size_t i = 0; i < n && !StopAsked(interrupt); ++i) {
    auto stream = std::make_shared<RequestStream>(i + 1);
    stream->SetCallbacks(
        [&, i](const OutputChunk& chunk) {
          std::lock_guard<std::mutex> lock(collected_mutex);
          CollectChunk(chunk, &collected[i]);
          if (chunk.modality == "text" && stream_text) {
            if (!streamed.exchange(true) && progress_on_tty)
              std::cerr << "\n";  // off the progress line, which stops here
            std::cout << std::string(chunk.bytes.begin(), chunk.bytes.end()) << std::flush;
            NoteOutputFailure();
          }
          if (chunk.modality == "text" || chunk.modality == "tokens") tokens += chunk.values.size();
        },
        [&, i](const RequestResult& result) {
          std::lock_guard<std::mutex> lock(collected_mutex);
          collected[i].result = result;
          finished.Add();
        });
    SubmitSpec spec;
    spec.prompt = (*prompts)[i];
    spec.params = params.value();
    spec.tenant = flags.tenant;
    spec.id = i + 1;
    spec.stream = stream;
    Result<std::shared_ptr<RequestStream>> accepted = (*session)->Submit(std::move(spec));
    ++submitted;
    if (!accepted.ok()) {
      std::lock_guard<std::mutex> lock(collected_mutex);
      collected[i].result.end = RequestEnd::kFailed;
      collected[i].result.error = accepted.status().message();
      finished.Add();
    }
    // --one-at-a-time: the next request goes once this one has ended, or the run stops.
    while (flags.one_at_a_time && !finished.WaitFor(i + 1, kStopPoll) && !StopAsked(interrupt)) {
    }
  }
  WaitForRequests(**session, interrupt, submitted, finished);
  for (size_t i = submitted; i < n; ++i) {
    collected[i].result.end = RequestEnd::kCancelled;
    collected[i].result.error = "not submitted: the run was interrupted";
  }
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  finished.Close();
  progress.join();
  if (streamed) std::cout << "\n";
  RunMeasures measures;
  measures.model = model.model->name;
  measures.interrupted = interrupt.caught() != 0;
  measures.elapsed_s = elapsed;
  measures.load_s = load_s;
  const bool any_done = std::any_of(collected.begin(), collected.end(), [](const Collected& c) {
    return c.result.end == RequestEnd::kDone;
  });
  if (any_done && !StopAsked(interrupt)) WarnOfUnreadParams(**params, *model.model);
  measures.stats = (*session)->stats();
  measures.timings = (*session)->engine().timings();
  measures.captures = (*session)->engine().capture_counts();
  (*session)->Close();

  std::vector<AudioOfRequest> audio;
  for (const Collected& c : collected)
    audio.push_back({&c.audio, c.result.end == RequestEnd::kDone});
  if (!flags.audio.empty())
    measures.audio_files = WriteAudioFiles(flags.audio, audio_outputs, audio, &measures.errors);
  const nlohmann::json summary = RunSummaryJson(collected, measures);
  if (flags.json) {
    // Generated text may be any bytes: invalid UTF-8 becomes U+FFFD rather than an exception.
    std::cout << JsonText(summary) << "\n";
  } else {
    PrintRunSummary(summary, flags.quiet, std::cout, std::cerr);
  }
  if (interrupt.caught() != 0) return interrupt.exit_code();
  const bool all_done = summary["completed"] == summary["requests"];
  return all_done && measures.errors.empty() ? kExitOk : kExitFailed;
}

}  // namespace

const CLI::Validator kDecimal(
    [](std::string& text) {
      // Digits after at most one sign: CLI11 would read "1e3" as 1000 and "0x10" as 16, and
      // its range check would then name a number the user never wrote.
      const size_t digits = text.empty() || (text[0] != '+' && text[0] != '-') ? 0 : 1;
      if (text.size() == digits ||
          text.find_first_not_of("0123456789", digits) != std::string::npos)
        return "'" + text + "' is not a decimal number";
      if (text.size() > digits + 1 && text[digits] == '0')
        return "'" + text + "' is not a decimal number without leading zeros";
      return std::string();
    },
    "DECIMAL");

void AddRunCommand(CLI::App& app, const Globals* globals, Action* action) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* run = app.add_subcommand(
      "run",
      "Run requests through a model to completion: streams the output of a single request, then "
      "prints a summary (one JSON object on stdout with --json). Ctrl-C (or SIGTERM) while "
      "the prompts are read or the model loads ends the program at once; once requests run, it "
      "cancels those still running and still prints the summary and writes the audio, and a "
      "second one ends the program at once. Exit 0 when every request completed, 1 when any "
      "failed (or the model could not load, or audio could not be read or written), 2 for bad "
      "input (a "
      "manifest, config, flag, request parameter or plugin config in error), 128 + the signal "
      "when interrupted (130 for Ctrl-C)");
  run->footer(
      "Examples:\n"
      "  mstar run manifests/models/echo.toml --prompt hello\n"
      "  mstar run manifests/models/tiny-llm.toml --prompts prompts.txt --json > summary.json\n"
      "  mstar run manifests/models/tiny-llm.toml --prompt hi --param temperature=0.7 \\\n"
      "      --set resources.kv.config.num_pages=64");
  run->add_option("MANIFEST", flags->manifest, "Model manifest (e.g. manifests/models/echo.toml)")
      ->required();
  run->add_option("--prompt", flags->prompt, "The prompt of every request")
      ->each([flags](const std::string&) { flags->has_prompt = true; });
  run->add_option("--prompts", flags->prompts_file,
                  "A file with one prompt per line (one request each); - reads standard input")
      ->each([flags](const std::string&) { flags->has_prompts = true; });
  run->add_option("--requests", flags->requests,
                  "Number of requests, at most 1000000 (default: 1, or one per line of "
                  "--prompts; fewer takes the first lines, more reuses them in turn)")
      ->check(kDecimal)
      ->check(CLI::Range(1u, kMaxRequests));
  run->add_option("--max-tokens", flags->max_tokens,
                  "Most output tokens per request, 1 to 100000000 (default: the model's)")
      ->check(kDecimal)
      ->check(CLI::Range(int64_t{1}, kMaxOutputTokens));
  // Each occurrence of a repeatable option takes one value, so the manifest may follow it.
  run->add_option("--param", flags->params,
                  "A request parameter key=value (TOML value; repeatable; dotted keys of one table "
                  "merge across flags, a key given twice is an error; one no plugin read is "
                  "reported after the run)")
      ->allow_extra_args(false);
  run->add_option("--set", flags->overrides,
                  "Override a manifest value: dotted.key=value (repeatable)")
      ->allow_extra_args(false);
  run->add_option("--plugin-path", flags->plugin_paths,
                  "Directory to search for plugins (repeatable)")
      ->allow_extra_args(false);
  run->add_option("--max-batch", flags->max_batch,
                  "Cap every batch at this many requests (0: no cap)")
      ->check(kDecimal);
  run->add_option("--eviction", flags->eviction,
                  "Who is offloaded under memory pressure: lru or priority")
      ->capture_default_str();
  run->add_option("--tenant", flags->tenant,
                  "Who the requests are for: resources keep different tenants' shared state apart "
                  "(a prefix cache shares pages only within a tenant); default: none");
  run->add_flag("--one-at-a-time", flags->one_at_a_time,
                "Submit each request once the one before it has ended (default: all at once): "
                "per-request latency, and a later request reuses an earlier one's cached prefix");
  run->add_option("--max-recomputes", flags->max_recomputes,
                  "Times a request whose offloaded state a tier lost starts again from its prompt "
                  "before it fails (0: it fails at once)")
      ->capture_default_str()
      ->check(kDecimal);
  run->add_option("--audio", flags->audio,
                  "WAV file for \"audio\" outputs (mono samples of a float or integer PCM type, "
                  "written as 16-bit PCM); "
                  "with several requests each gets -<id> before the extension, with several audio "
                  "outputs each gets -<output>; a request that failed or was cancelled still gets "
                  "the audio it received, marked partial; empty: write none")
      ->capture_default_str();
  run->add_option("--audio-rate", flags->audio_rate,
                  "Sample rate in Hz (1 to 1000000) of every audio output (default: each "
                  "output's emit edge's sample_rate, else 24000)")
      ->check(kDecimal)
      ->check(CLI::Range(1u, 1000000u));
  run->add_flag("--json", flags->json, "Print one JSON object on stdout (logs stay on stderr)");
  run->add_flag("--quiet", flags->quiet, "No progress and no per-request lines");
  run->callback(
      [action, globals, flags] { *action = [globals, flags] { return Run(*flags, *globals); }; });
}

}  // namespace mstar::cli

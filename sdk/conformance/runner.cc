// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Loads the plugin, reads the settings, and runs each applicable rule in a forked child: the
// child reports "verdict\nmessage" through a pipe; a child that dies, or does not answer within
// the timeout, fails its rule with what happened.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "config/toml_reader.h"
#include "core/logging.h"
#include "plugin/instance.h"
#include "plugin/table_check.h"
#include "rule_context.h"
#include "sanitizer_findings.h"

namespace mstar::conformance {
namespace {

constexpr int64_t kMaxRequests = 1024;

// What the rule running in this (child) process noted (see Note).
std::string& PassNote() {
  static std::string note;
  return note;
}

const std::vector<Rule>& Registry() {
  static const std::vector<Rule> rules = [] {
    std::vector<Rule> all;
    for (auto part : {PluginRules, SubmoduleRules, ResourceRules, TierRules}) {
      for (Rule& rule : part()) all.push_back(std::move(rule));
    }
    return all;
  }();
  return rules;
}

uint32_t KindOf(const std::string& kind) {
  if (kind == "submodule") return MSTAR_KIND_SUBMODULE;
  if (kind == "resource") return MSTAR_KIND_RESOURCE;
  if (kind == "tier") return MSTAR_KIND_TIER;
  return 0;
}

// [factories.NAME.resource]: plugin (required), label, config.
std::optional<FactorySettings::Resource> ReadResource(TableReader& entry, Diagnostics& problems) {
  const toml::table* table = entry.Table("resource", Presence::kOptional);
  if (table == nullptr) return std::nullopt;
  TableReader reader(*table, entry.FullKey("resource"), entry.path(), &problems);
  FactorySettings::Resource resource;
  if (std::optional<std::string> plugin = reader.String("plugin", Presence::kRequired)) {
    if (plugin->empty()) reader.Error("plugin", "must name a resource factory");
    resource.plugin = *plugin;
  }
  if (std::optional<std::string> label = reader.String("label", Presence::kOptional)) {
    if (label->empty()) reader.Error("label", "must be a name");
    resource.label = *label;
  }
  reader.Table("config", Presence::kOptional);  // checked here, taken by TakeConfigs
  resource.config = std::make_shared<ConfigTree>();
  reader.Finish();
  return resource;
}

// [factories.NAME.inputs]: name -> an array of numbers.
void ReadInputs(TableReader& entry, FactorySettings& s, Diagnostics& problems) {
  const toml::table* inputs = entry.Table("inputs", Presence::kOptional);
  if (inputs == nullptr) return;
  for (const auto& [name, values] : *inputs) {
    const std::string key = entry.FullKey("inputs") + "." + std::string(name.str());
    const toml::array* array = values.as_array();
    if (array == nullptr) {
      problems.push_back(
          {LocationOf(values, entry.path()), key,
           std::string("expected an array of numbers, found ") + TomlTypeName(values)});
      continue;
    }
    FactorySettings::Input& in = s.inputs[std::string(name.str())];
    for (size_t i = 0; i < array->size(); ++i) {
      const toml::node& x = (*array)[i];
      if (!x.is_integer() && !x.is_floating_point()) {
        problems.push_back({LocationOf(x, entry.path()), key + "[" + std::to_string(i) + "]",
                            std::string("expected a number, found ") + TomlTypeName(x)});
        continue;
      }
      in.is_float |= x.is_floating_point();
      in.values.push_back(x.is_floating_point() ? x.value_or<double>(0)
                                                : static_cast<double>(x.value_or<int64_t>(0)));
    }
  }
}

// [factories.NAME.skip]: rule id -> reason, or the reason every rule of the factory is skipped
// (a string).
void ReadSkip(TableReader& entry, const toml::table& table, FactorySettings& s,
              Diagnostics& problems) {
  if (const toml::node* all = table.get("skip"); all != nullptr && all->is_string()) {
    entry.Skip("skip");
    s.skip_all = all->value_or<std::string>("");
    if (s.skip_all->empty()) {
      entry.Error("skip",
                  "give the reason every rule of the factory is skipped (a non-empty string)");
    }
    return;
  }
  const toml::table* skip = entry.Table("skip", Presence::kOptional);
  if (skip == nullptr) return;
  for (const auto& [rule, reason] : *skip) {
    const std::string key = entry.FullKey("skip") + "." + std::string(rule.str());
    bool known = false;
    for (const RuleInfo& info : AllRules()) known |= info.id == rule.str();
    if (!known) {
      problems.push_back(
          {LocationOf(reason, entry.path()), key,
           "unknown rule '" + std::string(rule.str()) + "' (see mstar conformance --list)"});
    } else if (!reason.is_string()) {
      problems.push_back(
          {LocationOf(reason, entry.path()), key,
           std::string("expected the reason (a string), found ") + TomlTypeName(reason)});
    } else if (reason.value_or<std::string>("").empty()) {
      problems.push_back({LocationOf(reason, entry.path()), key,
                          "give the reason the rule is skipped (a non-empty string)"});
    }
    s.skip[std::string(rule.str())] = reason.value_or<std::string>("");
  }
}

// One [factories.NAME] table.
FactorySettings ReadFactory(const toml::table& table, const std::string& key,
                            const std::string& path, Diagnostics& problems) {
  TableReader entry(table, key, path, &problems);
  FactorySettings s;
  entry.Table("config", Presence::kOptional);  // checked here, taken by TakeConfigs
  ReadInputs(entry, s, problems);
  ReadSkip(entry, table, s, problems);
  if (std::optional<int64_t> requests = entry.Int("requests", Presence::kOptional)) {
    if (*requests < 1 || *requests > kMaxRequests) {
      entry.Error("requests", "must be from 1 to " + std::to_string(kMaxRequests) +
                                  " (requests per batch), not " + std::to_string(*requests));
    } else {
      s.requests = static_cast<uint32_t>(*requests);
    }
  }
  s.tiers = entry.Bool("tiers", Presence::kOptional).value_or(true);
  if (std::optional<double> tolerance = entry.Number("tolerance", Presence::kOptional)) {
    if (!(*tolerance >= 0) || !std::isfinite(*tolerance)) {
      entry.Error("tolerance", "must be a finite number, 0 or more");
    } else {
      s.tolerance = *tolerance;
    }
  }
  s.resource = ReadResource(entry, problems);
  entry.Finish();
  return s;
}

// Moves each factory's config table ([factories.NAME.config], [factories.NAME.resource.config])
// out of the document into its settings' ConfigTree. Moved, not copied: toml++ drops source
// positions on copy, and a plugin's config errors must name the line. Runs once every reader is
// done with the document.
void TakeConfigs(toml::table& document, const std::string& path,
                 std::map<std::string, FactorySettings>& settings) {
  for (auto& [name, s] : settings) {
    const std::string key = "factories." + name;
    toml::node_view<toml::node> factory = document["factories"][name];
    if (toml::table* config = factory["config"].as_table())
      s.config = std::make_shared<ConfigTree>(std::move(*config), path, key + ".config");
    toml::table* resource_config = factory["resource"]["config"].as_table();
    if (s.resource && resource_config != nullptr) {
      s.resource->config =
          std::make_shared<ConfigTree>(std::move(*resource_config), path, key + ".resource.config");
    }
  }
}

// The settings of every factory from the config file ([factories.NAME]). factories (when not
// null) names the plugin's factories; a table for any other name is an error.
Result<std::map<std::string, FactorySettings>> ReadSettings(
    const std::string& path, const std::vector<ProvidedFactory>* factories) {
  std::map<std::string, FactorySettings> out;
  if (path.empty()) return out;
  Diagnostics problems;
  std::optional<toml::table> table = ParseTomlFile(path, &problems);
  if (!table) return InvalidArgument(JoinDiagnostics(problems));
  TableReader top(*table, "", path, &problems);
  if (const toml::table* all = top.Table("factories", Presence::kOptional)) {
    TableReader reader(*all, "factories", path, &problems);
    for (const auto& [name, node] : *all) {
      const std::string key = reader.FullKey(name.str());
      bool provided = factories == nullptr;
      for (size_t i = 0; !provided && i < factories->size(); ++i)
        provided = (*factories)[i].name == name.str();
      if (!provided) {
        std::string names;
        for (const ProvidedFactory& factory : *factories)
          names += (names.empty() ? "" : ", ") + factory.name;
        reader.Error(name.str(), "the plugin provides no factory '" + std::string(name.str()) +
                                     "' (it provides " + names + ")");
      }
      reader.Skip(name.str());
      if (const toml::table* entry = reader.Table(name.str(), Presence::kOptional))
        out[std::string(name.str())] = ReadFactory(*entry, key, path, problems);
    }
  }
  top.Finish();
  if (!problems.empty()) return InvalidArgument(JoinDiagnostics(problems));
  TakeConfigs(*table, path, out);
  return out;
}

// What a run reads before any rule runs.
struct RunInput {
  ManifestParse parse;
  std::map<std::string, FactorySettings> settings;
};

// Reads a run's input. Bad input is an error listing every problem, one a line: an option out of
// range, a manifest that cannot be read, is not TOML or is not a plugin manifest, any problem in
// the settings file. A plugin manifest with errors in its keys is not bad input: its plugin
// fails plugin.loads.
Result<RunInput> ReadInput(const std::string& manifest_path, const Options& options) {
  std::vector<std::string> problems;
  if (options.timeout_s < 1 || options.timeout_s > kMaxTimeoutSeconds) {
    problems.push_back("--timeout " + std::to_string(options.timeout_s) + ": must be from 1 to " +
                       std::to_string(kMaxTimeoutSeconds) + " seconds");
  }
  for (const std::string& kind : options.kinds) {
    if (kind != "plugin" && KindOf(kind) == 0)
      problems.push_back("--kind " + kind + ": unknown kind (plugin, submodule, resource or tier)");
  }
  for (const std::string& rule : options.rules) {
    bool known = false;
    for (const RuleInfo& info : AllRules()) known |= info.id == rule;
    if (!known) problems.push_back("--rule " + rule + ": unknown rule (see --list)");
  }
  RunInput input;
  input.parse = ParsePluginManifestFile(manifest_path);
  if (!input.parse.is_toml) {
    problems.push_back(JoinDiagnostics(input.parse.diagnostics));
  } else if (!input.parse.is_plugin_manifest) {
    problems.push_back(JoinDiagnostics(input.parse.diagnostics) +
                       "; give the plugin's manifest (PLUGIN.toml)");
  }
  const PluginManifest* manifest = input.parse.manifest ? &*input.parse.manifest : nullptr;
  Result<std::map<std::string, FactorySettings>> settings =
      ReadSettings(options.config_path, manifest != nullptr ? &manifest->provides : nullptr);
  if (settings.ok()) {
    input.settings = std::move(settings).value();
  } else {
    problems.push_back(settings.status().message());
  }
  if (problems.empty()) return input;
  std::string message;
  for (const std::string& problem : problems) message += (message.empty() ? "" : "\n") + problem;
  return InvalidArgument(message);
}

// Finds settings.plugin's resource factory beside the plugin under test (its manifest's
// directory is <root>/<name>/: <root>/<plugin>/ is searched), then where `mstar run` looks
// (MSTAR_PLUGIN_PATH, the runtime config's roots, the install directory).
void ResolveResource(const std::string& manifest_path, const std::vector<std::string>& roots,
                     FactorySettings::Resource& resource) {
  std::filesystem::path root = std::filesystem::absolute(manifest_path).parent_path().parent_path();
  PluginRegistry::Options options;
  if (std::filesystem::is_directory(root / resource.plugin))
    options.discovery.explicit_paths.push_back((root / resource.plugin).string());
  options.discovery.config_roots = roots;
  PluginRegistry registry = PluginRegistry::Load(options);
  Result<FactoryRef> found = registry.Find(MSTAR_KIND_RESOURCE, resource.plugin);
  if (found.ok()) {
    resource.factory = found.value();
  } else {
    resource.error = "the resource '" + resource.plugin + "' named in the conformance config (" +
                     found.status().message() + "); build it beside " + manifest_path +
                     " or add its directory to MSTAR_PLUGIN_PATH";
  }
}

// The reason the settings skip rule for subject's factory, or nullopt.
std::optional<std::string> SkippedBySettings(const Rule& rule, const Subject& subject) {
  if (subject.settings.skip_all) return subject.settings.skip_all;
  auto it = subject.settings.skip.find(rule.info.id);
  if (it != subject.settings.skip.end()) return it->second;
  return std::nullopt;
}

constexpr uint32_t kWatchdogGraceSeconds = 2;

// In a rule's child process: unless stopped within timeout_s, answers the rule as hung through
// fd, naming the plugin hook it entered last, and ends the process.
class Watchdog {
 public:
  Watchdog(int fd, uint32_t timeout_s) {
    g_track_plugin_calls.store(true, std::memory_order_relaxed);
    thread_ = std::thread([this, fd, timeout_s] {
      std::unique_lock<std::mutex> lock(mutex_);
      if (stop_cv_.wait_for(lock, std::chrono::seconds(timeout_s), [&] { return stopped_; }))
        return;
      const std::string hook = LastPluginCall();
      const std::string answer =
          "fail\nno answer within " + std::to_string(timeout_s) + " s: " +
          (hook.empty() ? std::string("a hook hangs")
                        : "the last hook called, " + hook + ", did not return") +
          " (a wait with no timeout, a deadlock)";
      ssize_t written = write(fd, answer.data(), answer.size());
      (void)written;
      _exit(0);
    });
  }
  ~Watchdog() { Stop(); }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void Stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopped_ = true;
    }
    stop_cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stopped_ = false;
  std::thread thread_;
};

// In a sanitized build, what the sanitizers saw fails a rule that passed (or skipped) otherwise;
// so does an exception that crossed the ABI, even where the rule took it for an error. The
// "fail\n..." answer, or "" when nothing was found.
std::string FindingsFailure() {
  if (std::string escaped = FirstEscapedException(); !escaped.empty()) {
    return "fail\n" + escaped +
           ": no exception may cross the C boundary; catch everything there (the SDK's barrier "
           "does)";
  }
  if (std::string found = SanitizerFindings(); !found.empty()) return "fail\n" + found;
  return "";
}

// Runs one rule in a child process. *no_instance (when given) tells whether it failed because the
// factory cannot create an instance (RuleStop::no_instance).
RuleResult RunIsolated(const Rule& rule, const Subject& subject, uint32_t timeout_s,
                       bool* no_instance = nullptr) {
  RuleResult result{rule.info.id, subject.factory != nullptr ? subject.factory->name : "",
                    rule.info.statement, Verdict::kFail, ""};
  if (no_instance != nullptr) *no_instance = false;
  if (std::optional<std::string> reason = SkippedBySettings(rule, subject)) {
    result.verdict = Verdict::kSkip;
    result.message = "skipped by the config: " + *reason;
    return result;
  }
  int fds[2];
  if (pipe(fds) != 0) {
    result.message = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    ForgetSanitizerReports();
    ForgetEscapedExceptions();
    Watchdog watchdog(fds[1], timeout_s);
    std::string answer;
    try {
      rule.check(subject);
      answer = "pass\n" + PassNote();
      if (std::string failed = FindingsFailure(); !failed.empty()) answer = failed;
    } catch (const RuleStop& stop) {
      const char* verdict = stop.verdict == Verdict::kSkip ? "skip"
                            : stop.no_instance             ? "nocreate"
                                                           : "fail";
      answer = std::string(verdict) + "\n" + stop.message;
      // What ran before the skip counts as much as a pass's calls.
      if (std::string failed = FindingsFailure(); stop.verdict == Verdict::kSkip && !failed.empty())
        answer = failed;
    } catch (const std::exception& e) {
      answer = std::string("fail\nthe check itself threw: ") + e.what();
    }
    watchdog.Stop();
    ssize_t written = write(fds[1], answer.data(), answer.size());
    (void)written;
    _exit(0);
  }
  close(fds[1]);
  std::string answer;
  pollfd pfd{fds[0], POLLIN, 0};
  bool timed_out = false;
  char buffer[4096];
  while (true) {
    // The child's watchdog answers at timeout_s, naming the hook; the grace covers a child
    // too wedged for that.
    int ready = poll(&pfd, 1, static_cast<int>(timeout_s + kWatchdogGraceSeconds) * 1000);
    if (ready == 0) {
      timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    ssize_t n = read(fds[0], buffer, sizeof(buffer));
    if (n <= 0) break;
    answer.append(buffer, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (timed_out) {
    result.message = "no answer within " + std::to_string(timeout_s) +
                     " s: a hook hangs (a wait with no timeout, a deadlock)";
  } else if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    result.message = std::string("the process died with signal ") + std::to_string(sig) + " (" +
                     strsignal(sig) + ")" +
                     (sig == SIGABRT ? ": an exception escaped a hook (std::terminate), or an "
                                       "assertion or sanitizer fired"
                                     : ": memory was corrupted or a null pointer followed");
  } else if (answer.rfind("pass\n", 0) == 0) {
    result.verdict = Verdict::kPass;
    result.message = answer.substr(5);
  } else if (answer.rfind("skip\n", 0) == 0) {
    result.verdict = Verdict::kSkip;
    result.message = answer.substr(5);
  } else if (answer.rfind("fail\n", 0) == 0) {
    result.message = answer.substr(5);
  } else if (answer.rfind("nocreate\n", 0) == 0) {
    result.message = answer.substr(9);
    if (no_instance != nullptr) *no_instance = true;
  } else {
    result.message = "the check ended without an answer (exit status " +
                     std::to_string(WEXITSTATUS(status)) +
                     "): a hook called exit(), or a sanitizer stopped the process (its report "
                     "is on standard error)";
  }
  return result;
}

bool Wanted(const std::vector<std::string>& list, const std::string& value) {
  return list.empty() || std::find(list.begin(), list.end(), value) != list.end();
}

// Runs rule against one factory. A factory that cannot create an instance fails the first rule
// that tries (failed_in: factory -> that rule); its later rules skip, naming that rule.
RuleResult RunFactoryRule(const Rule& rule, const Subject& subject, uint32_t timeout_s,
                          std::map<std::string, std::string>& failed_in) {
  bool no_instance = false;
  RuleResult result = RunIsolated(rule, subject, timeout_s, &no_instance);
  if (!no_instance) return result;
  auto [first, inserted] = failed_in.emplace(result.factory, result.id);
  if (!inserted) {
    result.verdict = Verdict::kSkip;
    result.message = "no instance to check: creating one with the conformance config fails (see " +
                     first->second + ")";
  }
  return result;
}

}  // namespace

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPass: return "pass";
    case Verdict::kFail: return "fail";
    case Verdict::kSkip: return "skip";
  }
  return "?";
}

const std::vector<RuleInfo>& AllRules() {
  static const std::vector<RuleInfo> infos = [] {
    std::vector<RuleInfo> out;
    for (const Rule& rule : Registry()) out.push_back(rule.info);
    return out;
  }();
  return infos;
}

std::string CheckInput(const std::string& manifest_path, const Options& options) {
  Result<RunInput> input = ReadInput(manifest_path, options);
  return input.ok() ? std::string() : input.status().message();
}

std::vector<RuleResult> RunConformance(const std::string& manifest_path, const Options& options) {
  std::vector<RuleResult> results;
  auto add = [&](RuleResult result) {
    results.push_back(std::move(result));
    if (options.on_result) options.on_result(results.back());
  };
  auto fail_load = [&](const std::string& message) {
    add({"plugin.loads", "", "The manifest is valid and the library loads and negotiates",
         Verdict::kFail, message});
    return results;
  };
  Result<RunInput> input = ReadInput(manifest_path, options);
  if (!input.ok()) return fail_load(input.status().message());
  const ManifestParse& parse = input->parse;
  if (!parse.manifest) return fail_load(JoinDiagnostics(parse.diagnostics));
  // Loading runs the library's static constructors and entry (and those of the resource
  // plugins named in the config): first in a child process, so that one which crashes or hangs
  // is reported as this rule's failure instead of taking the runner down with it.
  std::map<std::string, FactorySettings>& settings = input->settings;
  Rule probe{
      {"plugin.loads", "plugin", "The manifest is valid and the library loads and negotiates"},
      [&](const Subject&) {
        for (auto& entry : settings) {
          if (entry.second.resource)
            ResolveResource(manifest_path, options.plugin_roots, *entry.second.resource);
        }
        Diagnostic why;
        if (PluginLibrary::Load(*parse.manifest, LoadOptions{}, &why) == nullptr)
          Fail(why.ToString());
      }};
  RuleResult probed =
      RunIsolated(probe, Subject{*parse.manifest, nullptr, nullptr, {}}, options.timeout_s);
  if (probed.verdict != Verdict::kPass) return fail_load("loading: " + probed.message);
  for (auto& entry : settings) {  // once per run, for the factories that name a resource
    if (entry.second.resource)
      ResolveResource(manifest_path, options.plugin_roots, *entry.second.resource);
  }
  Diagnostic error;
  std::shared_ptr<PluginLibrary> library =
      PluginLibrary::Load(*parse.manifest, LoadOptions{}, &error);
  if (library == nullptr) return fail_load(error.ToString());

  Subject plugin{*parse.manifest, library, nullptr, {}};
  std::map<std::string, std::string> create_failed_in;  // factory -> the rule that reported it
  for (const Rule& rule : Registry()) {
    if (!Wanted(options.rules, rule.info.id)) continue;
    if (rule.info.kind == "plugin") {
      if (Wanted(options.kinds, "plugin") || options.kinds.empty())
        add(RunIsolated(rule, plugin, options.timeout_s));
      continue;
    }
    if (!Wanted(options.kinds, rule.info.kind)) continue;
    const mstar_plugin_api_t* api = library->api();
    for (uint32_t i = 0; i < api->num_factories; ++i) {
      const mstar_factory_t* factory = &FactoryAt(api, i);
      if (factory->kind != KindOf(rule.info.kind)) continue;
      Subject subject{*parse.manifest, library, factory, {}};
      if (auto it = settings.find(factory->name); it != settings.end())
        subject.settings = it->second;
      if (subject.settings.config == nullptr)
        subject.settings.config = std::make_shared<ConfigTree>();
      add(RunFactoryRule(rule, subject, options.timeout_s, create_failed_in));
    }
  }
  return results;
}

// ---- the pass note (rule_context.h): what a passing rule says in this child process ---------

void Note(const std::string& message) {
  PassNote() += (PassNote().empty() ? "" : "; ") + message;
}

}  // namespace mstar::conformance

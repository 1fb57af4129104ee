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
#include <cmath>
#include <cstring>
#include <filesystem>

#include "config/toml_reader.h"
#include "core/logging.h"
#include "device/device.h"
#include "memory_tier.h"
#include "rule_context.h"

namespace mstar::conformance {
namespace {

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
  if (kind == "model") return MSTAR_KIND_MODEL;
  return 0;
}

// [factories.NAME.resource]: plugin (required), label, config.
Result<FactorySettings::Resource> ReadResource(const toml::node& node, const std::string& path,
                                               const std::string& key) {
  const toml::table* table = node.as_table();
  auto where = [&](const toml::node& at, const std::string& sub) {
    return path + ":" + std::to_string(at.source().begin.line) + ": " + key + sub;
  };
  if (table == nullptr) return InvalidArgument(where(node, "") + " must be a table");
  FactorySettings::Resource resource;
  std::optional<std::string> plugin = (*table)["plugin"].value<std::string>();
  if (!plugin || plugin->empty())
    return InvalidArgument(where(node, ".plugin") + " must name a resource factory");
  resource.plugin = *plugin;
  if (const toml::node* label = table->get("label")) {
    std::optional<std::string> text = label->value<std::string>();
    if (!text || text->empty()) return InvalidArgument(where(*label, ".label") + " must be a name");
    resource.label = *text;
  }
  if (const toml::node* config = table->get("config")) {
    if (!config->is_table()) return InvalidArgument(where(*config, ".config") + " must be a table");
    resource.config = std::make_shared<ConfigTree>(*config->as_table(), path, key + ".config");
  } else {
    resource.config = std::make_shared<ConfigTree>();
  }
  return resource;
}

// The settings of every factory from the config file ([factories.NAME]).
Result<std::map<std::string, FactorySettings>> ReadSettings(const std::string& path) {
  std::map<std::string, FactorySettings> out;
  if (path.empty()) return out;
  Diagnostics problems;
  std::optional<toml::table> table = ParseTomlFile(path, &problems);
  if (!table) return InvalidArgument(JoinDiagnostics(problems));
  const toml::table* factories = (*table)["factories"].as_table();
  if (factories == nullptr) return out;
  for (const auto& [name, node] : *factories) {
    const toml::table* entry = node.as_table();
    if (entry == nullptr)
      return InvalidArgument(path + ": factories." + std::string(name.str()) + " is not a table");
    FactorySettings& s = out[std::string(name.str())];
    if (const toml::table* config = (*entry)["config"].as_table())
      s.config = std::make_shared<ConfigTree>(*config, path,
                                              "factories." + std::string(name.str()) + ".config");
    if (const toml::table* inputs = (*entry)["inputs"].as_table()) {
      for (const auto& [input, values] : *inputs) {
        const toml::array* array = values.as_array();
        if (array == nullptr)
          return InvalidArgument(path + ": inputs." + std::string(input.str()) +
                                 " must be an array of integers");
        FactorySettings::Input& in = s.inputs[std::string(input.str())];
        for (const toml::node& x : *array) {
          in.is_float |= x.is_floating_point();
          in.values.push_back(x.is_floating_point() ? x.value_or<double>(0)
                                                    : static_cast<double>(x.value_or<int64_t>(0)));
        }
      }
    }
    if (const toml::table* skip = (*entry)["skip"].as_table()) {
      for (const auto& [rule, reason] : *skip)
        s.skip[std::string(rule.str())] = reason.value_or<std::string>("");
    }
    s.requests = static_cast<uint32_t>((*entry)["requests"].value_or<int64_t>(3));
    s.tiers = (*entry)["tiers"].value_or<bool>(true);
    s.tolerance = (*entry)["tolerance"].value_or<double>(0.0);
    if (s.tolerance < 0)
      return InvalidArgument(path + ": factories." + std::string(name.str()) +
                             ".tolerance must not be negative");
    if (const toml::node* resource = entry->get("resource")) {
      Result<FactorySettings::Resource> paired =
          ReadResource(*resource, path, "factories." + std::string(name.str()) + ".resource");
      if (!paired.ok()) return paired.status();
      s.resource = std::move(paired).value();
    }
  }
  return out;
}

// Finds settings.plugin's resource factory beside the plugin under test (its manifest's
// directory is <root>/<name>/: <root>/<plugin>/ is searched), then where `mstar run` looks
// (MSTAR_PLUGIN_PATH, the install directory).
void ResolveResource(const std::string& manifest_path, FactorySettings::Resource& resource) {
  std::filesystem::path root = std::filesystem::absolute(manifest_path).parent_path().parent_path();
  PluginRegistry::Options options;
  if (std::filesystem::is_directory(root / resource.plugin))
    options.discovery.explicit_paths.push_back((root / resource.plugin).string());
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

// Runs one rule in a child process.
RuleResult RunIsolated(const Rule& rule, const Subject& subject, uint32_t timeout_s) {
  RuleResult result{rule.info.id, subject.factory != nullptr ? subject.factory->name : "",
                    rule.info.statement, Verdict::kFail, ""};
  if (auto it = subject.settings.skip.find(rule.info.id); it != subject.settings.skip.end()) {
    result.verdict = Verdict::kSkip;
    result.message = "skipped by the config: " + it->second;
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
    std::string answer;
    try {
      rule.check(subject);
      answer = "pass\n";
    } catch (const RuleStop& stop) {
      answer = std::string(stop.verdict == Verdict::kSkip ? "skip" : "fail") + "\n" + stop.message;
    } catch (const std::exception& e) {
      answer = std::string("fail\nthe check itself threw: ") + e.what();
    }
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
    int ready = poll(&pfd, 1, static_cast<int>(timeout_s) * 1000);
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
  } else if (answer.rfind("pass", 0) == 0) {
    result.verdict = Verdict::kPass;
  } else if (answer.rfind("skip\n", 0) == 0) {
    result.verdict = Verdict::kSkip;
    result.message = answer.substr(5);
  } else if (answer.rfind("fail\n", 0) == 0) {
    result.message = answer.substr(5);
  } else {
    result.message = "the check ended without an answer (exit status " +
                     std::to_string(WEXITSTATUS(status)) + "): a hook called exit()";
  }
  return result;
}

bool Wanted(const std::vector<std::string>& list, const std::string& value) {
  return list.empty() || std::find(list.begin(), list.end(), value) != list.end();
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

std::vector<RuleResult> RunConformance(const std::string& manifest_path, const Options& options) {
  std::vector<RuleResult> results;
  auto fail_load = [&](const std::string& message) {
    results.push_back({"plugin.loads", "",
                       "The manifest is valid and the library loads and negotiates", Verdict::kFail,
                       message});
    return results;
  };
  Result<std::map<std::string, FactorySettings>> settings = ReadSettings(options.config_path);
  if (!settings.ok()) return fail_load("the conformance config: " + settings.status().message());
  for (auto& entry : *settings) {  // once per run, for the factories that name a resource
    if (entry.second.resource) ResolveResource(manifest_path, *entry.second.resource);
  }
  ManifestParse parse = ParsePluginManifestFile(manifest_path);
  if (!parse.manifest) return fail_load(JoinDiagnostics(parse.diagnostics));
  Diagnostic error;
  std::shared_ptr<PluginLibrary> library =
      PluginLibrary::Load(*parse.manifest, LoadOptions{}, &error);
  if (library == nullptr) return fail_load(error.ToString());

  Subject plugin{*parse.manifest, library, nullptr, {}};
  for (const Rule& rule : Registry()) {
    if (!Wanted(options.rules, rule.info.id)) continue;
    if (rule.info.kind == "plugin") {
      if (Wanted(options.kinds, "plugin") || options.kinds.empty())
        results.push_back(RunIsolated(rule, plugin, options.timeout_s));
      continue;
    }
    if (!Wanted(options.kinds, rule.info.kind)) continue;
    const mstar_plugin_api_t* api = library->api();
    for (uint32_t i = 0; i < api->num_factories; ++i) {
      const mstar_factory_t* factory = &api->factories[i];
      if (factory->kind != KindOf(rule.info.kind)) continue;
      Subject subject{*parse.manifest, library, factory, {}};
      if (auto it = settings->find(factory->name); it != settings->end())
        subject.settings = it->second;
      if (subject.settings.config == nullptr)
        subject.settings.config = std::make_shared<ConfigTree>();
      results.push_back(RunIsolated(rule, subject, options.timeout_s));
    }
  }
  return results;
}

// ---- shared helpers -------------------------------------------------------------------------

std::unique_ptr<PluginInstance> Subject::Create(const std::string& name) const {
  InstanceOptions options;
  options.name = name;
  options.config = settings.config;
  if (factory->kind == MSTAR_KIND_RESOURCE && settings.tiers)
    options.tiers.push_back(SuiteMemoryTier());
  Result<std::unique_ptr<PluginInstance>> instance = PluginInstance::Create(ref(), options);
  if (!instance.ok()) {
    Skip("cannot create an instance with the conformance config (" + instance.status().message() +
         "); give a working config in --config [factories." + factory->name + "].config");
  }
  return std::move(instance).value();
}

void RequireOk(const Status& status, const std::string& what) {
  if (!status.ok()) Fail(what + ": " + status.ToString());
}

mstar_tensor_t* Int64Tensor(const std::vector<int64_t>& values) {
  Result<mstar_tensor_t*> t =
      AllocateTensor(nullptr, DLDevice{kDLCPU, 0}, DLDataType{kDLInt, 64, 1},
                     {static_cast<int64_t>(values.size())});
  MSTAR_CHECK(t.ok());
  std::memcpy(t.value()->dl.data, values.data(), values.size() * sizeof(int64_t));
  return t.value();
}

mstar_tensor_t* Float32Tensor(const std::vector<double>& values) {
  Result<mstar_tensor_t*> t =
      AllocateTensor(nullptr, DLDevice{kDLCPU, 0}, DLDataType{kDLFloat, 32, 1},
                     {static_cast<int64_t>(values.size())});
  MSTAR_CHECK(t.ok());
  auto* data = static_cast<float*>(t.value()->dl.data);
  for (size_t i = 0; i < values.size(); ++i) data[i] = static_cast<float>(values[i]);
  return t.value();
}

namespace {

// Whether two float32 tensors of the same shape agree within tolerance (see SameMaps).
bool CloseFloats(const DLTensor& x, const DLTensor& y, double tolerance) {
  const auto* p = reinterpret_cast<const float*>(static_cast<const char*>(x.data) + x.byte_offset);
  const auto* q = reinterpret_cast<const float*>(static_cast<const char*>(y.data) + y.byte_offset);
  const size_t n = TensorNumBytes(x) / sizeof(float);
  double scale = 1;
  for (size_t i = 0; i < n; ++i)
    scale = std::max({scale, std::fabs(double{p[i]}), std::fabs(double{q[i]})});
  for (size_t i = 0; i < n; ++i) {
    if (!(std::fabs(double{p[i]} - double{q[i]}) <= tolerance * scale)) return false;
  }
  return true;
}

}  // namespace

bool SameMaps(const mstar_tensor_map& a, const mstar_tensor_map& b, std::string* why,
              double tolerance) {
  if (a.entries().size() != b.entries().size()) {
    *why = std::to_string(a.entries().size()) + " outputs vs " + std::to_string(b.entries().size());
    return false;
  }
  for (const auto& entry : a.entries()) {
    const mstar_tensor_map::Entry* other = b.Find(entry.name);
    if (other == nullptr || other->tensors.size() != entry.tensors.size()) {
      *why = "output '" + entry.name + "' is missing or has another count";
      return false;
    }
    for (size_t i = 0; i < entry.tensors.size(); ++i) {
      const DLTensor& x = entry.tensors[i]->dl;
      const DLTensor& y = other->tensors[i]->dl;
      bool same_shape =
          x.ndim == y.ndim && x.dtype.code == y.dtype.code && x.dtype.bits == y.dtype.bits &&
          std::equal(x.shape, x.shape + x.ndim, y.shape) && TensorNumBytes(x) == TensorNumBytes(y);
      if (!same_shape) {
        *why = "output '" + entry.name + "' differs in dtype or shape";
        return false;
      }
      const bool approximate = tolerance > 0 && x.dtype.code == kDLFloat && x.dtype.bits == 32 &&
                               x.dtype.lanes == 1 && IsHostDevice(x.device);
      bool same = TensorNumBytes(x) == 0 ||
                  (approximate ? CloseFloats(x, y, tolerance)
                               : std::memcmp(static_cast<const char*>(x.data) + x.byte_offset,
                                             static_cast<const char*>(y.data) + y.byte_offset,
                                             TensorNumBytes(x)) == 0);
      if (!same) {
        *why = "output '" + entry.name + "' differs" +
               (approximate ? " by more than the tolerance " + std::to_string(tolerance)
                            : std::string(" in its bytes"));
        return false;
      }
    }
  }
  return true;
}

}  // namespace mstar::conformance

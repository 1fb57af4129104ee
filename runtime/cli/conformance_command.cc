// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// `mstar conformance PLUGIN.toml [--kind K] [--rule ID]... [--config FILE] [--json]`: runs the
// conformance suite (sdk/conformance) against a plugin. Exit 0 when no rule failed, 1 otherwise,
// 2 for bad input.
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/plugin_report.h"
#include "conformance.h"

namespace mstar::cli {
namespace {

struct ConformanceFlags {
  std::string manifest;
  std::vector<std::string> kinds;
  std::vector<std::string> rules;
  std::string config;
  uint32_t timeout_s = 60;
  bool json = false;
  bool list = false;
};

int ListRules(bool json) {
  nlohmann::json out = nlohmann::json::array();
  for (const conformance::RuleInfo& rule : conformance::AllRules()) {
    if (json) {
      out.push_back({{"id", rule.id}, {"kind", rule.kind}, {"statement", rule.statement}});
    } else {
      std::cout << rule.id << " (" << rule.kind << ")\n    " << rule.statement << "\n";
    }
  }
  if (json) std::cout << JsonText(out) << "\n";
  return kExitOk;
}

int Run(const ConformanceFlags& flags, const Globals& globals) {
  if (flags.list) return ListRules(flags.json);
  if (flags.manifest.empty()) {
    std::cerr << "mstar conformance: give a plugin manifest (or --list)\n";
    return kExitInvalid;
  }
  conformance::Options options;
  options.kinds = flags.kinds;
  options.rules = flags.rules;
  options.config_path = flags.config;
  options.timeout_s = flags.timeout_s;
  options.plugin_roots = globals.config.plugin_roots;
  // Bad input (the options, a manifest that is no plugin manifest, the settings file) is not the
  // plugin's failure: exit 2 before any rule runs.
  if (std::string problems = conformance::CheckInput(flags.manifest, options); !problems.empty()) {
    std::cerr << "mstar conformance: bad input:\n" << problems << "\n";
    return kExitInvalid;
  }
  // Each verdict shows as its rule finishes (a rule may take up to --timeout): the lines on
  // stdout, or, with --json, a progress line on stderr until the one object at the end.
  size_t failed = 0, passed = 0, skipped = 0;
  nlohmann::json out = nlohmann::json::array();
  options.on_result = [&](const conformance::RuleResult& r) {
    failed += r.verdict == conformance::Verdict::kFail;
    passed += r.verdict == conformance::Verdict::kPass;
    skipped += r.verdict == conformance::Verdict::kSkip;
    if (flags.json) {
      out.push_back({{"rule", r.id},
                     {"factory", r.factory},
                     {"verdict", conformance::VerdictName(r.verdict)},
                     {"statement", r.statement},
                     {"message", r.message}});
      std::cerr << "conformance: " << conformance::VerdictName(r.verdict) << " " << r.id
                << (r.factory.empty() ? "" : " [" + r.factory + "]") << "\n";
      return;
    }
    std::cout << (r.verdict == conformance::Verdict::kPass   ? "PASS "
                  : r.verdict == conformance::Verdict::kFail ? "FAIL "
                                                             : "skip ")
              << r.id << (r.factory.empty() ? "" : " [" + r.factory + "]") << "\n";
    if (!r.message.empty()) std::cout << "     " << r.message << "\n";
    std::cout << std::flush;
  };
  conformance::RunConformance(flags.manifest, options);
  if (flags.json) {
    std::cout << JsonText(nlohmann::json{{"manifest", flags.manifest},
                                         {"passed", passed},
                                         {"failed", failed},
                                         {"skipped", skipped},
                                         {"results", out}})
              << "\n";
  } else {
    std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
  }
  return failed == 0 ? kExitOk : kExitFailed;
}

}  // namespace

void AddConformanceCommand(CLI::App& app, const Globals* globals, Action* action) {
  auto flags = std::make_shared<ConformanceFlags>();
  CLI::App* cmd = app.add_subcommand(
      "conformance",
      "Check a plugin against the ABI's contract rules, each in its own process. Exit 0 when no "
      "rule failed, 1 when any did, 2 for bad input");
  cmd->add_option("MANIFEST", flags->manifest, "The plugin manifest (PLUGIN.toml)");
  cmd->add_option("--kind", flags->kinds,
                  "Only factories of this kind: submodule, resource, tier "
                  "(repeatable; 'plugin' for the library rules)")
      ->allow_extra_args(false);
  cmd->add_option("--rule", flags->rules, "Only this rule id (repeatable; see --list)")
      ->allow_extra_args(false);
  cmd->add_option("--config", flags->config,
                  "TOML file with per-factory settings: [factories.NAME] config, inputs, skip, "
                  "requests (1 to 1024), tiers, tolerance, resource (docs/conformance.md)");
  cmd->add_option("--timeout", flags->timeout_s,
                  "Seconds a rule may take before it fails as hung: 1 to " +
                      std::to_string(conformance::kMaxTimeoutSeconds))
      ->check(kDecimal)
      ->check(CLI::Range(1u, conformance::kMaxTimeoutSeconds))
      ->capture_default_str();
  cmd->add_flag("--list", flags->list, "List the rules and exit");
  cmd->add_flag("--json", flags->json, "One JSON object on stdout");
  cmd->footer(
      "Examples:\n  mstar conformance build/lib/mstar/plugins/kv_paged/kv_paged.toml\n"
      "  mstar conformance mine.toml --kind resource --config conformance.toml\n"
      "  mstar conformance --list");
  cmd->callback(
      [action, flags, globals] { *action = [flags, globals] { return Run(*flags, *globals); }; });
}

}  // namespace mstar::cli

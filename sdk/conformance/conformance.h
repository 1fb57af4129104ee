// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The plugin conformance suite: every contract rule of the ABI, checked against a real plugin
// library (loaded by the runtime's loader, exactly as the engine loads it). `mstar conformance`
// is its command line; plugin authors can also link mstar::conformance into their own tests.
//
// Each rule has an id ("submodule.batched-equals-single"), a one-line statement, and on failure a
// message that says what to change. Rules run one at a time, each in a forked child process, so a
// plugin that crashes, lets an exception escape (std::terminate) or hangs fails that rule and no
// other; the ownership rules are checked by the sanitizers when the suite runs in a sanitizer
// build (make asan / make tsan).
//
// Threading: RunConformance is not reentrant (it forks); call it from one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mstar::conformance {

struct RuleInfo {
  std::string id;
  std::string kind;  // "plugin" (the library as a whole), "submodule", "resource", "tier"
  std::string statement;
};

enum class Verdict { kPass, kFail, kSkip };

struct RuleResult {
  std::string id;
  std::string factory;  // the factory checked; empty for library rules
  std::string statement;
  Verdict verdict = Verdict::kSkip;
  std::string message;  // why it failed or was skipped; for a pass, what it did not check
};

struct Options {
  std::vector<std::string> kinds;  // only factories of these kinds (empty: all)
  std::vector<std::string> rules;  // only these rule ids (empty: all)
  // A TOML file with per-factory settings (see docs/conformance.md): the instance config, sample
  // inputs for submodules, rules to skip with a reason. Empty: defaults.
  std::string config_path;
  uint32_t timeout_s = 60;  // per rule: 1 to kMaxTimeoutSeconds
  // Searched too for a resource plugin the settings name (the runtime config's [plugins] roots).
  std::vector<std::string> plugin_roots;
  // Called with each result as soon as its rule has run (progress), before RunConformance returns
  // them all.
  std::function<void(const RuleResult&)> on_result;
};

// The longest --timeout a rule may be given: a day.
inline constexpr uint32_t kMaxTimeoutSeconds = 86400;

// Every rule the suite knows, in the order it runs them.
const std::vector<RuleInfo>& AllRules();

// Checks what RunConformance reads before it runs a rule: the options (kinds, rule ids, the
// timeout's range), that manifest_path is a readable TOML file with a [plugin] table, and the
// settings file (TOML syntax, known keys only, value ranges, [factories.NAME] naming a factory
// the manifest provides). Returns "" when the input is good, else every problem, one a line
// ("file:line:column: key: message" for the files). The command line exits 2 on such problems.
// A plugin manifest that is one but has errors in its keys is not bad input: see RunConformance.
std::string CheckInput(const std::string& manifest_path, const Options& options);

// Runs the rules for manifest_path (a plugin manifest). A manifest (or settings file, or option)
// that CheckInput refuses, a plugin manifest with errors, or a library that cannot be loaded
// fails the "plugin.loads" rule and everything else is skipped. A factory that cannot create an
// instance with its settings' config fails the first of its rules that runs (with create's
// message); its later rules are skipped, naming that rule.
std::vector<RuleResult> RunConformance(const std::string& manifest_path, const Options& options);

const char* VerdictName(Verdict verdict);

}  // namespace mstar::conformance

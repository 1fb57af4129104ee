// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// What a rule sees: the loaded library, the factory under test and its settings, and the means
// to fail or skip. A rule's body throws RuleStop (through Fail / Skip / Require) to end early; a
// body that returns has passed. Rules run in a forked child (runner.cc), so they may leave the
// process in any state.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config_tree.h"
#include "conformance.h"
#include "host/tensor_objects.h"
#include "plugin/instance.h"
#include "plugin/library.h"
#include "plugin/registry.h"

namespace mstar::conformance {

// Per-factory settings from the conformance config file.
struct FactorySettings {
  std::shared_ptr<const ConfigTree> config;  // the instance's config table
  // Submodules: 1-D inputs; int64 unless any value is a float (then float32).
  struct Input {
    bool is_float = false;
    std::vector<double> values;
  };
  std::map<std::string, Input> inputs;
  std::map<std::string, std::string> skip;  // rule id -> reason
  std::optional<std::string> skip_all;      // the reason every rule of the factory is skipped
  uint32_t requests = 3;                    // requests per batch in the checks
  bool tiers = true;  // resources: created with the suite's memory tier chain (memory_tier.h)
  // Submodules: float outputs of two runs may differ by this much relative to their largest
  // magnitude (0: byte-exact), for forwards whose reductions depend on the batch's shape.
  double tolerance = 0;
  // Submodules whose forward reads a resource's plan (a KV cache): the resource factory driven
  // through declare / admit / plan / commit around each forward, its view given under label.
  struct Resource {
    std::string plugin;  // a resource factory's name
    std::string label = "kv";
    std::shared_ptr<const ConfigTree> config;
    FactoryRef factory;  // resolved by the runner; empty when it could not be found
    std::string error;   // why it could not be found
  };
  std::optional<Resource> resource;
};

struct RuleStop {
  Verdict verdict;
  std::string message;
  // A failure because the factory cannot create an instance: the runner reports it once per
  // factory and skips the factory's later rules.
  bool no_instance = false;
};

struct Subject {
  PluginManifest manifest;
  std::shared_ptr<PluginLibrary> library;  // null when the library did not load
  const mstar_factory_t* factory = nullptr;
  FactorySettings settings;

  FactoryRef ref() const { return FactoryRef{library, factory}; }
  // A new instance of the factory with the settings' config; fails the rule (a no_instance
  // RuleStop, with create's message) when create fails.
  std::unique_ptr<PluginInstance> Create(const std::string& name = "conformance") const;
};

[[noreturn]] inline void Fail(std::string message) {
  throw RuleStop{Verdict::kFail, std::move(message)};
}
[[noreturn]] inline void Skip(std::string message) {
  throw RuleStop{Verdict::kSkip, std::move(message)};
}
inline void Require(bool condition, const std::string& message) {
  if (!condition) Fail(message);
}
// Fails with "<what>: <status>" unless status is OK.
void RequireOk(const Status& status, const std::string& what);
// Says what a rule that passes did not check (a missing optional hook): the runner reports it
// with the pass. Later notes are appended.
void Note(const std::string& message);

struct Rule {
  RuleInfo info;
  std::function<void(const Subject&)> check;
};

std::vector<Rule> PluginRules();
std::vector<Rule> SubmoduleRules();
std::vector<Rule> ResourceRules();
std::vector<Rule> TierRules();

// Tensor helpers for the rules.
mstar_tensor_t* Int64Tensor(const std::vector<int64_t>& values);
mstar_tensor_t* Float32Tensor(const std::vector<double>& values);
// Whether two maps hold the same names, counts, dtypes, shapes and bytes; *why says the first
// difference. With tolerance > 0, float32 tensors may differ element-wise by up to tolerance
// times the larger of 1 and their largest magnitude.
bool SameMaps(const mstar_tensor_map& a, const mstar_tensor_map& b, std::string* why,
              double tolerance = 0);

}  // namespace mstar::conformance

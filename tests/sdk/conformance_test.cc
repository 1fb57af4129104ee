// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The conformance suite against real libraries: every reference plugin built in this tree passes
// (with its conformance.toml when it has one), and each deliberately non-conforming plugin fails
// exactly the rule it breaks and nothing else.
#include "conformance.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "plugins/tiny_codec/tiny_weights.h"
#include "support/test_support.h"

namespace mstar::conformance {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> Failures(const std::vector<RuleResult>& results) {
  std::vector<std::string> out;
  for (const RuleResult& r : results) {
    if (r.verdict == Verdict::kFail)
      out.push_back(r.id + (r.factory.empty() ? "" : "[" + r.factory + "]") + ": " + r.message);
  }
  return out;
}

std::string NonConforming(const std::string& name) {
  return std::string(MSTAR_TEST_PLUGIN_DIR) + "/" + name + "/" + name + ".toml";
}

TEST(Conformance, EveryReferencePluginPasses) {
  // The reference configs name weights relative to the working directory (build/weights/, as
  // `make run` leaves them): run from a scratch directory holding freshly made weights.
  test::TempDir work;
  fs::create_directories(work.file("build"));
  test::CommandResult made = test::RunMakeTinyWeights("'" + work.file("build/weights") + "'");
  ASSERT_EQ(made.exit_code, 0) << made.out << made.err;
  fs::path previous = fs::current_path();
  fs::current_path(work.path());
  fs::path root = fs::path(MSTAR_BUILD_DIR) / "lib/mstar/plugins";
  size_t checked = 0;
  for (const fs::directory_entry& dir : fs::directory_iterator(root)) {
    fs::path manifest = dir.path() / (dir.path().filename().string() + ".toml");
    if (!fs::exists(manifest)) continue;
    Options options;
    for (const char* parent : {"plugins", "sdk"}) {
      fs::path config =
          fs::path(MSTAR_SOURCE_DIR) / parent / dir.path().filename() / "conformance.toml";
      if (fs::exists(config)) options.config_path = config.string();
    }
    std::vector<RuleResult> results = RunConformance(manifest.string(), options);
    EXPECT_TRUE(Failures(results).empty()) << manifest << ":\n"
                                           << testing::PrintToString(Failures(results));
    for (const RuleResult& r : results) {
      // A reference plugin skips only what its conformance.toml says, or what does not apply.
      if (r.verdict != Verdict::kSkip) continue;
      EXPECT_EQ(r.message.find("cannot create"), std::string::npos)
          << manifest << ": " << r.message;
    }
    if (dir.path().filename() == "kv_paged") {
      // Offload and reload run against the suite's own memory tier, not skipped.
      auto offload = std::find_if(results.begin(), results.end(), [](const RuleResult& r) {
        return r.id == "resource.offload-reload";
      });
      ASSERT_NE(offload, results.end());
      EXPECT_EQ(offload->verdict, Verdict::kPass) << offload->message;
    }
    ++checked;
  }
  fs::current_path(previous);
  EXPECT_GE(checked, 2u);
}

TEST(Conformance, TheKitPasses) {
  std::vector<RuleResult> results = RunConformance(test::TestPluginDir("kit") + "/kit.toml", {});
  EXPECT_TRUE(Failures(results).empty()) << testing::PrintToString(Failures(results));
}

struct Case {
  const char* plugin;
  const char* rule;
  const char* message;  // part of the failure message
};

class NonConformingPlugin : public testing::TestWithParam<Case> {};

TEST_P(NonConformingPlugin, FailsExactlyTheRuleItBreaks) {
  const Case& c = GetParam();
  std::vector<RuleResult> results = RunConformance(NonConforming(c.plugin), {});
  std::vector<std::string> failures = Failures(results);
  ASSERT_EQ(failures.size(), 1u) << testing::PrintToString(failures);
  EXPECT_EQ(failures[0].rfind(c.rule, 0), 0u) << failures[0];
  EXPECT_NE(failures[0].find(c.message), std::string::npos) << failures[0];
}

INSTANTIATE_TEST_SUITE_P(
    Faults, NonConformingPlugin,
    testing::Values(
        Case{"nc_export", "plugin.exports-only-entry", "-fvisibility=hidden"},
        Case{"nc_throw", "submodule.errors-are-statuses", "exception escaped"},
        Case{"nc_batched", "submodule.batched-equals-single", "forward_batched differs"},
        Case{"nc_nondeterminism", "submodule.deterministic", "different outputs"},
        Case{"nc_leaky_resource", "resource.step-protocol", "abort_step did not give back"},
        Case{"nc_corrupt_tier", "tier.round-trip", "different bytes"},
        Case{"nc_lossy_offload", "resource.offload-reload", "byte-exact"}),
    [](const testing::TestParamInfo<Case>& param) { return std::string(param.param.plugin); });

TEST(Conformance, APluginThatRefusesNewerHostsFailsTheNewerHostRule) {
  Options options;
  options.rules = {"plugin.negotiates-newer-host"};
  std::vector<RuleResult> refuses =
      RunConformance(test::TestPluginDir("fault_exact_minor") + "/fault_exact_minor.toml", options);
  ASSERT_EQ(refuses.size(), 1u);
  EXPECT_EQ(refuses[0].verdict, Verdict::kFail);
  EXPECT_NE(refuses[0].message.find("must run on newer hosts"), std::string::npos)
      << refuses[0].message;
  // The same raw-ABI plugin without the fault negotiates down and passes.
  std::vector<RuleResult> adapts =
      RunConformance(test::TestPluginDir("dup_a") + "/dup_a.toml", options);
  ASSERT_EQ(adapts.size(), 1u);
  EXPECT_EQ(adapts[0].verdict, Verdict::kPass) << adapts[0].message;
}

TEST(Conformance, AnUnloadableManifestFailsTheLoadRuleOnly) {
  test::TempDir dir;
  std::string path = dir.file("broken.toml");
  { std::ofstream(path) << "format = 1\n[plugin]\nname = \"x\"\n"; }
  std::vector<RuleResult> results = RunConformance(path, {});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].id, "plugin.loads");
  EXPECT_EQ(results[0].verdict, Verdict::kFail);
  EXPECT_NE(results[0].message.find("broken.toml"), std::string::npos) << results[0].message;
}

}  // namespace
}  // namespace mstar::conformance

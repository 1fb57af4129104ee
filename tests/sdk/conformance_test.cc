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

#include "host/tensor_objects.h"
#include "plugins/tiny_codec/tiny_weights.h"
#include "rule_context.h"
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
  test::CommandResult made =
      test::RunMakeTinyWeights(test::ShellQuoted(work.file("build/weights")));
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
    if (dir.path().filename() == "tiny_lm") {
      // Its forward rules run against a kv_paged instance the suite drives beside it.
      for (const char* id : {"submodule.batched-equals-single", "submodule.deterministic",
                             "submodule.foreign-thread-release"}) {
        auto rule = std::find_if(results.begin(), results.end(),
                                 [&](const RuleResult& r) { return r.id == id; });
        ASSERT_NE(rule, results.end()) << id;
        EXPECT_EQ(rule->verdict, Verdict::kPass) << id << ": " << rule->message;
      }
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

// tiny_lm paired with a kv_paged resource through settings written here (weights made fresh).
class PairedResource : public testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(std::string(MSTAR_BUILD_DIR) + "/lib/mstar/plugins/tiny_lm"))
      GTEST_SKIP() << "built without LibTorch: no tiny_lm";
    test::CommandResult made = test::RunMakeTinyWeights(test::ShellQuoted(work_.file("weights")));
    ASSERT_EQ(made.exit_code, 0) << made.out << made.err;
  }
  // factory_config: more keys of tiny_lm's config table (", key = value, ...").
  std::vector<RuleResult> Run(const std::string& resource_table, const std::string& rule,
                              const std::string& factory_config = "",
                              const std::vector<std::string>& plugin_roots = {}) {
    std::string config = work_.file("conformance.toml");
    std::ofstream(config) << "[factories.tiny_lm]\nconfig = { weights = \""
                          << work_.file("weights/tiny-lm") << "\"" << factory_config
                          << " }\ntolerance = 1e-5\n"
                          << "[factories.tiny_lm.resource]\n"
                          << resource_table;
    Options options;
    options.config_path = config;
    options.rules = {rule};
    options.plugin_roots = plugin_roots;
    return RunConformance(std::string(MSTAR_BUILD_DIR) + "/lib/mstar/plugins/tiny_lm/tiny_lm.toml",
                          options);
  }
  test::TempDir work_;
};

TEST_F(PairedResource, DrivesTheResourceAroundEachForward) {
  std::vector<RuleResult> results =
      Run("plugin = \"kv_paged\"\nconfig = { page_size = 16, num_pages = 16, layers = 2, "
          "kv_heads = 2, head_dim = 16 }\n",
          "submodule.batched-equals-single");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].verdict, Verdict::kPass) << results[0].message;
}

// tiny_lm's packed prefill regions are buckets of any batch size (batch_size 0), which the
// runtime accepts: the rule accepts them too.
TEST_F(PairedResource, PackedBucketsOfAnyBatchSizePassTheCaptureConfigRule) {
  std::vector<RuleResult> results =
      Run("plugin = \"kv_paged\"\nconfig = { page_size = 16, num_pages = 16, layers = 2, "
          "kv_heads = 2, head_dim = 16 }\n",
          "submodule.capture-configs", ", capture = true, capture_prefill_tokens = [32, 64]");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].verdict, Verdict::kPass) << results[0].message;
}

TEST_F(PairedResource, AResourceTooSmallForTheRequestsFailsNamingTheRequest) {
  // One page: the first request's prompt fits, the second's does not.
  std::vector<RuleResult> results =
      Run("plugin = \"kv_paged\"\nconfig = { page_size = 16, num_pages = 1, layers = 2, "
          "kv_heads = 2, head_dim = 16 }\n",
          "submodule.batched-equals-single");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].verdict, Verdict::kFail);
  EXPECT_NE(results[0].message.find("did not admit request 2 (not ready)"), std::string::npos)
      << results[0].message;
}

TEST_F(PairedResource, ABadValueInTheResourceConfigIsNamedAtItsLine) {
  std::vector<RuleResult> results =
      Run("plugin = \"kv_paged\"\nconfig = { page_size = \"x\", num_pages = 16, layers = 2, "
          "kv_heads = 2, head_dim = 16 }\n",
          "submodule.deterministic");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].verdict, Verdict::kFail);
  EXPECT_NE(results[0].message.find("conformance.toml:6:24: factories.tiny_lm.resource.config."
                                    "page_size: "),
            std::string::npos)
      << results[0].message;
}

TEST_F(PairedResource, AnUnknownResourceFailsSayingWhereItWasLookedFor) {
  std::vector<RuleResult> results = Run("plugin = \"kv_missing\"\n", "submodule.deterministic");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].verdict, Verdict::kFail);
  EXPECT_NE(results[0].message.find("'kv_missing'"), std::string::npos) << results[0].message;
  EXPECT_NE(results[0].message.find("MSTAR_PLUGIN_PATH"), std::string::npos) << results[0].message;
}

// The runtime config's plugin roots (`mstar --config RT conformance ...`) are searched for the
// resource too: kit_counter lives only under the kit's test directory.
TEST_F(PairedResource, AResourceUnderThePluginRootsIsFound) {
  const std::string not_found = "named in the conformance config";
  std::vector<RuleResult> without = Run("plugin = \"kit_counter\"\n", "submodule.deterministic");
  ASSERT_EQ(without.size(), 1u);
  EXPECT_NE(without[0].message.find(not_found), std::string::npos) << without[0].message;
  std::vector<RuleResult> with = Run("plugin = \"kit_counter\"\n", "submodule.deterministic", "",
                                     {test::TestPluginDir("kit")});
  ASSERT_EQ(with.size(), 1u);
  EXPECT_EQ(with[0].message.find(not_found), std::string::npos) << with[0].message;
}

TEST_F(PairedResource, AMalformedResourceTableIsABadConfigNamingTheLine) {
  std::vector<RuleResult> results = Run("label = \"kv\"\n", "submodule.deterministic");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].id, "plugin.loads");
  EXPECT_EQ(results[0].verdict, Verdict::kFail);
  EXPECT_NE(results[0].message.find(
                "conformance.toml:4:1: factories.tiny_lm.resource.plugin: missing required key"),
            std::string::npos)
      << results[0].message;
}

TEST(Conformance, TheKitPasses) {
  std::vector<RuleResult> results = RunConformance(test::TestPluginDir("kit") + "/kit.toml", {});
  EXPECT_TRUE(Failures(results).empty()) << testing::PrintToString(Failures(results));
}

// The suite reads a submodule's descriptors as the runtime does when a model loads, so a plugin
// it passes is one the runtime loads.
TEST(Conformance, DescriptorsTheRuntimeRefusesFailTheirRule) {
  Options captures;
  captures.rules = {"submodule.capture-configs"};
  std::vector<RuleResult> bad = RunConformance(
      test::TestPluginDir("fault_bad_capture_config") + "/fault_bad_capture_config.toml", captures);
  ASSERT_EQ(Failures(bad).size(), 1u) << testing::PrintToString(Failures(bad));
  EXPECT_NE(Failures(bad)[0].find("capture_configs: configs[0].replay_walks[0] is NULL"),
            std::string::npos)
      << Failures(bad)[0];
  Options info;
  info.rules = {"submodule.create-destroy"};
  std::vector<RuleResult> null_name = RunConformance(
      test::TestPluginDir("fault_null_stop_output") + "/fault_null_stop_output.toml", info);
  ASSERT_EQ(Failures(null_name).size(), 1u) << testing::PrintToString(Failures(null_name));
  EXPECT_NE(Failures(null_name)[0].find("info: stop_outputs[1] is NULL"), std::string::npos)
      << Failures(null_name)[0];
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
        Case{"nc_batched", "submodule.batched-equals-single",
             "forward_batched differs from forward (output"},
        Case{"nc_nondeterminism", "submodule.deterministic", "different outputs"},
        Case{"nc_leaky_resource", "resource.step-protocol", "abort_step did not give back"},
        Case{"nc_corrupt_tier", "tier.round-trip", "different bytes"},
        Case{"nc_overfull_tier", "tier.capacity",
             "CONTAINS finds 8192 bytes of blocks in a tier of 4096 bytes"},
        Case{"nc_lossy_offload", "resource.offload-reload", "byte-exact"},
        Case{"nc_columnar_rows", "submodule.columnar-equals-per-request",
             "columnar output 'tokens' has 9 rows for 3 requests and no row "
             "offsets"},
        Case{"nc_create", "submodule.create-destroy",
             "cannot create an instance with the conformance config"},
        Case{"nc_leaky_nostats", "resource.step-protocol",
             "abort_step must give back what admit took"},
        Case{"nc_stop_throws", "submodule.check-stop", "nc_adder: the stop check is broken"},
        Case{"nc_stop_unlisted", "submodule.check-stop", "(list those in stop_outputs)"},
        Case{"nc_stop_batched", "submodule.check-stop",
             "check_stop_batched gives stop mask 1, check_stop 0"},
        Case{"nc_never_ready", "resource.step-protocol",
             "admit never answered ready for a single request of 1 token on an empty "
             "resource"}),
    [](const testing::TestParamInfo<Case>& param) { return std::string(param.param.plugin); });

// Each rule runs in a child process that ends with _exit, which skips the sanitizers' exit-time
// checks; the child asks them itself. In a sanitized build a plugin that leaks, or races, fails
// the rules that show it; elsewhere nothing can see either, so these tests skip.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kLeakSanitizer = true;
#else
constexpr bool kLeakSanitizer = false;
#endif
#if defined(__SANITIZE_THREAD__)
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif

// The failure of rule among results, or "" when it did not fail.
std::string FailureOf(const std::vector<RuleResult>& results, const std::string& rule) {
  for (const std::string& failure : Failures(results)) {
    if (failure.rfind(rule, 0) == 0) return failure;
  }
  return "";
}

// create-destroy fails an instance that leaves a block from the host's memory_alloc (in every
// build: the host counts its blocks, which LeakSanitizer sees as reachable), and one whose
// destroy lets an exception escape (the host catches and logs it).
TEST(Conformance, CreateDestroyFailsLeftHostMemoryAndAnExceptionOutOfDestroy) {
  Options options;
  options.rules = {"submodule.create-destroy"};
  for (const auto& [plugin, message] : std::vector<std::pair<std::string, std::string>>{
           {"nc_leaky_alloc", "an instance destroyed left 4096 bytes from memory_alloc"},
           {"nc_destroy_throws",
            "destroy threw a C++ exception through the C ABI (destroy fails)"}}) {
    std::vector<RuleResult> results = RunConformance(NonConforming(plugin), options);
    ASSERT_EQ(results.size(), 1u) << plugin;
    EXPECT_EQ(results[0].verdict, Verdict::kFail) << plugin;
    EXPECT_NE(results[0].message.find(message), std::string::npos) << results[0].message;
  }
}

// An exception that crosses the C ABI fails the rule whatever the hook's caller made of it: here
// cleanup_request (which returns nothing, so no rule sees an error) throws, and every rule that
// ends requests fails naming it; the rules that end none pass.
TEST(Conformance, AnExceptionThroughTheAbiFailsEveryRuleItEscapesIn) {
  std::vector<RuleResult> results = RunConformance(NonConforming("nc_cleanup_throws"), {});
  std::vector<std::string> failures = Failures(results);
  ASSERT_FALSE(failures.empty());
  for (const std::string& failure : failures) {
    EXPECT_NE(failure.find("cleanup_request threw a C++ exception through the C ABI (cleanup "
                           "fails)"),
              std::string::npos)
        << failure;
  }
  EXPECT_NE(FailureOf(results, "submodule.check-stop"), "");
  EXPECT_EQ(FailureOf(results, "resource.step-protocol"), "");
}

TEST(Conformance, InASanitizedBuildAnInstanceThatLeaksFailsCreateDestroy) {
  if (!kLeakSanitizer) GTEST_SKIP() << "only a build with LeakSanitizer (make asan) sees leaks";
  std::vector<RuleResult> results = RunConformance(NonConforming("nc_leaky_instance"), {});
  const std::string failure = FailureOf(results, "submodule.create-destroy");
  EXPECT_NE(failure.find("LeakSanitizer found memory the rule's instances leaked"),
            std::string::npos)
      << testing::PrintToString(Failures(results));
}

TEST(Conformance, InATsanBuildAForwardThatRacesFailsTheRulesThatRunIt) {
  if (!kThreadSanitizer) GTEST_SKIP() << "only a ThreadSanitizer build (make tsan) sees races";
  std::vector<RuleResult> results = RunConformance(NonConforming("nc_racy_forward"), {});
  const std::string failure = FailureOf(results, "submodule.deterministic");
  EXPECT_NE(failure.find("a sanitizer printed"), std::string::npos)
      << testing::PrintToString(Failures(results));
}

TEST(Conformance, AFactoryThatCannotBeCreatedFailsOnceSayingWhyUnlessTheSettingsSkipIt) {
  // The factory's first rule fails with the reason; its other rules skip, naming that rule.
  std::vector<RuleResult> results = RunConformance(NonConforming("nc_create"), {});
  size_t checked = 0;
  for (const RuleResult& r : results) {
    if (r.factory != "nc_adder") continue;
    ++checked;
    if (r.id == "submodule.create-destroy") {
      EXPECT_EQ(r.verdict, Verdict::kFail);
      EXPECT_NE(r.message.find("nc_adder: the model failed to start"), std::string::npos)
          << r.message;
      continue;
    }
    EXPECT_EQ(r.verdict, Verdict::kSkip) << r.id;
    EXPECT_NE(r.message.find("see submodule.create-destroy"), std::string::npos) << r.message;
  }
  EXPECT_GE(checked, 2u);
  // Run alone, any rule that needs an instance fails with the reason.
  Options one;
  one.rules = {"submodule.deterministic"};
  std::vector<RuleResult> alone = RunConformance(NonConforming("nc_create"), one);
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].verdict, Verdict::kFail);
  EXPECT_NE(alone[0].message.find("cannot create an instance"), std::string::npos)
      << alone[0].message;
  // A factory the settings skip as a whole is skipped with their reason.
  test::TempDir dir;
  test::WriteFile(dir.file("settings.toml"), "[factories.nc_adder]\nskip = \"needs a GPU\"\n");
  Options skip;
  skip.config_path = dir.file("settings.toml");
  std::vector<RuleResult> skipped = RunConformance(NonConforming("nc_create"), skip);
  EXPECT_TRUE(Failures(skipped).empty()) << testing::PrintToString(Failures(skipped));
  for (const RuleResult& r : skipped) {
    if (r.factory != "nc_adder") continue;
    EXPECT_EQ(r.verdict, Verdict::kSkip) << r.id;
    EXPECT_EQ(r.message, "skipped by the config: needs a GPU") << r.id;
  }
}

TEST(Conformance, AResourceWithoutStatsRunsTheStepProtocolSayingTheAccountingWentUnchecked) {
  Options options;
  options.rules = {"resource.step-protocol"};
  std::vector<RuleResult> results = RunConformance(NonConforming("nc_nostats"), options);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].verdict, Verdict::kPass) << results[0].message;
  EXPECT_NE(results[0].message.find("no stats hook"), std::string::npos) << results[0].message;
}

// Two outputs of different shapes are described, so the author sees which differs how.
TEST(Conformance, OutputsOfDifferentShapesAreDescribed) {
  TensorMapPtr a = NewTensorMap();
  TensorMapPtr b = NewTensorMap();
  ASSERT_TRUE(
      a->Append("tokens", AllocateTensor(nullptr, {kDLCPU, 0}, {kDLInt, 64, 1}, {3}).value()).ok());
  ASSERT_TRUE(
      b->Append("tokens", AllocateTensor(nullptr, {kDLCPU, 0}, {kDLInt, 64, 1}, {2, 1}).value())
          .ok());
  std::string why;
  EXPECT_FALSE(SameMaps(*a, *b, &why, 0));
  EXPECT_EQ(why, "output 'tokens' differs in dtype or shape: int64 [3] vs int64 [2, 1]");
}

// A hook that never returns fails its rule at the timeout, naming the hook.
TEST(Conformance, AHookThatNeverReturnsIsNamedWhenItsRuleTimesOut) {
  Options options;
  options.rules = {"submodule.batched-equals-single"};
  options.timeout_s = 4;  // the hooks before the hanging one must be done by then, under TSan too
  std::vector<RuleResult> results = RunConformance(NonConforming("nc_hang"), options);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].verdict, Verdict::kFail);
  EXPECT_NE(results[0].message.find("no answer within 4 s: the last hook called, "),
            std::string::npos)
      << results[0].message;
  EXPECT_NE(results[0].message.find(": forward_batched, did not return"), std::string::npos)
      << results[0].message;
}

// Loading runs the library's entry: one that crashes fails the load rule (loaded first in a
// child process) instead of taking the runner down with it.
TEST(Conformance, ALibraryWhoseEntryCrashesFailsTheLoadRule) {
  std::vector<RuleResult> results = RunConformance(
      test::TestPluginDir("fault_entry_crashes") + "/fault_entry_crashes.toml", Options{});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].id, "plugin.loads");
  EXPECT_EQ(results[0].verdict, Verdict::kFail);
  // Signal 11; under a sanitizer, which catches the signal and exits, no answer at all.
  const std::string& why = results[0].message;
  EXPECT_TRUE(why.find("loading: the process died with signal 11") != std::string::npos ||
              why.find("loading: the check ended without an answer") != std::string::npos)
      << why;
}

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

std::string EchoManifest() {
  return std::string(MSTAR_BUILD_DIR) + "/lib/mstar/plugins/echo/echo.toml";
}

// CheckInput's answer for the echo plugin with these settings ("" when they are good).
std::string CheckSettings(const test::TempDir& dir, const std::string& settings) {
  test::WriteFile(dir.file("settings.toml"), settings);
  Options options;
  options.config_path = dir.file("settings.toml");
  return CheckInput(EchoManifest(), options);
}

TEST(Conformance, SettingsOutOfRangeOrUnknownAreBadInputNamingFileLineAndKey) {
  test::TempDir dir;
  const std::string file = dir.file("settings.toml");
  const std::string inputs = "[factories.echo]\ninputs = { tokens = [104, 105, 33] }\n";
  EXPECT_EQ(CheckSettings(dir, inputs + "requests = 2\n"), "");
  EXPECT_EQ(CheckSettings(dir, ""), "");
  for (const char* requests : {"-1", "0", "1025"}) {
    EXPECT_EQ(CheckSettings(dir, inputs + "requests = " + requests + "\n"),
              file + ":3:12: factories.echo.requests: must be from 1 to 1024 (requests per " +
                  "batch), not " + requests);
  }
  EXPECT_EQ(CheckSettings(dir, "[factories.ghost]\ninputs = {}\n"),
            file + ":1:1: factories.ghost: the plugin provides no factory 'ghost' (it provides " +
                "echo, echo_chunk)");
  EXPECT_EQ(CheckSettings(dir, "[factories.echo]\ninputz = { tokens = [1] }\n"),
            file + ":2:10: factories.echo.inputz: unknown key");
  EXPECT_EQ(CheckSettings(dir, "bogus = 1\n"), file + ":1:9: bogus: unknown key");
  EXPECT_EQ(CheckSettings(dir, inputs + "skip = { \"submodule.determinstic\" = \"x\" }\n"),
            file + ":3:37: factories.echo.skip.submodule.determinstic: unknown rule " +
                "'submodule.determinstic' (see mstar conformance --list)");
  EXPECT_EQ(CheckSettings(dir, inputs + "skip = \"needs a GPU\"\n"), "");
  EXPECT_EQ(CheckSettings(dir, inputs + "skip = \"\"\n"),
            file + ":3:8: factories.echo.skip: give the reason every rule of the factory is " +
                "skipped (a non-empty string)");
  EXPECT_EQ(CheckSettings(dir, inputs + "skip = { \"submodule.deterministic\" = \"\" }\n"),
            file + ":3:38: factories.echo.skip.submodule.deterministic: give the reason the rule " +
                "is skipped (a non-empty string)");
  EXPECT_EQ(CheckSettings(dir, "[factories.echo]\ninputs = { tokens = [1, \"a\"] }\n"),
            file + ":2:25: factories.echo.inputs.tokens[1]: expected a number, found string");
  EXPECT_NE(CheckSettings(dir, "[factories.echo\n").find(file + ":1:16: TOML syntax error"),
            std::string::npos);
  // Refused input runs no rule: the load rule fails with the problem.
  Options options;
  options.config_path = file;
  std::vector<RuleResult> results = RunConformance(EchoManifest(), options);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].id, "plugin.loads");
  EXPECT_NE(results[0].message.find("TOML syntax error"), std::string::npos);
}

TEST(Conformance, ABadValueInAFactoryConfigIsNamedAtItsLine) {
  test::TempDir dir;
  test::WriteFile(dir.file("settings.toml"),
                  "[factories.echo]\ninputs = { tokens = [104, 105, 33] }\n"
                  "config = { repeat = \"twice\" }\n");
  Options options;
  options.config_path = dir.file("settings.toml");
  options.rules = {"submodule.create-destroy"};
  std::vector<RuleResult> results = RunConformance(EchoManifest(), options);
  auto echo = std::find_if(results.begin(), results.end(),
                           [](const RuleResult& r) { return r.factory == "echo"; });
  ASSERT_NE(echo, results.end());
  EXPECT_EQ(echo->verdict, Verdict::kFail);
  EXPECT_NE(echo->message.find(dir.file("settings.toml") + ":3:21: factories.echo.config.repeat: "),
            std::string::npos)
      << echo->message;
}

TEST(Conformance, OptionsAndManifestsThatAreNotPluginManifestsAreBadInput) {
  Options timeout;
  timeout.timeout_s = 0;
  EXPECT_EQ(CheckInput(EchoManifest(), timeout), "--timeout 0: must be from 1 to 86400 seconds");
  Options kind;
  kind.kinds = {"widget"};
  EXPECT_EQ(CheckInput(EchoManifest(), kind),
            "--kind widget: unknown kind (plugin, submodule, resource or tier)");
  Options rule;
  rule.rules = {"bogus.rule"};
  EXPECT_EQ(CheckInput(EchoManifest(), rule), "--rule bogus.rule: unknown rule (see --list)");
  const std::string model = std::string(MSTAR_SOURCE_DIR) + "/manifests/models/echo.toml";
  EXPECT_EQ(CheckInput(model, {}), model +
                                       ": plugin: not a plugin manifest (no [plugin] table); "
                                       "give the plugin's manifest (PLUGIN.toml)");
  test::TempDir dir;
  EXPECT_NE(CheckInput(dir.path(), {}).find("not a regular file"), std::string::npos);
  EXPECT_NE(CheckInput(dir.file("absent.toml"), {}).find("absent.toml: cannot read file"),
            std::string::npos);
  // A plugin manifest with errors is the plugin's failure (plugin.loads), not bad input.
  test::WriteFile(dir.file("broken.toml"), "format = 1\n[plugin]\nname = \"x\"\n");
  EXPECT_EQ(CheckInput(dir.file("broken.toml"), {}), "");
  EXPECT_EQ(CheckInput(EchoManifest(), {}), "");
}

}  // namespace
}  // namespace mstar::conformance

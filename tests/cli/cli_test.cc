// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The mstar CLI as operators use it: output, exit codes, and messages.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace mstar {
namespace {

using test::RunCli;

std::string PluginPath(const std::string& dir) {
  return "--no-default-paths --plugin-path " + dir;
}

TEST(Cli, VersionAndHelp) {
  test::CommandResult version = RunCli("--version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.out.find("mstar 0.1.0 (plugin ABI 1." + std::to_string(MSTAR_ABI_MINOR)),
            std::string::npos)
      << version.out;
  test::CommandResult help = RunCli("plugins --help");
  EXPECT_EQ(help.exit_code, 0);
  // Each subcommand has its line in the list (the description names some of them too).
  for (const char* subcommand : {"list", "inspect", "validate"}) {
    EXPECT_NE(help.out.find("\n  " + std::string(subcommand) + "  "), std::string::npos)
        << subcommand << " in:\n"
        << help.out;
  }
  test::CommandResult validate_help = RunCli("plugins validate --help");
  EXPECT_NE(validate_help.out.find("exits 0 when all are valid, 2 otherwise"), std::string::npos);
  // Every command's help ends with how to call it.
  for (const char* command : {"run", "models list", "models validate", "plugins list",
                              "plugins inspect", "plugins validate", "conformance"}) {
    test::CommandResult command_help = RunCli(std::string(command) + " --help");
    EXPECT_EQ(command_help.exit_code, 0) << command;
    EXPECT_NE(command_help.out.find("Example"), std::string::npos) << command;
    EXPECT_NE(command_help.out.find("  mstar " + std::string(command)), std::string::npos)
        << command << ":\n"
        << command_help.out;
  }
}

// Help and the version are output like any other: when they cannot be written, the exit status
// says so.
TEST(Cli, HelpThatCannotBeWrittenFails) {
  for (const char* flags : {"--help", "--version", "run --help"}) {
    test::CommandResult full = test::Run(std::string(MSTAR_CLI) + " " + flags + " > /dev/full");
    EXPECT_EQ(full.exit_code, 1) << flags;
    EXPECT_NE(full.err.find("mstar: cannot write the output: No space left on device"),
              std::string::npos)
        << flags << ": " << full.err;
  }
}

// A runtime config that cannot be read names where its path came from: a stale $MSTAR_CONFIG
// breaks every command.
TEST(Cli, ARuntimeConfigProblemSaysWhereThePathCameFrom) {
  test::CommandResult from_env =
      test::Run("MSTAR_CONFIG=/nonexistent.toml " + std::string(MSTAR_CLI) + " models list");
  EXPECT_EQ(from_env.exit_code, 2);
  EXPECT_NE(from_env.err.find("runtime config ($MSTAR_CONFIG): /nonexistent.toml"),
            std::string::npos)
      << from_env.err;
  test::CommandResult from_flag = RunCli("--config /nonexistent.toml models list");
  EXPECT_EQ(from_flag.exit_code, 2);
  EXPECT_NE(from_flag.err.find("runtime config (--config): /nonexistent.toml"), std::string::npos)
      << from_flag.err;
  // A command's own --config (conformance's settings) is not the runtime config's flag.
  test::CommandResult own_flag =
      test::Run("MSTAR_CONFIG=/nonexistent.toml " + std::string(MSTAR_CLI) +
                " conformance x.toml --config settings.toml");
  EXPECT_EQ(own_flag.exit_code, 2);
  EXPECT_NE(own_flag.err.find("runtime config ($MSTAR_CONFIG): /nonexistent.toml"),
            std::string::npos)
      << own_flag.err;
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(RunCli("").exit_code, 2);
  test::CommandResult unknown = RunCli("frobnicate");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown command 'frobnicate' (commands: plugins, models, run, "
                             "conformance)"),
            std::string::npos)
      << unknown.err;
  test::CommandResult unknown_sub = RunCli("plugins frobnicate");
  EXPECT_EQ(unknown_sub.exit_code, 2);
  EXPECT_NE(unknown_sub.err.find("unknown command 'frobnicate' (commands: list, inspect, "
                                 "validate)"),
            std::string::npos)
      << unknown_sub.err;
  test::CommandResult bad_level = RunCli("--log-level loud plugins list");
  EXPECT_EQ(bad_level.exit_code, 2);
  EXPECT_NE(bad_level.err.find("unknown log level 'loud'"), std::string::npos);
}

TEST(Cli, LogLevelFromTheEnvironmentAndTheFlag) {
  test::TempDir dir;
  test::WriteFile(dir.file("model.toml"),
                  "[model]\n");  // not a plugin manifest: a debug-level skip
  std::string list = std::string(MSTAR_CLI) + " plugins list " + PluginPath(dir.path());
  test::CommandResult debug = test::Run("MSTAR_LOG_LEVEL=debug " + list);
  EXPECT_EQ(debug.exit_code, 0);
  EXPECT_NE(debug.err.find("plugin search: skipped " + dir.file("model.toml")), std::string::npos)
      << debug.err;
  test::CommandResult quiet = test::Run("MSTAR_LOG_LEVEL=debug " + list + " --log-level warn");
  EXPECT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("plugin search"), std::string::npos)
      << "the flag wins over the environment";
  test::CommandResult bad = test::Run("MSTAR_LOG_LEVEL=chatty " + list);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("MSTAR_LOG_LEVEL: unknown log level 'chatty'"), std::string::npos);
}

TEST(Cli, ListShowsPluginsAndRejections) {
  test::CommandResult result = RunCli("plugins list " + PluginPath(test::TemplatePluginDir()) +
                                      " " + "--plugin-path " + test::TestPluginDir("fault_major2"));
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.out.find("template  0.1.0    submodule:template_scale  1." +
                            std::to_string(MSTAR_ABI_MINOR)),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("Rejected (1):"), std::string::npos);
  EXPECT_NE(result.out.find("fault_major2.toml:8:1: abi: the library was built for ABI 2.3"),
            std::string::npos)
      << result.out;
  // The rejection is also logged, on stderr only.
  EXPECT_NE(result.err.find("plugin rejected"), std::string::npos);
}

TEST(Cli, ListJsonIsCleanOnStdout) {
  test::CommandResult result =
      RunCli("plugins list --json " + PluginPath(test::TestPluginDir("kit")) + " --plugin-path " +
             test::TestPluginDir("fault_entry_throws"));
  ASSERT_EQ(result.exit_code, 0);
  nlohmann::json doc = nlohmann::json::parse(result.out);  // throws if logs leaked into stdout
  ASSERT_EQ(doc["plugins"].size(), 1u);
  const nlohmann::json& kit = doc["plugins"][0];
  EXPECT_EQ(kit["name"], "kit");
  EXPECT_EQ(kit["version"], "1.2.3");
  EXPECT_EQ(kit["abi"], "1." + std::to_string(MSTAR_ABI_MINOR));
  EXPECT_EQ(kit["provides"].size(), 7u);
  EXPECT_EQ(kit["library"], test::TestPluginLibrary("kit"));
  ASSERT_EQ(doc["rejected"].size(), 1u);
  EXPECT_NE(doc["rejected"][0]["reason"].get<std::string>().find("threw an exception"),
            std::string::npos);
}

// JSON output holds what plugins and paths give it, which need not be UTF-8: such bytes are
// replaced, and the document still comes out whole.
TEST(Cli, ListJsonSurvivesAPathThatIsNotUtf8) {
  test::TempDir dir;
  const std::string odd = dir.path() + "/plugins-\xff";
  std::filesystem::copy(test::TestPluginDir("kit"), odd, std::filesystem::copy_options::recursive);
  test::CommandResult result =
      RunCli("plugins list --json --no-default-paths --plugin-path '" + odd + "'");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json doc = nlohmann::json::parse(result.out);
  ASSERT_EQ(doc["plugins"].size(), 1u) << result.out;
  EXPECT_NE(doc["plugins"][0]["library"].get<std::string>().find("plugins-\xef\xbf\xbd"),
            std::string::npos)
      << result.out;
}

TEST(Cli, RuntimeConfigRootsAreSearched) {
  test::TempDir dir;
  test::WriteFile(dir.file("runtime.toml"),
                  "format = 1\n[plugins]\nroots = [\"" + test::TestPluginDir("kit") + "\"]\n");
  test::CommandResult result =
      RunCli("--config " + dir.file("runtime.toml") + " plugins list --json --no-default-paths");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("\"origin\": \"runtime config\""), std::string::npos) << result.out;
  test::WriteFile(dir.file("bad.toml"), "format = 1\n[plugins]\nroots = 3\n");
  test::CommandResult bad = RunCli("--config " + dir.file("bad.toml") + " plugins list");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(
      bad.err.find(dir.file("bad.toml") + ":3:9: plugins.roots: expected an array, found integer"),
      std::string::npos)
      << bad.err;
}

// The runtime config's [device] is where nodes without a device run: a device this machine
// lacks fails the run as bad input, naming the node and where its device came from.
TEST(Cli, RuntimeConfigDeviceIsWhereNodesWithoutOneRun) {
  test::TempDir dir;
  test::WriteFile(dir.file("far.toml"), "format = 1\n[device]\ntype = \"cuda\"\nindex = 1024\n");
  const std::string echo = std::string(MSTAR_SOURCE_DIR) + "/manifests/models/echo.toml";
  test::CommandResult far =
      RunCli("--config " + dir.file("far.toml") + " run " + echo + " --prompt hi");
  EXPECT_EQ(far.exit_code, 2) << far.err;
  EXPECT_NE(far.err.find(".device (not set: the runtime config's [device])"), std::string::npos)
      << far.err;
  test::WriteFile(dir.file("cpu.toml"), "format = 1\n[device]\ntype = \"cpu\"\n");
  test::CommandResult cpu =
      RunCli("--config " + dir.file("cpu.toml") + " run " + echo + " --prompt hi");
  EXPECT_EQ(cpu.exit_code, 0) << cpu.err;
}

TEST(Cli, EnvironmentPluginPathIsSearched) {
  test::CommandResult result = test::Run("MSTAR_PLUGIN_PATH=" + test::TestPluginDir("kit") + " " +
                                         MSTAR_CLI + " plugins list --json");
  ASSERT_EQ(result.exit_code, 0);
  EXPECT_NE(result.out.find("\"origin\": \"MSTAR_PLUGIN_PATH\""), std::string::npos) << result.out;
}

TEST(Cli, InspectShowsFactoriesHooksAndExports) {
  test::CommandResult result =
      RunCli("plugins inspect kit " + PluginPath(test::TestPluginDir("kit")));
  ASSERT_EQ(result.exit_code, 0);
  EXPECT_NE(result.out.find("kit 1.2.3"), std::string::npos);
  EXPECT_NE(result.out.find("submodule kit_add"), std::string::npos);
  EXPECT_NE(
      result.out.find("optional hooks: max_batch_size, forward_batched, postprocess, check_stop"),
      std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("exports:   mstar_plugin_entry"), std::string::npos);
  test::CommandResult missing =
      RunCli("plugins inspect nope " + PluginPath(test::TestPluginDir("kit")));
  EXPECT_EQ(missing.exit_code, 2);  // a name that is not there is bad input
  EXPECT_NE(missing.err.find("mstar plugins inspect: no plugin named 'nope'"), std::string::npos)
      << missing.err;
  test::CommandResult rejected = RunCli("plugins inspect fault_entry_error " +
                                        PluginPath(test::TestPluginDir("fault_entry_error")));
  EXPECT_EQ(rejected.exit_code, 2);
  EXPECT_NE(rejected.err.find("deliberate failure in the entry point"), std::string::npos);
  // A manifest path instead of a name: that plugin, its directory searched first.
  const std::string kit_toml = test::TestPluginDir("kit") + "/kit.toml";
  test::CommandResult by_path = RunCli("plugins inspect " + kit_toml);
  EXPECT_EQ(by_path.exit_code, 0) << by_path.err;
  EXPECT_NE(by_path.out.find("kit 1.2.3"), std::string::npos) << by_path.out;
  EXPECT_NE(by_path.out.find("manifest:  " + kit_toml), std::string::npos) << by_path.out;
  test::CommandResult no_file = RunCli("plugins inspect /nonexistent/kit.toml");
  EXPECT_EQ(no_file.exit_code, 2);
  EXPECT_NE(no_file.err.find("/nonexistent/kit.toml"), std::string::npos) << no_file.err;
}

TEST(Cli, ValidateExitCodesAndOneLinePerProblem) {
  test::CommandResult good =
      RunCli("plugins validate " + test::TemplatePluginDir() + "/template.toml");
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_NE(good.out.find("ok: "), std::string::npos);
  // The same manifest named twice is noted, not an error.
  const std::string twice = test::TemplatePluginDir() + "/template.toml";
  test::CommandResult again = RunCli("plugins validate " + twice + " " + twice);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("already found earlier in the search order"), std::string::npos)
      << again.err;
  // ... but a directory named twice that holds no plugin manifest still has nothing to validate.
  test::TempDir models;
  test::WriteFile(models.file("m.toml"), "format = 1\n[model]\nname = \"m\"\n");
  test::CommandResult none = RunCli("plugins validate " + models.path() + " " + models.path());
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_NE(none.err.find("no plugin manifests found"), std::string::npos) << none.err;

  test::TempDir dir;
  test::WriteFile(
      dir.file("bad.toml"),
      "format = 1\n[plugin]\nname = \"bad\"\nversion = 7\nlibrary = \"libbad.so\"\n"
      "[abi]\nmajor = 1\nmin_minor = 0\nsurprise = 1\n[[provides]]\nkind = \"submodule\"\n"
      "name = \"x\"\n");
  test::CommandResult bad = RunCli("plugins validate " + dir.file("bad.toml"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find(dir.file("bad.toml") +
                         ":4:11: plugin.version: expected a string, found integer"),
            std::string::npos)
      << bad.err;
  EXPECT_NE(bad.err.find(dir.file("bad.toml") + ":9:12: abi.surprise: unknown key"),
            std::string::npos);
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 2);

  test::CommandResult load_fault =
      RunCli("plugins validate " + test::TestPluginDir("fault_no_entry"));
  EXPECT_EQ(load_fault.exit_code, 2);
  EXPECT_NE(load_fault.err.find("does not export mstar_plugin_entry"), std::string::npos);
  // --manifest-only does not open the library, so the same manifest passes.
  EXPECT_EQ(
      RunCli("plugins validate --manifest-only " + test::TestPluginDir("fault_no_entry")).exit_code,
      0);

  test::CommandResult nothing = RunCli("plugins validate " + dir.file("absent.toml"));
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_NE(nothing.err.find("no such file or directory"), std::string::npos);
}

TEST(Cli, ModelsListReadsADirectory) {
  test::TempDir dir;
  test::WriteFile(dir.file("tiny.toml"),
                  "format = 1\n[model]\nname = \"tiny\"\ndescription = \"a tiny "
                  "model\"\n[nodes.n]\nplugin = \"x\"\n"
                  "[partitions.p]\ninitial = \"w\"\n[walks.w]\npartition = \"p\"\nrun = \"n\"\n");
  test::WriteFile(dir.file("broken.toml"), "format = 1\n");
  test::CommandResult result = RunCli("models list --dir " + dir.path());
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.out.find("tiny  " + dir.file("tiny.toml") + "  a tiny model"), std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("broken  " + dir.file("broken.toml") + "  (invalid: "),
            std::string::npos)
      << result.out;
  test::CommandResult missing = RunCli("models list --dir " + dir.file("absent"));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("mstar models list: --dir " + dir.file("absent") +
                             ": No such file or directory"),
            std::string::npos)
      << missing.err;
}

TEST(Cli, ModelsValidateReportsEveryProblem) {
  std::string echo = std::string(MSTAR_SOURCE_DIR) + "/manifests/models/echo.toml";
  std::string plugins = " --plugin-path " + std::string(MSTAR_BUILD_DIR) + "/lib/mstar/plugins";
  test::CommandResult good = RunCli("models validate " + echo + plugins);
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_NE(good.out.find("ok: " + echo + " (model 'echo', 2 nodes, 3 walks, 2 partitions)"),
            std::string::npos);
  test::CommandResult bad =
      RunCli("models validate " + echo + plugins +
             " --set nodes.echo.plugin=nope --set partitions.main.transitions.decode=decodee");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(
      bad.err.find("partitions.main.transitions.decode: transition to an unknown walk 'decodee'"),
      std::string::npos)
      << bad.err;
  EXPECT_NE(bad.err.find("nodes.echo.plugin: unknown plugin"), std::string::npos) << bad.err;
  test::CommandResult plugin =
      RunCli("models validate " + echo + plugins + " --set nodes.echo.plugin=nope");
  EXPECT_EQ(plugin.exit_code, 2);
  EXPECT_NE(
      plugin.err.find("nodes.echo.plugin: unknown plugin: no plugin provides submodule 'nope'"),
      std::string::npos)
      << plugin.err;
}

TEST(Cli, ModelsValidateChecksTheCheckpointIsThere) {
  std::string llm = std::string(MSTAR_SOURCE_DIR) + "/manifests/models/tiny-llm.toml";
  test::CommandResult checkpoint =
      RunCli("models validate --no-plugins " + llm + " --set model.checkpoint=/nonexistent");
  EXPECT_EQ(checkpoint.exit_code, 2) << checkpoint.out;
  EXPECT_EQ(checkpoint.out.find("ok:"), std::string::npos) << checkpoint.out;
  EXPECT_NE(checkpoint.err.find("--set: model.checkpoint: checkpoint: /nonexistent does not exist"),
            std::string::npos)
      << checkpoint.err;
  test::CommandResult weights =
      RunCli("models validate --no-plugins " + llm + " --set nodes.lm.config.weights=/nonexistent");
  EXPECT_EQ(weights.exit_code, 2) << weights.out;
  EXPECT_NE(weights.err.find("nodes.lm.config.weights: checkpoint: /nonexistent does not exist"),
            std::string::npos)
      << weights.err;
  // A checkpoint that is there validates (its identity reads names and sizes, not tensors).
  test::TempDir dir;
  std::ofstream(dir.file("model.safetensors")) << "x";
  test::CommandResult good =
      RunCli("models validate --no-plugins " + llm + " --set model.checkpoint=" + dir.path());
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_NE(good.out.find("ok: " + llm), std::string::npos) << good.out;
}

TEST(Cli, AnEmptyFileIsReadAsAnEmptyTable) {
  // A 0-byte runtime config, model manifest or plugin manifest reports what it lacks, as a file
  // of one space does, not a read error.
  test::TempDir dir;
  test::WriteFile(dir.file("empty.toml"), "");
  test::CommandResult config = RunCli("--config " + dir.file("empty.toml") + " plugins list");
  EXPECT_EQ(config.exit_code, 2);
  EXPECT_NE(config.err.find(dir.file("empty.toml") + ":1:1: format: missing required key"),
            std::string::npos)
      << config.err;
  test::CommandResult model = RunCli("models validate --no-plugins " + dir.file("empty.toml"));
  EXPECT_EQ(model.exit_code, 2);
  EXPECT_NE(model.err.find("format: missing required key"), std::string::npos) << model.err;
  for (const test::CommandResult& result : {config, model})
    EXPECT_EQ(result.err.find("read error"), std::string::npos) << result.err;
}

TEST(Cli, ConformanceBadInputExitsTwoBeforeAnyRuleRuns) {
  const std::string echo = std::string(MSTAR_BUILD_DIR) + "/lib/mstar/plugins/echo/echo.toml";
  test::TempDir dir;
  test::WriteFile(dir.file("settings.toml"),
                  "[factories.echo]\ninputs = { tokens = [104, 105, 33] }\nrequests = -1\n");
  test::CommandResult requests =
      RunCli("conformance " + echo + " --config " + dir.file("settings.toml"));
  EXPECT_EQ(requests.exit_code, 2);
  EXPECT_NE(requests.err.find(dir.file("settings.toml") +
                              ":3:12: factories.echo.requests: must be from 1 to 1024"),
            std::string::npos)
      << requests.err;
  EXPECT_EQ(requests.out.find("FAIL"), std::string::npos) << requests.out;
  test::WriteFile(dir.file("ghost.toml"), "[factories.ghost]\ninputs = {}\n");
  test::CommandResult ghost = RunCli("conformance " + echo + " --config " + dir.file("ghost.toml"));
  EXPECT_EQ(ghost.exit_code, 2);
  EXPECT_NE(ghost.err.find(":1:1: factories.ghost: the plugin provides no factory 'ghost'"),
            std::string::npos)
      << ghost.err;
  test::WriteFile(dir.file("syntax.toml"), "[factories.echo\n");
  EXPECT_EQ(RunCli("conformance " + echo + " --config " + dir.file("syntax.toml")).exit_code, 2);
  test::CommandResult timeout = RunCli("conformance " + echo + " --timeout 0");
  EXPECT_EQ(timeout.exit_code, 2);
  EXPECT_NE(timeout.err.find("--timeout: Value 0 not in range 1 to 86400"), std::string::npos)
      << timeout.err;
  for (const char* octal_or_hex : {"010", "0x3c"}) {
    test::CommandResult not_decimal = RunCli("conformance " + echo + " --timeout " + octal_or_hex);
    EXPECT_EQ(not_decimal.exit_code, 2) << octal_or_hex;
    EXPECT_NE(not_decimal.err.find(std::string("--timeout: '") + octal_or_hex +
                                   "' is not a decimal number"),
              std::string::npos)
        << not_decimal.err;
  }
  test::CommandResult kind = RunCli("conformance " + echo + " --kind widget");
  EXPECT_EQ(kind.exit_code, 2);
  EXPECT_NE(kind.err.find("--kind widget: unknown kind"), std::string::npos) << kind.err;
  const std::string model = std::string(MSTAR_SOURCE_DIR) + "/manifests/models/echo.toml";
  for (const std::string& manifest : {model, dir.path(), dir.file("absent.toml")}) {
    test::CommandResult bad = RunCli("conformance " + manifest);
    EXPECT_EQ(bad.exit_code, 2) << manifest;
    EXPECT_NE(bad.err.find(manifest + ": "), std::string::npos) << bad.err;
    EXPECT_EQ(bad.out.find("plugin.loads"), std::string::npos) << bad.out;
  }
  EXPECT_NE(RunCli("conformance --help").out.find("1 to 86400"), std::string::npos);
  // A plugin manifest whose library is missing is the plugin failing to load: exit 1.
  test::WriteFile(dir.file("nolib.toml"),
                  "format = 1\n[plugin]\nname = \"nolib\"\nversion = \"1.0.0\"\n"
                  "library = \"libnolib.so\"\n[abi]\nmajor = 1\nmin_minor = 0\n"
                  "[[provides]]\nkind = \"submodule\"\nname = \"x\"\n");
  test::CommandResult nolib = RunCli("conformance " + dir.file("nolib.toml"));
  EXPECT_EQ(nolib.exit_code, 1) << nolib.err;
  EXPECT_NE(nolib.out.find("FAIL plugin.loads"), std::string::npos) << nolib.out;
}

// Each occurrence of a repeatable option takes one value, so a positional argument may follow it.
TEST(Cli, RepeatableOptionsTakeOneValueSoPositionalsMayFollow) {
  const std::string plugins = std::string(MSTAR_BUILD_DIR) + "/lib/mstar/plugins";
  const std::string model = std::string(MSTAR_SOURCE_DIR) + "/manifests/models/echo.toml";
  test::CommandResult validate = RunCli(
      "models validate --set model.max_output_tokens=1 "
      "--plugin-path " +
      plugins + " " + model);
  EXPECT_EQ(validate.exit_code, 0) << validate.err;
  EXPECT_NE(validate.out.find("ok: " + model), std::string::npos) << validate.out;
  test::CommandResult conformance =
      RunCli("conformance --kind plugin --rule plugin.loads " + plugins + "/echo/echo.toml");
  EXPECT_EQ(conformance.exit_code, 0) << conformance.err;
  EXPECT_NE(conformance.out.find("plugin.loads"), std::string::npos) << conformance.out;
  test::CommandResult inspect = RunCli("plugins inspect --plugin-path " + plugins + " echo");
  EXPECT_EQ(inspect.exit_code, 0) << inspect.err;
}

TEST(Cli, PluginPathsThatAreNotDirectoriesAreReported) {
  test::TempDir dir;
  test::WriteFile(dir.file("file.toml"), "format = 1\n");
  for (const std::string command : {"plugins list", "plugins inspect kit"}) {
    test::CommandResult missing =
        RunCli(command + " --no-default-paths --plugin-path " + dir.file("absent"));
    EXPECT_EQ(missing.exit_code, 2) << command;
    EXPECT_NE(missing.err.find("--plugin-path " + dir.file("absent") + ": no such directory"),
              std::string::npos)
        << missing.err;
    EXPECT_EQ(missing.out.find("No plugins loaded"), std::string::npos) << missing.out;
    test::CommandResult file = RunCli(command + " --plugin-path " + dir.file("file.toml"));
    EXPECT_EQ(file.exit_code, 2) << command;
    EXPECT_NE(file.err.find(dir.file("file.toml") + ": not a directory"), std::string::npos)
        << file.err;
  }
  const std::string echo = std::string(MSTAR_SOURCE_DIR) + "/manifests/models/echo.toml";
  test::CommandResult models =
      RunCli("models validate " + echo + " --plugin-path " + dir.file("absent"));
  EXPECT_EQ(models.exit_code, 2);
  EXPECT_NE(models.err.find("mstar models validate: --plugin-path " + dir.file("absent")),
            std::string::npos)
      << models.err;
  // A runtime config's missing root is warned about (file, line, key); an empty one is an error.
  test::WriteFile(dir.file("runtime.toml"),
                  "format = 1\n[plugins]\nroots = [\"nonexistent_dir\"]\n");
  test::CommandResult warned =
      RunCli("--config " + dir.file("runtime.toml") + " plugins list --no-default-paths");
  EXPECT_EQ(warned.exit_code, 0) << warned.err;
  EXPECT_NE(warned.err.find(dir.file("runtime.toml") + ":3:10: plugins.roots[0]: plugin root " +
                            dir.file("nonexistent_dir") + " does not exist"),
            std::string::npos)
      << warned.err;
  test::WriteFile(dir.file("empty_root.toml"), "format = 1\n[plugins]\nroots = [\"\"]\n");
  test::CommandResult empty = RunCli("--config " + dir.file("empty_root.toml") + " plugins list");
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find(dir.file("empty_root.toml") + ":3:10: plugins.roots[0]: an empty path"),
            std::string::npos)
      << empty.err;
}

TEST(Cli, ValidateManifestOnlyChecksAbiAndRequirementsAsTheLoaderDoes) {
  test::TempDir dir;
  auto manifest = [&](const std::string& name, const std::string& abi, const std::string& extra) {
    test::WriteFile(dir.file(name + "/" + name + ".toml"),
                    "format = 1\n[plugin]\nname = \"" + name +
                        "\"\nversion = \"1.0.0\"\nlibrary = \"libx.so\"\n[abi]\n" + abi +
                        "\n[[provides]]\nkind = \"submodule\"\nname = \"x\"\n" + extra);
    return dir.file(name + "/" + name + ".toml");
  };
  const std::string major = manifest("major", "major = 2\nmin_minor = 0", "");
  const std::string minor = manifest("minor", "major = 1\nmin_minor = 9", "");
  const std::string torch =
      manifest("torch", "major = 1\nmin_minor = 0", "[requires]\ntorch = \"9.9\"\n");
  const std::string escape = manifest("escape", "major = 1\nmin_minor = 0", "");
  test::WriteFile(escape,
                  "format = 1\n[plugin]\nname = \"escape\"\nversion = \"1.0.0\"\n"
                  "library = \"../../../../usr/lib/x86_64-linux-gnu/libz.so.1\"\n[abi]\n"
                  "major = 1\nmin_minor = 0\n[[provides]]\nkind = \"submodule\"\n"
                  "name = \"x\"\n");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {major, ":6:1: abi: plugin ABI major 2 does not match the host's ABI 1."},
      {minor, ":6:1: abi: plugin needs host ABI 1.9 or newer"},
      {torch, ":12:1: requires: plugin requires LibTorch 9.9"},
      {escape, ":5:11: plugin.library: must name a file in the manifest's directory or below it"}};
  for (const auto& [path, message] : cases) {
    for (const char* mode : {"--manifest-only ", ""}) {
      test::CommandResult result = RunCli(std::string("plugins validate ") + mode + path);
      EXPECT_EQ(result.exit_code, 2) << mode << path << result.out;
      EXPECT_NE(result.err.find(path + message), std::string::npos) << result.err;
    }
  }
}

TEST(Cli, ValidateSkipsModelManifestsInADirectoryButNotANamedOne) {
  const std::string models = std::string(MSTAR_SOURCE_DIR) + "/manifests/models";
  test::CommandResult dir = RunCli("--log-level debug plugins validate --manifest-only " + models);
  EXPECT_EQ(dir.exit_code, 2) << dir.err;  // no plugin manifest in it
  EXPECT_NE(dir.err.find("no plugin manifests found"), std::string::npos) << dir.err;
  EXPECT_EQ(dir.err.find("not a plugin manifest (no [plugin] table)"), std::string::npos)
      << dir.err;
  EXPECT_NE(dir.err.find("skipped " + models + "/echo.toml: not a plugin manifest"),
            std::string::npos)
      << dir.err;
  // Beside a plugin manifest, a model manifest is skipped and the plugin validated.
  test::TempDir mixed;
  std::filesystem::copy(test::TemplatePluginDir(), mixed.file("template"));
  std::filesystem::copy_file(models + "/echo.toml", mixed.file("template/model.toml"));
  test::CommandResult ok = RunCli("plugins validate " + mixed.path());
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("ok: " + mixed.file("template/template.toml")), std::string::npos)
      << ok.out;
  test::CommandResult named = RunCli("plugins validate " + models + "/echo.toml");
  EXPECT_EQ(named.exit_code, 2);
  EXPECT_NE(named.err.find("not a plugin manifest (no [plugin] table)"), std::string::npos)
      << named.err;
}

}  // namespace
}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// mstar: the command-line front end of the M* runtime.
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "core/build_info.h"
#include "core/fault_injection.h"
#include "core/logging.h"
#include "mstar/abi.h"

namespace {

std::string VersionText() {
  std::string text = std::string("mstar ") + MSTAR_VERSION_STRING + " (plugin ABI " +
                     std::to_string(MSTAR_ABI_MAJOR) + "." + std::to_string(MSTAR_ABI_MINOR) + ", ";
  text +=
      MSTAR_BUILD_CUDA_MAJOR > 0 ? "CUDA " + std::to_string(MSTAR_BUILD_CUDA_MAJOR) : "CPU only";
  text += std::string(", LibTorch ") +
          (std::string(MSTAR_BUILD_TORCH_VERSION).empty() ? "none" : MSTAR_BUILD_TORCH_VERSION) +
          ")";
  return text;
}

// "unknown command 'WORD' (commands: ...)" when parsing stopped at a word that is not one of the
// commands of the deepest (sub)command chosen; "" otherwise.
std::string UnknownCommand(const CLI::App& app) {
  const CLI::App* deepest = &app;
  for (;;) {
    std::vector<const CLI::App*> chosen =
        deepest->get_subcommands([](const CLI::App* sub) { return sub->parsed(); });
    if (chosen.empty()) break;
    deepest = chosen.front();
  }
  std::vector<std::string> left = app.remaining(true);
  if (left.empty() || deepest->get_subcommands({}).empty()) return "";
  std::string names;
  for (const CLI::App* sub : deepest->get_subcommands({})) {
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  return "unknown command '" + left.front() + "' (commands: " + names + ")";
}

// What a command printed is its result: output that could not be written (a full disk, a closed
// file) fails the command rather than vanishing. Returns the exit status to end with.
int FinishOutput(int code) {
  std::cout.flush();
  if (std::cout) return code;
  mstar::cli::NoteOutputFailure();
  std::cerr << "mstar: cannot write the output: "
            << std::strerror(mstar::cli::FirstOutputErrno().load()) << "\n";
  return code == mstar::cli::kExitOk ? mstar::cli::kExitFailed : code;
}

}  // namespace

int main(int argc, char** argv) {
  // A closed pipe (`mstar run ... | head`) is a write error, reported with exit 1 as any other
  // output that cannot be written, not a signal that kills the run before its summary.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app(
      "M* runtime: serves composite multimodal models built from plugins.\n"
      "Plugins are shared libraries found through TOML manifests; see `mstar plugins "
      "--help`.",
      "mstar");
  app.set_version_flag("--version", VersionText());
  std::optional<std::string> log_level;
  app.add_option("--log-level", log_level,
                 "Log level: trace, debug, info, warn, error, off (default: $MSTAR_LOG_LEVEL or "
                 "info). Logs go to stderr.");
  mstar::cli::Globals globals;
  app.add_option("--config", globals.config_path,
                 "Runtime config (TOML: plugin roots, device, memory budgets, graph capture, "
                 "engine); see manifests/runtime/cpu.toml, cuda.toml and docs/manifests.md")
      ->envname("MSTAR_CONFIG");
  app.require_subcommand(1);
  app.fallthrough();  // global options (--log-level) may follow the subcommand
  mstar::cli::Action action;
  mstar::cli::AddPluginCommands(app, &globals, &action);
  mstar::cli::AddModelCommands(app, &globals, &action);
  mstar::cli::AddRunCommand(app, &globals, &action);
  mstar::cli::AddConformanceCommand(app, &globals, &action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::RequiredError& error) {
    // A word where a command belongs ("mstar bogus") is left over; CLI11 only says that a
    // subcommand is required.
    if (std::string unknown = UnknownCommand(app); !unknown.empty()) {
      std::cerr << unknown << "\nRun with --help for more information.\n";
      return mstar::cli::kExitInvalid;
    }
    return FinishOutput(app.exit(error) == 0 ? mstar::cli::kExitOk : mstar::cli::kExitInvalid);
  } catch (const CLI::ParseError& error) {
    // --help and --version print here: they are output too.
    int code = app.exit(error);
    return FinishOutput(code == 0 ? mstar::cli::kExitOk : mstar::cli::kExitInvalid);
  }
  if (mstar::Status status = mstar::InitLogging(log_level); !status.ok()) {
    std::cerr << "mstar: " << status.message() << "\n";
    return mstar::cli::kExitInvalid;
  }
  if (globals.config_path) {
    mstar::RuntimeConfigParse parse = mstar::ParseRuntimeConfigFile(*globals.config_path);
    // A stale $MSTAR_CONFIG breaks every command: say where the path came from. (CLI11 counts a
    // value from the environment as given; argv cannot tell either, as a command's own --config
    // (conformance) looks the same. A flag naming the variable's very path is the same file.)
    const char* from_environment = std::getenv("MSTAR_CONFIG");
    const char* source = from_environment != nullptr && *globals.config_path == from_environment
                             ? "$MSTAR_CONFIG"
                             : "--config";
    for (const mstar::Diagnostic& problem : parse.diagnostics) {
      std::cerr << "mstar: runtime config (" << source << "): " << problem.ToString() << "\n";
    }
    if (!parse.config) return mstar::cli::kExitInvalid;
    globals.config = std::move(*parse.config);
  }
  mstar::ApplyMemoryBudgets(globals.config);
  if (const char* fault = std::getenv("MSTAR_FAULT"); fault != nullptr && fault[0] != '\0') {
    if (mstar::Status armed = mstar::ArmFaultFromSpec(fault); !armed.ok()) {
      std::cerr << "mstar: " << armed.message() << "\n";
      return mstar::cli::kExitInvalid;
    }
    mstar::Log().warn("fault injection armed: {}", fault);
  }
  if (!action) return mstar::cli::kExitOk;
  int code = mstar::cli::kExitFailed;
  try {
    code = action();
  } catch (const std::exception& error) {
    // Commands report their failures as statuses; what escapes them (out of memory, a bug) still
    // ends with a message and an exit status rather than std::terminate.
    std::cerr << "mstar: internal error: " << error.what() << "\n";
    return mstar::cli::kExitFailed;
  }
  return FinishOutput(code);
}

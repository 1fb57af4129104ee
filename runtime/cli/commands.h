// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The CLI's command groups. Each Add* registers its subcommands on the app; when one is chosen,
// parsing stores the work to do in *action, which main runs after logging is set up and returns
// the exit code. Exit codes: 0 success, 1 the work failed, 2 bad input (usage, invalid manifest).
#pragma once

#include <atomic>
#include <cerrno>
#include <functional>
#include <iostream>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "config/runtime_config.h"

namespace mstar::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitInvalid = 2;

using Action = std::function<int()>;

// The errno of the first write to stdout that failed while a command streamed its output (0:
// none): by the time main reports the failure, errno says something else.
inline std::atomic<int>& FirstOutputErrno() {
  static std::atomic<int> first{0};
  return first;
}
// Records errno when stdout is in a failed state (the first such write only).
inline void NoteOutputFailure() {
  int none = 0;
  if (!std::cout) FirstOutputErrno().compare_exchange_strong(none, errno);
}

// Refuses a number with a leading zero: CLI11 reads 010 as octal (8) and 0x10 as hexadecimal,
// which nobody means on a command line (defined in run_command.cc).
extern const CLI::Validator kDecimal;

// Options of the whole program, settled before any command's action runs.
struct Globals {
  std::optional<std::string> config_path;  // --config / $MSTAR_CONFIG
  RuntimeConfig config;                    // that file, or the defaults
};

void AddPluginCommands(CLI::App& app, const Globals* globals, Action* action);
void AddModelCommands(CLI::App& app, const Globals* globals, Action* action);
void AddRunCommand(CLI::App& app, const Globals* globals, Action* action);
void AddConformanceCommand(CLI::App& app, const Globals* globals, Action* action);

}  // namespace mstar::cli

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The runtime's one logger. Everything goes to stderr, so stdout carries only a command's output
// (tables, --json documents). Plugins log into the same logger through the host table, with their
// name in every line.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include "core/status.h"

namespace mstar {

// The logger. Thread-safe.
spdlog::logger& Log();

// Sets the level from a name: trace, debug, info, warn, error, off.
Status SetLogLevel(std::string_view name);

// Chooses the level: the command-line value when given, else MSTAR_LOG_LEVEL, else "info".
// Returns an error naming the bad value (the level stays unchanged).
Status InitLogging(const std::optional<std::string>& command_line_level);

// Adds a sink (tests capture log lines this way). Call while no other thread is logging.
void AddLogSink(std::shared_ptr<spdlog::sinks::sink> sink);
void RemoveLogSink(const std::shared_ptr<spdlog::sinks::sink>& sink);

}  // namespace mstar

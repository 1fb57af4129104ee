// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "core/logging.h"

#include <algorithm>
#include <cstdlib>

#include <spdlog/sinks/stdout_color_sinks.h>

namespace mstar {
namespace {

std::shared_ptr<spdlog::logger> MakeLogger() {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("mstar", sink);
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v");
  logger->set_level(spdlog::level::info);
  logger->flush_on(spdlog::level::warn);
  return logger;
}

std::mutex& SinkMutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

spdlog::logger& Log() {
  static std::shared_ptr<spdlog::logger> logger = MakeLogger();
  return *logger;
}

Status SetLogLevel(std::string_view name) {
  static constexpr std::string_view kNames[] = {"trace", "debug", "info", "warn", "error", "off"};
  static constexpr spdlog::level::level_enum kLevels[] = {
      spdlog::level::trace, spdlog::level::debug, spdlog::level::info,
      spdlog::level::warn,  spdlog::level::err,   spdlog::level::off};
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (name == kNames[i]) {
      Log().set_level(kLevels[i]);
      return Status::Ok();
    }
  }
  return InvalidArgument("unknown log level '" + std::string(name) +
                         "' (expected trace, debug, info, warn, error or off)");
}

Status InitLogging(const std::optional<std::string>& command_line_level) {
  if (command_line_level) return SetLogLevel(*command_line_level).WithContext("--log-level");
  if (const char* env = std::getenv("MSTAR_LOG_LEVEL"); env != nullptr && *env != '\0') {
    return SetLogLevel(env).WithContext("MSTAR_LOG_LEVEL");
  }
  return SetLogLevel("info");
}

void AddLogSink(std::shared_ptr<spdlog::sinks::sink> sink) {
  std::lock_guard<std::mutex> lock(SinkMutex());
  Log().sinks().push_back(std::move(sink));
}

void RemoveLogSink(const std::shared_ptr<spdlog::sinks::sink>& sink) {
  std::lock_guard<std::mutex> lock(SinkMutex());
  auto& sinks = Log().sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), sink), sinks.end());
}

}  // namespace mstar

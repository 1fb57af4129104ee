// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Plugin logging: every line carries the plugin (and instance) label.
#include "core/logging.h"
#include "host/host_objects.h"
#include "host/services.h"

namespace mstar {
namespace {

spdlog::level::level_enum ToSpdlog(uint32_t level) {
  switch (level) {
    case MSTAR_LOG_TRACE: return spdlog::level::trace;
    case MSTAR_LOG_DEBUG: return spdlog::level::debug;
    case MSTAR_LOG_INFO: return spdlog::level::info;
    case MSTAR_LOG_WARN: return spdlog::level::warn;
    default: break;
  }
  return spdlog::level::err;
}

uint32_t LogEnabled(mstar_host_context_t* context, uint32_t level) {
  (void)context;
  return Log().should_log(ToSpdlog(level)) ? 1u : 0u;
}

void LogMessage(mstar_host_context_t* context, uint32_t level, const char* file, uint32_t line,
                const char* message) {
  spdlog::level::level_enum spd_level = ToSpdlog(level);
  if (!Log().should_log(spd_level)) return;
  const char* label = context != nullptr ? context->label.c_str() : "plugin";
  const char* text = message != nullptr ? message : "";
  if (file != nullptr && Log().should_log(spdlog::level::debug)) {
    Log().log(spd_level, "[{}] {} ({}:{})", label, text, file, line);
  } else {
    Log().log(spd_level, "[{}] {}", label, text);
  }
}

}  // namespace

void InstallLogServices(mstar_host_api_t& table) {
  table.log_enabled = &LogEnabled;
  table.log = &LogMessage;
}

}  // namespace mstar

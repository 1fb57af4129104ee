// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "config/runtime_config.h"

#include <cctype>
#include <cmath>
#include <filesystem>

#include "config/toml_reader.h"
#include "core/logging.h"
#include "host/memory_ledger.h"

namespace mstar {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMaxIdleSpinUs = 100000;  // a tenth of a second

// A byte size written as an integer or as a string with a unit.
std::optional<uint64_t> ReadByteSize(TableReader& reader, std::string_view key,
                                     const toml::table& table) {
  const toml::node* node = table.get(key);
  reader.Skip(key);
  if (node == nullptr) return uint64_t{0};
  if (const auto* integer = node->as_integer()) {
    if (integer->get() >= 0) return static_cast<uint64_t>(integer->get());
  } else if (const auto* text = node->as_string()) {
    if (std::optional<uint64_t> bytes = ParseByteSize(text->get())) return bytes;
  }
  reader.Error(key,
               "expected a byte size such as 1073741824, \"512MiB\" or \"8GiB\" (0: unlimited)");
  return std::nullopt;
}

void ReadPlugins(TableReader& top, RuntimeConfig& config, Diagnostics& diagnostics) {
  const toml::table* table = top.Table("plugins", Presence::kOptional);
  if (table == nullptr) return;
  TableReader plugins(*table, "plugins", top.path(), &diagnostics);
  const toml::array* roots = plugins.Array("roots", Presence::kOptional);
  fs::path base = fs::path(config.path).parent_path();
  for (size_t i = 0; roots != nullptr && i < roots->size(); ++i) {
    const auto* root_path = (*roots)[i].as_string();
    if (root_path == nullptr) {
      diagnostics.push_back({LocationOf((*roots)[i], top.path()),
                             "plugins.roots[" + std::to_string(i) + "]",
                             "expected a directory path (string)"});
      continue;
    }
    const std::string key = "plugins.roots[" + std::to_string(i) + "]";
    if (root_path->get().empty()) {
      diagnostics.push_back({LocationOf((*roots)[i], top.path()), key,
                             "an empty path names no directory (\".\" is the config's own)"});
      continue;
    }
    fs::path p(root_path->get());
    fs::path root = (p.is_absolute() ? p : base / p).lexically_normal();
    // A root that is missing now may be made before plugins are searched: warn, do not refuse.
    std::error_code ec;
    if (!fs::is_directory(root, ec)) {
      Diagnostic where{LocationOf((*roots)[i], top.path()), key,
                       "plugin root " + root.string() +
                           (fs::exists(root, ec) ? " is not a directory" : " does not exist")};
      Log().warn("{}", where.ToString());
    }
    config.plugin_roots.push_back(root.string());
  }
  plugins.Finish();
}

// The largest device index a config may name.
constexpr int64_t kMaxDeviceIndex = 1024;

void ReadDevice(TableReader& top, RuntimeConfig& config, Diagnostics& diagnostics) {
  const toml::table* table = top.Table("device", Presence::kOptional);
  if (table == nullptr) return;
  TableReader device(*table, "device", top.path(), &diagnostics);
  bool type_known = true;
  if (auto type = device.String("type", Presence::kOptional)) {
    if (*type == "cpu") {
      config.device.device_type = kDLCPU;
    } else if (*type == "cuda") {
      config.device.device_type = kDLCUDA;
    } else {
      device.Error("type", "unknown device type '" + *type + "' (expected cpu or cuda)");
      type_known = false;
    }
  }
  if (auto index = device.Int("index", Presence::kOptional)) {
    if (*index < 0 || *index > kMaxDeviceIndex) {
      device.Error("index", "expected a device index from 0 to " + std::to_string(kMaxDeviceIndex));
    } else if (type_known && config.device.device_type == kDLCPU && *index != 0) {
      device.Error("index", "the host (type \"cpu\") has one device, index 0");
    } else {
      config.device.device_id = static_cast<int32_t>(*index);
    }
  }
  device.Finish();
}

void ReadMemory(TableReader& top, RuntimeConfig& config, Diagnostics& diagnostics) {
  const toml::table* table = top.Table("memory", Presence::kOptional);
  if (table == nullptr) return;
  TableReader memory(*table, "memory", top.path(), &diagnostics);
  config.host_budget = ReadByteSize(memory, "host_budget", *table).value_or(0);
  config.device_budget = ReadByteSize(memory, "device_budget", *table).value_or(0);
  config.device_block_cache = memory.Bool("device_block_cache", Presence::kOptional).value_or(true);
  memory.Finish();
}

void ReadCapture(TableReader& top, RuntimeConfig& config, Diagnostics& diagnostics) {
  const toml::table* table = top.Table("capture", Presence::kOptional);
  if (table == nullptr) return;
  TableReader capture(*table, "capture", top.path(), &diagnostics);
  config.capture.enabled = capture.Bool("enabled", Presence::kOptional).value_or(true);
  config.capture.allow_fallback =
      capture.Bool("allow_fallback", Presence::kOptional).value_or(false);
  if (auto slots = capture.Int("num_slots", Presence::kOptional)) {
    if (*slots < 1 || *slots > kMaxCaptureSlots) {
      capture.Error("num_slots", "expected 1 to " + std::to_string(kMaxCaptureSlots) +
                                     " slots per captured bucket");
    } else {
      config.capture.num_slots = static_cast<uint32_t>(*slots);
    }
  }
  if (auto runs = capture.Int("warmup_runs", Presence::kOptional)) {
    if (*runs < 0 || *runs > 16) {
      capture.Error("warmup_runs", "expected 0 to 16 eager runs before each bucket's capture");
    } else {
      config.capture.warmup_runs = static_cast<uint32_t>(*runs);
    }
  }
  capture.Finish();
}

void ReadEngine(TableReader& top, RuntimeConfig& config, Diagnostics& diagnostics) {
  const toml::table* table = top.Table("engine", Presence::kOptional);
  if (table == nullptr) return;
  TableReader engine(*table, "engine", top.path(), &diagnostics);
  if (auto spin = engine.Int("idle_spin_us", Presence::kOptional)) {
    if (*spin < 0 || *spin > kMaxIdleSpinUs) {
      engine.Error("idle_spin_us", "expected 0 to " + std::to_string(kMaxIdleSpinUs) +
                                       " microseconds (0: the executor sleeps at once)");
    } else {
      config.idle_spin_us = static_cast<uint32_t>(*spin);
    }
  }
  engine.Finish();
}

void Validate(const toml::table& root, RuntimeConfigParse& out, const std::string& path) {
  RuntimeConfig config;
  config.path = path;
  TableReader top(root, "", path, &out.diagnostics);
  top.Format(kRuntimeConfigFormat, "runtime config");
  ReadPlugins(top, config, out.diagnostics);
  ReadDevice(top, config, out.diagnostics);
  ReadMemory(top, config, out.diagnostics);
  ReadCapture(top, config, out.diagnostics);
  ReadEngine(top, config, out.diagnostics);
  top.Finish();
  if (out.diagnostics.empty()) out.config = std::move(config);
}

}  // namespace

std::optional<uint64_t> ParseByteSize(std::string_view text) {
  size_t split = 0;
  while (split < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[split])) || text[split] == '.')) {
    ++split;
  }
  if (split == 0) return std::nullopt;
  double number = 0;
  try {
    size_t used = 0;
    number = std::stod(std::string(text.substr(0, split)), &used);
    if (used != split) return std::nullopt;
  } catch (...) {
    return std::nullopt;
  }
  std::string_view unit = text.substr(split);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  static const std::pair<std::string_view, double> kUnits[] = {{"", 1},
                                                               {"B", 1},
                                                               {"KiB", 1024.0},
                                                               {"MiB", 1024.0 * 1024},
                                                               {"GiB", 1024.0 * 1024 * 1024},
                                                               {"TiB", 1024.0 * 1024 * 1024 * 1024},
                                                               {"KB", 1e3},
                                                               {"MB", 1e6},
                                                               {"GB", 1e9},
                                                               {"TB", 1e12}};
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    const double bytes = std::round(number * scale);
    // 2^64 and beyond do not fit; a nonzero size below half a byte would read as 0, unlimited.
    if (!(bytes < 18446744073709551616.0) || (bytes == 0 && number != 0)) return std::nullopt;
    return static_cast<uint64_t>(bytes);
  }
  return std::nullopt;
}

RuntimeConfigParse ParseRuntimeConfigText(std::string_view text, const std::string& path) {
  RuntimeConfigParse out;
  std::optional<toml::table> root = ParseTomlText(text, path, &out.diagnostics);
  if (root) Validate(*root, out, path);
  return out;
}

RuntimeConfigParse ParseRuntimeConfigFile(const std::string& path) {
  RuntimeConfigParse out;
  std::optional<toml::table> root = ParseTomlFile(path, &out.diagnostics);
  if (root) Validate(*root, out, path);
  return out;
}

void ApplyMemoryBudgets(const RuntimeConfig& config) {
  MemoryLedger::Global().SetLimit(kDLCPU, config.host_budget);
  MemoryLedger::Global().SetLimit(kDLCUDA, config.device_budget);
  MemoryLedger::Global().SetDeviceCaching(config.device_block_cache);
}

}  // namespace mstar

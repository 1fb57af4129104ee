// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The runtime config: how this process runs, independent of any model. A TOML file
// (manifests/runtime/*.toml, format in docs/manifests.md) with
//   [plugins] roots      plugin root directories (relative to the config file)
//   [device]  type/index where instances run by default
//   [memory]  host_budget / device_budget, the memory budgets of the host's ledger, and
//             device_block_cache, whether freed device blocks are kept for reuse
//   [capture] enabled / allow_fallback / num_slots, graph capture (capture/capture_options.h)
//   [engine]  idle_spin_us, how long the executor polls for work before it sleeps
// Every problem is a diagnostic naming file, line and key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dlpack/dlpack.h>

#include "capture/capture_options.h"
#include "core/diagnostic.h"

namespace mstar {

inline constexpr int64_t kRuntimeConfigFormat = 1;

struct RuntimeConfig {
  std::string path;                       // the file, or "" for the defaults
  std::vector<std::string> plugin_roots;  // absolute or relative to the working directory
  DLDevice device{kDLCPU, 0};
  uint64_t host_budget = 0;        // bytes; 0 is unlimited
  uint64_t device_budget = 0;      // bytes; 0 is unlimited
  bool device_block_cache = true;  // false: every device free goes back to the device at once
  CaptureOptions capture;
  // [engine] idle_spin_us; unset: the pipeline's default (PipelineOptions::idle_spin).
  std::optional<uint32_t> idle_spin_us;
};

struct RuntimeConfigParse {
  std::optional<RuntimeConfig> config;  // set when there are no diagnostics
  Diagnostics diagnostics;
};

RuntimeConfigParse ParseRuntimeConfigFile(const std::string& path);
RuntimeConfigParse ParseRuntimeConfigText(std::string_view text, const std::string& path);

// Parses "4096", "512MiB", "8GiB", "1.5GB" into bytes (rounded to the nearest); nullopt when
// malformed, 2^64 bytes or more, or a nonzero size that rounds to 0 ("0.1B").
std::optional<uint64_t> ParseByteSize(std::string_view text);

// Applies the memory budgets and the device block cache setting to the host's ledger.
void ApplyMemoryBudgets(const RuntimeConfig& config);

}  // namespace mstar

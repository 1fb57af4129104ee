// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// What a submodule's descriptor slots (info, capture_configs) return, checked before anything
// reads their arrays: the model runtime and the conformance suite read them through here, so a
// plugin the suite passes is one the runtime loads. Errors are INVALID_ARGUMENT naming the plugin
// and instance, the slot and the field.
#pragma once

#include <cstdint>
#include <vector>

#include "capture/capture_options.h"
#include "core/status.h"
#include "plugin/instance.h"

namespace mstar {

// info's arrays: stop_outputs holds num_stop_outputs names, none NULL.
Status CheckSubmoduleInfo(const PluginInstance& instance, const mstar_submodule_info_t& info);

// The largest batch a capture bucket may hold (dummy request ids give a row 20 bits); the most
// slots per bucket is kMaxCaptureSlots (capture/capture_options.h).
inline constexpr uint32_t kMaxCaptureBatch = 65536;
// The most capture configs a submodule may publish, buckets per config, and names in one of
// its descriptors' arrays (a config's replay walks, info's stop outputs): larger counts are
// garbage, refused before the arrays are read.
inline constexpr uint32_t kMaxCaptureConfigs = 1024;
inline constexpr uint32_t kMaxCaptureBuckets = 4096;
inline constexpr uint32_t kMaxDescriptorNames = 1024;

// Calls capture_configs (none when the slot is NULL) and copies each configuration after checking
// its arrays, its num_slots and its buckets' batch sizes. The elements are read at the plugin's
// struct size (a later minor's larger struct works); each copy has this host's struct_size. The
// copies borrow the instance's strings and arrays.
Result<std::vector<mstar_capture_config_t>> ReadCaptureConfigs(const PluginInstance& instance);

}  // namespace mstar

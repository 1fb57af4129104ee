// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "plugin/submodule_descriptors.h"

#include <string>

#include "plugin/slots.h"

namespace mstar {
namespace {

// "plugin/instance: slot: what", the message of a descriptor a plugin filled in wrongly.
Status BadDescriptor(const PluginInstance& instance, const char* slot, const std::string& what) {
  return InvalidArgument(instance.label() + ": " + slot + ": " + what);
}

// One capture configuration, before anything reads its arrays. capture_walk and region may be
// NULL (the capture code skips a config without a walk of the model).
Status CheckCaptureConfig(const PluginInstance& instance, uint32_t index,
                          const mstar_capture_config_t& config) {
  const std::string where = "configs[" + std::to_string(index) + "].";
  // Every field up to capture_key is read (a minor that appends fields reads them only when
  // struct_size covers them).
  if (config.struct_size < sizeof(mstar_capture_config_t)) {
    return BadDescriptor(instance, "capture_configs",
                         where + "struct_size is " + std::to_string(config.struct_size) +
                             ", smaller than mstar_capture_config_t (" +
                             std::to_string(sizeof(mstar_capture_config_t)) + ")");
  }
  // Counts past these are garbage: the arrays are read to their ends.
  if (config.num_replay_walks > kMaxDescriptorNames || config.num_buckets > kMaxCaptureBuckets) {
    return BadDescriptor(instance, "capture_configs",
                         where + "num_replay_walks " + std::to_string(config.num_replay_walks) +
                             ", num_buckets " + std::to_string(config.num_buckets) + "; at most " +
                             std::to_string(kMaxDescriptorNames) + " and " +
                             std::to_string(kMaxCaptureBuckets) + " (garbage)");
  }
  if (config.num_replay_walks > 0 && config.replay_walks == nullptr) {
    return BadDescriptor(instance, "capture_configs",
                         where + "replay_walks is NULL but num_replay_walks is " +
                             std::to_string(config.num_replay_walks));
  }
  for (uint32_t i = 0; i < config.num_replay_walks; ++i) {
    if (config.replay_walks[i] == nullptr) {
      return BadDescriptor(instance, "capture_configs",
                           where + "replay_walks[" + std::to_string(i) + "] is NULL");
    }
  }
  if (config.num_buckets > 0 && config.buckets == nullptr) {
    return BadDescriptor(
        instance, "capture_configs",
        where + "buckets is NULL but num_buckets is " + std::to_string(config.num_buckets));
  }
  if (config.num_slots > kMaxCaptureSlots) {
    return BadDescriptor(instance, "capture_configs",
                         where + "num_slots is " + std::to_string(config.num_slots) + "; at most " +
                             std::to_string(kMaxCaptureSlots));
  }
  // A region replays for every request of its batch: batches are split by the whole forward's
  // configs' keys only, so a region's key would not be honoured.
  if (config.region != nullptr && (config.flags & MSTAR_CAPTURE_SPLIT_BY_KEY) != 0) {
    return BadDescriptor(instance, "capture_configs",
                         where + "flags: MSTAR_CAPTURE_SPLIT_BY_KEY on region '" +
                             std::string(config.region) +
                             "'; a region replays for every request of its batch, whatever its "
                             "key (split by key in the whole forward's configs)");
  }
  for (uint32_t i = 0; i < config.num_buckets; ++i) {
    if (config.buckets[i].batch_size > kMaxCaptureBatch) {
      return BadDescriptor(instance, "capture_configs",
                           where + "buckets[" + std::to_string(i) + "].batch_size is " +
                               std::to_string(config.buckets[i].batch_size) + "; at most " +
                               std::to_string(kMaxCaptureBatch));
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckSubmoduleInfo(const PluginInstance& instance, const mstar_submodule_info_t& info) {
  if (info.num_stop_outputs > kMaxDescriptorNames) {
    return BadDescriptor(instance, "info",
                         "num_stop_outputs is " + std::to_string(info.num_stop_outputs) +
                             "; at most " + std::to_string(kMaxDescriptorNames) + " (garbage)");
  }
  if (info.num_stop_outputs > 0 && info.stop_outputs == nullptr) {
    return BadDescriptor(
        instance, "info",
        "stop_outputs is NULL but num_stop_outputs is " + std::to_string(info.num_stop_outputs));
  }
  for (uint32_t i = 0; i < info.num_stop_outputs; ++i) {
    if (info.stop_outputs[i] == nullptr) {
      return BadDescriptor(instance, "info", "stop_outputs[" + std::to_string(i) + "] is NULL");
    }
  }
  return Status::Ok();
}

Result<std::vector<mstar_capture_config_t>> ReadCaptureConfigs(const PluginInstance& instance) {
  std::vector<mstar_capture_config_t> out;
  const mstar_submodule_vtable_t* table = instance.submodule();
  if (table == nullptr || table->capture_configs == nullptr) return out;
  uint32_t count = 0;
  const mstar_capture_config_t* configs = nullptr;
  MSTAR_RETURN_IF_ERROR(CallPlugin(instance, "capture_configs", [&] {
    return table->capture_configs(instance.self(), &count, &configs);
  }));
  if (count > 0 && configs == nullptr) {
    return BadDescriptor(instance, "capture_configs",
                         "the configs array is NULL but the count is " + std::to_string(count));
  }
  if (count == 0) return out;
  if (count > kMaxCaptureConfigs) {
    return BadDescriptor(
        instance, "capture_configs",
        std::to_string(count) + " configs, more than " + std::to_string(kMaxCaptureConfigs));
  }
  // Read at the plugin's struct size (VersionedAt); the host copies the prefix it knows of each.
  const uint32_t stride = configs[0].struct_size;
  if (stride > kMaxVersionedStructSize) {
    return BadDescriptor(instance, "capture_configs",
                         "configs[0].struct_size is " + std::to_string(stride) + ", more than " +
                             std::to_string(kMaxVersionedStructSize) + " (garbage)");
  }
  if (stride % alignof(mstar_capture_config_t) != 0) {
    return BadDescriptor(instance, "capture_configs",
                         "configs[0].struct_size is " + std::to_string(stride) +
                             ", not a multiple of the struct's alignment (" +
                             std::to_string(alignof(mstar_capture_config_t)) + ")");
  }
  for (uint32_t i = 0; i < count; ++i) {
    const mstar_capture_config_t& config = VersionedAt(configs, i);
    if (i > 0 && config.struct_size != stride) {
      return BadDescriptor(instance, "capture_configs",
                           "configs[" + std::to_string(i) + "].struct_size is " +
                               std::to_string(config.struct_size) + ", unlike configs[0]'s " +
                               std::to_string(stride) + " (one array, one struct size)");
    }
    MSTAR_RETURN_IF_ERROR(CheckCaptureConfig(instance, i, config));
    out.push_back(config);
    out.back().struct_size = sizeof(mstar_capture_config_t);
  }
  return out;
}

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The host's definitions of the ABI's opaque objects (mstar/abi.h). Plugins see only pointers;
// these layouts are private to the runtime and may change freely.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mstar/plugin.h"

namespace mstar {
class CommTransport;
class DeviceBackend;
class RegionRunner;
}  // namespace mstar

struct mstar_status {
  uint32_t code;
  std::string message;
};

// Who is calling a host service: a plugin library, or one instance of it.
struct mstar_host_context {
  std::string plugin;    // the plugin's name
  std::string instance;  // the instance's name; empty for the library context
  std::string label;     // "plugin" or "plugin/instance", prefixed to log lines and metrics
  // The submodule this context belongs to, for region_launch; null elsewhere.
  const mstar_submodule_vtable_t* submodule = nullptr;
  void* submodule_self = nullptr;
  // The engine's captured regions of that submodule (set at warmup, cleared before they go);
  // null: region_launch runs run_region directly.
  mstar::RegionRunner* regions = nullptr;
};

struct mstar_bytes {
  std::vector<uint8_t> data;
};

struct mstar_stream {
  DLDevice device{kDLCPU, 0};
  void* native = nullptr;  // cudaStream_t on CUDA; nullptr on CPU (and for the default stream)
  // Created by stream_create: stream_release destroys it. Every other stream (those the host
  // lends hooks) is the host's, and stream_release refuses it.
  bool owned = false;
  mstar::DeviceBackend* backend = nullptr;
};

struct mstar_event {
  DLDevice device{kDLCPU, 0};
  void* native = nullptr;
  mstar::DeviceBackend* backend = nullptr;
};

// A tier instance as resources reach it. Calls are serialized per tier (the tier ABI's rule).
struct mstar_tier_handle {
  std::string name;
  const mstar_tier_vtable_t* vtable = nullptr;
  void* self = nullptr;
  std::mutex mutex;
};

// One rank's handle on a group of ranks (runtime/distributed/comm_transport.h). A single-rank
// group needs no transport; larger ones share theirs (threads of this process, or NCCL).
struct mstar_comm {
  uint32_t rank = 0;
  uint32_t size = 1;
  std::shared_ptr<mstar::CommTransport> transport;  // null when size == 1
};

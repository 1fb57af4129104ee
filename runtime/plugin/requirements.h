// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// What this host offers plugins (ABI, LibTorch, CUDA), and whether a manifest's [abi] and
// [requires] sections are met. Checked from the manifest alone, before the library is opened.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "plugin/manifest.h"

namespace mstar {

struct HostCapabilities {
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;     // the newest minor the host implements
  std::string torch_version;  // "" when the runtime was built without LibTorch
  bool torch_cxx11_abi = true;
  int64_t cuda_major = 0;  // 0 without CUDA

  // This build's capabilities.
  static HostCapabilities Current();
};

// The ABI check: same major, and a minor the host provides.
Status CheckAbi(const PluginManifest& manifest, const HostCapabilities& host);
// The [requires] check.
Status CheckRequirements(const PluginManifest& manifest, const HostCapabilities& host);

}  // namespace mstar

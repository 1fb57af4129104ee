// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "plugin/requirements.h"

#include "core/build_info.h"
#include "mstar/abi.h"

namespace mstar {
namespace {

// "1.13" matches "1.13.1"; "1.13.1" matches only itself.
bool VersionMatches(const std::string& wanted, const std::string& have) {
  if (have.compare(0, wanted.size(), wanted) != 0) return false;
  return have.size() == wanted.size() || have[wanted.size()] == '.' || have[wanted.size()] == '+';
}

}  // namespace

HostCapabilities HostCapabilities::Current() {
  HostCapabilities caps;
  caps.abi_major = MSTAR_ABI_MAJOR;
  caps.abi_minor = MSTAR_ABI_MINOR;
  caps.torch_version = MSTAR_BUILD_TORCH_VERSION;
  caps.torch_cxx11_abi = MSTAR_BUILD_TORCH_CXX11_ABI != 0;
  caps.cuda_major = MSTAR_BUILD_CUDA_MAJOR;
  return caps;
}

Status CheckAbi(const PluginManifest& manifest, const HostCapabilities& host) {
  if (manifest.abi_major != host.abi_major) {
    return Incompatible("plugin ABI major " + std::to_string(manifest.abi_major) +
                        " does not match the host's ABI " + std::to_string(host.abi_major) + "." +
                        std::to_string(host.abi_minor) + " (rebuild the plugin against ABI " +
                        std::to_string(host.abi_major) + "; if it was built against it, [abi] " +
                        "major in the manifest is wrong)");
  }
  if (manifest.abi_min_minor > host.abi_minor) {
    return Incompatible("plugin needs host ABI " + std::to_string(manifest.abi_major) + "." +
                        std::to_string(manifest.abi_min_minor) + " or newer; this host provides " +
                        std::to_string(host.abi_major) + "." + std::to_string(host.abi_minor) +
                        " (upgrade the runtime)");
  }
  return Status::Ok();
}

Status CheckRequirements(const PluginManifest& manifest, const HostCapabilities& host) {
  const PluginRequirements& req = manifest.requires_;
  if (req.torch) {
    if (host.torch_version.empty()) {
      return Incompatible("plugin requires LibTorch " + *req.torch +
                          ", but this runtime was built without LibTorch (configure with "
                          "MSTAR_WITH_TORCH=ON)");
    }
    if (!VersionMatches(*req.torch, host.torch_version)) {
      return Incompatible("plugin requires LibTorch " + *req.torch + ", but this runtime uses " +
                          "LibTorch " + host.torch_version +
                          " (one LibTorch per process: rebuild the plugin against it)");
    }
  }
  if (req.torch_cxx11_abi && *req.torch_cxx11_abi != host.torch_cxx11_abi) {
    return Incompatible(std::string("plugin was built with _GLIBCXX_USE_CXX11_ABI=") +
                        (*req.torch_cxx11_abi ? "1" : "0") + ", the runtime's LibTorch uses " +
                        (host.torch_cxx11_abi ? "1" : "0"));
  }
  if (req.cuda) {
    if (host.cuda_major == 0) {
      return Incompatible("plugin requires CUDA " + std::to_string(*req.cuda) +
                          ", but this runtime was built without CUDA");
    }
    if (*req.cuda != host.cuda_major) {
      return Incompatible("plugin requires CUDA " + std::to_string(*req.cuda) +
                          ", this runtime was built with CUDA " + std::to_string(host.cuda_major));
    }
  }
  return Status::Ok();
}

}  // namespace mstar

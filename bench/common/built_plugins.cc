// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "common/built_plugins.h"

#include <cstdlib>

namespace mstar::bench {

std::filesystem::path BuildDir() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path().parent_path();
}

PluginRegistry LoadBuiltPlugins(const std::vector<std::string>& names) {
  const std::filesystem::path build = BuildDir();
  PluginRegistry::Options options;
  for (const std::string& name : names)
    options.discovery.plugin_paths.push_back((build / "lib" / "mstar" / "plugins" / name).string());
  options.discovery.use_environment = false;
  options.discovery.use_install_dir = false;
  return PluginRegistry::Load(options);
}

bool MakeTinyWeightsIfMissing(const std::string& weights, const std::string& maker) {
  if (std::filesystem::exists(weights + "/config.json")) return true;
  const std::string make =
      "'" + maker + "' '" + std::filesystem::path(weights).parent_path().string() + "' >&2";
  return std::system(make.c_str()) == 0;
}

}  // namespace mstar::bench

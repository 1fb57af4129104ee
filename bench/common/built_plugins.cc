// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "common/built_plugins.h"

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

}  // namespace mstar::bench

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Finding plugin manifests. Candidates come from these places, in this order, and the first
// manifest found for a file wins:
//   1. explicit manifest paths (a file, or a directory searched like a root);
//   2. --plugin-path DIR, in the order given;
//   3. MSTAR_PLUGIN_PATH, a ':'-separated list of directories (ignored when the process runs
//      set-user-ID or set-group-ID);
//   4. the runtime config's plugin roots;
//   5. the install directory, <prefix>/lib/mstar/plugins next to the executable's bin/.
// In a root directory, every *.toml file directly inside it and inside its immediate
// subdirectories is a candidate (sorted by path, so the order is stable). Each place given or file
// found that is skipped is reported with the reason (an install directory that does not exist is
// not: a build tree has none).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace mstar {

enum class PluginOrigin { kExplicit, kPluginPath, kEnvironment, kConfigRoot, kInstallDir };

const char* OriginName(PluginOrigin origin);

struct DiscoveryOptions {
  std::vector<std::string> explicit_paths;
  std::vector<std::string> plugin_paths;
  bool use_environment = true;
  std::vector<std::string> config_roots;
  bool use_install_dir = true;
  // Overrides the install directory (tests); unset means next to the executable.
  std::optional<std::string> install_dir;
};

struct PluginCandidate {
  std::string manifest_path;  // absolute, normalized (symbolic links kept)
  PluginOrigin origin;
  // Named itself (an explicit file), not found in a directory: a file that is no plugin manifest
  // is an error then, not skipped.
  bool named = false;
};

struct SkippedCandidate {
  std::string path;
  std::string reason;
  bool duplicate = false;  // the same file again (named twice, or reached by a link): no error
};

struct DiscoveryResult {
  std::vector<PluginCandidate> candidates;
  std::vector<SkippedCandidate> skipped;
};

DiscoveryResult DiscoverPlugins(const DiscoveryOptions& options);

// Checks directories given on the command line as --plugin-path: each must exist and be a
// directory. Returns InvalidArgument naming the first that is not ("--plugin-path DIR: ...");
// discovery itself only skips such a root, as it does one from the environment.
Status CheckPluginPaths(const std::vector<std::string>& plugin_paths);

// <prefix>/lib/mstar/plugins for the running executable, or nullopt when it cannot be found.
std::optional<std::string> DefaultInstallDir();

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Loading the plugins a benchmark measures from the build tree it was built in.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "plugin/registry.h"

namespace mstar::bench {

// The build tree this benchmark was built in: build/ for a binary at build/bench/bin/.
std::filesystem::path BuildDir();

// A registry of the named plugins as built beside this binary: build/lib/mstar/plugins/NAME for
// a benchmark at build/bench/bin/. Neither MSTAR_PLUGIN_PATH nor the install directory is
// searched, so the figures are those of this build's plugins. Build the plugins first.
PluginRegistry LoadBuiltPlugins(const std::vector<std::string>& names);

// Makes the tiny models' weights with maker (the build's make-tiny-weights) into weights' parent
// directory unless weights/config.json is there; false when that fails (its output on stderr).
bool MakeTinyWeightsIfMissing(const std::string& weights, const std::string& maker);

}  // namespace mstar::bench

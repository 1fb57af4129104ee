// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// How the CLI shows plugins: aligned tables for people, JSON for programs.
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "plugin/registry.h"

namespace mstar::cli {

// j as indented JSON text. Bytes that are not UTF-8 (a plugin's message or a path may hold any)
// are replaced (U+FFFD) instead of throwing, which would lose the whole output.
std::string JsonText(const nlohmann::json& j);

nlohmann::json LoadedPluginJson(const LoadedPlugin& plugin);
nlohmann::json RejectedPluginJson(const RejectedPlugin& plugin);
// {"plugins": [...], "rejected": [...], "skipped": [...]}
nlohmann::json RegistryJson(const PluginRegistry& registry);

// One row per plugin, then the rejected candidates with their reasons.
void PrintRegistry(const PluginRegistry& registry, std::ostream& out);
// Everything known about one plugin: manifest, negotiation, factories and their hooks, exports.
void PrintPluginDetails(const LoadedPlugin& plugin, std::ostream& out);
nlohmann::json PluginDetailsJson(const LoadedPlugin& plugin);

}  // namespace mstar::cli

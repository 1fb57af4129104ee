// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "plugin/registry.h"

#include "core/logging.h"
#include "plugin/table_check.h"

namespace mstar {

PluginRegistry PluginRegistry::Load(const Options& options) {
  PluginRegistry registry;
  DiscoveryResult found = DiscoverPlugins(options.discovery);
  registry.skipped_ = std::move(found.skipped);
  for (const SkippedCandidate& skip : registry.skipped_) {
    Log().debug("plugin search: skipped {}: {}", skip.path, skip.reason);
  }
  for (const PluginCandidate& candidate : found.candidates) {
    registry.Consider(candidate, options.load);
  }
  return registry;
}

void PluginRegistry::Reject(const PluginCandidate& candidate, std::string name,
                            Diagnostics problems) {
  for (const Diagnostic& problem : problems) {
    Log().warn("plugin rejected: {}", problem.ToString());
  }
  rejected_.push_back(
      {candidate.manifest_path, std::move(name), candidate.origin, std::move(problems)});
}

void PluginRegistry::Consider(const PluginCandidate& candidate, const LoadOptions& options) {
  ManifestParse parse = ParsePluginManifestFile(candidate.manifest_path);
  if (!parse.is_plugin_manifest && !candidate.named) {
    skipped_.push_back({candidate.manifest_path, "not a plugin manifest (no [plugin] table)"});
    Log().debug("plugin search: skipped {}: not a plugin manifest", candidate.manifest_path);
    return;
  }
  if (!parse.manifest) {
    Reject(candidate, "", std::move(parse.diagnostics));
    return;
  }
  const PluginManifest& manifest = *parse.manifest;
  if (const LoadedPlugin* same = FindPlugin(manifest.name)) {
    Reject(candidate, manifest.name,
           {{manifest.name_where, "plugin.name",
             "plugin '" + manifest.name + "' is already loaded from " +
                 same->library->manifest().path}});
    return;
  }
  for (const ProvidedFactory& provided : manifest.provides) {
    Result<FactoryRef> taken = Find(provided.kind, provided.name);
    if (taken.ok()) {
      Reject(candidate, manifest.name,
             {{provided.where, "provides",
               std::string("duplicate ") + KindName(provided.kind) + " '" + provided.name +
                   "': already provided by plugin '" + taken->library->manifest().name + "' (" +
                   taken->library->manifest().path + ")"}});
      return;
    }
  }
  Diagnostic error;
  std::shared_ptr<PluginLibrary> library = PluginLibrary::Load(manifest, options, &error);
  if (library == nullptr) {
    Reject(candidate, manifest.name, {error});
    return;
  }
  loaded_.push_back({std::move(library), candidate.origin});
}

Result<FactoryRef> PluginRegistry::Find(uint32_t kind, std::string_view name) const {
  std::string available;
  for (const LoadedPlugin& plugin : loaded_) {
    if (const mstar_factory_t* factory = plugin.library->FindFactory(kind, name)) {
      return FactoryRef{plugin.library, factory};
    }
    for (uint32_t i = 0; i < plugin.library->api()->num_factories; ++i) {
      const mstar_factory_t& f = FactoryAt(plugin.library->api(), i);
      if (f.kind != kind) continue;
      if (!available.empty()) available += ", ";
      available += f.name;
    }
  }
  return NotFound(std::string("no plugin provides ") + KindName(kind) + " '" + std::string(name) +
                  "' (available: " + (available.empty() ? "none" : available) + ")");
}

const LoadedPlugin* PluginRegistry::FindPlugin(std::string_view name) const {
  for (const LoadedPlugin& plugin : loaded_) {
    if (plugin.library->manifest().name == name) return &plugin;
  }
  return nullptr;
}

}  // namespace mstar

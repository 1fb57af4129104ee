// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// PluginRegistry: every plugin found by discovery, loaded or rejected with its reason, and the
// factories of the loaded ones by (kind, name). A bad plugin never stops the others from loading:
// it is rejected and reported. A second plugin providing a (kind, name) that is already taken is
// rejected, naming the first.
//
// Thread-safety: immutable after Load; any thread may read it.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.h"
#include "core/status.h"
#include "plugin/discovery.h"
#include "plugin/library.h"

namespace mstar {

struct LoadedPlugin {
  std::shared_ptr<PluginLibrary> library;
  PluginOrigin origin;
};

struct RejectedPlugin {
  std::string manifest_path;
  std::string name;  // the plugin's name when the manifest got that far
  PluginOrigin origin;
  Diagnostics problems;  // at least one; each names file, line and key
};

// A factory and the library that keeps it alive.
struct FactoryRef {
  std::shared_ptr<PluginLibrary> library;
  const mstar_factory_t* factory = nullptr;
};

class PluginRegistry {
 public:
  struct Options {
    DiscoveryOptions discovery;
    LoadOptions load;
  };

  // Discovers and loads every candidate. Logs each rejection and skip (at warning and debug).
  static PluginRegistry Load(const Options& options);

  const std::vector<LoadedPlugin>& loaded() const { return loaded_; }
  const std::vector<RejectedPlugin>& rejected() const { return rejected_; }
  const std::vector<SkippedCandidate>& skipped() const { return skipped_; }

  // kNotFound, listing what is available of that kind, when nothing provides (kind, name).
  Result<FactoryRef> Find(uint32_t kind, std::string_view name) const;
  // The loaded plugin called name, or nullptr.
  const LoadedPlugin* FindPlugin(std::string_view name) const;

 private:
  void Consider(const PluginCandidate& candidate, const LoadOptions& options);
  void Reject(const PluginCandidate& candidate, std::string name, Diagnostics problems);

  std::vector<LoadedPlugin> loaded_;
  std::vector<RejectedPlugin> rejected_;
  std::vector<SkippedCandidate> skipped_;
};

}  // namespace mstar

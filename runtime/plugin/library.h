// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// PluginLibrary: one plugin library, loaded and negotiated. Loading checks, in order: the ABI and
// requirements from the manifest and that the library lies in the manifest's directory (before
// the file is opened), that the library exists, its
// sha256 when the manifest gives one, its ELF header, then dlopen (RTLD_NOW | RTLD_LOCAL, through
// Boost.DLL), the entry symbol, the two-sided negotiation and the returned table. Any failure is
// reported as a diagnostic pointing at the manifest key to fix, and leaves nothing running.
//
// Lifetime: instances hold a shared_ptr to their library, so a library outlives everything made
// from it. When the last reference goes the plugin's shutdown() runs; the code itself stays mapped
// until the process exits (RTLD_NODELETE), because no plugin system can prove that nothing still
// points into it, and so does the host table given to it (a late deleter or a plugin's static may
// still call through it).
//
// One file is one load: while a load of a library file is alive, loading the same file again
// (through the same manifest, for the same host minor) returns that load; through another
// manifest or for another host minor it is refused, since the plugin's statics (its tables, what
// it negotiated) are shared and would be renegotiated under the first load.
//
// Thread-safety: loading is serialized process-wide; a loaded library is immutable.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.h"
#include "host/host_api.h"
#include "mstar/plugin.h"
#include "plugin/manifest.h"
#include "plugin/requirements.h"

namespace boost::dll {
class shared_library;
}

namespace mstar {

struct LoadOptions {
  HostCapabilities host = HostCapabilities::Current();
  bool verify_sha256 = true;
  // Calls the entry point again even when this file is loaded already, renegotiating the
  // statics that load uses: only for a process that is thrown away afterwards (the conformance
  // suite's forked rules that negotiate at other minors).
  bool renegotiate_in_place = false;
};

class PluginLibrary {
 public:
  // Loads the library of a valid manifest. On failure returns nullptr and fills *error.
  static std::shared_ptr<PluginLibrary> Load(const PluginManifest& manifest,
                                             const LoadOptions& options, Diagnostic* error);
  // The checks Load makes before it touches the library file: the manifest's [abi] and
  // [requires] against options.host, and that the library lies in the manifest's directory.
  // Returns false and fills *error (with the message Load would give) when one fails.
  static bool CheckManifest(const PluginManifest& manifest, const LoadOptions& options,
                            Diagnostic* error);
  ~PluginLibrary();

  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;

  const PluginManifest& manifest() const { return manifest_; }
  const mstar_plugin_api_t* api() const { return api_; }
  uint32_t negotiated_minor() const { return negotiated_minor_; }
  uint32_t plugin_minor() const { return plugin_minor_; }
  HostApi& host() const { return *host_; }
  // The factory for (kind, name), or nullptr.
  const mstar_factory_t* FindFactory(uint32_t kind, std::string_view name) const;
  // Names the library exports (from its dynamic symbol table, elf_symbols.h); an error when the
  // file's symbol table cannot be read.
  Result<std::vector<std::string>> ExportedSymbols() const;

 private:
  PluginLibrary() = default;

  PluginManifest manifest_;
  std::unique_ptr<HostApi> host_;
  std::unique_ptr<boost::dll::shared_library> library_;
  const mstar_plugin_api_t* api_ = nullptr;
  mstar_negotiation_t negotiation_{};  // as the entry left it (a reuse checks its manifest on it)
  uint32_t negotiated_minor_ = 0;
  uint32_t plugin_minor_ = 0;
  uint32_t host_minor_ = 0;  // the host minor it was loaded for
  // Which call of its file's entry point made this load, and where the count of those calls
  // lives (under the load mutex; null when the file could not be identified): a later call
  // means the file was loaded again, and this load's shutdown must not run.
  uint64_t entry_call_ = 0;
  const uint64_t* entry_calls_of_file_ = nullptr;
};

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The plugin manifest: the TOML file beside a plugin library that says what the library is, which
// ABI it speaks, what it provides and what it requires. It is validated completely before the
// library is opened, and every problem is reported with its file, line and key. The format is
// documented in docs/manifests.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.h"
#include "core/status.h"

namespace mstar {

// The manifest format this runtime reads.
inline constexpr int64_t kPluginManifestFormat = 1;

struct ProvidedFactory {
  uint32_t kind = 0;  // MSTAR_KIND_*
  std::string name;
  SourceLocation where;  // its name (the [[provides]] entry when that is missing)
};

struct PluginRequirements {
  std::optional<std::string> torch;     // LibTorch version prefix, e.g. "1.13" or "2.5.1"
  std::optional<bool> torch_cxx11_abi;  // the _GLIBCXX_USE_CXX11_ABI the plugin was built with
  std::optional<int64_t> cuda;          // CUDA major the plugin needs
};

struct PluginManifest {
  std::string path;  // the manifest file
  std::string name;
  std::string version;
  std::string description;
  std::string library;       // as written (relative to the manifest's directory)
  std::string library_path;  // resolved
  uint32_t abi_major = 0;
  uint32_t abi_min_minor = 0;
  std::vector<ProvidedFactory> provides;
  PluginRequirements requires_;
  std::optional<std::string> sha256;  // lower-case hex

  // Where the parts were written, so that problems found while loading can point at them.
  SourceLocation plugin_where;
  SourceLocation name_where;  // plugin.name
  SourceLocation library_where;
  SourceLocation abi_where;
  SourceLocation sha256_where;
  SourceLocation requires_where;
};

struct ManifestParse {
  std::optional<PluginManifest> manifest;  // set when there are no diagnostics
  Diagnostics diagnostics;
  bool is_toml = false;            // the file was read and parsed as TOML
  bool is_plugin_manifest = true;  // false when the file parsed but has no [plugin] table
};

ManifestParse ParsePluginManifestFile(const std::string& path);
ManifestParse ParsePluginManifestText(std::string_view text, const std::string& path);

// Checks that library_path (the manifest's library, resolved) lies in manifest_path's directory
// or below it: lexically, and where the file exists after symbolic links (of the file and of the
// directory). InvalidArgument saying where it points otherwise. Called while a manifest is read
// and again before its library is opened.
Status CheckLibraryInside(const std::string& manifest_path, const std::string& library_path);

// "submodule", "resource", "tier", "model"; "unknown" otherwise.
const char* KindName(uint32_t kind);
// MSTAR_KIND_* for a name, 0 when unknown.
uint32_t KindFromName(std::string_view name);

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "fuzz_targets.h"

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "config/runtime_config.h"
#include "model/model_manifest.h"
#include "plugin/manifest.h"

namespace mstar::fuzz {
namespace {

std::string_view Text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A parse that neither succeeded nor said why is a bug: abort so the fuzzer keeps the input.
void Check(bool accepted, size_t diagnostics) {
  if (!accepted && diagnostics == 0) std::abort();
}

}  // namespace

void PluginManifest(const uint8_t* data, size_t size) {
  ManifestParse parse = ParsePluginManifestText(Text(data, size), "fuzz.toml");
  Check(parse.manifest.has_value() || !parse.is_plugin_manifest, parse.diagnostics.size());
}

void ModelManifest(const uint8_t* data, size_t size) {
  std::string_view text = Text(data, size);
  std::vector<std::string> overrides;
  if (text.substr(0, 5) == "#set ") {
    size_t end = text.find('\n');
    overrides.emplace_back(text.substr(5, end == std::string_view::npos ? end : end - 5));
  }
  ModelParse parse = ParseModelManifestText(text, "fuzz.toml", overrides);
  Check(parse.model.has_value(), parse.diagnostics.size());
}

void RuntimeConfig(const uint8_t* data, size_t size) {
  RuntimeConfigParse parse = ParseRuntimeConfigText(Text(data, size), "fuzz.toml");
  Check(parse.config.has_value(), parse.diagnostics.size());
}

}  // namespace mstar::fuzz

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "fuzz_targets.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "config/runtime_config.h"
#include "model/model_manifest.h"
#include "mstar/sdk/safetensors.hpp"
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

void SafetensorsFile(const uint8_t* data, size_t size) {
  // The reader maps a file by path: an anonymous in-memory file (or, where memfd_create is not
  // allowed, an unlinked temporary file), opened again through /proc.
  std::FILE* temporary = nullptr;
  int fd = ::memfd_create("fuzz.safetensors", MFD_CLOEXEC);
  if (fd < 0) {
    temporary = std::tmpfile();
    if (temporary == nullptr) std::abort();
    fd = ::fileno(temporary);
  }
  for (size_t written = 0; written < size;) {
    ssize_t n = ::write(fd, data + written, size - written);
    if (n <= 0) std::abort();
    written += static_cast<size_t>(n);
  }
  try {
    sdk::Safetensors weights = sdk::Safetensors::Open("/proc/self/fd/" + std::to_string(fd));
    // What was accepted must be readable whole: touch the first and last byte of every tensor,
    // and its size must agree with its dtype and shape.
    for (const auto& [name, t] : weights.tensors()) {
      if (t.bytes != static_cast<uint64_t>(t.numel()) * sdk::SafetensorsDTypeSize(t.dtype))
        std::abort();
      if (t.bytes == 0) continue;
      const auto* bytes = static_cast<const uint8_t*>(t.data);
      volatile uint8_t sink = bytes[0] ^ bytes[t.bytes - 1];
      (void)sink;
    }
  } catch (const sdk::Error&) {
    // Refused, with a message: what the reader promises for bad input.
  }
  if (temporary != nullptr) {
    std::fclose(temporary);
  } else {
    ::close(fd);
  }
}

}  // namespace mstar::fuzz

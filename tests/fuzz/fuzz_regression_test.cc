// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Replays the fuzz corpus (tests/fuzz/corpus/<target>/) and every input a fuzzer ever crashed on
// (tests/fuzz/regressions/<target>/) through the fuzz targets in the normal build, so each crash
// found stays fixed. A target that aborts fails the whole binary, naming nothing: run the input
// with the fuzzer binary to see which one.
#include <gtest/gtest.h>

#include <filesystem>

#include "fuzz_targets.h"
#include "support/test_support.h"

namespace mstar::fuzz {
namespace {

namespace fs = std::filesystem;

size_t ReplayAll(const std::string& target, void (*run)(const uint8_t*, size_t)) {
  size_t count = 0;
  for (const char* kind : {"corpus", "regressions"}) {
    fs::path dir = fs::path(MSTAR_SOURCE_DIR) / "tests/fuzz" / kind / target;
    if (!fs::is_directory(dir)) continue;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
      if (!entry.is_regular_file()) continue;
      const std::string bytes = test::ReadFile(entry.path().string());
      SCOPED_TRACE(entry.path().string());
      run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++count;
    }
  }
  return count;
}

TEST(FuzzRegression, PluginManifests) {
  EXPECT_GT(ReplayAll("plugin_manifest", &PluginManifest), 5u);
}

TEST(FuzzRegression, ModelManifests) {
  EXPECT_GT(ReplayAll("model_manifest", &ModelManifest), 5u);
}

TEST(FuzzRegression, RuntimeConfigs) {
  EXPECT_GT(ReplayAll("runtime_config", &RuntimeConfig), 2u);
}

TEST(FuzzRegression, KvResidentDeltas) {
  EXPECT_GT(ReplayAll("kv_resident_delta", &KvResidentDelta), 3u);
}

TEST(FuzzRegression, SafetensorsFiles) {
  EXPECT_GT(ReplayAll("safetensors_file", &SafetensorsFile), 4u);
}

}  // namespace
}  // namespace mstar::fuzz

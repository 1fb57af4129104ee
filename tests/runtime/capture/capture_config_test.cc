// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The runtime config's [capture] section.
#include <gtest/gtest.h>

#include "config/runtime_config.h"

namespace mstar {
namespace {

TEST(CaptureConfig, DefaultsCaptureWithTwoSlotsOneWarmupRunAndNoFallback) {
  RuntimeConfigParse parse = ParseRuntimeConfigText("format = 1\n", "runtime.toml");
  ASSERT_TRUE(parse.config.has_value());
  EXPECT_TRUE(parse.config->capture.enabled);
  EXPECT_FALSE(parse.config->capture.allow_fallback);
  EXPECT_EQ(parse.config->capture.num_slots, 2u);
  EXPECT_EQ(parse.config->capture.warmup_runs, 1u);
}

TEST(CaptureConfig, ReadsEverySetting) {
  RuntimeConfigParse parse = ParseRuntimeConfigText(
      "format = 1\n[capture]\nenabled = false\nallow_fallback = true\nnum_slots = 3\n"
      "warmup_runs = 0\n",
      "runtime.toml");
  ASSERT_TRUE(parse.config.has_value()) << JoinDiagnostics(parse.diagnostics);
  EXPECT_FALSE(parse.config->capture.enabled);
  EXPECT_TRUE(parse.config->capture.allow_fallback);
  EXPECT_EQ(parse.config->capture.num_slots, 3u);
  EXPECT_EQ(parse.config->capture.warmup_runs, 0u);
}

TEST(CaptureConfig, BadValuesNameTheKey) {
  RuntimeConfigParse parse = ParseRuntimeConfigText(
      "format = 1\n[capture]\nnum_slots = 0\nenabled = \"yes\"\nslots = 2\nwarmup_runs = -1\n",
      "runtime.toml");
  EXPECT_FALSE(parse.config.has_value());
  std::string all = JoinDiagnostics(parse.diagnostics);
  EXPECT_NE(all.find("capture.num_slots"), std::string::npos) << all;
  EXPECT_NE(all.find("capture.enabled"), std::string::npos) << all;
  EXPECT_NE(all.find("capture.slots"), std::string::npos) << all;
  EXPECT_NE(all.find("capture.warmup_runs"), std::string::npos) << all;
}

}  // namespace
}  // namespace mstar

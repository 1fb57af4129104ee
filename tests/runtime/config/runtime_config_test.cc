// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "config/runtime_config.h"

#include <gtest/gtest.h>

#include "host/memory_ledger.h"
#include "support/test_support.h"

namespace mstar {
namespace {

TEST(RuntimeConfig, AnEmptyPluginRootIsAnError) {
  RuntimeConfigParse parse =
      ParseRuntimeConfigText("format = 1\n[plugins]\nroots = [\"/opt\", \"\"]\n", "rt.toml");
  EXPECT_FALSE(parse.config.has_value());
  EXPECT_EQ(JoinDiagnostics(parse.diagnostics),
            "rt.toml:3:18: plugins.roots[1]: an empty path names no directory (\".\" is the "
            "config's own)");
}

TEST(RuntimeConfig, ParsesEverySection) {
  RuntimeConfigParse parse = ParseRuntimeConfigText(
      "format = 1\n[plugins]\nroots = [\"plugins\", \"/opt/mstar/plugins\"]\n"
      "[device]\ntype = \"cuda\"\nindex = 1\n[memory]\nhost_budget = \"512MiB\"\ndevice_budget = "
      "4096\n[engine]\nidle_spin_us = 50\n",
      "/etc/mstar/runtime.toml");
  ASSERT_TRUE(parse.config.has_value()) << JoinDiagnostics(parse.diagnostics);
  const RuntimeConfig& c = *parse.config;
  EXPECT_EQ(c.plugin_roots, (std::vector<std::string>{"/etc/mstar/plugins", "/opt/mstar/plugins"}));
  EXPECT_EQ(c.device.device_type, kDLCUDA);
  EXPECT_EQ(c.device.device_id, 1);
  EXPECT_EQ(c.host_budget, 512u << 20);
  EXPECT_EQ(c.device_budget, 4096u);
  EXPECT_EQ(c.idle_spin_us, 50u);
  EXPECT_TRUE(c.device_block_cache);  // the default
  EXPECT_FALSE(ParseRuntimeConfigText("format = 1\n", "defaults.toml").config->idle_spin_us);
  RuntimeConfigParse uncached =
      ParseRuntimeConfigText("format = 1\n[memory]\ndevice_block_cache = false\n", "rt.toml");
  ASSERT_TRUE(uncached.config.has_value()) << JoinDiagnostics(uncached.diagnostics);
  EXPECT_FALSE(uncached.config->device_block_cache);
  RuntimeConfigParse bad =
      ParseRuntimeConfigText("format = 1\n[memory]\ndevice_block_cache = \"no\"\n", "rt.toml");
  EXPECT_FALSE(bad.config.has_value());
  EXPECT_NE(
      JoinDiagnostics(bad.diagnostics).find("rt.toml:3:22: memory.device_block_cache: expected"),
      std::string::npos)
      << JoinDiagnostics(bad.diagnostics);
}

TEST(RuntimeConfig, ProblemsNameFileLineAndKey) {
  RuntimeConfigParse parse = ParseRuntimeConfigText(
      "format = 1\n[device]\ntype = \"tpu\"\n[memory]\nhost_budget = \"lots\"\n[plugins]\nroot = "
      "[]\n[engine]\nidle_spin_us = -1\n",
      "rt.toml");
  EXPECT_FALSE(parse.config.has_value());
  std::string all = JoinDiagnostics(parse.diagnostics);
  EXPECT_NE(all.find("rt.toml:3:8: device.type: unknown device type 'tpu'"), std::string::npos)
      << all;
  EXPECT_NE(all.find("rt.toml:5:15: memory.host_budget: expected a byte size"), std::string::npos)
      << all;
  EXPECT_NE(all.find("rt.toml:7:8: plugins.root: unknown key"), std::string::npos) << all;
  EXPECT_NE(all.find("rt.toml:9:16: engine.idle_spin_us: expected 0 to 100000 microseconds"),
            std::string::npos)
      << all;
}

TEST(RuntimeConfig, TheHostHasOneDevice) {
  RuntimeConfigParse parse =
      ParseRuntimeConfigText("format = 1\n[device]\ntype = \"cpu\"\nindex = 1\n", "rt.toml");
  EXPECT_FALSE(parse.config.has_value());
  EXPECT_EQ(JoinDiagnostics(parse.diagnostics),
            "rt.toml:4:9: device.index: the host (type \"cpu\") has one device, index 0");
}

// One problem, one message: an index out of range says the range (and not also that the host
// has one device); an unknown type is not also checked as the host.
TEST(RuntimeConfig, ADeviceProblemIsReportedOnce) {
  for (const auto& [table, message] : std::vector<std::pair<std::string, std::string>>{
           {"type = \"cuda\"\nindex = 5000\n",
            "rt.toml:4:9: device.index: expected a device index from 0 to 1024"},
           {"type = \"cpu\"\nindex = -1\n",
            "rt.toml:4:9: device.index: expected a device index from 0 to 1024"},
           {"type = \"gpu\"\nindex = 1\n",
            "rt.toml:3:8: device.type: unknown device type 'gpu' (expected cpu or cuda)"}}) {
    RuntimeConfigParse parse = ParseRuntimeConfigText("format = 1\n[device]\n" + table, "rt.toml");
    EXPECT_FALSE(parse.config.has_value());
    EXPECT_EQ(JoinDiagnostics(parse.diagnostics), message) << table;
  }
}

TEST(RuntimeConfig, ByteSizes) {
  EXPECT_EQ(ParseByteSize("4096"), 4096u);
  EXPECT_EQ(ParseByteSize("8GiB"), 8ull << 30);
  EXPECT_EQ(ParseByteSize("1.5 GB"), 1500000000u);
  EXPECT_EQ(ParseByteSize("0"), 0u);
  EXPECT_FALSE(ParseByteSize("GiB").has_value());
  EXPECT_FALSE(ParseByteSize("12 parsecs").has_value());
  EXPECT_FALSE(ParseByteSize("1.2.3").has_value());
  EXPECT_FALSE(ParseByteSize("0.1B").has_value()) << "not 0, which means unlimited";
  EXPECT_FALSE(ParseByteSize("18446744073709551617B").has_value());
  EXPECT_FALSE(ParseByteSize("20000000TB").has_value());
  EXPECT_EQ(ParseByteSize("16000000TB"), 16000000000000000000u);
}

TEST(RuntimeConfig, ShippedConfigsAreValidAndBudgetsApply) {
  RuntimeConfigParse parse =
      ParseRuntimeConfigFile(std::string(MSTAR_SOURCE_DIR) + "/manifests/runtime/cpu.toml");
  ASSERT_TRUE(parse.config.has_value()) << JoinDiagnostics(parse.diagnostics);
  RuntimeConfig config = *parse.config;
  config.host_budget = 1 << 20;
  ApplyMemoryBudgets(config);
  EXPECT_EQ(MemoryLedger::Global().Limit(DLDevice{kDLCPU, 0}), 1u << 20);
  ApplyMemoryBudgets(RuntimeConfig{});
  EXPECT_EQ(MemoryLedger::Global().Limit(DLDevice{kDLCPU, 0}), 0u);

  RuntimeConfigParse cuda =
      ParseRuntimeConfigFile(std::string(MSTAR_SOURCE_DIR) + "/manifests/runtime/cuda.toml");
  ASSERT_TRUE(cuda.config.has_value()) << JoinDiagnostics(cuda.diagnostics);
  EXPECT_EQ(cuda.config->device.device_type, kDLCUDA);
  EXPECT_EQ(cuda.config->device.device_id, 0);
}

}  // namespace
}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "plugin/discovery.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "support/test_support.h"

namespace mstar {
namespace {

std::vector<std::string> Names(const DiscoveryResult& result) {
  std::vector<std::string> names;
  for (const PluginCandidate& c : result.candidates) {
    names.push_back(c.manifest_path.substr(c.manifest_path.rfind('/') + 1));
  }
  return names;
}

class DiscoveryTest : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("MSTAR_PLUGIN_PATH"); }
  void TearDown() override { unsetenv("MSTAR_PLUGIN_PATH"); }
  DiscoveryOptions Only() {
    DiscoveryOptions options;
    options.use_environment = false;
    options.use_install_dir = false;
    return options;
  }
  test::TempDir dir_;
};

TEST_F(DiscoveryTest, RootsAreScannedOneLevelDeepInSortedOrder) {
  test::WriteFile(dir_.file("root/b.toml"), "");
  test::WriteFile(dir_.file("root/a.toml"), "");
  test::WriteFile(dir_.file("root/z_sub/c.toml"), "");
  test::WriteFile(dir_.file("root/a_sub/d.toml"), "");
  test::WriteFile(dir_.file("root/a_sub/deeper/e.toml"), "");  // too deep: ignored
  test::WriteFile(dir_.file("root/notes.txt"), "");
  DiscoveryOptions options = Only();
  options.plugin_paths = {dir_.file("root")};
  DiscoveryResult result = DiscoverPlugins(options);
  EXPECT_EQ(Names(result), (std::vector<std::string>{"a.toml", "b.toml", "d.toml", "c.toml"}));
  for (const PluginCandidate& c : result.candidates) EXPECT_EQ(c.origin, PluginOrigin::kPluginPath);
}

TEST_F(DiscoveryTest, SearchOrderAndFirstFindWins) {
  test::WriteFile(dir_.file("explicit/x.toml"), "");
  test::WriteFile(dir_.file("path/p.toml"), "");
  test::WriteFile(dir_.file("env/e.toml"), "");
  test::WriteFile(dir_.file("config/c.toml"), "");
  test::WriteFile(dir_.file("install/i.toml"), "");
  setenv("MSTAR_PLUGIN_PATH", (dir_.file("env") + ":" + dir_.file("path")).c_str(), 1);
  DiscoveryOptions options;
  options.explicit_paths = {dir_.file("explicit/x.toml")};
  options.plugin_paths = {dir_.file("path")};
  options.config_roots = {dir_.file("config")};
  options.install_dir = dir_.file("install");
  DiscoveryResult result = DiscoverPlugins(options);
  EXPECT_EQ(Names(result),
            (std::vector<std::string>{"x.toml", "p.toml", "e.toml", "c.toml", "i.toml"}));
  std::vector<PluginOrigin> origins;
  for (const PluginCandidate& c : result.candidates) origins.push_back(c.origin);
  EXPECT_EQ(origins,
            (std::vector<PluginOrigin>{PluginOrigin::kExplicit, PluginOrigin::kPluginPath,
                                       PluginOrigin::kEnvironment, PluginOrigin::kConfigRoot,
                                       PluginOrigin::kInstallDir}));
  // p.toml was reached twice (--plugin-path, then MSTAR_PLUGIN_PATH): the second is a skip.
  bool duplicate_logged = false;
  for (const SkippedCandidate& s : result.skipped) {
    duplicate_logged |= s.path.find("p.toml") != std::string::npos &&
                        s.reason.find("already found") != std::string::npos;
  }
  EXPECT_TRUE(duplicate_logged);
}

TEST_F(DiscoveryTest, MissingPlacesAreSkippedWithAReason) {
  DiscoveryOptions options = Only();
  options.plugin_paths = {dir_.file("nowhere")};
  options.explicit_paths = {dir_.file("missing.toml")};
  test::WriteFile(dir_.file("file_not_dir"), "");
  options.config_roots = {dir_.file("file_not_dir")};
  DiscoveryResult result = DiscoverPlugins(options);
  EXPECT_TRUE(result.candidates.empty());
  ASSERT_EQ(result.skipped.size(), 3u);
  EXPECT_NE(result.skipped[0].reason.find("no such file"), std::string::npos);
  EXPECT_NE(result.skipped[1].reason.find("does not exist"), std::string::npos);
  EXPECT_NE(result.skipped[2].reason.find("not a directory"), std::string::npos);
}

// A broken link among a root's manifests is reported under its own name; the root's other
// manifests are still found and the root is not said to be unlistable. An empty path names no
// file.
TEST_F(DiscoveryTest, ABrokenLinkIsSkippedByItsNameAndTheRootStillListed) {
  const std::string root = dir_.file("root");
  std::filesystem::create_directories(root + "/sub");
  test::WriteFile(root + "/a.toml", "");
  test::WriteFile(root + "/sub/b.toml", "");
  std::filesystem::create_symlink(dir_.file("nowhere.toml"), root + "/gone.toml");
  std::filesystem::create_symlink(dir_.file("nowhere"), root + "/gone_dir");
  DiscoveryOptions options = Only();
  options.plugin_paths = {root};
  options.explicit_paths = {""};
  DiscoveryResult result = DiscoverPlugins(options);
  EXPECT_EQ(Names(result), (std::vector<std::string>{"a.toml", "b.toml"}));
  ASSERT_EQ(result.skipped.size(), 2u);
  EXPECT_EQ(result.skipped[0].reason, "an empty path names no file");
  EXPECT_EQ(result.skipped[1].path, root + "/gone.toml");
  EXPECT_NE(result.skipped[1].reason.find("cannot read"), std::string::npos)
      << result.skipped[1].reason;
}

// A .toml that is neither a file nor a directory (a FIFO: reading it would block) is skipped by
// its name; a directory named *.toml is searched as a subdirectory, not reported.
TEST_F(DiscoveryTest, ATomlThatIsNotARegularFileIsSkippedByItsName) {
  const std::string root = dir_.file("root");
  test::WriteFile(root + "/a.toml", "");
  ASSERT_EQ(::mkfifo((root + "/pipe.toml").c_str(), 0600), 0);
  test::WriteFile(root + "/dir.toml/b.toml", "");
  DiscoveryOptions options = Only();
  options.plugin_paths = {root};
  DiscoveryResult result = DiscoverPlugins(options);
  EXPECT_EQ(Names(result), (std::vector<std::string>{"a.toml", "b.toml"}));
  ASSERT_EQ(result.skipped.size(), 1u);
  EXPECT_EQ(result.skipped[0].path, root + "/pipe.toml");
  EXPECT_EQ(result.skipped[0].reason, "not a regular file");
  options.plugin_paths = {};
  options.explicit_paths = {root + "/pipe.toml"};  // named itself
  result = DiscoverPlugins(options);
  EXPECT_TRUE(result.candidates.empty());
  ASSERT_EQ(result.skipped.size(), 1u);
  EXPECT_EQ(result.skipped[0].reason, "not a regular file");
}

TEST_F(DiscoveryTest, EnvironmentCanBeIgnored) {
  test::WriteFile(dir_.file("env/e.toml"), "");
  setenv("MSTAR_PLUGIN_PATH", dir_.file("env").c_str(), 1);
  EXPECT_TRUE(DiscoverPlugins(Only()).candidates.empty());
  DiscoveryOptions with_env = Only();
  with_env.use_environment = true;
  EXPECT_EQ(DiscoverPlugins(with_env).candidates.size(), 1u);
}

TEST_F(DiscoveryTest, DefaultInstallDirIsBesideTheExecutable) {
  std::optional<std::string> dir = DefaultInstallDir();
  ASSERT_TRUE(dir.has_value());
  // The test runs from <build>/bin, as mstar runs from <prefix>/bin.
  EXPECT_EQ(std::filesystem::weakly_canonical(*dir),
            std::filesystem::weakly_canonical(std::filesystem::path(MSTAR_BUILD_DIR) / "lib" /
                                              "mstar" / "plugins"));
}

}  // namespace
}  // namespace mstar

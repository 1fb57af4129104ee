// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "plugin/manifest.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "mstar/abi.h"
#include "support/test_support.h"

namespace mstar {
namespace {

const char* kGood = R"(format = 1

[plugin]
name = "demo"
version = "1.0.0"
library = "lib/libdemo.so"
description = "a demo"

[abi]
major = 1
min_minor = 0

[[provides]]
kind = "submodule"
name = "demo_sub"

[[provides]]
kind = "tier"
name = "demo_tier"

[requires]
torch = "1.13"
torch_cxx11_abi = true
cuda = 12
)";

// Replaces the first occurrence of from with to in kGood.
std::string Edit(const std::string& from, const std::string& to) {
  std::string text = kGood;
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

// prefix, then piece times times (built by appending: GCC 12 at -O3 warns wrongly on
// `"..." + std::string&&`).
std::string Repeat(const std::string& piece, int times, const std::string& prefix = "") {
  std::string out = prefix;
  for (int i = 0; i < times; ++i) out += piece;
  return out;
}

std::string Problems(const ManifestParse& parse) {
  return JoinDiagnostics(parse.diagnostics);
}

TEST(PluginManifest, ParsesAValidManifest) {
  ManifestParse parse = ParsePluginManifestText(kGood, "/plugins/demo/demo.toml");
  ASSERT_TRUE(parse.manifest.has_value()) << Problems(parse);
  const PluginManifest& m = *parse.manifest;
  EXPECT_EQ(m.name, "demo");
  EXPECT_EQ(m.version, "1.0.0");
  EXPECT_EQ(m.library_path, "/plugins/demo/lib/libdemo.so");
  EXPECT_EQ(m.abi_major, 1u);
  ASSERT_EQ(m.provides.size(), 2u);
  EXPECT_EQ(m.provides[1].kind, static_cast<uint32_t>(MSTAR_KIND_TIER));
  EXPECT_EQ(m.provides[1].where.line, 19u);  // its name, two lines into the [[provides]] entry
  EXPECT_EQ(m.requires_.torch.value(), "1.13");
  EXPECT_EQ(m.requires_.cuda.value(), 12);
  EXPECT_EQ(m.library_where.line, 6u);
}

struct BadCase {
  const char* what;
  std::string text;
  const char* expected;  // a substring of the one diagnostic
};

TEST(PluginManifest, EachProblemNamesFileLineAndKey) {
  std::vector<BadCase> cases = {
      {"syntax", Edit("version = \"1.0.0\"", "version = \"1.0.0"), "m.toml:5:"},
      {"format", Edit("format = 1", "format = 2"),
       "m.toml:1:10: format: unsupported manifest format 2"},
      {"missing name", Edit("name = \"demo\"\n", ""),
       "m.toml:3:1: plugin.name: missing required key"},
      {"bad name", Edit("name = \"demo\"", "name = \"Demo Plugin\""),
       "m.toml:4:8: plugin.name: 'Demo Plugin' is not a valid plugin name"},
      {"bad version", Edit("\"1.0.0\"", "\"1.0\""),
       "plugin.version: '1.0' is not a semantic version"},
      {"absolute library", Edit("\"lib/libdemo.so\"", "\"/abs/libdemo.so\""),
       "m.toml:6:11: plugin.library: must be relative"},
      {"library outside the directory",
       // Enough ".." to reach / from wherever the test runs.
       Edit("\"lib/libdemo.so\"", Repeat("../", 32, "\"") + "usr/lib/x86_64-linux-gnu/libz.so.1\""),
       "m.toml:6:11: plugin.library: must name a file in the manifest's directory or below it; "
       "/usr/lib/x86_64-linux-gnu/libz.so.1 is outside"},
      {"library just outside", Edit("\"lib/libdemo.so\"", "\"lib/../../libdemo.so\""),
       "plugin.library: must name a file in the manifest's directory or below it"},
      {"abi major range", Edit("major = 1", "major = 32767"),
       "m.toml:10:9: abi.major: must be an ABI major version from 1 to 1000, not 32767"},
      {"abi major zero", Edit("major = 1", "major = 0"),
       "abi.major: must be an ABI major version from 1 to 1000, not 0"},
      {"abi minor range", Edit("min_minor = 0", "min_minor = 2147483647"),
       "m.toml:11:13: abi.min_minor: must be an ABI minor version from 0 to 100000, not "
       "2147483647"},
      {"abi minor negative", Edit("min_minor = 0", "min_minor = -1"),
       "abi.min_minor: must be an ABI minor version from 0 to 100000, not -1"},
      {"unknown key", Edit("description", "descripton"),
       "m.toml:7:14: plugin.descripton: unknown key"},
      {"ill-typed", Edit("major = 1", "major = \"one\""),
       "m.toml:10:9: abi.major: expected an integer, found string"},
      {"missing abi", Edit("[abi]\nmajor = 1\nmin_minor = 0\n", ""), "abi: missing required key"},
      {"bad kind", Edit("kind = \"tier\"", "kind = \"teir\""),
       "m.toml:18:8: provides[1].kind: unknown kind 'teir'"},
      {"duplicate provides",
       Edit("kind = \"tier\"\nname = \"demo_tier\"", "kind = \"submodule\"\nname = \"demo_sub\""),
       "provides[1].name: duplicate submodule 'demo_sub'"},
      {"bad sha", Edit("description = \"a demo\"", "sha256 = \"abc\""),
       "plugin.sha256: must be 64 hexadecimal digits"},
      {"bad torch", Edit("torch = \"1.13\"", "torch = \"latest\""),
       "requires.torch: expected a version"},
      // A megabyte-long version would overflow std::regex's recursion: refused unmatched.
      {"huge version", Edit("\"1.0.0\"", Repeat("a", 1 << 20, "\"1.0.0-") + "\""),
       "is not a semantic version"},
      {"huge torch", Edit("torch = \"1.13\"", Repeat("1", 1 << 20, "torch = \"") + ".0\""),
       "requires.torch: expected a version"},
      {"top-level typo", Edit("format = 1\n", "format = 1\nextra = 1\n"),
       "m.toml:2:9: extra: unknown key"},
      {"provides not a table",
       Edit("[[provides]]\nkind = \"submodule\"\nname = \"demo_sub\"\n\n[[provides]]\nkind = "
            "\"tier\"\nname = \"demo_tier\"\n",
            "")
           .replace(0, 11, "format = 1\nprovides = [1]\n"),
       "m.toml:2:13: provides[0]: expected a table"},
  };
  for (const BadCase& c : cases) {
    ManifestParse parse = ParsePluginManifestText(c.text, "m.toml");
    EXPECT_FALSE(parse.manifest.has_value()) << c.what;
    ASSERT_EQ(parse.diagnostics.size(), 1u) << c.what << ":\n" << Problems(parse);
    EXPECT_NE(parse.diagnostics[0].ToString().find(c.expected), std::string::npos)
        << c.what << ": got " << parse.diagnostics[0].ToString();
  }
}

TEST(PluginManifest, ALibraryLinkedFromOutsideTheDirectoryIsRefused) {
  // The path stays inside lexically; the file is a link out of the plugin's directory.
  test::TempDir dir;
  std::filesystem::create_directories(dir.file("demo/lib"));
  test::WriteFile(dir.file("elsewhere/libdemo.so"), "");
  std::filesystem::create_symlink(dir.file("elsewhere/libdemo.so"),
                                  dir.file("demo/lib/libdemo.so"));
  ManifestParse parse = ParsePluginManifestText(kGood, dir.file("demo/demo.toml"));
  EXPECT_FALSE(parse.manifest.has_value());
  EXPECT_NE(Problems(parse).find(dir.file("demo/demo.toml") +
                                 ":6:11: plugin.library: must name a file in the manifest's "
                                 "directory or below it; " +
                                 dir.file("demo/lib/libdemo.so") + " is a link to "),
            std::string::npos)
      << Problems(parse);
  // A link that stays inside is fine, and so is a library not built yet.
  std::filesystem::remove(dir.file("demo/lib/libdemo.so"));
  test::WriteFile(dir.file("demo/real.so"), "");
  std::filesystem::create_symlink("../real.so", dir.file("demo/lib/libdemo.so"));
  EXPECT_TRUE(ParsePluginManifestText(kGood, dir.file("demo/demo.toml")).manifest.has_value());
  std::filesystem::remove(dir.file("demo/lib/libdemo.so"));
  EXPECT_TRUE(ParsePluginManifestText(kGood, dir.file("demo/demo.toml")).manifest.has_value());
}

TEST(PluginManifest, ReportsEveryProblemAtOnce) {
  std::string text = Edit("major = 1", "major = \"x\"");
  text = text.replace(text.find("version = \"1.0.0\""), 17, "version = 3");
  text += "surprise = true\n";
  ManifestParse parse = ParsePluginManifestText(text, "m.toml");
  EXPECT_EQ(parse.diagnostics.size(), 3u) << Problems(parse);
}

TEST(PluginManifest, OtherTomlFilesAreNotManifests) {
  ManifestParse parse = ParsePluginManifestText("[model]\nname = \"x\"\n", "model.toml");
  EXPECT_FALSE(parse.is_plugin_manifest);
  EXPECT_FALSE(parse.manifest.has_value());
}

TEST(PluginManifest, KindNamesRoundTrip) {
  for (uint32_t kind :
       {MSTAR_KIND_SUBMODULE, MSTAR_KIND_RESOURCE, MSTAR_KIND_TIER, MSTAR_KIND_MODEL}) {
    EXPECT_EQ(KindFromName(KindName(kind)), kind);
  }
  EXPECT_EQ(KindFromName("widget"), 0u);
}

}  // namespace
}  // namespace mstar

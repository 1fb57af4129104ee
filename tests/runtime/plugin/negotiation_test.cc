// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The entry point and the two-sided ABI negotiation, against real libraries built with one fault
// each (tests/plugins/faulty_plugin.cc), and the SDK's side of negotiation at several host minors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "support/test_support.h"

namespace mstar {
namespace {

// Loads the manifest of test plugin `name` (optionally with edits) with the given host.
std::shared_ptr<PluginLibrary> LoadTestPlugin(const std::string& manifest_path,
                                              HostCapabilities host, Diagnostic* error) {
  ManifestParse parse = ParsePluginManifestFile(manifest_path);
  EXPECT_TRUE(parse.manifest.has_value()) << JoinDiagnostics(parse.diagnostics);
  if (!parse.manifest) return nullptr;
  LoadOptions options;
  options.host = host;
  return PluginLibrary::Load(*parse.manifest, options, error);
}

std::string ManifestOf(const std::string& name) {
  return test::TestPluginDir(name) + "/" + name + ".toml";
}

// Rewrites a test plugin's manifest into dir with [abi] changed.
std::string ManifestWithAbi(const test::TempDir& dir, const std::string& name, int major,
                            int minor) {
  std::string text = test::ReadFile(ManifestOf(name));
  text.replace(text.find("major = 1"), 9, "major = " + std::to_string(major));
  text.replace(text.find("min_minor = 0"), 13, "min_minor = " + std::to_string(minor));
  std::string library = "lib" + name + ".so";
  test::CopyFile(test::TestPluginDir(name) + "/" + library, dir.file(library));
  test::WriteFile(dir.file(name + ".toml"), text);
  return dir.file(name + ".toml");
}

HostCapabilities HostAt(uint32_t major, uint32_t minor) {
  HostCapabilities host = HostCapabilities::Current();
  host.abi_major = major;
  host.abi_minor = minor;
  return host;
}

struct FaultCase {
  const char* plugin;
  const char* key;
  std::string message;
};

TEST(Negotiation, EachFaultyLibraryIsRefusedWithItsReason) {
  const FaultCase cases[] = {
      {"fault_no_entry", "plugin.library", "does not export mstar_plugin_entry"},
      {"fault_major2", "abi",
       "the library was built for ABI 2.3; this host speaks ABI 1." +
           std::to_string(MSTAR_ABI_MINOR) + " (majors must match)"},
      {"fault_needs_minor3", "abi",
       "[abi] min_minor = 0 but the library needs host minor 3; fix the manifest"},
      {"fault_entry_error", "plugin",
       "the entry point failed: deliberate failure in the entry point"},
      {"fault_entry_throws", "plugin",
       "the entry point threw an exception: deliberate exception from the entry point"},
      {"fault_no_forward", "plugin",
       "submodule 'no_forward_thing''s table leaves the required slot forward empty"},
      {"fault_stop_batched_only", "plugin",
       "submodule 'stop_batched_only_thing''s table fills check_stop_batched or "
       "check_stop_columnar but leaves check_stop empty"},
      {"fault_wrong_name", "plugin",
       "the library calls itself 'not_fault_wrong_name' but the manifest names it "
       "'fault_wrong_name'"},
      {"fault_extra_factory", "plugin",
       "the library provides submodule 'unlisted_extra' which the manifest's [[provides]] does not "
       "list"},
      {"fault_no_negotiation", "abi", "the entry point did not fill in the ABI negotiation"},
      {"fault_huge_factory_stride", "plugin",
       "factory #0 has struct_size 2147483648, more than 4096 (garbage)"},
      {"fault_odd_factory_stride", "plugin",
       "factory #0 has struct_size " + std::to_string(sizeof(mstar_factory_t) + 1) +
           ", not a multiple of the struct's alignment (8)"},
  };
  for (const FaultCase& c : cases) {
    Diagnostic error;
    EXPECT_EQ(LoadTestPlugin(ManifestOf(c.plugin), HostCapabilities::Current(), &error), nullptr)
        << c.plugin;
    EXPECT_EQ(error.key, c.key) << c.plugin;
    EXPECT_NE(error.message.find(c.message), std::string::npos)
        << c.plugin << ": " << error.message;
    EXPECT_NE(error.where.line, 0u) << c.plugin << ": the problem points into the manifest";
  }
}

// A table's slots past its struct_size are not the plugin's: a check_stop_columnar there (set in
// memory the plugin did not give as its table) neither counts nor is refused.
TEST(Negotiation, SlotsPastATablesStructSizeAreNotRead) {
  Diagnostic error;
  auto library =
      LoadTestPlugin(ManifestOf("fault_short_table"), HostCapabilities::Current(), &error);
  ASSERT_NE(library, nullptr) << error.message;
}

// A manifest that lists a factory the library lacks is told what the library does provide.
TEST(Negotiation, AFactoryTheLibraryLacksIsNamedWithWhatItProvides) {
  test::TempDir dir;
  const std::string name = "fault_extra_factory";
  std::string text = test::ReadFile(ManifestOf(name));
  text += "\n[[provides]]\nkind = \"tier\"\nname = \"ghost\"\n";
  test::CopyFile(test::TestPluginDir(name) + "/lib" + name + ".so", dir.file("lib" + name + ".so"));
  test::WriteFile(dir.file(name + ".toml"), text);
  Diagnostic error;
  EXPECT_EQ(LoadTestPlugin(dir.file(name + ".toml"), HostCapabilities::Current(), &error), nullptr);
  EXPECT_NE(error.message.find("the manifest lists tier 'ghost' but the library does not provide "
                               "it (it provides submodule 'extra_factory_thing', submodule "
                               "'unlisted_extra')"),
            std::string::npos)
      << error.message;
}

// A library whose dependency stack leaves a symbol to lazy binding (as LibTorch 2.x CUDA wheels
// do) still loads, with a warning, when nothing calls through that symbol.
// A dependency's unresolved reference is bound lazily (some CUDA stacks' libraries carry such).
TEST(Negotiation, AnUnresolvedSymbolOfADependencyFallsBackToLazyBinding) {
  Diagnostic error;
  test::LogCapture logs;
  auto library =
      LoadTestPlugin(ManifestOf("fault_lazy_dependency"), HostCapabilities::Current(), &error);
  EXPECT_NE(library, nullptr) << error.ToString();
  // The warning gives dlopen's reason, nothing else.
  EXPECT_TRUE(logs.Contains("loaded with lazy binding (" +
                            test::TestPluginDir("fault_lazy_dependency") +
                            "/liblazy_dependency.so: undefined symbol: "
                            "mstar_test_symbol_defined_nowhere); a call"))
      << ::testing::PrintToString(logs.Lines());
}

// The plugin's own unresolved reference is refused: the first call through it would end the
// process (the dynamic loader exits with status 127).
TEST(Negotiation, AnUnresolvedSymbolOfThePluginItselfIsRefused) {
  Diagnostic error;
  auto library =
      LoadTestPlugin(ManifestOf("fault_lazy_symbol"), HostCapabilities::Current(), &error);
  EXPECT_EQ(library, nullptr);
  EXPECT_EQ(error.key, "plugin.library");
  EXPECT_NE(error.message.find("libfault_lazy_symbol.so: undefined symbol: "
                               "mstar_test_symbol_defined_nowhere"),
            std::string::npos)
      << error.ToString();
  // Also when a dependency lacks a symbol too (dlopen names only the dependency's, the first it
  // meets): the plugin's own references are checked after the lazy open.
  library = LoadTestPlugin(ManifestOf("fault_lazy_both"), HostCapabilities::Current(), &error);
  EXPECT_EQ(library, nullptr);
  EXPECT_EQ(error.key, "plugin.library");
  EXPECT_NE(error.message.find("libfault_lazy_both.so: undefined symbol: "
                               "mstar_test_symbol_defined_nowhere (the library itself"),
            std::string::npos)
      << error.ToString();
  // Loaded again: the refused library stayed mapped (opened lazily, never unloaded), where
  // binding now finds it loaded and binds nothing; it is refused again all the same.
  Diagnostic again;
  library = LoadTestPlugin(ManifestOf("fault_lazy_both"), HostCapabilities::Current(), &again);
  EXPECT_EQ(library, nullptr);
  EXPECT_EQ(again.key, "plugin.library");
  EXPECT_EQ(again.message, error.message);
}

// An exception out of a static initializer leaves the dynamic loader locked for every other
// thread (their dlopen would wait forever): the process ends instead. Where the exception
// unwinds through dlopen, the host exits naming the library; where the C frames of the dynamic
// loader stop it (glibc's own unwind tables decide: this build's -O3 and -O2 binaries differ),
// std::terminate ends the process at the throw. Either way nothing is left to hang.
TEST(NegotiationDeathTest, AStaticInitializerThatThrowsEndsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Diagnostic error;
        LoadTestPlugin(ManifestOf("fault_static_init_throws"), HostCapabilities::Current(), &error);
      },
      "deliberate exception from a static initializer");
}

TEST(Negotiation, FaultsDoNotStopTheOtherPlugins) {
  std::vector<std::string> dirs = {test::TemplatePluginDir()};
  for (const char* name : {"fault_no_entry", "fault_major2", "fault_entry_error",
                           "fault_entry_throws", "fault_no_forward", "fault_wrong_name"}) {
    dirs.push_back(test::TestPluginDir(name));
  }
  PluginRegistry registry = test::LoadOnly(dirs);
  ASSERT_EQ(registry.loaded().size(), 1u);
  EXPECT_EQ(registry.loaded()[0].library->manifest().name, "template");
  EXPECT_EQ(registry.rejected().size(), 6u);
}

TEST(Negotiation, NegotiatesDownToTheOlderSide) {
  // A newer host: the SDK plugin (built for this ABI's minor) settles on its own minor.
  Diagnostic error;
  auto library = LoadTestPlugin(ManifestOf("kit"), HostAt(1, 7), &error);
  ASSERT_NE(library, nullptr) << error.ToString();
  EXPECT_EQ(library->negotiated_minor(), MSTAR_ABI_MINOR);
  EXPECT_EQ(library->api()->struct_version, MSTAR_ABI_MINOR);
  EXPECT_EQ(library->host().table()->struct_version, 7u);

  // An older host (1.0): the SDK plugin settles on 1.0 and stamps its tables so (once the load
  // at 1.7 is gone: one file is one load).
  library.reset();
  library = LoadTestPlugin(ManifestOf("kit"), HostAt(1, 0), &error);
  ASSERT_NE(library, nullptr) << error.ToString();
  EXPECT_EQ(library->negotiated_minor(), 0u);
  EXPECT_EQ(library->api()->struct_version, 0u);

  // A plugin built for 1.3 that needs 1.3: refused by a 1.2 host from the manifest alone, and
  // negotiated at 1.3 by a 1.5 host.
  test::TempDir dir;
  std::string manifest = ManifestWithAbi(dir, "fault_needs_minor3", 1, 3);
  EXPECT_EQ(LoadTestPlugin(manifest, HostAt(1, 2), &error), nullptr);
  EXPECT_NE(error.message.find("needs host ABI 1.3 or newer; this host provides 1.2"),
            std::string::npos)
      << error.message;
  library = LoadTestPlugin(manifest, HostAt(1, 5), &error);
  ASSERT_NE(library, nullptr) << error.ToString();
  EXPECT_EQ(library->negotiated_minor(), 3u);
  EXPECT_EQ(library->plugin_minor(), 3u);
}

// One file is one load: loading it again while the first load lives is that load (same
// manifest and host minor); for another host minor it is refused, since the second entry call
// would restamp the first load's tables (they are the library's statics) under it.
TEST(Negotiation, OneFileIsOneLoad) {
  Diagnostic error;
  auto first = LoadTestPlugin(ManifestOf("kit"), HostAt(1, MSTAR_ABI_MINOR), &error);
  ASSERT_NE(first, nullptr) << error.ToString();
  auto again = LoadTestPlugin(ManifestOf("kit"), HostAt(1, MSTAR_ABI_MINOR), &error);
  EXPECT_EQ(again, first);
  EXPECT_EQ(LoadTestPlugin(ManifestOf("kit"), HostAt(1, 0), &error), nullptr);
  EXPECT_EQ(error.key, "plugin.library");
  EXPECT_NE(error.message.find("is loaded in this process already"), std::string::npos)
      << error.message;
  EXPECT_EQ(first->negotiated_minor(), MSTAR_ABI_MINOR);
  EXPECT_EQ(first->api()->struct_version, MSTAR_ABI_MINOR) << "the first load's tables kept";
  first.reset();
  again.reset();
  auto older = LoadTestPlugin(ManifestOf("kit"), HostAt(1, 0), &error);
  ASSERT_NE(older, nullptr) << error.ToString();
  EXPECT_EQ(older->negotiated_minor(), 0u);
}

// A live load reused for its manifest (same path, same host minor) is checked against what the
// manifest says now: an edit since the load that disagrees with the library is refused.
TEST(Negotiation, ALiveLoadIsCheckedAgainstItsManifestAsItIsNow) {
  test::TempDir dir;
  const std::string manifest = ManifestWithAbi(dir, "kit", 1, 0);
  Diagnostic error;
  auto first = LoadTestPlugin(manifest, HostCapabilities::Current(), &error);
  ASSERT_NE(first, nullptr) << error.ToString();
  std::string text = test::ReadFile(manifest);
  text.replace(text.find("min_minor = 0"), 13, "min_minor = 1");
  test::WriteFile(manifest, text);
  EXPECT_EQ(LoadTestPlugin(manifest, HostCapabilities::Current(), &error), nullptr);
  EXPECT_EQ(error.key, "abi");
  EXPECT_NE(error.message.find("[abi] min_minor = 1 but the library needs host minor 0"),
            std::string::npos)
      << error.message;
  text.replace(text.find("min_minor = 1"), 13, "min_minor = 0");
  test::WriteFile(manifest, text);
  EXPECT_EQ(LoadTestPlugin(manifest, HostCapabilities::Current(), &error), first);
}

// A library file replaced at the same path (a new inode: an upgrade in place) while the process
// has the old one loaded cannot be loaded again: dlopen would hand back the old mapping, and the
// checks would have run on the new file. Refused, before and after the old load is let go.
TEST(Negotiation, ALibraryReplacedAtItsPathIsRefusedUntilRestart) {
  test::TempDir dir;
  const std::string manifest = ManifestWithAbi(dir, "kit", 1, 0);
  Diagnostic error;
  auto first = LoadTestPlugin(manifest, HostCapabilities::Current(), &error);
  ASSERT_NE(first, nullptr) << error.ToString();
  test::CopyFile(test::TestPluginDir("kit") + "/libkit.so", dir.file("libkit.new"));
  std::filesystem::rename(dir.file("libkit.new"), dir.file("libkit.so"));
  for (int released = 0; released < 2; ++released) {
    EXPECT_EQ(LoadTestPlugin(manifest, HostCapabilities::Current(), &error), nullptr);
    EXPECT_EQ(error.key, "plugin.library");
    EXPECT_NE(error.message.find("libkit.so was replaced since this process loaded it"),
              std::string::npos)
        << error.message;
    first.reset();
  }
}

// A load whose entry point fails does not take over the plugin's shutdown: the earlier load of
// the same file, let go after it, still runs shutdown (it was skipped: the failed load counted as
// the file's latest entry call, and it never runs shutdown itself).
TEST(Negotiation, ALoadThatFailsAfterItsEntryCallLeavesShutdownToTheEarlierLoad) {
  test::TempDir dir;
  const std::string shutdowns = dir.file("shutdowns.txt");
  ASSERT_EQ(::setenv("MSTAR_TEST_SHUTDOWN_FILE", shutdowns.c_str(), 1), 0);
  Diagnostic error;
  auto first =
      LoadTestPlugin(ManifestOf("fault_records_shutdown"), HostCapabilities::Current(), &error);
  ASSERT_NE(first, nullptr) << error.ToString();
  // The same file again, past the live-load check, at a host minor its entry point refuses.
  ManifestParse parse = ParsePluginManifestFile(ManifestOf("fault_records_shutdown"));
  ASSERT_TRUE(parse.manifest.has_value());
  LoadOptions options;
  options.host = HostAt(1, 0);
  options.renegotiate_in_place = true;
  EXPECT_EQ(PluginLibrary::Load(*parse.manifest, options, &error), nullptr);
  EXPECT_NE(error.message.find("built for this host minor exactly"), std::string::npos)
      << error.message;
  first.reset();
  ::unsetenv("MSTAR_TEST_SHUTDOWN_FILE");
  EXPECT_EQ(test::ReadFile(shutdowns), "shutdown\n");
}

// The negotiation struct is writable by the plugin: a library that overwrites the host's minor
// with 9 and "negotiates" 9 is checked against what this host really speaks, and refused.
TEST(Negotiation, APluginCannotRaiseTheHostsMinor) {
  Diagnostic error;
  EXPECT_EQ(
      LoadTestPlugin(ManifestOf("fault_clobbers_host_minor"), HostCapabilities::Current(), &error),
      nullptr);
  EXPECT_EQ(error.key, "abi");
  const std::string host_minor = std::to_string(MSTAR_ABI_MINOR);
  EXPECT_NE(error.message.find("the library negotiated minor 9; min(host " + host_minor +
                               ", plugin 9) is " + host_minor),
            std::string::npos)
      << error.message;
}

// A plugin of a later minor whose factory struct grew: its factories are read at its struct size
// (R5), and both are found.
TEST(Negotiation, FactoriesOfALargerStructAreReadAtTheirOwnStride) {
  Diagnostic error;
  std::shared_ptr<PluginLibrary> library =
      LoadTestPlugin(ManifestOf("fault_wide_factories"), HostCapabilities::Current(), &error);
  ASSERT_NE(library, nullptr) << error.ToString();
  EXPECT_NE(library->FindFactory(MSTAR_KIND_SUBMODULE, "wide_factories_thing"), nullptr);
  EXPECT_NE(library->FindFactory(MSTAR_KIND_SUBMODULE, "wide_factories_thing_2"), nullptr);
}

TEST(Negotiation, SdkPluginRefusesAHostOfAnotherMajor) {
  // The manifest claims major 2 so the host's pre-check passes; the SDK's entry refuses.
  test::TempDir dir;
  std::string manifest = ManifestWithAbi(dir, "kit", 2, 0);
  Diagnostic error;
  EXPECT_EQ(LoadTestPlugin(manifest, HostAt(2, 0), &error), nullptr);
  EXPECT_NE(error.message.find("the library was built for ABI 1." +
                               std::to_string(MSTAR_ABI_MINOR) + "; this host speaks ABI 2.0"),
            std::string::npos)
      << error.message;
}

}  // namespace
}  // namespace mstar

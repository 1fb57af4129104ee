// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Loading real plugin libraries, and every way a plugin file can be wrong. Each bad candidate is
// rejected with a message naming the manifest key to fix, and the good plugins beside it still
// load.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "core/sha256.h"
#include "support/test_support.h"

namespace mstar {
namespace {

using test::TempDir;

const char* kTemplateManifest = R"(format = 1

[plugin]
name = "@NAME@"
version = "0.1.0"
library = "libtemplate.so"

[abi]
major = @MAJOR@
min_minor = @MINOR@

[[provides]]
kind = "submodule"
name = "template_scale"
@EXTRA@
)";

// A manifest for the template library copied into dir/<subdir>/.
std::string TemplateManifest(const std::string& name = "template", int major = 1, int minor = 0,
                             const std::string& extra = "") {
  std::string text = kTemplateManifest;
  auto put = [&](const std::string& key, const std::string& value) {
    text.replace(text.find(key), key.size(), value);
  };
  put("@NAME@", name);
  put("@MAJOR@", std::to_string(major));
  put("@MINOR@", std::to_string(minor));
  put("@EXTRA@", extra);
  return text;
}

// Copies the template library into dir/sub and writes manifest there.
void StageTemplate(const TempDir& dir, const std::string& sub, const std::string& manifest) {
  test::CopyFile(test::TemplatePluginDir() + "/libtemplate.so", dir.file(sub + "/libtemplate.so"));
  test::WriteFile(dir.file(sub + "/" + sub + ".toml"), manifest);
}

// The single problem of the rejected candidate named name.
Diagnostic OnlyProblem(const PluginRegistry& registry, const std::string& name) {
  const RejectedPlugin* rejected = test::FindRejected(registry, name);
  EXPECT_NE(rejected, nullptr) << name << " was not rejected";
  if (rejected == nullptr) return {};
  EXPECT_EQ(rejected->problems.size(), 1u);
  return rejected->problems.front();
}

TEST(Loader, LoadsTheTemplatePlugin) {
  PluginRegistry registry = test::LoadOnly({test::TemplatePluginDir()});
  ASSERT_EQ(registry.loaded().size(), 1u)
      << (registry.rejected().empty() ? "" : registry.rejected()[0].problems[0].ToString());
  const PluginLibrary& library = *registry.loaded()[0].library;
  EXPECT_EQ(library.manifest().name, "template");
  EXPECT_EQ(library.negotiated_minor(), MSTAR_ABI_MINOR);
  Result<FactoryRef> factory = registry.Find(MSTAR_KIND_SUBMODULE, "template_scale");
  ASSERT_TRUE(factory.ok());
  EXPECT_STREQ(factory->factory->name, "template_scale");
  Result<std::vector<std::string>> exported = library.ExportedSymbols();
  ASSERT_TRUE(exported.ok()) << exported.status().ToString();
  EXPECT_EQ(exported.value(), std::vector<std::string>{"mstar_plugin_entry"});
}

// A library's host table outlives it: its code stays mapped, and a plugin's static or a tensor
// deleter running after the library was let go may still call through the table (AddressSanitizer
// reports a use after free otherwise).
TEST(Loader, TheHostTableOutlivesItsLibrary) {
  const mstar_host_api_t* table = nullptr;
  mstar_host_context_t* context = nullptr;
  {
    PluginRegistry registry = test::LoadOnly({test::TemplatePluginDir()});
    ASSERT_EQ(registry.loaded().size(), 1u);
    HostApi& host = registry.loaded()[0].library->host();
    table = host.table();
    context = host.library_context();
  }
  EXPECT_EQ(table->struct_size, sizeof(mstar_host_api_t));
  EXPECT_EQ(table->log_enabled(context, MSTAR_LOG_ERROR), 1u);
}

TEST(Loader, UnknownFactoryListsWhatIsAvailable) {
  PluginRegistry registry = test::LoadOnly({test::TemplatePluginDir()});
  Result<FactoryRef> missing = registry.Find(MSTAR_KIND_SUBMODULE, "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_NE(missing.status().message().find("available: template_scale"), std::string::npos);
}

TEST(Loader, SyntaxErrorRejectsOnlyThatManifest) {
  TempDir dir;
  StageTemplate(dir, "good", TemplateManifest());
  test::WriteFile(dir.file("broken/broken.toml"), "format = 1\n[plugin\nname = \"x\"\n");
  PluginRegistry registry = test::LoadOnly({dir.path()});
  EXPECT_EQ(registry.loaded().size(), 1u);
  ASSERT_EQ(registry.rejected().size(), 1u);
  std::string message = registry.rejected()[0].problems[0].ToString();
  EXPECT_NE(message.find("broken.toml:2:"), std::string::npos) << message;
  EXPECT_NE(message.find("syntax error"), std::string::npos) << message;
}

TEST(Loader, UnreadableManifestIsRejectedAndOthersLoad) {
  // A regular file whose read fails even for root: /proc/self/mem read at offset 0.
  TempDir dir;
  StageTemplate(dir, "good", TemplateManifest());
  std::filesystem::create_symlink("/proc/self/mem", dir.file("unreadable.toml"));
  PluginRegistry registry = test::LoadOnly({dir.path()});
  EXPECT_EQ(registry.loaded().size(), 1u);
  ASSERT_EQ(registry.rejected().size(), 1u);
  std::string message = registry.rejected()[0].problems[0].ToString();
  EXPECT_EQ(message, dir.file("unreadable.toml") + ": cannot read file: Input/output error");
}

TEST(Loader, ALibraryThatBecameALinkOutOfItsDirectoryIsRefusedBeforeItIsOpened) {
  TempDir dir;
  test::WriteFile(dir.file("m/m.toml"), TemplateManifest("m"));  // no library yet: parses
  ManifestParse parse = ParsePluginManifestFile(dir.file("m/m.toml"));
  ASSERT_TRUE(parse.manifest.has_value()) << JoinDiagnostics(parse.diagnostics);
  // Not an ELF file: had it been looked at, the error would say so.
  test::WriteFile(dir.file("elsewhere/libtemplate.so"), "not a library");
  std::filesystem::create_symlink(dir.file("elsewhere/libtemplate.so"),
                                  dir.file("m/libtemplate.so"));
  Diagnostic error;
  EXPECT_EQ(PluginLibrary::Load(*parse.manifest, LoadOptions{}, &error), nullptr);
  EXPECT_EQ(error.key, "plugin.library");
  EXPECT_EQ(error.where.line, 6u);
  EXPECT_NE(error.message.find(dir.file("m/libtemplate.so") + " is a link to "), std::string::npos)
      << error.ToString();
}

TEST(Loader, MissingLibraryNamesTheResolvedPath) {
  TempDir dir;
  test::WriteFile(dir.file("m/m.toml"), TemplateManifest("m"));  // no library copied
  PluginRegistry registry = test::LoadOnly({dir.path()});
  Diagnostic problem = OnlyProblem(registry, "m");
  EXPECT_EQ(problem.key, "plugin.library");
  EXPECT_EQ(problem.where.line, 6u);
  EXPECT_NE(problem.message.find("library file not found: " + dir.file("m/libtemplate.so")),
            std::string::npos)
      << problem.ToString();
}

TEST(Loader, NotASharedLibrary) {
  TempDir dir;
  test::WriteFile(dir.file("t/libtemplate.so"), "this is text, not ELF\n");
  test::WriteFile(dir.file("t/t.toml"), TemplateManifest("t"));
  Diagnostic problem = OnlyProblem(test::LoadOnly({dir.path()}), "t");
  EXPECT_NE(problem.message.find("is not a shared library (no ELF header)"), std::string::npos)
      << problem.ToString();
}

TEST(Loader, LibraryForAnotherArchitecture) {
  TempDir dir;
  StageTemplate(dir, "arm", TemplateManifest("arm"));
  {
    std::fstream lib(dir.file("arm/libtemplate.so"),
                     std::ios::in | std::ios::out | std::ios::binary);
    lib.seekp(18);  // e_machine
    const char aarch64[2] = {static_cast<char>(183), 0};
    lib.write(aarch64, 2);
  }
  Diagnostic problem = OnlyProblem(test::LoadOnly({dir.path()}), "arm");
  EXPECT_NE(problem.message.find("is built for aarch64; this machine is x86_64"), std::string::npos)
      << problem.ToString();
}

TEST(Loader, Sha256IsVerified) {
  TempDir dir;
  std::string wrong(64, 'a');
  std::string manifest = TemplateManifest("sha_bad");
  manifest.replace(manifest.find("library ="), 0, "sha256 = \"" + wrong + "\"\n");
  StageTemplate(dir, "sha_bad", manifest);
  Result<Sha256Digest> digest = Sha256File(test::TemplatePluginDir() + "/libtemplate.so");
  ASSERT_TRUE(digest.ok());
  std::string right = TemplateManifest("sha_good");
  right.replace(right.find("library ="), 0, "sha256 = \"" + ToHex(digest.value()) + "\"\n");
  StageTemplate(dir, "sha_good", right);
  PluginRegistry registry = test::LoadOnly({dir.path()});
  Diagnostic problem = OnlyProblem(registry, "sha_bad");
  EXPECT_EQ(problem.key, "plugin.sha256");
  EXPECT_NE(problem.message.find("sha256 mismatch"), std::string::npos);
  EXPECT_NE(problem.message.find(ToHex(digest.value())), std::string::npos);
  // The correct digest passes the check, then fails only because the library calls itself
  // "template" (the digest check came first and passed).
  Diagnostic good = OnlyProblem(registry, "sha_good");
  EXPECT_NE(good.message.find("the manifest names it 'sha_good'"), std::string::npos)
      << good.ToString();
}

TEST(Loader, AbiMajorMismatchInTheManifestNamesBothVersions) {
  TempDir dir;
  StageTemplate(dir, "template", TemplateManifest("template", 2, 0));
  Diagnostic problem = OnlyProblem(test::LoadOnly({dir.path()}), "template");
  EXPECT_EQ(problem.key, "abi");
  EXPECT_NE(problem.message.find("plugin ABI major 2 does not match the host's ABI 1." +
                                 std::to_string(MSTAR_ABI_MINOR)),
            std::string::npos)
      << problem.ToString();
  // The manifest alone may be wrong: the template library is built against ABI 1.
  EXPECT_NE(problem.message.find("(rebuild the plugin against ABI 1; if it was built against it, "
                                 "[abi] major in the manifest is wrong)"),
            std::string::npos)
      << problem.ToString();
}

TEST(Loader, ManifestNeedingANewerHostMinor) {
  TempDir dir;
  StageTemplate(dir, "template", TemplateManifest("template", 1, 5));
  Diagnostic problem = OnlyProblem(test::LoadOnly({dir.path()}), "template");
  EXPECT_NE(problem.message.find("plugin needs host ABI 1.5 or newer; this host provides 1." +
                                 std::to_string(MSTAR_ABI_MINOR)),
            std::string::npos)
      << problem.ToString();
}

TEST(Loader, UnmetLibTorchRequirement) {
  TempDir dir;
  StageTemplate(dir, "template",
                TemplateManifest("template", 1, 0, "\n[requires]\ntorch = \"0.1\"\n"));
  Diagnostic problem = OnlyProblem(test::LoadOnly({dir.path()}), "template");
  EXPECT_EQ(problem.key, "requires");
  EXPECT_NE(problem.message.find("plugin requires LibTorch 0.1"), std::string::npos)
      << problem.ToString();
}

TEST(Loader, RequirementsAreCheckedAgainstTheHost) {
  PluginManifest manifest;
  manifest.requires_.torch = "2.5";
  manifest.requires_.cuda = 12;
  HostCapabilities host;
  host.torch_version = "2.5.1";
  host.cuda_major = 12;
  EXPECT_TRUE(CheckRequirements(manifest, host).ok());
  host.torch_version = "2.50.0";
  EXPECT_FALSE(CheckRequirements(manifest, host).ok());  // a prefix must end at a dot
  host.torch_version = "2.5.1";
  host.cuda_major = 0;
  EXPECT_NE(CheckRequirements(manifest, host).message().find("built without CUDA"),
            std::string::npos);
  manifest.requires_.cuda.reset();
  manifest.requires_.torch_cxx11_abi = false;
  EXPECT_NE(CheckRequirements(manifest, host).message().find("_GLIBCXX_USE_CXX11_ABI=0"),
            std::string::npos);
}

TEST(Loader, DuplicateFactoryRejectsTheSecondPlugin) {
  PluginRegistry registry =
      test::LoadOnly({test::TestPluginDir("dup_a"), test::TestPluginDir("dup_b")});
  ASSERT_EQ(registry.loaded().size(), 1u);
  EXPECT_EQ(registry.loaded()[0].library->manifest().name, "dup_a");
  Diagnostic problem = OnlyProblem(registry, "dup_b");
  EXPECT_NE(
      problem.message.find("duplicate submodule 'dup_thing': already provided by plugin 'dup_a'"),
      std::string::npos)
      << problem.ToString();
  EXPECT_EQ(problem.where.line, 14u);  // the [[provides]] entry's name
}

TEST(Loader, SamePluginTwiceRejectsTheSecondCopy) {
  TempDir dir;
  StageTemplate(dir, "copy", TemplateManifest());
  PluginRegistry registry = test::LoadOnly({test::TemplatePluginDir(), dir.path()});
  ASSERT_EQ(registry.loaded().size(), 1u);
  Diagnostic problem = OnlyProblem(registry, "template");
  EXPECT_NE(problem.message.find("plugin 'template' is already loaded from"), std::string::npos);
  EXPECT_EQ(problem.key, "plugin.name");
  EXPECT_EQ(problem.where.line, 4u);  // name = "template", not [plugin] (line 3)
}

// A library path that is a FIFO would block the digest and the ELF probe that open it: refused.
TEST(Loader, ALibraryThatIsNoRegularFileIsRefusedWithoutOpeningIt) {
  TempDir dir;
  test::WriteFile(dir.file("m/m.toml"), TemplateManifest("m"));
  ASSERT_EQ(mkfifo(dir.file("m/libtemplate.so").c_str(), 0600), 0);
  PluginRegistry registry = test::LoadOnly({dir.path()});
  Diagnostic problem = OnlyProblem(registry, "m");
  EXPECT_EQ(problem.key, "plugin.library");
  EXPECT_NE(problem.message.find("library is not a regular file: " + dir.file("m/libtemplate.so")),
            std::string::npos)
      << problem.ToString();
}

TEST(Loader, NonManifestTomlInARootIsSkippedNotRejected) {
  TempDir dir;
  test::WriteFile(dir.file("models/tiny.toml"), "[model]\nname = \"tiny\"\n");
  PluginRegistry registry = test::LoadOnly({dir.path()});
  EXPECT_TRUE(registry.rejected().empty());
  ASSERT_EQ(registry.skipped().size(), 1u);
  EXPECT_NE(registry.skipped()[0].reason.find("not a plugin manifest"), std::string::npos);
}

// A directory named explicitly is searched like a root: a model manifest there is skipped too.
// A file named explicitly that is no plugin manifest is refused.
TEST(Loader, NonManifestTomlInAnExplicitDirectoryIsSkippedButNamedItIsRejected) {
  TempDir dir;
  test::WriteFile(dir.file("models/tiny.toml"), "[model]\nname = \"tiny\"\n");
  PluginRegistry::Options options;
  options.discovery.explicit_paths = {dir.path()};
  options.discovery.use_environment = false;
  options.discovery.use_install_dir = false;
  PluginRegistry registry = PluginRegistry::Load(options);
  EXPECT_TRUE(registry.rejected().empty());
  ASSERT_EQ(registry.skipped().size(), 1u);
  EXPECT_NE(registry.skipped()[0].reason.find("not a plugin manifest"), std::string::npos);

  options.discovery.explicit_paths = {dir.file("models/tiny.toml")};
  PluginRegistry named = PluginRegistry::Load(options);
  EXPECT_EQ(named.rejected().size(), 1u);
  // Found in the directory first and named as well: named.
  options.discovery.explicit_paths = {dir.path(), dir.file("models/tiny.toml")};
  PluginRegistry both = PluginRegistry::Load(options);
  EXPECT_EQ(both.rejected().size(), 1u);
}

TEST(Loader, RejectionsAreLogged) {
  test::LogCapture capture;
  TempDir dir;
  test::WriteFile(dir.file("m/m.toml"), TemplateManifest("m"));
  PluginRegistry registry = test::LoadOnly({dir.path()});
  EXPECT_TRUE(capture.Contains("plugin rejected:"));
  EXPECT_TRUE(capture.Contains("library file not found"));
}

}  // namespace
}  // namespace mstar

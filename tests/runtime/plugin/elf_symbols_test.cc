// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// ExportedElfSymbols (runtime/plugin/elf_symbols.h) on real libraries: the template plugin
// exports only its entry point, also once stripped (no .symtab left, the dynamic table stays);
// a library built with default visibility exports more; a damaged file is an error, not a crash.
#include "plugin/elf_symbols.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>

#include "support/test_support.h"

namespace mstar {
namespace {

std::string TemplateLibrary() {
  return test::TemplatePluginDir() + "/libtemplate.so";
}

TEST(ElfSymbols, TheTemplateExportsOnlyItsEntryAlsoOnceStripped) {
  Result<std::vector<std::string>> symbols = ExportedElfSymbols(TemplateLibrary());
  ASSERT_TRUE(symbols.ok()) << symbols.status().ToString();
  EXPECT_EQ(symbols.value(), std::vector<std::string>{"mstar_plugin_entry"});

  test::TempDir dir;
  const std::string stripped = dir.file("libstripped.so");
  test::CopyFile(TemplateLibrary(), stripped);
  ASSERT_EQ(std::system(("strip --strip-all " + stripped).c_str()), 0);
  Result<std::vector<std::string>> after = ExportedElfSymbols(stripped);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after.value(), std::vector<std::string>{"mstar_plugin_entry"});
}

TEST(ElfSymbols, ALibraryWithDefaultVisibilityExportsMore) {
  Result<std::vector<std::string>> symbols =
      ExportedElfSymbols(test::TestPluginDir("nc_export") + "/libnc_export.so");
  ASSERT_TRUE(symbols.ok()) << symbols.status().ToString();
  EXPECT_GT(symbols.value().size(), 1u);
  EXPECT_TRUE(
      std::binary_search(symbols.value().begin(), symbols.value().end(), "mstar_plugin_entry"));
}

// Truncated at every length and with random bytes changed, the file gives an answer or an error.
TEST(ElfSymbols, DamagedFilesAreErrorsNotCrashes) {
  const std::string bytes = test::ReadFile(TemplateLibrary());
  ASSERT_GT(bytes.size(), 1000u);
  test::TempDir dir;
  const std::string path = dir.file("libdamaged.so");
  std::mt19937_64 rng(7);
  size_t refused = 0;
  for (int round = 0; round < 300; ++round) {
    std::string damaged = bytes;
    if (round % 3 == 0) {
      damaged.resize(rng() % bytes.size());
    } else {
      for (int k = 0; k < 8; ++k) damaged[rng() % damaged.size()] = static_cast<char>(rng());
    }
    test::WriteFile(path, damaged);
    refused += ExportedElfSymbols(path).ok() ? 0 : 1;
  }
  EXPECT_GT(refused, 0u);
  test::WriteFile(path, "not an ELF file");
  Result<std::vector<std::string>> text = ExportedElfSymbols(path);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("is not a 64-bit little-endian ELF file"),
            std::string::npos);
  EXPECT_EQ(ExportedElfSymbols(dir.file("missing.so")).status().code(), Code::kIo);
}

}  // namespace
}  // namespace mstar

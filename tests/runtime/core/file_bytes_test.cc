// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "core/file_bytes.h"

#include <gtest/gtest.h>

#include <string>

#include "support/test_support.h"

namespace mstar {
namespace {

TEST(FileBytes, ReadsEveryByteAcrossBlockBoundaries) {
  test::TempDir dir;
  // Lengths around the 64 KiB block, all byte values (NUL included).
  for (size_t size : {size_t{0}, size_t{1}, size_t{65535}, size_t{65536}, size_t{65537},
                      size_t{3 * 65536 + 17}}) {
    std::string bytes(size, '\0');
    for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 131 + size) & 0xff);
    const std::string path = dir.file(std::string("f").append(std::to_string(size)));
    test::WriteFile(path, bytes);
    Result<std::string> read = ReadFileBytes(path);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_EQ(read.value(), bytes) << size;
  }
}

TEST(FileBytes, AFileThatCannotBeOpenedIsAnIoErrorNamingIt) {
  test::TempDir dir;
  const std::string missing = dir.file("missing.bin");
  Result<std::string> read = ReadFileBytes(missing);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), Code::kIo);
  EXPECT_NE(read.status().message().find("cannot read " + missing + ": No such file"),
            std::string::npos)
      << read.status().message();
}

}  // namespace
}  // namespace mstar

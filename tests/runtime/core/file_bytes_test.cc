// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "core/file_bytes.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

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

// A written file gets the mode open(2) would give it: 0666 less the process's umask.
TEST(FileBytes, AWrittenFileHasTheModeTheUmaskAllows) {
  test::TempDir dir;
  const mode_t before = ::umask(027);
  const std::string path = dir.file("out.bin");
  const uint8_t byte = 7;
  Status written = WriteFileBytes(path, std::span<const uint8_t>(&byte, 1));
  ::umask(0);
  Status again = WriteFileBytes(path + "2", std::span<const uint8_t>(&byte, 1));
  ::umask(before);
  ASSERT_TRUE(written.ok()) << written.ToString();
  ASSERT_TRUE(again.ok()) << again.ToString();
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  ASSERT_EQ(::stat((path + "2").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666u);
}

}  // namespace
}  // namespace mstar

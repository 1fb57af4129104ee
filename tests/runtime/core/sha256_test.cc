// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "core/sha256.h"

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace mstar {
namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(ToHex(Sha256("abc", 3)),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(ToHex(Sha256("", 0)),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, FileDigestEqualsBufferDigest) {
  test::TempDir dir;
  std::string contents(3 * 1024 * 1024 + 17, 'x');  // crosses the 1 MiB read chunk
  test::WriteFile(dir.file("blob"), contents);
  Result<Sha256Digest> digest = Sha256File(dir.file("blob"));
  ASSERT_TRUE(digest.ok()) << digest.status().ToString();
  EXPECT_EQ(digest.value(), Sha256(contents.data(), contents.size()));
}

TEST(Sha256, MissingFileIsAnIoError) {
  Result<Sha256Digest> digest = Sha256File("/nonexistent/file");
  ASSERT_FALSE(digest.ok());
  EXPECT_EQ(digest.status().code(), Code::kIo);
  EXPECT_NE(digest.status().message().find("/nonexistent/file"), std::string::npos);
}

}  // namespace
}  // namespace mstar

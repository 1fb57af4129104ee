// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "core/diagnostic.h"

#include <gtest/gtest.h>

namespace mstar {
namespace {

TEST(Diagnostic, FormatsFileLineColumnAndKey) {
  Diagnostic d;
  d.where = {"a/b.toml", 7, 3};
  d.key = "abi.major";
  d.message = "expected an integer";
  EXPECT_EQ(d.ToString(), "a/b.toml:7:3: abi.major: expected an integer");
}

TEST(Diagnostic, LeavesOutUnknownParts) {
  EXPECT_EQ((Diagnostic{{"x.toml", 0, 0}, "", "cannot read"}).ToString(), "x.toml: cannot read");
  EXPECT_EQ((Diagnostic{{"x.toml", 4, 0}, "k", "m"}).ToString(), "x.toml:4: k: m");
  EXPECT_EQ(JoinDiagnostics({{{"a", 1, 0}, "", "one"}, {{"b", 2, 0}, "", "two"}}),
            "a:1: one\nb:2: two");
}

}  // namespace
}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "config/toml_reader.h"

#include <gtest/gtest.h>

#include <fstream>

#include "support/test_support.h"

namespace mstar {
namespace {

TEST(TomlReader, SyntaxErrorGivesLineAndColumn) {
  Diagnostics d;
  auto table = ParseTomlText("a = 1\nb = = 2\n", "bad.toml", &d);
  EXPECT_FALSE(table.has_value());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].where.path, "bad.toml");
  EXPECT_EQ(d[0].where.line, 2u);
  EXPECT_GT(d[0].where.column, 0u);
  EXPECT_NE(d[0].message.find("syntax error"), std::string::npos);
}

TEST(TomlReader, UnreadableFiles) {
  test::TempDir dir;
  Diagnostics missing;
  EXPECT_FALSE(ParseTomlFile(dir.file("absent.toml"), &missing).has_value());
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_NE(missing[0].ToString().find("absent.toml: cannot read file"), std::string::npos);
  Diagnostics directory;
  EXPECT_FALSE(ParseTomlFile(dir.path(), &directory).has_value());
  ASSERT_EQ(directory.size(), 1u);
  EXPECT_NE(directory[0].message.find("not a regular file"), std::string::npos);
}

TEST(TomlReader, AnEmptyFileIsAnEmptyTable) {
  // A 0-byte file reads like a file of one space: an empty table, so the caller reports the keys
  // it misses rather than a read error.
  test::TempDir dir;
  std::ofstream(dir.file("empty.toml")).close();
  Diagnostics d;
  std::optional<toml::table> table = ParseTomlFile(dir.file("empty.toml"), &d);
  ASSERT_TRUE(table.has_value()) << (d.empty() ? "" : d[0].ToString());
  EXPECT_TRUE(table->empty());
  EXPECT_TRUE(d.empty());
}

TEST(TomlReader, ReportsMissingWrongTypeAndUnknownKeys) {
  Diagnostics d;
  auto table = ParseTomlText("[t]\nname = 5\nextra = true\n", "f.toml", &d);
  ASSERT_TRUE(table.has_value());
  TableReader reader(*(*table)["t"].as_table(), "t", "f.toml", &d);
  EXPECT_FALSE(reader.String("name", Presence::kRequired).has_value());
  EXPECT_FALSE(reader.Int("count", Presence::kRequired).has_value());
  EXPECT_FALSE(reader.Int("maybe", Presence::kOptional).has_value());
  EXPECT_FALSE(reader.Finish());
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].ToString(), "f.toml:2:8: t.name: expected a string, found integer");
  EXPECT_EQ(d[1].key, "t.count");
  EXPECT_EQ(d[1].where.line, 1u);  // a missing key points at its table
  EXPECT_NE(d[1].message.find("missing required key"), std::string::npos);
  EXPECT_EQ(d[2].ToString(), "f.toml:3:9: t.extra: unknown key");
}

TEST(TomlReader, NumbersAcceptIntegers) {
  Diagnostics d;
  auto table = ParseTomlText("x = 3\ny = 2.5\n", "n.toml", &d);
  TableReader reader(*table, "", "n.toml", &d);
  EXPECT_DOUBLE_EQ(reader.Number("x", Presence::kRequired).value(), 3.0);
  EXPECT_DOUBLE_EQ(reader.Number("y", Presence::kRequired).value(), 2.5);
  EXPECT_TRUE(reader.Finish());
}

}  // namespace
// toml++ parses a dotted key recursively: one of 60000 levels would overflow the stack. Keys
// nested deeper than 128 levels are refused with the line before parsing; dots inside strings
// and comments, and the dots of values (floats, dates), do not count.
TEST(TomlReader, AKeyNestedTooDeeplyIsRefusedWithItsLine) {
  std::string deep = "ok = 1\nx";
  for (int i = 0; i < 60000; ++i) deep += ".a";
  deep += " = 1\n";
  Diagnostics d;
  EXPECT_FALSE(ParseTomlText(deep, "deep.toml", &d).has_value());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].where.line, 2u);
  EXPECT_NE(d[0].message.find("nests more than 128 levels"), std::string::npos) << d[0].message;

  std::string fine = "x";
  for (int i = 0; i < 100; ++i) fine += ".a";
  fine += " = 1\ns = \"" + std::string(1000, '.') + "\"\nm = \"\"\"\n" + std::string(500, '.') +
          "\n\"\"\"\n# " + std::string(500, '.') + "\nf = [";
  for (int i = 0; i < 300; ++i) fine += "1.5, ";
  fine += "2.5]\nt = 1979-05-27T07:32:00.999\n";
  Diagnostics none;
  EXPECT_TRUE(ParseTomlText(fine, "fine.toml", &none).has_value()) << JoinDiagnostics(none);
}

// Depth adds up across inline tables and arrays: 255 nested inline tables of 100-level dotted
// keys (25,500 levels, which toml++ would build recursively) are refused; a shallow document with
// tables, arrays of tables and inline tables is not.
TEST(TomlReader, DepthAddsUpAcrossInlineTablesAndArrays) {
  std::string key = "a";
  for (int i = 0; i < 99; ++i) key += ".a";
  std::string deep = "x = ";
  for (int i = 0; i < 255; ++i) deep += "{" + key + " = ";
  deep += "1";
  for (int i = 0; i < 255; ++i) deep += "}";
  deep += "\n";
  Diagnostics d;
  EXPECT_FALSE(ParseTomlText(deep, "deep.toml", &d).has_value());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].message.find("nests more than 128 levels"), std::string::npos) << d[0].message;

  const std::string fine =
      "[a.b.c]\nx = { y = { z = [[1, 2.5], [3]] } }\n[[d.e]]\nf = [{ g.h = 1 }]\n[[d.e]]\n"
      "f = []\n";
  Diagnostics none;
  EXPECT_TRUE(ParseTomlText(fine, "fine.toml", &none).has_value()) << JoinDiagnostics(none);
}

// A multi-line string may end in up to two extra quotes, which are part of it: the count of the
// key after it is not hidden as if a string had started there.
TEST(TomlReader, AMultiLineStringsExtraClosingQuotesDoNotHideADeepKey) {
  for (const std::string quote : {"\"", "'"}) {
    for (int extra = 1; extra <= 2; ++extra) {
      std::string deep =
          "s = " + std::string(3, quote[0]) + "x" + std::string(3 + extra, quote[0]) + "\nx";
      for (int i = 0; i < 60000; ++i) deep += ".a";
      deep += " = 1\n";
      Diagnostics d;
      EXPECT_FALSE(ParseTomlText(deep, "deep.toml", &d).has_value()) << quote << extra;
      ASSERT_EQ(d.size(), 1u);
      EXPECT_EQ(d[0].where.line, 2u);
      EXPECT_NE(d[0].message.find("nests more than 128 levels"), std::string::npos);
    }
  }
}

}  // namespace mstar

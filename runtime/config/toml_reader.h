// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Strict reading of TOML files: parse errors and every schema problem (missing key, wrong type,
// unknown key, bad value) become Diagnostics that name the file, line and full key.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "core/diagnostic.h"

namespace mstar {

// Parses the file at path. On failure appends one diagnostic (I/O error, or the syntax error with
// its line and column) and returns nullopt.
std::optional<toml::table> ParseTomlFile(const std::string& path, Diagnostics* diagnostics);
// Parses text that came from path (used for messages only).
// The deepest a key or value may nest (a.b.c = 1 has depth 3; a = { b = [1] } too): deeper text
// is refused before toml++ parses it (it parses recursively, as config views are built).
inline constexpr uint32_t kMaxKeyDepth = 128;
// Whether TOML text nests deeper than kMaxKeyDepth (a cheap scan; the text need not be valid).
bool NestsTooDeep(std::string_view text);

std::optional<toml::table> ParseTomlText(std::string_view text, const std::string& path,
                                         Diagnostics* diagnostics);

// Where a node was read from; "--set" for values set on the command line.
SourceLocation LocationOf(const toml::node& node, const std::string& path);
// "string", "integer", "table", ... for messages.
const char* TomlTypeName(const toml::node& node);

enum class Presence { kRequired, kOptional };

// Reads the keys of one table, recording each key it reads; Finish() reports every key that was
// never read as unknown. Not thread-safe; short-lived.
class TableReader {
 public:
  // prefix is the table's dotted key ("" for the root); path names the file for diagnostics.
  TableReader(const toml::table& table, std::string prefix, std::string path,
              Diagnostics* diagnostics);

  std::optional<std::string> String(std::string_view key, Presence presence);
  std::optional<int64_t> Int(std::string_view key, Presence presence);
  std::optional<double> Number(std::string_view key, Presence presence);
  std::optional<bool> Bool(std::string_view key, Presence presence);
  const toml::table* Table(std::string_view key, Presence presence);
  const toml::array* Array(std::string_view key, Presence presence);
  // Reads the required key "format" and reports any value but supported as "unsupported <what>
  // format N; this runtime reads format M".
  void Format(int64_t supported, const std::string& what);
  // Marks key as read without checking it (for tables read elsewhere).
  void Skip(std::string_view key);

  // Reports unread keys; returns false when any diagnostic was added by this reader.
  bool Finish();

  // Adds a diagnostic about key (located at its value, or at the table when absent).
  void Error(std::string_view key, const std::string& message);
  // Where key's value was written (the table's position when the key is absent).
  SourceLocation Where(std::string_view key) const;
  // The dotted key of a member of this table.
  std::string FullKey(std::string_view key) const;
  const std::string& path() const { return path_; }

 private:
  const toml::node* Get(std::string_view key, Presence presence);
  void TypeError(std::string_view key, const toml::node& node, const char* expected);

  const toml::table& table_;
  std::string prefix_;
  std::string path_;
  Diagnostics* diagnostics_;
  std::set<std::string, std::less<>> read_;
  size_t initial_diagnostics_;
};

}  // namespace mstar

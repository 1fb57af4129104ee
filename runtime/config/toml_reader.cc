// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "config/toml_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

namespace mstar {
namespace {

Diagnostic At(const std::string& path, uint32_t line, uint32_t column, std::string key,
              std::string message) {
  return Diagnostic{SourceLocation{path, line, column}, std::move(key), std::move(message)};
}

// The deepest a value may nest (a.b.c = 1 has depth 3; a = { b = [1] } too). toml++ parses
// dotted keys and nested values recursively, and a config view is built recursively from the
// parsed tree, so tens of thousands of levels overflow the stack; real manifests nest a handful.

// The 1-based line of the first value nested deeper than kMaxKeyDepth, or 0. The depth at a
// point is the inline tables and arrays open there plus the dots of the key being read (a run of
// dots outside strings and comments between separators: = , { } [ ] and line ends), so a
// value's dots (a float, a date) count as a shallow run.
uint32_t FirstTooDeepKey(std::string_view text) {
  uint32_t line = 1, dots = 0;
  std::vector<uint32_t> open;  // for each open { or [: the dots of the key it belongs to
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"' || c == '\'') {
      const bool multi = text.substr(i, 3) == std::string(3, c);
      const std::string_view end = multi ? std::string_view(text.data() + i, 3) : text.substr(i, 1);
      size_t j = i + end.size();
      while (j < text.size() && text.substr(j, end.size()) != end) {
        if (c == '"' && text[j] == '\\') ++j;  // an escaped character (basic strings only)
        if (j < text.size() && text[j] == '\n') ++line;
        ++j;
      }
      j += end.size();
      // A multi-line string may end in up to two more quotes of its kind ("""a"""" is a"):
      // they belong to the string, not to a string that starts after it.
      for (int extra = 0; multi && extra < 2 && j < text.size() && text[j] == c; ++extra) ++j;
      i = std::min(text.size(), j) - 1;
      continue;
    }
    if (c == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    const uint32_t outer = open.empty() ? 0 : open.back();
    if (c == '.' && ++dots + outer + static_cast<uint32_t>(open.size()) > kMaxKeyDepth - 1)
      return line;
    if (c == '{' || c == '[') {
      if (outer + dots + static_cast<uint32_t>(open.size()) + 1 > kMaxKeyDepth) return line;
      open.push_back(outer + dots);
    } else if ((c == '}' || c == ']') && !open.empty()) {
      open.pop_back();
    }
    if (c == '\n') ++line;
    if (c == '\n' || c == '=' || c == ',' || c == '{' || c == '}' || c == '[' || c == ']') dots = 0;
  }
  return 0;
}

}  // namespace

std::optional<toml::table> ParseTomlFile(const std::string& path, Diagnostics* diagnostics) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    diagnostics->push_back(At(path, 0, 0, "", "cannot read file: not a regular file"));
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    diagnostics->push_back(
        At(path, 0, 0, "", std::string("cannot read file: ") + std::strerror(errno)));
    return std::nullopt;
  }
  // An empty file is an empty table, not a read error: only the stream's bad bit means the read
  // failed (istream::read turns a failing read(2) into badbit; reaching the end sets only fail).
  std::string text;
  char buffer[1 << 16];
  errno = 0;
  while (in.read(buffer, sizeof(buffer))) text.append(buffer, sizeof(buffer));
  text.append(buffer, static_cast<size_t>(in.gcount()));
  if (in.bad()) {
    diagnostics->push_back(
        At(path, 0, 0, "",
           std::string("cannot read file: ") + (errno != 0 ? std::strerror(errno) : "read error")));
    return std::nullopt;
  }
  return ParseTomlText(text, path, diagnostics);
}

bool NestsTooDeep(std::string_view text) {
  return FirstTooDeepKey(text) != 0;
}

std::optional<toml::table> ParseTomlText(std::string_view text, const std::string& path,
                                         Diagnostics* diagnostics) {
  if (uint32_t line = FirstTooDeepKey(text); line != 0) {
    diagnostics->push_back(At(path, line, 0, "",
                              "a key or value nests more than " + std::to_string(kMaxKeyDepth) +
                                  " levels deep (refused before parsing)"));
    return std::nullopt;
  }
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& error) {
    const toml::source_region& where = error.source();
    diagnostics->push_back(At(path, where.begin.line, where.begin.column, "",
                              "TOML syntax error: " + std::string(error.description())));
    return std::nullopt;
  }
}

SourceLocation LocationOf(const toml::node& node, const std::string& path) {
  const toml::source_region& where = node.source();
  if (where.begin.line == 0) return SourceLocation{"--set", 0, 0};  // an override, not the file
  return SourceLocation{path, where.begin.line, where.begin.column};
}

const char* TomlTypeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

TableReader::TableReader(const toml::table& table, std::string prefix, std::string path,
                         Diagnostics* diagnostics)
    : table_(table),
      prefix_(std::move(prefix)),
      path_(std::move(path)),
      diagnostics_(diagnostics),
      initial_diagnostics_(diagnostics->size()) {}

std::string TableReader::FullKey(std::string_view key) const {
  if (prefix_.empty()) return std::string(key);
  return prefix_ + "." + std::string(key);
}

SourceLocation TableReader::Where(std::string_view key) const {
  const toml::node* node = table_.get(key);
  return LocationOf(node != nullptr ? *node : table_, path_);
}

void TableReader::Error(std::string_view key, const std::string& message) {
  diagnostics_->push_back(Diagnostic{Where(key), FullKey(key), message});
}

const toml::node* TableReader::Get(std::string_view key, Presence presence) {
  read_.emplace(key);
  const toml::node* node = table_.get(key);
  if (node == nullptr && presence == Presence::kRequired) {
    std::string where = prefix_.empty() ? "the top level" : "[" + prefix_ + "]";
    Error(key, "missing required key (expected in " + where + ")");
  }
  return node;
}

void TableReader::TypeError(std::string_view key, const toml::node& node, const char* expected) {
  Error(key, std::string("expected ") + expected + ", found " + TomlTypeName(node));
}

std::optional<std::string> TableReader::String(std::string_view key, Presence presence) {
  const toml::node* node = Get(key, presence);
  if (node == nullptr) return std::nullopt;
  if (const auto* value = node->as_string()) return value->get();
  TypeError(key, *node, "a string");
  return std::nullopt;
}

std::optional<int64_t> TableReader::Int(std::string_view key, Presence presence) {
  const toml::node* node = Get(key, presence);
  if (node == nullptr) return std::nullopt;
  if (const auto* value = node->as_integer()) return value->get();
  TypeError(key, *node, "an integer");
  return std::nullopt;
}

void TableReader::Format(int64_t supported, const std::string& what) {
  std::optional<int64_t> format = Int("format", Presence::kRequired);
  if (!format || *format == supported) return;
  Error("format", "unsupported " + what + " format " + std::to_string(*format) +
                      "; this runtime reads format " + std::to_string(supported));
}

std::optional<double> TableReader::Number(std::string_view key, Presence presence) {
  const toml::node* node = Get(key, presence);
  if (node == nullptr) return std::nullopt;
  if (const auto* value = node->as_floating_point()) return value->get();
  if (const auto* value = node->as_integer()) return static_cast<double>(value->get());
  TypeError(key, *node, "a number");
  return std::nullopt;
}

std::optional<bool> TableReader::Bool(std::string_view key, Presence presence) {
  const toml::node* node = Get(key, presence);
  if (node == nullptr) return std::nullopt;
  if (const auto* value = node->as_boolean()) return value->get();
  TypeError(key, *node, "a boolean");
  return std::nullopt;
}

const toml::table* TableReader::Table(std::string_view key, Presence presence) {
  const toml::node* node = Get(key, presence);
  if (node == nullptr) return nullptr;
  if (const auto* value = node->as_table()) return value;
  TypeError(key, *node, "a table");
  return nullptr;
}

const toml::array* TableReader::Array(std::string_view key, Presence presence) {
  const toml::node* node = Get(key, presence);
  if (node == nullptr) return nullptr;
  if (const auto* value = node->as_array()) return value;
  TypeError(key, *node, "an array");
  return nullptr;
}

void TableReader::Skip(std::string_view key) {
  read_.emplace(key);
}

bool TableReader::Finish() {
  for (const auto& [key, node] : table_) {
    if (read_.count(key.str()) == 0) Error(key.str(), "unknown key");
  }
  return diagnostics_->size() == initial_diagnostics_;
}

}  // namespace mstar

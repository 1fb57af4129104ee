// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "model/overrides.h"

#include <optional>

#include "config/toml_reader.h"

namespace mstar {
namespace {

bool IsBlank(char c) {
  return c == ' ' || c == '\t';
}

// Splits a dotted key; segments may be double-quoted to contain dots. As in TOML, blanks around
// a dot and at either end are ignored; a blank inside an unquoted segment makes the key malformed
// (the user meant two words, or a key they cannot see).
std::optional<std::vector<std::string>> SplitKey(const std::string& key) {
  std::vector<std::string> parts;
  std::string current;
  bool quoted = false;
  bool started = false;      // the segment has a character or a quote
  bool after_blank = false;  // a blank outside quotes since then
  for (char c : key) {
    if (!quoted && IsBlank(c)) {
      after_blank = started;
    } else if (c == '.' && !quoted) {
      if (current.empty()) return std::nullopt;
      parts.push_back(std::move(current));
      current.clear();
      started = after_blank = false;
    } else {
      if (after_blank) return std::nullopt;
      started = true;
      if (c == '"') {
        quoted = !quoted;
      } else {
        current += c;
      }
    }
  }
  if (quoted || current.empty()) return std::nullopt;
  parts.push_back(std::move(current));
  return parts;
}

// text without the blanks at either end.
std::string Trimmed(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t") - begin + 1);
}

// Whether text can only have been meant as a TOML value: it opens an array, an inline table or
// a quoted string, or it is all digits (an integer, perhaps out of range). Other text that is not
// TOML is a bare string (a path, a name).
bool MeantAsTomlValue(const std::string& text) {
  if (text.empty()) return false;
  if (text[0] == '[' || text[0] == '{' || text[0] == '"' || text[0] == '\'') return true;
  const size_t digits = text[0] == '+' || text[0] == '-' ? 1 : 0;
  return text.size() > digits && text.find_first_not_of("0123456789_", digits) == std::string::npos;
}

// Sets table[key] to text read as one TOML value, or as a bare string. The reason, and nothing
// set, when text is more than one value (a newline and another key) or is meant as a TOML value
// and is not a valid one.
std::optional<std::string> Insert(toml::table& table, const std::string& key,
                                  const std::string& text) {
  try {
    toml::table parsed = toml::parse("value = " + text);
    if (parsed.size() != 1) return "the value is more than one TOML value (a line break?)";
    if (toml::node* value = parsed.get("value")) {
      value->visit([&](auto& concrete) { table.insert_or_assign(key, concrete); });
      return std::nullopt;
    }
  } catch (const toml::parse_error& e) {
    if (MeantAsTomlValue(text)) return "not a valid TOML value: " + std::string(e.description());
  }
  table.insert_or_assign(key, text);
  return std::nullopt;
}

}  // namespace

bool ApplyOverrides(toml::table& table, const std::vector<std::string>& overrides,
                    Diagnostics* diagnostics) {
  bool ok = true;
  for (const std::string& override_text : overrides) {
    auto reject = [&](const std::string& message) {
      diagnostics->push_back({SourceLocation{"--set", 0, 0}, override_text, message});
      ok = false;
    };
    size_t equals = override_text.find('=');
    if (equals == std::string::npos) {
      reject("expected key=value");
      continue;
    }
    std::optional<std::vector<std::string>> path = SplitKey(override_text.substr(0, equals));
    if (!path) {
      reject("malformed key (dotted names; quote a segment that contains dots or blanks)");
      continue;
    }
    // The key's segments as split (whatever characters they hold) and the value's nesting
    // together.
    std::string depth_text = "k";
    for (size_t i = 1; i < path->size() && i <= kMaxKeyDepth; ++i) depth_text += ".k";
    if (NestsTooDeep(depth_text.append(" = ").append(override_text, equals + 1))) {
      reject("the key and value nest more than " + std::to_string(kMaxKeyDepth) + " levels deep");
      continue;
    }
    toml::table* at = &table;
    for (size_t i = 0; i + 1 < path->size() && at != nullptr; ++i) {
      toml::node* next = at->get((*path)[i]);
      if (next == nullptr) {
        at->insert((*path)[i], toml::table{});
        next = at->get((*path)[i]);
      }
      at = next->as_table();
    }
    if (at == nullptr) {
      reject("a key on the way is not a table");
      continue;
    }
    if (std::optional<std::string> error =
            Insert(*at, path->back(), Trimmed(override_text.substr(equals + 1))))
      reject(*error);
  }
  return ok;
}

}  // namespace mstar

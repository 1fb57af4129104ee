// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "core/diagnostic.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <tuple>

namespace mstar {

std::string Diagnostic::ToString() const {
  std::string out = where.path.empty() ? "<input>" : where.path;
  if (where.line > 0) {
    fmt::format_to(std::back_inserter(out), ":{}", where.line);
    if (where.column > 0) fmt::format_to(std::back_inserter(out), ":{}", where.column);
  }
  out += ": ";
  if (!key.empty()) fmt::format_to(std::back_inserter(out), "{}: ", key);
  out += message;
  return out;
}

void SortByLocation(Diagnostics* diagnostics) {
  std::map<std::string, size_t> first_seen;  // a file's place: where its first problem was
  for (const Diagnostic& d : *diagnostics) first_seen.emplace(d.where.path, first_seen.size());
  std::stable_sort(
      diagnostics->begin(), diagnostics->end(), [&](const Diagnostic& a, const Diagnostic& b) {
        return std::make_tuple(first_seen[a.where.path], a.where.line, a.where.column) <
               std::make_tuple(first_seen[b.where.path], b.where.line, b.where.column);
      });
}

std::string JoinDiagnostics(const Diagnostics& diagnostics) {
  std::string out;
  for (const Diagnostic& d : diagnostics) {
    if (!out.empty()) out += "\n";
    out += d.ToString();
  }
  return out;
}

}  // namespace mstar

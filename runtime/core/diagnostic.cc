// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "core/diagnostic.h"

#include <fmt/format.h>

#include <iterator>

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

std::string JoinDiagnostics(const Diagnostics& diagnostics) {
  std::string out;
  for (const Diagnostic& d : diagnostics) {
    if (!out.empty()) out += "\n";
    out += d.ToString();
  }
  return out;
}

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "core/diagnostic.h"

namespace mstar {

std::string Diagnostic::ToString() const {
  std::string out = where.path.empty() ? "<input>" : where.path;
  if (where.line > 0) {
    out += ":" + std::to_string(where.line);
    if (where.column > 0) out += ":" + std::to_string(where.column);
  }
  out += ": ";
  if (!key.empty()) out += key + ": ";
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

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Diagnostics: problems found in an input file, each located by file, line, column and key, so
// that a person can go straight to the place to fix.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mstar {

struct SourceLocation {
  std::string path;
  uint32_t line = 0;    // 1-based; 0 when unknown
  uint32_t column = 0;  // 1-based; 0 when unknown
};

struct Diagnostic {
  SourceLocation where;
  std::string key;  // dotted key the problem is about, e.g. "abi.major"; may be empty
  std::string message;

  // "path:line:column: key: message" with the unknown parts left out.
  std::string ToString() const;
};

using Diagnostics = std::vector<Diagnostic>;

// Orders diagnostics as a reader meets them: by file (in the order the files first appear),
// then line and column (those without a line, e.g. from --set, first); ties keep their order.
void SortByLocation(Diagnostics* diagnostics);

// All diagnostics, one per line.
std::string JoinDiagnostics(const Diagnostics& diagnostics);

}  // namespace mstar

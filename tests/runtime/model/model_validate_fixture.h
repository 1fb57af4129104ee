// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// What the model_validate tests share: a head of three nodes (a, b, c) each test's manifest text
// follows, and a check that a parse failed with a given diagnostic.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "model/model_manifest.h"

namespace mstar::test {

// Lines 1-9; the text each test adds starts on line 10.
inline constexpr const char* kHead = R"(format = 1
[model]
name = "m"
[nodes.a]
plugin = "p"
[nodes.b]
plugin = "p"
[nodes.c]
plugin = "p"
)";

inline ModelParse Parse(const std::string& body) {
  return ParseModelManifestText(std::string(kHead) + body, "m.toml");
}

// Passes when the parse failed and one diagnostic's ToString() contains text.
inline testing::AssertionResult Reports(const ModelParse& parse, const std::string& text) {
  if (parse.model.has_value()) return testing::AssertionFailure() << "the manifest was accepted";
  for (const Diagnostic& d : parse.diagnostics) {
    if (d.ToString().find(text) != std::string::npos) return testing::AssertionSuccess();
  }
  return testing::AssertionFailure() << "no diagnostic contains \"" << text << "\"; got:\n"
                                     << JoinDiagnostics(parse.diagnostics);
}

// One partition "main" whose initial walk "w" runs `run` (line 14) with inputs (line 15) and
// edges (line 16).
inline ModelParse OneWalk(const std::string& run, const std::string& inputs,
                          const std::string& edges) {
  return Parse("[partitions.main]\ninitial = \"w\"\n[walks.w]\npartition = \"main\"\nrun = " + run +
               "\ninputs = " + inputs + "\nedges = " + edges + "\n");
}

}  // namespace mstar::test

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The tiny models' weights for tests: written once per test binary by the real make-tiny-weights
// program into a temporary directory that lives until the process exits, and is removed then.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "support/test_support.h"

namespace mstar::test {

// Runs make-tiny-weights with args; the result of the command.
inline CommandResult RunMakeTinyWeights(const std::string& args) {
  return Run(std::string("'") + MSTAR_MAKE_TINY_WEIGHTS + "' " + args);
}

// The directory holding tiny-lm/ and tiny-codec/.
inline const std::string& TinyWeightsDir() {
  // Made on first use; removed when the process exits, after every test.
  struct Weights {
    Weights() {
      CommandResult r = RunMakeTinyWeights(ShellQuoted(dir.path()));
      EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    }
    TempDir dir;
  };
  static const Weights weights;
  return weights.dir.path();
}

inline std::string TinyCodecWeights() {
  return TinyWeightsDir() + "/tiny-codec";
}

}  // namespace mstar::test

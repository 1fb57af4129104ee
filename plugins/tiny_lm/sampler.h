// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Sampling of the next token from one row of logits, reproducible per request: the random draw
// is a pure function of (seed, position), so a request's tokens depend only on its own logits,
// seed and positions, never on what else shares its batch or on the order of calls.
#pragma once

#include <cstdint>

namespace tiny_lm {

struct SamplingParams {
  double temperature = 0.0;  // 0: greedy (argmax; the lowest index among ties)
  int64_t top_k = 0;         // 0: no limit
  double top_p = 1.0;        // nucleus: smallest set of tokens whose probability reaches top_p
};

// A uniform double in [0, 1) from a counter-based generator (SplitMix64 of seed and counter).
double UniformDraw(uint64_t seed, uint64_t counter);

// The sampled token index in [0, vocab). position is the position the token will take.
int64_t SampleToken(const float* logits, int64_t vocab, const SamplingParams& params, uint64_t seed,
                    uint64_t position);

}  // namespace tiny_lm

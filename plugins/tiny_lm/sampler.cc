// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace tiny_lm {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The first largest logit, NaN never winning while another can (index 0 when all are NaN), with
// eight independent running maxima instead of one dependent chain of compares.
int64_t Argmax(const float* logits, int64_t vocab) {
  int64_t first = 0;  // the first that is not NaN: every compare below then skips NaN
  while (first < vocab && std::isnan(logits[first])) ++first;
  if (first >= vocab) return 0;
  constexpr int kLanes = 8;
  float lane[kLanes];
  std::fill(lane, lane + kLanes, logits[first]);
  int64_t i = first;
  for (; i + kLanes <= vocab; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) lane[j] = logits[i + j] > lane[j] ? logits[i + j] : lane[j];
  }
  float top = lane[0];
  for (int j = 1; j < kLanes; ++j) top = lane[j] > top ? lane[j] : top;
  for (; i < vocab; ++i) top = logits[i] > top ? logits[i] : top;
  for (i = 0; logits[i] != top; ++i) {
  }
  return i;
}

}  // namespace

double UniformDraw(uint64_t seed, uint64_t counter) {
  uint64_t bits = SplitMix64(SplitMix64(seed) ^ SplitMix64(counter + 0x632be59bd9b4e019ULL));
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

int64_t SampleToken(const float* logits, int64_t vocab, const SamplingParams& params, uint64_t seed,
                    uint64_t position) {
  if (params.temperature <= 0.0) {
    return Argmax(logits, vocab);
  }
  // A NaN logit counts as -inf (never drawn while another token can be); +inf logits share the
  // draw among themselves.
  auto logit = [&](int64_t i) {
    return std::isnan(logits[i]) ? -std::numeric_limits<double>::infinity()
                                 : static_cast<double>(logits[i]);
  };
  // Tokens by descending logit (ties: lower index first), cut to top_k.
  std::vector<int64_t> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return logit(a) > logit(b); });
  if (params.top_k > 0 && params.top_k < vocab) order.resize(static_cast<size_t>(params.top_k));
  const double top = logit(order[0]);
  if (!std::isfinite(top)) {  // +inf: those tokens alone; -inf: nothing is likelier than the first
    size_t n = 1;
    while (top > 0 && n < order.size() && logit(order[n]) == top) ++n;
    order.resize(n);
  }
  std::vector<double> probs(order.size());
  double total = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    probs[i] = std::isfinite(top) ? std::exp((logit(order[i]) - top) / params.temperature) : 1.0;
    total += probs[i];
  }
  // Nucleus: keep the shortest prefix whose probability reaches top_p (always the first token).
  if (params.top_p < 1.0) {
    double kept = 0;
    size_t n = 0;
    while (n < probs.size() && (n == 0 || kept < params.top_p * total)) kept += probs[n++];
    probs.resize(n);
    total = kept;
  }
  const double target = UniformDraw(seed, position) * total;
  double cumulative = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    cumulative += probs[i];
    if (target < cumulative) return order[i];
  }
  return order[probs.size() - 1];
}

}  // namespace tiny_lm

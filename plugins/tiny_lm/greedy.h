// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// GreedyTokens: the greedy token of each row of logits, computed on the logits' device with
// tensor operations only (no host reads), so that a captured graph can hold it. It picks what the
// host sampler's greedy pick does (sampler.h): the first largest logit, a NaN never winning while
// another logit can (index 0 when a row is all NaN). ATen's argmax alone would let a NaN win.
#pragma once

#include <ATen/ATen.h>

#include <limits>

namespace tiny_lm {

// logits: float [rows, vocab]. Returns int64 [rows].
inline at::Tensor GreedyTokens(const at::Tensor& logits) {
  at::Tensor nan = logits.isnan();
  at::Tensor key = logits.masked_fill(nan, -std::numeric_limits<float>::infinity());
  at::Tensor best = key.amax(-1, /*keepdim=*/true);
  // The first index that holds the largest value and is not NaN (argmax returns the first of
  // equal maxima; a row without one is all zeros, giving 0).
  return key.eq(best).logical_and_(nan.logical_not()).to(at::kInt).argmax(-1);
}

}  // namespace tiny_lm

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// FusedWeights: the decoder's weights rearranged once at load so a layer runs few, larger ATen
// ops (at this model size each op costs more in dispatch than in arithmetic):
//   - each RMSNorm weight is folded into the columns of the projections that read the norm's
//     output (input norm -> q/k/v, post-attention norm -> gate/up, final norm -> lm_head);
//   - q, k and v are one projection; without QK-norm it also yields rotate_half(q) and
//     rotate_half(k) (rotate_half is linear, so it folds into the weight rows), which makes RoPE
//     two elementwise ops;
//   - the attention scale 1/sqrt(head_dim) is folded into q (its rows, or with QK-norm its norm
//     weight);
//   - gate and up are one projection.
// The results equal HF's up to float32 rounding order.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "lm_config.h"
#include "lm_weights.h"

namespace tiny_lm {

struct FusedLayer {
  // [qd + 2 kvd (+ qd + kvd without QK-norm), hidden]: rows q*scale, k, v, then
  // rotate_half(q)*scale, rotate_half(k); all columns times the input norm weight.
  at::Tensor qkv;
  at::Tensor qkv_bias;  // matching rows; undefined unless attention_bias
  // [heads + kv_heads, head_dim]: q_norm * scale per q head, then k_norm per kv head; undefined
  // unless qk_norm.
  at::Tensor qk_norm;
  at::Tensor o, o_bias;  // as loaded; o_bias undefined unless attention_bias
  at::Tensor gate_up;    // [2 inter, hidden]: gate then up, columns times the post norm weight
  at::Tensor down;       // [hidden, inter]
};

struct FusedWeights {
  at::Tensor embed;  // [vocab, hidden]
  std::vector<FusedLayer> layers;
  at::Tensor lm_head;  // [vocab, hidden], columns times the final norm weight
};

FusedWeights FuseWeights(const LmConfig& config, const LmWeights& weights);

}  // namespace tiny_lm

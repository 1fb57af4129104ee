// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "fused_weights.h"

#include <cmath>

namespace tiny_lm {
namespace {

// rotate_half applied to each head's block of rows (dim 0) of a [heads * head_dim, ...] weight
// or [heads * head_dim] bias: row i of a head becomes -row (i + half) for i < half, else
// row (i - half).
at::Tensor RotateHalfRows(const at::Tensor& w, int64_t heads, int64_t head_dim) {
  std::vector<int64_t> shape = {heads, head_dim};
  for (int64_t i = 1; i < w.dim(); ++i) shape.push_back(w.size(i));
  at::Tensor h = w.reshape(shape);
  const int64_t half = head_dim / 2;
  return at::cat({-h.narrow(1, half, half), h.narrow(1, 0, half)}, 1).reshape(w.sizes());
}

}  // namespace

FusedWeights FuseWeights(const LmConfig& c, const LmWeights& w) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  FusedWeights f;
  f.embed = w.embed;
  for (const LayerWeights& lw : w.layers) {
    FusedLayer fl;
    // Without QK-norm the scale goes into q itself; with it, into q's norm weight.
    const double q_scale = c.qk_norm ? 1.0 : scale;
    std::vector<at::Tensor> rows = {lw.q * q_scale, lw.k, lw.v};
    std::vector<at::Tensor> bias;
    if (c.attention_bias) bias = {lw.q_bias * q_scale, lw.k_bias, lw.v_bias};
    if (!c.qk_norm) {
      rows.push_back(RotateHalfRows(rows[0], c.num_heads, c.head_dim));
      rows.push_back(RotateHalfRows(lw.k, c.num_kv_heads, c.head_dim));
      if (c.attention_bias) {
        bias.push_back(RotateHalfRows(bias[0], c.num_heads, c.head_dim));
        bias.push_back(RotateHalfRows(lw.k_bias, c.num_kv_heads, c.head_dim));
      }
    } else {
      fl.qk_norm = at::cat({(lw.q_norm * scale).expand({c.num_heads, c.head_dim}),
                            lw.k_norm.expand({c.num_kv_heads, c.head_dim})})
                       .contiguous();
    }
    fl.qkv = (at::cat(rows) * lw.input_norm).contiguous();
    if (c.attention_bias) fl.qkv_bias = at::cat(bias).contiguous();
    fl.o = lw.o;
    fl.o_bias = lw.o_bias;
    fl.gate_up = (at::cat({lw.gate, lw.up}) * lw.post_norm).contiguous();
    fl.down = lw.down;
    f.layers.push_back(std::move(fl));
  }
  f.lm_head = (w.lm_head * w.norm).contiguous();
  return f;
}

}  // namespace tiny_lm

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Transformer: the Llama / Qwen3 decoder forward over a packed batch of requests with a paged KV
// cache (HF transformers semantics: RMSNorm, RoPE with rotate-half, GQA, SwiGLU MLP, optional
// QK-norm). Const after construction; Forward writes only the batch's KV pool slots, so one
// Transformer may serve concurrent forwards over disjoint pools.
#pragma once

#include <ATen/ATen.h>

#include "kv_view.h"
#include "lm_config.h"
#include "lm_weights.h"

namespace tiny_lm {

class Transformer {
 public:
  Transformer(LmConfig config, LmWeights weights);

  // Runs the computed rows of batch through every layer, writing their K and V into the pool at
  // their slots and attending causally over each request's cached context. Returns float32
  // [requests, vocab]: the logits at each request's last new token.
  at::Tensor Forward(const PagedBatch& batch) const;

  const LmConfig& config() const { return config_; }

 private:
  at::Tensor RmsNorm(const at::Tensor& x, const at::Tensor& weight) const;
  // Attention of one layer for the packed rows; q [R, heads, D] after RoPE.
  at::Tensor Attend(const PagedBatch& batch, const at::Tensor& q, const at::Tensor& k_pages,
                    const at::Tensor& v_pages) const;

  LmConfig config_;
  LmWeights w_;
  at::Tensor inv_freq_;  // float32 [head_dim / 2]
};

}  // namespace tiny_lm

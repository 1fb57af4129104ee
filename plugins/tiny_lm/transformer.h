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
  // The batch as one padded block for attention: every request gets the most pages, query rows
  // and context of any request in the batch; masks hide what is not its own. Built once per
  // forward, used by every layer.
  struct Padded {
    int64_t num_pages = 0, max_rows = 0, max_ctx = 0;
    at::Tensor pages;     // long [B * num_pages]: each request's pages, padded with page 0
    at::Tensor q_rows;    // long [B * max_rows]: packed row of each padded query (padding repeats
                          // the request's last row)
    at::Tensor out_rows;  // long [R]: where each packed row sits among the padded ones
    at::Tensor mask;      // bool [B, 1, max_rows, max_ctx]: true where a query must not look
    at::Tensor padding;   // bool [B, 1, max_ctx, 1]: true past a request's context (whatever the
                          // pool holds there, even NaN, must not reach the output)
  };
  Padded Pad(const PagedBatch& batch) const;

  at::Tensor RmsNorm(const at::Tensor& x, const at::Tensor& weight) const;
  // Attention of one layer for the packed rows, all requests in one batched computation;
  // q [R, heads, D] after RoPE. Returns [R, heads * D].
  at::Tensor Attend(const PagedBatch& batch, const Padded& padded, const at::Tensor& q,
                    const at::Tensor& k_pages, const at::Tensor& v_pages) const;

  LmConfig config_;
  LmWeights w_;
  at::Tensor inv_freq_;  // float32 [head_dim / 2]
};

}  // namespace tiny_lm

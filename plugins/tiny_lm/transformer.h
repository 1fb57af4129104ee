// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Transformer: the Llama / Qwen3 decoder forward over a packed batch of requests with a paged KV
// cache (HF transformers semantics: RMSNorm, RoPE with rotate-half, GQA, SwiGLU MLP, optional
// QK-norm), on weights fused at construction (fused_weights.h). Const after construction;
// Forward writes only the batch's KV pool slots, so one Transformer may serve concurrent
// forwards over disjoint pools. Forward reads nothing back from the device (no host syncs).
#pragma once

#include <ATen/ATen.h>

#include <functional>

#include "fused_weights.h"
#include "kv_view.h"
#include "lm_config.h"
#include "lm_weights.h"

namespace tiny_lm {

// Scratch tensors a forward reuses across its layers and across calls, so that steady decode
// steps do not allocate (and fault in) fresh pages for their largest intermediates. Owned by the
// caller; one Workspace serves one forward at a time.
// Each buffer is flat and grows geometrically; a forward uses a view of its front.
struct Workspace {
  // Per attention group (PagedBatch::groups), one group at a time:
  at::Tensor context;  // for [2 * count * max_ctx, kv_heads * head_dim]: the gathered K, then V
  at::Tensor product;  // for [count, kv_heads, group, max_ctx, head_dim]: one-row products
  at::Tensor logits;   // for [B, vocab]
  // [positions, 2, head_dim]: RoPE's cos and sin at positions 0, 1, ...; extended (to at most
  // max_position_embeddings) when a batch reaches past it.
  at::Tensor rope;
};

// Sums a rank's partial result with the other ranks' in place (an all-reduce over the
// tensor-parallel group, tensor_parallel.h); empty when the model is not split.
using PartialSum = std::function<void(at::Tensor&)>;

// Runs layer's MLP block (MlpBlock) somewhere else, e.g. as a captured piecewise region; takes and
// returns the residual stream [R, hidden].
using MlpRunner = std::function<at::Tensor(int64_t layer, const at::Tensor& x)>;

class Transformer {
 public:
  // config and weights are one rank's (ShardConfig / ShardWeights) when reduce is given.
  Transformer(LmConfig config, const LmWeights& weights, PartialSum reduce = {});

  // Runs the computed rows of batch through every layer, writing their K and V into the pool at
  // their slots and attending causally over each request's cached context. Returns float32
  // [requests, vocab]: the logits at each request's last new token, held in workspace (valid
  // until its next use).
  // With mlp, each layer's MLP block runs through it instead of inline.
  at::Tensor Forward(const PagedBatch& batch, Workspace& workspace,
                     const MlpRunner& mlp = {}) const;
  // x + down(silu(gate(norm x)) * up(norm x)) for layer: [R, hidden] -> [R, hidden]. Each row
  // depends on its own row only.
  at::Tensor MlpBlock(int64_t layer, const at::Tensor& x) const;

  const LmConfig& config() const { return config_; }
  // RoPE's cos and sin at positions [0, n), [n, 2, head_dim] (what PagedBatch::rope holds).
  at::Tensor RopeRows(int64_t n) const;

 private:
  // workspace.rope, covering position max_position.
  const at::Tensor& RopeTable(Workspace& workspace, int64_t max_position) const;
  // x / rms(x) over the last dimension (the norm weights are folded into the next projection);
  // inv_n: [x.size(-1)] filled with 1 / x.size(-1).
  at::Tensor Normalize(const at::Tensor& x, const at::Tensor& inv_n) const;
  // x + in w^T, the product summed over the ranks first when the model is split.
  at::Tensor Residual(const at::Tensor& x, const at::Tensor& in, const at::Tensor& w) const;
  // Attention of the packed query rows q [R, heads, D] (scaled, after RoPE) over layer's rows of
  // the pool (LayerRows), group by group (PagedBatch::groups). Returns [R, heads * D].
  at::Tensor AttendGroups(const PagedBatch& batch, const at::Tensor& layer, const at::Tensor& q,
                          Workspace& ws) const;
  // One group: q [count * max_rows, heads, D], the group's padded query rows, against keys and
  // values [count, max_ctx, kv_heads, D] gathered through g.context_rows. Returns
  // [count * max_rows, heads * D].
  at::Tensor Attend(const AttentionGroup& g, const at::Tensor& q, const at::Tensor& keys,
                    const at::Tensor& values) const;
  // The same for a group of one query row per request (a decode step): elementwise products and
  // sums instead of one small matmul per (request, kv head).
  at::Tensor AttendOneRow(const AttentionGroup& g, const at::Tensor& q, const at::Tensor& keys,
                          const at::Tensor& values, Workspace& workspace) const;

  LmConfig config_;
  FusedWeights w_;
  PartialSum reduce_;
  at::Tensor inv_freq_;                   // float32 [head_dim / 2]
  at::Tensor ones_;                       // float32 [head_dim]
  at::Tensor inv_head_dim_, inv_hidden_;  // float32 [head_dim], [hidden]: 1 / their size
  at::Tensor eps_;                        // float32 [1]: rms_norm_eps
};

}  // namespace tiny_lm

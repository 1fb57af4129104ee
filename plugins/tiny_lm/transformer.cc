// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "transformer.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include <torch/cuda.h>

namespace tiny_lm {
namespace {

// HF's inverse frequencies, computed in float32 as transformers does, with llama3 scaling.
at::Tensor InverseFrequencies(const LmConfig& c, at::Device device) {
  at::Tensor exponent =
      at::arange(0, c.head_dim, 2, at::kLong).to(at::kFloat) / static_cast<double>(c.head_dim);
  at::Tensor inv = 1.0 / at::pow(c.rope_theta, exponent);
  const RopeScaling& s = c.rope_scaling;
  if (s.type == "llama3") {
    const double low_wavelen = s.original_max_position_embeddings / s.low_freq_factor;
    const double high_wavelen = s.original_max_position_embeddings / s.high_freq_factor;
    at::Tensor wavelen = 2 * M_PI / inv;
    at::Tensor scaled = at::where(wavelen > low_wavelen, inv / s.factor, inv);
    at::Tensor smooth = (s.original_max_position_embeddings / wavelen - s.low_freq_factor) /
                        (s.high_freq_factor - s.low_freq_factor);
    at::Tensor smoothed = (1 - smooth) * scaled / s.factor + smooth * scaled;
    at::Tensor medium =
        at::logical_not(wavelen < high_wavelen) & at::logical_not(wavelen > low_wavelen);
    inv = at::where(medium, smoothed, scaled);
  }
  return inv.to(device);
}

at::Tensor RotateHalf(const at::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

// add + x w^T for x [R, in], w [out, in], add [out] or [R, out] (undefined: 0). With one row,
// a matrix-vector product: OpenBLAS's gemm first packs all of w, which dominates for one row.
at::Tensor Linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& add = {}) {
  if (x.size(0) == 1) {
    at::Tensor row = x.reshape({-1});
    return (add.defined() ? at::addmv(add.reshape({-1}), w, row) : at::mv(w, row)).view({1, -1});
  }
  return add.defined() ? at::addmm(add, x, w.t()) : at::mm(x, w.t());
}

// A view of shape over buffer's memory; buffer is (re)allocated, with room to grow, when it is
// too small.
at::Tensor Take(at::Tensor& buffer, at::IntArrayRef shape, const at::TensorOptions& options) {
  int64_t n = 1;
  for (int64_t size : shape) n *= size;
  if (!buffer.defined() || buffer.numel() < n)
    buffer = at::empty({std::max(n, buffer.defined() ? 2 * buffer.numel() : n)}, options);
  return buffer.narrow(0, 0, n).view(shape);
}

}  // namespace

Transformer::Transformer(LmConfig config, const LmWeights& weights, PartialSum reduce)
    : config_(std::move(config)), w_(FuseWeights(config_, weights)), reduce_(std::move(reduce)) {
  inv_freq_ = InverseFrequencies(config_, w_.embed.device());
  const at::TensorOptions options = w_.embed.options();
  ones_ = at::ones({config_.head_dim}, options);
  inv_head_dim_ =
      at::full({config_.head_dim}, 1.0 / static_cast<double>(config_.head_dim), options);
  inv_hidden_ =
      at::full({config_.hidden_size}, 1.0 / static_cast<double>(config_.hidden_size), options);
  eps_ = at::full({1}, config_.rms_norm_eps, options);
  // Those fills ran on this thread's current stream; the forwards run on the host's streams,
  // which do not wait for it.
  if (w_.embed.is_cuda()) torch::cuda::synchronize(w_.embed.device().index());
}

at::Tensor Transformer::RopeRows(int64_t n) const {
  // As HF computes them: float32 positions times the inverse frequencies, then cos and sin.
  at::Tensor freqs =
      at::arange(n, inv_freq_.options().dtype(at::kLong)).to(at::kFloat).unsqueeze(1) *
      inv_freq_.unsqueeze(0);
  at::Tensor emb = at::cat({freqs, freqs}, -1);  // [n, D]
  return at::stack({emb.cos(), emb.sin()}, 1);
}

const at::Tensor& Transformer::RopeTable(Workspace& ws, int64_t max_position) const {
  const int64_t have = ws.rope.defined() ? ws.rope.size(0) : 0;
  if (max_position < have) return ws.rope;
  const int64_t n = std::min(config_.max_position_embeddings,
                             std::max({max_position + 1, 2 * have, int64_t{256}}));
  ws.rope = RopeRows(n);
  return ws.rope;
}

at::Tensor Transformer::Normalize(const at::Tensor& x, const at::Tensor& inv_n) const {
  std::vector<int64_t> shape = x.sizes().vec();
  const int64_t n = shape.back();
  shape.back() = 1;
  // mean(x^2) + eps as one matrix-vector product (a reduction over so few floats costs more).
  at::Tensor r = at::addmv(eps_, (x * x).reshape({-1, n}), inv_n).rsqrt_();
  return x * r.view(shape);
}

at::Tensor Transformer::MlpBlock(int64_t layer, const at::Tensor& x) const {
  const FusedLayer& fl = w_.layers[static_cast<size_t>(layer)];
  at::Tensor gate_up = Linear(Normalize(x, inv_hidden_), fl.gate_up);
  const int64_t inter = gate_up.size(1) / 2;
  at::Tensor act = at::silu(gate_up.narrow(1, 0, inter)).mul_(gate_up.narrow(1, inter, inter));
  return Residual(x, act, fl.down);
}

at::Tensor Transformer::Forward(const PagedBatch& batch, Workspace& ws,
                                const MlpRunner& mlp) const {
  const LmConfig& c = config_;
  const int64_t rows = batch.tokens.size(0), d = c.head_dim, heads = c.num_heads;
  const int64_t kv_heads = c.num_kv_heads, qd = heads * d, kvd = kv_heads * d;
  const auto count = static_cast<int64_t>(batch.requests.size());
  at::Tensor x = w_.embed.index_select(0, batch.tokens);  // [R, hidden]
  const at::Tensor& table = batch.rope.defined() ? batch.rope : RopeTable(ws, batch.max_position);
  at::Tensor rope = table.index_select(0, batch.positions);
  at::Tensor cos = rope.narrow(1, 0, 1), sin = rope.narrow(1, 1, 1);  // [R, 1, D]
  const int64_t page_size = batch.page_size;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const FusedLayer& fl = w_.layers[static_cast<size_t>(l)];
    at::Tensor h = Normalize(x, inv_hidden_);
    at::Tensor proj = Linear(h, fl.qkv, fl.qkv_bias);
    at::Tensor qk = proj.narrow(1, 0, qd + kvd).view({rows, heads + kv_heads, d});
    at::Tensor qk_rotated;  // rotate_half(qk)
    if (fl.qk_norm.defined()) {
      qk = Normalize(qk, inv_head_dim_).mul_(fl.qk_norm);
      qk_rotated = RotateHalf(qk);
    } else {
      qk_rotated = proj.narrow(1, qd + 2 * kvd, qd + kvd).view({rows, heads + kv_heads, d});
    }
    qk = at::addcmul(qk * cos, qk_rotated, sin);  // RoPE
    at::Tensor q = qk.narrow(1, 0, heads);
    at::Tensor k = qk.narrow(1, heads, kv_heads).reshape({rows, kvd});
    at::Tensor v = proj.narrow(1, qd + kvd, kvd);
    at::Tensor layer = LayerRows(batch.kv_pool, l, page_size);  // K at slots, V page_size after
    layer.index_copy_(0, batch.slots, k);
    layer.narrow(0, page_size, layer.size(0) - page_size).index_copy_(0, batch.slots, v);
    at::Tensor attn = AttendGroups(batch, layer, q, ws);  // [R, qd]
    x = Residual(x, attn, fl.o);
    if (fl.o_bias.defined()) x.add_(fl.o_bias);
    x = mlp ? mlp(l, x) : MlpBlock(l, x);
  }
  at::Tensor tail = batch.last_rows.defined() ? x.index_select(0, batch.last_rows) : x;
  at::Tensor logits = Take(ws.logits, {count, w_.lm_head.size(0)}, x.options());
  at::Tensor h = Normalize(tail, inv_hidden_);
  if (count == 1) {
    at::Tensor row = logits.view({-1});
    at::mv_out(row, w_.lm_head, h.view({-1}));
    return logits;
  }
  return at::mm_out(logits, h, w_.lm_head.t());
}

at::Tensor Transformer::Residual(const at::Tensor& x, const at::Tensor& in,
                                 const at::Tensor& w) const {
  if (!reduce_) return Linear(in, w, x);
  at::Tensor part = Linear(in, w).contiguous();
  reduce_(part);
  return part.add_(x);
}

at::Tensor Transformer::AttendGroups(const PagedBatch& batch, const at::Tensor& layer,
                                     const at::Tensor& q, Workspace& ws) const {
  const int64_t kv_heads = config_.num_kv_heads, d = config_.head_dim;
  std::vector<at::Tensor> outs;
  outs.reserve(batch.groups.size());
  for (const AttentionGroup& g : batch.groups) {
    // The members' contexts, K and V together: [2, count * max_ctx, kv_heads * D].
    at::Tensor context = Take(ws.context, {2 * g.count * g.max_ctx, kv_heads * d}, q.options());
    at::index_select_out(context, layer, 0, g.context_rows);
    at::Tensor keys = context.narrow(0, 0, g.count * g.max_ctx).view({g.count, -1, kv_heads, d});
    at::Tensor values = context.narrow(0, g.count * g.max_ctx, g.count * g.max_ctx)
                            .view({g.count, -1, kv_heads, d});
    at::Tensor rows = g.q_rows.defined() ? q.index_select(0, g.q_rows) : q;
    outs.push_back(g.max_rows == 1 ? AttendOneRow(g, rows, keys, values, ws)
                                   : Attend(g, rows, keys, values));
  }
  at::Tensor padded = outs.size() == 1 ? outs.front() : at::cat(outs);
  return batch.out_rows.defined() ? padded.index_select(0, batch.out_rows) : padded;
}

at::Tensor Transformer::AttendOneRow(const AttentionGroup& g, const at::Tensor& q,
                                     const at::Tensor& keys, const at::Tensor& values,
                                     Workspace& ws) const {
  const LmConfig& c = config_;
  const int64_t d = c.head_dim, kv_heads = c.num_kv_heads, group = c.num_heads / kv_heads;
  const int64_t count = g.count;
  // Head h reads kv head h / group (HF's repeat_kv order).
  at::Tensor q5 = q.reshape({count, kv_heads, group, 1, d});
  at::Tensor k5 = keys.permute({0, 2, 1, 3}).unsqueeze(2);  // [B, kv, 1, ctx, D]
  at::Tensor v5 = values.permute({0, 2, 1, 3}).unsqueeze(2);
  at::Tensor product = Take(ws.product, {count, kv_heads, group, g.max_ctx, d}, q.options());
  // The sum over D as a matrix-vector product: far cheaper than a reduction over 16 floats.
  at::mul_out(product, q5, k5);
  at::Tensor scores = product.view({-1, d}).mv(ones_).view({count, kv_heads, group, -1});
  scores.add_(g.bias.view({count, 1, 1, g.max_ctx}));
  at::Tensor probs = at::softmax(scores, -1).unsqueeze(-1);
  at::mul_out(product, probs, v5);
  return product.sum(-2).view({count, c.num_heads * d});
}

at::Tensor Transformer::Attend(const AttentionGroup& g, const at::Tensor& q, const at::Tensor& keys,
                               const at::Tensor& values) const {
  const LmConfig& c = config_;
  const int64_t d = c.head_dim, kv_heads = c.num_kv_heads, group = c.num_heads / kv_heads;
  const int64_t count = g.count, rows = g.max_rows, ctx = g.max_ctx;
  at::Tensor qp = q.reshape({count, rows, kv_heads, group, d})
                      .permute({0, 2, 3, 1, 4})
                      .reshape({count, kv_heads, group * rows, d});
  at::Tensor scores = at::matmul(qp, keys.permute({0, 2, 3, 1}))  // [B, kv, group*rows, ctx]
                          .view({count, kv_heads, group, rows, ctx});
  scores.add_(g.bias.view({count, 1, 1, rows, ctx}));
  at::Tensor probs = at::softmax(scores, -1).view({count, kv_heads, group * rows, ctx});
  at::Tensor out = at::matmul(probs, values.permute({0, 2, 1, 3}))  // [B, kv, group*rows, D]
                       .view({count, kv_heads, group, rows, d})
                       .permute({0, 3, 1, 2, 4})
                       .reshape({count * rows, c.num_heads * d});
  return out;
}

}  // namespace tiny_lm

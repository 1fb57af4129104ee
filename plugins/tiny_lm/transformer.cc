// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "transformer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

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

at::Tensor Linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias) {
  at::Tensor y = at::matmul(x, w.t());
  return bias.defined() ? y + bias : y;
}

}  // namespace

Transformer::Transformer(LmConfig config, LmWeights weights)
    : config_(std::move(config)), w_(std::move(weights)) {
  inv_freq_ = InverseFrequencies(config_, w_.embed.device());
}

at::Tensor Transformer::RmsNorm(const at::Tensor& x, const at::Tensor& weight) const {
  at::Tensor variance = x.pow(2).mean({-1}, /*keepdim=*/true);
  return weight * (x * at::rsqrt(variance + config_.rms_norm_eps));
}

at::Tensor Transformer::Forward(const PagedBatch& batch) const {
  const LmConfig& c = config_;
  const int64_t rows = batch.tokens.size(0), d = c.head_dim;
  at::Tensor x = w_.embed.index_select(0, batch.tokens);  // [R, hidden]
  at::Tensor freqs = batch.positions.to(at::kFloat).unsqueeze(1) * inv_freq_.unsqueeze(0);
  at::Tensor emb = at::cat({freqs, freqs}, -1).unsqueeze(1);  // [R, 1, D]
  at::Tensor cos = emb.cos(), sin = emb.sin();
  const int64_t pool_rows = batch.kv_pool.size(2) * batch.page_size;
  const Padded padded = Pad(batch);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const LayerWeights& lw = w_.layers[l];
    at::Tensor h = RmsNorm(x, lw.input_norm);
    at::Tensor q = Linear(h, lw.q, lw.q_bias).view({rows, c.num_heads, d});
    at::Tensor k = Linear(h, lw.k, lw.k_bias).view({rows, c.num_kv_heads, d});
    at::Tensor v = Linear(h, lw.v, lw.v_bias).view({rows, c.num_kv_heads, d});
    if (c.qk_norm) {
      q = RmsNorm(q, lw.q_norm);
      k = RmsNorm(k, lw.k_norm);
    }
    q = q * cos + RotateHalf(q) * sin;
    k = k * cos + RotateHalf(k) * sin;
    at::Tensor layer = batch.kv_pool.select(0, l);  // [2, P, S, Hkv, D]
    at::Tensor k_pages = layer.select(0, 0);
    at::Tensor v_pages = layer.select(0, 1);
    k_pages.view({pool_rows, c.num_kv_heads, d}).index_copy_(0, batch.slots, k);
    v_pages.view({pool_rows, c.num_kv_heads, d}).index_copy_(0, batch.slots, v);
    at::Tensor attn = Attend(batch, padded, q, k_pages, v_pages);  // [R, heads * D]
    x = x + Linear(attn, lw.o, lw.o_bias);
    h = RmsNorm(x, lw.post_norm);
    x = x +
        at::matmul(at::silu(at::matmul(h, lw.gate.t())) * at::matmul(h, lw.up.t()), lw.down.t());
  }
  std::vector<int64_t> last;
  for (const RequestRows& r : batch.requests) last.push_back(r.row_begin + r.rows - 1);
  at::Tensor tail = x.index_select(0, at::tensor(last, at::kLong).to(x.device()));
  return at::matmul(RmsNorm(tail, w_.norm), w_.lm_head.t());
}

Transformer::Padded Transformer::Pad(const PagedBatch& batch) const {
  const auto count = static_cast<int64_t>(batch.requests.size());
  Padded p;
  for (const RequestRows& r : batch.requests) {
    p.max_rows = std::max(p.max_rows, r.rows);
    p.max_ctx = std::max(p.max_ctx, r.context_len);
  }
  std::vector<int64_t> q_rows(static_cast<size_t>(count * p.max_rows)), out_rows, context;
  for (int64_t b = 0; b < count; ++b) {
    const RequestRows& r = batch.requests[static_cast<size_t>(b)];
    for (int64_t i = 0; i < p.max_rows; ++i)
      q_rows[static_cast<size_t>(b * p.max_rows + i)] = r.row_begin + std::min(i, r.rows - 1);
    for (int64_t i = 0; i < r.rows; ++i) out_rows.push_back(b * p.max_rows + i);
    context.push_back(r.context_len);
  }
  const at::Device device = batch.positions.device();
  p.num_pages = batch.max_pages;
  p.pages = batch.page_table.view({-1});
  p.q_rows = at::tensor(q_rows, at::kLong).to(device);
  p.out_rows = at::tensor(out_rows, at::kLong).to(device);
  at::Tensor qpos = batch.positions.index_select(0, p.q_rows).view({count, p.max_rows, 1});
  at::Tensor kpos = at::arange(p.max_ctx, qpos.options()).view({1, 1, p.max_ctx});
  at::Tensor ctx = at::tensor(context, at::kLong).to(device).view({count, 1, 1});
  at::Tensor outside = kpos >= ctx;  // [B, 1, max_ctx]
  p.mask = ((kpos > qpos) | outside).unsqueeze(1);
  p.padding = outside.unsqueeze(-1);
  return p;
}

at::Tensor Transformer::Attend(const PagedBatch& batch, const Padded& p, const at::Tensor& q,
                               const at::Tensor& k_pages, const at::Tensor& v_pages) const {
  const LmConfig& c = config_;
  const int64_t d = c.head_dim, group = c.num_heads / c.num_kv_heads;
  const auto count = static_cast<int64_t>(batch.requests.size());
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  // Every request's context, gathered through its pages: [B, heads, max_ctx, D].
  auto gather = [&](const at::Tensor& pages) {
    at::Tensor t = pages.index_select(0, p.pages)
                       .view({count, p.num_pages * batch.page_size, c.num_kv_heads, d})
                       .narrow(1, 0, p.max_ctx)
                       .permute({0, 2, 1, 3});
    return group == 1 ? t : t.repeat_interleave(group, 1);
  };
  at::Tensor keys = gather(k_pages), values = gather(v_pages).masked_fill(p.padding, 0);
  at::Tensor qp = q.index_select(0, p.q_rows)
                      .view({count, p.max_rows, c.num_heads, d})
                      .permute({0, 2, 1, 3});                        // [B, heads, rows, D]
  at::Tensor scores = at::matmul(qp, keys.transpose(2, 3)) * scale;  // [B, heads, rows, ctx]
  scores = scores.masked_fill(p.mask, -std::numeric_limits<float>::infinity());
  at::Tensor out = at::matmul(at::softmax(scores, -1), values);  // [B, heads, rows, D]
  return out.permute({0, 2, 1, 3})
      .reshape({count * p.max_rows, c.num_heads * d})
      .index_select(0, p.out_rows);
}

}  // namespace tiny_lm

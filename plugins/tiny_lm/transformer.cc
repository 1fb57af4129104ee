// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "transformer.h"

#include <cmath>
#include <limits>
#include <utility>

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
    at::Tensor attn = Attend(batch, q, k_pages, v_pages);  // [R, heads * D]
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

at::Tensor Transformer::Attend(const PagedBatch& batch, const at::Tensor& q,
                               const at::Tensor& k_pages, const at::Tensor& v_pages) const {
  const LmConfig& c = config_;
  const int64_t d = c.head_dim, group = c.num_heads / c.num_kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<at::Tensor> out;
  for (const RequestRows& r : batch.requests) {
    // The request's context, gathered through its pages: [heads, ctx, D].
    auto gather = [&](const at::Tensor& pages) {
      at::Tensor t = pages.index_select(0, r.pages)
                         .reshape({-1, c.num_kv_heads, d})
                         .narrow(0, 0, r.context_len)
                         .permute({1, 0, 2});
      return group == 1 ? t : t.repeat_interleave(group, 0);
    };
    at::Tensor keys = gather(k_pages), values = gather(v_pages);
    at::Tensor qr = q.narrow(0, r.row_begin, r.rows).permute({1, 0, 2});  // [heads, n, D]
    at::Tensor scores = at::matmul(qr, keys.transpose(1, 2)) * scale;     // [heads, n, ctx]
    at::Tensor qpos = batch.positions.narrow(0, r.row_begin, r.rows).unsqueeze(1);
    at::Tensor kpos = at::arange(r.context_len, qpos.options()).unsqueeze(0);
    scores = scores.masked_fill(kpos > qpos, -std::numeric_limits<float>::infinity());
    at::Tensor probs = at::softmax(scores, -1);
    out.push_back(at::matmul(probs, values).permute({1, 0, 2}).reshape({r.rows, c.num_heads * d}));
  }
  return at::cat(out, 0);
}

}  // namespace tiny_lm

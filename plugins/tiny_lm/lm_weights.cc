// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "lm_weights.h"

#include "mstar/sdk/error.hpp"
#include "mstar/sdk/safetensors.hpp"

namespace tiny_lm {
namespace {

using mstar::sdk::SafeTensorInfo;
using mstar::sdk::Safetensors;

class Loader {
 public:
  Loader(const std::string& path, at::Device device)
      : st_(Safetensors::Open(path)), device_(device) {}

  // The tensor called name with exactly shape, as float32 on the device.
  at::Tensor Load(const std::string& name, const std::vector<int64_t>& shape) const {
    const SafeTensorInfo& info = st_.Get(name);
    at::ScalarType type = at::kFloat;
    if (info.dtype == "F16") {
      type = at::kHalf;
    } else if (info.dtype == "BF16") {
      type = at::kBFloat16;
    } else if (info.dtype != "F32") {
      throw mstar::sdk::InvalidArgument(info.file + ": tensor '" + name + "' has dtype " +
                                        info.dtype + ", expected F32, F16 or BF16");
    }
    st_.Require(name, info.dtype, shape);
    at::Tensor raw =
        at::from_blob(const_cast<void*>(info.data), shape, at::TensorOptions().dtype(type));
    return raw.to(at::kFloat).to(device_).clone().contiguous();
  }

 private:
  Safetensors st_;
  at::Device device_;
};

}  // namespace

LmWeights LoadLmWeights(const LmConfig& c, const std::string& path, at::Device device) {
  Loader l(path, device);
  const int64_t h = c.hidden_size, d = c.head_dim, qd = c.num_heads * d, kvd = c.num_kv_heads * d;
  LmWeights w;
  w.embed = l.Load("model.embed_tokens.weight", {c.vocab_size, h});
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    LayerWeights lw;
    lw.input_norm = l.Load(p + "input_layernorm.weight", {h});
    lw.q = l.Load(p + "self_attn.q_proj.weight", {qd, h});
    lw.k = l.Load(p + "self_attn.k_proj.weight", {kvd, h});
    lw.v = l.Load(p + "self_attn.v_proj.weight", {kvd, h});
    lw.o = l.Load(p + "self_attn.o_proj.weight", {h, qd});
    if (c.attention_bias) {
      lw.q_bias = l.Load(p + "self_attn.q_proj.bias", {qd});
      lw.k_bias = l.Load(p + "self_attn.k_proj.bias", {kvd});
      lw.v_bias = l.Load(p + "self_attn.v_proj.bias", {kvd});
      lw.o_bias = l.Load(p + "self_attn.o_proj.bias", {h});
    }
    if (c.qk_norm) {
      lw.q_norm = l.Load(p + "self_attn.q_norm.weight", {d});
      lw.k_norm = l.Load(p + "self_attn.k_norm.weight", {d});
    }
    lw.post_norm = l.Load(p + "post_attention_layernorm.weight", {h});
    lw.gate = l.Load(p + "mlp.gate_proj.weight", {c.intermediate_size, h});
    lw.up = l.Load(p + "mlp.up_proj.weight", {c.intermediate_size, h});
    lw.down = l.Load(p + "mlp.down_proj.weight", {h, c.intermediate_size});
    w.layers.push_back(std::move(lw));
  }
  w.norm = l.Load("model.norm.weight", {h});
  // Tied: the output projection is the embedding (a stored lm_head.weight is ignored, as in HF).
  w.lm_head = c.tie_word_embeddings ? w.embed : l.Load("lm_head.weight", {c.vocab_size, h});
  return w;
}

}  // namespace tiny_lm

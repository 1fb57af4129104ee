// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// LmWeights: every tensor of a Llama / Qwen3 decoder, loaded from HF-named safetensors into
// float32 LibTorch tensors on one device. The tensors are copies: the safetensors mapping is
// closed once loading returns.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "lm_config.h"

namespace tiny_lm {

struct LayerWeights {
  at::Tensor input_norm;  // [hidden]
  at::Tensor q, k, v,
      o;  // [heads*head_dim, hidden], [kv*head_dim, hidden] x2, [hidden, heads*head_dim]
  at::Tensor q_bias, k_bias, v_bias, o_bias;  // undefined unless attention_bias
  at::Tensor q_norm, k_norm;                  // [head_dim]; undefined unless qk_norm
  at::Tensor post_norm;                       // [hidden]
  at::Tensor gate, up, down;                  // [inter, hidden] x2, [hidden, inter]
};

struct LmWeights {
  at::Tensor embed;  // [vocab, hidden]
  std::vector<LayerWeights> layers;
  at::Tensor norm;     // [hidden]
  at::Tensor lm_head;  // [vocab, hidden]; the embedding when tied
};

// Loads the weights of config from a safetensors file, index or directory (see
// mstar/sdk/safetensors.hpp). F32, F16 and BF16 tensors are accepted and converted to float32.
// Throws mstar::sdk::Error naming the file and tensor when one is missing or has the wrong shape
// or dtype.
LmWeights LoadLmWeights(const LmConfig& config, const std::string& path, at::Device device);

}  // namespace tiny_lm

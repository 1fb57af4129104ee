// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// LmConfig: the architecture of a Llama / Qwen3 decoder, read from an HF-style config.json.
#pragma once

#include <cstdint>
#include <string>

namespace tiny_lm {

struct RopeScaling {
  std::string type = "default";  // "default" or "llama3"
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  double original_max_position_embeddings = 8192;
};

struct LmConfig {
  std::string model_type;  // "llama" or "qwen3"
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;  // default hidden_size / num_heads
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v/o projections carry biases
  bool qk_norm = false;         // per-head RMSNorm of q and k before RoPE (qwen3)
};

// Reads path (a config.json). Throws mstar::sdk::Error naming the file and key for a missing or
// ill-typed key, an unsupported model_type, hidden_act or rope_scaling, or inconsistent head
// counts.
LmConfig ReadLmConfig(const std::string& path);

}  // namespace tiny_lm

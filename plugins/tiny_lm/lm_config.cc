// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "lm_config.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>

#include "mstar/sdk/error.hpp"

namespace tiny_lm {
namespace {

using mstar::sdk::InvalidArgument;
using mstar::sdk::NotFound;
using mstar::sdk::Unsupported;
using nlohmann::json;

class Reader {
 public:
  Reader(const std::string& path, const json& j) : path_(path), j_(j) {}

  // Below 2^31, so that the products of two counts (heads x head_dim, ...) cannot overflow.
  int64_t Int(const char* key) const {
    const json& v = Find(key);
    if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > INT32_MAX)
      throw InvalidArgument(path_ + ": '" + key + "' must be a positive integer below 2^31");
    return v.get<int64_t>();
  }
  int64_t Int(const char* key, int64_t fallback) const { return Has(key) ? Int(key) : fallback; }
  double Number(const char* key, double fallback) const {
    if (!Has(key)) return fallback;
    const json& v = j_[key];
    if (!v.is_number()) throw InvalidArgument(path_ + ": '" + key + "' must be a number");
    return v.get<double>();
  }
  bool Bool(const char* key, bool fallback) const {
    if (!Has(key)) return fallback;
    const json& v = j_[key];
    if (!v.is_boolean()) throw InvalidArgument(path_ + ": '" + key + "' must be true or false");
    return v.get<bool>();
  }
  std::string String(const char* key, const char* fallback) const {
    if (!Has(key)) return fallback;
    const json& v = j_[key];
    if (!v.is_string()) throw InvalidArgument(path_ + ": '" + key + "' must be a string");
    return v.get<std::string>();
  }
  bool Has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
  const json& Find(const char* key) const {
    if (!Has(key)) throw NotFound(path_ + ": missing key '" + key + "'");
    return j_[key];
  }

 private:
  const std::string& path_;
  const json& j_;
};

// Rope parameters: transformers 5 writes `rope_parameters` {rope_type, rope_theta, ...}; older
// configs write `rope_theta` and `rope_scaling` (null or {rope_type | type, ...}).
void ReadRope(const std::string& path, const json& j, LmConfig& c) {
  const char* key = j.contains("rope_parameters") && !j["rope_parameters"].is_null()
                        ? "rope_parameters"
                        : "rope_scaling";
  c.rope_theta = Reader(path, j).Number("rope_theta", 10000.0);
  if (!j.contains(key) || j[key].is_null()) return;
  const json& r = j[key];
  if (!r.is_object()) throw InvalidArgument(path + ": '" + key + "' must be an object or null");
  Reader reader(path, r);
  c.rope_theta = reader.Number("rope_theta", c.rope_theta);
  RopeScaling& s = c.rope_scaling;
  s.type = reader.String("rope_type", reader.String("type", "default").c_str());
  if (s.type == "default") return;
  if (s.type != "llama3") {
    throw Unsupported(path + ": " + key + " type '" + s.type +
                      "' is not supported (only default and llama3)");
  }
  s.factor = reader.Number("factor", 8.0);
  s.low_freq_factor = reader.Number("low_freq_factor", 1.0);
  s.high_freq_factor = reader.Number("high_freq_factor", 4.0);
  s.original_max_position_embeddings = reader.Number("original_max_position_embeddings", 8192);
  // Any of these out of range would make the RoPE table, and so every logit, NaN or infinite.
  auto positive = [](double v) { return v > 0 && std::isfinite(v); };
  if (!positive(s.factor) || !positive(s.low_freq_factor) || !positive(s.high_freq_factor) ||
      !positive(s.original_max_position_embeddings) || !(s.low_freq_factor < s.high_freq_factor)) {
    throw InvalidArgument(path + ": " + key +
                          " (llama3): factor, low_freq_factor, high_freq_factor and "
                          "original_max_position_embeddings must be positive numbers, and "
                          "low_freq_factor below high_freq_factor");
  }
}

}  // namespace

LmConfig ReadLmConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw NotFound(path + ": cannot open");
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) throw InvalidArgument(path + ": not a JSON object");
  Reader r(path, j);
  LmConfig c;
  c.model_type = r.String("model_type", "");
  if (c.model_type != "llama" && c.model_type != "qwen3") {
    throw Unsupported(path + ": model_type '" + c.model_type +
                      "' is not supported (tiny_lm runs \"llama\" and \"qwen3\")");
  }
  std::string act = r.String("hidden_act", "silu");
  if (act != "silu") throw Unsupported(path + ": hidden_act '" + act + "' is not supported (silu)");
  c.hidden_size = r.Int("hidden_size");
  c.intermediate_size = r.Int("intermediate_size");
  c.num_layers = r.Int("num_hidden_layers");
  c.num_heads = r.Int("num_attention_heads");
  c.num_kv_heads = r.Int("num_key_value_heads", c.num_heads);
  c.head_dim = r.Int("head_dim", c.hidden_size / c.num_heads);
  c.vocab_size = r.Int("vocab_size");
  c.max_position_embeddings = r.Int("max_position_embeddings", 2048);
  c.rms_norm_eps = r.Number("rms_norm_eps", 1e-6);
  ReadRope(path, j, c);
  c.tie_word_embeddings = r.Bool("tie_word_embeddings", false);
  c.attention_bias = r.Bool("attention_bias", false);
  c.qk_norm = c.model_type == "qwen3";
  if (r.Bool("mlp_bias", false)) throw Unsupported(path + ": mlp_bias is not supported");
  if (r.Bool("use_sliding_window", false))
    throw Unsupported(path + ": use_sliding_window is not supported");
  if (c.num_heads % c.num_kv_heads != 0) {
    throw InvalidArgument(path + ": num_attention_heads (" + std::to_string(c.num_heads) +
                          ") is not a multiple of num_key_value_heads (" +
                          std::to_string(c.num_kv_heads) + ")");
  }
  // Without head_dim, it is hidden_size / num_attention_heads, which may come out 0.
  if (c.head_dim <= 0) {
    throw InvalidArgument(path + ": head_dim is " + std::to_string(c.head_dim) +
                          " (hidden_size / num_attention_heads when not given); give a positive "
                          "head_dim");
  }
  if (c.head_dim % 2 != 0) throw InvalidArgument(path + ": head_dim must be even for RoPE");
  // Positions index int32 tensors and size RoPE tables (the captured one, whole).
  constexpr int64_t kMaxPositions = int64_t{1} << 24;
  if (c.max_position_embeddings > kMaxPositions) {
    throw InvalidArgument(path + ": max_position_embeddings " +
                          std::to_string(c.max_position_embeddings) + " is more than " +
                          std::to_string(kMaxPositions));
  }
  // Either would make every logit NaN.
  if (!(c.rms_norm_eps > 0) || !std::isfinite(c.rms_norm_eps))
    throw InvalidArgument(path + ": rms_norm_eps must be a positive number");
  if (!(c.rope_theta > 0) || !std::isfinite(c.rope_theta))
    throw InvalidArgument(path + ": rope_theta must be a positive number");
  return c;
}

}  // namespace tiny_lm

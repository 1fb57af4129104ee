// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "codec_model.h"

#include <c10/core/InferenceMode.h>

#include <map>

#include "mstar/sdk/error.hpp"
#include "weights_file.h"

namespace mstar::tiny_codec {
namespace {

using sdk::InvalidArgument;

int64_t PositiveInt(const nlohmann::json& doc, const std::string& path, const char* key) {
  if (!doc.contains(key) || !doc[key].is_number_integer() || doc[key].get<int64_t>() < 1)
    throw InvalidArgument(path + ": '" + key + "' must be a positive integer");
  return doc[key].get<int64_t>();
}

std::vector<int64_t> PositiveInts(const nlohmann::json& doc, const std::string& path,
                                  const char* key) {
  if (!doc.contains(key) || !doc[key].is_array() || doc[key].empty())
    throw InvalidArgument(path + ": '" + key + "' must be a non-empty array of positive integers");
  std::vector<int64_t> out;
  for (const nlohmann::json& v : doc[key]) {
    if (!v.is_number_integer() || v.get<int64_t>() < 1)
      throw InvalidArgument(path + ": '" + key + "' must hold positive integers");
    out.push_back(v.get<int64_t>());
  }
  return out;
}

CodecConfig ReadConfig(const std::string& path) {
  nlohmann::json doc = ReadJsonFile(path);
  if (!doc.is_object()) throw InvalidArgument(path + ": expected a JSON object");
  CodecConfig c;
  c.codebook_size = PositiveInt(doc, path, "codebook_size");
  c.dim = PositiveInt(doc, path, "dim");
  c.layers = PositiveInt(doc, path, "layers");
  c.kernel_size = PositiveInt(doc, path, "kernel_size");
  c.upsample_rates = PositiveInts(doc, path, "upsample_rates");
  c.upsample_kernels = PositiveInts(doc, path, "upsample_kernels");
  c.upsample_channels = PositiveInts(doc, path, "upsample_channels");
  c.out_kernel = PositiveInt(doc, path, "out_kernel");
  c.samples_per_token = PositiveInt(doc, path, "samples_per_token");
  c.sample_rate = PositiveInt(doc, path, "sample_rate");
  if (c.kernel_size % 2 == 0 || c.out_kernel % 2 == 0)
    throw InvalidArgument(path + ": 'kernel_size' and 'out_kernel' must be odd");
  size_t stages = c.upsample_rates.size();
  if (c.upsample_kernels.size() != stages || c.upsample_channels.size() != stages)
    throw InvalidArgument(path +
                          ": 'upsample_rates', 'upsample_kernels' and 'upsample_channels' must "
                          "have the same length");
  int64_t product = 1;
  for (size_t j = 0; j < stages; ++j) {
    int64_t extra = c.upsample_kernels[j] - c.upsample_rates[j];
    if (extra < 0 || extra % 2 != 0)
      throw InvalidArgument(path + ": upsample stage " + std::to_string(j) +
                            ": kernel minus rate must be even and not negative, so that each "
                            "stage multiplies the length exactly by its rate");
    if (__builtin_mul_overflow(product, c.upsample_rates[j], &product))
      throw InvalidArgument(path + ": the upsample rates multiply past 64 bits");
  }
  if (product != c.samples_per_token)
    throw InvalidArgument(path + ": 'samples_per_token' is " + std::to_string(c.samples_per_token) +
                          " but the upsample rates multiply to " + std::to_string(product));
  return c;
}

// The tensor called name, checked against shape.
at::Tensor Take(std::map<std::string, at::Tensor>& tensors, const std::string& path,
                const std::string& name, at::IntArrayRef shape) {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw sdk::NotFound(path + ": missing tensor '" + name + "'");
  if (it->second.sizes() != shape) {
    std::string expected = "[", found = "[";
    for (int64_t d : shape) expected += (expected.size() > 1 ? ", " : "") + std::to_string(d);
    for (int64_t d : it->second.sizes())
      found += (found.size() > 1 ? ", " : "") + std::to_string(d);
    throw InvalidArgument(path + ": tensor '" + name + "' has shape " + found + "], expected " +
                          expected + "]");
  }
  at::Tensor t = std::move(it->second);
  tensors.erase(it);
  return t;
}

}  // namespace

CodecModel CodecModel::Load(const std::string& dir, const at::Device& device) {
  CodecModel m;
  m.config_ = ReadConfig(dir + "/config.json");
  m.device_ = device;
  const CodecConfig& c = m.config_;
  const std::string path = dir + "/model.safetensors";
  std::map<std::string, at::Tensor> tensors = ReadSafetensors(path);
  auto take = [&](const std::string& name, at::IntArrayRef shape) {
    return Take(tensors, path, name, shape).to(device).contiguous();
  };
  m.embed_ = take("embed.weight", {c.codebook_size, c.dim});
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string p = "blocks." + std::to_string(i) + ".conv.";
    m.block_weights_.push_back(take(p + "weight", {c.dim, c.dim, c.kernel_size}));
    m.block_biases_.push_back(take(p + "bias", {c.dim}));
  }
  int64_t in = c.dim;
  for (size_t j = 0; j < c.upsample_rates.size(); ++j) {
    std::string p = "ups." + std::to_string(j) + ".";
    int64_t out = c.upsample_channels[j];
    m.up_weights_.push_back(take(p + "weight", {in, out, c.upsample_kernels[j]}));
    m.up_biases_.push_back(take(p + "bias", {out}));
    in = out;
  }
  m.out_weight_ = take("out.weight", {1, in, c.out_kernel});
  m.out_bias_ = take("out.bias", {1});
  if (!tensors.empty())
    throw InvalidArgument(path + ": unexpected tensor '" + tensors.begin()->first + "'");
  return m;
}

at::Tensor CodecModel::Decode(const at::Tensor& codes) const {
  c10::InferenceMode inference;
  const CodecConfig& c = config_;
  const int64_t batch = codes.size(0), n = codes.size(1);
  at::Tensor x = embed_.index_select(0, codes.reshape({-1})).reshape({batch, n, c.dim});
  x = x.transpose(1, 2).contiguous();  // [B, dim, n]
  for (size_t i = 0; i < block_weights_.size(); ++i) {
    x = x + at::gelu(at::conv1d(x, block_weights_[i], block_biases_[i], /*stride=*/1,
                                /*padding=*/c.kernel_size / 2));
  }
  for (size_t j = 0; j < up_weights_.size(); ++j) {
    int64_t rate = c.upsample_rates[j];
    x = at::conv_transpose1d(at::leaky_relu(x, 0.1), up_weights_[j], up_biases_[j],
                             /*stride=*/rate, /*padding=*/(c.upsample_kernels[j] - rate) / 2);
  }
  x = at::conv1d(at::leaky_relu(x, 0.1), out_weight_, out_bias_, 1, c.out_kernel / 2);
  return at::tanh(x).reshape({batch, n * c.samples_per_token});
}

}  // namespace mstar::tiny_codec

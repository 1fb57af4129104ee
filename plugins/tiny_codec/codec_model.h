// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// CodecModel: the tiny convolutional audio decoder. Codes [B, n] -> PCM [B, n * samples_per_token]:
//
//   x = embed[codes]                                  [B, dim, n]
//   per block i:   x = x + gelu(conv1d(x, blocks.i.conv, padding k/2))
//   per upsample j: x = conv_transpose1d(leaky_relu(x, 0.1), ups.j, stride r_j,
//                                         padding (k_j - r_j) / 2)   length n * r_1 * ... * r_j
//   pcm = tanh(conv1d(leaky_relu(x, 0.1), out, padding out_kernel/2))   [B, 1, n * spt]
//
// Every convolution pads with zeros, so a token's samples depend on its neighbours within the
// window (the left context a sliding window supplies) and nothing outside it.
//
// Immutable after Load: any thread may call Decode. Load throws mstar::sdk::Error naming the file
// and key or tensor for a missing or malformed config value or tensor.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mstar::tiny_codec {

struct CodecConfig {
  int64_t codebook_size = 0;
  int64_t dim = 0;
  int64_t layers = 0;
  int64_t kernel_size = 3;
  std::vector<int64_t> upsample_rates;
  std::vector<int64_t> upsample_kernels;
  std::vector<int64_t> upsample_channels;
  int64_t out_kernel = 7;
  int64_t samples_per_token = 0;  // the product of upsample_rates
  int64_t sample_rate = 24000;
};

class CodecModel {
 public:
  // Reads dir/config.json and dir/model.safetensors and moves the weights to device.
  static CodecModel Load(const std::string& dir, const at::Device& device);

  const CodecConfig& config() const { return config_; }
  const at::Device& device() const { return device_; }

  // codes: int64 [B, n], every value in [0, codebook_size), on device(). Returns float32
  // [B, n * samples_per_token] on device().
  at::Tensor Decode(const at::Tensor& codes) const;

 private:
  CodecConfig config_;
  at::Device device_ = at::Device(at::kCPU);
  at::Tensor embed_;                       // [codebook_size, dim]
  std::vector<at::Tensor> block_weights_;  // [dim, dim, kernel_size]
  std::vector<at::Tensor> block_biases_;   // [dim]
  std::vector<at::Tensor> up_weights_;     // [in, out, kernel]
  std::vector<at::Tensor> up_biases_;      // [out]
  at::Tensor out_weight_;                  // [1, last channels, out_kernel]
  at::Tensor out_bias_;                    // [1]
};

}  // namespace mstar::tiny_codec

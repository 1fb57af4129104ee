// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Reading a weights directory: its config.json and its model.safetensors.
//
// ReadSafetensors is one small function over the SDK's reader (mstar/sdk/safetensors.hpp), which
// maps and validates the file; the model code sees only at::Tensor. Every failure throws
// mstar::sdk::Error naming the file and, where there is one, the tensor or key.
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace mstar::tiny_codec {

// The JSON document in path.
nlohmann::json ReadJsonFile(const std::string& path);

// Every tensor of a .safetensors file (or a sharded set's index), as float32 CPU tensors owning
// copies of the data. Only "F32" tensors are accepted.
std::map<std::string, at::Tensor> ReadSafetensors(const std::string& path);

}  // namespace mstar::tiny_codec

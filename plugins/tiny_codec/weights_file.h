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

// The directory a `weights` config value names: an absolute path as is; a relative one against
// the working directory, or, when nothing is there, against base_dir (the model manifest's
// directory; may be null or empty). Throws NOT_FOUND naming every place tried.
std::string ResolveWeightsDir(const std::string& configured, const char* base_dir);

// The JSON document in path.
nlohmann::json ReadJsonFile(const std::string& path);

// Every tensor of a .safetensors file (or a sharded set's index), as float32 CPU tensors owning
// copies of the data. Only "F32" tensors are accepted.
std::map<std::string, at::Tensor> ReadSafetensors(const std::string& path);

}  // namespace mstar::tiny_codec

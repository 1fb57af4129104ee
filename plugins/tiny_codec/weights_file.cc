// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "weights_file.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "mstar/sdk/error.hpp"
#include "mstar/sdk/safetensors.hpp"

namespace mstar::tiny_codec {
namespace {

using sdk::InvalidArgument;
using sdk::NotFound;

std::vector<char> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NotFound("cannot open " + path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw InvalidArgument("cannot read " + path);
  return bytes;
}

}  // namespace

nlohmann::json ReadJsonFile(const std::string& path) {
  std::vector<char> bytes = ReadBytes(path);
  nlohmann::json doc = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (doc.is_discarded()) throw InvalidArgument(path + ": not valid JSON");
  return doc;
}

std::map<std::string, at::Tensor> ReadSafetensors(const std::string& path) {
  // The SDK reader maps and validates the file (header, dtypes, offsets, sizes).
  sdk::Safetensors file = sdk::Safetensors::Open(path);
  std::map<std::string, at::Tensor> tensors;
  for (const auto& [name, info] : file.tensors()) {
    if (info.dtype != "F32")
      throw InvalidArgument(path + ": tensor '" + name + "': dtype " + info.dtype +
                            " (only F32 is read)");
    at::Tensor t = at::empty(info.shape, at::TensorOptions().dtype(at::kFloat));
    if (info.bytes > 0) std::memcpy(t.data_ptr<float>(), info.data, info.bytes);
    tensors.emplace(name, std::move(t));
  }
  return tensors;
}

}  // namespace mstar::tiny_codec

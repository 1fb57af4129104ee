// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "weights_file.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "mstar/sdk/error.hpp"

namespace mstar::tiny_codec {
namespace {

namespace fs = std::filesystem;
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

std::string ResolveWeightsDir(const std::string& configured, const char* base_dir) {
  fs::path path(configured);
  if (path.is_absolute() || fs::is_directory(path)) return path.string();
  std::string tried = fs::absolute(path).string();
  if (base_dir != nullptr && *base_dir != '\0') {
    fs::path beside = fs::path(base_dir) / path;
    if (fs::is_directory(beside)) return beside.string();
    tried += " or " + fs::absolute(beside).string();
  }
  throw NotFound("weights directory '" + configured + "' not found (tried " + tried +
                 "); run scripts/make-tiny-weights to create the tiny models' weights");
}

nlohmann::json ReadJsonFile(const std::string& path) {
  std::vector<char> bytes = ReadBytes(path);
  nlohmann::json doc = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (doc.is_discarded()) throw InvalidArgument(path + ": not valid JSON");
  return doc;
}

std::map<std::string, at::Tensor> ReadSafetensors(const std::string& path) {
  std::vector<char> bytes = ReadBytes(path);
  if (bytes.size() < 8) throw InvalidArgument(path + ": too short for a safetensors header");
  uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i)
    header_len |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  if (header_len > bytes.size() - 8)
    throw InvalidArgument(path + ": header length " + std::to_string(header_len) +
                          " runs past the end of the file");
  nlohmann::json header = nlohmann::json::parse(
      bytes.begin() + 8, bytes.begin() + 8 + static_cast<int64_t>(header_len), nullptr, false);
  if (header.is_discarded() || !header.is_object())
    throw InvalidArgument(path + ": the header is not a JSON object");
  const char* data = bytes.data() + 8 + header_len;
  const uint64_t data_size = bytes.size() - 8 - header_len;

  std::map<std::string, at::Tensor> tensors;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    std::string where = path + ": tensor '" + name + "'";
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
        !entry.contains("data_offsets"))
      throw InvalidArgument(where + ": expected {dtype, shape, data_offsets}");
    if (entry["dtype"] != "F32")
      throw InvalidArgument(where + ": dtype " + entry["dtype"].dump() + " (only F32 is read)");
    std::vector<int64_t> shape = entry["shape"].get<std::vector<int64_t>>();
    std::vector<uint64_t> offsets = entry["data_offsets"].get<std::vector<uint64_t>>();
    int64_t count = 1;
    for (int64_t d : shape) {
      if (d < 0) throw InvalidArgument(where + ": negative dimension");
      count *= d;
    }
    if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > data_size)
      throw InvalidArgument(where + ": data_offsets out of range");
    if (offsets[1] - offsets[0] != static_cast<uint64_t>(count) * sizeof(float))
      throw InvalidArgument(where + ": data_offsets hold " +
                            std::to_string(offsets[1] - offsets[0]) +
                            " bytes but the shape needs " + std::to_string(count * 4));
    at::Tensor t = at::empty(shape, at::TensorOptions().dtype(at::kFloat));
    if (count > 0) std::memcpy(t.data_ptr<float>(), data + offsets[0], offsets[1] - offsets[0]);
    tensors.emplace(name, std::move(t));
  }
  return tensors;
}

}  // namespace mstar::tiny_codec

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// SafetensorsWriter: builds a standard .safetensors file in memory. The layout is the one the
// Hugging Face `safetensors` library writes and reads:
//   8 bytes   little-endian uint64 N, the header's length
//   N bytes   a JSON object: {"__metadata__": {...}, "NAME": {"dtype": "F32", "shape": [...],
//             "data_offsets": [begin, end]}, ...}, padded with spaces so that 8 + N is a
//             multiple of 8
//   the data  every tensor's bytes, little-endian, at its offsets (relative to the data start)
// Tensors are laid out in the order they are added; the header lists them sorted by name (JSON
// objects are unordered; sorting makes the bytes reproducible). Only float32 is written.
//
// Not thread-safe. Nothing here fails except Add with a duplicate name or a size mismatch, which
// throws std::invalid_argument naming the tensor.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mstar::tools {

class SafetensorsWriter {
 public:
  // Adds a float32 tensor; values.size() must equal the product of shape.
  void Add(const std::string& name, std::vector<int64_t> shape, std::vector<float> values);
  // A string entry of "__metadata__" (e.g. {"format": "pt"}, which Hugging Face expects).
  void SetMetadata(const std::string& key, const std::string& value) { metadata_[key] = value; }

  // The whole file.
  std::vector<uint8_t> Serialize() const;

 private:
  struct Entry {
    std::string name;
    std::vector<int64_t> shape;
    std::vector<float> values;
  };
  std::vector<Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

// s as a JSON string literal (quotes and escapes included).
std::string JsonString(const std::string& s);

}  // namespace mstar::tools

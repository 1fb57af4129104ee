// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Safetensors: reads `.safetensors` weights without copying (https://github.com/huggingface/
// safetensors: an 8-byte little-endian header length, a JSON header mapping each tensor name to
// {dtype, shape, data_offsets}, then the data). Open accepts
//   - a `.safetensors` file,
//   - a sharded set's `model.safetensors.index.json` ({"weight_map": {name: shard file}}),
//   - a directory holding either `model.safetensors.index.json` or `model.safetensors`.
// Every file is memory-mapped and validated before use: the header length lies within the file,
// the header is a JSON object, every dtype is known, data_offsets lie within the data section and
// do not overlap, and shape product x dtype size equals the byte length. Each problem throws
// mstar::sdk::Error (INVALID_ARGUMENT; NOT_FOUND for a missing file or tensor) whose message names
// the file and, where there is one, the tensor.
//
// Ownership: a Safetensors owns its mappings; SafeTensorInfo::data points into them (or, for a
// tensor not aligned for its dtype in the file, as older writers left some, into an aligned copy
// it owns) and is valid while the Safetensors lives. Threading: immutable after Open; any thread
// may read it.
// Requires nlohmann-json (header-only). No LibTorch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "mstar/sdk/error.hpp"
#include "mstar/sdk/mapped_file.hpp"

namespace mstar::sdk {

// Bytes per element of a safetensors dtype name ("F32", "BF16", ...); 0 when unknown.
inline uint64_t SafetensorsDTypeSize(const std::string& dtype) {
  static const std::map<std::string, uint64_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"I64", 8}, {"U64", 8},     {"F64", 8}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

inline std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// One tensor of a safetensors file.
struct SafeTensorInfo {
  std::string name;
  std::string dtype;           // safetensors dtype name: "F32", "F16", "BF16", "I64", ...
  std::vector<int64_t> shape;  // empty for a scalar
  const void* data = nullptr;  // into the file's mapping; nullptr when bytes == 0
  uint64_t bytes = 0;
  std::string file;  // the file it lives in (for messages)

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

class Safetensors {
 public:
  // Opens a file, an index or a directory (see above).
  static Safetensors Open(const std::string& path) {
    namespace fs = std::filesystem;
    Safetensors out;
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      fs::path dir(path);
      if (fs::exists(dir / "model.safetensors.index.json")) {
        out.LoadIndex((dir / "model.safetensors.index.json").string());
      } else if (fs::exists(dir / "model.safetensors")) {
        out.LoadFile((dir / "model.safetensors").string(), nullptr);
      } else {
        throw NotFound(path + ": no model.safetensors or model.safetensors.index.json");
      }
    } else if (path.size() >= 11 && path.compare(path.size() - 11, 11, ".index.json") == 0) {
      out.LoadIndex(path);
    } else {
      out.LoadFile(path, nullptr);
    }
    return out;
  }

  const std::map<std::string, SafeTensorInfo>& tensors() const { return tensors_; }
  bool contains(const std::string& name) const { return tensors_.count(name) > 0; }
  // The tensor called name; NOT_FOUND naming the files searched when absent.
  const SafeTensorInfo& Get(const std::string& name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) throw NotFound(where_ + ": no tensor '" + name + "'");
    return it->second;
  }
  // Get, then checks dtype and shape; INVALID_ARGUMENT naming the file, tensor and both values.
  const SafeTensorInfo& Require(const std::string& name, const std::string& dtype,
                                const std::vector<int64_t>& shape) const {
    const SafeTensorInfo& t = Get(name);
    if (t.dtype != dtype) {
      throw InvalidArgument(t.file + ": tensor '" + name + "' has dtype " + t.dtype +
                            ", expected " + dtype);
    }
    if (t.shape != shape) {
      throw InvalidArgument(t.file + ": tensor '" + name + "' has shape " + ShapeString(t.shape) +
                            ", expected " + ShapeString(shape));
    }
    return t;
  }
  // The file or index Open was given (for messages).
  const std::string& where() const { return where_; }

 private:
  // The largest JSON header read (the format's reference reader's limit): a file that claims a
  // larger one is refused before its header is parsed.
  static constexpr uint64_t kMaxHeaderBytes = 100'000'000;

  void LoadIndex(const std::string& index_path) {
    where_ = index_path;
    std::ifstream in(index_path);
    if (!in) throw NotFound(index_path + ": cannot open");
    nlohmann::json index = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
      throw InvalidArgument(index_path + ": not a safetensors index (no \"weight_map\" object)");
    }
    std::map<std::string, std::vector<std::string>> by_shard;  // shard -> tensors it must hold
    for (const auto& [name, shard] : index["weight_map"].items()) {
      if (!shard.is_string()) {
        throw InvalidArgument(index_path + ": weight_map entry '" + name + "' is not a file name");
      }
      by_shard[shard.get<std::string>()].push_back(name);
    }
    std::filesystem::path dir = std::filesystem::path(index_path).parent_path();
    for (const auto& [shard, names] : by_shard) {
      // A shard is a file beside the index: a name that leads elsewhere is refused.
      const std::filesystem::path name(shard);
      if (shard.empty() || name.is_absolute() || name.has_parent_path() || shard == ".." ||
          shard == ".") {
        throw InvalidArgument(index_path + ": weight_map names shard '" + shard +
                              "', which is not a file name beside the index");
      }
      std::string shard_path = (dir / shard).string();
      LoadFile(shard_path, &names);
    }
  }

  // Maps and validates one file; with expected, every listed tensor must be in it.
  void LoadFile(const std::string& path, const std::vector<std::string>* expected) {
    if (where_.empty()) where_ = path;
    auto file = std::make_shared<MappedFile>(MappedFile::Open(path));
    const uint64_t size = file->size();
    if (size < 8) throw InvalidArgument(path + ": truncated (" + std::to_string(size) + " bytes)");
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | file->data()[i];
    if (header_len > kMaxHeaderBytes) {
      throw InvalidArgument(path + ": bad header: header length " + std::to_string(header_len) +
                            " exceeds " + std::to_string(kMaxHeaderBytes) + " bytes");
    }
    if (header_len > size - 8) {
      throw InvalidArgument(path + ": truncated or bad header: header length " +
                            std::to_string(header_len) + " exceeds the file (" +
                            std::to_string(size) + " bytes)");
    }
    const char* header_begin = reinterpret_cast<const char*>(file->data() + 8);
    // A name given twice would keep only its last entry (unchecked), so the parse refuses it.
    std::set<std::string> names;
    std::string repeated;
    int depth = 0;
    nlohmann::json::parser_callback_t unique_names = [&](int, nlohmann::json::parse_event_t event,
                                                         nlohmann::json& parsed) {
      using Event = nlohmann::json::parse_event_t;
      if (event == Event::object_start) ++depth;
      if (event == Event::object_end) --depth;
      if (event == Event::key && depth == 1 && !names.insert(parsed.get<std::string>()).second &&
          repeated.empty())
        repeated = parsed.get<std::string>();
      return true;
    };
    nlohmann::json header =
        nlohmann::json::parse(header_begin, header_begin + header_len, unique_names, false);
    if (!repeated.empty())
      throw InvalidArgument(path + ": bad header: tensor '" + repeated + "' is listed twice");
    if (!header.is_object()) throw InvalidArgument(path + ": bad header: not a JSON object");
    const uint8_t* data = file->data() + 8 + header_len;
    const uint64_t data_size = size - 8 - header_len;

    std::vector<std::pair<std::pair<uint64_t, uint64_t>, std::string>> ranges;
    for (const auto& [name, entry] : header.items()) {
      if (name == "__metadata__") continue;
      SafeTensorInfo t = ParseEntry(path, name, entry);
      const auto& offsets = entry["data_offsets"];
      uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
      if (end > data_size) {
        throw InvalidArgument(path + ": truncated: tensor '" + name + "' ends at byte " +
                              std::to_string(end) + " of a " + std::to_string(data_size) +
                              "-byte data section");
      }
      t.data = t.bytes == 0 ? nullptr : data + begin;
      // Today's writer pads the header to 8 bytes and sorts tensors by dtype size, so each
      // starts aligned for its elements. Older writers did not pad: such a tensor is copied
      // into aligned memory, since a pointer that is not could not be read as its dtype's type.
      if (t.bytes != 0 && (8 + header_len + begin) % SafetensorsDTypeSize(t.dtype) != 0) {
        auto copy = std::make_shared<std::vector<uint8_t>>(data + begin, data + begin + t.bytes);
        t.data = copy->data();  // operator new's alignment holds any dtype's
        copies_.push_back(std::move(copy));
      }
      if (tensors_.count(name) > 0) {
        throw InvalidArgument(path + ": tensor '" + name + "' also in " + tensors_[name].file);
      }
      if (end > begin) ranges.push_back({{begin, end}, name});  // an empty tensor holds no bytes
      tensors_.emplace(name, std::move(t));
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i) {
      if (ranges[i].first.first < ranges[i - 1].first.second) {
        throw InvalidArgument(path + ": bad header: tensors '" + ranges[i - 1].second + "' and '" +
                              ranges[i].second + "' overlap");
      }
    }
    if (expected != nullptr) {
      for (const std::string& name : *expected) {
        auto it = tensors_.find(name);
        if (it == tensors_.end() || it->second.file != path) {
          throw NotFound(path + ": no tensor '" + name + "' (the index " + where_ +
                         " places it here)");
        }
      }
    }
    files_.push_back(std::move(file));
  }

  static SafeTensorInfo ParseEntry(const std::string& path, const std::string& name,
                                   const nlohmann::json& entry) {
    const std::string what = path + ": bad header: tensor '" + name + "'";
    if (!entry.is_object()) throw InvalidArgument(what + " is not an object");
    SafeTensorInfo t;
    t.name = name;
    t.file = path;
    if (!entry.contains("dtype") || !entry["dtype"].is_string())
      throw InvalidArgument(what + " has no dtype");
    t.dtype = entry["dtype"].get<std::string>();
    uint64_t element = SafetensorsDTypeSize(t.dtype);
    if (element == 0) throw InvalidArgument(what + " has unknown dtype '" + t.dtype + "'");
    if (!entry.contains("shape") || !entry["shape"].is_array())
      throw InvalidArgument(what + " has no shape");
    uint64_t count = 1;
    for (const auto& d : entry["shape"]) {
      if (!d.is_number_unsigned()) throw InvalidArgument(what + " has a bad shape");
      uint64_t dim = d.get<uint64_t>();
      if (dim > (uint64_t{1} << 48) || (dim != 0 && count > (uint64_t{1} << 56) / dim))
        throw InvalidArgument(what + " has a shape too large");
      count *= dim;
      t.shape.push_back(static_cast<int64_t>(dim));
    }
    const auto& offsets = entry.contains("data_offsets") ? entry["data_offsets"] : nlohmann::json();
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
      throw InvalidArgument(what + " has no data_offsets [begin, end]");
    }
    uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    if (end < begin) throw InvalidArgument(what + " has data_offsets that end before they begin");
    t.bytes = end - begin;
    if (t.bytes != count * element) {
      throw InvalidArgument(what + " holds " + std::to_string(t.bytes) + " bytes, but " + t.dtype +
                            " " + ShapeString(t.shape) + " needs " +
                            std::to_string(count * element));
    }
    return t;
  }

  std::string where_;
  std::vector<std::shared_ptr<MappedFile>> files_;
  // Tensors not aligned for their dtype in their file, copied (shared by copies of this object,
  // as the mappings are).
  std::vector<std::shared_ptr<std::vector<uint8_t>>> copies_;
  std::map<std::string, SafeTensorInfo> tensors_;
};

}  // namespace mstar::sdk

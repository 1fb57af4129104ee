// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "model/checkpoint_identity.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include "config/toml_reader.h"
#include "core/diagnostic.h"
#include "core/file_bytes.h"
#include "core/sha256.h"

namespace mstar {
namespace fs = std::filesystem;
namespace {

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kConfigName = "config.json";

// Appends a length-prefixed field, so no two descriptions concatenate to the same bytes.
void AppendField(std::string* out, const std::string& field) {
  *out += std::to_string(field.size());
  *out += ':';
  *out += field;
}

// The sorted (name, size) list of the directory's *.safetensors files.
Result<std::vector<std::pair<std::string, uintmax_t>>> ListShards(const fs::path& dir) {
  std::vector<std::pair<std::string, uintmax_t>> shards;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".safetensors" || !it->is_regular_file(ec)) continue;
    uintmax_t size = it->file_size(ec);
    if (ec) break;
    shards.emplace_back(it->path().filename().string(), size);
  }
  if (ec) return IoError("checkpoint: cannot list " + dir.string() + ": " + ec.message());
  std::sort(shards.begin(), shards.end());
  return shards;
}

Status AppendConfig(const fs::path& dir, std::string* description) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / kConfigName, ec)) return Status::Ok();
  MSTAR_ASSIGN_OR_RETURN(std::string config, ReadFileBytes((dir / kConfigName).string()));
  AppendField(description, kConfigName);
  AppendField(description, config);
  return Status::Ok();
}

void AppendShards(const std::vector<std::pair<std::string, uintmax_t>>& shards,
                  std::string* description) {
  AppendField(description, "shards");
  for (const auto& [name, size] : shards) {
    AppendField(description, name);
    AppendField(description, std::to_string(size));
  }
}

Result<std::string> DescribeDirectory(const fs::path& dir) {
  std::string description;
  std::error_code ec;
  if (fs::is_regular_file(dir / kIndexName, ec)) {
    MSTAR_ASSIGN_OR_RETURN(std::string index, ReadFileBytes((dir / kIndexName).string()));
    AppendField(&description, "index");
    AppendField(&description, index);
  } else {
    MSTAR_ASSIGN_OR_RETURN(auto shards, ListShards(dir));
    if (shards.empty())
      return NotFound("checkpoint: " + dir.string() + " holds no .safetensors files");
    AppendShards(shards, &description);
  }
  MSTAR_RETURN_IF_ERROR(AppendConfig(dir, &description));
  return description;
}

Result<std::string> DescribeFile(const fs::path& file) {
  if (file.extension() != ".safetensors")
    return NotFound("checkpoint: " + file.string() + " is not a .safetensors file");
  std::error_code ec;
  uintmax_t size = fs::file_size(file, ec);
  if (ec) return IoError("checkpoint: cannot stat " + file.string() + ": " + ec.message());
  std::string description;
  AppendShards({{file.filename().string(), size}}, &description);
  MSTAR_RETURN_IF_ERROR(AppendConfig(file.parent_path(), &description));
  return description;
}

std::vector<uint8_t> Digest(const std::string& description) {
  Sha256Digest digest = Sha256(description.data(), description.size());
  return std::vector<uint8_t>(digest.begin(), digest.end());
}

// As the plugins resolve a configured path: as given when absolute or present from the working
// directory, else under the manifest's directory.
std::string Resolve(const std::string& path, const std::string& base_dir) {
  std::error_code ec;
  if (fs::path(path).is_absolute() || fs::exists(path, ec) || base_dir.empty()) return path;
  return (fs::path(base_dir) / path).string();
}

// A node config's `weights` string, or "" when it has none.
std::string NodeWeights(const NodeSpec& node) {
  if (node.config == nullptr) return "";
  const toml::node* weights = node.config->table().get("weights");
  if (weights == nullptr || !weights->is_string()) return "";
  return weights->value<std::string>().value_or("");
}

}  // namespace

Result<std::vector<uint8_t>> CheckpointIdentity(const std::string& path) {
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return NotFound("checkpoint: " + path + " does not exist");
  Result<std::string> description =
      fs::is_directory(status) ? DescribeDirectory(path) : DescribeFile(path);
  if (!description.ok()) return description.status();
  return Digest(description.value());
}

Result<std::vector<uint8_t>> ModelCheckpointIdentity(const ModelSpec& model) {
  if (!model.checkpoint.empty()) {
    Result<std::vector<uint8_t>> identity =
        CheckpointIdentity(Resolve(model.checkpoint, model.base_dir));
    if (!identity.ok()) {
      return identity.status().WithContext(
          Diagnostic{model.checkpoint_where, "", "model.checkpoint"}.ToString());
    }
    return identity;
  }
  std::string combined;
  for (const auto& [name, node] : model.nodes) {  // std::map: name order
    const std::string weights = NodeWeights(node);
    if (weights.empty()) continue;
    Result<std::vector<uint8_t>> identity = CheckpointIdentity(Resolve(weights, model.base_dir));
    if (!identity.ok()) {
      const std::string key = "nodes." + name + ".config.weights";
      return identity.status().WithContext(
          Diagnostic{LocationOf(*node.config->table().get("weights"), model.path), "", key}
              .ToString());
    }
    AppendField(&combined, name);
    AppendField(&combined, std::string(identity->begin(), identity->end()));
  }
  if (combined.empty()) return std::vector<uint8_t>{};
  return Digest(combined);
}

}  // namespace mstar

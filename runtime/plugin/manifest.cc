// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "plugin/manifest.h"

#include <filesystem>
#include <regex>
#include <set>

#include "config/toml_reader.h"
#include "mstar/abi.h"

namespace mstar {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMaxAbiMajor = 1000;
constexpr int64_t kMaxAbiMinor = 100000;

// Whether path, lexically normal, is base or lies below it.
bool IsWithin(const fs::path& path, const fs::path& base) {
  fs::path relative = path.lexically_relative(base);
  return !relative.empty() && *relative.begin() != "..";
}

bool IsPluginName(const std::string& name) {
  static const std::regex pattern("[a-z0-9][a-z0-9_.-]{0,63}");
  return std::regex_match(name, pattern);
}

// std::regex matches recursively, about one frame per character a `+` takes: a hostile string
// of a megabyte would overflow the stack. Longer than any real version is refused unmatched.
constexpr size_t kMaxVersionLength = 128;

bool IsVersion(const std::string& version) {
  if (version.size() > kMaxVersionLength) return false;
  static const std::regex pattern(
      R"((0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)([-+][0-9A-Za-z.+-]+)?)");
  return std::regex_match(version, pattern);
}

bool IsTorchVersion(const std::string& version) {
  if (version.size() > kMaxVersionLength) return false;
  static const std::regex pattern(R"([0-9]+\.[0-9]+(\.[0-9]+)?)");
  return std::regex_match(version, pattern);
}

bool IsSha256(std::string& digest) {
  static const std::regex pattern("[0-9a-fA-F]{64}");
  if (!std::regex_match(digest, pattern)) return false;
  for (char& c : digest) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return true;
}

void ReadPluginTable(TableReader& top, PluginManifest& m, Diagnostics& diagnostics) {
  const toml::table* table = top.Table("plugin", Presence::kRequired);
  if (table == nullptr) return;
  TableReader plugin(*table, "plugin", top.path(), &diagnostics);
  m.plugin_where = top.Where("plugin");
  m.name_where = plugin.Where("name");
  m.library_where = plugin.Where("library");
  m.sha256_where = plugin.Where("sha256");
  if (auto name = plugin.String("name", Presence::kRequired)) {
    if (!IsPluginName(*name)) {
      plugin.Error("name",
                   "'" + *name +
                       "' is not a valid plugin name (lower-case letters, "
                       "digits, '_', '-', '.', at most 64, starting with a letter or digit)");
    }
    m.name = *name;
  }
  if (auto version = plugin.String("version", Presence::kRequired)) {
    if (!IsVersion(*version)) {
      plugin.Error("version", "'" + *version + "' is not a semantic version like 1.2.3");
    }
    m.version = *version;
  }
  if (auto library = plugin.String("library", Presence::kRequired)) {
    fs::path library_path(*library);
    if (library->empty()) {
      plugin.Error("library", "must name the library file");
    } else if (library_path.is_absolute()) {
      plugin.Error("library", "must be relative to the manifest's directory, not absolute");
    }
    m.library = *library;
    m.library_path = (fs::path(m.path).parent_path() / library_path).lexically_normal().string();
    if (!library->empty() && !library_path.is_absolute()) {
      if (Status inside = CheckLibraryInside(m.path, m.library_path); !inside.ok())
        plugin.Error("library", inside.message());
    }
  }
  m.description = plugin.String("description", Presence::kOptional).value_or("");
  if (auto sha = plugin.String("sha256", Presence::kOptional)) {
    if (!IsSha256(*sha)) plugin.Error("sha256", "must be 64 hexadecimal digits");
    m.sha256 = *sha;
  }
  plugin.Finish();
}

void ReadAbiTable(TableReader& top, PluginManifest& m, Diagnostics& diagnostics) {
  const toml::table* table = top.Table("abi", Presence::kRequired);
  if (table == nullptr) return;
  TableReader abi(*table, "abi", top.path(), &diagnostics);
  m.abi_where = top.Where("abi");
  if (auto major = abi.Int("major", Presence::kRequired)) {
    if (*major < 1 || *major > kMaxAbiMajor) {
      abi.Error("major", "must be an ABI major version from 1 to " + std::to_string(kMaxAbiMajor) +
                             ", not " + std::to_string(*major));
    }
    m.abi_major = static_cast<uint32_t>(*major);
  }
  if (auto minor = abi.Int("min_minor", Presence::kRequired)) {
    if (*minor < 0 || *minor > kMaxAbiMinor) {
      abi.Error("min_minor", "must be an ABI minor version from 0 to " +
                                 std::to_string(kMaxAbiMinor) + ", not " + std::to_string(*minor));
    }
    m.abi_min_minor = static_cast<uint32_t>(*minor);
  }
  abi.Finish();
}

void ReadProvides(TableReader& top, PluginManifest& m, Diagnostics& diagnostics) {
  const toml::array* array = top.Array("provides", Presence::kRequired);
  if (array == nullptr) return;
  if (array->empty()) top.Error("provides", "must list at least one [[provides]] entry");
  std::set<std::pair<uint32_t, std::string>> seen;
  for (size_t i = 0; i < array->size(); ++i) {
    std::string key = "provides[" + std::to_string(i) + "]";
    const toml::table* entry = (*array)[i].as_table();
    if (entry == nullptr) {
      diagnostics.push_back({LocationOf((*array)[i], top.path()), key,
                             "expected a table ([[provides]] with kind and name)"});
      continue;
    }
    TableReader reader(*entry, key, top.path(), &diagnostics);
    ProvidedFactory factory;
    factory.where = reader.Where("name");
    if (auto kind = reader.String("kind", Presence::kRequired)) {
      factory.kind = KindFromName(*kind);
      if (factory.kind == 0) {
        reader.Error("kind",
                     "unknown kind '" + *kind + "' (expected submodule, resource, tier or model)");
      }
    }
    if (auto name = reader.String("name", Presence::kRequired)) {
      if (!IsPluginName(*name)) reader.Error("name", "'" + *name + "' is not a valid name");
      factory.name = *name;
    }
    if (reader.Finish() && !seen.insert({factory.kind, factory.name}).second) {
      reader.Error("name", std::string("duplicate ") + KindName(factory.kind) + " '" +
                               factory.name + "' in this manifest");
    }
    m.provides.push_back(std::move(factory));
  }
}

void ReadRequires(TableReader& top, PluginManifest& m, Diagnostics& diagnostics) {
  const toml::table* table = top.Table("requires", Presence::kOptional);
  if (table == nullptr) return;
  TableReader req(*table, "requires", top.path(), &diagnostics);
  m.requires_where = top.Where("requires");
  if (auto torch = req.String("torch", Presence::kOptional)) {
    if (!IsTorchVersion(*torch))
      req.Error("torch", "expected a version like \"2.5\" or \"1.13.1\"");
    m.requires_.torch = *torch;
  }
  m.requires_.torch_cxx11_abi = req.Bool("torch_cxx11_abi", Presence::kOptional);
  if (auto cuda = req.Int("cuda", Presence::kOptional)) {
    if (*cuda < 1) req.Error("cuda", "expected a CUDA major version such as 12");
    m.requires_.cuda = *cuda;
  }
  req.Finish();
}

void ValidateManifest(const toml::table& root, const std::string& path, ManifestParse& out) {
  if (!root.contains("plugin") && !root.contains("abi")) {
    out.is_plugin_manifest = false;
    out.diagnostics.push_back(
        {SourceLocation{path, 0, 0}, "plugin", "not a plugin manifest (no [plugin] table)"});
    return;
  }
  PluginManifest m;
  m.path = path;
  TableReader top(root, "", path, &out.diagnostics);
  top.Format(kPluginManifestFormat, "manifest");
  ReadPluginTable(top, m, out.diagnostics);
  ReadAbiTable(top, m, out.diagnostics);
  ReadProvides(top, m, out.diagnostics);
  ReadRequires(top, m, out.diagnostics);
  top.Finish();
  if (out.diagnostics.empty()) out.manifest = std::move(m);
}

}  // namespace

Status CheckLibraryInside(const std::string& manifest_path, const std::string& library_path) {
  const fs::path dir = fs::absolute(manifest_path).parent_path().lexically_normal();
  const fs::path library = fs::absolute(library_path).lexically_normal();
  const std::string must = "must name a file in the manifest's directory or below it; ";
  if (!IsWithin(library, dir))
    return InvalidArgument(must + library.string() + " is outside " + dir.string());
  std::error_code ec;
  if (!fs::exists(library, ec)) return Status::Ok();  // not built yet: loading reports it
  fs::path real_library = fs::canonical(library, ec);
  if (ec) return Status::Ok();
  fs::path real_dir = fs::canonical(dir, ec);
  if (ec || !IsWithin(real_library, real_dir)) {
    return InvalidArgument(must + library.string() + " is a link to " + real_library.string() +
                           ", outside " + dir.string());
  }
  return Status::Ok();
}

const char* KindName(uint32_t kind) {
  switch (kind) {
    case MSTAR_KIND_SUBMODULE: return "submodule";
    case MSTAR_KIND_RESOURCE: return "resource";
    case MSTAR_KIND_TIER: return "tier";
    case MSTAR_KIND_MODEL: return "model";
    default: break;
  }
  return "unknown";
}

uint32_t KindFromName(std::string_view name) {
  for (uint32_t kind = MSTAR_KIND_SUBMODULE; kind <= MSTAR_KIND_MODEL; ++kind) {
    if (name == KindName(kind)) return kind;
  }
  return 0;
}

ManifestParse ParsePluginManifestText(std::string_view text, const std::string& path) {
  ManifestParse out;
  std::optional<toml::table> root = ParseTomlText(text, path, &out.diagnostics);
  out.is_toml = root.has_value();
  if (root) ValidateManifest(*root, path, out);
  return out;
}

ManifestParse ParsePluginManifestFile(const std::string& path) {
  ManifestParse out;
  std::optional<toml::table> root = ParseTomlFile(path, &out.diagnostics);
  out.is_toml = root.has_value();
  if (root) ValidateManifest(*root, path, out);
  return out;
}

}  // namespace mstar

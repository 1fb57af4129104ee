// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "plugin/discovery.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <system_error>

namespace mstar {
namespace {

namespace fs = std::filesystem;

class Collector {
 public:
  explicit Collector(DiscoveryResult* result) : result_(result) {}

  // Files are reported by the path they were found at; duplicates are recognized by the file
  // they resolve to.
  void AddFile(const fs::path& path, PluginOrigin origin, bool named = false) {
    std::error_code ec;
    std::string found = fs::absolute(path).lexically_normal().string();
    fs::path canonical = fs::weakly_canonical(found, ec);
    const std::string file = ec ? found : canonical.string();
    auto [first, inserted] = seen_.try_emplace(file, result_->candidates.size());
    if (!inserted) {
      // Named itself as well: a file that is no plugin manifest is an error, as it would be
      // had it been named first.
      if (named) result_->candidates[first->second].named = true;
      result_->skipped.push_back({found, "already found earlier in the search order", true});
      return;
    }
    result_->candidates.push_back({found, origin, named});
  }

  // Scans a root directory (and its immediate subdirectories) for *.toml files.
  void AddRoot(const fs::path& root, PluginOrigin origin) {
    std::error_code ec;
    if (!fs::exists(root, ec)) {
      result_->skipped.push_back(
          {root.string(), std::string("plugin root does not exist (") + OriginName(origin) + ")"});
      return;
    }
    if (!fs::is_directory(root, ec)) {
      result_->skipped.push_back({root.string(), "plugin root is not a directory"});
      return;
    }
    std::vector<fs::path> files;
    ListManifests(root, files);
    std::vector<fs::path> subdirs;
    ForEachEntry(root, [&](const fs::directory_entry& entry) {
      std::error_code entry_ec;  // a broken link is no directory; it is not the root's error
      if (entry.is_directory(entry_ec)) subdirs.push_back(entry.path());
    });
    std::sort(subdirs.begin(), subdirs.end());
    for (const fs::path& dir : subdirs) ListManifests(dir, files);
    for (const fs::path& file : files) AddFile(file, origin);
  }

 private:
  // Calls visit with each entry of dir; an error listing it is reported (naming dir) and ends
  // the listing, without throwing.
  template <typename Visit>
  void ForEachEntry(const fs::path& dir, Visit visit) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) visit(*it);
    if (ec) result_->skipped.push_back({dir.string(), "cannot list directory: " + ec.message()});
  }

  // The *.toml files in dir, sorted; a .toml entry that cannot be read as a file (a broken or
  // looping link, a FIFO, a socket) is reported under its own name and skipped.
  void ListManifests(const fs::path& dir, std::vector<fs::path>& out) {
    std::vector<fs::path> found;
    ForEachEntry(dir, [&](const fs::directory_entry& entry) {
      if (entry.path().extension() != ".toml") return;
      std::error_code entry_ec;
      if (entry.is_regular_file(entry_ec)) {
        found.push_back(entry.path());
      } else if (entry_ec) {
        result_->skipped.push_back({entry.path().string(), "cannot read: " + entry_ec.message()});
      } else if (!entry.is_directory(entry_ec) && !entry_ec) {  // a directory is searched
        result_->skipped.push_back({entry.path().string(), "not a regular file"});
      }
    });
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }

  DiscoveryResult* result_;
  std::map<std::string, size_t> seen_;  // resolved file -> its index in candidates
};

std::vector<std::string> SplitPathList(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream stream(list);
  std::string item;
  while (std::getline(stream, item, ':')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace

const char* OriginName(PluginOrigin origin) {
  switch (origin) {
    case PluginOrigin::kExplicit: return "explicit path";
    case PluginOrigin::kPluginPath: return "--plugin-path";
    case PluginOrigin::kEnvironment: return "MSTAR_PLUGIN_PATH";
    case PluginOrigin::kConfigRoot: return "runtime config";
    case PluginOrigin::kInstallDir: return "install directory";
  }
  return "unknown";
}

Status CheckPluginPaths(const std::vector<std::string>& plugin_paths) {
  for (const std::string& path : plugin_paths) {
    std::error_code ec;
    if (path.empty()) return InvalidArgument("--plugin-path: an empty path names no directory");
    if (!fs::exists(path, ec))
      return InvalidArgument("--plugin-path " + path + ": no such directory");
    if (!fs::is_directory(path, ec))
      return InvalidArgument("--plugin-path " + path + ": not a directory");
  }
  return Status::Ok();
}

std::optional<std::string> DefaultInstallDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  return (exe.parent_path().parent_path() / "lib" / "mstar" / "plugins").string();
}

DiscoveryResult DiscoverPlugins(const DiscoveryOptions& options) {
  DiscoveryResult result;
  Collector collector(&result);
  std::error_code ec;
  for (const std::string& path : options.explicit_paths) {
    if (fs::is_directory(path, ec)) {
      collector.AddRoot(path, PluginOrigin::kExplicit);
    } else if (fs::is_regular_file(path, ec)) {
      collector.AddFile(path, PluginOrigin::kExplicit, /*named=*/true);
    } else if (fs::exists(path, ec)) {  // a FIFO would block the reader
      result.skipped.push_back({path, "not a regular file"});
    } else {
      result.skipped.push_back({path.empty() ? "\"\"" : path, path.empty()
                                                                  ? "an empty path names no file"
                                                                  : "no such file or directory"});
    }
  }
  for (const std::string& root : options.plugin_paths)
    collector.AddRoot(root, PluginOrigin::kPluginPath);
  if (options.use_environment) {
    if (const char* env = secure_getenv("MSTAR_PLUGIN_PATH"); env != nullptr) {
      for (const std::string& root : SplitPathList(env)) {
        collector.AddRoot(root, PluginOrigin::kEnvironment);
      }
    }
  }
  for (const std::string& root : options.config_roots)
    collector.AddRoot(root, PluginOrigin::kConfigRoot);
  if (options.use_install_dir) {
    std::optional<std::string> install =
        options.install_dir ? options.install_dir : DefaultInstallDir();
    if (install && fs::is_directory(*install, ec))
      collector.AddRoot(*install, PluginOrigin::kInstallDir);
  }
  return result;
}

}  // namespace mstar

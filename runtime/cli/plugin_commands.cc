// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// `mstar plugins list | inspect | validate`.
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/plugin_report.h"
#include "core/logging.h"
#include "plugin/manifest.h"
#include "plugin/registry.h"

namespace mstar::cli {
namespace {

struct SearchFlags {
  std::vector<std::string> plugin_paths;
  bool no_default_paths = false;
  bool json = false;
};

void AddSearchFlags(CLI::App* command, SearchFlags* flags) {
  command
      ->add_option("--plugin-path", flags->plugin_paths,
                   "Directory to search for plugin manifests (repeatable; searched before "
                   "$MSTAR_PLUGIN_PATH and the install directory)")
      ->allow_extra_args(false);
  command->add_flag("--no-default-paths", flags->no_default_paths,
                    "Search only --plugin-path and the runtime config's roots: ignore "
                    "$MSTAR_PLUGIN_PATH and the install directory");
  command->add_flag("--json", flags->json, "Print JSON on stdout instead of a table");
}

PluginRegistry LoadRegistry(const SearchFlags& flags, const Globals& globals) {
  PluginRegistry::Options options;
  options.discovery.plugin_paths = flags.plugin_paths;
  options.discovery.config_roots = globals.config.plugin_roots;
  options.discovery.use_environment = !flags.no_default_paths;
  options.discovery.use_install_dir = !flags.no_default_paths;
  return PluginRegistry::Load(options);
}

// Prints why the --plugin-path flags are bad input; false when they are.
bool PluginPathsExist(const SearchFlags& flags, const char* command) {
  Status status = CheckPluginPaths(flags.plugin_paths);
  if (!status.ok()) std::cerr << "mstar plugins " << command << ": " << status.message() << "\n";
  return status.ok();
}

int List(const SearchFlags& flags, const Globals& globals) {
  if (!PluginPathsExist(flags, "list")) return kExitInvalid;
  PluginRegistry registry = LoadRegistry(flags, globals);
  if (flags.json) {
    std::cout << JsonText(RegistryJson(registry)) << "\n";
  } else {
    PrintRegistry(registry, std::cout);
  }
  return kExitOk;
}

// For `inspect PATH.toml`: the plugin's name from its manifest, with the manifest's directory
// searched first; "" (after printing why) when the file is not a readable plugin manifest.
std::string NameFromManifest(const std::string& path, SearchFlags* flags) {
  ManifestParse parse = ParsePluginManifestFile(path);
  if (!parse.manifest) {
    for (const Diagnostic& d : parse.diagnostics) std::cerr << d.ToString() << "\n";
    return "";
  }
  flags->plugin_paths.insert(flags->plugin_paths.begin(),
                             std::filesystem::path(parse.manifest->path).parent_path().string());
  return parse.manifest->name;
}

// True when path names a manifest rather than a plugin (a name has neither '/' nor ".toml").
bool IsManifestPath(const std::string& path) {
  return path.find('/') != std::string::npos ||
         (path.size() > 5 && path.compare(path.size() - 5, 5, ".toml") == 0);
}

int Inspect(SearchFlags flags, const Globals& globals, const std::string& what) {
  if (!PluginPathsExist(flags, "inspect")) return kExitInvalid;
  const bool by_path = IsManifestPath(what);
  std::string name = what;
  if (by_path && (name = NameFromManifest(what, &flags)).empty()) return kExitInvalid;
  PluginRegistry registry = LoadRegistry(flags, globals);
  if (const LoadedPlugin* plugin = registry.FindPlugin(name)) {
    std::error_code ec;
    if (by_path && !std::filesystem::equivalent(plugin->library->manifest().path, what, ec)) {
      std::cerr << "mstar plugins inspect: " << what << " provides plugin '" << name
                << "', but the plugin of that name was loaded from "
                << plugin->library->manifest().path << "\n";
      return kExitInvalid;
    }
    if (flags.json) {
      std::cout << JsonText(PluginDetailsJson(*plugin)) << "\n";
    } else {
      PrintPluginDetails(*plugin, std::cout);
    }
    return kExitOk;
  }
  for (const RejectedPlugin& rejected : registry.rejected()) {
    if (rejected.name != name) continue;
    std::cerr << "plugin '" << name << "' was found but rejected:\n";
    for (const Diagnostic& d : rejected.problems) std::cerr << d.ToString() << "\n";
    return kExitInvalid;
  }
  std::cerr << "mstar plugins inspect: no plugin named '" << name
            << "' (try `mstar plugins list`)\n";
  return kExitInvalid;
}

// Validates one parsed manifest: what the loader checks before it opens the library ([abi],
// [requires], where the library lies), then (unless manifest_only) loading the library.
Diagnostics ValidateOne(const ManifestParse& parse, bool manifest_only) {
  if (!parse.manifest) return parse.diagnostics;
  Diagnostic error;
  if (!PluginLibrary::CheckManifest(*parse.manifest, LoadOptions{}, &error)) return {error};
  if (manifest_only) return {};
  if (PluginLibrary::Load(*parse.manifest, LoadOptions{}, &error) == nullptr) return {error};
  return {};
}

// A TOML file found in a directory that is not a plugin manifest (a model manifest) is skipped,
// as a plugin root skips it; one named on the command line is an error.
int Validate(const std::vector<std::string>& paths, bool manifest_only) {
  DiscoveryOptions options;
  options.explicit_paths = paths;
  options.use_environment = false;
  options.use_install_dir = false;
  DiscoveryResult found = DiscoverPlugins(options);
  int exit_code = kExitOk;
  for (const SkippedCandidate& skipped : found.skipped) {
    std::cerr << skipped.path << ": " << skipped.reason << "\n";
    if (!skipped.duplicate) exit_code = kExitInvalid;
  }
  size_t validated = 0;
  for (const PluginCandidate& candidate : found.candidates) {
    ManifestParse parse = ParsePluginManifestFile(candidate.manifest_path);
    if (!parse.is_plugin_manifest && !candidate.named) {
      Log().debug("plugins validate: skipped {}: not a plugin manifest", candidate.manifest_path);
      continue;
    }
    ++validated;
    Diagnostics problems = ValidateOne(parse, manifest_only);
    for (const Diagnostic& d : problems) std::cerr << d.ToString() << "\n";
    if (problems.empty()) {
      std::cout << "ok: " << candidate.manifest_path << "\n";
    } else {
      exit_code = kExitInvalid;
    }
  }
  const bool refused_any = exit_code != kExitOk;  // a skip that is an error, or a bad manifest
  if (validated == 0 && !refused_any) {
    std::cerr << "no plugin manifests found\n";
    exit_code = kExitInvalid;
  }
  return exit_code;
}

}  // namespace

void AddPluginCommands(CLI::App& app, const Globals* globals, Action* action) {
  CLI::App* plugins = app.add_subcommand("plugins", "Find, inspect and validate plugins");
  plugins->require_subcommand(1);

  auto list_flags = std::make_shared<SearchFlags>();
  CLI::App* list = plugins->add_subcommand(
      "list",
      "List the plugins found (name, version, what they provide, negotiated ABI, library) "
      "and every rejected candidate with its reason");
  AddSearchFlags(list, list_flags.get());
  list->footer("Examples:\n  mstar plugins list\n  mstar plugins list --plugin-path ./my-plugins");
  list->callback([action, globals, list_flags] {
    *action = [globals, list_flags] { return List(*list_flags, *globals); };
  });

  auto inspect_flags = std::make_shared<SearchFlags>();
  auto name = std::make_shared<std::string>();
  CLI::App* inspect = plugins->add_subcommand(
      "inspect", "Show one plugin: manifest, negotiation, factories and hooks, exported symbols");
  inspect->add_option("PLUGIN", *name, "Plugin name, or the path of its manifest (PLUGIN.toml)")
      ->required();
  AddSearchFlags(inspect, inspect_flags.get());
  inspect->footer(
      "Examples:\n  mstar plugins inspect kv_paged\n  mstar plugins inspect "
      "./my-plugins/mine.toml");
  inspect->callback([action, globals, inspect_flags, name] {
    *action = [globals, inspect_flags, name] { return Inspect(*inspect_flags, *globals, *name); };
  });

  auto paths = std::make_shared<std::vector<std::string>>();
  auto manifest_only = std::make_shared<bool>(false);
  CLI::App* validate = plugins->add_subcommand(
      "validate",
      "Check plugin manifests (and load their libraries). Prints `ok: PATH` on stdout for each "
      "valid one and one `file:line:column: key: message` line per problem on stderr; exits 0 "
      "when all are valid, 2 otherwise");
  validate
      ->add_option("PATH", *paths,
                   "Manifest files, or directories to search (where TOML files that are not "
                   "plugin manifests are skipped)")
      ->required();
  validate->add_flag("--manifest-only", *manifest_only,
                     "Check only the manifests (and their [abi] and [requires] against this "
                     "runtime); do not open the libraries");
  validate->footer(
      "Examples:\n  mstar plugins validate ./my-plugins/mine.toml\n"
      "  mstar plugins validate --manifest-only ./my-plugins");
  validate->callback([action, paths, manifest_only] {
    *action = [paths, manifest_only] { return Validate(*paths, *manifest_only); };
  });
}

}  // namespace mstar::cli

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// `mstar models list | validate`.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "model/checkpoint_identity.h"
#include "model/model_manifest.h"
#include "plugin/registry.h"

namespace mstar::cli {
namespace {

namespace fs = std::filesystem;

// manifests/models of the source tree when running from a build tree, else
// <prefix>/share/mstar/models.
std::string DefaultModelsDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  fs::path prefix = exe.parent_path().parent_path();
  for (const fs::path& candidate :
       {prefix.parent_path() / "manifests" / "models", prefix / "share" / "mstar" / "models"}) {
    if (fs::is_directory(candidate, ec)) return candidate.string();
  }
  return "manifests/models";
}

// A directory that does not exist or cannot be listed is bad input (exit 2).
int List(const std::string& dir) {
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".toml") files.push_back(entry.path());
  }
  if (ec) {
    std::cerr << "mstar models list: --dir " << dir << ": " << ec.message() << "\n";
    return kExitInvalid;
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::cout << "No model manifests in " << dir << ".\n";
    return kExitOk;
  }
  for (const fs::path& file : files) {
    ModelParse parse = ParseModelManifestFile(file.string());
    std::cout << file.stem().string() << "  " << file.string();
    if (parse.model) {
      if (!parse.model->description.empty()) std::cout << "  " << parse.model->description;
    } else {
      std::cout << "  (invalid: " << parse.diagnostics.front().ToString() << ")";
    }
    std::cout << "\n";
  }
  return kExitOk;
}

struct ValidateFlags {
  std::vector<std::string> manifests;
  std::vector<std::string> overrides;
  std::vector<std::string> plugin_paths;
  bool no_plugins = false;
};

int Validate(const ValidateFlags& flags, const Globals& globals) {
  if (Status status = CheckPluginPaths(flags.plugin_paths); !status.ok()) {
    std::cerr << "mstar models validate: " << status.message() << "\n";
    return kExitInvalid;
  }
  std::unique_ptr<PluginRegistry> registry;
  if (!flags.no_plugins) {
    PluginRegistry::Options options;
    options.discovery.plugin_paths = flags.plugin_paths;
    options.discovery.config_roots = globals.config.plugin_roots;
    registry = std::make_unique<PluginRegistry>(PluginRegistry::Load(options));
  }
  int exit_code = kExitOk;
  for (const std::string& manifest : flags.manifests) {
    ModelParse parse =
        ParseModelManifestFile(manifest, flags.overrides, registry.get(), globals.config.device);
    for (const Diagnostic& d : parse.diagnostics) std::cerr << d.ToString() << "\n";
    if (parse.model) {
      // As loading would: the checkpoint (model.checkpoint, else the nodes' weights) is there.
      if (Result<std::vector<uint8_t>> identity = ModelCheckpointIdentity(*parse.model);
          !identity.ok()) {
        std::cerr << identity.status().message() << "\n";
        exit_code = kExitInvalid;
        continue;
      }
      std::cout << "ok: " << manifest << " (model '" << parse.model->name << "', "
                << parse.model->nodes.size() << " nodes, " << parse.model->walks.size()
                << " walks, " << parse.model->partitions.size() << " partitions)\n";
    } else {
      exit_code = kExitInvalid;
    }
  }
  return exit_code;
}

}  // namespace

void AddModelCommands(CLI::App& app, const Globals* globals, Action* action) {
  CLI::App* models = app.add_subcommand("models", "List and validate model manifests");
  models->require_subcommand(1);
  auto dir = std::make_shared<std::string>(DefaultModelsDir());
  CLI::App* list = models->add_subcommand("list", "List the model manifests in a directory");
  list->add_option("--dir", *dir, "Directory of model manifests")->capture_default_str();
  list->footer("Example:\n  mstar models list --dir manifests/models");
  list->callback([action, dir] { *action = [dir] { return List(*dir); }; });

  auto flags = std::make_shared<ValidateFlags>();
  CLI::App* validate = models->add_subcommand(
      "validate",
      "Check model manifests: schema, references, dataflow (inputs produced, no cycle outside a "
      "loop), reachable walks, transitions, streams, that the plugins they name are loaded, and "
      "that the "
      "checkpoint (model.checkpoint, else the nodes' weights) is there. "
      "One `file:line:column: key: message` per problem on stderr; exit 0 when valid, 2 otherwise");
  validate->add_option("MANIFEST", flags->manifests, "Model manifest files")->required();
  validate
      ->add_option("--set", flags->overrides,
                   "Override a manifest value: dotted.key=value (repeatable)")
      ->allow_extra_args(false);
  validate
      ->add_option("--plugin-path", flags->plugin_paths,
                   "Directory to search for plugins (repeatable)")
      ->allow_extra_args(false);
  validate->add_flag("--no-plugins", flags->no_plugins,
                     "Do not load plugins; skip the plugin checks");
  validate->footer(
      "Examples:\n  mstar models validate manifests/models/*.toml\n"
      "  mstar models validate manifests/models/tiny-llm.toml --set "
      "resources.kv.config.num_pages=8");
  validate->callback([action, globals, flags] {
    *action = [globals, flags] { return Validate(*flags, *globals); };
  });
}

}  // namespace mstar::cli

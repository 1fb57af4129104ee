// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// `mstar models list`: the model manifests available to run.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "config/toml_reader.h"

namespace mstar::cli {
namespace {

namespace fs = std::filesystem;

// manifests/models of the source tree when running from a build tree, else
// <prefix>/share/mstar/models.
std::string DefaultModelsDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  fs::path prefix = exe.parent_path().parent_path();
  for (fs::path candidate :
       {prefix.parent_path() / "manifests" / "models", prefix / "share" / "mstar" / "models"}) {
    if (fs::is_directory(candidate, ec)) return candidate.string();
  }
  return "manifests/models";
}

int List(const std::string& dir) {
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".toml") files.push_back(entry.path());
  }
  if (ec) {
    std::cerr << dir << ": " << ec.message() << "\n";
    return kExitFailed;
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::cout << "No model manifests in " << dir << ".\n";
    return kExitOk;
  }
  for (const fs::path& file : files) {
    Diagnostics problems;
    std::optional<toml::table> table = ParseTomlFile(file.string(), &problems);
    std::string description;
    if (table) description = (*table)["model"]["description"].value_or(std::string());
    std::cout << file.stem().string() << "  " << file.string();
    if (!description.empty()) std::cout << "  " << description;
    if (!problems.empty()) std::cout << "  (invalid: " << problems.front().ToString() << ")";
    std::cout << "\n";
  }
  return kExitOk;
}

}  // namespace

void AddModelCommands(CLI::App& app, const Globals* globals, Action* action) {
  (void)globals;
  CLI::App* models = app.add_subcommand("models", "Work with model manifests");
  models->require_subcommand(1);
  auto dir = std::make_shared<std::string>(DefaultModelsDir());
  CLI::App* list = models->add_subcommand("list", "List the model manifests in a directory");
  list->add_option("--dir", *dir, "Directory of model manifests")->capture_default_str();
  list->callback([action, dir] { *action = [dir] { return List(*dir); }; });
}

}  // namespace mstar::cli

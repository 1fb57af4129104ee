// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Helpers shared by the tests: temporary directories, files, running the CLI, capturing logs and
// locating the test plugins.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/sinks/ringbuffer_sink.h>

#include "plugin/registry.h"

namespace mstar::test {

// A fresh directory under $TMPDIR, removed with everything in it on destruction by the process
// that made it (a forked child that exits through its static destructors leaves it alone).
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path()/name
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
  pid_t owner_;
};

// Both throw std::runtime_error naming the path when the file cannot be opened or written.
void WriteFile(const std::string& path, const std::string& contents);
std::string ReadFile(const std::string& path);
void CopyFile(const std::string& from, const std::string& to);

// Where a test plugin was built: build/tests/plugins/<name>/.
std::string TestPluginDir(const std::string& name);
// The library file of a built test plugin.
std::string TestPluginLibrary(const std::string& name);
// The SDK template plugin built in-tree.
std::string TemplatePluginDir();

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs a shell command line, capturing stdout and stderr.
CommandResult Run(const std::string& command_line);
// Gigabytes (1e9 bytes) a second: bytes moved in seconds; 0 for no time.
double GBps(uint64_t bytes, double seconds);
// word as one shell word: in single quotes, with any single quote in it escaped.
std::string ShellQuoted(const std::string& word);
// Runs the mstar CLI with arguments (already shell-quoted where needed).
CommandResult RunCli(const std::string& arguments);

// A registry that searches only the given directories (no environment, no install directory).
PluginRegistry LoadOnly(const std::vector<std::string>& plugin_paths);
// The rejection recorded for manifest_path, or nullptr.
const RejectedPlugin* FindRejected(const PluginRegistry& registry, const std::string& plugin_name);

// Collects log lines while alive.
class LogCapture {
 public:
  LogCapture();
  ~LogCapture();
  std::vector<std::string> Lines() const;
  bool Contains(const std::string& text) const;

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

}  // namespace mstar::test

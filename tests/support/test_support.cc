// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "support/test_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "core/file_bytes.h"
#include "core/logging.h"

namespace mstar::test {

namespace fs = std::filesystem;

TempDir::TempDir() : owner_(getpid()) {
  std::string pattern = (fs::temp_directory_path() / "mstar-test-XXXXXX").string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = buffer.data();
}

TempDir::~TempDir() {
  if (getpid() != owner_) return;
  std::error_code ec;
  // Restore permissions a test may have removed, so everything can be deleted.
  for (auto it = fs::recursive_directory_iterator(path_, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
  }
  fs::remove_all(path_, ec);
}

void WriteFile(const std::string& path, const std::string& contents) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string ReadFile(const std::string& path) {
  Result<std::string> bytes = ReadFileBytes(path);
  if (!bytes.ok()) throw std::runtime_error(bytes.status().message());
  return std::move(bytes.value());
}

void CopyFile(const std::string& from, const std::string& to) {
  fs::create_directories(fs::path(to).parent_path());
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

std::string TestPluginDir(const std::string& name) {
  return std::string(MSTAR_TEST_PLUGIN_DIR) + "/" + name;
}

std::string TestPluginLibrary(const std::string& name) {
  return TestPluginDir(name) + "/lib" + name + ".so";
}

std::string TemplatePluginDir() {
  return std::string(MSTAR_BUILD_DIR) + "/lib/mstar/plugins/template";
}

double GBps(uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0;
}

std::string ShellQuoted(const std::string& word) {
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  quoted += '\'';
  return quoted;
}

CommandResult Run(const std::string& command_line) {
  std::string err_path = (fs::temp_directory_path() / "mstar-test-stderr-XXXXXX").string();
  int fd = mkstemp(err_path.data());
  if (fd < 0) throw std::runtime_error("mkstemp failed in " + err_path);
  close(fd);
  std::string full = command_line + " 2>" + ShellQuoted(err_path);
  CommandResult result;
  FILE* pipe = popen(full.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed");
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.out.append(buffer.data(), n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.err = ReadFile(err_path);
  std::remove(err_path.c_str());
  return result;
}

CommandResult RunCli(const std::string& arguments) {
  return Run(std::string("env -u MSTAR_PLUGIN_PATH -u MSTAR_LOG_LEVEL ") + MSTAR_CLI + " " +
             arguments);
}

PluginRegistry LoadOnly(const std::vector<std::string>& plugin_paths) {
  PluginRegistry::Options options;
  options.discovery.plugin_paths = plugin_paths;
  options.discovery.use_environment = false;
  options.discovery.use_install_dir = false;
  return PluginRegistry::Load(options);
}

const RejectedPlugin* FindRejected(const PluginRegistry& registry, const std::string& plugin_name) {
  for (const RejectedPlugin& r : registry.rejected()) {
    if (r.name == plugin_name) return &r;
  }
  return nullptr;
}

LogCapture::LogCapture() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1000)) {
  sink_->set_pattern("%l %v");
  AddLogSink(sink_);
}

LogCapture::~LogCapture() {
  RemoveLogSink(sink_);
}

std::vector<std::string> LogCapture::Lines() const {
  return sink_->last_formatted();
}

bool LogCapture::Contains(const std::string& text) const {
  for (const std::string& line : Lines()) {
    if (line.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace mstar::test

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Config: a C++ view of the host's read-only TOML view (mstar_config_t). Reading a value of the
// wrong kind throws an Error whose message names the file, line and key, so a plugin can simply
// read what it needs and let the message reach the operator.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mstar/sdk/error.hpp"

namespace mstar::sdk {

class Config {
 public:
  Config(const mstar_host_api_t* host, const mstar_config_t* node) : host_(host), node_(node) {}

  bool exists() const { return node_ != nullptr; }
  uint32_t kind() const { return host_->config_kind(node_); }
  // "file:line:column: key", for messages.
  std::string where() const { return host_->config_where(node_); }

  // The value under a dotted path (a view of nothing when absent, which remembers where it was
  // looked for, through a chain of lookups too: reading its value throws NOT_FOUND naming the
  // nearest table there is and the keys under it).
  Config operator[](const char* path) const {
    Config found(host_, host_->config_get(node_, path));
    if (!found.exists()) found.RememberAbsent(*this, path);
    return found;
  }
  Config at(uint32_t index) const {
    Config found(host_, host_->config_at(node_, index));
    if (!found.exists()) {
      std::string key = "[";  // appended: GCC 12 -O3 misreads "[" + std::string&& (-Wrestrict)
      found.RememberAbsent(*this, key.append(std::to_string(index)).append("]"));
    }
    return found;
  }
  uint32_t size() const { return host_->config_size(node_); }
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (uint32_t i = 0; i < size(); ++i) {
      if (const char* key = host_->config_key_at(node_, i)) out.emplace_back(key);
    }
    return out;
  }

  int64_t as_int() const {
    RequirePresent();
    int64_t v = 0;
    Check(host_, host_->config_as_int(node_, &v));
    return v;
  }
  double as_double() const {
    RequirePresent();
    double v = 0;
    Check(host_, host_->config_as_double(node_, &v));
    return v;
  }
  bool as_bool() const {
    RequirePresent();
    uint32_t v = 0;
    Check(host_, host_->config_as_bool(node_, &v));
    return v != 0;
  }
  std::string as_string() const {
    RequirePresent();
    const char* v = nullptr;
    uint64_t size = 0;
    Check(host_, host_->config_as_string(node_, &v, &size));
    return std::string(v, size);
  }

  // The value under path, or fallback when absent (a value of the wrong kind still throws).
  int64_t get(const char* path, int64_t fallback) const {
    Config c = (*this)[path];
    return c.exists() ? c.as_int() : fallback;
  }
  // Integers of narrower or unsigned types: a value outside the type's range throws
  // INVALID_ARGUMENT naming the key (never a silent wrap).
  int get(const char* path, int fallback) const { return get_in_range<int>(path, fallback); }
  uint32_t get(const char* path, uint32_t fallback) const {
    return get_in_range<uint32_t>(path, fallback);
  }
  uint64_t get(const char* path, uint64_t fallback) const {
    Config c = (*this)[path];
    if (!c.exists()) return fallback;
    const int64_t v = c.as_int();
    if (v < 0) throw InvalidArgument(c.where() + ": " + std::to_string(v) + " is negative");
    return static_cast<uint64_t>(v);
  }
  double get(const char* path, double fallback) const {
    Config c = (*this)[path];
    return c.exists() ? c.as_double() : fallback;
  }
  bool get(const char* path, bool fallback) const {
    Config c = (*this)[path];
    return c.exists() ? c.as_bool() : fallback;
  }
  std::string get(const char* path, const char* fallback) const {
    Config c = (*this)[path];
    return c.exists() ? c.as_string() : std::string(fallback);
  }
  std::string get(const char* path, const std::string& fallback) const {
    return get(path, fallback.c_str());
  }

  // A required value: throws NOT_FOUND naming the table and key when absent.
  Config require(const char* path) const {
    Config c = (*this)[path];
    c.RequirePresent();
    if (!c.exists()) throw NotFound(where() + ": missing required key '" + path + "'");
    return c;
  }

  // The directory this string value names: an absolute path as is; a relative one from the
  // working directory when it is a directory there, else beside base_dir (the create args'
  // base_dir: the model manifest's directory). `what` names it in messages ("weights directory");
  // `hint`, when given, ends the not-found message (how to make the directory).
  // Throws INVALID_ARGUMENT naming the key when the value is empty (it would name the working
  // directory), NOT_FOUND naming the key and every place tried when it is not a directory.
  std::string as_directory(const char* base_dir, const char* what,
                           const char* hint = nullptr) const {
    namespace fs = std::filesystem;
    const std::string configured = as_string();
    if (configured.empty())
      throw InvalidArgument(where() + ": must not be empty (the " + what + ")");
    std::error_code ec;
    const fs::path path(configured);
    if (fs::is_directory(path, ec)) return configured;
    std::string tried = fs::absolute(path, ec).string();
    if (!path.is_absolute() && base_dir != nullptr && *base_dir != '\0') {
      const fs::path beside = fs::path(base_dir) / path;
      if (fs::is_directory(beside, ec)) return beside.string();
      tried += " or " + fs::absolute(beside, ec).string();
    }
    std::string message = where() + ": " + what + " '" + configured + "' not found (tried " + tried;
    message += hint != nullptr ? std::string("); ") + hint : std::string(")");
    throw NotFound(std::move(message));
  }

  const mstar_config_t* raw() const { return node_; }

 private:
  // This view is of key (a dotted path, or "[i]") under from, which is absent.
  void RememberAbsent(const Config& from, const std::string& key) {
    if (from.node_ != nullptr) {
      parent_ = from.node_;
      path_ = key;
    } else if (from.parent_ != nullptr) {  // under an absent table: keep the nearest one there is
      parent_ = from.parent_;
      path_ = from.path_ + (key.front() == '[' ? "" : ".") + key;
    }
  }
  // A value looked up but absent: NOT_FOUND naming where it was looked for.
  void RequirePresent() const {
    if (node_ == nullptr && parent_ != nullptr)
      throw NotFound(std::string(host_->config_where(parent_)) + ": missing required key '" +
                     path_ + "'");
  }
  const mstar_config_t* parent_ = nullptr;  // set when this view is of an absent path
  std::string path_;

  template <typename T>
  T get_in_range(const char* path, T fallback) const {
    Config c = (*this)[path];
    if (!c.exists()) return fallback;
    const int64_t v = c.as_int();
    if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        (v > 0 &&
         static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<T>::max()))) {
      throw InvalidArgument(c.where() + ": " + std::to_string(v) + " is out of range [" +
                            std::to_string(std::numeric_limits<T>::min()) + ", " +
                            std::to_string(std::numeric_limits<T>::max()) + "]");
    }
    return static_cast<T>(v);
  }

  const mstar_host_api_t* host_;
  const mstar_config_t* node_;
};

}  // namespace mstar::sdk

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// ConfigTree: the host side of the ABI's read-only config view (mstar_config_t). It owns a copy
// of one TOML table and an immutable tree of view nodes over it, each knowing its full key and
// where it was written, so a plugin's config errors can name the file, line and key.
//
// Thread-safety: immutable after construction, but for each node's `read` mark; any thread may
// read it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "mstar/abi.h"

// The ABI's opaque config node.
struct mstar_config {
  uint32_t kind = 0;                 // MSTAR_CONFIG_*
  const toml::node* node = nullptr;  // the value viewed; owned by the tree's table
  std::string key;                   // full dotted key ("nodes.lm.config.hidden")
  std::string where;                 // "file:line:column: key"
  std::vector<std::string> keys;     // tables: member keys, sorted
  std::vector<std::unique_ptr<mstar_config>> children;  // table members / array elements
  // Set once a plugin looked the node up (config_get, or enumerating its table or array), so that
  // keys nobody read can be reported (UnreadKeys).
  mutable std::atomic<bool> read{false};
};

namespace mstar {

class ConfigTree {
 public:
  // Views `table`, which was read from path; key_prefix is the table's own dotted key. Values
  // without a source position are located at `unplaced` (the command-line option that set them).
  ConfigTree(toml::table table, const std::string& path, std::string key_prefix,
             const std::string& unplaced = "--set");
  // An empty table.
  ConfigTree();

  ConfigTree(const ConfigTree&) = delete;
  ConfigTree& operator=(const ConfigTree&) = delete;

  const mstar_config_t* root() const { return root_.get(); }
  const toml::table& table() const { return table_; }
  // The integer under the top-level key, or nullopt (no such key, or not an integer).
  std::optional<int64_t> TopLevelInt(const std::string& key) const {
    const toml::node* node = table_.get(key);
    if (node == nullptr || !node->is_integer()) return std::nullopt;
    return node->as_integer()->get();
  }

 private:
  toml::table table_;
  std::unique_ptr<mstar_config> root_;
};

// The child under a dotted path, or nullptr. Marks the nodes on the way as read.
const mstar_config_t* ConfigLookup(const mstar_config_t* table, const char* path);

// Marks node as read (a plugin reached it by enumeration: config_key_at, config_at).
inline void MarkConfigRead(const mstar_config_t* node) {
  if (node != nullptr) node->read.store(true, std::memory_order_relaxed);
}

// Where each member of table that was never read is written ("file:line:column: key"); members of
// tables that were read are looked at in turn, the elements of arrays are not.
std::vector<std::string> UnreadKeys(const mstar_config_t* table);

}  // namespace mstar

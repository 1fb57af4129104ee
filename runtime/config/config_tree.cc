// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "config/config_tree.h"

#include <fmt/format.h>

#include <cstring>
#include <iterator>
#include <string_view>

#include "mstar/host.h"

namespace mstar {
namespace {

uint32_t KindOf(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: return MSTAR_CONFIG_TABLE;
    case toml::node_type::array: return MSTAR_CONFIG_ARRAY;
    case toml::node_type::string: return MSTAR_CONFIG_STRING;
    case toml::node_type::integer: return MSTAR_CONFIG_INT;
    case toml::node_type::floating_point: return MSTAR_CONFIG_FLOAT;
    case toml::node_type::boolean: return MSTAR_CONFIG_BOOL;
    default: break;
  }
  return MSTAR_CONFIG_OTHER;
}

// "file:line:column: key"; a value inside a file's tree without a position was not read from the
// file but given on the command line: "<unplaced>: key" ("--set: key", as LocationOf says).
std::string Where(const toml::node& node, const std::string& path, const std::string& unplaced,
                  const std::string& key, bool root) {
  const toml::source_position& begin = node.source().begin;
  if (begin.line == 0 && !root && !path.empty()) return unplaced + ": " + key;
  std::string out = path.empty() ? "<config>" : path;
  if (begin.line > 0) fmt::format_to(std::back_inserter(out), ":{}:{}", begin.line, begin.column);
  out += ": ";
  out += key.empty() ? "(top level)" : key;
  return out;
}

std::unique_ptr<mstar_config> BuildNode(const toml::node& node, const std::string& path,
                                        const std::string& unplaced, std::string key,
                                        bool root = false) {
  auto out = std::make_unique<mstar_config>();
  out->kind = KindOf(node);
  out->node = &node;
  out->where = Where(node, path, unplaced, key, root);
  if (const toml::table* table = node.as_table()) {
    for (const auto& [member_key, value] : *table) {
      std::string child_key =
          key.empty() ? std::string(member_key.str()) : key + "." + std::string(member_key.str());
      out->keys.emplace_back(member_key.str());
      out->children.push_back(BuildNode(value, path, unplaced, std::move(child_key)));
    }
  } else if (const toml::array* array = node.as_array()) {
    for (size_t i = 0; i < array->size(); ++i) {
      out->children.push_back(
          BuildNode((*array)[i], path, unplaced, key + "[" + std::to_string(i) + "]"));
    }
  }
  out->key = std::move(key);
  return out;
}

const mstar_config_t* Member(const mstar_config_t* table, std::string_view key) {
  for (size_t i = 0; i < table->keys.size(); ++i) {
    if (table->keys[i] == key) return table->children[i].get();
  }
  return nullptr;
}

}  // namespace

ConfigTree::ConfigTree(toml::table table, const std::string& path, std::string key_prefix,
                       const std::string& unplaced)
    : table_(std::move(table)) {
  root_ = BuildNode(table_, path, unplaced, std::move(key_prefix), /*root=*/true);
}

ConfigTree::ConfigTree() : ConfigTree(toml::table{}, "", "") {}

const mstar_config_t* ConfigLookup(const mstar_config_t* table, const char* path) {
  if (table == nullptr || path == nullptr || table->kind != MSTAR_CONFIG_TABLE) return nullptr;
  if (const mstar_config_t* exact = Member(table, path)) {
    MarkConfigRead(exact);
    return exact;
  }
  std::string_view rest(path);
  const mstar_config_t* node = table;
  while (node != nullptr && !rest.empty()) {
    if (node->kind != MSTAR_CONFIG_TABLE) return nullptr;
    size_t dot = rest.find('.');
    std::string_view head = rest.substr(0, dot);
    node = Member(node, head);
    MarkConfigRead(node);
    rest = dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
  }
  return node;
}

std::vector<std::string> UnreadKeys(const mstar_config_t* table) {
  std::vector<std::string> unread;
  if (table == nullptr || table->kind != MSTAR_CONFIG_TABLE) return unread;
  for (const std::unique_ptr<mstar_config>& member : table->children) {
    if (!member->read.load(std::memory_order_relaxed)) {
      unread.push_back(member->where);
    } else {
      std::vector<std::string> nested = UnreadKeys(member.get());
      unread.insert(unread.end(), nested.begin(), nested.end());
    }
  }
  return unread;
}

}  // namespace mstar

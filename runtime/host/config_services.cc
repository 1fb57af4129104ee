// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The read-only config view over ConfigTree nodes.
#include <string>

#include "config/config_tree.h"
#include "host/services.h"

namespace mstar {
namespace {

const char* KindName(uint32_t kind) {
  switch (kind) {
    case MSTAR_CONFIG_TABLE: return "a table";
    case MSTAR_CONFIG_ARRAY: return "an array";
    case MSTAR_CONFIG_STRING: return "a string";
    case MSTAR_CONFIG_INT: return "an integer";
    case MSTAR_CONFIG_FLOAT: return "a float";
    case MSTAR_CONFIG_BOOL: return "a boolean";
    default: break;
  }
  return "a date or time";
}

// NOT_FOUND for a missing node, INVALID_ARGUMENT naming both kinds otherwise.
mstar_status_t* KindError(const mstar_config_t* node, const char* expected) {
  if (node == nullptr) {
    return NewAbiStatus(MSTAR_ERR_NOT_FOUND,
                        (std::string("missing value (expected ") + expected + ")").c_str());
  }
  std::string message = node->where + ": expected " + expected + ", found " + KindName(node->kind);
  return NewAbiStatus(MSTAR_ERR_INVALID_ARGUMENT, message.c_str());
}

uint32_t ConfigKind(const mstar_config_t* node) {
  return node == nullptr ? MSTAR_CONFIG_NONE : node->kind;
}

const mstar_config_t* ConfigGet(const mstar_config_t* table, const char* path) {
  return ConfigLookup(table, path);
}

uint32_t ConfigSize(const mstar_config_t* node) {
  return node == nullptr ? 0u : static_cast<uint32_t>(node->children.size());
}

const char* ConfigKeyAt(const mstar_config_t* table, uint32_t index) {
  if (table == nullptr || index >= table->keys.size()) return nullptr;
  MarkConfigRead(table->children[index].get());
  return table->keys[index].c_str();
}

const mstar_config_t* ConfigAt(const mstar_config_t* node, uint32_t index) {
  if (node == nullptr || index >= node->children.size()) return nullptr;
  MarkConfigRead(node->children[index].get());
  return node->children[index].get();
}

mstar_status_t* ConfigAsBool(const mstar_config_t* node, uint32_t* out_value) {
  if (node == nullptr || node->kind != MSTAR_CONFIG_BOOL) return KindError(node, "a boolean");
  *out_value = node->node->as_boolean()->get() ? 1u : 0u;
  return nullptr;
}

mstar_status_t* ConfigAsInt(const mstar_config_t* node, int64_t* out_value) {
  if (node == nullptr || node->kind != MSTAR_CONFIG_INT) return KindError(node, "an integer");
  *out_value = node->node->as_integer()->get();
  return nullptr;
}

mstar_status_t* ConfigAsDouble(const mstar_config_t* node, double* out_value) {
  if (node != nullptr && node->kind == MSTAR_CONFIG_INT) {
    *out_value = static_cast<double>(node->node->as_integer()->get());
    return nullptr;
  }
  if (node == nullptr || node->kind != MSTAR_CONFIG_FLOAT) return KindError(node, "a number");
  *out_value = node->node->as_floating_point()->get();
  return nullptr;
}

mstar_status_t* ConfigAsString(const mstar_config_t* node, const char** out_value,
                               uint64_t* out_size) {
  if (node == nullptr || node->kind != MSTAR_CONFIG_STRING) return KindError(node, "a string");
  const std::string& value = node->node->as_string()->get();
  *out_value = value.c_str();
  if (out_size != nullptr) *out_size = value.size();
  return nullptr;
}

const char* ConfigWhere(const mstar_config_t* node) {
  return node == nullptr ? "<none>" : node->where.c_str();
}

}  // namespace

void InstallConfigServices(mstar_host_api_t& table) {
  table.config_kind = &ConfigKind;
  table.config_get = &ConfigGet;
  table.config_size = &ConfigSize;
  table.config_key_at = &ConfigKeyAt;
  table.config_at = &ConfigAt;
  table.config_as_bool = &ConfigAsBool;
  table.config_as_int = &ConfigAsInt;
  table.config_as_double = &ConfigAsDouble;
  table.config_as_string = &ConfigAsString;
  table.config_where = &ConfigWhere;
}

}  // namespace mstar

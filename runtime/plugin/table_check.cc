// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "plugin/table_check.h"

#include <set>
#include <string>
#include <utility>

#include "plugin/slots.h"

namespace mstar {
namespace {

// Sizes of the tables as ABI 1.0 defines them: the least a plugin may hand over.
constexpr uint32_t kPluginApiSize_1_0 = sizeof(mstar_plugin_api_t);
constexpr uint32_t kFactorySize_1_0 = sizeof(mstar_factory_t);
constexpr uint32_t kSubmoduleSize_1_0 = MSTAR_SLOT_OFFSET(17);
constexpr uint32_t kResourceSize_1_0 = sizeof(mstar_resource_vtable_t);
constexpr uint32_t kTierSize_1_0 = sizeof(mstar_tier_vtable_t);
constexpr uint32_t kModelSize_1_0 = sizeof(mstar_model_vtable_t);
// More factories than any library provides: a garbage count, read no further.
constexpr uint32_t kMaxFactories = 4096;

std::string Quote(const std::string& s) {
  return "'" + s + "'";
}

template <typename Table>
Status CheckHeader(const Table* table, uint32_t min_size, uint32_t negotiated,
                   const std::string& what) {
  if (table->struct_size < min_size) {
    return InvalidArgument(what + " has struct_size " + std::to_string(table->struct_size) +
                           ", smaller than ABI 1.0's " + std::to_string(min_size));
  }
  if (table->struct_version != negotiated) {
    return InvalidArgument(what + " has struct_version " + std::to_string(table->struct_version) +
                           "; it must carry the negotiated minor " + std::to_string(negotiated));
  }
  return Status::Ok();
}

Status MissingSlot(const std::string& what, const char* slot) {
  return InvalidArgument(what + " leaves the required slot " + slot + " empty");
}

#define MSTAR_REQUIRE_SLOT(table, member, what) \
  if ((table)->member == nullptr) return MissingSlot(what, #member)

Status CheckSubmodule(const mstar_submodule_vtable_t* t, uint32_t negotiated,
                      const std::string& what) {
  MSTAR_RETURN_IF_ERROR(CheckHeader(t, kSubmoduleSize_1_0, negotiated, what));
  MSTAR_REQUIRE_SLOT(t, create, what);
  MSTAR_REQUIRE_SLOT(t, destroy, what);
  MSTAR_REQUIRE_SLOT(t, info, what);
  MSTAR_REQUIRE_SLOT(t, prepare_inputs, what);
  MSTAR_REQUIRE_SLOT(t, forward, what);
  // check_stop is what the host calls for single requests and falls back to when a batched or
  // columnar stop check fails (check_stop_columnar is a slot of 1.1).
  const bool other_stop_check =
      t->check_stop_batched != nullptr || MSTAR_HAS_SLOT(t, check_stop_columnar, 1);
  if (t->check_stop == nullptr && other_stop_check) {
    return InvalidArgument(what +
                           " fills check_stop_batched or check_stop_columnar but leaves "
                           "check_stop empty: the host checks single requests with it, and "
                           "falls back to it when the others fail");
  }
  return Status::Ok();
}

Status CheckResource(const mstar_resource_vtable_t* t, uint32_t negotiated,
                     const std::string& what) {
  MSTAR_RETURN_IF_ERROR(CheckHeader(t, kResourceSize_1_0, negotiated, what));
  MSTAR_REQUIRE_SLOT(t, create, what);
  MSTAR_REQUIRE_SLOT(t, destroy, what);
  MSTAR_REQUIRE_SLOT(t, info, what);
  MSTAR_REQUIRE_SLOT(t, add_request, what);
  MSTAR_REQUIRE_SLOT(t, remove_request, what);
  MSTAR_REQUIRE_SLOT(t, declare, what);
  MSTAR_REQUIRE_SLOT(t, admit, what);
  MSTAR_REQUIRE_SLOT(t, plan, what);
  MSTAR_REQUIRE_SLOT(t, commit, what);
  MSTAR_REQUIRE_SLOT(t, abort_step, what);
  return Status::Ok();
}

Status CheckTier(const mstar_tier_vtable_t* t, uint32_t negotiated, const std::string& what) {
  MSTAR_RETURN_IF_ERROR(CheckHeader(t, kTierSize_1_0, negotiated, what));
  MSTAR_REQUIRE_SLOT(t, create, what);
  MSTAR_REQUIRE_SLOT(t, destroy, what);
  MSTAR_REQUIRE_SLOT(t, info, what);
  MSTAR_REQUIRE_SLOT(t, submit, what);
  MSTAR_REQUIRE_SLOT(t, poll, what);
  MSTAR_REQUIRE_SLOT(t, wait, what);
  MSTAR_REQUIRE_SLOT(t, release, what);
  return Status::Ok();
}

Status CheckModel(const mstar_model_vtable_t* t, uint32_t negotiated, const std::string& what) {
  MSTAR_RETURN_IF_ERROR(CheckHeader(t, kModelSize_1_0, negotiated, what));
  MSTAR_REQUIRE_SLOT(t, create, what);
  MSTAR_REQUIRE_SLOT(t, destroy, what);
  MSTAR_REQUIRE_SLOT(t, encode_prompt, what);
  return Status::Ok();
}

#undef MSTAR_REQUIRE_SLOT

Status CheckFactory(const mstar_factory_t& f, uint32_t negotiated, size_t index) {
  std::string what = "factory #" + std::to_string(index);
  MSTAR_RETURN_IF_ERROR(CheckHeader(&f, kFactorySize_1_0, negotiated, what));
  if (f.name == nullptr) return InvalidArgument(what + " has no name");
  what = std::string(KindName(f.kind)) + " " + Quote(f.name);
  if (f.vtable == nullptr) return InvalidArgument(what + " has no function table");
  switch (f.kind) {
    case MSTAR_KIND_SUBMODULE:
      return CheckSubmodule(static_cast<const mstar_submodule_vtable_t*>(f.vtable), negotiated,
                            what + "'s table");
    case MSTAR_KIND_RESOURCE:
      return CheckResource(static_cast<const mstar_resource_vtable_t*>(f.vtable), negotiated,
                           what + "'s table");
    case MSTAR_KIND_TIER:
      return CheckTier(static_cast<const mstar_tier_vtable_t*>(f.vtable), negotiated,
                       what + "'s table");
    case MSTAR_KIND_MODEL:
      return CheckModel(static_cast<const mstar_model_vtable_t*>(f.vtable), negotiated,
                        what + "'s table");
    default: break;
  }
  return InvalidArgument("factory " + Quote(f.name) + " has unknown kind " +
                         std::to_string(f.kind));
}

std::string ListNames(const std::set<std::pair<uint32_t, std::string>>& items) {
  std::string out;
  for (const auto& [kind, name] : items) {
    if (!out.empty()) out += ", ";
    out += std::string(KindName(kind)) + " " + Quote(name);
  }
  return out;
}

}  // namespace

Status CheckPluginTables(const mstar_plugin_api_t* api, uint32_t negotiated,
                         const PluginManifest& manifest) {
  if (api == nullptr) return InvalidArgument("the entry point returned no plugin table");
  MSTAR_RETURN_IF_ERROR(CheckHeader(api, kPluginApiSize_1_0, negotiated, "the plugin table"));
  if (api->name == nullptr || manifest.name != api->name) {
    return InvalidArgument("the library calls itself " +
                           Quote(api->name != nullptr ? api->name : "(null)") +
                           " but the manifest names it " + Quote(manifest.name));
  }
  if (api->num_factories > 0 && api->factories == nullptr) {
    return InvalidArgument("the plugin table lists factories but its array is NULL");
  }
  // Checked before any factory is read: element 0's size is the stride the others are read at.
  if (api->num_factories > kMaxFactories) {
    return InvalidArgument("the plugin table lists " + std::to_string(api->num_factories) +
                           " factories, more than " + std::to_string(kMaxFactories) + " (garbage)");
  }
  if (api->num_factories > 0 && api->factories[0].struct_size > kMaxVersionedStructSize) {
    return InvalidArgument("factory #0 has struct_size " +
                           std::to_string(api->factories[0].struct_size) + ", more than " +
                           std::to_string(kMaxVersionedStructSize) + " (garbage)");
  }
  // The others are read at that stride: misaligned, they would be read at misaligned addresses.
  if (api->num_factories > 0 && api->factories[0].struct_size % alignof(mstar_factory_t) != 0) {
    return InvalidArgument("factory #0 has struct_size " +
                           std::to_string(api->factories[0].struct_size) +
                           ", not a multiple of the struct's alignment (" +
                           std::to_string(alignof(mstar_factory_t)) + ")");
  }
  std::set<std::pair<uint32_t, std::string>> in_library;
  for (uint32_t i = 0; i < api->num_factories; ++i) {
    // Element 0's size sets the array's stride (checked first, so the others are read at it).
    if (i > 0 && FactoryAt(api, i).struct_size != api->factories[0].struct_size) {
      return InvalidArgument(
          "factory #" + std::to_string(i) + " has struct_size " +
          std::to_string(FactoryAt(api, i).struct_size) + ", unlike factory #0's " +
          std::to_string(api->factories[0].struct_size) + " (one array, one struct size)");
    }
    const mstar_factory_t& factory = FactoryAt(api, i);
    MSTAR_RETURN_IF_ERROR(CheckFactory(factory, negotiated, i));
    if (!in_library.insert({factory.kind, factory.name}).second) {
      return InvalidArgument(std::string("the library provides ") + KindName(factory.kind) + " " +
                             Quote(factory.name) + " twice");
    }
  }
  std::set<std::pair<uint32_t, std::string>> in_manifest;
  for (const ProvidedFactory& p : manifest.provides) in_manifest.insert({p.kind, p.name});
  std::set<std::pair<uint32_t, std::string>> only_manifest, only_library;
  for (const auto& item : in_manifest) {
    if (in_library.count(item) == 0) only_manifest.insert(item);
  }
  for (const auto& item : in_library) {
    if (in_manifest.count(item) == 0) only_library.insert(item);
  }
  if (!only_manifest.empty()) {
    return InvalidArgument("the manifest lists " + ListNames(only_manifest) +
                           " but the library does not provide it (it provides " +
                           (in_library.empty() ? std::string("nothing") : ListNames(in_library)) +
                           ")");
  }
  if (!only_library.empty()) {
    return InvalidArgument("the library provides " + ListNames(only_library) +
                           " which the manifest's [[provides]] does not list");
  }
  return Status::Ok();
}

}  // namespace mstar

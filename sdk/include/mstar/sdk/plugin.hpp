// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The plugin's entry point, in one macro:
//
//   MSTAR_PLUGIN("my_plugin", /*min_host_minor=*/0,
//                mstar::sdk::SubmoduleFactory<MyEncoder>("my_encoder"),
//                mstar::sdk::ResourceFactory<MyCache>("my_cache"));
//
// defines and exports mstar_plugin_entry, which negotiates the ABI minor with the host (the
// plugin runs on hosts of min_host_minor and newer), stamps the negotiated minor into every table
// and returns the list of factories. The name must equal [plugin].name of the manifest, and the
// factories its [[provides]] entries. Use MSTAR_PLUGIN_WITH_SHUTDOWN to add a library-wide
// shutdown function (void(), once per load when the host lets go; what it throws is logged through
// the host; a later load calls the entry again on the statics it leaves: see mstar/plugin.h).
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "mstar/sdk/error.hpp"
#include "mstar/sdk/model.hpp"
#include "mstar/sdk/resource.hpp"
#include "mstar/sdk/submodule.hpp"
#include "mstar/sdk/tier.hpp"

namespace mstar::sdk {

// One factory of the plugin: its kind, name and the (static) table of its kind.
struct FactorySpec {
  uint32_t kind;
  const char* name;
  const void* table;
  uint32_t* table_version;  // where the negotiated minor is stamped
};

template <typename T>
FactorySpec SubmoduleFactory(const char* name) {
  static mstar_submodule_vtable_t table = SubmoduleTable<T>::Build();
  return {MSTAR_KIND_SUBMODULE, name, &table, &table.struct_version};
}
template <typename T>
FactorySpec ResourceFactory(const char* name) {
  static mstar_resource_vtable_t table = ResourceTable<T>::Build();
  return {MSTAR_KIND_RESOURCE, name, &table, &table.struct_version};
}
template <typename T>
FactorySpec TierFactory(const char* name) {
  static mstar_tier_vtable_t table = TierTable<T>::Build();
  return {MSTAR_KIND_TIER, name, &table, &table.struct_version};
}
template <typename T>
FactorySpec ModelFactory(const char* name) {
  static mstar_model_vtable_t table = ModelTable<T>::Build();
  return {MSTAR_KIND_MODEL, name, &table, &table.struct_version};
}

namespace detail {

// The plugin's own shutdown (MSTAR_PLUGIN_WITH_SHUTDOWN). The ABI table holds GuardedShutdown,
// which runs it under the exception barrier: the ABI's shutdown never fails, so what it throws is
// logged through the host ("shutdown: <what>") and goes no further.
inline void (*&PluginShutdown())() {
  static void (*shutdown)() = nullptr;
  return shutdown;
}
inline void GuardedShutdown() noexcept {
  const mstar_host_api_t* host = HostTable();
  GuardVoid(host, host->context, "shutdown", [] { PluginShutdown()(); });
}

// The body of mstar_plugin_entry (see mstar/plugin.h for the protocol).
inline mstar_status_t* Entry(const mstar_host_api_t* host, mstar_negotiation_t* negotiation,
                             const mstar_plugin_api_t** out_plugin, const char* plugin_name,
                             uint32_t min_host_minor, std::initializer_list<FactorySpec> specs,
                             void (*shutdown)()) noexcept {
  negotiation->plugin_major = MSTAR_ABI_MAJOR;
  negotiation->plugin_minor = MSTAR_ABI_MINOR;
  negotiation->plugin_min_host_minor = min_host_minor;
  // Everything that may throw (building a message may run out of memory) runs under Guard:
  // this function is noexcept, and an escaping exception would end the host.
  return Guard(host, [&] {
    if (negotiation->host_major != MSTAR_ABI_MAJOR) {
      throw Error(MSTAR_ERR_INCOMPATIBLE,
                  std::string(plugin_name) + " was built for plugin ABI major " +
                      std::to_string(MSTAR_ABI_MAJOR) + "; the host speaks major " +
                      std::to_string(negotiation->host_major));
    }
    if (negotiation->host_minor < min_host_minor) {
      throw Error(MSTAR_ERR_INCOMPATIBLE,
                  std::string(plugin_name) + " needs host ABI 1." + std::to_string(min_host_minor) +
                      " or newer; the host provides 1." + std::to_string(negotiation->host_minor));
    }
    uint32_t negotiated = std::min<uint32_t>(negotiation->host_minor, MSTAR_ABI_MINOR);
    static std::vector<mstar_factory_t> factories;
    static mstar_plugin_api_t api;
    factories.clear();
    for (const FactorySpec& spec : specs) {
      *spec.table_version = negotiated;
      factories.push_back(
          {sizeof(mstar_factory_t), negotiated, spec.kind, 0, spec.name, spec.table});
    }
    api = mstar_plugin_api_t{sizeof(mstar_plugin_api_t),
                             negotiated,
                             plugin_name,
                             static_cast<uint32_t>(factories.size()),
                             0,
                             factories.data(),
                             shutdown != nullptr ? &GuardedShutdown : nullptr};
    PluginShutdown() = shutdown;
    HostTable() = host;
    negotiation->negotiated_minor = negotiated;
    *out_plugin = &api;
  });
}

}  // namespace detail
}  // namespace mstar::sdk

#define MSTAR_PLUGIN_WITH_SHUTDOWN(NAME, MIN_HOST_MINOR, SHUTDOWN, ...)                     \
  extern "C" MSTAR_PLUGIN_EXPORT mstar_status_t* mstar_plugin_entry(                        \
      const mstar_host_api_t* host, mstar_negotiation_t* negotiation,                       \
      const mstar_plugin_api_t** out_plugin) {                                              \
    return ::mstar::sdk::detail::Entry(host, negotiation, out_plugin, NAME, MIN_HOST_MINOR, \
                                       {__VA_ARGS__}, SHUTDOWN);                            \
  }

#define MSTAR_PLUGIN(NAME, MIN_HOST_MINOR, ...) \
  MSTAR_PLUGIN_WITH_SHUTDOWN(NAME, MIN_HOST_MINOR, nullptr, __VA_ARGS__)

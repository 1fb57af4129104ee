// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Checks of the tables a plugin returns from its entry point: sizes, versions, required slots,
// and agreement with the manifest's [[provides]].
#pragma once

#include "core/status.h"
#include "mstar/plugin.h"
#include "plugin/manifest.h"
#include "plugin/slots.h"

namespace mstar {

// The plugin table and every factory and kind table in it; `negotiated` is the minor both sides
// agreed on, which every table must carry as its struct_version.
Status CheckPluginTables(const mstar_plugin_api_t* api, uint32_t negotiated,
                         const PluginManifest& manifest);

// Factory i of a checked plugin table (read at the plugin's struct size: VersionedAt).
inline const mstar_factory_t& FactoryAt(const mstar_plugin_api_t* api, uint32_t i) {
  return VersionedAt(api->factories, i);
}

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The model manifest's checks against the loaded plugins (model_validate.h): every plugin it
// names is there with the right kind, and what its model controller chooses.
#include <string>

#include "model/model_validate.h"
#include "mstar/model.h"
#include "plugin/registry.h"

namespace mstar {

ControllerChoices ControllerChoicesOf(const ModelSpec& model, const PluginRegistry& registry) {
  ControllerChoices choices;
  if (model.controller.empty()) return choices;
  Result<FactoryRef> factory = registry.Find(MSTAR_KIND_MODEL, model.controller);
  if (!factory.ok()) return choices;  // CheckModelPlugins reports it
  // The registry checked the table's size and required slots when it loaded the library.
  const auto* table = static_cast<const mstar_model_vtable_t*>(factory.value().factory->vtable);
  choices.first_walk = table->first_walk != nullptr;
  choices.next_walk = table->next_walk != nullptr;
  return choices;
}

void CheckModelPlugins(const ModelSpec& model, const PluginRegistry& registry,
                       Diagnostics* diagnostics) {
  auto check = [&](uint32_t kind, const std::string& plugin, const SourceLocation& where,
                   const std::string& key) {
    Result<FactoryRef> factory = registry.Find(kind, plugin);
    if (!factory.ok())
      diagnostics->push_back({where, key, "unknown plugin: " + factory.status().message()});
  };
  for (const auto& [name, node] : model.nodes)
    check(MSTAR_KIND_SUBMODULE, node.plugin, node.where, "nodes." + name + ".plugin");
  for (const auto& [name, r] : model.resources)
    check(MSTAR_KIND_RESOURCE, r.plugin, r.where, "resources." + name + ".plugin");
  for (const auto& [name, t] : model.tiers)
    check(MSTAR_KIND_TIER, t.plugin, t.where, "tiers." + name + ".plugin");
  if (!model.controller.empty())
    check(MSTAR_KIND_MODEL, model.controller, model.controller_where, "model.controller");
}

}  // namespace mstar

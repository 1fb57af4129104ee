// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "cli/plugin_report.h"

#include <algorithm>
#include <string>
#include <vector>

#include "plugin/slots.h"
#include "plugin/table_check.h"

namespace mstar::cli {
namespace {

using nlohmann::json;

std::string AbiText(const PluginLibrary& library) {
  return std::to_string(library.manifest().abi_major) + "." +
         std::to_string(library.negotiated_minor());
}

std::string ProvidesText(const PluginLibrary& library) {
  std::string out;
  for (const ProvidedFactory& p : library.manifest().provides) {
    if (!out.empty()) out += ", ";
    out += std::string(KindName(p.kind)) + ":" + p.name;
  }
  return out;
}

// The optional hooks a factory's table fills in, by name.
std::vector<std::string> OptionalHooks(const mstar_factory_t& factory) {
  std::vector<std::string> hooks;
#define MSTAR_NOTE(table, member) \
  if (MSTAR_HAS_SLOT(table, member, 0)) hooks.push_back(#member)
  if (factory.kind == MSTAR_KIND_SUBMODULE) {
    const auto* t = static_cast<const mstar_submodule_vtable_t*>(factory.vtable);
    MSTAR_NOTE(t, max_batch_size);
    MSTAR_NOTE(t, forward_batched);
    MSTAR_NOTE(t, postprocess);
    MSTAR_NOTE(t, check_stop);
    MSTAR_NOTE(t, check_stop_batched);
    MSTAR_NOTE(t, capture_configs);
    MSTAR_NOTE(t, capture_key);
    MSTAR_NOTE(t, capture_begin);
    MSTAR_NOTE(t, capture_end);
    MSTAR_NOTE(t, run_region);
    MSTAR_NOTE(t, warmup);
    MSTAR_NOTE(t, cleanup_request);
  } else if (factory.kind == MSTAR_KIND_RESOURCE) {
    const auto* t = static_cast<const mstar_resource_vtable_t*>(factory.vtable);
    MSTAR_NOTE(t, preplan_is_stale);
    MSTAR_NOTE(t, reset_pre_plan);
    MSTAR_NOTE(t, check_ready);
    MSTAR_NOTE(t, publish);
    MSTAR_NOTE(t, reclaimable);
    MSTAR_NOTE(t, offload);
    MSTAR_NOTE(t, reload);
    MSTAR_NOTE(t, is_offloaded);
    MSTAR_NOTE(t, offload_priority);
    MSTAR_NOTE(t, take_resident_delta);
    MSTAR_NOTE(t, apply_resident_delta);
    MSTAR_NOTE(t, extend_prefix_chains);
    MSTAR_NOTE(t, stats);
  } else if (factory.kind == MSTAR_KIND_MODEL) {
    const auto* t = static_cast<const mstar_model_vtable_t*>(factory.vtable);
    MSTAR_NOTE(t, first_walk);
    MSTAR_NOTE(t, next_walk);
    MSTAR_NOTE(t, encode_output);
  }
#undef MSTAR_NOTE
  return hooks;
}

void PrintRow(std::ostream& out, const std::vector<std::string>& cells,
              const std::vector<size_t>& widths) {
  for (size_t i = 0; i < cells.size(); ++i) {
    out << cells[i];
    if (i + 1 < cells.size()) out << std::string(widths[i] - cells[i].size() + 2, ' ');
  }
  out << "\n";
}

}  // namespace

json LoadedPluginJson(const LoadedPlugin& plugin) {
  const PluginManifest& m = plugin.library->manifest();
  json provides = json::array();
  for (const ProvidedFactory& p : m.provides)
    provides.push_back({{"kind", KindName(p.kind)}, {"name", p.name}});
  return {{"name", m.name},
          {"version", m.version},
          {"description", m.description},
          {"provides", provides},
          {"abi", AbiText(*plugin.library)},
          {"abi_min_minor", m.abi_min_minor},
          {"library", m.library_path},
          {"manifest", m.path},
          {"origin", OriginName(plugin.origin)}};
}

json RejectedPluginJson(const RejectedPlugin& plugin) {
  json problems = json::array();
  for (const Diagnostic& d : plugin.problems) problems.push_back(d.ToString());
  return {{"manifest", plugin.manifest_path},
          {"name", plugin.name},
          {"origin", OriginName(plugin.origin)},
          {"reason", plugin.problems.empty() ? "" : plugin.problems.front().message},
          {"problems", problems}};
}

json RegistryJson(const PluginRegistry& registry) {
  json plugins = json::array();
  for (const LoadedPlugin& p : registry.loaded()) plugins.push_back(LoadedPluginJson(p));
  json rejected = json::array();
  for (const RejectedPlugin& r : registry.rejected()) rejected.push_back(RejectedPluginJson(r));
  json skipped = json::array();
  for (const SkippedCandidate& s : registry.skipped()) {
    skipped.push_back({{"path", s.path}, {"reason", s.reason}});
  }
  return {{"plugins", plugins}, {"rejected", rejected}, {"skipped", skipped}};
}

void PrintRegistry(const PluginRegistry& registry, std::ostream& out) {
  std::vector<std::vector<std::string>> rows = {{"NAME", "VERSION", "PROVIDES", "ABI", "LIBRARY"}};
  for (const LoadedPlugin& p : registry.loaded()) {
    const PluginManifest& m = p.library->manifest();
    rows.push_back(
        {m.name, m.version, ProvidesText(*p.library), AbiText(*p.library), m.library_path});
  }
  std::vector<size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  if (registry.loaded().empty()) {
    out << "No plugins loaded.\n";
  } else {
    for (const auto& row : rows) PrintRow(out, row, widths);
  }
  if (!registry.rejected().empty()) {
    out << "\nRejected (" << registry.rejected().size() << "):\n";
    for (const RejectedPlugin& r : registry.rejected()) {
      for (const Diagnostic& d : r.problems) out << "  " << d.ToString() << "\n";
    }
  }
}

json PluginDetailsJson(const LoadedPlugin& plugin) {
  json details = LoadedPluginJson(plugin);
  const PluginLibrary& library = *plugin.library;
  json factories = json::array();
  for (uint32_t i = 0; i < library.api()->num_factories; ++i) {
    const mstar_factory_t& f = FactoryAt(library.api(), i);
    factories.push_back(
        {{"kind", KindName(f.kind)}, {"name", f.name}, {"optional_hooks", OptionalHooks(f)}});
  }
  details["factories"] = factories;
  details["plugin_abi_minor"] = library.plugin_minor();
  if (Result<std::vector<std::string>> symbols = library.ExportedSymbols(); symbols.ok()) {
    details["exported_symbols"] = symbols.value();
  } else {
    details["exported_symbols_error"] = symbols.status().message();
  }
  const PluginRequirements& req = library.manifest().requires_;
  json requires_json = json::object();
  if (req.torch) requires_json["torch"] = *req.torch;
  if (req.torch_cxx11_abi) requires_json["torch_cxx11_abi"] = *req.torch_cxx11_abi;
  if (req.cuda) requires_json["cuda"] = *req.cuda;
  details["requires"] = requires_json;
  if (library.manifest().sha256) details["sha256"] = *library.manifest().sha256;
  return details;
}

void PrintPluginDetails(const LoadedPlugin& plugin, std::ostream& out) {
  json d = PluginDetailsJson(plugin);
  out << d["name"].get<std::string>() << " " << d["version"].get<std::string>() << "\n";
  if (!d["description"].get<std::string>().empty())
    out << "  " << d["description"].get<std::string>() << "\n";
  out << "  manifest:  " << d["manifest"].get<std::string>() << " ("
      << d["origin"].get<std::string>() << ")\n";
  out << "  library:   " << d["library"].get<std::string>() << "\n";
  out << "  ABI:       " << d["abi"].get<std::string>() << " negotiated (plugin built for 1."
      << d["plugin_abi_minor"].get<uint32_t>() << ", needs host 1."
      << d["abi_min_minor"].get<uint32_t>() << " or newer)\n";
  if (!d["requires"].empty()) out << "  requires:  " << d["requires"].dump() << "\n";
  for (const json& f : d["factories"]) {
    out << "  " << f["kind"].get<std::string>() << " " << f["name"].get<std::string>() << "\n";
    std::string hooks;
    for (const json& h : f["optional_hooks"])
      hooks += (hooks.empty() ? "" : ", ") + h.get<std::string>();
    out << "    optional hooks: " << (hooks.empty() ? "(none)" : hooks) << "\n";
  }
  if (d.contains("exported_symbols_error")) {
    out << "  exports:   (cannot list: " << d["exported_symbols_error"].get<std::string>() << ")\n";
    return;
  }
  std::string exports;
  for (const json& s : d["exported_symbols"])
    exports += (exports.empty() ? "" : ", ") + s.get<std::string>();
  out << "  exports:   " << exports << "\n";
}

std::string JsonText(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace mstar::cli

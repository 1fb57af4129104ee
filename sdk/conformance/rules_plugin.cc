// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Rules about the library as a whole: it loads, exports only its entry point, negotiates at the
// lowest host minor it claims to accept and with a host newer than itself, and its tables agree
// with its manifest.
#include "plugin/table_check.h"
#include "rule_context.h"

namespace mstar::conformance {

std::vector<Rule> PluginRules() {
  std::vector<Rule> rules;
  rules.push_back(
      {{"plugin.loads", "plugin", "The manifest is valid and the library loads and negotiates"},
       [](const Subject& s) {
         Require(s.library != nullptr && s.library->api() != nullptr, "the library did not load");
       }});
  rules.push_back(
      {{"plugin.exports-only-entry", "plugin",
        "The library exports exactly one symbol, mstar_plugin_entry (R: hidden visibility)"},
       [](const Subject& s) {
         Result<std::vector<std::string>> exported = s.library->ExportedSymbols();
         RequireOk(exported.status(), "reading the library's exported symbols");
         std::vector<std::string> extra;
         bool entry = false;
         for (const std::string& symbol : exported.value()) {
           if (symbol == "mstar_plugin_entry") {
             entry = true;
           } else {
             extra.push_back(symbol);
           }
         }
         Require(entry, "mstar_plugin_entry is not among the exported symbols");
         if (extra.empty()) return;
         std::string list;
         for (size_t i = 0; i < extra.size() && i < 5; ++i) list += (i ? ", " : "") + extra[i];
         Fail(std::to_string(extra.size()) + " other exported symbol(s) (" + list +
              "): build with -fvisibility=hidden -fvisibility-inlines-hidden (mstar_add_plugin "
              "does) and export only mstar_plugin_entry (MSTAR_PLUGIN does)");
       }});
  rules.push_back(
      {{"plugin.negotiates-min-minor", "plugin",
        "Negotiation succeeds with a host at the lowest minor the manifest accepts ([abi] "
        "min_minor)"},
       [](const Subject& s) {
         LoadOptions options;
         options.host.abi_minor = s.manifest.abi_min_minor;
         options.renegotiate_in_place = true;  // in the rule's forked child
         Diagnostic error;
         std::shared_ptr<PluginLibrary> old = PluginLibrary::Load(s.manifest, options, &error);
         Require(old != nullptr,
                 "a host at minor " + std::to_string(s.manifest.abi_min_minor) + " was refused (" +
                     error.ToString() +
                     "): raise [abi] min_minor to the lowest minor the plugin really supports, "
                     "and answer with min(host minor, your minor)");
         // The load itself refuses an answer other than min(host minor, plugin minor).
       }});
  rules.push_back(
      {{"plugin.negotiates-newer-host", "plugin",
        "Negotiation succeeds with a host one minor newer than this ABI, answering a minor no "
        "newer than the host's, with tables that agree with that answer"},
       [](const Subject& s) {
         LoadOptions options;
         options.host.abi_minor = MSTAR_ABI_MINOR + 1;
         options.renegotiate_in_place = true;  // in the rule's forked child
         Diagnostic error;
         std::shared_ptr<PluginLibrary> newer = PluginLibrary::Load(s.manifest, options, &error);
         Require(newer != nullptr,
                 "a host at minor " + std::to_string(options.host.abi_minor) + " was refused (" +
                     error.ToString() +
                     "): a plugin must run on newer hosts of its major; answer with min(host "
                     "minor, your minor) instead of requiring an exact match");
         // The load refused an answer other than min(host minor, plugin minor): the tables.
         RequireOk(CheckPluginTables(newer->api(), newer->negotiated_minor(), s.manifest),
                   "tables after negotiating with a newer host");
       }});
  rules.push_back(
      {{"plugin.tables-agree", "plugin",
        "Every table has its size and version, every required slot, and the "
        "factories are exactly the manifest's [[provides]]"},
       [](const Subject& s) {
         RequireOk(CheckPluginTables(s.library->api(), s.library->negotiated_minor(), s.manifest),
                   "tables");
       }});
  return rules;
}

}  // namespace mstar::conformance

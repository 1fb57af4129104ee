// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// A deliberately minimal plugin written against the raw C ABI (no SDK), compiled once per fault:
// each build shows exactly one way a plugin can be wrong, and the loader tests check that the
// runtime refuses it with the right message. FAULT selects the fault; PLUGIN_NAME and
// FACTORY_NAME name the plugin and its one submodule.
#include <stdexcept>

#include "mstar/plugin.h"

#define FAULT_NONE 0                 // a correct plugin (used for the duplicate-name pair)
#define FAULT_NO_ENTRY 1             // exports a misspelled entry symbol
#define FAULT_MAJOR2 2               // built for ABI major 2
#define FAULT_NEEDS_MINOR3 3         // needs host minor 3 (its manifest claims 0)
#define FAULT_ENTRY_ERROR 4          // the entry returns an error
#define FAULT_ENTRY_THROWS 5         // the entry throws a C++ exception (no SDK barrier)
#define FAULT_NO_FORWARD 6           // the submodule table lacks the required forward slot
#define FAULT_WRONG_NAME 7           // the library calls itself something else than the manifest
#define FAULT_EXTRA_FACTORY 8        // provides a factory the manifest does not list
#define FAULT_NO_NEGOTIATION 9       // succeeds without filling in the negotiation
#define FAULT_LAZY_SYMBOL 10         // references a symbol no library defines (never called)
#define FAULT_EXACT_MINOR 11         // refuses every host minor but 0 (even newer ones)
#define FAULT_OLD_COLUMNAR 12        // an ABI 1.0 plugin whose flags set the bit 1.1 calls columnar
#define FAULT_COLUMNAR_UNBATCHED 13  // declares columnar steps without a batched forward

#ifndef FAULT
#error "define FAULT"
#endif

namespace {

mstar_status_t* Create(const mstar_create_args_t* args, void** out_self) {
  (void)args;
  static int instance;
  *out_self = &instance;
  return nullptr;
}
void Destroy(void* self) {
  (void)self;
}
mstar_status_t* Info(void* self, mstar_submodule_info_t* out) {
  (void)self;
#if FAULT == FAULT_OLD_COLUMNAR
  out->flags = MSTAR_SUBMODULE_BATCHED | MSTAR_SUBMODULE_COLUMNAR;
#elif FAULT == FAULT_COLUMNAR_UNBATCHED
  out->flags = MSTAR_SUBMODULE_COLUMNAR;
#else
  out->flags = 0;
#endif
  out->num_stop_outputs = 0;
  out->stop_outputs = nullptr;
  return nullptr;
}
mstar_status_t* Prepare(void* self, const mstar_request_info_t* request,
                        const mstar_tensor_map_t* inputs, mstar_prepared_t* out) {
  (void)self;
  (void)request;
  (void)inputs;
  out->num_tokens = 0;
  return nullptr;
}
#if FAULT == FAULT_LAZY_SYMBOL
extern "C" void mstar_test_symbol_defined_nowhere(void);
#endif
mstar_status_t* Forward(void* self, const mstar_step_t* step) {
  (void)self;
  (void)step;
#if FAULT == FAULT_LAZY_SYMBOL
  if (step == nullptr) mstar_test_symbol_defined_nowhere();
#endif
  return nullptr;
}

mstar_submodule_vtable_t MakeTable() {
  mstar_submodule_vtable_t t{};
  t.struct_size = sizeof(t);
  t.create = &Create;
  t.destroy = &Destroy;
  t.info = &Info;
  t.prepare_inputs = &Prepare;
#if FAULT != FAULT_NO_FORWARD
  t.forward = &Forward;
#endif
#if FAULT == FAULT_OLD_COLUMNAR
  t.forward_batched = &Forward;
#endif
  return t;
}

mstar_submodule_vtable_t g_table = MakeTable();
mstar_factory_t g_factories[] = {
    {sizeof(mstar_factory_t), 0, MSTAR_KIND_SUBMODULE, 0, FACTORY_NAME, &g_table},
    {sizeof(mstar_factory_t), 0, MSTAR_KIND_SUBMODULE, 0, "unlisted_extra", &g_table},
};
#if FAULT == FAULT_EXTRA_FACTORY
constexpr uint32_t kNumFactories = 2;
#else
constexpr uint32_t kNumFactories = 1;
#endif
#if FAULT == FAULT_WRONG_NAME
constexpr const char* kName = "not_" PLUGIN_NAME;
#else
constexpr const char* kName = PLUGIN_NAME;
#endif
mstar_plugin_api_t g_api = {
    sizeof(mstar_plugin_api_t), 0, kName, kNumFactories, 0, g_factories, nullptr};

#if FAULT == FAULT_MAJOR2
constexpr uint32_t kMajor = 2;
#else
constexpr uint32_t kMajor = MSTAR_ABI_MAJOR;
#endif
#if FAULT == FAULT_NEEDS_MINOR3
constexpr uint32_t kMinHostMinor = 3;
#else
constexpr uint32_t kMinHostMinor = 0;
#endif
#if FAULT == FAULT_OLD_COLUMNAR
constexpr uint32_t kPluginMinor = 0;  // built against ABI 1.0
#else
constexpr uint32_t kPluginMinor = 3;
#endif

}  // namespace

#if FAULT == FAULT_NO_ENTRY
#define ENTRY_NAME mstar_plugin_entri
#else
#define ENTRY_NAME mstar_plugin_entry
#endif

extern "C" MSTAR_PLUGIN_EXPORT mstar_status_t* ENTRY_NAME(const mstar_host_api_t* host,
                                                          mstar_negotiation_t* negotiation,
                                                          const mstar_plugin_api_t** out_plugin) {
#if FAULT == FAULT_ENTRY_THROWS
  (void)host;
  (void)negotiation;
  (void)out_plugin;
  throw std::runtime_error("deliberate exception from the entry point");
#else
#if FAULT == FAULT_NO_NEGOTIATION
  *out_plugin = &g_api;
  return nullptr;
#endif
  negotiation->plugin_major = kMajor;
  negotiation->plugin_minor = kPluginMinor;
  negotiation->plugin_min_host_minor = kMinHostMinor;
  if (negotiation->host_major != kMajor) {
    return host->status_new(MSTAR_ERR_INCOMPATIBLE, "built for another ABI major");
  }
  if (negotiation->host_minor < kMinHostMinor) {
    return host->status_new(MSTAR_ERR_INCOMPATIBLE, "host too old");
  }
#if FAULT == FAULT_EXACT_MINOR
  if (negotiation->host_minor != MSTAR_ABI_MINOR) {
    return host->status_new(MSTAR_ERR_INCOMPATIBLE, "built for this host minor exactly");
  }
#endif
#if FAULT == FAULT_ENTRY_ERROR
  return host->status_new(MSTAR_ERR_FAILED_PRECONDITION, "deliberate failure in the entry point");
#endif
  uint32_t negotiated =
      negotiation->host_minor < kPluginMinor ? negotiation->host_minor : kPluginMinor;
  negotiation->negotiated_minor = negotiated;
  g_api.struct_version = negotiated;
  g_table.struct_version = negotiated;
  for (mstar_factory_t& f : g_factories) f.struct_version = negotiated;
  *out_plugin = &g_api;
  return nullptr;
#endif
}

/* Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0 */
/*
 * mstar/plugin.h: the entry point of a plugin library and the table it returns.
 *
 * Include this header to get the whole ABI. A plugin library exports exactly one symbol,
 *
 *     mstar_status_t* mstar_plugin_entry(const mstar_host_api_t* host,
 *                                        mstar_negotiation_t* negotiation,
 *                                        const mstar_plugin_api_t** out_plugin);
 *
 * and hides everything else (-fvisibility=hidden plus an export map; the SDK's
 * mstar_add_plugin() sets both). The host calls it after loading the library, from one thread, with
 * no other call into the library in progress; again, on the statics left, when loaded again after
 * its shutdown (a library is never unmapped). The entry does nothing that never calling the library
 * again cannot undo: no threads, no global registration, no device work (those belong in create).
 *
 * Negotiation (two-sided): the host fills host_major and host_minor. The plugin always writes
 * plugin_major, plugin_minor (the minor of the headers it was built with) and
 * plugin_min_host_minor (the oldest host minor it can run on), then
 *   - if host_major != plugin_major, returns MSTAR_ERR_INCOMPATIBLE without touching anything
 *     else (the status_new slot is frozen across majors so this error can always be made);
 *   - if host_minor < plugin_min_host_minor, returns MSTAR_ERR_INCOMPATIBLE;
 *   - otherwise sets negotiated_minor = min(host_minor, plugin_minor), stamps it into the
 *     struct_version of every table it hands out, and stores its table in *out_plugin.
 * The host checks all of this again on its side and refuses the library if anything disagrees,
 * including a manifest whose [abi] section disagrees with what the library reports. The host
 * reads a slot added in minor N only if the table's struct_version is >= N.
 *
 * The layout of mstar_negotiation_t, and the first four members of mstar_host_api_t, are frozen
 * for every major, so that a mismatch can always be reported.
 */
#ifndef MSTAR_PLUGIN_H_
#define MSTAR_PLUGIN_H_

#include "mstar/abi.h"
#include "mstar/host.h"
#include "mstar/model.h"
#include "mstar/request.h"
#include "mstar/resource.h"
#include "mstar/status.h"
#include "mstar/submodule.h"
#include "mstar/tensor.h"
#include "mstar/tier.h"

MSTAR_EXTERN_C_BEGIN

typedef struct mstar_negotiation {
  uint32_t struct_size;
  uint32_t struct_version;
  uint32_t host_major;            /* in: MSTAR_ABI_MAJOR of the host */
  uint32_t host_minor;            /* in: the newest minor the host implements */
  uint32_t plugin_major;          /* out: MSTAR_ABI_MAJOR the plugin was built with */
  uint32_t plugin_minor;          /* out: MSTAR_ABI_MINOR the plugin was built with */
  uint32_t plugin_min_host_minor; /* out: the oldest host minor the plugin runs on */
  uint32_t negotiated_minor;      /* out: min(host_minor, plugin_minor) */
} mstar_negotiation_t;

MSTAR_STATIC_ASSERT(sizeof(mstar_negotiation_t) == 32, "mstar_negotiation_t is frozen");

/* One thing the plugin provides: a kind, a name unique within the kind, and the kind's table. */
typedef struct mstar_factory {
  uint32_t struct_size;
  uint32_t struct_version;
  uint32_t kind; /* MSTAR_KIND_* */
  uint32_t reserved0;
  const char* name; /* matches a [[provides]] entry of the manifest */
  /* The kind's table: mstar_submodule_vtable_t, mstar_resource_vtable_t, mstar_tier_vtable_t or
   * mstar_model_vtable_t. Its own struct_size and struct_version gate its slots. */
  const void* vtable;
} mstar_factory_t;

/* What the entry returns. Static data of the library: borrowed for as long as it stays loaded. */
typedef struct mstar_plugin_api {
  uint32_t struct_size;
  uint32_t struct_version; /* the negotiated minor */
  const char* name;        /* the plugin's name; equals [plugin].name of the manifest */
  uint32_t num_factories;
  uint32_t reserved0;
  const mstar_factory_t* factories;
  /* Optional. Called once per load, when every instance is destroyed and the host lets go of the
   * library. Releases global state, leaving the library ready for a later entry. Never fails. */
  void (*shutdown)(void);
} mstar_plugin_api_t;

/* The entry point's type, for hosts that look it up by name. */
typedef mstar_status_t* (*mstar_plugin_entry_fn)(const mstar_host_api_t* host,
                                                 mstar_negotiation_t* negotiation,
                                                 const mstar_plugin_api_t** out_plugin);

MSTAR_EXTERN_C_END

#endif /* MSTAR_PLUGIN_H_ */

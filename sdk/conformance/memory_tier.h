// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The tier chain the suite gives every resource it creates: one unbounded in-memory tier that
// completes each batch on submit. With it, an evictable resource's offload and reload are checked
// without the author configuring a tier plugin, and a failure points at the resource, not at a
// tier under test. `tiers = false` in a factory's conformance settings creates resources without
// it (for a resource that must refuse to run with a tier chain).
//
// Threading: calls arrive through the host's tier services, which serialize them per handle.
#pragma once

#include "host/host_objects.h"

namespace mstar::conformance {

// The handle of the suite's memory tier, made on first use and alive until the process ends
// (rules run in forked children, so each rule starts with an empty tier).
mstar_tier_handle_t* SuiteMemoryTier();

}  // namespace mstar::conformance

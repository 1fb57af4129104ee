// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// RegionRunner: what the host service region_launch (mstar/host.h slot 60) hands a submodule's
// region to when the engine captured regions for it (runtime/capture/region_captures.h). A
// submodule's instance context points at its runner from warmup until shutdown; without one,
// region_launch calls the submodule's run_region directly.
#pragma once

#include "core/status.h"
#include "mstar/host.h"

namespace mstar {

class RegionRunner {
 public:
  virtual ~RegionRunner() = default;
  // Runs region from inside the submodule's forward: a graph replay when one fits, else
  // run_region eagerly. inputs are borrowed; outputs receives the region's outputs (owned by the
  // map). Called on the thread running the forward, with the node's instance lock held.
  virtual Status Launch(const char* region, const mstar_tensor_map_t& inputs,
                        mstar_tensor_map_t& outputs, mstar_stream_t* stream) = 0;
};

}  // namespace mstar

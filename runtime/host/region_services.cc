// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Piecewise regions. When the engine captured regions for the submodule, its runner replays the
// region's graph for the step's slot or falls back to run_region (runtime/capture/
// region_captures.h); otherwise (capture off, no region configs, every CPU build without a
// runner) the host calls the submodule's run_region eagerly.
#include <string>

#include "host/host_api.h"
#include "host/host_objects.h"
#include "host/region_runner.h"
#include "host/services.h"
#include "plugin/slots.h"

namespace mstar {
namespace {

// The runner may run out of memory for its books (a name, a map, a memo): that is an error
// status for the submodule's forward, never an exception through its C frames.
mstar_status_t* LaunchCaptured(RegionRunner& regions, const char* region,
                               const mstar_tensor_map_t& inputs, mstar_tensor_map_t& outputs,
                               mstar_stream_t* stream) noexcept {
  return ServiceBarrier(
      "region_launch",
      [&] { return std::string("region_launch of region '").append(region).append("'"); },
      [&] {
        Status status = regions.Launch(region, inputs, outputs, stream);
        return status.ok() ? nullptr : MakeAbiStatus(status);
      });
}

mstar_status_t* RegionLaunch(mstar_host_context_t* context, const char* region,
                             const mstar_tensor_map_t* inputs, mstar_tensor_map_t* outputs,
                             mstar_stream_t* stream) {
  if (context == nullptr || context->submodule == nullptr) {
    return NewAbiStatus(MSTAR_ERR_FAILED_PRECONDITION,
                        "region_launch is only valid with a submodule instance's context");
  }
  if (!MSTAR_HAS_SLOT(context->submodule, run_region, 0)) {
    std::string message = "submodule '" + context->label + "' has no run_region for region '" +
                          (region != nullptr ? region : "") + "'";
    return NewAbiStatus(MSTAR_ERR_UNSUPPORTED, message.c_str());
  }
  if (context->regions != nullptr) {
    if (region == nullptr || inputs == nullptr || outputs == nullptr) {
      return NewAbiStatus(MSTAR_ERR_INVALID_ARGUMENT,
                          "region_launch needs a region name, inputs and outputs");
    }
    return LaunchCaptured(*context->regions, region, *inputs, *outputs, stream);
  }
  return context->submodule->run_region(context->submodule_self, region, inputs, outputs, stream);
}

}  // namespace

void InstallRegionServices(mstar_host_api_t& table) {
  table.region_launch = &RegionLaunch;
}

}  // namespace mstar

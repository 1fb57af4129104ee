// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Piecewise regions. Without a captured graph for the region (every CPU build), the host runs the
// submodule's run_region eagerly; graph replay plugs in here with the capture machinery.
#include <string>

#include "host/host_objects.h"
#include "host/services.h"
#include "plugin/slots.h"

namespace mstar {
namespace {

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
  return context->submodule->run_region(context->submodule_self, region, inputs, outputs, stream);
}

}  // namespace

void InstallRegionServices(mstar_host_api_t& table) {
  table.region_launch = &RegionLaunch;
}

}  // namespace mstar

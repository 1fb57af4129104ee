// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Plugin metrics, named "<plugin>/<instance>.<name>".
#include "core/metrics.h"
#include "host/host_objects.h"
#include "host/services.h"

namespace mstar {
namespace {

std::string MetricName(const mstar_host_context_t* context, const char* name) {
  std::string label = context != nullptr ? context->label : "plugin";
  return label + "." + (name != nullptr ? name : "unnamed");
}

void CounterAdd(mstar_host_context_t* context, const char* name, int64_t delta) {
  Metrics::Global().Add(MetricName(context, name), delta);
}

void GaugeSet(mstar_host_context_t* context, const char* name, double value) {
  Metrics::Global().Set(MetricName(context, name), value);
}

}  // namespace

void InstallMetricServices(mstar_host_api_t& table) {
  table.counter_add = &CounterAdd;
  table.gauge_set = &GaugeSet;
}

}  // namespace mstar

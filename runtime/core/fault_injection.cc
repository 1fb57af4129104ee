// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "core/fault_injection.h"

#include <mutex>

namespace mstar {
namespace detail {
std::atomic<bool> g_faults_armed{false};
}  // namespace detail

namespace {

struct SiteState {
  bool armed = false;
  uint64_t nth = 0;  // 0: count only
  uint64_t count = 0;
};

std::mutex g_mutex;
SiteState g_sites[2];

}  // namespace

void ArmFault(FaultSite site, uint64_t nth) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_sites[static_cast<int>(site)] = SiteState{true, nth, 0};
  detail::g_faults_armed.store(true, std::memory_order_relaxed);
}

void DisarmFaults() {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (SiteState& s : g_sites) s = SiteState{};
  detail::g_faults_armed.store(false, std::memory_order_relaxed);
}

uint64_t FaultSiteCount(FaultSite site) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_sites[static_cast<int>(site)].count;
}

bool detail::FaultArmedSlow(FaultSite site, uint64_t* ordinal) {
  std::lock_guard<std::mutex> lock(g_mutex);
  SiteState& s = g_sites[static_cast<int>(site)];
  if (!s.armed) return false;
  *ordinal = ++s.count;
  return s.nth != 0 && s.count == s.nth;
}

Status ArmFaultFromSpec(const std::string& spec) {
  size_t colon = spec.find(':');
  std::string site = spec.substr(0, colon);
  uint64_t nth = 0;
  try {
    if (colon == std::string::npos) throw std::invalid_argument("no count");
    nth = std::stoull(spec.substr(colon + 1));
  } catch (const std::exception&) {
    return InvalidArgument("MSTAR_FAULT '" + spec +
                           "': expected plugin_call:N or allocation:N with N >= 1");
  }
  if (site == "plugin_call") {
    ArmFault(FaultSite::kPluginCall, nth);
  } else if (site == "allocation") {
    ArmFault(FaultSite::kAllocation, nth);
  } else {
    return InvalidArgument("MSTAR_FAULT '" + spec + "': the site is plugin_call or allocation");
  }
  return Status::Ok();
}

}  // namespace mstar

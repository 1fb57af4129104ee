// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "core/fault_injection.h"

#include <charconv>
#include <cstdio>
#include <mutex>
#include <system_error>

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
SiteState g_sites[kNumFaultSites];

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

InjectedBadAlloc::InjectedBadAlloc(uint64_t ordinal) {
  std::snprintf(what_, sizeof(what_), "injected fault (host object #%llu)",
                static_cast<unsigned long long>(ordinal));
}

Status ArmFaultFromSpec(const std::string& spec) {
  size_t colon = spec.find(':');
  std::string site = spec.substr(0, colon);
  // N is the whole rest of the spec, digits only, at least 1: std::stoull took "0" (which arms
  // count-only mode, so nothing ever fails), wrapped "-1" to 2^64 - 1 and ignored a tail ("3x").
  uint64_t nth = 0;
  const char* begin = colon == std::string::npos ? nullptr : spec.data() + colon + 1;
  const char* end = spec.data() + spec.size();
  std::from_chars_result parsed{begin, std::errc::invalid_argument};
  if (begin != nullptr) parsed = std::from_chars(begin, end, nth);
  if (parsed.ec != std::errc() || parsed.ptr != end || nth == 0) {
    return InvalidArgument("MSTAR_FAULT '" + spec +
                           "': expected plugin_call:N, allocation:N or host_object:N with N >= 1");
  }
  if (site == "plugin_call") {
    ArmFault(FaultSite::kPluginCall, nth);
  } else if (site == "allocation") {
    ArmFault(FaultSite::kAllocation, nth);
  } else if (site == "host_object") {
    ArmFault(FaultSite::kHostObject, nth);
  } else {
    return InvalidArgument("MSTAR_FAULT '" + spec +
                           "': the site is plugin_call, allocation or host_object");
  }
  return Status::Ok();
}

}  // namespace mstar

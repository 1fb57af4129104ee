// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Fault injection for reliability tests: makes the Nth plugin call or the Nth host allocation
// fail, process-wide, as if the plugin or the allocator had returned an error. Off unless armed;
// when off, a check is one relaxed atomic load. Armed from tests with ArmFault, or for a whole
// `mstar run` with MSTAR_FAULT=plugin_call:N or MSTAR_FAULT=allocation:N.
//
// Counting mode (ArmFault with nth = 0) only counts the operations, so a test can learn how many
// there are in a clean run and then fail each in turn.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace mstar {

enum class FaultSite { kPluginCall = 0, kAllocation = 1 };

// Fails the nth operation at site from now on (1-based); 0 only counts. Resets the count.
void ArmFault(FaultSite site, uint64_t nth);
// Back to off for every site.
void DisarmFaults();
// Operations seen at site since it was armed.
uint64_t FaultSiteCount(FaultSite site);
// Parses "plugin_call:N" or "allocation:N" (MSTAR_FAULT) and arms it.
Status ArmFaultFromSpec(const std::string& spec);

namespace detail {
bool FaultArmedSlow(FaultSite site, uint64_t* ordinal);
extern std::atomic<bool> g_faults_armed;
}  // namespace detail

// Whether this operation must fail; *ordinal receives its number for the message.
inline bool ShouldInjectFault(FaultSite site, uint64_t* ordinal) {
  if (!detail::g_faults_armed.load(std::memory_order_relaxed)) return false;
  return detail::FaultArmedSlow(site, ordinal);
}

}  // namespace mstar

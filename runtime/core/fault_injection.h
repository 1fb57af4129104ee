// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Fault injection for reliability tests: makes the Nth plugin call, the Nth host allocation or
// the Nth host object a plugin's call makes fail, process-wide, as if the plugin had returned an
// error or memory had run out. Off unless armed; when off, a check is one relaxed atomic load.
// Armed from tests with ArmFault, or for a whole `mstar run` with MSTAR_FAULT=plugin_call:N,
// MSTAR_FAULT=allocation:N or MSTAR_FAULT=host_object:N.
//
// Counting mode (ArmFault with nth = 0) only counts the operations, so a test can learn how many
// there are in a clean run and then fail each in turn.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <new>
#include <string>

#include "core/status.h"

namespace mstar {

// kAllocation: memory the ledger hands out (tensor data, memory_alloc), and bytes_append.
// kHostObject: the records the host makes (the memory ledger's block records, tensor records,
// tensor maps and their entries, streams, events, the device block cache's records); the host's
// code meets it as std::bad_alloc (InjectedBadAlloc).
enum class FaultSite { kPluginCall = 0, kAllocation = 1, kHostObject = 2 };
inline constexpr int kNumFaultSites = 3;

// Fails the nth operation at site from now on (1-based); 0 only counts. Resets the count.
void ArmFault(FaultSite site, uint64_t nth);
// Back to off for every site.
void DisarmFaults();
// Operations seen at site since it was armed.
uint64_t FaultSiteCount(FaultSite site);
// Parses "plugin_call:N", "allocation:N" or "host_object:N" (MSTAR_FAULT) and arms it.
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

// What an injected kHostObject fault throws: out of memory, saying it was injected.
class InjectedBadAlloc : public std::bad_alloc {
 public:
  explicit InjectedBadAlloc(uint64_t ordinal);
  const char* what() const noexcept override { return what_; }

 private:
  char what_[64];
};

// Throws InjectedBadAlloc when this host object is the one to fail.
inline void MaybeFailHostObject() {
  if (uint64_t ordinal = 0; ShouldInjectFault(FaultSite::kHostObject, &ordinal))
    throw InjectedBadAlloc(ordinal);
}

}  // namespace mstar

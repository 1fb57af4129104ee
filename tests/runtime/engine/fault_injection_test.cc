// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Fault injection across whole runs: the Nth plugin call, or the Nth host allocation, fails, for
// N spread over every operation of a clean run. Each time: nothing crashes or hangs, the session
// either refuses to open with the injected error or runs, and every request either completes with
// exactly the clean run's outputs or fails with an error that names the injected fault. (Leaks
// are checked by LeakSanitizer in the sanitizer build.)
#include <gtest/gtest.h>

#include "core/fault_injection.h"
#include "host/host_objects.h"
#include "host/memory_ledger.h"
#include "runtime/engine/engine_harness.h"

namespace mstar {
namespace {

using test::Model;
using test::RunAll;

std::vector<std::string> Prompts() {
  return {"AB", "C", "DEF", "G"};
}

// Every ordinal up to 30, then about 40 more spread over the rest.
std::vector<uint64_t> Ordinals(uint64_t total) {
  std::vector<uint64_t> out;
  for (uint64_t n = 1; n <= total && n <= 30; ++n) out.push_back(n);
  uint64_t stride = std::max<uint64_t>(1, total / 40);
  for (uint64_t n = 31; n <= total; n += stride) out.push_back(n);
  return out;
}

void CheckEveryOrdinal(FaultSite site, const char* what) {
  ModelSpec model = Model(test::kKitModel, {"resources.kv.config.capacity=70"});
  test::RunOptions options;
  options.tolerate_failures = true;
  ArmFault(site, 0);  // count only
  test::RunOutput clean = RunAll(model, Prompts(), options);
  uint64_t total = FaultSiteCount(site);
  DisarmFaults();
  ASSERT_TRUE(clean.open_error.empty()) << clean.open_error;
  ASSERT_GT(total, 20u) << what;
  size_t runs_with_failures = 0;
  for (uint64_t nth : Ordinals(total)) {
    SCOPED_TRACE(std::string(what) + " #" + std::to_string(nth));
    ArmFault(site, nth);
    test::RunOutput run = RunAll(model, Prompts(), options);
    DisarmFaults();
    if (!run.open_error.empty()) {
      EXPECT_NE(run.open_error.find("injected fault"), std::string::npos) << run.open_error;
      ++runs_with_failures;
      continue;
    }
    bool any_failed = false;
    for (size_t i = 0; i < run.outcomes.size(); ++i) {
      const test::Outcome& o = run.outcomes[i];
      if (o.result.end == RequestEnd::kDone) {
        EXPECT_EQ(o.values, clean.outcomes[i].values) << "request " << i + 1;
      } else {
        any_failed = true;
        EXPECT_EQ(o.result.end, RequestEnd::kFailed) << "request " << i + 1;
        std::string all;
        for (const test::Outcome& other : run.outcomes) all += "\n  " + other.result.error;
        EXPECT_NE(o.result.error.find("injected fault"), std::string::npos)
            << "request " << i + 1 << ": " << o.result.error << "; every request's error:" << all;
      }
    }
    runs_with_failures += any_failed ? 1 : 0;
  }
  // Faults reach requests; others are absorbed by recovery (a failed batched forward is retried
  // one request at a time), which the output comparison above has checked.
  EXPECT_GT(runs_with_failures, 0u) << what;
}

TEST(FaultInjection, EveryPluginCallFailureStaysWithItsRequests) {
  CheckEveryOrdinal(FaultSite::kPluginCall, "plugin call");
}

TEST(FaultInjection, EveryAllocationFailureStaysWithItsRequests) {
  CheckEveryOrdinal(FaultSite::kAllocation, "allocation");
}

// Records a plugin's calls make (tensor records, maps and their entries): out of memory there.
TEST(FaultInjection, EveryHostObjectFailureStaysWithItsRequests) {
  CheckEveryOrdinal(FaultSite::kHostObject, "host object");
}

// A spec arms its site for its N: the Nth operation fails and only that one.
TEST(FaultInjection, ASpecArmsItsSiteForItsOrdinal) {
  ASSERT_TRUE(ArmFaultFromSpec("plugin_call:3").ok());
  uint64_t ordinal = 0;
  EXPECT_FALSE(ShouldInjectFault(FaultSite::kPluginCall, &ordinal));
  EXPECT_FALSE(ShouldInjectFault(FaultSite::kPluginCall, &ordinal));
  EXPECT_TRUE(ShouldInjectFault(FaultSite::kPluginCall, &ordinal));
  EXPECT_EQ(ordinal, 3u);
  EXPECT_FALSE(ShouldInjectFault(FaultSite::kPluginCall, &ordinal));
  EXPECT_EQ(FaultSiteCount(FaultSite::kAllocation), 0u);  // the other site is not armed
  DisarmFaults();

  MemoryLedger ledger;
  mstar_host_context owner;
  ASSERT_TRUE(ArmFaultFromSpec("allocation:1").ok());
  Result<void*> failed = ledger.Allocate(&owner, DLDevice{kDLCPU, 0}, 64, 0, false);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), Code::kResourceExhausted);
  EXPECT_NE(failed.status().message().find("injected fault (allocation #1 of 64 bytes)"),
            std::string::npos)
      << failed.status().ToString();
  Result<void*> next = ledger.Allocate(&owner, DLDevice{kDLCPU, 0}, 64, 0, false);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_TRUE(ledger.Free(next.value()).ok());
  DisarmFaults();
}

// A bad spec is an invalid argument that quotes it, and arms nothing: N is the whole rest of the
// spec, a decimal number of at least 1 (0 would only count, -1 wrapped around).
TEST(FaultInjection, ABadSpecIsRefusedAndArmsNothing) {
  for (const char* spec : {"plugin_call", "allocation:", "allocation:x", "allocation:0",
                           "allocation:-1", "allocation:3x", "allocation: 3", "allocation:+3",
                           "allocation:18446744073709551616", "disk:4"}) {
    SCOPED_TRACE(spec);
    DisarmFaults();
    Status status = ArmFaultFromSpec(spec);
    EXPECT_EQ(status.code(), Code::kInvalidArgument);
    EXPECT_NE(status.message().find("MSTAR_FAULT '" + std::string(spec) + "'"), std::string::npos)
        << status.message();
    uint64_t ordinal = 0;
    EXPECT_FALSE(ShouldInjectFault(FaultSite::kAllocation, &ordinal));
    EXPECT_FALSE(ShouldInjectFault(FaultSite::kPluginCall, &ordinal));
    EXPECT_EQ(FaultSiteCount(FaultSite::kAllocation), 0u);  // not even counting
    EXPECT_EQ(FaultSiteCount(FaultSite::kPluginCall), 0u);
  }
  EXPECT_NE(ArmFaultFromSpec("allocation:0").message().find("N >= 1"), std::string::npos);
  EXPECT_NE(ArmFaultFromSpec("disk:4").message().find("plugin_call, allocation or host_object"),
            std::string::npos);
  DisarmFaults();
}

}  // namespace
}  // namespace mstar

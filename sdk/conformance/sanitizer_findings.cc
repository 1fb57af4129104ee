// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "sanitizer_findings.h"

#include <atomic>
#include <cstdio>

namespace {

std::atomic<int> g_reports{0};

}  // namespace

// The sanitizer runtimes' hooks. __lsan_do_recoverable_leak_check exists only where
// LeakSanitizer runs (weak: NULL elsewhere). __sanitizer_report_error_summary is called with the
// SUMMARY line of every report any sanitizer prints; defining it replaces the runtime's default,
// which prints that line, so it prints the line too.
extern "C" int __lsan_do_recoverable_leak_check() __attribute__((weak));

extern "C" __attribute__((visibility("default"))) void __sanitizer_report_error_summary(
    const char* error_summary) {
  g_reports.fetch_add(1, std::memory_order_relaxed);
  std::fprintf(stderr, "%s\n", error_summary);
}

namespace mstar::conformance {

void ForgetSanitizerReports() {
  g_reports.store(0, std::memory_order_relaxed);
}

std::string SanitizerFindings() {
  if (__lsan_do_recoverable_leak_check != nullptr && __lsan_do_recoverable_leak_check() != 0)
    return "LeakSanitizer found memory the rule's instances leaked (its report is on standard "
           "error)";
  const int reports = g_reports.load(std::memory_order_relaxed);
  if (reports != 0) {
    return "a sanitizer printed " + std::to_string(reports) +
           " report(s) while the rule ran (a data race, a memory error or undefined behaviour; "
           "see standard error)";
  }
  return "";
}

}  // namespace mstar::conformance

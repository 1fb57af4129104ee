// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// What the sanitizers of a sanitized build (`make asan`, `make tsan`) found while a rule ran in
// its child process. A child ends with _exit (the parent's atexit work must not run twice), which
// skips the sanitizers' exit-time checks: LeakSanitizer's leak check and ThreadSanitizer's
// failing exit status. So the child asks here before it answers: a sanitizer report printed while
// the rule ran (a data race, a use after free that did not abort, undefined behaviour), or a
// leak LeakSanitizer finds now, fails the rule. In a build without sanitizers nothing is found.
//
// Thread-safe.
#pragma once

#include <string>

namespace mstar::conformance {

// Forgets reports printed before now (the rule's child calls it first).
void ForgetSanitizerReports();

// Empty when the sanitizers found nothing since ForgetSanitizerReports, else why the rule fails
// (their reports are on standard error). Runs LeakSanitizer's leak check where the build has it.
std::string SanitizerFindings();

}  // namespace mstar::conformance

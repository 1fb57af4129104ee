// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Allocation failures on demand, for out-of-memory tests: a binary that links
// failing_allocations.cc has its global operator new replaced by one that throws std::bad_alloc
// from the allocation it is told to. Shared libraries the binary loads allocate through it
// too (their undefined symbols resolve to the executable's first).
//
// Threading: the countdown is per thread; only the thread that calls FailAllocation sees
// failures.
#pragma once

#include <cstdint>

namespace mstar::test {

// The n-th allocation from now on this thread throws (then none until the next call); 0: none.
void FailAllocation(uint64_t n);
// Whether an allocation on this thread has failed since the last FailAllocation.
bool AllocationFailed();

}  // namespace mstar::test

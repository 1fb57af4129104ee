// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The monotonic clock the runtime times its own work with (engine stage timings, benchmarks).
#pragma once

#include <chrono>
#include <cstdint>

namespace mstar {

// Nanoseconds on the steady clock (a point of its own epoch: only differences mean anything).
inline uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace mstar

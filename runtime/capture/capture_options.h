// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// CaptureOptions: the runtime config's [capture] section (docs/manifests.md).
#pragma once

#include <cstdint>

namespace mstar {

inline constexpr uint32_t kDefaultCaptureSlots = 2;
// The most slots per captured bucket, from a capture config or the runtime config.
inline constexpr uint32_t kMaxCaptureSlots = 64;

struct CaptureOptions {
  bool enabled = true;          // capture at warmup and replay; off: every step runs eagerly
  bool allow_fallback = false;  // a failed capture runs that bucket eagerly instead of failing
  uint32_t num_slots = kDefaultCaptureSlots;  // slots per bucket when a config says 0
  // Eager runs of each bucket's capture step before its first capture, so that what a forward
  // initializes on first use (a BLAS handle, a workspace, a kernel module) is made outside the
  // capture, where such calls are not allowed.
  uint32_t warmup_runs = 1;
};

}  // namespace mstar

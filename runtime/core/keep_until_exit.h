// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Objects that must outlive their owner because something outside the runtime's control may still
// point at them (a plugin's statics holding a host table, a ledger entry naming a context).
#pragma once

#include <memory>
#include <mutex>
#include <vector>

namespace mstar {

// Takes `object` and keeps it until the process exits; it is never destroyed. Thread-safe. The
// store is reachable from a global, so LeakSanitizer does not report what it keeps. Meant for a
// few small objects per plugin load, not for anything made per request.
template <typename T>
void KeepUntilExit(std::unique_ptr<T> object) {
  static std::mutex mutex;
  static auto* kept = new std::vector<std::unique_ptr<T>>();
  std::lock_guard<std::mutex> lock(mutex);
  kept->push_back(std::move(object));
}

}  // namespace mstar

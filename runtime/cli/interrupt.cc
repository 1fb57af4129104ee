// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "cli/interrupt.h"

#include <atomic>
#include <csignal>

namespace mstar::cli {
namespace {

// Written by the handler only (on whichever thread the signal lands), read by any: a lock-free
// atomic is what a handler may touch.
std::atomic<int> g_caught{0};
static_assert(std::atomic<int>::is_always_lock_free);
struct sigaction g_previous_int, g_previous_term;

// The first signal (SIGINT or SIGTERM) is noted; a second, of either kind, ends the process as
// that signal would have by default (signal and raise are async-signal-safe).
extern "C" void OnInterrupt(int signal) {
  // One step: two signals landing together on two threads cannot both count as the first.
  if (g_caught.exchange(signal) != 0) {
    std::signal(signal, SIG_DFL);
    std::raise(signal);
  }
}

void Install(int signal, struct sigaction* previous) {
  struct sigaction action {};
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  // SA_RESTART keeps reads and sleeps going; the handler itself ends the process on a second
  // signal of either kind.
  action.sa_flags = SA_RESTART;
  sigaction(signal, &action, previous);
}

}  // namespace

InterruptWatch::InterruptWatch() {
  g_caught = 0;
  Install(SIGINT, &g_previous_int);
  Install(SIGTERM, &g_previous_term);
}

InterruptWatch::~InterruptWatch() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
}

int InterruptWatch::caught() const {
  return g_caught;
}

}  // namespace mstar::cli

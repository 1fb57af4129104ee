// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// InterruptWatch: catches the first SIGINT or SIGTERM while a command runs, so that the command
// can cancel its work and still report what it has (a run's finished requests, its audio). The
// handler is one-shot: a second signal takes the default action and ends the process at once.
//
// Threading: one InterruptWatch at a time in a process; caught() may be read from any thread.
#pragma once

namespace mstar::cli {

class InterruptWatch {
 public:
  // Installs the handlers; the destructor puts back the ones that were there before.
  InterruptWatch();
  ~InterruptWatch();
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

  // The signal caught (SIGINT or SIGTERM), or 0 while none came.
  int caught() const;
  // The conventional exit status of a command a signal ended: 128 + the signal.
  int exit_code() const { return 128 + caught(); }
};

}  // namespace mstar::cli

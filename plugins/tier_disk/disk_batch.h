// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// DiskBatchState: a submitted batch as the worker and the threads waiting for it share it, with
// the sharing of its GETs. The worker opens each run of consecutive GETs; then the worker and any
// thread waiting for the batch without a deadline claim the run's GETs one at a time and each
// runs the ones it claimed whole (read straight into the caller's buffer, every check). So a
// waiting thread reads and checks blocks beside the worker on the core that would otherwise sit
// in Wait; with nobody waiting, the worker runs them all.
//
// Threading: the open run, the count of GETs being run and `done` are guarded by the mutex (done
// is also readable without it). An op's result is written by the thread that ran it, before that
// thread reports it finished under the mutex; the worker closes a run only after every GET of it
// finished and marks the batch done after its last op, so a caller that saw done (acquire) sees
// every result.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>

#include "mstar/tier.h"

namespace mstar::tier_disk {

// Runs one GET whole and sets its op->result (thread-safe: called from any thread at once). One
// that throws fails its op with MSTAR_ERR_INTERNAL; the exception goes no further.
using RunGet = std::function<void(mstar_tier_op_t& op)>;

class DiskBatchState {
 public:
  using Clock = std::chrono::steady_clock;

  DiskBatchState(mstar_tier_op_t* ops, uint32_t count) : ops_(ops), count_(count) {}

  mstar_tier_op_t* ops() const { return ops_; }
  uint32_t count() const { return count_; }
  bool done() const { return done_.load(std::memory_order_acquire); }

  // Worker: runs ops [first, end), all GETs, together with any waiting thread. Returns when every
  // one of them has its result.
  void RunGets(uint32_t first, uint32_t end, const RunGet& run);
  // Worker: every op has its result.
  void MarkDone();
  // Caller: waits until the batch is done (true) or the deadline passes (false). Without a
  // deadline (nullopt) it runs GETs of the open run meanwhile; with one it only waits, since a
  // claimed GET runs to its end however long its storage takes.
  bool WaitHelping(std::optional<Clock::time_point> deadline, const RunGet& run);

 private:
  // Claims the open run's next GET and runs it with lock released; false when none is left.
  bool ClaimAndRun(std::unique_lock<std::mutex>& lock, const RunGet& run);

  mstar_tier_op_t* const ops_;
  const uint32_t count_;
  std::atomic<bool> done_{false};
  std::mutex mutex_;
  std::condition_variable cv_;
  uint32_t next_ = 0;  // the open run's unclaimed GETs: [next_, end_)
  uint32_t end_ = 0;
  uint32_t running_ = 0;  // claimed, not yet finished
};

}  // namespace mstar::tier_disk

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// DiskBatchState: a submitted batch as the worker and the threads waiting for it share it, with
// the hand-off of its GETs' payload checks. The worker reads each block straight into the
// caller's buffer and queues the check of its payload checksum instead of computing it; a thread
// waiting for the batch, or the worker once its run of reads is over, takes queued checks and
// runs them. So one block's checksum is computed while the next block is read, on the core that
// would otherwise sit in Wait, and a GET's result is never reported before its payload checked out.
//
// Threading: the queue, the count of checks being run and `done` are guarded by the mutex (done is
// also readable without it). An op's result is written by whichever thread ran its check, before
// that thread reports the check finished under the mutex; the worker marks the batch done only
// after every check of it finished, so a caller that saw done (acquire) sees every result.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "block_file.h"

namespace mstar::tier_disk {

// A GET whose bytes are in op->data, waiting for its payload check.
struct PayloadJob {
  mstar_tier_op_t* op = nullptr;
  PayloadCheck check;
};

// Runs a job's check and sets op->result (thread-safe: called from any thread).
using RunPayloadJob = std::function<void(const PayloadJob&)>;

class DiskBatchState {
 public:
  using Clock = std::chrono::steady_clock;

  DiskBatchState(mstar_tier_op_t* ops, uint32_t count) : ops_(ops), count_(count) {}

  mstar_tier_op_t* ops() const { return ops_; }
  uint32_t count() const { return count_; }
  bool done() const { return done_.load(std::memory_order_acquire); }

  // Worker: queues a read block's check for whichever thread gets to it first (a waiter is woken
  // once two are queued).
  void QueueCheck(const PayloadJob& job);
  // Worker, at the end of a run of GETs: runs every check still queued, then waits for the ones
  // other threads took. Afterwards every GET of the run has its result.
  void FinishChecks(const RunPayloadJob& run);
  // Worker: every op has its result.
  void MarkDone();
  // Caller: runs queued checks while the batch is not done, until it is done (true) or the
  // deadline passes (false; nullopt: no deadline).
  bool WaitHelping(std::optional<Clock::time_point> deadline, const RunPayloadJob& run);

 private:
  // Takes the next queued check; the caller holds lock and gives it back after running it.
  bool TakeAndRun(std::unique_lock<std::mutex>& lock, const RunPayloadJob& run);

  mstar_tier_op_t* const ops_;
  const uint32_t count_;
  std::atomic<bool> done_{false};
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<PayloadJob> queued_;  // jobs [next_, size) are waiting
  size_t next_ = 0;
  uint32_t running_ = 0;  // taken, not yet finished
};

}  // namespace mstar::tier_disk

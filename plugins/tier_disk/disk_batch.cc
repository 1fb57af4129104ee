// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "disk_batch.h"

namespace mstar::tier_disk {

void DiskBatchState::QueueCheck(const PayloadJob& job) {
  size_t waiting;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queued_.empty()) queued_.reserve(count_);
    queued_.push_back(job);
    waiting = queued_.size() - next_;
  }
  // Wake a waiter once two checks are waiting, not for each: a waiter woken per block costs a
  // cross-core wake-up per read; checks left over at the end of a run the worker runs itself.
  if (waiting >= 2) cv_.notify_all();
}

bool DiskBatchState::TakeAndRun(std::unique_lock<std::mutex>& lock, const RunPayloadJob& run) {
  if (next_ == queued_.size()) return false;
  const PayloadJob job = queued_[next_++];
  ++running_;
  lock.unlock();
  run(job);
  lock.lock();
  --running_;
  return true;
}

void DiskBatchState::FinishChecks(const RunPayloadJob& run) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (TakeAndRun(lock, run)) {
  }
  cv_.wait(lock, [&] { return running_ == 0; });
  queued_.clear();
  next_ = 0;
}

void DiskBatchState::MarkDone() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

bool DiskBatchState::WaitHelping(std::optional<Clock::time_point> deadline,
                                 const RunPayloadJob& run) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (done()) return true;
    if (TakeAndRun(lock, run)) {
      if (running_ == 0) cv_.notify_all();  // the worker may be waiting for this check
      continue;
    }
    auto ready = [&] { return done() || next_ < queued_.size(); };
    if (!deadline) {
      cv_.wait(lock, ready);
    } else if (!cv_.wait_until(lock, *deadline, ready)) {
      return false;
    }
  }
}

}  // namespace mstar::tier_disk

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "disk_batch.h"

namespace mstar::tier_disk {

bool DiskBatchState::ClaimAndRun(std::unique_lock<std::mutex>& lock, const RunGet& run) {
  if (next_ == end_) return false;
  mstar_tier_op_t& op = ops_[next_++];
  ++running_;
  lock.unlock();
  // Nothing leaves a GET (the caller may be the worker thread, and an exception left running_
  // counting it, so the worker would wait for it forever): the op fails instead.
  try {
    run(op);
  } catch (...) {
    op.result = MSTAR_ERR_INTERNAL;
  }
  lock.lock();
  --running_;
  return true;
}

void DiskBatchState::RunGets(uint32_t first, uint32_t end, const RunGet& run) {
  std::unique_lock<std::mutex> lock(mutex_);
  next_ = first;
  end_ = end;
  // Worth waking a waiter only when there is a second GET for it to take.
  if (end - first >= 2) cv_.notify_all();
  while (ClaimAndRun(lock, run)) {
  }
  cv_.wait(lock, [&] { return running_ == 0; });
}

void DiskBatchState::MarkDone() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

bool DiskBatchState::WaitHelping(std::optional<Clock::time_point> deadline, const RunGet& run) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (done()) return true;
    // A GET runs to its end once claimed (a read stuck on storage cannot be called off), so only
    // a wait without a deadline takes one; a wait with one keeps it.
    if (!deadline && ClaimAndRun(lock, run)) {
      if (running_ == 0 && next_ == end_) cv_.notify_all();  // the worker may wait for this one
      continue;
    }
    auto ready = [&] { return done() || (!deadline && next_ < end_); };
    if (!deadline) {
      cv_.wait(lock, ready);
    } else if (!cv_.wait_until(lock, *deadline, ready)) {
      return false;
    }
  }
}

}  // namespace mstar::tier_disk

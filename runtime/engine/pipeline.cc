// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "engine/pipeline.h"

#include <pthread.h>

#include "core/clock.h"

namespace mstar {
namespace {

void NameThread(std::thread& thread, const char* name) {
  pthread_setname_np(thread.native_handle(), name);
}

// A spinning thread's hint to the core that it waits (less power, the sibling thread runs).
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

void WorkQueue::Push(std::unique_ptr<BatchWork> work) {
  PushAndAnnounce(work, /*unless_closed=*/false);
}

bool WorkQueue::PushUnlessClosed(std::unique_ptr<BatchWork>& work) {
  return PushAndAnnounce(work, /*unless_closed=*/true);
}

bool WorkQueue::PushAndAnnounce(std::unique_ptr<BatchWork>& work, bool unless_closed) {
  size_t size = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (unless_closed && closed_) return false;
    items_.push_back(std::move(work));
    size = items_.size();
  }
  // After the unlock, so that a spinning popper finds the mutex free (locking it while held would
  // put that thread to sleep after all). A late store is never 0 (only Pop writes 0, under the
  // lock): at worst a spinner stops early and waits as usual.
  size_.store(size, std::memory_order_release);
  ready_.notify_one();
  return true;
}

std::unique_ptr<BatchWork> WorkQueue::Pop(std::chrono::nanoseconds spin) {
  if (spin.count() > 0) SpinWhileEmpty(spin);
  std::unique_lock<std::mutex> lock(mutex_);
  auto ready = [&] { return !items_.empty() || (closed_ && holds_ == 0); };
  if (!ready()) {
    ++pops_that_waited_;
    ready_.wait(lock, ready);
  }
  if (items_.empty()) return nullptr;
  std::unique_ptr<BatchWork> work = std::move(items_.front());
  items_.pop_front();
  size_.store(items_.size(), std::memory_order_release);
  return work;
}

uint64_t WorkQueue::pops_that_waited() {
  std::lock_guard<std::mutex> lock(mutex_);
  return pops_that_waited_;
}

void WorkQueue::SpinWhileEmpty(std::chrono::nanoseconds spin) {
  const uint64_t deadline = NowNs() + static_cast<uint64_t>(spin.count());
  for (uint32_t polls = 1;
       size_.load(std::memory_order_acquire) == 0 && !closing_.load(std::memory_order_relaxed);
       ++polls) {
    if (NowNs() >= deadline) return;
    // Now and then the core goes to any other thread ready to run on it (on a machine with few
    // cores, the one about to push, or the client's).
    if (polls % 64 == 0) {
      std::this_thread::yield();
    } else {
      CpuRelax();
    }
  }
}

void WorkQueue::Hold() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++holds_;
}

void WorkQueue::Release() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --holds_;
  }
  ready_.notify_all();
}

void WorkQueue::Close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    closing_.store(true, std::memory_order_relaxed);
  }
  ready_.notify_all();
}

std::chrono::microseconds IdleSpinFor(const PipelineOptions& options) {
  if (options.idle_spin) return *options.idle_spin;
  return std::thread::hardware_concurrency() >= kIdleSpinMinThreads ? kIdleSpin
                                                                    : std::chrono::microseconds(0);
}

Pipeline::Pipeline(Engine& engine, Conductor& conductor, PipelineOptions options)
    : engine_(engine), conductor_(conductor), options_(options), idle_spin_(IdleSpinFor(options)) {}

Pipeline::~Pipeline() {
  Stop();
}

void Pipeline::Start() {
  if (started_) return;
  started_ = true;
  scheduler_ = std::thread([this] { ScheduleLoop(); });
  planner_ = std::thread([this] { PlanLoop(); });
  executor_ = std::thread([this] { ExecLoop(); });
  finisher_ = std::thread([this] { FinishLoop(); });
  NameThread(scheduler_, "mstar-sched");
  NameThread(planner_, "mstar-plan");
  NameThread(executor_, "mstar-exec");
  NameThread(finisher_, "mstar-finish");
  conductor_.SetIdleLauncher(this);
}

void Pipeline::Stop() {
  if (!started_) return;
  // From one of its own threads (a stream callback closing the session) a join would never end.
  const std::thread::id self = std::this_thread::get_id();
  MSTAR_CHECK(self != scheduler_.get_id() && self != planner_.get_id() &&
              self != executor_.get_id() && self != finisher_.get_id() &&
              "a stream callback on the engine's thread may not close the session");
  started_ = false;
  conductor_.Stop();
  scheduler_.join();  // closes to_plan_ on its way out; each stage then drains and closes the next
  planner_.join();
  executor_.join();
  finisher_.join();
  conductor_.SetIdleLauncher(nullptr);
}

bool Pipeline::Claim(bool nothing_in_flight) {
  // With nothing in flight the executor is waiting or on its way back to wait (delivering the
  // last batch's outputs, recycling it): the batch is there when it looks, without a wake.
  auto idle = [&] {
    return nothing_in_flight || executor_waiting_.load(std::memory_order_relaxed);
  };
  if (!idle()) return false;
  to_exec_.Hold();
  if (staged_.fetch_add(1, std::memory_order_relaxed) == 0 && idle()) return true;
  Unclaim();
  return false;
}

void Pipeline::Launch(std::unique_ptr<BatchWork> work) {
  to_exec_.Push(std::move(work));
  to_exec_.Release();
}

void Pipeline::Unclaim() {
  staged_.fetch_sub(1, std::memory_order_relaxed);
  to_exec_.Release();
}

void Pipeline::ScheduleLoop() {
  while (true) {
    auto work = std::make_unique<BatchWork>();
    if (!conductor_.NextBatch(work.get())) break;
    // With nothing staged and the executor waiting, there is no launch for planning to overlap:
    // the batch goes to the executor, which plans it, one thread wake sooner (a request reaching
    // an idle engine starts that much earlier). Otherwise the planner prepares it meanwhile.
    const bool nothing_staged = staged_.fetch_add(1, std::memory_order_relaxed) == 0;
    if (nothing_staged && executor_waiting_.load(std::memory_order_relaxed)) {
      to_exec_.Push(std::move(work));
    } else {
      to_plan_.Push(std::move(work));
    }
  }
  to_plan_.Close();  // the planner closes to_exec_ after it, so nothing pushed above is lost
}

void Pipeline::PlanLoop() {
  while (std::unique_ptr<BatchWork> work = to_plan_.Pop()) {
    if (work->finished) {
      conductor_.Recycle(*work);
      continue;
    }
    Plan(*work);
    to_exec_.Push(std::move(work));
  }
  to_exec_.Close();
}

void Pipeline::Plan(BatchWork& work) {
  work.planned = true;
  ExecutingBatch& batch = work.batch;
  for (StepRequest& step : batch.requests) {
    if (!step.needs_reload) continue;
    AdmitOutcome ready = engine_.CheckReady(batch.node, step.info, /*allow_reload=*/true);
    if (ready.outcome == MSTAR_ADMIT_UNSERVABLE) {
      step.Fail("reloading its offloaded state: " + ready.error);
      step.lost_state = ready.lost;
      continue;
    }
    step.reloaded = ready.reloaded;
    if (ready.outcome == MSTAR_ADMIT_NOT_READY) {
      step.not_ready = true;
      step.wait_reason = ready.wait_reason;
      step.waiting_on = ready.resource;
    }
  }
  engine_.PrepareInputs(batch);
  // Lease the slot the batch will replay on and plan its resources ahead into it, while the
  // previous batch executes on another slot; an eager batch leases the slot its forward's
  // captured regions replay on.
  if (std::optional<SlotLease> lease = engine_.ReserveReplaySlot(batch)) {
    batch.Lease(*lease);
    engine_.PrePlanForBatch(batch);
  } else if (std::optional<int32_t> region_slot = engine_.ReserveRegionSlot(batch)) {
    batch.region_slot = *region_slot;
  }
}

void Pipeline::ExecLoop() {
  std::unique_ptr<BatchWork> spare;
  while (true) {
    executor_waiting_.store(true, std::memory_order_relaxed);
    std::unique_ptr<BatchWork> work = to_exec_.Pop(idle_spin_);
    executor_waiting_.store(false, std::memory_order_relaxed);
    if (work == nullptr) break;
    staged_.fetch_sub(1, std::memory_order_relaxed);
    if (!work->planned) Plan(*work);  // formed by the finisher, or by the scheduler when idle
    while (work != nullptr) {
      engine_.ExecAndPostprocess(work->batch);
      // When no batch is on its way to this thread, the next step that became ready is formed and
      // planned here and runs at once: a decode loop makes no hand-offs.
      std::unique_ptr<BatchWork> next;
      if (staged_.load(std::memory_order_relaxed) == 0)
        next = spare != nullptr ? std::move(spare) : std::make_unique<BatchWork>();
      // A batch finished here is finished before the next step is formed, so a stop it decides
      // costs no step at all.
      bool formed = false;
      if (FinishesHere(*work)) {
        conductor_.AfterExec(*work, nullptr, /*finish_follows=*/true);
        formed = Finish(*work, next.get());
        conductor_.Recycle(*work);
        if (spare == nullptr) spare = std::move(work);
      } else {
        formed = conductor_.AfterExec(*work, next.get());
        unfinished_.fetch_add(1, std::memory_order_relaxed);
        to_finish_.Push(std::move(work));
      }
      if (!formed) {
        if (next != nullptr) spare = std::move(next);
        break;
      }
      Plan(*next);
      work = std::move(next);
    }
  }
  to_finish_.Close();
}

bool Pipeline::FinishesHere(const BatchWork& work) {
  return options_.finish_on_executor && unfinished_.load(std::memory_order_relaxed) == 0 &&
         engine_.StopInputsOnHost(work.batch);
}

bool Pipeline::Finish(BatchWork& work, BatchWork* next) {
  engine_.CheckStopForBatch(work.batch);
  engine_.ExtendPrefixChains(work.batch);
  return conductor_.AfterFinish(work, next);
}

void Pipeline::Release(std::unique_ptr<BatchWork> work) {
  work->finished = true;
  if (!to_plan_.PushUnlessClosed(work)) conductor_.Recycle(*work);
}

void Pipeline::FinishLoop() {
  std::unique_ptr<BatchWork> spare;
  while (std::unique_ptr<BatchWork> work = to_finish_.Pop()) {
    // A step this stop check let go (one that waited so as not to run ahead of it) is formed here
    // when no batch is on its way to the executor, and goes to it directly; the executor, idle
    // until then, plans it, while this thread goes on to the next stop check.
    // The hold keeps the executor from ending (at shutdown) before such a batch reaches it.
    std::unique_ptr<BatchWork> next;
    const bool held = staged_.load(std::memory_order_relaxed) == 0;
    if (held) {
      next = spare != nullptr ? std::move(spare) : std::make_unique<BatchWork>();
      to_exec_.Hold();
    }
    bool formed = Finish(*work, next.get());
    unfinished_.fetch_sub(1, std::memory_order_relaxed);
    if (formed) {
      staged_.fetch_add(1, std::memory_order_relaxed);
      to_exec_.Push(std::move(next));
    } else if (held) {
      spare = std::move(next);
    }
    if (held) to_exec_.Release();
    Release(std::move(work));
  }
}

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Pipeline: the engine's four threads, each a stage a batch goes through in order.
//   scheduler  forms the next batch from the ready queues (Conductor::NextBatch); hands it to
//              the executor directly when that waits with nothing staged (no launch to overlap).
//              A client's submission to an idle executor forms its first batch itself and
//              hands it over (IdleLauncher): one thread woken, not two
//   plan       reloads offloaded requests, prepare_inputs, leases a replay slot and pre-plans
//              into it (Engine::ReserveReplaySlot, PrePlanForBatch): batch N+1 while N executes
//   exec       declare, admit, plan, forward, commit, postprocess; routes node-to-node outputs so
//              the next step can be formed at once (Engine::ExecAndPostprocess, AfterExec); when
//              the scheduler has no batch on its way, forms, plans and runs that step itself
//   finish     stop checks on host copies, prefix chains, then stops, persisted values, streams
//              and client outputs (AfterFinish), overlapping the next launch; the planner then
//              releases the batch's tensors
// At most three batches are in flight, so a stop decided after step N costs at most one step.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "engine/conductor.h"

namespace mstar {

// An unbounded hand-off queue between stages (the conductor bounds how many batches exist).
// Thread-safe. A producer other than the one that closes it holds it (Hold) while it may still
// push, and releases the hold after; the queue ends only when closed, empty and not held.
class WorkQueue {
 public:
  void Push(std::unique_ptr<BatchWork> work);
  // Pushes work (taking it) unless the queue is closed; false, with work left, when it is.
  bool PushUnlessClosed(std::unique_ptr<BatchWork>& work);
  // Blocks for the next batch; nullptr once closed, empty and not held. With spin, an empty queue
  // is first polled for up to that long (yielding the core now and then) before the thread
  // sleeps: work pushed meanwhile is taken without a wake, and its pusher makes no wake call.
  std::unique_ptr<BatchWork> Pop(std::chrono::nanoseconds spin = std::chrono::nanoseconds(0));
  // How many Pops found the queue empty (after any spin) and waited on its condition variable.
  uint64_t pops_that_waited();
  void Close();
  void Hold();
  void Release();

 private:
  void SpinWhileEmpty(std::chrono::nanoseconds spin);
  // Pushes work (unless closed, when unless_closed), then, without the lock, publishes the new
  // size and wakes a waiting popper; false, with work left, when it did not push.
  bool PushAndAnnounce(std::unique_ptr<BatchWork>& work, bool unless_closed);

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::unique_ptr<BatchWork>> items_;
  int holds_ = 0;
  bool closed_ = false;
  uint64_t pops_that_waited_ = 0;
  std::atomic<size_t> size_{0};       // items_.size() as last published, read by SpinWhileEmpty
  std::atomic<bool> closing_{false};  // closed_, likewise
};

struct PipelineOptions {
  // Finish batches whose stop outputs are in host memory on the executor (see FinishesHere).
  // Off, every batch goes to the finisher thread, as batches with device outputs always do.
  bool finish_on_executor = true;
  // How long the executor, out of work, polls for its next batch before it sleeps. A batch that
  // comes meanwhile (the next request of a client that submits as soon as one ends, a step the
  // scheduler forms) starts without a thread wake, which costs 10-60 us on a virtual machine;
  // the price is a core kept busy that long each time the engine goes idle. 0: sleep at once.
  // Unset: kIdleSpin on a machine with at least kIdleSpinMinThreads hardware threads, else 0
  // (on fewer, the polling thread competes for a core with the threads it waits for).
  std::optional<std::chrono::microseconds> idle_spin;
};

inline constexpr std::chrono::microseconds kIdleSpin{200};
inline constexpr unsigned kIdleSpinMinThreads = 4;

// The executor's poll before it sleeps: options.idle_spin, or the default for this machine.
std::chrono::microseconds IdleSpinFor(const PipelineOptions& options);

class Pipeline : private IdleLauncher {
 public:
  Pipeline(Engine& engine, Conductor& conductor, PipelineOptions options = {});
  ~Pipeline() override;
  void Start();
  // Stops forming batches, lets the batches in flight drain, and joins the threads.
  void Stop();

 private:
  // IdleLauncher: the executor, waiting (or finishing the last batch in flight) with nothing
  // staged, is reserved by counting the client's batch as staged; the hold on to_exec_ keeps it
  // from ending before the launch.
  bool Claim(bool nothing_in_flight) override;
  void Launch(std::unique_ptr<BatchWork> work) override;
  void Unclaim() override;
  void ScheduleLoop();
  void PlanLoop();
  void ExecLoop();
  void FinishLoop();
  // The plan stage of one batch: reloads, prepare_inputs, a replay slot and pre-planning.
  void Plan(BatchWork& work);
  // The finish stage: stop checks, prefix chains, AfterFinish (forming next when given).
  bool Finish(BatchWork& work, BatchWork* next);
  // A finished batch's step records go back to the conductor, their tensors released, on the
  // planner thread (mostly idle), not on the finisher, whose stop checks bound the step rate.
  void Release(std::unique_ptr<BatchWork> work);
  // Whether the executor finishes work itself rather than handing it to the finisher: when the
  // finisher has nothing in hand (batches finish in order) and the stop check reads host memory
  // only. On a host device the forward is synchronous, so the check has no device work to overlap,
  // and on a machine whose cores the forward keeps busy, a second thread only competes with it:
  // measured, finishing here cut the echo engine's overhead at batch 256 by about 3x.
  bool FinishesHere(const BatchWork& work);

  Engine& engine_;
  Conductor& conductor_;
  PipelineOptions options_;
  const std::chrono::microseconds idle_spin_;  // IdleSpinFor(options_)
  WorkQueue to_plan_;
  WorkQueue to_exec_;
  WorkQueue to_finish_;
  std::atomic<int> staged_{0};                 // batches formed for the executor, not yet executing
  std::atomic<bool> executor_waiting_{false};  // the executor is blocked for its next batch
  std::atomic<int> unfinished_{0};             // batches handed to the finisher, not finished yet
  std::thread scheduler_;
  std::thread planner_;
  std::thread executor_;
  std::thread finisher_;
  bool started_ = false;
};

}  // namespace mstar

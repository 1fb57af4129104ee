// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Pipeline: the engine's four threads, each a stage a batch goes through in order.
//   scheduler  forms the next batch from the ready queues (Conductor::NextBatch)
//   plan       reloads offloaded requests, prepare_inputs, leases a replay slot and pre-plans
//              into it (Engine::ReserveReplaySlot, PrePlanForBatch): batch N+1 while N executes
//   exec       declare, admit, plan, forward, commit, postprocess; routes node-to-node outputs so
//              the next step can be formed at once (Engine::ExecAndPostprocess, AfterExec)
//   finish     stop checks on host copies, prefix chains, then stops, persisted values, streams
//              and client outputs (AfterFinish), overlapping the next launch
// At most three batches are in flight, so a stop decided after step N costs at most one step.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "engine/conductor.h"

namespace mstar {

// An unbounded hand-off queue between two stages (the conductor bounds how many batches exist).
class WorkQueue {
 public:
  void Push(std::unique_ptr<BatchWork> work);
  // Blocks for the next batch; nullptr once closed and empty.
  std::unique_ptr<BatchWork> Pop();
  void Close();

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::unique_ptr<BatchWork>> items_;
  bool closed_ = false;
};

class Pipeline {
 public:
  Pipeline(Engine& engine, Conductor& conductor);
  ~Pipeline();
  void Start();
  // Stops forming batches, lets the batches in flight drain, and joins the threads.
  void Stop();

 private:
  void ScheduleLoop();
  void PlanLoop();
  void ExecLoop();
  void FinishLoop();

  Engine& engine_;
  Conductor& conductor_;
  WorkQueue to_plan_;
  WorkQueue to_exec_;
  WorkQueue to_finish_;
  std::thread scheduler_;
  std::thread planner_;
  std::thread executor_;
  std::thread finisher_;
  bool started_ = false;
};

}  // namespace mstar

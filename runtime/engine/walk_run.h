// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// WalkRun: one request's progress through one walk. It holds each node's input ports, knows
// which nodes the program has reached, and moves the program on as steps complete: a sequence
// starts its next child, a parallel group waits for all children, a loop starts its next
// iteration until it reaches its limit or a stop ends it.
//
// Steps are speculative by design: a loop starts its next iteration as soon as the current one's
// last node completes, before the stop check of that step is known. Every dispatch gets a sequence
// number, and every value put in a port remembers the step that produced it. A stop decided by
// step S ends its loop right after S: every later step inside the loop is abandoned (withdrawn if
// not dispatched yet; completing "stale", outputs discarded, if it was), values produced by those
// steps are removed from the ports, and values they had consumed are put back, so the loop's
// state is exactly what S left (which matters when an enclosing loop runs it again). Each reset
// bumps a node's activation, so a scheduler entry or a dispatched step from before the reset is
// recognized as stale.
//
// Not thread-safe: the conductor serializes access under its lock.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/small_vector.h"
#include "engine/compiled_walk.h"
#include "host/tensor_objects.h"

namespace mstar {

// Per-loop counters of a step: a node sits in few loops, so they are kept inline.
using LoopCounters = boost::container::small_vector<uint32_t, 2>;

// What a dispatched step carries back to Complete, StopLoop and Confirm.
struct StepTicket {
  int node = -1;
  uint64_t activation = 0;
  uint64_t seq = 0;         // dispatch order within the walk run, from 1
  LoopCounters iterations;  // of the node's enclosing loops, at dispatch
  LoopCounters epochs;      // of those loops (a loop's epoch grows each time it starts)
};

class WalkRun {
 public:
  // loop_limits: the iteration limit of each loop section (indexed by section id; other entries
  // unused), already resolved from request parameters.
  WalkRun(const CompiledWalk& walk, const std::vector<uint32_t>& loop_limits);
  ~WalkRun();
  WalkRun(const WalkRun&) = delete;
  WalkRun& operator=(const WalkRun&) = delete;

  // Makes this run a fresh one of walk (this run's walk or another) with new loop limits, as if
  // newly constructed, keeping its buffers (a finished walk's run is reused by the next walk).
  // Any values still in ports or retained are released; a ticket of the old run is stale in the
  // new one.
  void Restart(const CompiledWalk& walk, const std::vector<uint32_t>& loop_limits);
  // Releases every value the run holds (its ports, what its steps consumed): for a run that is
  // over and kept for a later Restart.
  void ReleaseValues();

  const CompiledWalk& walk() const { return *walk_; }

  // Puts tensors (owned, host-managed) into a node's port; appends when the port holds some.
  // producer is the sequence number of the step that produced them (0: from outside the walk).
  // Returns whether the node became ready.
  bool Feed(int node, int port, const std::vector<mstar_tensor_t*>& tensors, uint64_t producer = 0);
  // The same for one tensor.
  bool Feed(int node, int port, mstar_tensor_t* tensor, uint64_t producer = 0);
  bool PortFilled(int node, int port) const { return !ports_[node][port].empty(); }

  // Starts the program. Returns the nodes that became ready.
  std::vector<int> Start();
  // The same, appending the nodes that became ready to *ready.
  void Start(std::vector<int>* ready);

  // Whether node is reached, has every port filled and is not dispatched.
  bool Ready(int node) const;
  uint64_t Activation(int node) const { return nodes_[node].activation; }

  // Takes the node's inputs for a step (consuming ports fed by edges, sharing sticky ones) into
  // inputs and returns the ticket. The node must be Ready. Consumed values are also retained
  // until the step is confirmed, so a stop can put them back.
  Result<StepTicket> Dispatch(int node, mstar_tensor_map* inputs);
  // The same into *ticket, reusing its buffers (the steady-state path allocates nothing).
  Status Dispatch(int node, mstar_tensor_map* inputs, StepTicket* ticket);

  // Takes back a dispatch that did not run (the request could not be admitted yet): its inputs
  // return to the node's ports (inputs is cleared) and the node is reached again. Returns the
  // nodes that are ready now (the node itself, unless it was abandoned meanwhile).
  std::vector<int> Undispatch(const StepTicket& ticket, mstar_tensor_map* inputs);

  // Whether a dispatched step's outputs must be discarded: its node was withdrawn or reset since
  // the dispatch (checked when the step completes).
  bool IsStale(const StepTicket& ticket) const {
    return nodes_[ticket.node].activation != ticket.activation;
  }
  // Whether a completed step has since been abandoned by a stop, or its walk withdrawn (checked
  // when its stop check and outputs are applied, after later steps may already have run).
  bool Abandoned(const StepTicket& ticket) const;

  // A dispatched step finished. A fresh step marks its node done and moves the program on; a
  // stale one only settles the abandoned loop. Returns the nodes that became ready.
  std::vector<int> Complete(const StepTicket& ticket);
  // The same, appending the nodes that became ready to *ready.
  void Complete(const StepTicket& ticket, std::vector<int>* ready);

  // The step's stop check and outputs have been applied: it can no longer be abandoned, so the
  // inputs it consumed are released.
  void Confirm(const StepTicket& ticket);

  // Ends the loop (a loop section enclosing stopper's node) right after the step stopper: later
  // steps inside the loop are abandoned (see the file comment). A run of the loop that reached its
  // limit through a step dispatched after stopper (one runs ahead of its stop check) is ended
  // after stopper all the same, also when its enclosing loop has since reset or restarted it for
  // its next pass. A stop from a run that ended with stopper as its last step, or from a step
  // abandoned itself, is ignored. Returns nodes that became ready (the sections after the loop,
  // once nothing of it is in flight).
  std::vector<int> StopLoop(int loop, const StepTicket& stopper);

  // Withdraws everything: no node is reached any more; in-flight steps become stale.
  void Abort();

  // The walk's partition ends after it (the output limit, a stop of the partition): no loop
  // starts from now on, and a loop running ends once its body's pass in flight completes. The
  // loops enclosing the stopping step are ended right after it by StopLoop.
  void EndLoops() { ending_ = true; }

  // Sets a loop's iteration count: its body ran that many times more, outside this run's own
  // steps (a cohort ran them under one dispatched step; conductor_cohort.cc). The step that
  // completes next then starts the iteration after.
  void SetIteration(int loop, uint32_t iteration) { sections_[loop].iteration = iteration; }

  bool finished() const { return finished_; }
  bool aborted() const { return aborted_; }
  // Not finished, nothing in flight and nothing ready: only this walk's steps feed its ports, so
  // it can never continue. Reports the first node waiting (and one empty port of it).
  bool Stuck(int* waiting_node, int* empty_port) const;
  // Steps dispatched and not yet completed.
  uint32_t in_flight() const { return in_flight_; }
  uint32_t iteration(int loop) const { return sections_[loop].iteration; }
  uint32_t limit(int loop) const { return limits_[loop]; }

 private:
  enum class NodeStatus { kIdle, kReached, kDispatched, kDone };
  struct NodeState {
    NodeStatus status = NodeStatus::kIdle;
    uint64_t activation = 1;
  };
  struct SectionState {
    uint32_t cursor = 0;             // sequence: current child; parallel: children done
    uint32_t iteration = 0;          // loop
    uint64_t stop_seq = UINT64_MAX;  // loop: the step whose stop ended this run
    // loop: the same for its previous runs, the latest first. A step still pending is at most a
    // few runs old (one step runs ahead of its stop check, and a loop of one iteration restarts at
    // each step).
    std::array<uint64_t, 3> earlier_stop_seqs = {UINT64_MAX, UINT64_MAX, UINT64_MAX};
    bool abandoning = false;         // loop: waiting for abandoned steps still in flight
    uint32_t in_flight = 0;          // loop: dispatched steps inside it
    uint64_t last_seq = 0;           // loop: the latest step dispatched inside this run
    uint64_t previous_last_seq = 0;  // loop: the same for its previous run
    uint64_t ended_at = 0;           // loop: the walk's latest dispatch when its last run ended
    uint32_t epoch = 0;              // loop: how many times it has started
    bool started = false;
    bool done = false;
  };
  struct PortValue {
    mstar_tensor_t* tensor;  // owned
    uint64_t producer;       // step sequence number; 0 from outside the walk
  };
  using RetainedValues = boost::container::small_vector<std::pair<int, PortValue>, 2>;
  struct Retained {
    uint64_t seq;           // the consuming step
    RetainedValues values;  // (port, a shared reference)
  };
  // Storage for walks of a few nodes and ports lives inline (a run is made per walk of every
  // request: its setup allocates nothing but itself); larger walks spill to the heap.
  template <class T, size_t N>
  using Small = boost::container::small_vector<T, N>;
  using Port = Small<PortValue, 1>;
  using RetainedList = Small<Retained, 1>;

  void StartSection(int section, std::vector<int>& ready);
  void SectionDone(int section, std::vector<int>& ready);
  // StopLoop for a run of loop that its enclosing loop reset (behind 0) or restarted (behind 1,
  // runs since) after it ended.
  void StopEndedRun(int loop, uint32_t behind, uint64_t stopper, std::vector<int>* ready);
  void ChildDone(int parent, std::vector<int>& ready);
  // Withdraws every node of a section (bumping activations) and resets its sections; values that
  // entered a loop from a node of the section are released.
  void Reset(int section);
  void ResetStates(int section);
  // Removes port values produced after seq and puts back what steps after seq consumed, for the
  // nodes of section; values its nodes sent to nodes outside it after seq go as well.
  void RollBack(int section, uint64_t seq);
  // Puts back[port] (values steps took from node's ports, in the order they took them) in front
  // of what each port holds, in that order.
  void PutBack(int node, const Small<Port, 2>& back);
  // Releases the values of port for which keep is false (the others keep their order).
  template <class Keep>
  void ReleaseUnless(Port& port, Keep&& keep);
  // Releases the values of port whose producer came after seq.
  void DropLater(Port& port, uint64_t seq);
  // Releases every value of port but those of its newest producer.
  void KeepNewest(Port& port);
  static void Release(Port& port);
  void Release(RetainedList& retained);

  const CompiledWalk* walk_;  // not owned; outlives the run
  Small<uint32_t, 4> limits_;
  Small<NodeState, 2> nodes_;
  Small<SectionState, 4> sections_;
  Small<Small<Port, 2>, 2> ports_;   // [node][port]
  Small<RetainedList, 2> retained_;  // [node]
  uint64_t next_seq_ = 0;
  uint32_t in_flight_ = 0;
  bool finished_ = false;
  bool aborted_ = false;
  bool ending_ = false;  // EndLoops
};

}  // namespace mstar

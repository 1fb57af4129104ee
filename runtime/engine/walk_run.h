// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// WalkRun: one request's progress through one walk. It holds each node's input ports, knows
// which nodes the program has reached, and moves the program on as steps complete: a sequence
// starts its next child, a parallel group waits for all children, a loop starts its next
// iteration until it reaches its limit or a stop ends it.
//
// Steps are speculative by design: a loop starts iteration i+1 as soon as iteration i's last node
// completes, before i's stop check is known. StopLoop(i) then abandons iteration i+1: nodes not
// yet dispatched are withdrawn, and a dispatched one completes as "dropped" (its outputs must be
// discarded). Each reset bumps the node's activation id, so a scheduler entry or a dispatched
// step from before the reset is recognized as stale.
//
// Not thread-safe: the conductor serializes access under its lock.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/compiled_walk.h"
#include "host/tensor_objects.h"

namespace mstar {

// What a dispatched step carries back to Complete.
struct StepTicket {
  int node = -1;
  uint64_t activation = 0;
  std::vector<uint32_t> iterations;  // of the node's enclosing loops, at dispatch
  std::vector<uint32_t> epochs;      // of those loops (a loop's epoch grows each time it starts)
};

class WalkRun {
 public:
  // loop_limits: the iteration limit of each loop section (indexed by section id; other entries
  // unused), already resolved from request parameters.
  WalkRun(const CompiledWalk& walk, std::vector<uint32_t> loop_limits);
  ~WalkRun();
  WalkRun(const WalkRun&) = delete;
  WalkRun& operator=(const WalkRun&) = delete;

  const CompiledWalk& walk() const { return walk_; }

  // Puts tensors (owned, host-managed) into a node's port; appends when the port holds some.
  // Returns whether the node became ready.
  bool Feed(int node, int port, std::vector<mstar_tensor_t*> tensors);
  bool PortFilled(int node, int port) const { return !ports_[node][port].empty(); }

  // Starts the program. Returns the nodes that became ready.
  std::vector<int> Start();

  // Whether node is reached, has every port filled and is not dispatched.
  bool Ready(int node) const;
  uint64_t Activation(int node) const { return nodes_[node].activation; }

  // Takes the node's inputs for a step (consuming ports fed by edges, sharing sticky ones) into
  // inputs and returns the ticket. The node must be Ready.
  Result<StepTicket> Dispatch(int node, mstar_tensor_map* inputs);

  // Takes back a dispatch that did not run (the request could not be admitted yet): the inputs
  // (owned) return to the node's ports and the node is reached again. Returns the nodes that are
  // ready now (the node itself, unless its iteration was abandoned meanwhile).
  std::vector<int> Undispatch(const StepTicket& ticket, mstar_tensor_map* inputs);

  // Whether a dispatched step's outputs must be discarded: its node was withdrawn or reset since
  // the dispatch (checked when the step completes).
  bool IsStale(const StepTicket& ticket) const { return nodes_[ticket.node].activation != ticket.activation; }
  // Whether a completed step's iteration has since been abandoned by a stop, or its loop or walk
  // withdrawn (checked when its stop check and outputs are applied, after later iterations may
  // already have run). An inner loop that restarted since (its enclosing loop moved on) is judged
  // by how its previous run ended; a step two or more runs older counts as abandoned.
  bool Abandoned(const StepTicket& ticket) const;

  // A dispatched step finished. A fresh step marks its node done and moves the program on; a stale
  // one only settles the abandoned iteration. Returns the nodes that became ready.
  std::vector<int> Complete(const StepTicket& ticket);

  // Ends the loop (a loop section id, in the run that had the given epoch) after iteration: later
  // iterations are abandoned. Returns nodes that became ready (the sections after the loop, once
  // nothing of it is in flight). A stop for an earlier run of the loop is ignored.
  std::vector<int> StopLoop(int loop, uint32_t iteration, uint32_t epoch);

  // Withdraws everything: no node is reached any more; in-flight steps become stale.
  void Abort();

  bool finished() const { return finished_; }
  bool aborted() const { return aborted_; }
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
    uint32_t cursor = 0;     // sequence: current child; parallel: children done
    uint32_t iteration = 0;  // loop
    uint32_t stop_after = UINT32_MAX;
    bool abandoning = false;  // loop: waiting for in-flight steps of an abandoned iteration
    uint32_t in_flight = 0;   // loop: dispatched steps inside it
    uint32_t epoch = 0;       // loop: how many times it has started
    uint32_t last_stop_after = UINT32_MAX;  // loop: stop_after of its previous run (epoch - 1)
    bool started = false;
    bool done = false;
  };

  void StartSection(int section, std::vector<int>& ready);
  void SectionDone(int section, std::vector<int>& ready);
  void ChildDone(int parent, std::vector<int>& ready);
  // Withdraws every node of a section (bumping activations) and resets its sections.
  void Reset(int section);
  void ClearPorts(int section);
  void AbandonIteration(int loop, std::vector<int>& ready);
  void Release(std::vector<mstar_tensor_t*>& port);

  const CompiledWalk& walk_;
  std::vector<uint32_t> limits_;
  std::vector<NodeState> nodes_;
  std::vector<SectionState> sections_;
  std::vector<std::vector<std::vector<mstar_tensor_t*>>> ports_;  // [node][port] -> tensors (owned)
  uint32_t in_flight_ = 0;
  bool finished_ = false;
  bool aborted_ = false;
};

}  // namespace mstar

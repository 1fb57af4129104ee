// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "engine/walk_run.h"

#include <algorithm>

namespace mstar {

WalkRun::WalkRun(const CompiledWalk& walk, std::vector<uint32_t> loop_limits)
    : walk_(walk),
      limits_(std::move(loop_limits)),
      nodes_(walk.nodes().size()),
      sections_(walk.sections().size()),
      ports_(walk.nodes().size()) {
  limits_.resize(sections_.size(), 1);
  for (size_t n = 0; n < ports_.size(); ++n) ports_[n].resize(walk.nodes()[n].ports.size());
}

WalkRun::~WalkRun() {
  for (auto& node_ports : ports_) {
    for (auto& port : node_ports) Release(port);
  }
}

void WalkRun::Release(std::vector<mstar_tensor_t*>& port) {
  for (mstar_tensor_t* t : port) ReleaseTensor(t);
  port.clear();
}

bool WalkRun::Ready(int node) const {
  if (nodes_[node].status != NodeStatus::kReached || aborted_) return false;
  for (const auto& port : ports_[node]) {
    if (port.empty()) return false;
  }
  return true;
}

bool WalkRun::Feed(int node, int port, std::vector<mstar_tensor_t*> tensors) {
  bool was_ready = Ready(node);
  auto& slot = ports_[node][port];
  slot.insert(slot.end(), tensors.begin(), tensors.end());
  return !was_ready && Ready(node);
}

std::vector<int> WalkRun::Start() {
  std::vector<int> ready;
  StartSection(0, ready);
  return ready;
}

void WalkRun::StartSection(int section, std::vector<int>& ready) {
  const CompiledSection& spec = walk_.sections()[section];
  SectionState& state = sections_[section];
  state.cursor = 0;
  state.done = false;
  state.started = true;
  switch (spec.kind) {
    case SectionSpec::Kind::kNode:
      nodes_[spec.node].status = NodeStatus::kReached;
      if (Ready(spec.node)) ready.push_back(spec.node);
      return;
    case SectionSpec::Kind::kSequence:
      StartSection(spec.children[0], ready);
      return;
    case SectionSpec::Kind::kParallel:
      for (int child : spec.children) StartSection(child, ready);
      return;
    case SectionSpec::Kind::kLoop:
      state.iteration = 0;
      state.last_stop_after = state.stop_after;
      state.stop_after = UINT32_MAX;
      state.abandoning = false;
      ++state.epoch;
      if (limits_[section] == 0) {
        SectionDone(section, ready);
      } else {
        StartSection(spec.children[0], ready);
      }
      return;
  }
}

void WalkRun::SectionDone(int section, std::vector<int>& ready) {
  sections_[section].done = true;
  int parent = walk_.sections()[section].parent;
  if (parent == -1) {
    finished_ = true;
  } else {
    ChildDone(parent, ready);
  }
}

void WalkRun::ChildDone(int parent, std::vector<int>& ready) {
  const CompiledSection& spec = walk_.sections()[parent];
  SectionState& state = sections_[parent];
  switch (spec.kind) {
    case SectionSpec::Kind::kNode:
      return;
    case SectionSpec::Kind::kSequence:
      if (++state.cursor < spec.children.size()) {
        StartSection(spec.children[state.cursor], ready);
      } else {
        SectionDone(parent, ready);
      }
      return;
    case SectionSpec::Kind::kParallel:
      if (++state.cursor == spec.children.size()) SectionDone(parent, ready);
      return;
    case SectionSpec::Kind::kLoop: {
      uint32_t finished = state.iteration;
      if (finished >= state.stop_after || finished + 1 >= limits_[parent]) {
        ClearPorts(spec.children[0]);
        SectionDone(parent, ready);
        return;
      }
      state.iteration = finished + 1;
      Reset(spec.children[0]);
      // Restart the body without restarting the loop itself (StartSection would reset it).
      int body = spec.children[0];
      sections_[body].cursor = 0;
      StartSection(body, ready);
      return;
    }
  }
}

void WalkRun::Reset(int section) {
  for (int node : walk_.sections()[section].nodes) {
    ++nodes_[node].activation;
    nodes_[node].status = NodeStatus::kIdle;
  }
  // Nested sections restart from scratch; loop in-flight counts stay (tickets settle them).
  std::vector<int> stack = {section};
  while (!stack.empty()) {
    int s = stack.back();
    stack.pop_back();
    SectionState& state = sections_[s];
    state.cursor = 0;
    state.done = false;
    state.started = false;
    state.abandoning = false;
    for (int child : walk_.sections()[s].children) stack.push_back(child);
  }
}

void WalkRun::ClearPorts(int section) {
  for (int node : walk_.sections()[section].nodes) {
    const std::vector<CompiledPort>& ports = walk_.nodes()[node].ports;
    for (size_t p = 0; p < ports.size(); ++p) {
      if (!ports[p].sticky) Release(ports_[node][p]);
    }
  }
}

Result<StepTicket> WalkRun::Dispatch(int node, mstar_tensor_map* inputs) {
  if (!Ready(node)) return Internal("dispatching a node that is not ready");
  const std::vector<CompiledPort>& ports = walk_.nodes()[node].ports;
  for (size_t p = 0; p < ports.size(); ++p) {
    auto& slot = ports_[node][p];
    if (ports[p].sticky) {
      for (mstar_tensor_t* t : slot) {
        Result<mstar_tensor_t*> shared = ShareTensor(t);
        if (!shared.ok()) return shared.status();
        MSTAR_RETURN_IF_ERROR(inputs->Append(ports[p].name, shared.value()));
      }
    } else {
      for (mstar_tensor_t* t : slot) MSTAR_RETURN_IF_ERROR(inputs->Append(ports[p].name, t));
      slot.clear();
    }
  }
  StepTicket ticket{node, nodes_[node].activation, {}, {}};
  for (int loop : walk_.nodes()[node].loops) {
    ticket.iterations.push_back(sections_[loop].iteration);
    ticket.epochs.push_back(sections_[loop].epoch);
    ++sections_[loop].in_flight;
  }
  nodes_[node].status = NodeStatus::kDispatched;
  ++in_flight_;
  return ticket;
}

std::vector<int> WalkRun::Undispatch(const StepTicket& ticket, mstar_tensor_map* inputs) {
  if (IsStale(ticket) || aborted_) {
    inputs->Clear();
    return Complete(ticket);  // settles an abandoned iteration like a dropped step
  }
  --in_flight_;
  for (int loop : walk_.nodes()[ticket.node].loops) --sections_[loop].in_flight;
  const std::vector<CompiledPort>& ports = walk_.nodes()[ticket.node].ports;
  for (size_t p = 0; p < ports.size(); ++p) {
    mstar_tensor_map::Entry* entry = inputs->Find(ports[p].name);
    if (entry == nullptr || ports[p].sticky) continue;  // sticky ports kept their values
    auto& slot = ports_[ticket.node][p];
    slot.insert(slot.begin(), entry->tensors.begin(), entry->tensors.end());
    entry->tensors.clear();
  }
  inputs->Clear();
  nodes_[ticket.node].status = NodeStatus::kReached;
  if (Ready(ticket.node)) return {ticket.node};
  return {};
}

std::vector<int> WalkRun::Complete(const StepTicket& ticket) {
  std::vector<int> ready;
  --in_flight_;
  const std::vector<int>& loops = walk_.nodes()[ticket.node].loops;
  for (int loop : loops) --sections_[loop].in_flight;
  if (IsStale(ticket)) {
    // Settle an abandoned iteration once nothing of it is in flight (innermost first).
    for (auto it = loops.rbegin(); it != loops.rend() && !aborted_; ++it) {
      SectionState& state = sections_[*it];
      if (state.abandoning && state.in_flight == 0) {
        state.abandoning = false;
        SectionDone(*it, ready);
        break;
      }
    }
    return ready;
  }
  nodes_[ticket.node].status = NodeStatus::kDone;
  SectionDone(walk_.nodes()[ticket.node].section, ready);
  return ready;
}

bool WalkRun::Abandoned(const StepTicket& ticket) const {
  if (aborted_) return true;
  const std::vector<int>& loops = walk_.nodes()[ticket.node].loops;
  for (size_t k = 0; k < loops.size(); ++k) {
    const SectionState& loop = sections_[loops[k]];
    // An inner loop restarts when its enclosing loop moves on: a step of its previous run is
    // abandoned only if that run stopped before the step's iteration.
    uint32_t stop_after = UINT32_MAX;
    if (loop.epoch == ticket.epochs[k]) {
      stop_after = loop.stop_after;
    } else if (loop.epoch == ticket.epochs[k] + 1) {
      stop_after = loop.last_stop_after;
    } else {
      return true;
    }
    if (ticket.iterations[k] > stop_after) return true;
  }
  return false;
}

std::vector<int> WalkRun::StopLoop(int loop, uint32_t iteration, uint32_t epoch) {
  std::vector<int> ready;
  SectionState& state = sections_[loop];
  if (aborted_ || !state.started || state.done || state.epoch != epoch) return ready;
  state.stop_after = std::min(state.stop_after, iteration);
  if (state.iteration > state.stop_after && !state.abandoning) AbandonIteration(loop, ready);
  return ready;
}

void WalkRun::AbandonIteration(int loop, std::vector<int>& ready) {
  int body = walk_.sections()[loop].children[0];
  Reset(body);
  ClearPorts(body);
  SectionState& state = sections_[loop];
  state.iteration = state.stop_after;
  if (state.in_flight == 0) {
    SectionDone(loop, ready);
  } else {
    state.abandoning = true;
  }
}

void WalkRun::Abort() {
  aborted_ = true;
  for (NodeState& node : nodes_) {
    ++node.activation;
    node.status = NodeStatus::kIdle;
  }
  for (auto& node_ports : ports_) {
    for (auto& port : node_ports) Release(port);
  }
}

}  // namespace mstar

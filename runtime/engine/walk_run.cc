// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "engine/walk_run.h"

#include <algorithm>

namespace mstar {

WalkRun::WalkRun(const CompiledWalk& walk, const std::vector<uint32_t>& loop_limits)
    : walk_(&walk) {
  Restart(walk, loop_limits);
}

WalkRun::~WalkRun() {
  ReleaseValues();
}

void WalkRun::ReleaseValues() {
  for (auto& node_ports : ports_) {
    for (auto& port : node_ports) Release(port);
  }
  for (auto& retained : retained_) Release(retained);
}

void WalkRun::Restart(const CompiledWalk& walk, const std::vector<uint32_t>& loop_limits) {
  ReleaseValues();
  walk_ = &walk;
  // Activations keep growing: nothing dispatched from the old run matches the new one.
  uint64_t activation = 0;
  for (const NodeState& node : nodes_) activation = std::max(activation, node.activation);
  nodes_.assign(walk.nodes().size(), NodeState{NodeStatus::kIdle, activation + 1});
  sections_.assign(walk.sections().size(), SectionState{});
  limits_.assign(loop_limits.begin(), loop_limits.end());
  limits_.resize(sections_.size(), 1);
  ports_.resize(walk.nodes().size());
  for (size_t n = 0; n < ports_.size(); ++n) ports_[n].resize(walk.nodes()[n].ports.size());
  retained_.resize(walk.nodes().size());
  next_seq_ = 0;
  in_flight_ = 0;
  finished_ = false;
  aborted_ = false;
  ending_ = false;
}

void WalkRun::Release(Port& port) {
  for (PortValue& v : port) ReleaseTensor(v.tensor);
  port.clear();
}

void WalkRun::Release(RetainedList& retained) {
  for (Retained& r : retained) {
    for (auto& [port, value] : r.values) ReleaseTensor(value.tensor);
  }
  retained.clear();
}

bool WalkRun::Ready(int node) const {
  if (nodes_[node].status != NodeStatus::kReached || aborted_) return false;
  for (const auto& port : ports_[node]) {
    if (port.empty()) return false;
  }
  return true;
}

bool WalkRun::Feed(int node, int port, const std::vector<mstar_tensor_t*>& tensors,
                   uint64_t producer) {
  bool was_ready = Ready(node);
  auto& slot = ports_[node][port];
  for (mstar_tensor_t* t : tensors) slot.push_back({t, producer});
  return !was_ready && Ready(node);
}

bool WalkRun::Feed(int node, int port, mstar_tensor_t* tensor, uint64_t producer) {
  bool was_ready = Ready(node);
  ports_[node][port].push_back({tensor, producer});
  return !was_ready && Ready(node);
}

std::vector<int> WalkRun::Start() {
  std::vector<int> ready;
  Start(&ready);
  return ready;
}

void WalkRun::Start(std::vector<int>* ready) {
  StartSection(0, *ready);
}

void WalkRun::StartSection(int section, std::vector<int>& ready) {
  const CompiledSection& spec = walk_->sections()[section];
  SectionState& state = sections_[section];
  state.cursor = 0;
  state.done = false;
  state.started = true;
  switch (spec.kind) {
    case SectionSpec::Kind::kNode:
      nodes_[spec.node].status = NodeStatus::kReached;
      if (Ready(spec.node)) ready.push_back(spec.node);
      return;
    case SectionSpec::Kind::kSequence: StartSection(spec.children[0], ready); return;
    case SectionSpec::Kind::kParallel:
      for (int child : spec.children) StartSection(child, ready);
      return;
    case SectionSpec::Kind::kLoop:
      state.iteration = 0;
      if (state.epoch > 0) {
        std::copy_backward(state.earlier_stop_seqs.begin(), state.earlier_stop_seqs.end() - 1,
                           state.earlier_stop_seqs.end());
        state.earlier_stop_seqs[0] = state.stop_seq;
        state.previous_last_seq = state.last_seq;
      }
      state.stop_seq = UINT64_MAX;
      state.last_seq = 0;
      state.abandoning = false;
      ++state.epoch;
      if (limits_[section] == 0 || ending_) {
        SectionDone(section, ready);
      } else {
        StartSection(spec.children[0], ready);
      }
      return;
  }
}

void WalkRun::SectionDone(int section, std::vector<int>& ready) {
  sections_[section].done = true;
  sections_[section].ended_at = next_seq_;
  int parent = walk_->sections()[section].parent;
  if (parent == -1) {
    finished_ = true;
  } else {
    ChildDone(parent, ready);
  }
}

void WalkRun::ChildDone(int parent, std::vector<int>& ready) {
  const CompiledSection& spec = walk_->sections()[parent];
  SectionState& state = sections_[parent];
  switch (spec.kind) {
    case SectionSpec::Kind::kNode: return;
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
      if (state.stop_seq != UINT64_MAX || state.iteration + 1 >= limits_[parent] || ending_) {
        // Values fed back for an iteration that will not run stay in the ports: an enclosing loop
        // that runs this loop again starts from them.
        SectionDone(parent, ready);
        return;
      }
      ++state.iteration;
      int body = spec.children[0];
      Reset(body);
      StartSection(body, ready);
      return;
    }
  }
}

void WalkRun::Reset(int section) {
  const std::vector<int>& inside = walk_->sections()[section].nodes;
  for (int node : inside) {
    ++nodes_[node].activation;
    nodes_[node].status = NodeStatus::kIdle;
    // A value that entered a loop from a node of this section belongs to the pass that ends: the
    // next pass reads what that node produces again.
    const std::vector<CompiledPort>& ports = walk_->nodes()[node].ports;
    for (size_t p = 0; p < ports.size(); ++p) {
      if (ports[p].fed_by >= 0 &&
          std::find(inside.begin(), inside.end(), ports[p].fed_by) != inside.end())
        Release(ports_[node][p]);
    }
  }
  ResetStates(section);
}

// Nested sections restart from scratch; loop in-flight counts stay (tickets settle them).
void WalkRun::ResetStates(int section) {
  SectionState& state = sections_[section];
  state.cursor = 0;
  state.done = false;
  state.started = false;
  state.abandoning = false;
  for (int child : walk_->sections()[section].children) ResetStates(child);
}

template <class Keep>
void WalkRun::ReleaseUnless(Port& port, Keep&& keep) {
  auto dropped = std::stable_partition(port.begin(), port.end(), keep);
  for (auto it = dropped; it != port.end(); ++it) ReleaseTensor(it->tensor);
  port.erase(dropped, port.end());
}

void WalkRun::DropLater(Port& port, uint64_t seq) {
  ReleaseUnless(port, [&](const PortValue& v) { return v.producer <= seq; });
}

void WalkRun::RollBack(int section, uint64_t seq) {
  const std::vector<int>& inside = walk_->sections()[section].nodes;
  for (int node : inside) {
    for (auto& port : ports_[node]) DropLater(port, seq);
    // What the abandoned steps sent out of the section (to a node after the loop) goes too.
    for (const CompiledEdge& edge : walk_->nodes()[node].edges) {
      if (edge.to_node >= 0 &&
          std::find(inside.begin(), inside.end(), edge.to_node) == inside.end())
        DropLater(ports_[edge.to_node][edge.to_port], seq);
    }
    RetainedList& retained = retained_[node];
    Small<Port, 2> back(ports_[node].size());  // per port, in the order the steps took them
    for (auto it = retained.begin(); it != retained.end();) {
      if (it->seq <= seq) {
        ++it;
        continue;
      }
      for (auto& [port, value] : it->values) {
        if (value.producer <= seq) {
          back[static_cast<size_t>(port)].push_back(value);  // consumed by an abandoned step
        } else {
          ReleaseTensor(value.tensor);  // itself produced by an abandoned step
        }
      }
      it = retained.erase(it);
    }
    PutBack(node, back);
  }
}

void WalkRun::PutBack(int node, const Small<Port, 2>& back) {
  for (size_t port = 0; port < back.size(); ++port) {
    Port& slot = ports_[node][port];
    slot.insert(slot.begin(), back[port].begin(), back[port].end());
  }
}

void WalkRun::KeepNewest(Port& port) {
  uint64_t newest = 0;
  for (const PortValue& v : port) newest = std::max(newest, v.producer);
  ReleaseUnless(port, [&](const PortValue& v) { return v.producer == newest; });
}

Result<StepTicket> WalkRun::Dispatch(int node, mstar_tensor_map* inputs) {
  StepTicket ticket;
  MSTAR_RETURN_IF_ERROR(Dispatch(node, inputs, &ticket));
  return ticket;
}

Status WalkRun::Dispatch(int node, mstar_tensor_map* inputs, StepTicket* ticket) {
  if (!Ready(node)) return Internal("dispatching a node that is not ready");
  const std::vector<CompiledPort>& ports = walk_->nodes()[node].ports;
  // Every value's second reference first: one that cannot be made (out of memory) fails the
  // dispatch with the ports as they were.
  Small<mstar_tensor_t*, 4> shares;
  for (size_t p = 0; p < ports.size(); ++p) {
    auto& slot = ports_[node][p];
    if (ports[p].latest) KeepNewest(slot);
    for (const PortValue& v : slot) {
      // Port values are host tensors the runtime holds (Feed's contract).
      Result<mstar_tensor_t*> shared = ShareTensor(v.tensor);
      if (!shared.ok()) {
        for (mstar_tensor_t* made : shares) ReleaseTensor(made);
        return shared.status();
      }
      shares.push_back(shared.value());
    }
  }
  ticket->node = node;
  ticket->activation = nodes_[node].activation;
  ticket->seq = ++next_seq_;
  ticket->iterations.clear();
  ticket->epochs.clear();
  Retained retained{ticket->seq, {}};
  size_t next_share = 0;
  for (size_t p = 0; p < ports.size(); ++p) {
    auto& slot = ports_[node][p];
    for (const PortValue& v : slot) {
      mstar_tensor_t* const shared = shares[next_share++];
      if (ports[p].sticky) {
        inputs->AppendHost(ports[p].name, shared);
      } else {
        inputs->AppendHost(ports[p].name, v.tensor);
        retained.values.push_back({static_cast<int>(p), PortValue{shared, v.producer}});
      }
    }
    if (!ports[p].sticky) slot.clear();
  }
  if (!retained.values.empty()) retained_[node].push_back(std::move(retained));
  for (int loop : walk_->nodes()[node].loops) {
    ticket->iterations.push_back(sections_[loop].iteration);
    ticket->epochs.push_back(sections_[loop].epoch);
    ++sections_[loop].in_flight;
    sections_[loop].last_seq = ticket->seq;
  }
  nodes_[node].status = NodeStatus::kDispatched;
  ++in_flight_;
  return Status::Ok();
}

std::vector<int> WalkRun::Undispatch(const StepTicket& ticket, mstar_tensor_map* inputs) {
  inputs->Clear();  // the retained references carry the values back
  RetainedList& retained = retained_[ticket.node];
  auto mine = std::find_if(retained.begin(), retained.end(),
                           [&](const Retained& r) { return r.seq == ticket.seq; });
  if (IsStale(ticket) || aborted_) {
    if (mine != retained.end()) {
      for (auto& [port, value] : mine->values) ReleaseTensor(value.tensor);
      retained.erase(mine);
    }
    return Complete(ticket);  // settles an abandoned loop like a dropped step
  }
  --in_flight_;
  for (int loop : walk_->nodes()[ticket.node].loops) --sections_[loop].in_flight;
  if (mine != retained.end()) {
    Small<Port, 2> back(ports_[ticket.node].size());
    for (auto& [port, value] : mine->values) back[static_cast<size_t>(port)].push_back(value);
    PutBack(ticket.node, back);
    retained.erase(mine);
  }
  nodes_[ticket.node].status = NodeStatus::kReached;
  if (Ready(ticket.node)) return {ticket.node};
  return {};
}

std::vector<int> WalkRun::Complete(const StepTicket& ticket) {
  std::vector<int> ready;
  Complete(ticket, &ready);
  return ready;
}

void WalkRun::Complete(const StepTicket& ticket, std::vector<int>* out) {
  std::vector<int>& ready = *out;
  --in_flight_;
  const std::vector<int>& loops = walk_->nodes()[ticket.node].loops;
  for (int loop : loops) --sections_[loop].in_flight;
  if (IsStale(ticket)) {
    // Settle an abandoned loop once nothing of it is in flight (innermost first).
    for (auto it = loops.rbegin(); it != loops.rend() && !aborted_; ++it) {
      SectionState& state = sections_[*it];
      if (state.abandoning && state.in_flight == 0) {
        state.abandoning = false;
        SectionDone(*it, ready);
        break;
      }
    }
    return;
  }
  nodes_[ticket.node].status = NodeStatus::kDone;
  SectionDone(walk_->nodes()[ticket.node].section, ready);
}

void WalkRun::Confirm(const StepTicket& ticket) {
  RetainedList& retained = retained_[ticket.node];
  for (auto it = retained.begin(); it != retained.end(); ++it) {
    if (it->seq != ticket.seq) continue;
    for (auto& [port, value] : it->values) ReleaseTensor(value.tensor);
    retained.erase(it);
    return;
  }
}

bool WalkRun::Abandoned(const StepTicket& ticket) const {
  if (aborted_) return true;
  const std::vector<int>& loops = walk_->nodes()[ticket.node].loops;
  for (size_t k = 0; k < loops.size(); ++k) {
    const SectionState& loop = sections_[loops[k]];
    // A step of the loop's current run is abandoned when it came after the stopping step; one of
    // an earlier run, when it came after that run's stop. Runs older than those kept cannot have
    // steps left.
    const uint32_t behind = loop.epoch - ticket.epochs[k];
    if (behind > loop.earlier_stop_seqs.size()) return true;
    const uint64_t stop = behind == 0 ? loop.stop_seq : loop.earlier_stop_seqs[behind - 1];
    if (ticket.seq > stop) return true;
  }
  return false;
}

std::vector<int> WalkRun::StopLoop(int loop, const StepTicket& stopper) {
  std::vector<int> ready;
  SectionState& state = sections_[loop];
  const std::vector<int>& loops = walk_->nodes()[stopper.node].loops;
  auto k = std::find(loops.begin(), loops.end(), loop);
  if (aborted_ || k == loops.end() || Abandoned(stopper)) return ready;
  const uint32_t behind = state.epoch - stopper.epochs[k - loops.begin()];
  if (behind != 0 || !state.started) {
    StopEndedRun(loop, behind, stopper.seq, &ready);
    return ready;
  }
  if (state.stop_seq <= stopper.seq) return ready;
  // Ended with stopper as its last step: nothing to withdraw, and what ran after the loop since
  // (fed into the loop's ports, for an enclosing loop's next pass) stays.
  if (state.done && state.last_seq <= stopper.seq) return ready;
  state.stop_seq = stopper.seq;
  state.iteration = stopper.iterations[k - loops.begin()];
  int body = walk_->sections()[loop].children[0];
  RollBack(body, stopper.seq);
  Reset(body);
  // Ended at its limit by a step that ran ahead of this stop: that step and what it sent on are
  // withdrawn (rolled back), and what follows the loop, reached already, reads what the stopper
  // left. Nothing after the loop has run: it was reached with two steps unchecked (the stopper
  // and the one ahead), and a step waits while two before it are unchecked.
  if (state.done) return ready;
  if (state.in_flight == 0) {
    SectionDone(loop, ready);
  } else {
    state.abandoning = true;
  }
  return ready;
}

// The run ended at its limit through a step that ran ahead of this stop, and its enclosing loop
// moved on at once (reset the loop for its next pass, or started it again when the loop is all of
// its body). That step is abandoned and what it left in ports withdrawn, as when the stop lands
// before the loop ends: the enclosing loop's next pass then reads what the stopper left. Its first
// step waits while the stopper and the step ahead are unchecked, so none ran yet; a stop that
// finds one did is ignored.
void WalkRun::StopEndedRun(int loop, uint32_t behind, uint64_t stopper, std::vector<int>* ready) {
  SectionState& state = sections_[loop];
  // Ended by its own last step (a later run started since), or a step ran since it ended and may
  // have read what it left (a step of the next run, say): that stays.
  if (behind > 1 || next_seq_ != state.ended_at || (behind == 1 && state.last_seq != 0)) return;
  uint64_t& stop_seq = behind == 0 ? state.stop_seq : state.earlier_stop_seqs[0];
  const uint64_t last_seq = behind == 0 ? state.last_seq : state.previous_last_seq;
  if (stop_seq <= stopper || last_seq <= stopper) return;
  stop_seq = stopper;
  Small<bool, 8> was_ready(nodes_.size());
  for (size_t n = 0; n < nodes_.size(); ++n) was_ready[n] = Ready(static_cast<int>(n));
  RollBack(walk_->sections()[loop].children[0], stopper);
  // Putting back what the abandoned step consumed may have made a node of the next pass ready.
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (!was_ready[n] && Ready(static_cast<int>(n))) ready->push_back(static_cast<int>(n));
  }
}

bool WalkRun::Stuck(int* waiting_node, int* empty_port) const {
  if (finished_ || aborted_ || in_flight_ != 0) return false;
  *waiting_node = -1;
  *empty_port = -1;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (nodes_[n].status != NodeStatus::kReached) continue;
    if (Ready(static_cast<int>(n))) return false;
    if (*waiting_node == -1) {
      *waiting_node = static_cast<int>(n);
      for (size_t p = 0; p < ports_[n].size(); ++p) {
        if (ports_[n][p].empty()) *empty_port = static_cast<int>(p);
      }
    }
  }
  return true;
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
  for (auto& retained : retained_) Release(retained);
}

}  // namespace mstar

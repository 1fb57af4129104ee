// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The conductor's partitions and walks: the transitions compiled once, a partition's first walk
// (the manifest's or the model controller's choice), a walk's start (its loop limits and initial
// inputs: request values, persisted values, stream chunks, what the controller gave), moving on
// when a walk finishes, and consumer partitions fed by their streams.
#include <algorithm>

#include "engine/conductor.h"
#include "engine/conductor_pending.h"

namespace mstar {

void Conductor::CompileTransitions() {
  next_walk_.assign(walks_.size(), kNextIsDone);
  for (size_t w = 0; w < walks_.size(); ++w) {
    const WalkSpec& spec = walks_[w]->spec();
    const PartitionSpec& partition = engine_.model().partitions.at(spec.partition);
    auto it = partition.transitions.find(walks_[w]->name());
    if (it == partition.transitions.end() || it->second == kDoneWalk) continue;
    auto next = walk_index_.find(it->second);
    const bool valid =
        next != walk_index_.end() &&
        walks_[static_cast<size_t>(next->second)]->spec().partition == spec.partition;
    next_walk_[w] = valid ? next->second : kNextByName;  // by name: StartWalk says what is wrong
  }
}

Conductor::~Conductor() {
  Stop();
}

void Conductor::StartPartition(Request& r, PartitionRun& p, Pending& pending) {
  std::string first = p.spec->initial;
  if (PluginInstance* controller = engine_.runtime().controller();
      controller != nullptr && controller->model()->first_walk) {
    TensorMapPtr extra = NewTensorMap();
    mstar_walk_choice_t choice{sizeof(choice), MSTAR_ABI_MINOR, 0, 0, nullptr, extra.get()};
    std::lock_guard<std::mutex> lock(engine_.runtime().controller_mutex());
    Status status = CallPlugin(*controller, "first_walk", [&] {
      return controller->model()->first_walk(controller->self(), &r.info, p.spec->name.c_str(),
                                             &choice);
    });
    if (!status.ok()) return Fail(r, status.message(), pending);
    if (choice.done != 0) return PartitionDone(r, p, pending);
    first = choice.walk != nullptr ? choice.walk : "";
    if (!extra->entries().empty()) p.chosen_inputs = std::move(extra);
  }
  if (p.input != nullptr && !p.input->HasChunk()) {
    // A consumer waits for its first chunk, in a walk checked now: one that is not its own (a
    // controller's empty choice, say) would leave it waiting with nothing to start.
    if (WalkOf(p, first) < 0) return StartWalk(r, p, first, pending);  // fails, saying why
    p.walk = first;
    if (p.input->Drained()) PartitionDone(r, p, pending);
    return;
  }
  StartWalk(r, p, first, pending);
}

int Conductor::WalkOf(const PartitionRun& p, const std::string& walk) const {
  auto index = walk_index_.find(walk);
  if (index == walk_index_.end() || walks_[index->second]->spec().partition != p.spec->name)
    return -1;
  return index->second;
}

void Conductor::StartWalk(Request& r, PartitionRun& p, const std::string& walk, Pending& pending) {
  const int index = WalkOf(p, walk);
  if (index < 0) {
    return Fail(r,
                "partition '" + p.spec->name + "' was sent to walk '" + walk +
                    "', which is not one of its walks",
                pending);
  }
  StartWalk(r, p, index, pending);
}

void Conductor::StartWalk(Request& r, PartitionRun& p, int walk_index, Pending& pending) {
  const CompiledWalk& compiled = *walks_[static_cast<size_t>(walk_index)];
  std::vector<uint32_t>& limits = limits_scratch_;
  limits.assign(compiled.sections().size(), 1);
  for (size_t s = 0; s < compiled.sections().size(); ++s) {
    const CompiledSection& section = compiled.sections()[s];
    if (section.kind != SectionSpec::Kind::kLoop) continue;
    // "" names no parameter (a request's param named "" is not this loop's).
    std::optional<int64_t> param = section.max_iterations_param.empty()
                                       ? std::nullopt
                                       : r.params->TopLevelInt(section.max_iterations_param);
    limits[s] =
        param ? static_cast<uint32_t>(std::max<int64_t>(0, *param)) : section.max_iterations;
  }
  RetireRun(p);
  p.walk = compiled.name();
  p.compiled = &compiled;
  p.walk_index = walk_index;
  p.run = NewRun(walk_index, limits);
  p.generation = ++walk_generation_;
  p.steps_pending = 0;
  p.per_request = false;
  Status fed = FeedInitialInputs(r, p);
  p.chosen_inputs.reset();
  if (!fed.ok()) return Fail(r, "walk '" + compiled.name() + "': " + fed.message(), pending);
  std::vector<int>& ready = start_scratch_;
  ready.clear();
  p.run->Start(&ready);
  Enqueue(r, p, ready);
  AfterWalkProgress(r, p, pending);
}

std::unique_ptr<WalkRun> Conductor::NewRun(int walk_index, const std::vector<uint32_t>& limits) {
  const CompiledWalk& walk = *walks_[static_cast<size_t>(walk_index)];
  if (spare_runs_.empty()) return std::make_unique<WalkRun>(walk, limits);
  std::unique_ptr<WalkRun> run = std::move(spare_runs_.back());
  spare_runs_.pop_back();
  run->Restart(walk, limits);
  return run;
}

void Conductor::RetireRun(PartitionRun& p) {
  if (p.run != nullptr && p.run->in_flight() == 0 && spare_runs_.size() < kSpareRuns) {
    p.run->ReleaseValues();  // a kept run holds no tensors (they count against memory budgets)
    spare_runs_.push_back(std::move(p.run));
  }
  p.run.reset();
}

Status Conductor::FeedInitialInputs(Request& r, PartitionRun& p) {
  mstar_tensor_t* chunk = nullptr;
  const std::vector<CompiledNode>& nodes = p.compiled->nodes();
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (size_t port = 0; port < nodes[n].ports.size(); ++port) {
      const CompiledPort& spec = nodes[n].ports[port];
      if (!spec.has_initial) continue;
      const int node = static_cast<int>(n);
      const int slot = static_cast<int>(port);
      if (spec.source == WalkInputSpec::Source::kStream) {
        if (chunk == nullptr) {
          bool is_final = false;
          MSTAR_ASSIGN_OR_RETURN(chunk, p.input->TakeChunk(&is_final));
          p.last_chunk = is_final || p.input->Drained();
          p.run->Feed(node, slot, chunk);
        } else {
          MSTAR_ASSIGN_OR_RETURN(mstar_tensor_t * shared, ShareTensor(chunk));
          p.run->Feed(node, slot, shared);
        }
        continue;
      }
      if (spec.source == WalkInputSpec::Source::kController) {
        mstar_tensor_map::Entry* given =
            p.chosen_inputs != nullptr ? p.chosen_inputs->Find(spec.source_name) : nullptr;
        if (given == nullptr || given->tensors.empty()) {
          return NotFound("the model controller gave no '" + spec.source_name + "' for input '" +
                          nodes[n].name + "." + spec.name + "'");
        }
        for (const mstar_tensor_t* t : given->tensors) {
          MSTAR_ASSIGN_OR_RETURN(mstar_tensor_t * shared, ShareTensor(t));
          p.run->Feed(node, slot, shared);
        }
        continue;
      }
      const bool from_request = spec.source == WalkInputSpec::Source::kRequest;
      const TensorList* value = (from_request ? r.values : r.persisted).Find(spec.source_name);
      if (value == nullptr || value->empty()) {
        return NotFound(std::string(from_request ? "request value '" : "persisted value '") +
                        spec.source_name + "' for input '" + nodes[n].name + "." + spec.name +
                        "' does not exist");
      }
      for (const mstar_tensor_t* t : value->tensors()) {
        MSTAR_ASSIGN_OR_RETURN(mstar_tensor_t * shared, ShareTensor(t));
        p.run->Feed(node, slot, shared);
      }
    }
  }
  return Status::Ok();
}

// Called whenever a walk may have finished: moves the partition on.
void Conductor::AfterWalkProgress(Request& r, PartitionRun& p, Pending& pending) {
  if (!r.active() || p.run == nullptr) return;
  int node = -1, port = -1;
  if (p.steps_pending == 0 && p.run->Stuck(&node, &port)) {
    const CompiledNode& waiting = p.compiled->nodes()[node];
    return Fail(r,
                "walk '" + p.compiled->name() + "' cannot continue: node '" + waiting.name +
                    "' waits for input '" +
                    (port >= 0 ? waiting.ports[port].name : std::string("?")) +
                    "', which no step will produce (was a step declined?)",
                pending);
  }
  if (!p.run->finished() || p.run->in_flight() != 0 || p.steps_pending != 0) return;
  bool consumer = p.input != nullptr;
  if (p.ending || (consumer && p.last_chunk)) return PartitionDone(r, p, pending);
  // The next walk: by the manifest's transitions, compiled to walk indices; by name when a model
  // controller chooses it, or when the transition names no walk of the partition (StartWalk says
  // so).
  int next = next_walk_[static_cast<size_t>(p.walk_index)];
  std::string name;
  PluginInstance* controller = engine_.runtime().controller();
  if ((controller != nullptr && controller->model()->next_walk != nullptr) || next == kNextByName) {
    std::string error;
    std::optional<std::string> chosen = NextWalk(r, p, &error);
    if (!chosen) return Fail(r, error, pending);
    next = *chosen == kDoneWalk ? kNextIsDone : kNextByName;
    name = std::move(*chosen);
  }
  if (next == kNextIsDone) return PartitionDone(r, p, pending);
  if (!CountWalk(r, p, next, name, pending)) return;
  RetireRun(p);
  if (consumer && !p.input->HasChunk()) {
    p.walk = next >= 0 ? walks_[static_cast<size_t>(next)]->name() : name;
    if (p.input->Drained()) PartitionDone(r, p, pending);
    return;
  }
  if (next >= 0) return StartWalk(r, p, next, pending);
  StartWalk(r, p, name, pending);
}

std::optional<std::string> Conductor::NextWalk(Request& r, PartitionRun& p, std::string* error) {
  PluginInstance* controller = engine_.runtime().controller();
  if (controller == nullptr || controller->model()->next_walk == nullptr) {
    auto it = p.spec->transitions.find(p.walk);
    return it == p.spec->transitions.end() ? std::string(kDoneWalk) : it->second;
  }
  // The controller sees every persisted value or is not asked.
  TensorMapPtr persisted = NewTensorMap();
  for (const auto& [name, value] : r.persisted) {
    Result<std::vector<mstar_tensor_t*>> shared = value.Share();
    Status appended = shared.status();
    const std::vector<mstar_tensor_t*> none;
    const std::vector<mstar_tensor_t*>& made = shared.ok() ? shared.value() : none;
    for (size_t i = 0; i < made.size() && appended.ok(); ++i) {
      appended = persisted->Append(name, made[i]);  // takes made[i], on failure too
      if (!appended.ok())
        for (size_t j = i + 1; j < made.size(); ++j) ReleaseTensor(made[j]);
    }
    if (!appended.ok()) {
      *error = "persisted value '" + name + "' for next_walk: " + appended.message();
      return std::nullopt;
    }
  }
  mstar_request_info_t info = r.info;
  info.walk = p.compiled->name().c_str();
  info.partition = p.spec->name.c_str();
  mstar_walk_state_t state{};
  state.struct_size = sizeof(state);
  state.struct_version = MSTAR_ABI_MINOR;
  state.request = &info;
  state.partition = p.spec->name.c_str();
  state.finished_walk = p.walk.c_str();
  state.persisted = persisted.get();
  state.tokens_emitted = r.tokens;
  if (p.input != nullptr) {
    state.stream_produced = p.input->rows();
    state.stream_consumed = p.input->chunks_taken();
    state.producer_done = p.input->closed() ? 1u : 0u;
  }
  TensorMapPtr extra = NewTensorMap();
  mstar_walk_choice_t choice{sizeof(choice), MSTAR_ABI_MINOR, 0, 0, nullptr, extra.get()};
  std::lock_guard<std::mutex> lock(engine_.runtime().controller_mutex());
  Status status = CallPlugin(*controller, "next_walk", [&] {
    return controller->model()->next_walk(controller->self(), &state, &choice);
  });
  if (!status.ok()) {
    *error = status.message();
    return std::nullopt;
  }
  if (choice.done != 0 || choice.walk == nullptr) return std::string(kDoneWalk);
  if (!extra->entries().empty()) p.chosen_inputs = std::move(extra);
  return std::string(choice.walk);
}

bool Conductor::CountWalk(Request& r, PartitionRun& p, int next, const std::string& next_name,
                          Pending& pending) {
  const uint64_t chunks = p.input != nullptr ? p.input->chunks_taken() : 0;
  if (r.tokens != p.idle_tokens || chunks != p.idle_chunks) {
    p.idle_walks = 0;
    p.idle_tokens = r.tokens;
    p.idle_chunks = chunks;
  }
  if (++p.idle_walks < options_.max_idle_walks) return true;
  // The walks from this one on, as far as the manifest's transitions repeat (a controller's
  // choices cannot be foreseen: then only the move about to be made).
  std::string cycle = p.walk;
  std::vector<bool> seen(walks_.size(), false);
  seen[static_cast<size_t>(p.walk_index)] = true;
  for (int w = next; w >= 0; w = next_walk_[static_cast<size_t>(w)]) {
    cycle += " -> " + walks_[static_cast<size_t>(w)]->name();
    if (seen[static_cast<size_t>(w)]) break;
    seen[static_cast<size_t>(w)] = true;
  }
  if (next < 0) cycle += " -> " + next_name;
  Fail(r,
       "partition '" + p.spec->name + "' ran " + std::to_string(p.idle_walks) +
           " walks in a row without emitting an output token (" + cycle +
           "); its transitions, or the model controller's next_walk, never end it",
       pending);
  return false;
}

void Conductor::PartitionDone(Request& r, PartitionRun& p, Pending& pending) {
  p.done = true;
  // A consumer done before taking every chunk: its producer's later rows have no reader.
  if (p.input != nullptr && !p.input->Drained()) p.input->Abandon();
  RetireRun(p);
  p.walk.clear();
  // Close each stream once every partition writing it is done.
  for (const auto& [stream, producers] : stream_producers_) {
    bool all_done = std::all_of(producers.begin(), producers.end(),
                                [&](int i) { return r.partitions[i].done; });
    if (all_done) r.streams[stream]->Close();
  }
  FeedConsumers(r, pending);
  MaybeFinalize(r, pending);
}

void Conductor::FeedConsumers(Request& r, Pending& pending) {
  for (PartitionRun& p : r.partitions) {
    if (!r.active() || p.done || p.input == nullptr || p.run != nullptr || p.walk.empty()) continue;
    if (p.input->HasChunk()) {
      StartWalk(r, p, p.walk, pending);
    } else if (p.input->Drained()) {
      PartitionDone(r, p, pending);
    }
  }
}

}  // namespace mstar

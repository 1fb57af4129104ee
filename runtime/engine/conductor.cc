// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The conductor's request lifecycle: submitting, starting partitions and walks, transitions,
// failure, cancellation and finishing. Step handling is in conductor_steps.cc.
#include "engine/conductor.h"

#include <algorithm>

#include "core/logging.h"
#include "engine/conductor_pending.h"

namespace mstar {
namespace {

// The prompt as int64 byte values, the encoding used without a model controller.
Result<mstar_tensor_t*> BytesTensor(const std::string& text) {
  MSTAR_ASSIGN_OR_RETURN(mstar_tensor_t * t,
                         AllocateTensor(nullptr, DLDevice{kDLCPU, 0}, DLDataType{kDLInt, 64, 1},
                                        {static_cast<int64_t>(text.size())}));
  auto* values = static_cast<int64_t*>(t->dl.data);
  for (size_t i = 0; i < text.size(); ++i) values[i] = static_cast<unsigned char>(text[i]);
  return t;
}

uint64_t SeedFor(RequestId id, const ConfigTree* params) {
  if (params != nullptr) {
    if (const toml::node* seed = params->table().get("seed");
        seed != nullptr && seed->is_integer()) {
      return static_cast<uint64_t>(seed->as_integer()->get());
    }
  }
  // The SplitMix64 finalizer: neighbouring ids get unrelated seeds, at the cost of a few
  // multiplications (a cryptographic hash here cost more than the rest of a request's setup).
  uint64_t z = id + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::optional<int64_t> IntParam(const ConfigTree* params, const std::string& key) {
  if (params == nullptr || key.empty()) return std::nullopt;
  const toml::node* node = params->table().get(key);
  if (node == nullptr || !node->is_integer()) return std::nullopt;
  return node->as_integer()->get();
}

}  // namespace

Conductor::Conductor(Engine& engine, ConductorOptions options)
    : engine_(engine), options_(options), empty_params_(std::make_shared<ConfigTree>()) {
  const ModelSpec& model = engine_.model();
  for (const auto& [name, walk] : model.walks) {
    walk_index_[name] = static_cast<int>(walks_.size());
    walks_.push_back(std::make_unique<CompiledWalk>(walk));
    std::vector<int> globals;
    for (const CompiledNode& node : walks_.back()->nodes())
      globals.push_back(engine_.runtime().node(node.name)->index);
    global_node_.push_back(std::move(globals));
    for (const EdgeSpec& edge : walk.edges) {
      if (edge.kind != EdgeSpec::Kind::kStream) continue;
      auto& producers = stream_producers_[edge.name];
      int partition = static_cast<int>(
          std::distance(model.partitions.begin(), model.partitions.find(walk.partition)));
      if (std::find(producers.begin(), producers.end(), partition) == producers.end())
        producers.push_back(partition);
    }
  }
  CompileTransitions();
}

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

Request* Conductor::Find(RequestId id) {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

Status Conductor::Reserve(const SubmitSpec& spec, std::unique_ptr<Request>* made) {
  if (stopping_) return Unavailable("the engine is shutting down");
  auto taken = [&](RequestId id) {
    return requests_.count(id) != 0 || reserved_ids_.count(id) != 0 || leaving_ids_.count(id) != 0;
  };
  if (!spec.id) {
    while (taken(next_id_)) ++next_id_;  // a client may have chosen the next id itself
  }
  const RequestId id = spec.id ? *spec.id : next_id_++;
  if (leaving_ids_.count(id) != 0) {
    return AlreadyExists("request " + std::to_string(id) +
                         " is still ending (submit it again once its stream has finished)");
  }
  if (taken(id)) return AlreadyExists("request " + std::to_string(id) + " is already running");
  reserved_ids_.insert(id);
  *made = std::make_unique<Request>();
  (*made)->id = id;
  return Status::Ok();
}

Status Conductor::FillRequest(SubmitSpec& spec, Request& r) {
  const ModelSpec& model = engine_.model();
  r.priority = spec.priority;
  r.params = spec.params != nullptr ? spec.params : empty_params_;
  r.stream = spec.stream != nullptr ? spec.stream : std::make_shared<RequestStream>(r.id);
  r.seed = SeedFor(r.id, r.params.get());
  r.token_limit = static_cast<uint64_t>(
      IntParam(r.params.get(), "max_tokens").value_or(model.max_output_tokens));
  r.info.struct_size = sizeof(r.info);
  r.info.struct_version = MSTAR_ABI_MINOR;
  r.info.request_id = r.id;
  r.info.walk = "";
  r.info.partition = "";
  r.info.seed = r.seed;
  r.info.priority = r.priority;
  r.info.params = r.params->root();

  // The prompt becomes the request's prompt value: the controller encodes it, or its bytes do.
  if (PluginInstance* controller = engine_.runtime().controller()) {
    TensorMapPtr encoded = NewTensorMap();
    std::lock_guard<std::mutex> lock(engine_.runtime().controller_mutex());
    MSTAR_RETURN_IF_ERROR(CallPlugin(*controller, "encode_prompt", [&] {
      return controller->model()->encode_prompt(controller->self(), &r.info, spec.prompt.data(),
                                                spec.prompt.size(), encoded.get());
    }));
    for (auto& entry : encoded->entries()) {
      TensorList& value = r.values[entry.name];
      for (mstar_tensor_t* t : entry.tensors) value.Add(t);
      entry.tensors.clear();
    }
  } else {
    MSTAR_ASSIGN_OR_RETURN(mstar_tensor_t * bytes, BytesTensor(spec.prompt));
    r.values[model.prompt].Add(bytes);
  }
  return engine_.AddRequest(r.info);
}

void Conductor::Insert(std::unique_ptr<Request> request, Pending& pending) {
  const ModelSpec& model = engine_.model();
  Request& r = *request;
  r.order = order_++;
  for (const auto& [name, spec_stream] : model.streams) {
    r.streams[name] = std::make_unique<StreamBuffer>(spec_stream.policy);
  }
  int index = 0;
  for (const auto& [name, partition] : model.partitions) {
    PartitionRun run;
    run.spec = &partition;
    run.index = index++;
    if (!partition.stream.empty()) run.input = r.streams[partition.stream].get();
    r.partitions.push_back(std::move(run));
  }
  requests_[r.id] = std::move(request);
  for (PartitionRun& p : r.partitions) {
    if (r.active()) StartPartition(r, p, pending);
  }
  MaybeFinalize(r, pending);
}

Result<std::shared_ptr<RequestStream>> Conductor::Submit(SubmitSpec spec) {
  std::vector<SubmitSpec> one;
  one.push_back(std::move(spec));
  return std::move(SubmitAll(std::move(one)).front());
}

std::vector<Result<std::shared_ptr<RequestStream>>> Conductor::SubmitAll(
    std::vector<SubmitSpec> specs) {
  const size_t n = specs.size();
  std::vector<std::unique_ptr<Request>> made(n);
  std::vector<Status> errors(n);
  {  // Ids for the lot under one lock; each stays reserved until its request is in the table.
    std::unique_lock<std::mutex> lock = LockForClient();
    for (size_t i = 0; i < n; ++i) errors[i] = Reserve(specs[i], &made[i]);
  }
  std::vector<std::shared_ptr<RequestStream>> streams(n);
  for (size_t i = 0; i < n; ++i) {  // the prompts are encoded outside the lock
    if (made[i] == nullptr) continue;
    errors[i] = FillRequest(specs[i], *made[i]);
    streams[i] = made[i]->stream;
  }
  Pending pending;
  bool posted = false;
  std::unique_ptr<BatchWork> launch;
  IdleLauncher* launcher = nullptr;
  {
    std::unique_lock<std::mutex> lock = LockForClient();
    for (size_t i = 0; i < n; ++i) {
      if (made[i] == nullptr) continue;
      Request& r = *made[i];
      reserved_ids_.erase(r.id);
      if (!errors[i].ok()) {
        made[i].reset();
      } else if (stopping_) {
        RequestResult result;
        result.end = RequestEnd::kCancelled;
        result.error = "the engine is shutting down";
        pending.finishes.push_back({r.id, r.stream, result});
      } else {
        Insert(std::move(made[i]), pending);
      }
    }
    launch = FormForIdleExecutor(pending);
    launcher = launcher_;
    posted = Post(pending);
    WakeScheduler(lock);
  }
  if (launch != nullptr) launcher->Launch(std::move(launch));
  if (posted) Deliver();
  std::vector<Result<std::shared_ptr<RequestStream>>> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (errors[i].ok()) {
      out.emplace_back(std::move(streams[i]));
    } else {
      out.emplace_back(errors[i]);
    }
  }
  return out;
}

bool Conductor::Cancel(RequestId id) {
  Pending pending;
  bool posted = false;
  {
    std::unique_lock<std::mutex> lock = LockForClient();
    Request* r = Find(id);
    if (r == nullptr || !r->active()) return false;
    Fail(*r, "cancelled by the client", pending, RequestState::kCancelling);
    posted = Post(pending);
    WakeScheduler(lock);
  }
  if (posted) Deliver();
  return true;
}

std::unique_lock<std::mutex> Conductor::LockForClient() {
  contenders_.fetch_add(1, std::memory_order_relaxed);
  std::unique_lock<std::mutex> lock(mu_);
  contenders_.fetch_sub(1, std::memory_order_relaxed);
  return lock;
}

size_t Conductor::active_requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_.size();
}

ConductorStats Conductor::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void Conductor::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(
      lock, [&] { return (requests_.empty() && outbox_.empty() && !delivering_) || stopping_; });
}

void Conductor::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = true;
  work_cv_.notify_all();
  idle_cv_.notify_all();
}

void Conductor::CancelAll(const std::string& reason) {
  Pending pending;
  bool posted = false;
  {
    std::unique_lock<std::mutex> lock(mu_);
    for (auto& [id, request] : requests_) {
      Fail(*request, reason, pending, RequestState::kCancelling);
      request->in_flight = 0;  // the pipeline has stopped: nothing is in flight any more
      MaybeFinalize(*request, pending);
    }
    posted = Post(pending);
    WakeScheduler(lock);
  }
  if (posted) Deliver();
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
    p.walk = first;  // a consumer waits for its first chunk
    if (p.input->Drained()) PartitionDone(r, p, pending);
    return;
  }
  StartWalk(r, p, first, pending);
}

void Conductor::StartWalk(Request& r, PartitionRun& p, const std::string& walk, Pending& pending) {
  auto index = walk_index_.find(walk);
  if (index == walk_index_.end() || walks_[index->second]->spec().partition != p.spec->name) {
    return Fail(r,
                "partition '" + p.spec->name + "' was sent to walk '" + walk +
                    "', which is not one of its walks",
                pending);
  }
  StartWalk(r, p, index->second, pending);
}

void Conductor::StartWalk(Request& r, PartitionRun& p, int walk_index, Pending& pending) {
  const CompiledWalk& compiled = *walks_[static_cast<size_t>(walk_index)];
  std::vector<uint32_t>& limits = limits_scratch_;
  limits.assign(compiled.sections().size(), 1);
  for (size_t s = 0; s < compiled.sections().size(); ++s) {
    const CompiledSection& section = compiled.sections()[s];
    if (section.kind != SectionSpec::Kind::kLoop) continue;
    std::optional<int64_t> param = IntParam(r.params.get(), section.max_iterations_param);
    limits[s] =
        param ? static_cast<uint32_t>(std::max<int64_t>(0, *param)) : section.max_iterations;
  }
  RetireRun(p);
  p.walk = compiled.name();
  p.compiled = &compiled;
  p.walk_index = walk_index;
  p.run = NewRun(walk_index, limits);
  ++p.generation;
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
  TensorMapPtr persisted = NewTensorMap();
  for (const auto& [name, value] : r.persisted) {
    Result<std::vector<mstar_tensor_t*>> shared = value.Share();
    if (!shared.ok()) continue;
    for (mstar_tensor_t* t : shared.value()) (void)persisted->Append(name, t);
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

void Conductor::Fail(Request& r, const std::string& error, Pending& pending, RequestState state) {
  if (!r.active()) return;
  r.state = state;
  r.error = error;
  Log().debug("request {} failed: {}", r.id, error);
  for (PartitionRun& p : r.partitions) {
    if (p.run != nullptr) p.run->Abort();
    if (p.cohort != nullptr) LeaveCohort(r, p, pending);
  }
  Unpark(r);
  MaybeFinalize(r, pending);
}

void Conductor::MaybeFinalize(Request& r, Pending& pending) {
  if (r.state == RequestState::kFinished || r.in_flight != 0) return;
  bool all_done = std::all_of(r.partitions.begin(), r.partitions.end(),
                              [](const PartitionRun& p) { return p.done; });
  if (r.active() && !all_done) return;
  RequestResult result;
  result.tokens = r.tokens;
  result.steps = r.steps;
  result.wasted_steps = r.wasted_steps;
  if (r.state == RequestState::kActive) {
    result.end = RequestEnd::kDone;
    ++stats_.requests_done;
  } else if (r.state == RequestState::kCancelling) {
    result.end = RequestEnd::kCancelled;
    ++stats_.requests_cancelled;
  } else {
    result.end = RequestEnd::kFailed;
    result.error = r.error;
    ++stats_.requests_failed;
  }
  r.state = RequestState::kFinished;
  Unpark(r);
  pending.finishes.push_back({r.id, r.stream, result});
}

void Conductor::Unpark(Request& r) {
  if (r.parked.empty()) return;
  r.parked.clear();
  --parked_requests_;
}

}  // namespace mstar

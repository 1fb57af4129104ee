// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The conductor's request lifecycle: submitting, failure, cancellation and finishing. Partitions
// and their walks are in conductor_walks.cc, step handling in conductor_steps.cc.
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

}  // namespace

Conductor::Conductor(Engine& engine, ConductorOptions options)
    : engine_(engine),
      options_(options),
      request_limits_(RequestLimits(engine.model())),
      empty_params_(std::make_shared<ConfigTree>()) {
  const ModelSpec& model = engine_.model();
  for (const auto& [name, walk] : model.walks) {
    walk_index_[name] = static_cast<int>(walks_.size());
    walks_.push_back(std::make_unique<CompiledWalk>(walk));
    std::vector<int> globals;
    for (const CompiledNode& node : walks_.back()->nodes()) {
      const NodeRuntime* runtime_node = engine_.runtime().node(node.name);
      globals.push_back(runtime_node->index);
      for (const CompiledPort& port : node.ports) {
        if (port.source == WalkInputSpec::Source::kStream && runtime_node->wants_final_chunk())
          always_final_streams_.insert(port.source_name);
      }
    }
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
  caps_ = BatchCaps();
  CompileTransitions();
  not_recomputable_ = NotRecomputable();
  recomputable_ = not_recomputable_.empty();
}

std::string Conductor::NotRecomputable() {
  ModelRuntime& runtime = engine_.runtime();
  bool offloads = false;
  for (const auto& node : runtime.nodes()) offloads |= engine_.Evictable(node->index);
  if (!offloads) return "no resource offloads";
  if (options_.max_recomputes == 0) return "recomputing is off";
  for (const auto& node : runtime.nodes()) {
    if ((node->flags & MSTAR_SUBMODULE_DETERMINISTIC) == 0) {
      return "node '" + node->name +
             "' does not declare MSTAR_SUBMODULE_DETERMINISTIC, so it may not reproduce what "
             "was sent";
    }
  }
  return "";
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
  // A client's stream names the request: the id a client cancels by is its stream's.
  std::optional<RequestId> wanted = spec.id;
  if (spec.stream != nullptr) {
    if (wanted && *wanted != spec.stream->id()) {
      return InvalidArgument(
          "request " + std::to_string(*wanted) + " was given the stream of request " +
          std::to_string(spec.stream->id()) + " (a stream's id is its request's)");
    }
    wanted = spec.stream->id();
  }
  if (wanted && *wanted == 0) return InvalidArgument("request id 0 is not valid (ids start at 1)");
  if (!wanted) {
    while (taken(next_id_)) ++next_id_;  // a client may have chosen the next id itself
  }
  const RequestId id = wanted ? *wanted : next_id_++;
  if (leaving_ids_.count(id) != 0) {
    return AlreadyExists("request " + std::to_string(id) +
                         " is still ending (submit it again once its stream has finished)");
  }
  if (taken(id)) return AlreadyExists("request " + std::to_string(id) + " is already running");
  // Atomically: a stream whose request is still ending has its id free already.
  if (spec.stream != nullptr && !spec.stream->Take()) {
    return InvalidArgument("the stream of request " + std::to_string(id) +
                           " was given to a request already (each request needs a stream of its "
                           "own)");
  }
  reserved_ids_.insert(id);
  *made = std::make_unique<Request>();
  (*made)->id = id;
  return Status::Ok();
}

Status Conductor::FillRequest(SubmitSpec& spec, Request& r) {
  const ModelSpec& model = engine_.model();
  r.priority = spec.priority;
  r.params = spec.params != nullptr ? spec.params : empty_params_;
  MSTAR_RETURN_IF_ERROR(CheckRequestLimits(request_limits_, *r.params));
  if (spec.stream != nullptr) {
    r.stream = spec.stream;  // taken in Reserve
  } else {
    r.stream = std::make_shared<RequestStream>(r.id);
    r.stream->Take();  // the client gets it back: it may not submit it again
  }
  r.seed = SeedFor(r.id, r.params.get());
  r.token_limit =
      static_cast<uint64_t>(r.params->TopLevelInt("max_tokens").value_or(model.max_output_tokens));
  r.info.struct_size = sizeof(r.info);
  r.info.struct_version = MSTAR_ABI_MINOR;
  r.info.request_id = r.id;
  r.info.walk = "";
  r.info.partition = "";
  r.info.seed = r.seed;
  r.info.priority = r.priority;
  r.info.params = r.params->root();
  r.tenant = std::move(spec.tenant);
  if (!r.tenant.empty()) {
    r.info.tenant_salt = reinterpret_cast<const uint8_t*>(r.tenant.data());
    r.info.tenant_salt_size = r.tenant.size();
  }
  if (recomputable_) r.stream->RememberChunks();

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
  if (recomputable_) r.prompt = std::move(spec.prompt);
  return engine_.AddRequest(r.info);
}

void Conductor::Insert(std::unique_ptr<Request> request, Pending& pending,
                       std::optional<uint64_t> order) {
  const ModelSpec& model = engine_.model();
  Request& r = *request;
  r.order = order ? *order : order_++;
  for (const auto& [name, spec_stream] : model.streams) {
    r.streams[name] =
        std::make_unique<StreamBuffer>(spec_stream.policy, always_final_streams_.count(name) != 0);
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
      const bool cancelled = cancelled_reserved_.erase(r.id) != 0;
      if (!errors[i].ok()) {
        if (specs[i].stream != nullptr) specs[i].stream->Untake();  // free to submit again
        made[i].reset();
      } else if (stopping_ || cancelled) {
        RequestResult result;
        result.end = RequestEnd::kCancelled;
        result.error = cancelled ? "cancelled by the client" : "the engine is shutting down";
        ++stats_.requests_cancelled;
        pending.finishes.push_back({r.id, r.stream, result, nullptr});
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
    if (r == nullptr) {
      auto again = recomputing_.find(id);
      if (again != recomputing_.end()) {
        again->second = true;  // between its attempts: StartAgain ends it cancelled
        return true;
      }
      if (reserved_ids_.count(id) == 0) return false;
      cancelled_reserved_.insert(id);  // being made (SubmitAll): it ends cancelled instead
      return true;
    }
    if (r->state == RequestState::kRecomputing) {
      r->state = RequestState::kCancelling;  // its attempt is ending: it ends cancelled instead
      r->error = "cancelled by the client";
      MaybeFinalize(*r, pending);
    } else if (!r->active()) {
      return false;
    } else {
      Fail(*r, "cancelled by the client", pending, RequestState::kCancelling);
    }
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
  // Not while Evict offloads it: Evict finalizes it after the offload.
  if (r.state == RequestState::kFinished || r.in_flight != 0 || r.evicting) return;
  bool all_done = std::all_of(r.partitions.begin(), r.partitions.end(),
                              [](const PartitionRun& p) { return p.done; });
  if (r.active() && !all_done) return;
  if (r.state == RequestState::kRecomputing) return StartOver(r, pending);
  RequestResult result = r.Counts();
  if (r.state == RequestState::kActive) {
    result.end = RequestEnd::kDone;
    ++stats_.requests_done;
  } else if (r.state == RequestState::kCancelling) {
    result.end = RequestEnd::kCancelled;
    result.error = r.error;  // who cancelled it: the client, or the engine shutting down
    ++stats_.requests_cancelled;
  } else {
    result.end = RequestEnd::kFailed;
    result.error = r.error;
    ++stats_.requests_failed;
  }
  r.state = RequestState::kFinished;
  Unpark(r);
  pending.finishes.push_back({r.id, r.stream, result, nullptr});
}

void Conductor::Unpark(Request& r) {
  if (r.parked.empty()) return;
  r.parked.clear();
  --parked_requests_;
}

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The conductor's step handling: forming batches from the ready queues, routing a step's outputs
// after its exec (node edges) and after its stop check (stops, persisted values, streams, client
// outputs, the output-token limit), and the client-side work done after the lock. Memory pressure
// is in conductor_pressure.cc.
#include <algorithm>
#include <cstring>

#include "core/logging.h"
#include "engine/conductor.h"
#include "engine/conductor_pending.h"

namespace mstar {
namespace {

constexpr uint32_t kMaxBatchesInFlight = 3;  // one planning, one executing, one finishing

// A view of t with its first dimension cut to rows; *dims holds the view's shape.
mstar_tensor_t HeadView(const mstar_tensor_t& t, uint64_t rows, std::vector<int64_t>* dims) {
  mstar_tensor_t head = t;
  dims->assign(t.dl.shape, t.dl.shape + t.dl.ndim);
  (*dims)[0] = static_cast<int64_t>(rows);
  head.dl.shape = dims->data();
  return head;
}

}  // namespace

std::string EdgeWhere(const EdgeSpec& edge) {
  return edge.where.path + ":" + std::to_string(edge.where.line);
}

void Conductor::Enqueue(Request& r, PartitionRun& p, const std::vector<int>& nodes) {
  if (nodes.empty()) return;
  int walk = p.walk_index;
  for (int n : nodes) {
    QueueKey key{global_node_[walk][n], walk, 0};
    if (p.cohort == nullptr && !p.per_request && CohortShape(key, n)) {
      // A cohort's steps do not reload: a request offloaded at the node runs this walk per
      // request, whose steps reload it first.
      const bool offloaded = std::find(r.offloaded_nodes.begin(), r.offloaded_nodes.end(),
                                       key.node) != r.offloaded_nodes.end();
      if (!offloaded) {
        JoinCohort(r, p, key, n);
        continue;
      }
      p.per_request = true;
    }
    if (SplitsByCaptureKey(key)) {
      mstar_request_info_t info = r.info;
      info.walk = p.compiled->name().c_str();
      info.partition = p.spec->name.c_str();
      if (std::optional<uint64_t> group = engine_.CaptureGroup(key.node, p.compiled->name(), info))
        key.capture_key = *group;
    }
    ReadyEntry entry{r.id, p.index, p.generation, n, p.run->Activation(n), r.priority, r.order};
    if (p.unchecked >= 2) {
      if (r.parked.empty()) ++parked_requests_;
      r.parked.emplace_back(key, entry);  // at most one step runs ahead of its stop check
    } else {
      scheduler_.Push(key, entry);
    }
  }
  NoteWork();
}

bool Conductor::Valid(const QueueKey& key, const ReadyEntry& entry) {
  Request* r = Find(entry.request);
  if (r == nullptr || !r->active()) return false;
  PartitionRun& p = r->partitions[entry.partition];
  if (p.generation != entry.generation || p.run == nullptr) return false;
  if (p.run->Activation(entry.walk_node) != entry.activation || !p.run->Ready(entry.walk_node))
    return false;
  if (r->evicted_for != 0) {
    Request* beneficiary = Find(r->evicted_for);
    if (beneficiary != nullptr && beneficiary->active() &&
        StepsRun(*beneficiary) == r->evicted_for_steps) {
      capacity_waiters_.emplace_back(key, entry);  // let the request it made room for go first
      return false;
    }
    r->evicted_for = 0;
  }
  if (r->evicting) {
    capacity_waiters_.emplace_back(key, entry);
    return false;
  }
  return true;
}

void Conductor::FillStep(Request& r, PartitionRun& p, const StepTicket& ticket, StepRequest& step) {
  step.id = r.id;
  const std::vector<int>& loops = p.compiled->nodes()[ticket.node].loops;
  for (size_t k = 0; k < loops.size(); ++k) {
    step.loop_names.push_back(p.compiled->sections()[loops[k]].loop.c_str());
    step.loop_iterations.push_back(ticket.iterations[k]);
    step.loop_limits.push_back(p.run->limit(loops[k]));
  }
  mstar_request_info_t& info = step.info;
  info = r.info;
  info.walk = p.compiled->name().c_str();
  info.partition = p.spec->name.c_str();
  info.num_loops = static_cast<uint32_t>(loops.size());
  info.loop_names = step.loop_names.data();
  info.loop_iterations = step.loop_iterations.data();
  info.loop_max_iterations = step.loop_limits.data();
  info.params = r.params->root();
}

bool Conductor::NextBatch(BatchWork* work) {
  Pending pending;
  // Step records of a finished batch are reused (their loop vectors, input maps and tickets are
  // the right size already), made fresh here, before the lock.
  Spare spare = TakeSpare();
  for (StepRequest& step : spare.requests) step.Reset();
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_scheduler_ = false;  // this thread is the one to wake: it looks again itself
    scheduler_called_.store(false, std::memory_order_relaxed);
    work_cv_.wait(lock, [&] {
      scheduler_called_.store(false, std::memory_order_relaxed);
      return stopping_ || ((!scheduler_.empty() || AnyCohortReady()) &&
                           batches_in_flight_ < kMaxBatchesInFlight);
    });
    if (stopping_) return false;
    bool formed = FormBatch(work, spare, pending);
    bool posted = Post(pending);
    if (formed) wake_scheduler_ = false;
    if (formed || posted) lock.unlock();
    if (posted) Deliver();
    if (formed) return true;
    if (posted) lock.lock();
  }
}

bool Conductor::SplitsByCaptureKey(const QueueKey& key) {
  const size_t index =
      static_cast<size_t>(key.node) * walks_.size() + static_cast<size_t>(key.walk);
  if (index >= splits_.size()) splits_.resize(index + 1, -1);
  if (splits_[index] < 0)
    splits_[index] = engine_.SplitsByCaptureKey(key.node, walks_[key.walk]->name()) ? 1 : 0;
  return splits_[index] == 1;
}

uint32_t Conductor::CapFor(const QueueKey& k) {
  const size_t index = static_cast<size_t>(k.node) * walks_.size() + static_cast<size_t>(k.walk);
  if (index >= caps_.size()) caps_.resize(index + 1, 0);
  if (caps_[index] == 0) {
    std::optional<uint32_t> max = engine_.GetMaxBatchSize(k.node, walks_[k.walk]->name());
    uint32_t limit = max.value_or(UINT32_MAX);
    if (options_.max_batch > 0) limit = std::min(limit, options_.max_batch);
    caps_[index] = std::max<uint32_t>(limit, 1);
  }
  return caps_[index];
}

bool Conductor::FormBatch(BatchWork* work, Spare& spare, Pending& pending) {
  // Cohort steps and queued steps take turns, so neither kind waits behind the other.
  if (last_was_cohort_ && !scheduler_.empty()) {
    last_was_cohort_ = false;
    if (FormQueuedBatch(work, spare, pending)) return true;
  }
  if (FormCohortBatch(work, pending)) {
    last_was_cohort_ = true;
    return true;
  }
  last_was_cohort_ = false;
  return !scheduler_.empty() && FormQueuedBatch(work, spare, pending);
}

bool Conductor::FormQueuedBatch(BatchWork* work, Spare& spare, Pending& pending) {
  QueueKey key;
  auto cap = [&](const QueueKey& k) { return CapFor(k); };
  std::vector<ReadyEntry>& entries = popped_;
  scheduler_.PopBatch(
      cap, &key, [&](const QueueKey& k, const ReadyEntry& e) { return Valid(k, e); }, &entries);
  // Everything popped may have gone back to wait for capacity with nothing in flight to free
  // any: CheckProgress retries once more or fails the requests that can never be admitted.
  if (entries.empty() && batches_in_flight_ == 0) CheckProgress(pending);
  if (entries.empty()) return false;
  std::vector<StepRequest>& steps = spare.requests;
  std::vector<StepOrigin>& origins = spare.origins;
  size_t used = 0;
  for (const ReadyEntry& e : entries) {
    Request& r = *Find(e.request);
    PartitionRun& p = r.partitions[e.partition];
    if (used == steps.size()) steps.emplace_back();
    if (used == origins.size()) origins.emplace_back();
    StepRequest& step = steps[used];
    StepOrigin& origin = origins[used];
    if (step.inputs == nullptr) step.inputs = NewTensorMap();
    Status dispatched = p.run->Dispatch(e.walk_node, step.inputs.get(), &origin.ticket);
    if (!dispatched.ok()) {
      step.inputs->Clear();  // the record serves the next entry: nothing else was filled
      Fail(r, dispatched.message(), pending);
      continue;
    }
    FillStep(r, p, origin.ticket, step);
    step.needs_reload = !r.offloaded_nodes.empty();
    ++r.in_flight;
    ++p.steps_pending;
    origin.request = r.id;
    origin.req = &r;
    origin.partition = p.index;
    origin.generation = p.generation;
    origin.dropped = false;
    origin.counted = false;
    ++used;
  }
  if (used == 0) return false;  // the records stay in spare for the next try
  steps.erase(steps.begin() + static_cast<std::ptrdiff_t>(used), steps.end());
  origins.erase(origins.begin() + static_cast<std::ptrdiff_t>(used), origins.end());
  work->batch = ExecutingBatch{};
  work->batch.node = key.node;
  work->batch.node_name = engine_.runtime().node(key.node)->name;
  work->batch.walk = walks_[key.walk]->name();
  work->batch.capture_key = key.capture_key;
  work->batch.requests = std::move(steps);
  work->origins = std::move(origins);
  work->sequence = ++batch_sequence_;
  work->key = key;
  work->planned = false;
  work->finished = false;
  scheduler_.SetBusy(key, true);
  ++batches_in_flight_;
  ++stats_.batches;
  uint32_t& largest = *StatsFor(key.node).largest;
  largest = std::max(largest, static_cast<uint32_t>(work->batch.requests.size()));
  return true;
}

Conductor::NodeStatsRefs& Conductor::StatsFor(int node) {
  const auto index = static_cast<size_t>(node);
  if (index >= node_stats_.size()) node_stats_.resize(index + 1);
  NodeStatsRefs& refs = node_stats_[index];
  if (refs.batches == nullptr) {  // map entries do not move: found once per node
    const std::string& name = engine_.runtime().node(node)->name;
    refs.batches = &stats_.nodes[name];
    refs.largest = &stats_.largest_batch[name];
  }
  return refs;
}

void Conductor::RouteNodeEdges(Request& r, PartitionRun& p, const StepOrigin& origin,
                               StepRequest& step, Pending& pending) {
  const CompiledNode& node = p.compiled->nodes()[origin.ticket.node];
  for (const CompiledEdge& edge : node.edges) {
    if (edge.spec->kind != EdgeSpec::Kind::kNode) continue;
    const mstar_tensor_map::Entry* out = step.outputs->Find(edge.spec->from_output);
    if (out == nullptr) {
      return Fail(r,
                  "node '" + node.name + "' produced no output '" + edge.spec->from_output +
                      "' for the edge at " + EdgeWhere(*edge.spec),
                  pending);
    }
    for (const mstar_tensor_t* t : out->tensors) {
      Result<mstar_tensor_t*> s = ShareTensor(t);
      if (s.ok()) p.run->Feed(edge.to_node, edge.to_port, s.value(), origin.ticket.seq);
    }
  }
}

bool Conductor::AfterExec(BatchWork& work, BatchWork* next, bool finish_follows) {
  if (work.batch.columnar != nullptr) return CohortAfterExec(work, next, finish_follows);
  bool capacity_short = false;
  bool wake_waiters = false;
  bool posted = false;
  bool formed = false;
  Pending pending;
  Spare spare = SpareFor(next);
  {
    std::unique_lock<std::mutex> lock(mu_);
    scheduler_.SetBusy(work.key, false);  // what waited there joins what this batch makes ready
    CountBatch(work);
    for (size_t i = 0; i < work.batch.requests.size(); ++i) {
      StepRequest& step = work.batch.requests[i];
      StepOrigin& o = work.origins[i];
      Request& r = *o.req;
      PartitionRun& p = r.partitions[o.partition];
      WalkRun& run = *p.run;
      if (step.not_ready && r.active()) {
        std::vector<int> ready = run.Undispatch(o.ticket, step.inputs.get());
        --r.in_flight;
        --p.steps_pending;
        o.request = 0;  // settled here
        int walk = p.walk_index;
        for (int n : ready) {
          ReadyEntry entry{r.id, p.index, p.generation, n, run.Activation(n), r.priority, r.order};
          capacity_waiters_.emplace_back(
              QueueKey{global_node_[walk][n], walk, work.batch.capture_key}, entry);
        }
        capacity_short |= step.wait_reason == MSTAR_WAIT_CAPACITY;
        AfterWalkProgress(r, p, pending);  // taking back a stale step may have ended its loop
        MaybeFinalize(r, pending);
        continue;
      }
      ++p.unchecked;  // counted before Enqueue so no second step runs ahead of the stop check
      o.counted = true;
      if (!r.active()) {
        Enqueue(r, p, run.Complete(o.ticket));
        o.dropped = true;
      } else if (run.IsStale(o.ticket)) {  // abandoned by a stop: even a failure is moot
        Enqueue(r, p, run.Complete(o.ticket));
        o.dropped = true;
      } else if (step.failed && (p.unchecked >= 2 || run.Abandoned(o.ticket))) {
        // Run ahead of an earlier step's stop check, which may yet abandon (or has abandoned) its
        // iteration: AfterFinish decides whether the failure counts (a step past a stop never
        // fails its request).
        run.Complete(o.ticket);
      } else if (step.failed) {
        Fail(r,
             "node '" + work.batch.node_name + "' in walk '" + work.batch.walk + "': " + step.error,
             pending);
        run.Complete(o.ticket);
        o.dropped = true;
      } else {
        if (!step.skipped) RouteNodeEdges(r, p, o, step, pending);
        ready_scratch_.clear();
        run.Complete(o.ticket, &ready_scratch_);
        if (r.active()) Enqueue(r, p, ready_scratch_);
        r.offloaded_nodes.erase(
            std::remove(r.offloaded_nodes.begin(), r.offloaded_nodes.end(), work.batch.node),
            r.offloaded_nodes.end());
        ++r.steps;
        ++stats_.steps;
        r.last_step = ++step_clock_;
        if (beneficiaries_.erase(r.id) != 0) wake_waiters = true;  // victims may come back now
      }
    }
    if (wake_waiters) WakeCapacityWaiters();
    if (!capacity_short) formed = FormNext(next, spare, pending);
    posted = Post(pending);
    if (finish_follows) {
      lock.unlock();  // AfterFinish wakes the scheduler if the work is still there then
    } else {
      WakeScheduler(lock);
    }
  }
  if (next != nullptr && !formed) GiveBackSpare(std::move(spare));
  if (posted) Deliver();
  if (capacity_short) Evict(work);
  return formed;
}

void Conductor::ApplyStops(Request& r, PartitionRun& p, const StepOrigin& origin, uint64_t mask) {
  const std::vector<int>& loops = p.compiled->nodes()[origin.ticket.node].loops;
  for (size_t k = 0; k < loops.size() && k < 64; ++k) {
    if ((mask & (uint64_t{1} << k)) == 0) continue;
    Enqueue(r, p, p.run->StopLoop(loops[k], origin.ticket));
  }
}

void Conductor::RouteFinishedStep(Request& r, PartitionRun& p, const StepOrigin& origin,
                                  StepRequest& step, Pending& pending) {
  if (step.skipped || step.outputs == nullptr) return;
  const CompiledNode& node = p.compiled->nodes()[origin.ticket.node];
  bool streamed = false;
  for (const CompiledEdge& edge : node.edges) {
    const EdgeSpec& spec = *edge.spec;
    if (spec.kind == EdgeSpec::Kind::kNode) continue;
    const mstar_tensor_map::Entry* out = step.outputs->Find(spec.from_output);
    if (out == nullptr) {
      return Fail(r,
                  "node '" + node.name + "' produced no output '" + spec.from_output +
                      "' for the edge at " + EdgeWhere(spec),
                  pending);
    }
    if (spec.kind == EdgeSpec::Kind::kPersist) {
      TensorList& value = r.persisted[spec.name];
      value.Clear();
      for (const mstar_tensor_t* t : out->tensors) {
        if (Result<mstar_tensor_t*> s = ShareTensor(t); s.ok()) value.Add(s.value());
      }
    } else if (spec.kind == EdgeSpec::Kind::kStream) {
      for (const mstar_tensor_t* t : out->tensors) {
        Status appended = r.streams[spec.name]->Append(*t);
        if (!appended.ok())
          return Fail(r, "stream '" + spec.name + "': " + appended.message(), pending);
      }
      streamed = true;
    } else {
      // Without a controller encoding outputs, the default encoding is done here (it calls no
      // plugin), so the tensors need no extra reference until delivery.
      PluginInstance* controller = engine_.runtime().controller();
      bool encode_now = controller == nullptr || controller->model()->encode_output == nullptr;
      for (const mstar_tensor_t* t : out->tensors) {
        uint64_t rows = t->dl.ndim == 0 ? 1 : static_cast<uint64_t>(t->dl.shape[0]);
        bool cut = spec.counts_tokens && r.tokens + rows > r.token_limit;
        if (cut) rows = r.token_limit - r.tokens;  // the limit cuts the tensor
        Pending::Emit& emit = pending.emits.emplace_back();
        emit.stream = r.stream;
        if (encode_now) {
          std::vector<int64_t> dims;
          mstar_tensor_t view = cut && t->dl.ndim > 0 ? HeadView(*t, rows, &dims) : *t;
          Status ignored;  // the default encodings call no plugin and cannot fail
          EncodeOutput(nullptr, nullptr, step.info, spec.name, spec.modality, view, &emit.chunk,
                       &ignored);
        } else {
          Result<mstar_tensor_t*> shared = ShareTensor(t);
          if (!shared.ok()) {
            pending.emits.pop_back();
            continue;
          }
          if (cut && t->dl.ndim > 0) shared.value()->dl.shape[0] = static_cast<int64_t>(rows);
          emit.tensor.reset(shared.value());
          emit.info = step.info;  // what the controller's encoding needs
          emit.name = &spec.name;
          emit.modality = &spec.modality;
        }
        if (spec.counts_tokens) r.tokens += rows;
      }
      if (spec.counts_tokens && r.tokens >= r.token_limit && !p.ending) {
        p.ending = true;  // the output limit ends this partition after its walk
        ApplyStops(r, p, origin, ~uint64_t{0});
      }
    }
  }
  if (streamed) FeedConsumers(r, pending);
}

bool Conductor::AfterFinish(BatchWork& work, BatchWork* next) {
  if (work.batch.columnar != nullptr) return CohortAfterFinish(work, next);
  Pending pending;
  Spare spare = SpareFor(next);
  std::unique_lock<std::mutex> lock(mu_);
  ReuseEmits(pending);
  for (size_t i = 0; i < work.batch.requests.size(); ++i) {
    StepOrigin& o = work.origins[i];
    if (o.request == 0) continue;  // settled in AfterExec
    Request& r = *o.req;
    PartitionRun& p = r.partitions[o.partition];
    StepRequest& step = work.batch.requests[i];
    --r.in_flight;
    if (p.generation == o.generation) --p.steps_pending;
    if (o.counted) --p.unchecked;
    // A stop applied after this step's exec may have abandoned its iteration, or ended its walk.
    bool current = p.generation == o.generation && p.run != nullptr && !p.run->Abandoned(o.ticket);
    if (!o.dropped && !current) {
      o.dropped = true;
    }
    if (o.dropped) ++r.wasted_steps, ++stats_.wasted_steps;
    if (r.active() && !o.dropped) {
      if (step.failed) {
        Fail(r,
             "node '" + work.batch.node_name + "' in walk '" + work.batch.walk + "': " + step.error,
             pending);
      } else {
        ApplyStops(r, p, o, step.stop_mask);
        RouteFinishedStep(r, p, o, step, pending);
        if (p.run != nullptr && p.generation == o.generation) p.run->Confirm(o.ticket);
      }
    }
    if (!r.parked.empty()) {
      size_t kept = 0;  // in order: those still waiting move up, the others are queued
      for (size_t k = 0; k < r.parked.size(); ++k) {
        const auto& [key, entry] = r.parked[k];
        if (r.partitions[entry.partition].unchecked >= 2) {
          r.parked[kept++] = r.parked[k];
        } else {
          scheduler_.Push(key, entry);
        }
      }
      r.parked.resize(kept);
      if (kept == 0) --parked_requests_;
      NoteWork();
    }
    if (p.generation == o.generation) AfterWalkProgress(r, p, pending);
    MaybeFinalize(r, pending);
  }
  return BatchDone(next, spare, pending, lock);
}

bool Conductor::BatchDone(BatchWork* next, Spare& spare, Pending& pending,
                          std::unique_lock<std::mutex>& lock) {
  bool posted = Post(pending);
  --batches_in_flight_;
  CheckProgress(pending);
  NoteWork();  // a batch fewer in flight
  const bool formed = FormNext(next, spare, pending);
  posted |= Post(pending);
  WakeScheduler(lock);
  if (next != nullptr && !formed) GiveBackSpare(std::move(spare));
  if (posted) Deliver();
  return formed;
}

bool Conductor::MayFormNow() const {
  return !stopping_ && (!scheduler_.empty() || AnyCohortReady()) &&
         batches_in_flight_ < kMaxBatchesInFlight &&
         !scheduler_called_.load(std::memory_order_relaxed);
}

bool Conductor::FormNow(BatchWork* work, Spare& spare, Pending& pending) {
  if (!FormBatch(work, spare, pending)) return false;
  if (scheduler_.empty()) wake_scheduler_ = false;  // nothing left for the scheduler thread
  return true;
}

bool Conductor::FormNext(BatchWork* next, Spare& spare, Pending& pending) {
  // Not while a client or the scheduler thread waits for the lock: a thread that finishes and
  // forms steps back to back would take the lock again before they get it, for as long as its
  // requests run (new requests would wait for them to end).
  if (next == nullptr || contenders_.load(std::memory_order_relaxed) != 0 || !MayFormNow())
    return false;
  return FormNow(next, spare, pending);
}

void Conductor::SetIdleLauncher(IdleLauncher* launcher) {
  std::lock_guard<std::mutex> lock(mu_);
  launcher_ = launcher;
}

std::unique_ptr<BatchWork> Conductor::FormForIdleExecutor(Pending& pending) {
  if (launcher_ == nullptr || !MayFormNow() || !launcher_->Claim()) return nullptr;
  auto work = std::make_unique<BatchWork>();
  Spare spare = SpareFor(work.get());
  const bool formed = FormNow(work.get(), spare, pending);
  GiveBackSpare(std::move(spare));  // what the batch did not take (a cohort's step takes none)
  if (!formed) {
    launcher_->Unclaim();
    return nullptr;
  }
  ++stats_.idle_launches;
  return work;
}

void Conductor::WakeScheduler(std::unique_lock<std::mutex>& lock) {
  bool wake = wake_scheduler_;
  wake_scheduler_ = false;
  if (wake) scheduler_called_.store(true, std::memory_order_relaxed);
  lock.unlock();
  if (wake) work_cv_.notify_one();
}

void Conductor::CountBatch(const BatchWork& work) {
  uint32_t ran = 0;
  for (const StepRequest& step : work.batch.requests) ran += !step.skipped && !step.not_ready;
  if (ran == 0) return;
  NodeBatchStats& node = *StatsFor(work.batch.node).batches;
  ++node.batches;
  node.request_steps += ran;
  node.largest = std::max(node.largest, ran);
}

Conductor::Spare Conductor::SpareFor(const BatchWork* next) {
  if (next == nullptr) return {};
  Spare spare = TakeSpare();
  for (StepRequest& step : spare.requests) step.Reset();
  return spare;
}

void Conductor::ReuseEmits(Pending& pending) {
  if (spare_emits_.empty()) return;
  pending.emits = std::move(spare_emits_.back());
  spare_emits_.pop_back();
}

Conductor::Spare Conductor::TakeSpare() {
  std::lock_guard<std::mutex> lock(spare_mu_);
  if (spares_.empty()) return {};
  Spare spare = std::move(spares_.back());
  spares_.pop_back();
  return spare;
}

void Conductor::GiveBackSpare(Spare spare) {
  if (spare.requests.empty() && spare.origins.empty()) return;
  std::lock_guard<std::mutex> lock(spare_mu_);
  if (spares_.size() < kMaxSpares) spares_.push_back(std::move(spare));
}

void Conductor::Recycle(BatchWork& work) {
  if (work.batch.columnar != nullptr) work.batch.columnar->Clear();  // tensors go now, unlocked
  for (StepRequest& step : work.batch.requests) {
    // Tensors go now, outside the lock; the input and host-output maps stay for the next step.
    if (step.inputs != nullptr) step.inputs->Clear();
    if (step.host_outputs != nullptr) step.host_outputs->Clear();
    step.stop_view = nullptr;
    step.prepared.reset();
    step.outputs.reset();
  }
  Spare spare{std::move(work.batch.requests), std::move(work.origins)};
  work.batch.requests.clear();
  work.origins.clear();
  GiveBackSpare(std::move(spare));
}

void Conductor::Abandon(BatchWork& work) {
  std::lock_guard<std::mutex> lock(mu_);
  if (work.batch.columnar != nullptr) return AbandonCohortBatch(work);
  scheduler_.SetBusy(work.key, false);
  for (size_t i = 0; i < work.batch.requests.size(); ++i) {
    StepOrigin& o = work.origins[i];
    if (o.request == 0) continue;  // settled in AfterExec
    Request* r = o.req;
    PartitionRun& p = r->partitions[o.partition];
    if (p.run != nullptr && p.generation == o.generation) {
      p.run->Complete(o.ticket);
      --p.steps_pending;
    }
    --r->in_flight;
    if (o.counted) --r->partitions[o.partition].unchecked;
  }
  --batches_in_flight_;
}

}  // namespace mstar

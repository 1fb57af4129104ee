// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The conductor's step handling: queueing ready steps, routing a step's outputs after its exec
// (node edges) and after its stop check (stops, persisted values, streams, client outputs, the
// output-token limit), and recycling finished batches. Forming batches is in
// conductor_forming.cc, memory pressure in conductor_pressure.cc.
#include <algorithm>
#include <cstring>

#include "core/logging.h"
#include "core/small_vector.h"
#include "device/device.h"
#include "engine/conductor.h"
#include "engine/conductor_pending.h"

namespace mstar {
namespace {

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

std::string DeviceEmitError(const EdgeSpec& edge) {
  return "node '" + edge.from_node + "' output '" + edge.from_output +
         "' is in device memory; what an emit edge (" + EdgeWhere(edge) +
         ") sends must be in host memory (copy it there in postprocess)";
}

void Conductor::Enqueue(Request& r, PartitionRun& p, const std::vector<int>& nodes) {
  if (nodes.empty()) return;
  int walk = p.walk_index;
  for (int n : nodes) {
    QueueKey key{global_node_[walk][n], walk, 0};
    if (p.cohort == nullptr && !p.per_request && CohortShape(key, n)) {
      // A cohort's steps do not reload: a request offloaded at the node runs this walk per
      // request, whose steps reload it first. One held back there (HeldBack) is queued per
      // request, where Valid holds it back and joins it to the cohort once it may run.
      if (OffloadedAt(r, key.node)) {
        p.per_request = true;
      } else if (!HeldBack(r, key.node)) {
        JoinCohort(r, p, key, n);
        continue;
      }
    }
    if (SplitsByCaptureKey(key)) key.capture_key = CaptureKeyFor(r, p, key.node);
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

uint64_t Conductor::CaptureKeyFor(Request& r, PartitionRun& p, int node) {
  for (const PartitionRun::CaptureKeyOf& known : p.capture_keys)
    if (known.walk == p.walk_index && known.node == node) return known.key;
  mstar_request_info_t info = r.info;
  info.walk = p.compiled->name().c_str();
  info.partition = p.spec->name.c_str();
  const uint64_t key = engine_.CaptureGroup(node, p.compiled->name(), info).value_or(0);
  p.capture_keys.push_back({p.walk_index, node, key});
  return key;
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

std::string Conductor::MissingNodeOutput(const PartitionRun& p, const StepOrigin& origin,
                                         const StepRequest& step) const {
  const CompiledNode& node = p.compiled->nodes()[origin.ticket.node];
  for (const CompiledEdge& edge : node.edges) {
    if (edge.spec->kind != EdgeSpec::Kind::kNode) continue;
    if (step.outputs == nullptr || step.outputs->Find(edge.spec->from_output) == nullptr)
      return "produced no output '" + edge.spec->from_output + "' for the edge at " +
             EdgeWhere(*edge.spec);
  }
  return "";
}

Status Conductor::RouteNodeEdges(Request& r, PartitionRun& p, const StepOrigin& origin,
                                 StepRequest& step) {
  const CompiledNode& node = p.compiled->nodes()[origin.ticket.node];
  // Every value's reference first: one that cannot be made (out of memory) fails the step before
  // any edge is fed.
  boost::container::small_vector<mstar_tensor_t*, 4> shares;
  boost::container::small_vector<std::pair<const CompiledEdge*, size_t>, 4> fed;  // edge, count
  for (const CompiledEdge& edge : node.edges) {
    if (edge.spec->kind != EdgeSpec::Kind::kNode) continue;
    const mstar_tensor_map::Entry* out = step.outputs->Find(edge.spec->from_output);
    if (out == nullptr) continue;  // none is missing: AfterExec checked (MissingNodeOutput)
    fed.emplace_back(&edge, out->tensors.size());
    for (const mstar_tensor_t* t : out->tensors) {
      Result<mstar_tensor_t*> s = ShareTensor(t);
      if (!s.ok()) {
        for (mstar_tensor_t* made : shares) ReleaseTensor(made);
        return Status(s.status().code(), "node '" + node.name + "': output '" +
                                             edge.spec->from_output + "' for the edge at " +
                                             EdgeWhere(*edge.spec) + ": " + s.status().message());
      }
      shares.push_back(s.value());
    }
  }
  size_t next_share = 0;
  for (const auto& [edge, count] : fed) {
    bool became_ready = false;
    for (size_t i = 0; i < count; ++i) {
      became_ready |=
          p.run->Feed(edge->to_node, edge->to_port, shares[next_share++], origin.ticket.seq);
    }
    // A node already reached (a parallel sibling) that this edge completes runs now; one reached
    // later is queued when its section starts.
    if (became_ready) Enqueue(r, p, {edge->to_node});
  }
  return Status::Ok();
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
        // A step a stop abandoned (run ahead of the check that ended its loop) waits for
        // nothing: Undispatch settles it like a dropped step, what follows the loop is queued as
        // after any settled step, and no victim is offloaded for it.
        const bool abandoned = run.IsStale(o.ticket);
        std::vector<int> ready = run.Undispatch(o.ticket, step.inputs.get());
        --r.in_flight;
        --p.steps_pending;
        o.request = 0;  // settled here
        if (abandoned) {
          step.wait_reason = 0;
          Enqueue(r, p, ready);
        } else {
          int walk = p.walk_index;
          for (int n : ready) {
            ReadyEntry entry{r.id,       p.index, p.generation, n, run.Activation(n),
                             r.priority, r.order};
            capacity_waiters_.emplace_back(
                QueueKey{global_node_[walk][n], walk, work.batch.capture_key}, entry);
          }
          if (step.wait_reason == MSTAR_WAIT_CAPACITY) {
            capacity_short = true;
            ++stats_.capacity_waits;
          }
          r.wait_reason = step.wait_reason;
          r.waiting_on = step.waiting_on;
        }
        // Brought back for this step, it counts as used: LRU would otherwise offload it again
        // first, before it has run the step it came back for.
        if (step.reloaded) r.last_step = ++step_clock_;
        AfterWalkProgress(r, p, pending);  // taking back a stale step may have ended its loop
        MaybeFinalize(r, pending);
        continue;
      }
      ++p.unchecked;  // counted before Enqueue so no second step runs ahead of the stop check
      o.counted = true;
      // A step without an output its node edges need failed, like one whose forward failed (and,
      // run ahead of a stop, is judged as such a step is, below).
      if (!step.failed && !step.skipped && r.active()) {
        if (std::string missing = MissingNodeOutput(p, o, step); !missing.empty())
          step.Fail(std::move(missing));
      }
      if (!r.active()) {
        Enqueue(r, p, run.Complete(o.ticket));
        o.dropped = true;
      } else if (run.IsStale(o.ticket)) {  // abandoned by a stop: even a failure is moot
        Enqueue(r, p, run.Complete(o.ticket));
        o.dropped = true;
      } else if (step.failed && (p.unchecked >= 2 || run.Abandoned(o.ticket))) {
        // Run ahead of an earlier step's stop check, which may yet abandon (or has abandoned) its
        // iteration: AfterFinish decides whether the failure counts (a step past a stop never
        // fails its request). What it made ready (the node after a loop it ended) is queued as
        // any step's is: parked while two steps are unchecked.
        Enqueue(r, p, run.Complete(o.ticket));
      } else if (Status routed =
                     step.failed || step.skipped ? Status::Ok() : RouteNodeEdges(r, p, o, step);
                 step.failed || !routed.ok()) {
        if (!routed.ok()) step.Fail(routed.message());
        FailStep(r, work.batch, step, pending);
        run.Complete(o.ticket);
        o.dropped = true;
      } else {
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
    if (capacity_short) HoldRoom(work);  // before any batch formed from now on is
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
  if ((mask & MSTAR_STOP_PARTITION) != 0) {
    p.ending = true;    // the partition ends after this walk, whose loops all stop
    p.run->EndLoops();  // those after this step's node too, and those beside it
    mask = ~uint64_t{0};
  }
  const std::vector<int>& loops = p.compiled->nodes()[origin.ticket.node].loops;
  for (size_t k = 0; k < loops.size() && k < 63; ++k) {
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
        Result<mstar_tensor_t*> s = ShareTensor(t);
        if (!s.ok())
          return Fail(r, "persisting '" + spec.name + "': " + s.status().message(), pending);
        value.Add(s.value());
      }
    } else if (spec.kind == EdgeSpec::Kind::kStream) {
      for (const mstar_tensor_t* t : out->tensors) {
        Status appended = r.streams[spec.name]->Append(*t);
        if (!appended.ok())
          return Fail(r, "stream '" + spec.name + "': " + appended.message(), pending);
      }
      streamed = true;
    } else {
      // The host reads emitted bytes itself: a device tensor would be read through a device
      // pointer.
      for (const mstar_tensor_t* t : out->tensors) {
        if (!IsHostDevice(t->dl.device)) return Fail(r, DeviceEmitError(spec), pending);
      }
      // Without a controller encoding outputs, the default encoding is done here (it calls no
      // plugin), so the tensors need no extra reference until delivery.
      PluginInstance* controller = engine_.runtime().controller();
      bool encode_now = controller == nullptr || controller->model()->encode_output == nullptr;
      for (const mstar_tensor_t* t : out->tensors) {
        const uint64_t all = t->dl.ndim == 0 ? 1 : static_cast<uint64_t>(t->dl.shape[0]);
        const uint64_t rows = r.RowsToSend(spec.counts_tokens, all);
        const bool cut = rows < all;     // the limit cuts the tensor
        if (cut && rows == 0) continue;  // nothing of it is within the limit
        Pending::Emit& emit = pending.emits.emplace_back();
        emit.stream = r.stream;
        emit.request = r.id;
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
            return Fail(r, "emitting '" + spec.name + "': " + shared.status().message(), pending);
          }
          if (cut && t->dl.ndim > 0) shared.value()->dl.shape[0] = static_cast<int64_t>(rows);
          emit.tensor.reset(shared.value());
          emit.Keep(step.info, r.params);  // what the controller's encoding needs
          emit.name = &spec.name;
          emit.modality = &spec.modality;
        }
        if (spec.counts_tokens) r.tokens += rows;
      }
      if (spec.counts_tokens && r.tokens >= r.token_limit && !p.ending) {
        ApplyStops(r, p, origin, MSTAR_STOP_PARTITION);  // the output limit ends the partition
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
  Reuse(spare_emits_, &pending.emits);
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
        FailStep(r, work.batch, step, pending);
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

void Conductor::CountBatch(const BatchWork& work) {
  uint32_t ran = 0;
  for (const StepRequest& step : work.batch.requests) ran += step.forwarded ? 1 : 0;
  if (ran == 0) return;
  NodeBatchStats& node = *StatsFor(work.batch.node).batches;
  ++node.batches;
  node.request_steps += ran;
  node.largest = std::max(node.largest, ran);
}

void Conductor::Recycle(BatchWork& work) {
  if (work.batch.columnar != nullptr) work.batch.columnar->Clear();  // tensors go now, unlocked
  if (work.batch.requests.empty() && work.origins.empty()) return;   // a cohort's step holds none
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

}  // namespace mstar

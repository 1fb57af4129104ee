// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The conductor's batch forming: the scheduler thread's wait for ready work (NextBatch), a batch
// from a cohort or the ready queues (FormBatch), the next batch formed by the thread that
// finished a step (FormNext) or by a client for the idle executor (FormForIdleExecutor), and the
// step records kept from finished batches for reuse.
#include <algorithm>

#include "engine/conductor.h"
#include "engine/conductor_pending.h"

namespace mstar {
namespace {

constexpr uint32_t kMaxBatchesInFlight = 3;  // one planning, one executing, one finishing

}  // namespace

bool Conductor::OffloadedAt(const Request& r, int node) {
  return std::find(r.offloaded_nodes.begin(), r.offloaded_nodes.end(), node) !=
         r.offloaded_nodes.end();
}

bool Conductor::Valid(const QueueKey& key, const ReadyEntry& entry) {
  Request* r = Find(entry.request);
  if (r == nullptr || !r->active()) return false;
  PartitionRun& p = r->partitions[entry.partition];
  if (p.generation != entry.generation || p.run == nullptr) return false;
  if (p.run->Activation(entry.walk_node) != entry.activation || !p.run->Ready(entry.walk_node))
    return false;
  if (r->evicted_for != 0) {
    if (WaitsForBeneficiary(*r)) {
      capacity_waiters_.emplace_back(key, entry);  // let the request it made room for go first
      return false;
    }
    r->evicted_for = 0;
  }
  if (HeldBack(*r, key.node)) {
    capacity_waiters_.emplace_back(key, entry);  // room is being made for a request before it
    return false;
  }
  if (r->evicting) {
    eviction_parked_.emplace_back(key, entry);
    return false;
  }
  // Held back from its cohort until now (Enqueue): it joins it, unless it was offloaded at the
  // node since (a cohort's steps do not reload).
  if (p.cohort == nullptr && !p.per_request && CohortShape(key, entry.walk_node)) {
    if (!OffloadedAt(*r, key.node)) {
      JoinCohort(*r, p, key, entry.walk_node);
      return false;
    }
    p.per_request = true;
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
  info = WalkInfo(r, p);
  info.num_loops = static_cast<uint32_t>(loops.size());
  info.loop_names = step.loop_names.data();
  info.loop_iterations = step.loop_iterations.data();
  info.loop_max_iterations = step.loop_limits.data();
}

mstar_request_info_t Conductor::WalkInfo(const Request& r, const PartitionRun& p) {
  mstar_request_info_t info = r.info;
  info.walk = p.compiled->name().c_str();
  info.partition = p.spec->name.c_str();
  info.params = r.params->root();
  if (p.input != nullptr && p.last_chunk) info.flags |= MSTAR_REQUEST_FINAL_CHUNK;
  return info;
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
      return stopping_ || SchedulerHasWork();
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

std::vector<uint32_t> Conductor::BatchCaps() {
  std::vector<uint32_t> caps(engine_.runtime().nodes().size() * walks_.size(), 1);
  for (size_t walk = 0; walk < walks_.size(); ++walk) {
    for (const int node : global_node_[walk]) {
      std::optional<uint32_t> max = engine_.GetMaxBatchSize(node, walks_[walk]->name());
      uint32_t limit = max.value_or(UINT32_MAX);
      if (options_.max_batch > 0) limit = std::min(limit, options_.max_batch);
      caps[static_cast<size_t>(node) * walks_.size() + walk] = std::max<uint32_t>(limit, 1);
    }
  }
  return caps;
}

uint32_t Conductor::CapFor(const QueueKey& k) const {
  return caps_[static_cast<size_t>(k.node) * walks_.size() + static_cast<size_t>(k.walk)];
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
  work->batch.Reset(key.node, engine_.runtime().node(key.node)->name, key.walk,
                    walks_[key.walk]->name());
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

bool Conductor::SchedulerHasWork() const {
  return (!scheduler_.empty() || AnyCohortReady()) && batches_in_flight_ < kMaxBatchesInFlight;
}

bool Conductor::MayFormNow() const {
  return !stopping_ && SchedulerHasWork() && !scheduler_called_.load(std::memory_order_relaxed);
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
  if (launcher_ == nullptr || !MayFormNow() || !launcher_->Claim(batches_in_flight_ == 0))
    return nullptr;
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
  // Only when NextBatch's wait would end: a wake to find nothing formable costs the caller a
  // system call and, on a machine with few cores, the executor its core for a while.
  bool wake = wake_scheduler_ && SchedulerHasWork();
  wake_scheduler_ = false;
  if (wake) {
    scheduler_called_.store(true, std::memory_order_relaxed);
    ++stats_.scheduler_wakes;
  }
  lock.unlock();
  if (wake) work_cv_.notify_one();
}

Conductor::Spare Conductor::SpareFor(const BatchWork* next) {
  if (next == nullptr) return {};
  Spare spare = TakeSpare();
  for (StepRequest& step : spare.requests) step.Reset();
  return spare;
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

}  // namespace mstar

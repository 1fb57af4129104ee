// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The conductor under memory pressure: when a batch leaves requests waiting for capacity, it
// offloads victims chosen by the eviction policy (never the waiter of the highest priority and
// longest wait, and none of a higher priority than it, so something always progresses) and wakes the waiters once capacity is freed; when everything is idle and the
// waiters still cannot be admitted, it fails them one at a time instead of waiting forever.
#include <algorithm>
#include <cstdint>
#include <set>

#include "engine/conductor.h"
#include "engine/conductor_pending.h"

namespace mstar {
namespace {

const char* WaitReasonName(uint32_t reason) {
  switch (reason) {
    case MSTAR_WAIT_TRANSFER: return "waiting for published state to land";
    case MSTAR_WAIT_RELOAD: return "waiting for its offloaded state to come back";
    default: return "a reason other than capacity";
  }
}

bool InCohort(const Request& r) {
  return std::any_of(r.partitions.begin(), r.partitions.end(),
                     [](const PartitionRun& p) { return p.cohort != nullptr; });
}

}  // namespace

void Conductor::Evict(const BatchWork& work) {
  std::vector<RequestId> victims;
  RequestId protect = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Capacity goes to the request of the highest priority that could not be admitted, the
    // longest-waiting among equals: it is never a victim, so it eventually runs
    // (always-progress); requests of its priority or lower may be.
    const Request* first = nullptr;
    for (const StepRequest& step : work.batch.requests) {
      const Request* r = Find(step.id);
      if (!step.not_ready || step.wait_reason != MSTAR_WAIT_CAPACITY || r == nullptr) continue;
      if (first == nullptr || r->priority > first->priority ||
          (r->priority == first->priority && r->order < first->order))
        first = r;
    }
    if (first != nullptr) protect = first->id;
  }
  // Offload the best victim; when its offload fails, try the next best, so one broken offload
  // does not leave the waiters without capacity. The last failure is kept for their message.
  std::vector<RequestId> offloaded;
  std::set<RequestId> tried;
  while (offloaded.empty()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      victims = ChooseVictims(work.batch.node, protect, tried);
      for (RequestId id : victims) Find(id)->evicting = true;
    }
    if (victims.empty()) break;
    std::vector<RequestId> moved;
    for (RequestId id : victims) {
      std::string error;
      if (engine_.OffloadRequest(work.batch.node, id, &error) > 0) {
        moved.push_back(id);
      } else if (!error.empty()) {
        std::lock_guard<std::mutex> lock(mu_);
        offload_failure_ = "offloading request " + std::to_string(id) + " failed: " + error;
      }
      tried.insert(id);
    }
    // A victim is marked offloaded, and made to wait for the request it made room for, in the
    // same critical section that ends its eviction: a step formed for it afterwards (by any
    // thread) reloads it first and only once that request has run. Were the marks set later, a
    // step formed in between would run on the victim's emptied state.
    std::lock_guard<std::mutex> lock(mu_);
    for (RequestId id : moved) {
      if (Request* r = Find(id)) MarkOffloaded(*r, work.batch.node, protect);
    }
    for (RequestId id : victims) {
      if (Request* r = Find(id)) r->evicting = false;
    }
    offloaded.insert(offloaded.end(), moved.begin(), moved.end());
  }
  std::unique_lock<std::mutex> lock(mu_);
  // Only freed capacity is worth a retry; otherwise the waiters wait for a request to finish, or
  // for CheckProgress once everything is idle.
  if (!offloaded.empty()) WakeCapacityWaiters();
  WakeScheduler(lock);
}

void Conductor::MarkOffloaded(Request& victim, int node, RequestId protect) {
  victim.offloaded_nodes.push_back(node);
  ++stats_.evictions;
  // The victim waits until the request it made room for has run a step (or ended); it may
  // already have ended.
  Request* beneficiary = protect != 0 ? Find(protect) : nullptr;
  if (beneficiary == nullptr || !beneficiary->active()) return;
  victim.evicted_for = beneficiary->id;
  victim.evicted_for_steps = StepsRun(*beneficiary);
  beneficiaries_.insert(beneficiary->id);
}

// A request other than protect, of no higher priority than protect's, that has run, holds
// something at node and has nothing in flight (requests of the batch that were not admitted
// qualify: their step was taken back), and is in no cohort: a cohort's steps do not reload, so
// its members are not offloaded; they leave their cohort when one of its steps cannot admit them,
// and are candidates from then on. The lowest priority goes first; among equals, the policy's
// choice.
std::vector<RequestId> Conductor::ChooseVictims(int node, RequestId protect,
                                                const std::set<RequestId>& excluded) {
  if (!engine_.Evictable(node)) return {};
  const Request* protected_request = protect != 0 ? Find(protect) : nullptr;
  const int32_t ceiling = protected_request != nullptr ? protected_request->priority : INT32_MAX;
  Request* best = nullptr;
  double best_score = 0;
  for (auto& [id, request] : requests_) {
    Request& r = *request;
    if (id == protect || !r.active() || r.in_flight != 0 || r.evicting || r.last_step == 0 ||
        r.priority > ceiling || excluded.count(id) != 0 || InCohort(r))
      continue;
    // offloaded_nodes is a hint (a reload may have happened since): ask what it holds.
    if (engine_.Reclaimable(node, id) == 0) continue;
    double score = -static_cast<double>(r.last_step);  // LRU: the least recently run
    if (options_.eviction == EvictionPolicy::kPriority) {
      double want = 0;
      for (ResourceRuntime* resource : engine_.runtime().node(node)->resources) {
        want = std::max(want, engine_.OffloadPriority(node, id, resource->label));
      }
      score = want * 1e12 + score;  // most wanted gone first; ties by LRU
    }
    if (best == nullptr || r.priority < best->priority ||
        (r.priority == best->priority && score > best_score)) {
      best = &r;
      best_score = score;
    }
  }
  if (best == nullptr) return {};
  return {best->id};
}

void Conductor::WakeCapacityWaiters() {
  for (auto& [key, entry] : capacity_waiters_) scheduler_.Push(key, entry);
  capacity_waiters_.clear();
  NoteWork();
}

// Nothing runs, nothing is queued, and requests wait for capacity that nothing will free (every
// eviction failed, or nothing is evictable). One waiter fails with the reason: the lowest
// priority, newest of them, so what it held goes back to the others, which are woken to retry
// once its removal is delivered. Repeats, one request at a time, while the deadlock lasts.
void Conductor::CheckProgress(Pending& pending) {
  // Requests ended but not yet removed from the engine (outbox) still hold capacity that their
  // removal frees; Deliver wakes the waiters after it.
  if (batches_in_flight_ != 0 || !scheduler_.empty() || parked_requests_ != 0 ||
      capacity_waiters_.empty() || !outbox_.empty() || delivering_ || AnyCohortReady())
    return;
  uint64_t progress = stats_.steps + stats_.evictions + stats_.requests_done +
                      stats_.requests_failed + stats_.requests_cancelled + stats_.recomputes;
  if (progress != progress_at_last_wake_) {
    progress_at_last_wake_ = progress;  // something changed since the last try: try once more
    WakeCapacityWaiters();
    return;
  }
  Request* victim = nullptr;
  int victim_node = -1;
  for (auto& [key, entry] : capacity_waiters_) {
    Request* r = Find(entry.request);
    if (r == nullptr || !r->active()) continue;
    if (victim == nullptr || r->priority < victim->priority ||
        (r->priority == victim->priority && r->order > victim->order)) {
      victim = r;
      victim_node = key.node;
    }
  }
  if (victim == nullptr) {
    capacity_waiters_.clear();
    return;
  }
  std::erase_if(capacity_waiters_,
                [&](const auto& waiter) { return waiter.second.request == victim->id; });
  const std::string where =
      "cannot be admitted at node '" + engine_.runtime().node(victim_node)->name + "': ";
  if (victim->wait_reason == MSTAR_WAIT_CAPACITY || victim->wait_reason == 0) {
    Fail(*victim,
         where + "its resources stay full and no other request can be evicted" +
             (offload_failure_.empty() ? "" : " (" + offload_failure_ + ")"),
         pending);
  } else {
    // Not a matter of capacity: nothing the engine can free would help.
    Fail(*victim,
         where + "resource '" + victim->waiting_on + "' keeps answering not ready (" +
             WaitReasonName(victim->wait_reason) + ") while nothing else runs",
         pending);
  }
}

}  // namespace mstar

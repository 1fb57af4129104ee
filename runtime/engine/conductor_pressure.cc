// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The conductor under memory pressure: when a batch leaves requests waiting for capacity, it
// offloads victims chosen by the eviction policy (never the waiter of the highest priority and
// longest wait, and none of a higher priority than it, so something always progresses) and wakes
// the waiters once capacity is freed; when everything is idle and the waiters still cannot be
// admitted, it fails them one at a time instead of waiting forever.
#include <algorithm>
#include <cstdint>
#include <optional>
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

// Whether capacity goes to a before b: the higher priority, the longest-waiting among equals.
bool RanksBefore(const Request& a, const Request& b) {
  return a.priority > b.priority || (a.priority == b.priority && a.order < b.order);
}

}  // namespace

const StepRequest* Conductor::FirstShort(const BatchWork& work) {
  const Request* first = nullptr;
  const StepRequest* first_step = nullptr;
  for (const StepRequest& step : work.batch.requests) {
    const Request* r = Find(step.id);
    // One that ended meanwhile (a cancel during the step) needs no capacity any more.
    if (!step.not_ready || step.wait_reason != MSTAR_WAIT_CAPACITY || r == nullptr || !r->active())
      continue;
    if (first == nullptr || RanksBefore(*r, *first)) {
      first = r;
      first_step = &step;
    }
  }
  return first_step;
}

void Conductor::HoldRoom(const BatchWork& work) {
  const StepRequest* step = FirstShort(work);
  if (step == nullptr) return;
  const Request& r = *Find(step->id);
  // A hold that is over, or of a request that ranks lower, gives way.
  const Request* holder = Holder();
  if (holder != nullptr && holder->id != r.id && RanksBefore(*holder, r)) return;
  room_hold_ = {r.id, work.batch.node, r.priority, r.order, StepsRun(r)};
  beneficiaries_.insert(r.id);
}

const Request* Conductor::Holder() {
  if (room_hold_.request == 0) return nullptr;
  // Over once the holder has run a step or ended (either takes it out of beneficiaries_; a
  // request started again under its id is another one).
  const Request* holder = Find(room_hold_.request);
  if (holder == nullptr || !holder->active() || StepsRun(*holder) != room_hold_.steps ||
      beneficiaries_.count(holder->id) == 0) {
    room_hold_ = {};
    return nullptr;
  }
  return holder;
}

bool Conductor::HeldBack(const Request& r, int node) {
  if (room_hold_.request == 0 || r.id == room_hold_.request || node != room_hold_.node ||
      r.priority > room_hold_.priority || StepsRun(r) != 0)
    return false;
  const Request* holder = Holder();
  // Offloaded since for another request, it waits for that one: r might be it.
  return holder != nullptr && !WaitsForBeneficiary(*holder);
}

void Conductor::Evict(const BatchWork& work) {
  RequestId protect = 0;
  std::set<std::string> short_of;               // the resource protect's admission was short of
  const std::set<std::string>* only = nullptr;  // null: any (a reload names none)
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Capacity goes to the request of the highest priority that could not be admitted, the
    // longest-waiting among equals: it is never a victim, so it eventually runs
    // (always-progress); requests of its priority or lower may be.
    if (const StepRequest* first = FirstShort(work)) {
      protect = first->id;
      // Offloading from another resource would free nothing it needs.
      if (!first->waiting_on.empty()) {
        short_of.insert(first->waiting_on);
        only = &short_of;
      }
    }
  }
  // Offload the best victim; when its offload fails, try the next best, so one broken offload
  // does not leave the waiters without capacity. The last failure is kept for their message.
  std::vector<RequestId> offloaded;
  VictimSearch search;
  Pending pending;
  bool posted = false;
  while (protect != 0 && offloaded.empty()) {  // 0: no request of the batch is short any more
    std::optional<RequestId> victim = ChooseVictim(work.batch.node, protect, only, &search);
    if (!victim) break;
    std::string error;
    const bool moved = engine_.OffloadRequest(work.batch.node, *victim, &error, only) > 0;
    // A victim is marked offloaded, and made to wait for the request it made room for, in the
    // same critical section that ends its eviction: a step formed for it afterwards (by any
    // thread) reloads it first and only once that request has run. Were the marks set later, a
    // step formed in between would run on the victim's emptied state.
    std::lock_guard<std::mutex> lock(mu_);
    Request* r = Find(*victim);
    if (moved && r != nullptr) MarkOffloaded(*r, work.batch.node, protect);
    if (r != nullptr) {
      r->evicting = false;
      // Ended (a cancel, say) while its offload ran: it finishes now, not during the offload
      // (its removal from the resources would race it, and its id could be taken again).
      MaybeFinalize(*r, pending);
      posted |= Post(pending);
    }
    if (moved) offloaded.push_back(*victim);
    if (!moved && !error.empty())
      offload_failure_ = "offloading request " + std::to_string(*victim) + " failed: " + error;
  }
  std::unique_lock<std::mutex> lock(mu_);
  // Only freed capacity is worth a retry; otherwise the waiters wait for a request to finish, or
  // for CheckProgress once everything is idle. The victims' own steps, parked while they were
  // being offloaded, go back either way: they waited for the eviction, not for capacity.
  if (!offloaded.empty()) WakeCapacityWaiters();
  RequeueEvictionParked();
  WakeScheduler(lock);
  if (posted) Deliver();
}

void Conductor::RequeueEvictionParked() {
  if (eviction_parked_.empty()) return;
  for (auto& [key, entry] : eviction_parked_) scheduler_.Push(key, entry);
  eviction_parked_.clear();
  NoteWork();
}

void Conductor::WakeForBeneficiaries(const ColumnarBatch& c) {
  if (beneficiaries_.empty()) return;
  bool woke = false;
  for (const ColumnarRow& row : c.rows) {
    if (row.out >= 0 && row.member->serial == row.serial && beneficiaries_.erase(row.req->id) != 0)
      woke = true;
  }
  if (woke) WakeCapacityWaiters();
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

// Under mu_: whether r may be offloaded now: active, has run, nothing in flight (requests of the
// batch that were not admitted qualify: their step was taken back), not being evicted, and in no
// cohort: a cohort's steps do not reload, so its members are not offloaded; they leave their
// cohort when one of its steps cannot admit them, and are candidates from then on.
bool Conductor::MayEvict(const Request& r) const {
  return r.active() && r.last_step != 0 && r.in_flight == 0 && !r.evicting && !InCohort(r);
}

// Under mu_: the highest priority a victim for protect may have, or nullopt when protect has
// ended.
std::optional<int32_t> Conductor::Ceiling(RequestId protect) {
  const Request* r = Find(protect);
  if (r == nullptr || !r->active()) return std::nullopt;
  return r->priority;
}

// The candidates are listed under mu_, asked what they would free (and, for PRIORITY, how much
// their resources want them gone) without it, since those are plugin calls that wait for the
// resources' locks (which an offload under way holds), and the choice is checked again under
// mu_ before it is marked evicting. Candidates: requests other than protect, of no higher
// priority than protect's, that MayEvict, hold something at node and were not tried yet, save
// those that room was made or held for (beneficiaries_) that rank before protect. The
// lowest priority goes first; among equals, the policy's choice (PRIORITY: the most wanted gone;
// ties, and LRU: the least recently used). Each candidate's resources are asked once per
// search: a later try goes by the earlier answers (a victim that moves nothing is skipped then).
std::optional<RequestId> Conductor::ChooseVictim(int node, RequestId protect,
                                                 const std::set<std::string>* only,
                                                 VictimSearch* search) {
  if (!engine_.Evictable(node, only)) return std::nullopt;
  struct Candidate {
    RequestId id;
    int32_t priority;
    uint64_t last_step;
    double want = 0;
  };
  while (true) {
    std::vector<Candidate> candidates;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::optional<int32_t> ceiling = Ceiling(protect);
      if (!ceiling) return std::nullopt;  // the request to make room for is gone
      const Request& protected_request = *Find(protect);
      for (const auto& [id, request] : requests_) {
        const Request& r = *request;
        // Room made or held for a request that ranks before protect stays its own until it ran
        // a step: offloaded for a later one, it would wait behind it (two such thrash).
        const bool keeps_room = beneficiaries_.count(id) != 0 && RanksBefore(r, protected_request);
        if (id != protect && r.priority <= *ceiling && search->tried.count(id) == 0 &&
            !keeps_room && MayEvict(r))
          candidates.push_back({id, r.priority, r.last_step});
      }
    }
    if (candidates.empty()) return std::nullopt;
    // offloaded_nodes is a hint (a reload may have happened since): ask what each holds.
    std::erase_if(candidates, [&](Candidate& c) {
      auto [answer, unasked] = search->asked.try_emplace(c.id);
      if (unasked) {
        answer->second.reclaimable = engine_.Reclaimable(node, c.id, only);
        if (answer->second.reclaimable != 0 && options_.eviction == EvictionPolicy::kPriority)
          answer->second.want = engine_.OffloadPriority(node, c.id, only);
      }
      c.want = answer->second.want;
      return answer->second.reclaimable == 0;
    });
    auto first = [](const Candidate& a, const Candidate& b) {
      if (a.priority != b.priority) return a.priority < b.priority;
      if (a.want != b.want) return a.want > b.want;
      return a.last_step < b.last_step;
    };
    auto best = std::min_element(candidates.begin(), candidates.end(), first);
    if (best == candidates.end()) return std::nullopt;
    std::lock_guard<std::mutex> lock(mu_);
    Request* r = Find(best->id);
    search->tried.insert(best->id);
    std::optional<int32_t> ceiling = Ceiling(protect);
    if (!ceiling) return std::nullopt;
    // It may have moved on (or ended, its id taken again) while the lock was released.
    if (r != nullptr && r->priority <= *ceiling && MayEvict(*r)) {
      r->evicting = true;
      return best->id;
    }
  }
}

bool Conductor::WaitsForBeneficiary(const Request& r) {
  // Not among the beneficiaries any more: the request it made room for has run a step or ended,
  // and a request under that id now (started again from its prompt, or a new one of the same
  // id) is not the one it waits for; its steps would not wake the victim.
  if (r.evicted_for == 0 || beneficiaries_.count(r.evicted_for) == 0) return false;
  const Request* beneficiary = Find(r.evicted_for);
  return beneficiary != nullptr && beneficiary->active() &&
         StepsRun(*beneficiary) == r.evicted_for_steps;
}

void Conductor::WakeCapacityWaiters() {
  for (auto& [key, entry] : capacity_waiters_) scheduler_.Push(key, entry);
  capacity_waiters_.clear();
  NoteWork();
}

// Nothing runs, nothing is queued, and requests wait for capacity that nothing will free (every
// eviction failed, or nothing is evictable). One waiter fails with the reason: the lowest
// priority, newest of them, so what it held goes back to the others, which are woken to retry
// once its removal is delivered. Repeats, one request at a time, while the deadlock lasts. A
// victim waiting for the request it made room for, or a newcomer held back behind the request
// holding the room, fails only when every waiter is such.
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
  // The request holding the room waits for something else now (the step it was short for was
  // abandoned by a stop, say): the newcomers held behind it try again instead of failing.
  if (room_hold_.request != 0 &&
      std::none_of(capacity_waiters_.begin(), capacity_waiters_.end(), [&](const auto& waiter) {
        return waiter.second.request == room_hold_.request;
      })) {
    room_hold_ = {};
    WakeCapacityWaiters();
    return;
  }
  // A request offloaded for another that has not run since waits for that one, not for
  // capacity: failing it would free only tier space. It fails only when every waiter is such.
  Request* victim = nullptr;
  int victim_node = -1;
  bool victim_waits_for_another = true;
  for (auto& [key, entry] : capacity_waiters_) {
    Request* r = Find(entry.request);
    if (r == nullptr || !r->active()) continue;
    const bool waits_for_another = WaitsForBeneficiary(*r) || HeldBack(*r, key.node);
    if (victim == nullptr || (victim_waits_for_another && !waits_for_another) ||
        (waits_for_another == victim_waits_for_another && RanksBefore(*victim, *r))) {
      victim = r;
      victim_node = key.node;
      victim_waits_for_another = waits_for_another;
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

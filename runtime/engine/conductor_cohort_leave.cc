// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Leaving a cohort (cohort.h): a member whose loop ended (a stop, its limit, its output limit) or
// whose request ended leaves and its walk moves on as if the loop had run step by step; a member
// whose step a resource could not admit yet is handed to the per-request path, its walk resumed
// where the cohort left it. All under the conductor's lock.
#include "engine/conductor.h"
#include "engine/conductor_pending.h"
#include "plugin/columnar.h"

namespace mstar {

void Conductor::LeaveCohort(Request& r, PartitionRun& p, Pending& pending) {
  Cohort& cohort = *p.cohort;
  StepTicket ticket;
  if (DropMember(p, &ticket, nullptr)) SettleLeaver(r, p, cohort, ticket, pending);
}

bool Conductor::DropMember(PartitionRun& p, StepTicket* ticket, TensorMapPtr* joined) {
  Cohort& cohort = *p.cohort;
  const size_t index = p.member->index;
  std::unique_ptr<CohortMember> gone = std::move(cohort.members[index]);
  if (index + 1 != cohort.members.size()) {
    cohort.members[index] = std::move(cohort.members.back());
    cohort.members[index]->index = index;
  }
  cohort.members.pop_back();
  if (cohort.members.empty()) {  // no step will read the last outputs: they go now
    cohort.last.reset();
    cohort.last_count = 0;
  }
  p.cohort = nullptr;
  p.member = nullptr;
  p.cohort_serial = 0;
  // The membership's counters go to its request; rows formed for it now count there.
  Request& r = *gone->req;
  r.in_flight += gone->in_flight;
  if (gone->steps != 0) {
    r.steps += gone->steps;
    r.last_step = ++step_clock_;
  }
  gone->stale_rows += gone->in_flight;  // its rows in flight now belong to no membership
  gone->serial = 0;                     // (JoinCohort resets the rest when the record is reused)
  // The record goes back first, so the walk the leaver moves on to can join with it. One that
  // rows in flight still name (of this membership or an earlier one) is kept whatever the spare
  // list's size.
  const bool dispatched = gone->dispatched;
  *ticket = gone->ticket;
  if (joined != nullptr) *joined = std::move(gone->joined);
  gone->joined.reset();
  if (spare_members_.size() < kSpareMembers || gone->stale_rows != 0)
    spare_members_.push_back(std::move(gone));
  return dispatched;
}

void Conductor::HandOff(Request& r, PartitionRun& p, const ColumnarBatch& c, size_t k,
                        Pending& pending) {
  const Cohort& cohort = *p.cohort;
  const uint32_t confirmed = p.member->confirmed;
  StepTicket ticket;
  TensorMapPtr joined;
  const bool dispatched = DropMember(p, &ticket, &joined);
  p.per_request = true;
  ++stats_.cohort_handoffs;
  if (!dispatched || p.run == nullptr) return;
  WalkRun& run = *p.run;
  --p.steps_pending;
  ready_scratch_.clear();
  if (confirmed == 0) {
    // Its first step did not run: the step's inputs go back to the walk, as a dispatch taken back.
    if (joined == nullptr) joined = NewTensorMap();  // (kept by SettleExecRow: not expected)
    ready_scratch_ = run.Undispatch(ticket, joined.get());
  } else {
    // The loop ran `confirmed` iterations: the walk continues from the last one's outputs, which
    // the deferred step took as its inputs.
    Status fed = FeedDeferredRow(run, cohort, c, k, ticket.seq);
    if (!fed.ok()) {
      run.Complete(ticket);
      return Fail(r, "leaving its cohort: " + fed.message(), pending);
    }
    run.SetIteration(cohort.loop_section, confirmed - 1);
    run.Complete(ticket, &ready_scratch_);
    run.Confirm(ticket);
  }
  Enqueue(r, p, ready_scratch_);
  AfterWalkProgress(r, p, pending);
}

Status Conductor::FeedDeferredRow(WalkRun& run, const Cohort& cohort, const ColumnarBatch& c,
                                  size_t k, uint64_t producer) {
  const auto row = static_cast<uint32_t>(k);
  for (const CohortFeed& feed : cohort.feeds) {
    const mstar_tensor_map::Entry* e = c.inputs->Find(feed.port);
    if (e == nullptr || e->tensors.size() != 1)
      return Internal("the step's input '" + feed.port + "' is missing");
    const RowOffsets offsets(*c.input_rows, feed.port, 0);
    MSTAR_ASSIGN_OR_RETURN(mstar_tensor_t * value, ShareTensor(e->tensors[0]));
    NarrowToRows(value, offsets.begin(row), offsets.count(row));
    run.Feed(cohort.walk_node, feed.port_index, value, producer);
  }
  return Status::Ok();
}

void Conductor::SettleLeaver(Request& r, PartitionRun& p, const Cohort& cohort,
                             const StepTicket& ticket, Pending& pending) {
  if (p.run == nullptr) return;
  WalkRun& run = *p.run;
  --p.steps_pending;
  if (!r.active()) {
    run.Complete(ticket);  // withdrawn by Abort: this only settles it
    return;
  }
  // The loop ran the member's confirmed iterations; it ends here, as a stop after them would.
  ready_scratch_.clear();
  run.Complete(ticket, &ready_scratch_);
  Enqueue(r, p, ready_scratch_);
  if (cohort.loop_section >= 0) Enqueue(r, p, run.StopLoop(cohort.loop_section, ticket));
  run.Confirm(ticket);
  AfterWalkProgress(r, p, pending);
}

}  // namespace mstar

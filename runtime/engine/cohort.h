// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Cohort: the requests of one decode loop (or of one single-step walk, such as a prefill) kept
// together as the rows of one batch.
//
// A walk whose program is a single loop around a single node, whose node edges feed only that
// node, and whose node runs columnar steps (Engine::RunsColumnar), is the shape of every decode
// loop. A walk whose program is a single node outside any loop, with no node edges, is the shape
// of a prefill (or of a consumer partition's chunk step). A request reaching either joins a
// cohort of its (node, walk) instead of the ready queues. Each step of the cohort is one columnar
// step over its members: its inputs are the rows of the previous step's outputs (or, for a
// member's first step, what its walk gave it), its loop counters are per member, and its stop
// check is one call. A member leaves when its stop check, its loop limit or its output limit ends
// the loop (the walk then moves on as if its loop had run step by step), after its one step in a
// walk without a loop, or when its request fails or is cancelled.
//
// As on the per-request path, a step runs ahead of the previous step's stop check (at most one
// step does), and what it ran for a member that the check ended is discarded.
//
// Guarded by the conductor's lock.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/columnar_batch.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "engine/walk_run.h"
#include "plugin/columnar.h"

namespace mstar {

// One request's membership of a cohort. While it lasts, the membership keeps the request's
// per-step counters (steps in flight, steps run) so that a step's pass over its rows touches the
// member and not the request; they are added to the request when the membership ends
// (Conductor::DropMember). A member record is never freed while a step formed for any of its
// memberships is in flight (stale_rows): rows name it, and tell a later membership of the same
// record by its serial.
struct alignas(64) CohortMember {
  // Read or written per row and step (the first cache line); then the info copied into each
  // step; the ticket last.
  uint64_t serial = 0;  // its membership (PartitionRun::cohort_serial while it lasts);
                        // 0 once it ended
  Request* req = nullptr;
  TensorMapPtr joined;     // the node inputs of its first step, until that step runs
  uint64_t steps = 0;      // steps run (not yet added to the request's)
  uint32_t in_flight = 0;  // steps formed and not yet through the finish (likewise)
  int32_t src = -1;        // its row in the cohort's last outputs, once a step ran
  uint32_t formed = 0;     // steps formed (the next one's loop iteration)
  uint32_t confirmed = 0;  // steps whose stop check was applied
  uint32_t limit = 0;      // the loop's iteration limit for this request
  int partition = -1;
  bool dispatched = false;      // the walk's step was taken (ticket, joined)
  bool blocked = false;         // its last step failed: nothing more until that step is finished
  bool ending = false;          // its output limit was reached (PartitionRun::ending)
  size_t index = 0;             // in its cohort's members
  mstar_request_info_t info{};  // the request's info for this walk (loops set per step)
  StepTicket ticket;            // the walk's step this membership runs the loop of
  // Rows of earlier memberships of this record still in flight (they name the record and find
  // their membership ended by its serial): the record is not freed while any is. Kept when the
  // record is reused (JoinCohort); counted by DropMember, settled by CohortAfterFinish.
  uint32_t stale_rows = 0;
};

// The steps r has run, its live memberships' included.
uint64_t StepsRun(const Request& r);

// A node input and the node's own output that feeds it from the previous step (its loop's edge);
// from_output is empty in a walk without a loop, whose inputs all come from the walk.
struct CohortFeed {
  std::string port;
  std::string from_output;
  int port_index = -1;  // in the node's ports
};

// An edge of a cohort's node that leaves it (a stream or an emit), with the step's output it
// carries, found once per step rather than once per row.
struct CohortEdgeRows {
  const EdgeSpec* spec = nullptr;
  const mstar_tensor_t* tensor = nullptr;  // null: the step produced no such output
  RowOffsets rows;
  size_t emit_list = 0;  // an emit with a tensor: its row list in the step's Pending::rows
};

struct Cohort {
  QueueKey key;  // node and walk (capture key 0: columnar nodes have no captures)
  int walk_node = -1;
  int loop_section = -1;  // -1: a single-step walk (each member runs one step)
  std::string loop_name;
  std::vector<CohortFeed> feeds;
  uint32_t cap = 0;  // most members (the node's batch cap)
  std::vector<std::unique_ptr<CohortMember>> members;
  // Of the last step that ran, the outputs its next step reads (the feeds', KeepFeeds).
  std::shared_ptr<ColumnarOutputs> last;
  uint32_t last_count = 0;  // the requests that step's outputs hold rows for
  // A step formed and not yet through AfterExec, or, when its finish follows on the executor
  // (which then takes the exec's results with it, in one lock pass), not yet through the finish.
  bool executing = false;
  uint32_t unchecked = 0;  // steps through AfterExec and not yet through the finish

  // Whether the member has a step to run now: not blocked and below its limit. (Its request is
  // never being evicted: cohort members are not eviction victims, conductor_pressure.cc.)
  static bool Formable(const CohortMember& m) { return !m.blocked && m.formed < m.limit; }

  // Whether a step can be formed now: none executing, at most one unchecked, and a
  // member that has a step to run.
  bool Ready() const {
    if (executing || unchecked >= 2) return false;
    for (const auto& m : members) {
      if (Formable(*m)) return true;
    }
    return false;
  }
};

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Recomputation: a request whose offloaded state a resource lost (its reload said
// MSTAR_ERR_DATA_LOSS: a tier dropped or corrupted the blocks) is not failed but started again
// from its prompt, on the same client stream, at most ConductorOptions::max_recomputes times.
// Its old attempt ends as a failing request does (its walks withdrawn, its steps in flight
// dropped), the engine removes what its resources and submodules hold of it, and a fresh request
// is made from the client's submission. What the client was sent already is held back when it
// comes again, and compared (chunk_replay.h): a model that does not reproduce it fails the
// request, since the client would otherwise hold two different histories.
#include "core/logging.h"
#include "engine/conductor.h"
#include "engine/conductor_pending.h"

namespace mstar {

void Conductor::FailStep(Request& r, const ExecutingBatch& batch, const StepRequest& step,
                         Pending& pending) {
  std::string error = "node '" + batch.node_name + "' in walk '" + batch.walk + "': " + step.error;
  if (!step.lost_state) return Fail(r, error, pending);
  if (!recomputable_)
    return Fail(r, error + " (not recomputed: " + not_recomputable_ + ")", pending);
  if (r.recomputes >= options_.max_recomputes) {
    error += " (recomputed ";
    error += std::to_string(r.recomputes);
    error += r.recomputes == 1 ? " time already)" : " times already)";
    return Fail(r, error, pending);
  }
  Log().warn("request {}: {}; it starts again from its prompt", r.id, error);
  Fail(r, error, pending, RequestState::kRecomputing);
}

void Conductor::StartOver(Request& r, Pending& pending) {
  auto again = std::make_unique<Pending::Finish::Again>();
  again->spec.prompt = std::move(r.prompt);
  again->spec.params = r.params;
  again->spec.priority = r.priority;
  again->spec.tenant = r.tenant;
  again->spec.id = r.id;
  again->spec.stream = r.stream;
  again->order = r.order;
  again->reason = r.error;
  // What the request ends with should it not start again (Carry, StartAgain).
  RequestResult so_far = r.Counts();
  so_far.end = RequestEnd::kFailed;
  so_far.error = r.error;
  r.state = RequestState::kFinished;
  Unpark(r);
  recomputing_[r.id] = false;  // from now on a cancel reaches StartAgain
  pending.finishes.push_back({r.id, r.stream, std::move(so_far), std::move(again)});
}

void Conductor::StartAgain(PendingFinish& finish) {
  Pending::Finish::Again& again = *finish.again;
  RequestResult& ended = finish.result;
  finish.stream->Replay();  // before the new attempt can push anything
  bool ends_now;            // cancelled, or the engine stopping, before the new attempt was made
  {
    std::lock_guard<std::mutex> lock(mu_);
    ends_now = stopping_ || recomputing_[finish.id];
  }
  auto made = std::make_unique<Request>();
  made->id = finish.id;
  const Status filled = ends_now ? Status::Ok() : FillRequest(again.spec, *made);
  const bool added = !ends_now && filled.ok();  // the engine holds the new attempt
  Pending pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reserved_ids_.erase(finish.id);
    const bool cancelled = recomputing_[finish.id];
    recomputing_.erase(finish.id);
    if (!filled.ok()) {
      ended.error =
          again.reason + "; starting it again from its prompt failed: " + filled.message();
      ++stats_.requests_failed;
    } else if (stopping_ || cancelled) {
      if (added) leaving_ids_.insert(finish.id);  // until the engine has removed it again
      ended.end = RequestEnd::kCancelled;
      ended.error = cancelled ? "cancelled by the client" : "the engine is shutting down";
      ++stats_.requests_cancelled;
    } else {
      made->recomputes = ended.recomputes + 1;
      made->steps = ended.steps;
      made->wasted_steps = ended.wasted_steps;
      ++stats_.recomputes;
      Insert(std::move(made), pending, again.order);
      Post(pending);  // carried by the delivery under way (this thread's)
      return;
    }
  }
  if (added) {
    engine_.RemoveRequest(finish.id);
    std::lock_guard<std::mutex> lock(mu_);
    leaving_ids_.erase(finish.id);
  }
  Log().warn("request {}: {}", finish.id, ended.error);
  finish.stream->Finish(std::move(ended));
}

}  // namespace mstar

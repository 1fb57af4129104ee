// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Conductor: runs each request's walks. It turns prompts into request values, starts each
// partition's walk, queues nodes as their inputs arrive, forms batches from the scheduler's
// queues, and after each step routes the outputs along the walk's edges: to other nodes' inputs
// (on the execution thread, so the next step can start at once), and, once the stop check has
// spoken, to persisted values, to streams feeding other partitions, and to the client. It moves
// partitions between walks by their transitions (or the model's controller), starts consumer
// partitions as chunks become ready, enforces the output-token limit, handles memory pressure by
// evicting a victim chosen by the eviction policy, and fails or cancels one request without
// touching the others.
//
// Threading: one mutex guards all of it. Plugin calls (prepare, forward, stop checks, offload,
// encoding) run outside it, except the controller's walk choices and capture keys.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/cohort.h"
#include "engine/engine.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "model/request_limits.h"

namespace mstar {

enum class EvictionPolicy { kLru, kPriority };

struct ConductorOptions {
  EvictionPolicy eviction = EvictionPolicy::kLru;
  uint32_t max_batch = 0;  // an overall cap on batch size; 0 for none
  // Decode loops of columnar nodes run as cohorts (cohort.h); false runs every step per request.
  bool cohorts = true;
  // A request fails when one of its partitions finishes this many walks in a row while the
  // request emits no counted output token and the partition takes no stream chunk: its
  // transitions (or the model controller's next_walk) would otherwise keep it running forever.
  // Since counted tokens stop at the request's limit, every request ends.
  uint32_t max_idle_walks = 1024;
  // A request whose offloaded state a resource lost (its reload said MSTAR_ERR_DATA_LOSS) starts
  // again from its prompt, at most this many times; what it sent its client is not sent again
  // (chunk_replay.h). 0: it fails instead.
  uint32_t max_recomputes = 2;
};

struct SubmitSpec {
  std::string prompt;
  std::shared_ptr<const ConfigTree> params;  // null: none
  int32_t priority = 0;
  // Who the request is for (any bytes; empty: no one in particular): resources keep the shared
  // state of different tenants apart (kv_paged's prefix cache shares pages only within one).
  std::string tenant;
  // The request's id, 1 or more: the stream's when a stream is given (a different one is
  // refused), else assigned when absent.
  std::optional<RequestId> id;
  // Created when absent; one given to a request before is refused.
  std::shared_ptr<RequestStream> stream;
};

// Where each step of a batch came from, and what the finisher must do with it.
struct StepOrigin {
  RequestId request = 0;
  // The request itself: valid from FormBatch until the step is settled (AfterExec taking it back,
  // or AfterFinish), since a request with a step in flight is never removed from the table.
  Request* req = nullptr;
  int partition = -1;
  uint64_t generation = 0;
  StepTicket ticket;
  bool dropped = false;  // its iteration was abandoned: outputs discarded
  bool counted = false;  // it went through AfterExec and awaits AfterFinish
};

struct BatchWork {
  ExecutingBatch batch;
  std::vector<StepOrigin> origins;  // parallel to batch.requests
  uint64_t sequence = 0;
  QueueKey key;           // the ready queue it came from (busy until AfterExec)
  bool planned = false;   // the plan stage is done (the pipeline's)
  bool finished = false;  // through AfterFinish: only Recycle is left
};

// The batches one node ran: each counts the requests that went to its forward (not those declined
// by prepare_inputs or taken back for capacity); a batch where none did is not counted.
struct NodeBatchStats {
  uint64_t batches = 0;
  uint64_t request_steps = 0;  // wasted (speculative) steps included: they ran
  uint32_t largest = 0;
  double mean() const {
    return batches == 0 ? 0 : static_cast<double>(request_steps) / static_cast<double>(batches);
  }
};

struct ConductorStats {
  uint64_t batches = 0;          // batches formed (every node)
  uint64_t cohort_batches = 0;   // of them, cohorts' columnar steps (cohort.h)
  uint64_t idle_launches = 0;    // of them, formed by a submission for the idle executor
  uint64_t cohort_handoffs = 0;  // cohort members moved to the per-request path (not admitted)
  uint64_t scheduler_wakes = 0;  // times a submission or a finished step woke the scheduler thread
  uint64_t steps = 0;            // request-steps executed (wasted_steps of them included)
  uint64_t wasted_steps = 0;     // of those, steps whose outputs were dropped: run ahead of a
                                 // stop, or of a request that was cancelled or failed meanwhile
  uint64_t evictions = 0;
  uint64_t capacity_waits = 0;  // request-steps per request taken back: a resource was full
  uint64_t requests_done = 0;
  uint64_t requests_failed = 0;
  uint64_t requests_cancelled = 0;
  uint64_t recomputes = 0;  // requests started again from their prompts (state lost)
  std::map<std::string, uint32_t> largest_batch;  // per node: the most requests one step held
  std::map<std::string, NodeBatchStats> nodes;    // per node: the batches that ran
};

// Where a client's call may launch the first batch of the work it brings: the pipeline's
// executor, while that waits with no batch on its way, or while it finishes the last batch in
// flight (it comes back for the next one after). The client forms the batch (under the
// conductor's lock) and hands it over, so an idle engine starts a request by waking one thread,
// or none, instead of the scheduler and then the executor. Thread-safe.
class IdleLauncher {
 public:
  virtual ~IdleLauncher() = default;
  // Under the conductor's lock, before Stop: true when the executor is idle (waiting, or with
  // nothing_in_flight: no batch formed and not yet done, so none it could run before this one),
  // and is then reserved for this caller, who must either Launch one batch or Unclaim.
  virtual bool Claim(bool nothing_in_flight) = 0;
  // Without the conductor's lock: the claimed executor runs work (not planned yet).
  virtual void Launch(std::unique_ptr<BatchWork> work) = 0;
  // Under the conductor's lock: nothing to launch after all; the reservation ends.
  virtual void Unclaim() = 0;
};

class Conductor {
 public:
  Conductor(Engine& engine, ConductorOptions options);
  ~Conductor();

  // Clients, any thread.
  Result<std::shared_ptr<RequestStream>> Submit(SubmitSpec spec);
  // Submits several requests at once: they become schedulable together, so the first step can
  // batch them all. One result per spec, in order; a spec that fails does not affect the others.
  std::vector<Result<std::shared_ptr<RequestStream>>> SubmitAll(std::vector<SubmitSpec> specs);
  // Cancels a request; false when it is unknown or finished already.
  bool Cancel(RequestId id);
  // Requests not finished yet.
  size_t active_requests() const;
  ConductorStats stats() const;
  // Blocks until every submitted request has finished.
  void WaitIdle();

  // The pipeline. SetIdleLauncher: where submissions launch the batch they form (null: none;
  // the scheduler thread forms every batch not formed by the executor or finisher).
  void SetIdleLauncher(IdleLauncher* launcher);
  // NextBatch blocks until a batch is ready or Stop; false after Stop.
  bool NextBatch(BatchWork* work);
  // After the batch's exec and postprocess (execution thread). With next, also forms the next
  // batch into it when one is ready at once and the batch limit allows (as NextBatch would, without
  // waiting): returns whether it did; the caller then plans and runs it. finish_follows: the
  // caller calls AfterFinish for work next, which wakes the scheduler when it must (and takes a
  // cohort step's exec results itself: AfterExec then does nothing for it).
  bool AfterExec(BatchWork& work, BatchWork* next = nullptr, bool finish_follows = false);
  // After the batch's stop checks (finisher thread). Emits to clients and finishes requests.
  // With next, forms the next batch into it as AfterExec does. The caller then hands work to
  // Recycle (on any thread).
  bool AfterFinish(BatchWork& work, BatchWork* next = nullptr);
  // Takes a finished batch's work.batch.requests and work.origins back for reuse by a later batch
  // (both are left empty), releasing their tensors. Any thread; not under the conductor's lock.
  void Recycle(BatchWork& work);
  void Stop();
  // After the pipeline has stopped: ends every request still running as cancelled with reason.
  void CancelAll(const std::string& reason);

 private:
  struct Pending;        // client-side work collected under the lock, done after it
  struct PendingEmit;    // Pending::Emit
  struct PendingRows;    // Pending::Rows
  struct PendingFinish;  // Pending::Finish
  // Under mu_: assigns spec's request id and reserves it, making *made (left null on failure).
  Status Reserve(const SubmitSpec& spec, std::unique_ptr<Request>* made);
  // Whether the request parameters that bound a request (max_tokens, loops' max_iterations_param)
  // are in the ranges of the manifest's own bounds (so none wraps around when narrowed).
  // Without mu_: encodes the prompt and adds the request to the engine.
  Status FillRequest(SubmitSpec& spec, Request& r);
  // Adds a made request to the table and starts its partitions (under mu_).
  // A request started again keeps its place in line (order, when given).
  void Insert(std::unique_ptr<Request> request, Pending& pending,
              std::optional<uint64_t> order = std::nullopt);
  void StartPartition(Request& r, PartitionRun& p, Pending& pending);
  // Starts walk (by name: a walk not of p's partition fails the request; by index: one that is).
  void StartWalk(Request& r, PartitionRun& p, const std::string& walk, Pending& pending);
  // The index of walk when it is one of p's walks, else -1.
  int WalkOf(const PartitionRun& p, const std::string& walk) const;
  void StartWalk(Request& r, PartitionRun& p, int walk_index, Pending& pending);
  // Under mu_: a run for the walk with the given loop limits, restarted from the spare runs when
  // one is there.
  std::unique_ptr<WalkRun> NewRun(int walk_index, const std::vector<uint32_t>& limits);
  // Under mu_: p's run is over; it goes to the spare runs, holding no values, when nothing of it
  // is in flight (else it is freed). p.run is null after.
  void RetireRun(PartitionRun& p);
  Status FeedInitialInputs(Request& r, PartitionRun& p);
  void Enqueue(Request& r, PartitionRun& p, const std::vector<int>& nodes);
  // Under mu_: Engine::SplitsByCaptureKey for the queue's (node, walk), asked once.
  bool SplitsByCaptureKey(const QueueKey& key);
  // Under mu_: r's capture key at global node for p's walk, asked of the plugin once per walk
  // and node (PartitionRun::capture_keys).
  uint64_t CaptureKeyFor(Request& r, PartitionRun& p, int node);
  void AfterWalkProgress(Request& r, PartitionRun& p, Pending& pending);
  void CompileTransitions();
  // The walk after p's current one, or kDoneWalk; nullopt when the controller failed (*error).
  std::optional<std::string> NextWalk(Request& r, PartitionRun& p, std::string* error);
  void PartitionDone(Request& r, PartitionRun& p, Pending& pending);
  // Counts a walk p finished before it moves on to next (a walk index, or kNextByName with
  // next_name); false, once the request has failed, when p has run options_.max_idle_walks walks
  // in a row without progress (ConductorOptions).
  bool CountWalk(Request& r, PartitionRun& p, int next, const std::string& next_name,
                 Pending& pending);
  void FeedConsumers(Request& r, Pending& pending);
  // Ends the request (failed, or cancelled with state kCancelling): its walks are withdrawn and it
  // finishes once nothing of it is in flight.
  [[gnu::cold]] void Fail(Request& r, const std::string& error, Pending& pending,
                          RequestState state = RequestState::kFailing);
  // Under mu_, for a step that failed (its error said): ends the request as Fail does, or, when
  // the step failed because a resource lost the request's offloaded state and the request may be
  // recomputed, ends it to start again from its prompt (conductor_recompute.cc).
  [[gnu::cold]] void FailStep(Request& r, const ExecutingBatch& batch, const StepRequest& step,
                              Pending& pending);
  // Without mu_, on the delivering thread, once the engine holds nothing of the request: starts
  // the request of finish again from its prompt (Pending::Finish::again), on the same stream.
  [[gnu::cold]] void StartAgain(PendingFinish& finish);
  // Why requests may not be recomputed, or "" when they may (at construction).
  std::string NotRecomputable();
  // MaybeFinalize's end for a request being recomputed: it leaves the table, to start again.
  [[gnu::cold]] void StartOver(Request& r, Pending& pending);
  void MaybeFinalize(Request& r, Pending& pending);
  // Drops r's parked steps.
  void Unpark(Request& r);
  // Why the step's outputs lack one that the node edges of its node need ("" when none is
  // missing).
  std::string MissingNodeOutput(const PartitionRun& p, const StepOrigin& origin,
                                const StepRequest& step) const;
  // Feeds the step's outputs along its node's node edges (none missing: MissingNodeOutput).
  // An error (no value fed) when a value's reference cannot be made.
  Status RouteNodeEdges(Request& r, PartitionRun& p, const StepOrigin& origin, StepRequest& step);
  void RouteFinishedStep(Request& r, PartitionRun& p, const StepOrigin& origin, StepRequest& step,
                         Pending& pending);
  void ApplyStops(Request& r, PartitionRun& p, const StepOrigin& origin, uint64_t mask);
  void Evict(const BatchWork& work);
  // Under mu_: the request of work's batch that room is made for when the batch left requests
  // short of capacity: the highest priority, the longest-waiting among equals (never a victim,
  // so it eventually runs). Null when none is short of capacity any more.
  const StepRequest* FirstShort(const BatchWork& work);
  // Under mu_: work's batch left requests short of capacity: the first of them (FirstShort) holds
  // the room at the batch's node, unless a request that ranks higher holds it.
  void HoldRoom(const BatchWork& work);
  // Under mu_: whether r's step at node waits behind the request holding the room there (see
  // room_hold_); ends a hold that is over.
  bool HeldBack(const Request& r, int node);
  // Under mu_: the request holding the room, or null when none does (a hold that is over ends).
  const Request* Holder();
  // Records that victim's state at node was offloaded to make room for protect (0: none); the
  // victim is not reloaded before protect has run a step. mu_ held.
  void MarkOffloaded(Request& victim, int node, RequestId protect);
  // One eviction's search for a victim: the candidates tried, and what each one's resources
  // answered when asked (once per search: they are plugin calls, and a search may try many).
  struct VictimSearch {
    struct Answer {
      uint64_t reclaimable = 0;
      double want = 0;  // offload_priority (PRIORITY eviction only)
    };
    std::set<RequestId> tried;
    std::map<RequestId, Answer> asked;
  };
  // Without mu_: the best victim not yet tried in *search (it is added) for protect's capacity at
  // node, in the resources labelled in only (all when null), marked evicting; nullopt when none
  // is left.
  std::optional<RequestId> ChooseVictim(int node, RequestId protect,
                                        const std::set<std::string>* only, VictimSearch* search);
  bool MayEvict(const Request& r) const;
  std::optional<int32_t> Ceiling(RequestId protect);
  void WakeCapacityWaiters();
  // Under mu_: whether r, offloaded to make room for another request, waits for that request's
  // next step (it has not run one since, and is still active).
  bool WaitsForBeneficiary(const Request& r);
  // Under mu_: the steps of the requests Evict was offloading when they were popped, back into
  // the ready queues once it is done with them (offloaded or not).
  void RequeueEvictionParked();
  // Under mu_: wakes the capacity waiters when a row of c that ran is a request victims were
  // evicted for (they wait for its next step).
  void WakeForBeneficiaries(const ColumnarBatch& c);
  // Whether a popped entry can run now, per request; an entry of a request being evicted waits
  // for Evict, one of a victim for the request it made room for, one of a newcomer held back
  // for the request holding the room (HeldBack); a held-back newcomer at a node that runs as a
  // cohort joins the cohort here once it may run (false: the cohort runs it).
  bool Valid(const QueueKey& key, const ReadyEntry& entry);
  // Whether r's state at node was offloaded (a hint: a reload may have happened since).
  static bool OffloadedAt(const Request& r, int node);
  // The info every step of r's walk in p carries (the per-request path's and a cohort member's):
  // r's, with the walk, partition, parameters and the final-chunk flag of the chunk that started
  // the walk. FillStep adds the step's loops.
  static mstar_request_info_t WalkInfo(const Request& r, const PartitionRun& p);
  void FillStep(Request& r, PartitionRun& p, const StepTicket& ticket, StepRequest& step);
  // Under mu_: drops pending's finished requests from the table and queues its client work in
  // the outbox, in decision order. pending is left empty. Returns whether anything was queued
  // (only then must the caller Deliver).
  bool Post(Pending& pending);
  // Without mu_: carries out the outbox in order, one thread at a time (a caller that finds
  // another thread delivering returns at once; that thread carries out its work too), so a
  // request's outputs reach its stream before its end does, whichever thread decided them.
  void Deliver();
  // Carries out one Pending; returns whether it finished any request. Only the delivering thread
  // (Deliver) calls it: it writes carry_chunk_. Takes mu_ briefly, once the finished requests are
  // removed from the engine, to free their ids (leaving_ids_) before their streams end.
  bool Carry(Pending& pending);
  // Carry's parts: a cohort step's rows, the per-request emits, and a finished request's end
  // (made a failure when its output could not be encoded or sent, or was not sent again in full).
  void CarryRows(Pending& pending);
  void CarryEmits(Pending& pending);
  void SettleEnd(PendingFinish& finish);
  // Without mu_, on the delivering thread: output of request id could not be encoded, or sent
  // (the client's callback threw; recomputed, it differs from what was sent). Its later outputs are dropped and it ends failed
  // with error (failed now when it is still running).
  void FailOutput(RequestId id, std::string error);
  // FailOutput for a stream whose Push refused a chunk (its callback threw, or a recomputed
  // chunk differs from the one sent).
  [[gnu::cold]] void FailPushed(RequestId id, const RequestStream& stream);
  void CheckProgress(Pending& pending);
  Request* Find(RequestId id);
  // Under mu_: the scheduler thread has new work. The caller wakes it (WakeScheduler) after
  // releasing mu_, once per call however many entries were pushed.
  void NoteWork() { wake_scheduler_ = true; }
  // Without mu_ (lock released): wakes the scheduler when NoteWork was called under the lock.
  void WakeScheduler(std::unique_lock<std::mutex>& lock);
  // Under mu_, for a client that made work ready: a batch of it formed for the idle executor
  // (launcher_), or null when the executor is busy or nothing could be formed.
  std::unique_ptr<BatchWork> FormForIdleExecutor(Pending& pending);
  // mu_, for the clients' calls (submit, cancel): counted while waiting (see FormNext).
  std::unique_lock<std::mutex> LockForClient();
  // Step records of finished batches, kept so NextBatch reuses their buffers.
  struct Spare {
    std::vector<StepRequest> requests;
    std::vector<StepOrigin> origins;
  };
  Spare TakeSpare();
  // For a caller that may form a next batch (next not null): spare records, made fresh; else none.
  Spare SpareFor(const BatchWork* next);
  // The end of AfterFinish, under mu_ (released here): posts the client work, counts the batch
  // out, forms the next batch into next when one is ready, wakes the scheduler, delivers.
  // Returns whether it formed one.
  bool BatchDone(BatchWork* next, Spare& spare, Pending& pending,
                 std::unique_lock<std::mutex>& lock);
  // Under mu_: gives *list an emptied list of the kind spares keeps (spare_emits_ or spare_rows_,
  // filled by Deliver), when there is one.
  template <typename T>
  static void Reuse(std::vector<std::vector<T>>& spares, std::vector<T>* list) {
    if (spares.empty()) return;
    *list = std::move(spares.back());
    spares.pop_back();
  }
  void GiveBackSpare(Spare spare);
  // Under mu_: pops the next batch from the ready queues into work, with step records from spare.
  // False when nothing popped could run (invalid, failed at dispatch, or waiting for capacity);
  // pending may then hold client work to post either way.
  bool FormBatch(BatchWork* work, Spare& spare, Pending& pending);
  // Under mu_: for the thread that finished a step and runs or plans the next one itself; forms
  // a batch into next (when given) if one is ready now and the batch limit allows.
  bool FormNext(BatchWork* next, Spare& spare, Pending& pending);
  // Under mu_: whether the scheduler thread could form a batch now (something ready, below the
  // batch limit): what its wait in NextBatch waits for, besides Stop.
  bool SchedulerHasWork() const;
  // Under mu_: whether a thread other than the scheduler's may form a batch now (not stopping,
  // something ready, below the batch limit, the scheduler not already called to it).
  bool MayFormNow() const;
  // Under mu_: FormBatch, and the scheduler thread is not woken when nothing is left for it.
  bool FormNow(BatchWork* work, Spare& spare, Pending& pending);
  void CountBatch(const BatchWork& work);
  // Under mu_: a node's entries in stats_ (by node index; the maps are keyed by name).
  struct NodeStatsRefs {
    NodeBatchStats* batches = nullptr;
    uint32_t* largest = nullptr;
  };
  NodeStatsRefs& StatsFor(int node);

  // Cohorts (conductor_cohort.cc), all under mu_.
  // Whether the walk's node runs as a cohort (cohort.h), decided once per (node, walk).
  bool CohortShape(const QueueKey& key, int walk_node);
  Cohort* CohortFor(const QueueKey& key, int walk_node);
  void JoinCohort(Request& r, PartitionRun& p, const QueueKey& key, int walk_node);
  // Ends p's membership: its walk's loop ends after the steps confirmed so far (or, for a request
  // that failed, its withdrawn step is settled).
  void LeaveCohort(Request& r, PartitionRun& p, Pending& pending);
  // Removes p's membership from its cohort, its counters added to its request and its record
  // back to the spares (its first inputs, if still held, moved to *joined when given); whether
  // its walk's step was dispatched (*ticket).
  bool DropMember(PartitionRun& p, StepTicket* ticket, TensorMapPtr* joined);
  // A member whose step (row k of c) a resource could not admit leaves its cohort for the
  // per-request path, its walk's loop continuing from the iterations confirmed so far.
  void HandOff(Request& r, PartitionRun& p, const ColumnarBatch& c, size_t k, Pending& pending);
  // Puts row k's node inputs of c into the node's ports of run, as produced by step producer.
  Status FeedDeferredRow(WalkRun& run, const Cohort& cohort, const ColumnarBatch& c, size_t k,
                         uint64_t producer);
  // LeaveCohort's walk side: the leaver's dispatched step (ticket) is completed and its loop
  // ended.
  void SettleLeaver(Request& r, PartitionRun& p, const Cohort& cohort, const StepTicket& ticket,
                    Pending& pending);
  // m's partition ends after its walk (a stop check's MSTAR_STOP_PARTITION, or the output limit).
  static void EndPartition(Request& r, CohortMember& m);
  bool AnyCohortReady() const;
  bool FormCohortBatch(BatchWork* work, Pending& pending);
  // The step's node inputs, stacked from the members' previous rows or first inputs. The requests
  // of rows that do not stack with the others' fail and leave rows; false when none is left.
  bool StackCohortInputs(Cohort& cohort, std::vector<CohortMember*>& rows, ColumnarBatch& batch,
                         Pending& pending);
  // One try: the inputs stacked into batch, or an error with the rows that keep them from
  // stacking in *odd (with why; empty when none stands out).
  Status TryStackCohortInputs(Cohort& cohort, const std::vector<CohortMember*>& rows,
                              ColumnarBatch& batch,
                              std::vector<std::pair<CohortMember*, std::string>>* odd);
  // StackCohortInputs' common case: each input is the last step's output whole (shared); false,
  // with the batch's inputs cleared, when an output is missing or cannot be shared.
  bool ShareLastOutputs(const Cohort& cohort, ColumnarBatch& batch);
  // Under mu_, after a step ran: cohort.last keeps what the next step reads of outputs (the feeds'
  // entries, shared), so that the rest (a model's logits) goes with the step's batch before the
  // next forward, as a plain loop's would. All of outputs when a share cannot be made.
  void KeepFeeds(Cohort& cohort, const std::shared_ptr<ColumnarOutputs>& outputs);
  // Under mu_: a cohort step's exec taken (the cohort no longer executing, KeepFeeds, the
  // node's counts); its rows are settled by the caller.
  void TakeCohortExec(BatchWork& work);
  bool CohortAfterExec(BatchWork& work, BatchWork* next, bool finish_follows);
  // Applies a row's exec result to its member (the next step's source row, or blocked when it
  // did not run) and counts the step.
  void SettleExecRow(const ColumnarRow& row);
  bool CohortAfterFinish(BatchWork& work, BatchWork* next);
  // The step's outputs for the edges leaving the cohort's node (into edges, reused).
  void CohortEdges(const Cohort& cohort, const ColumnarBatch& c,
                   std::vector<CohortEdgeRows>* edges);
  void RouteCohortRow(Request& r, CohortMember& m, const ColumnarRow& row,
                      const std::vector<CohortEdgeRows>& edges, Pending& pending);
  // Under mu_: the per-request path's FormBatch, from the ready queues.
  bool FormQueuedBatch(BatchWork* work, Spare& spare, Pending& pending);
  // The most requests one step of the queue's (node, walk) may hold.
  uint32_t CapFor(const QueueKey& key) const;
  // At construction: every (node, walk)'s cap, for caps_.
  std::vector<uint32_t> BatchCaps();

  Engine& engine_;
  ConductorOptions options_;
  std::vector<std::unique_ptr<CompiledWalk>> walks_;
  // The request parameters that bound a request and their ranges.
  std::vector<RequestLimit> request_limits_;
  std::map<std::string, int> walk_index_;
  // By walk index: the walk index the manifest's transitions lead to, kNextIsDone, or
  // kNextByName (a transition to a walk of another partition or none: the general path reports
  // it). A model controller's next_walk, when there is one, decides instead.
  static constexpr int kNextIsDone = -1;
  static constexpr int kNextByName = -2;
  std::vector<int> next_walk_;
  std::vector<std::vector<int>> global_node_;  // [walk][walk node] -> engine node index
  std::map<std::string, std::vector<int>> stream_producers_;  // stream -> partitions writing it
  // Streams read by a node that wants their final chunk always (wants_final_chunk).
  std::set<std::string> always_final_streams_;
  std::shared_ptr<const ConfigTree> empty_params_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // the scheduler waits here
  std::condition_variable idle_cv_;  // WaitIdle waits here
  std::unordered_map<RequestId, std::unique_ptr<Request>> requests_;
  Scheduler scheduler_;
  std::vector<ReadyEntry> popped_;  // FormBatch's entries (under mu_; capacity reused)
  // Each (node, walk)'s batch cap, indexed node * walks + walk: asked of the engine (a plugin
  // call) once, at construction, so that no step waits for it under mu_; the engine's caps do
  // not change once the model is loaded and warmed up.
  std::vector<uint32_t> caps_;
  // Under mu_: whether each (node, walk) splits batches by capture key, indexed as caps_; -1 until
  // first asked.
  std::vector<int8_t> splits_;
  std::vector<std::pair<QueueKey, ReadyEntry>> capacity_waiters_;
  std::vector<std::pair<QueueKey, ReadyEntry>> eviction_parked_;  // see RequeueEvictionParked
  std::vector<Pending> outbox_;  // client work decided but not yet carried out
  // What the delivering thread is carrying out (only it touches the list; swapped with outbox_,
  // so that neither is allocated again per delivery).
  std::vector<Pending> carrying_;
  // Runs of finished walks, for NewRun to restart (at most kSpareRuns).
  static constexpr size_t kSpareRuns = 1024;
  std::vector<std::unique_ptr<WalkRun>> spare_runs_;
  std::vector<uint32_t> limits_scratch_;  // StartWalk's loop limits (under mu_; reused)
  static constexpr size_t kSpareLists = 4;
  std::vector<std::vector<PendingEmit>> spare_emits_;  // emptied Pending::emits, for reuse
  std::vector<std::vector<PendingRows>> spare_rows_;   // emptied Pending::rows, likewise
  bool delivering_ = false;                            // a thread is carrying out the outbox
  // The delivering thread's chunk for cohort rows (only it touches them; see Carry): kept from
  // delivery to delivery so that its names, once set for an edge, are not copied again.
  OutputChunk carry_chunk_;
  const EdgeSpec* carry_named_ = nullptr;  // the edge whose names carry_chunk_ holds
  // Requests whose output could not be encoded or sent (FailOutput), with the message, until
  // their end is delivered as that failure (only the delivering thread touches it).
  std::map<RequestId, std::string> output_failures_;
  size_t parked_requests_ = 0;         // requests with steps parked (Request::parked)
  std::set<RequestId> beneficiaries_;  // requests that victims were evicted for (or hold room)
  // The request last found short of capacity that room is made for (FirstShort), and its node.
  // Until it has run a step there (or ended), requests that have never run a step, of no higher
  // priority, wait behind it at that node: a newcomer would take the room freed for it, and under
  // a steady flow of newcomers it would wait forever. It is among beneficiaries_, so its next
  // step wakes them. request 0: no hold.
  struct RoomHold {
    RequestId request = 0;
    int node = -1;
    int32_t priority = 0;
    uint64_t order = 0;
    uint64_t steps = 0;  // StepsRun of the request when it was found short
  };
  RoomHold room_hold_;
  std::set<RequestId> reserved_ids_;  // ids of requests being made (Reserve to Insert)
  // Of reserved_ids_, those a client cancelled while they were being made: they end cancelled
  // instead of entering the table.
  std::set<RequestId> cancelled_reserved_;
  // Requests between two attempts (StartOver to StartAgain), and whether the client cancelled them
  // meanwhile.
  std::map<RequestId, bool> recomputing_;
  // Whether a request may be recomputed: options_.max_recomputes > 0, a resource can offload, and
  // every node declares itself deterministic. When not, why (NotRecomputable).
  bool recomputable_ = false;
  std::string not_recomputable_;
  // Ids of finished requests the engine still holds (Post to Carry's RemoveRequest): a request
  // submitted again under such an id would meet the old one's state in the engine.
  std::set<RequestId> leaving_ids_;
  uint64_t next_id_ = 1;
  uint64_t order_ = 0;
  uint64_t batch_sequence_ = 0;
  uint64_t step_clock_ = 0;
  uint32_t batches_in_flight_ = 0;
  std::string offload_failure_;  // the last failed offload, for requests that then cannot run
  uint64_t progress_at_last_wake_ = 0;  // steps + evictions when waiters were last retried
  bool stopping_ = false;
  IdleLauncher* launcher_ = nullptr;  // under mu_
  bool wake_scheduler_ = false;       // NoteWork was called: wake the scheduler after the lock
  std::atomic<int> contenders_{0};    // clients waiting for mu_
  std::atomic<bool> scheduler_called_{false};  // woken, and has not looked at the queues yet
  std::vector<int> ready_scratch_;             // nodes made ready by a completed step (under mu_)
  std::vector<int> start_scratch_;             // nodes ready at a walk's start (under mu_)
  ConductorStats stats_;
  std::vector<NodeStatsRefs> node_stats_;         // StatsFor's (under mu_)
  std::vector<std::unique_ptr<Cohort>> cohorts_;  // under mu_; never freed while running
  std::vector<int8_t> cohort_shapes_;  // CohortShape's answers, indexed as caps_; -1 unknown
  uint64_t cohort_serial_ = 0;
  uint64_t walk_generation_ = 0;  // under mu_: the last walk run's generation (PartitionRun)
  size_t next_cohort_ = 0;        // where FormCohortBatch looks first (round robin)
  bool last_was_cohort_ = false;  // FormBatch alternates with the ready queues
  std::vector<CohortEdgeRows> cohort_edges_;  // CohortAfterFinish's (under mu_; reused)
  std::vector<CohortMember*> cohort_rows_;    // FormCohortBatch's (under mu_; reused)
  // Records of members that left a cohort, for later joiners (under mu_; at most kSpareMembers,
  // beyond which only records that steps in flight still name are kept).
  static constexpr size_t kSpareMembers = 1024;
  std::vector<std::unique_ptr<CohortMember>> spare_members_;
  std::vector<int64_t> view_dims_;  // shapes of row views (under mu_; reused)

  static constexpr size_t kMaxSpares = 4;  // batches in flight, and one more
  std::mutex spare_mu_;                    // guards spares_ (taken without mu_ by the finisher)
  std::vector<Spare> spares_;
};

}  // namespace mstar

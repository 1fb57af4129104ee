// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Engine: one worker's model, stepped one node at a time (the C++ counterpart of the Engine API,
// shared/reference/engine-api.txt). It owns the model's plugin instances and runs each stage of a
// step over an ExecutingBatch:
//
//   PrepareInputs   submodule.prepare_inputs per request (a request may be declined for the step)
//   Exec            per resource declare -> admit -> plan, the forward, per resource commit
//   PostprocessBatch  submodule.postprocess per request
//   CheckStopForBatch stop checks on host copies of the outputs the submodule named
//   FinalizeBatch   publish what other workers need
//
// Every stage isolates failures: a request that fails (a plugin error, an unservable admission)
// is marked failed with a message naming the stage, node and plugin, and the others continue. A
// batched forward that fails is retried one request at a time to find the culprit.
//
// Streams (engine_streams.cc): each device a node or resource is on has an exec, a plan and a
// copy stream (device_streams.h). A node's forwards, captures, replays and its resources' commits
// run on its device's exec stream; resources plan on their device's plan stream and offload and
// reload on its copy stream. Before a forward, exec waits for its resources' plans and copies so
// far; before an offload or reload, copy waits for the exec streams of the resource's nodes. Exec
// finishes (the host waits for the exec stream) before the host stages read a step's outputs.
//
// Thread-safety: the stages may run on different threads for different batches; calls into one
// plugin instance are serialized by that instance's mutex. The engine does not decide what runs
// when: the scheduler and conductor do.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "capture/capture_backend.h"
#include "capture/capture_options.h"
#include "capture/node_captures.h"
#include "engine/device_streams.h"
#include "engine/executing_batch.h"
#include "engine/model_runtime.h"
#include "host/host_objects.h"

namespace mstar {

struct DummyStep;
struct ResourceViews;  // engine_decl.h

// An admission outcome for one request at one node (check_ready).
struct AdmitOutcome {
  uint32_t outcome = MSTAR_ADMIT_READY;  // READY, NOT_READY or UNSERVABLE
  uint32_t wait_reason = 0;
  std::string resource;  // the resource that is not ready or refused
  std::string error;     // UNSERVABLE: why
  // UNSERVABLE because a resource lost the request's offloaded state (its reload said
  // MSTAR_ERR_DATA_LOSS): the request may be recomputed from its prompt.
  bool lost = false;
  // READY or NOT_READY after a resource reloaded the request's offloaded state for it.
  bool reloaded = false;
};

// Time spent inside plugin hooks, for overhead figures.
struct EngineTimings {
  uint64_t forward_ns = 0;  // forward / forward_batched
  uint64_t prepare_ns = 0;  // prepare_inputs
  uint64_t stop_ns = 0;     // stop checks
  uint64_t forward_calls = 0;
};

class Engine {
 public:
  explicit Engine(std::unique_ptr<ModelRuntime> runtime);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // load_model: instantiates every plugin of the model.
  static Result<std::unique_ptr<Engine>> Load(const ModelSpec& model,
                                              const PluginRegistry& registry,
                                              const ModelRuntimeOptions& options = {});
  ModelRuntime& runtime() { return *runtime_; }
  const ModelSpec& model() const { return runtime_->model(); }
  // The engine's streams on device (a node's or a resource's), or nullptr when nothing is there.
  DeviceStreams* streams_on(DLDevice device);

  // How warmup captures and steps replay (before Warmup; the default captures with 2 slots).
  void ConfigureCapture(const CaptureOptions& options) { capture_options_ = options; }
  // warmup: each submodule's warmup hook, then the capture of every bucket of every capture
  // configuration (engine_capture.cc). A failed capture is an error naming the node, walk, bucket
  // and reason, unless the capture options allow falling back to eager for that bucket.
  Status Warmup();
  // shutdown: destroys every instance (after the pipeline has stopped).
  void Shutdown();

  // add_request / remove_request: registers the request with every resource / drops it from
  // every resource and submodule.
  Status AddRequest(const mstar_request_info_t& info);
  void RemoveRequest(RequestId id);

  // The stages of a step (see the file comment).
  void PrepareInputs(ExecutingBatch& batch);
  void Exec(ExecutingBatch& batch);
  void PostprocessBatch(ExecutingBatch& batch);
  void CheckStopForBatch(ExecutingBatch& batch);
  // Whether every output the batch's stop check reads is in host memory already (so the check
  // waits for no device and copies nothing).
  bool StopInputsOnHost(const ExecutingBatch& batch);
  // exec + postprocess, the part of a step that belongs together on the execution thread.
  void ExecAndPostprocess(ExecutingBatch& batch);
  // Whether the node can run columnar steps (a cohort's, conductor_cohort.cc): it declares
  // MSTAR_SUBMODULE_COLUMNAR with prepare_inputs_columnar and has no capture configurations
  // (captured steps run per request). Its resources take part in columnar steps.
  bool RunsColumnar(int node);
  // Keys what the step generated into each resource's prefix chains (from the stop check's host
  // copies).
  void ExtendPrefixChains(ExecutingBatch& batch);
  // finalize_batch: per request in publish, per publishing resource, what it published.
  std::map<RequestId, std::map<std::string, std::vector<uint8_t>>> FinalizeBatch(
      ExecutingBatch& batch, const std::vector<RequestId>& publish);

  // check_ready: reloads an offloaded request when allowed, then takes in what was published for
  // it elsewhere (published: resource label -> bytes).
  AdmitOutcome CheckReady(int node, const mstar_request_info_t& info, bool allow_reload,
                          const std::map<std::string, std::vector<uint8_t>>& published = {});

  // Memory pressure (per node, over its resources that offload; with `only`, over those of them
  // whose labels it holds: the resources that were short).
  bool Evictable(int node, const std::set<std::string>* only = nullptr);
  uint64_t Reclaimable(int node, RequestId id, const std::set<std::string>* only = nullptr);
  // The largest offload_priority the resources give the request (a negative one kept), or 0 when
  // none answers.
  double OffloadPriority(int node, RequestId id, const std::set<std::string>* only = nullptr);
  // Units reclaimed; *error (when given) receives the last failure of a resource's offload.
  uint64_t OffloadRequest(int node, RequestId id, std::string* error = nullptr,
                          const std::set<std::string>* only = nullptr);
  Result<bool> ReloadRequest(int node, RequestId id);
  // An error when a resource cannot say (the caller must not assume "no").
  Result<bool> IsOffloaded(int node, RequestId id);

  // Resident deltas for follower ranks (per node: its resources' deltas, by label).
  std::map<std::string, std::vector<uint8_t>> TakeResidentDelta(int node);
  // Applies a leader's delta; consumes what was applied from delta. False when a move has not
  // landed yet (retry); an error when this replica's state diverges.
  Result<bool> ApplyResidentDelta(int node, std::map<std::string, std::vector<uint8_t>>& delta);

  // The most requests one step of (node, walk) may hold; nullopt for no cap.
  std::optional<uint32_t> GetMaxBatchSize(int node, const std::string& walk);
  // Whether the node splits batches of walk by capture key: a graph captured at warmup replays
  // walk only for its key (false before warmup, with capture off, or when every such capture
  // failed and fell back; fixed from warmup on).
  bool SplitsByCaptureKey(int node, const std::string& walk);
  // The capture group of one request, when the node splits batches by capture key.
  std::optional<uint64_t> CaptureGroup(int node, const std::string& walk,
                                       const mstar_request_info_t& info);

  // Replay slots and pre-planning (engine_capture.cc). After prepare_inputs, the plan thread
  // reserves the slot a batch will replay on (nullopt: no captured bucket fits, or every slot is
  // busy; the step runs eagerly and the reason is logged once per shape) and pre-plans the node's
  // CAN_PRE_PLAN resources into it while the previous batch executes. Exec asks PreplanIsStale and
  // re-plans when stale; a leased batch that never dispatches gives its slot back through
  // ResetPrePlanForBatch (nullptr: every resource drops every slot's pre-plan).
  bool CanPrePlan(int node);
  // needs_slot_fence: whether reusing a slot of the node must wait out the work that last used
  // it, i.e. a resource stages into reused host buffers (MSTAR_RESOURCE_NEEDS_SLOT_FENCE). The
  // slot pools always wait for the fence of the work that last read a slot (its replay, or the
  // eager forward of a batch that leased it) before re-leasing it, so this is informational.
  bool NeedsSlotFence(int node);
  std::optional<SlotLease> ReserveReplaySlot(const ExecutingBatch& batch);
  // The region slot a batch without a whole-forward lease holds for its forward's captured
  // regions (engine_regions.cc): leased on the plan thread, made current on the exec thread just
  // before the forward. nullopt when the node replays no region in the batch's walk or every
  // region slot is busy (the forward then leases one itself). ReleaseRegionSlot gives back a slot
  // whose batch never reached its forward.
  std::optional<int32_t> ReserveRegionSlot(const ExecutingBatch& batch);
  void ReleaseRegionSlot(ExecutingBatch& batch);
  // The node's captured regions; nullptr when it has none (tests inspect their buffers).
  RegionCaptures* regions(int node);
  bool PrePlanForBatch(ExecutingBatch& batch);
  void ResetPrePlanForBatch(ExecutingBatch* batch);
  bool PreplanIsStale(const ExecutingBatch& batch);
  // The capture events of device's backend (the recording backend on CPU); nullptr when nothing
  // was captured for that device.
  CaptureLog* capture_log(DLDevice device = DLDevice{kDLCPU, 0});
  // Capture counts per node over every device's backend (nodes that never captured are absent).
  // Call when no step is being set up (after load; between or after runs): the backends are
  // made while nodes capture.
  std::map<std::string, CaptureCounts> capture_counts() const;

  EngineTimings timings() const;

  // A step as its node's resources see it, and how admission outcomes are recorded: internal
  // to the engine's step files (engine_decl.h).
  struct Decl;
  class AdmitMarks;

 private:
  bool RunStep(NodeRuntime& node, ExecutingBatch& batch, const std::vector<size_t>& members,
               bool batched);
  Status AdmitAll(NodeRuntime& node, const ExecutingBatch& batch, Decl& decl, AdmitMarks& marks);
  // A batched step of several requests that failed before its commit (declare, plan, forward)
  // runs again one request at a time (members found not ready in the failed attempt included),
  // so that only the failing requests fail; otherwise the members still active fail with
  // failure. Returns whether it retried.
  bool RetryAloneOrFail(NodeRuntime& node, ExecutingBatch& batch,
                        const std::vector<size_t>& members, bool batched, const Status& failure);
  // plan on each of the node's resources into views; commit on each after the forward. Either
  // aborts the declaration on failure (commit: from the failing resource on) and returns why.
  Status PlanResources(NodeRuntime& node, Decl& decl, ResourceViews& views);
  Status CommitResources(NodeRuntime& node, Decl& decl);
  // abort_step on the node's resources from first_resource on (all by default).
  void AbortDecl(NodeRuntime& node, Decl& decl, size_t first_resource = 0);
  // Columnar steps (engine_columnar.cc): the whole batch, then one row at a time after a failure.
  void ExecColumnar(ExecutingBatch& batch);
  // prepare, admit, plan, forward and commit over rows (indices into the batch's rows, whose
  // inputs are inputs / input_rows); on return rows holds the rows that ran, in output order
  // (rows not admitted are marked failed or deferred on the batch; rows whose commit failed are
  // marked failed, not reported as an error to retry: a resource may have committed them).
  Status RunColumnarRows(NodeRuntime& node, ExecutingBatch& batch, std::vector<uint32_t>& rows,
                         const mstar_tensor_map& inputs, const mstar_tensor_map& input_rows,
                         ColumnarOutputs* out);
  // Admission of a columnar step's rows (tokens: what prepare gave each; input_tokens: their
  // token ids, borrowed, null where unknown): decl declares the rows admitted, rows and the
  // prepared maps keep only theirs (rows is empty when none was).
  Status AdmitColumnarRows(NodeRuntime& node, ExecutingBatch& batch, std::vector<uint32_t>& rows,
                           const std::vector<uint32_t>& tokens,
                           const std::vector<const mstar_tensor_t*>& input_tokens,
                           TensorMapPtr& prepared, TensorMapPtr& prepared_rows, Decl& decl);
  void RetryColumnarRows(NodeRuntime& node, ExecutingBatch& batch);
  bool ColumnarStopInputsOnHost(const ExecutingBatch& batch);
  void CheckStopColumnar(ExecutingBatch& batch);
  void CheckStopRowByRow(NodeRuntime& node, ExecutingBatch& batch);
  void ExtendPrefixChainsColumnar(NodeRuntime& node, ExecutingBatch& batch);

  // Capture (engine_capture.cc).
  Status CaptureNode(NodeRuntime& node);
  // Captures slot's graph of the bucket, after warmup_runs eager runs of the same step.
  void ForgetDummies(NodeRuntime& node, SlotPool& pool);
  Status CaptureOneSlot(NodeRuntime& node, NodeCaptures& captures, int config, uint32_t bucket,
                        CaptureSlot& slot, uint32_t warmup_runs);
  // A step of dummy requests at bucket's size in config's capture walk, planned into slot by the
  // node's resources (engine_dummy.cc).
  Status PrepareDummyStep(NodeRuntime& node, const mstar_capture_config_t& config,
                          const mstar_capture_bucket_t& bucket, int32_t slot, DummyStep& out);
  // The node's resources take the prepared dummies in: add_request, declare, admit, plan on
  // stream. On failure out's destructor (or Leave) undoes what was joined.
  Status JoinDummyStep(NodeRuntime& node, mstar_stream* stream, DummyStep& out);
  // capture_begin -> body inside the backend's capture on info.stream -> capture_end, under the
  // node's lock: the captured graph, or why capturing failed (hooks undone, nothing kept).
  Result<GraphHandle> CaptureWithHooks(NodeRuntime& node, CaptureBackend* backend,
                                       const mstar_capture_info_t& info,
                                       const std::function<Status()>& body);
  // Piecewise regions (engine_regions.cc): every region config of the node, per bucket and slot.
  Status CaptureRegions(NodeRuntime& node, NodeCaptures& captures, CaptureBackend* backend);
  Status CaptureRegionBucket(NodeRuntime& node, RegionCaptures& regions, int config,
                             uint32_t bucket);
  uint32_t SlotsOf(const mstar_capture_config_t& config) const;
  // Whether config's capture walk is a walk of the model in which node runs (else nothing would
  // ever replay its graphs: the config is skipped, and why is logged at debug level).
  bool CapturesInModel(const NodeRuntime& node, size_t index,
                       const mstar_capture_config_t& config) const;
  // The eager forward of a step that may launch captured regions: the step holds its region slot
  // (leased ahead, or now) for the forward, then the slot is in flight until its replays finish.
  Status ForwardWithRegions(NodeRuntime& node, ExecutingBatch& batch, mstar_step_t& step,
                            bool batched);
  Result<CaptureBackend*> BackendForCapture(DLDevice device);
  // Runs the step's forward: a replay on the batch's leased slot when it has one (releasing the
  // lease), else forward / forward_batched. members index batch.requests; step is filled.
  Status ForwardStep(NodeRuntime& node, ExecutingBatch& batch, const std::vector<size_t>& members,
                     mstar_step_t& step, bool batched);
  Status Replay(NodeRuntime& node, ExecutingBatch& batch, const std::vector<size_t>& members,
                mstar_step_t& step, SlotPool& pool);
  // Before exec's sweep: drops a stale pre-plan so the sweep plans afresh.
  void CheckPrePlan(ExecutingBatch& batch);
  // Drops the batch's pre-plan (reset_pre_plan on its slot), recording why; the slot stays leased.
  void DropPrePlan(ExecutingBatch& batch, const std::string& reason);
  // Why the batch's pre-plan no longer describes it, or "" when it still does.
  std::string StaleReason(const ExecutingBatch& batch);
  Status ForwardEager(NodeRuntime& node, mstar_step_t& step, bool batched);
  // Gives back the batch's lease (its batch will not replay), recording why when reason is set.
  // after: the stream whose work so far may still read what was staged into the slot (an eager
  // forward of the batch, or its plan's copies); for a node whose resources need the slot fence,
  // the slot is leased again only once that work has run.
  void ReleaseLease(ExecutingBatch& batch, const std::string& reason,
                    mstar_stream* after = nullptr);
  // Ends the lease of slot once the work enqueued on after so far has run (a fence; without one,
  // after is synchronized first): after a replay, or a batch that read the slot without one.
  void EndLeaseAfter(NodeRuntime& node, SlotPool& pool, int32_t slot, mstar_stream* after);
  // Builds into decl the pre-plan's step declaration (preplan = 1, the lease's padding): the
  // batch's active requests, or with as_preplanned those it was pre-planned with
  // (preplanned_ids).
  static void PrePlanDecl(const ExecutingBatch& batch, Decl& decl, bool as_preplanned = false);

  // Streams (engine_streams.cc).
  Status CreateStreams();
  DeviceStreams& NodeStreams(const NodeRuntime& node);
  DeviceStreams& ResourceStreams(const ResourceRuntime& resource);
  // Work given to the node's exec stream from now on runs after its resources' plans and copies.
  Status ExecAfterPlansAndCopies(NodeRuntime& node);
  // Work given to the resource's copy stream from now on runs after what its nodes' exec streams
  // were given (the forwards that wrote what an offload reads, or read what a reload overwrites).
  Status CopyAfterExec(const ResourceRuntime& resource);
  // Calls call(copy stream) as the resource's hook named hook (offload, reload) on its copy
  // stream, ordered after its nodes' forwards (engine_memory.cc).
  template <typename Call>
  Status CallOnCopyStream(const ResourceRuntime& resource, const char* hook, Call&& call);
  // Blocks until the node's exec stream has run: the host stages read the step's outputs next.
  Status FinishExec(NodeRuntime& node);

  std::unique_ptr<ModelRuntime> runtime_;
  std::vector<std::unique_ptr<DeviceStreams>> device_streams_;  // one per device in use
  // By node index: the streams of the node's device first, then those of its resources' other
  // devices: what its forwards run on and order after (made once by CreateStreams).
  std::vector<std::vector<DeviceStreams*>> node_streams_;
  // By resource: the streams of the nodes that use it (each once), whose exec lanes its copies
  // order after (made once by CreateStreams).
  std::map<const ResourceRuntime*, std::vector<DeviceStreams*>> resource_users_;
  std::map<std::pair<int, std::string>, std::optional<uint32_t>> max_batch_cache_;
  std::mutex cache_mutex_;
  std::atomic<uint64_t> forward_ns_{0};
  std::atomic<uint64_t> prepare_ns_{0};
  std::atomic<uint64_t> stop_ns_{0};
  std::atomic<uint64_t> forward_calls_{0};

  CaptureOptions capture_options_;
  std::map<std::pair<int, int>, std::unique_ptr<CaptureBackend>> capture_backends_;  // by device
  std::vector<std::unique_ptr<NodeCaptures>> captures_;  // by node index; null: never replays
  int32_t next_capture_slot_ = 0;             // slot ids are unique across nodes (warmup only)
  std::shared_ptr<ConfigTree> empty_params_;  // dummy rows' request parameters
};

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Request: everything the conductor keeps for one client request: its parameters, its values
// (the prompt, persisted tensors), one PartitionRun per partition, the stream buffers between its
// partitions, its client stream, and its bookkeeping (steps in flight, output tokens, failure).
//
// Guarded by the conductor's lock.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config_tree.h"
#include "core/small_vector.h"
#include "engine/compiled_walk.h"
#include "engine/output_stream.h"
#include "engine/scheduler.h"
#include "engine/stream_buffer.h"
#include "engine/walk_run.h"
#include "mstar/request.h"

namespace mstar {

struct Cohort;
struct CohortMember;

// Owned host tensors, released on destruction. A value is usually one tensor: kept inline.
class TensorList {
 public:
  using Tensors = boost::container::small_vector<mstar_tensor_t*, 1>;
  TensorList() = default;
  TensorList(TensorList&& other) noexcept : tensors_(std::move(other.tensors_)) {
    other.tensors_.clear();
  }
  TensorList& operator=(TensorList&& other) noexcept;
  TensorList(const TensorList&) = delete;
  TensorList& operator=(const TensorList&) = delete;
  ~TensorList() { Clear(); }

  void Add(mstar_tensor_t* tensor) { tensors_.push_back(tensor); }
  void Clear();
  // New references to every tensor (for feeding a port while keeping the value).
  Result<std::vector<mstar_tensor_t*>> Share() const;
  const Tensors& tensors() const { return tensors_; }
  bool empty() const { return tensors_.empty(); }

 private:
  Tensors tensors_;
};

// A request's values by name (its prompt values, its persisted values): a few entries, in the
// order they were first set, kept inline.
class NamedValues {
 public:
  using Entry = std::pair<std::string, TensorList>;
  // The value named name, added empty when there is none.
  TensorList& operator[](std::string_view name);
  // The value named name, or null.
  const TensorList* Find(std::string_view name) const;
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }

 private:
  boost::container::small_vector<Entry, 2> entries_;
};

struct PartitionRun {
  // What every step of a cohort touches first (kept together).
  // The cohort running the walk's loop for this partition (cohort.h), while it is a member.
  Cohort* cohort = nullptr;
  CohortMember* member = nullptr;
  uint64_t cohort_serial = 0;  // the membership (0: none); rows of steps formed for it carry it
  bool ending = false;         // finish after the current walk (output limit reached)
  // The walk's cohort could not admit one of its steps (a resource was not ready): the walk runs
  // on the per-request path, which knows memory pressure, until it ends.
  bool per_request = false;
  bool done = false;
  bool last_chunk = false;  // the chunk being consumed is the stream's final one
  int index = -1;
  uint32_t unchecked = 0;      // steps executed whose stop check has not been applied: at
                               // most one step runs ahead of its stop check
  uint32_t steps_pending = 0;  // steps of the current walk dispatched and not yet through
                               // the finisher: the walk moves on only when this is zero
  const PartitionSpec* spec = nullptr;
  std::string walk;              // the walk running (or about to), "" once done
  std::unique_ptr<WalkRun> run;  // null while waiting for a chunk, and once done
  const CompiledWalk* compiled = nullptr;
  int walk_index = -1;            // the conductor's index of compiled
  uint64_t generation = 0;        // the walk run's: unique in the conductor (Conductor::
                                  // walk_generation_), so no queued entry of another request
                                  // that had this id, or of an earlier attempt, matches it
  StreamBuffer* input = nullptr;  // consumer partitions: the stream that triggers their walks
  // Tensors the model controller gave with its choice of the walk about to start, read by its
  // "controller.NAME" inputs when it starts (null when none).
  TensorMapPtr chosen_inputs;
  // Walks finished in a row without progress: no counted token emitted by the request and no
  // chunk taken (ConductorOptions::max_idle_walks), and the progress seen when the count began.
  uint32_t idle_walks = 0;
  uint64_t idle_tokens = 0;
  uint64_t idle_chunks = 0;
  // The capture keys its plugins gave, by (walk index, global node): a request's key for a walk
  // does not change, and asking again on every step would wait, under the conductor's lock, for
  // the node's forward to finish.
  struct CaptureKeyOf {
    int walk;
    int node;
    uint64_t key;
  };
  std::vector<CaptureKeyOf> capture_keys;
};

// kRecomputing: ending as kFailing does, then started again from its prompt
// (conductor_recompute.cc).
enum class RequestState { kActive, kFailing, kCancelling, kRecomputing, kFinished };

// Aligned to a cache line, whose first holds what a cohort step's pass touches per row.
struct alignas(64) Request {
  // What every step touches (kept together, first).
  RequestId id = 0;
  RequestState state = RequestState::kActive;
  // Steps dispatched and not yet through the finisher, but for those of live cohort
  // memberships, which their member counts (CohortMember::in_flight).
  uint32_t in_flight = 0;
  std::shared_ptr<RequestStream> stream;
  uint64_t token_limit = 0;
  uint64_t tokens = 0;  // counted output tokens emitted
  // How many of an emit's rows are sent: all of them, or (an edge that counts tokens) those within
  // the output-token limit.
  uint64_t RowsToSend(bool counts_tokens, uint64_t rows) const {
    if (!counts_tokens || tokens + rows <= token_limit) return rows;
    return token_limit > tokens ? token_limit - tokens : 0;
  }
  uint64_t steps = 0;      // but for those of live cohort memberships (StepsRun counts all)
  uint64_t last_step = 0;  // engine step counter when it last ran (LRU eviction)
  // Why its last step was not admitted (MSTAR_WAIT_*) and by which resource, for the message
  // when it never is.
  uint32_t wait_reason = 0;
  std::string waiting_on;
  std::vector<PartitionRun> partitions;
  uint64_t wasted_steps = 0;

  int32_t priority = 0;
  // Who the request is for: info.tenant_salt points here (resources keep tenants' shared state,
  // a prefix cache, apart by it). Set once, before any step.
  std::string tenant;
  uint64_t seed = 0;
  uint64_t order = 0;  // arrival order (ties)
  std::shared_ptr<const ConfigTree> params;

  NamedValues values;                                            // request values: the prompt
  NamedValues persisted;                                         // values kept across walks
  std::map<std::string, std::unique_ptr<StreamBuffer>> streams;  // by stream name

  std::string error;
  // The client's prompt, kept while the request may be recomputed (its resources can offload);
  // and the times it was.
  std::string prompt;
  uint32_t recomputes = 0;
  std::vector<int> offloaded_nodes;  // nodes whose resources hold this request offloaded
  bool evicting = false;             // being offloaded: not dispatched until that is done
  // Ready steps held back until a stop check lands (at most one step runs ahead of its check).
  std::vector<std::pair<QueueKey, ReadyEntry>> parked;
  // Offloaded to make room for evicted_for: it waits (its reload would take that room back) until
  // that request has run a step (its step count has moved past evicted_for_steps) or ended.
  RequestId evicted_for = 0;
  uint64_t evicted_for_steps = 0;

  // The base info handed to resources at add_request (no walk or loops).
  mstar_request_info_t info{};
  bool active() const { return state == RequestState::kActive; }
  // A result with its counts (tokens, steps, recomputes); the end and error are the caller's.
  RequestResult Counts() const {
    RequestResult result;
    result.tokens = tokens;
    result.steps = steps;
    result.wasted_steps = wasted_steps;
    result.recomputes = recomputes;
    return result;
  }
};

}  // namespace mstar

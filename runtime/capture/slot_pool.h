// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// SlotPool: the N slots of one captured bucket (one (node, config, bucket)). Each slot has its own
// graph, static padded inputs and captured outputs, so a batch planned ahead into one slot never
// writes what the replay on another slot reads. A slot moves
//   free --Lease--> leased --Launched(fence)--> in flight --fence done--> free
//                   leased --Release----------------------------------> free
// and is never leased again while leased or in flight; on CPU fences are complete when recorded,
// so a launched slot is free at once. Every lease and release is recorded in the backend's log.
//
// Thread-safe: the plan thread leases while the exec thread launches and releases.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "capture/capture_backend.h"
#include "capture/padded_inputs.h"
#include "mstar/request.h"

namespace mstar {

struct CaptureSlot {
  enum class State { kFree, kLeased, kInFlight };
  int32_t id = -1;  // node-wide slot id
  State state = State::kFree;
  FenceHandle fence = nullptr;  // kInFlight: completion of the last replay
  GraphHandle graph = nullptr;
  ExecHandle exec = nullptr;
  PaddedInputs inputs;
  // Per resource of the node, the views planned for the capture (a replay copies its real views
  // into them, since the graph reads these addresses).
  PaddedInputs views;
  // Per row, the outputs the forward wrote while being captured (a replay rewrites them in place).
  std::vector<TensorMapPtr> outputs;
  // Per row, the dummy request the row was captured with (padding rows replay as these).
  std::vector<mstar_request_info_t> dummy_rows;
  std::vector<uint32_t> dummy_tokens;
  bool preplanned = false;  // resources hold a plan for the leased batch
};

class SlotPool {
 public:
  // site names the bucket in log events (node, walk, config, bucket); slot ids are
  // first_id .. first_id + num_slots - 1.
  SlotPool(CaptureBackend* backend, CaptureEvent site, int32_t first_id, uint32_t num_slots);
  ~SlotPool();
  SlotPool(const SlotPool&) = delete;
  SlotPool& operator=(const SlotPool&) = delete;

  // Leases a free slot for a batch of rows real rows (in-flight slots whose replay completed are
  // freed first); nullopt when every slot is leased or in flight.
  std::optional<int32_t> Lease(uint32_t rows);
  // Whether Lease would find a slot now (a free one, or one whose replay has completed); another
  // thread may lease it first.
  bool CanLease() const;
  // The leased slot's replay is enqueued; fence (owned by the pool from now) marks its end.
  void Launched(int32_t id, FenceHandle fence);
  // The lease ends without a launch (fallback, or its batch never dispatched).
  void Release(int32_t id);
  // Blocks until no slot is in flight (before destroying graphs or buffers).
  void Drain();

  bool Owns(int32_t id) const { return id >= first_id_ && id < first_id_ + size(); }
  int32_t size() const { return static_cast<int32_t>(slots_.size()); }
  int32_t first_id() const { return first_id_; }
  // The slot's state; its contents may be touched only by the lease holder (or at capture).
  CaptureSlot& slot(int32_t id) { return slots_[static_cast<size_t>(id - first_id_)]; }
  const CaptureSlot& slot(int32_t id) const { return slots_[static_cast<size_t>(id - first_id_)]; }
  CaptureSlot::State state(int32_t id) const;
  const CaptureEvent& site() const { return site_; }

 private:
  void Free(CaptureSlot& slot);  // mutex held

  CaptureBackend* backend_;
  CaptureEvent site_;
  int32_t first_id_;
  mutable std::mutex mutex_;
  std::vector<CaptureSlot> slots_;
  size_t next_ = 0;  // round-robin start, so consecutive batches alternate slots
};

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// DeviceStreams: the engine's three streams on one device, and the events that order them.
//   exec  forwards, graph captures and replays, commits, warmup (the node's device)
//   plan  resources' plans and pre-plans (may run while exec still runs the step before)
//   copy  offloads and reloads (the resource's device)
// OrderAfter(waiter, lane) makes what is given to waiter (any stream, on any device) from now on
// start after everything given to lane so far: an event recorded on the lane's stream and waited
// on by the waiter, so the host does not block. A host waiter of a device's lane synchronizes the
// event instead (a host stream cannot wait); a device waiter of a host lane has nothing to wait
// for (host work ran inline). On a host device every stream is the CPU backend's inline stream
// and the events complete when recorded, so ordering costs nothing there.
// The plan and copy lanes count the hooks they were handed to (Gave, called once the hook has
// returned): ordering after one of them is skipped while it has been given nothing since the
// waiter last ordered after it, so a step with no plan or no copy work records and waits for
// nothing. Work a hook is still enqueuing when the waiter orders belongs to a later step, which
// orders after it once Gave has counted it. The exec lane is not counted: it always orders.
//
// Threading: thread-safe. Each lane's event is recorded and waited on under the lane's mutex, so
// two threads ordering after the same lane never see each other's record.
// Ownership: Create makes the streams and events; the destructor destroys them once the work on
// them has run. The mstar_stream objects stay at one address for the object's life (steps hand
// plugins pointers to them).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/status.h"
#include "host/host_objects.h"

namespace mstar {

class DeviceStreams {
 public:
  enum Lane { kExec = 0, kPlan = 1, kCopy = 2 };

  // The streams of device (the CPU backend's for host devices). Fails with the backend's
  // reason when a stream or event cannot be created; nothing is left behind then.
  static Result<std::unique_ptr<DeviceStreams>> Create(DLDevice device);
  // The same over a given backend (tests: a logging backend standing in for a device's).
  static Result<std::unique_ptr<DeviceStreams>> CreateOn(DLDevice device, DeviceBackend* backend);
  ~DeviceStreams();
  DeviceStreams(const DeviceStreams&) = delete;
  DeviceStreams& operator=(const DeviceStreams&) = delete;

  DLDevice device() const { return device_; }
  mstar_stream* stream(Lane lane) { return &lanes_[lane].stream; }
  mstar_stream* exec() { return stream(kExec); }
  mstar_stream* plan() { return stream(kPlan); }
  mstar_stream* copy() { return stream(kCopy); }

  // Work given to waiter from now on runs after everything given to lane so far.
  Status OrderAfter(mstar_stream* waiter, Lane lane);
  // A hook handed lane's stream (kPlan or kCopy) has returned: its work is there to order after.
  void Gave(Lane lane);
  // Blocks until everything given to lane so far has run.
  Status Synchronize(Lane lane);

 private:
  struct Waiter {
    const mstar_stream* stream;
    uint64_t seen;  // the lane's `given` when this waiter last ordered after it
  };
  struct LaneState {
    mstar_stream stream;
    void* event = nullptr;  // recorded on stream by OrderAfter
    std::mutex mutex;       // guards the rest: recording event, waiting on it, the counts
    uint64_t given = 0;     // hooks handed the stream (plan and copy lanes)
    std::vector<Waiter> waiters;
  };

  explicit DeviceStreams(DLDevice device) : device_(device) {}

  DLDevice device_;
  DeviceBackend* backend_ = nullptr;
  std::array<LaneState, 3> lanes_;
};

// One hook call's use of a counted lane (kPlan or kCopy): stream() is what the hook gets, and
// the lane counts it as given when the use goes, after the hook has returned.
class LaneUse {
 public:
  LaneUse(DeviceStreams& streams, DeviceStreams::Lane lane) : streams_(streams), lane_(lane) {}
  ~LaneUse() { streams_.Gave(lane_); }
  LaneUse(const LaneUse&) = delete;
  LaneUse& operator=(const LaneUse&) = delete;
  mstar_stream* stream() { return streams_.stream(lane_); }

 private:
  DeviceStreams& streams_;
  DeviceStreams::Lane lane_;
};

}  // namespace mstar

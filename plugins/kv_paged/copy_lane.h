// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// CopyLane: a second stream on the resource's device, beside the stream the engine passes, so
// that kv_paged's page gathers (and scatters) for one group of an offload (reload) run while the
// tier's copy of the previous group is in flight: the gather is a device-to-device copy and the
// tier's a device-to-host DMA, which different copy engines can run at once.
//
// Record(after, i) marks what is enqueued on after so far with the lane's i-th event; Wait(waiter,
// i) makes waiter wait for that mark (events are made on first use and reused: a wait takes the
// event's state when it is issued, so a mark is recorded again only after its waits are issued). On CPU builds streams and events are host objects and every copy is complete on
// return, so the lane orders nothing that was not already in order.
//
// Not thread-safe: kv_paged uses it under the resource's serialized calls. The destructor waits
// for the lane's stream, so it must be destroyed before the memory its copies touch.
#pragma once

#include <cstddef>
#include <vector>

#include "mstar/sdk.hpp"

namespace mstar::kv {

class CopyLane {
 public:
  // host and context are borrowed from the resource instance and outlive the lane.
  CopyLane(const mstar_host_api_t* host, mstar_host_context_t* context, DLDevice device)
      : host_(host), context_(context), device_(device) {}
  ~CopyLane() {
    Synchronize();
    for (mstar_event_t* event : events_) host_->event_release(event);
    if (stream_ != nullptr) host_->stream_release(stream_);
  }
  CopyLane(const CopyLane&) = delete;
  CopyLane& operator=(const CopyLane&) = delete;

  // The lane's stream, created on first use. Throws sdk::Error when the device cannot make one.
  mstar_stream_t* stream() {
    if (stream_ == nullptr) sdk::Check(host_, host_->stream_create(context_, device_, 0, &stream_));
    return stream_;
  }

  // Both throw sdk::Error.
  void Record(mstar_stream_t* after, size_t i) {
    while (events_.size() <= i) {
      mstar_event_t* event = nullptr;
      sdk::Check(host_, host_->event_create(context_, device_, &event));
      events_.push_back(event);
    }
    sdk::Check(host_, host_->event_record(events_[i], after));
  }
  void Wait(mstar_stream_t* waiter, size_t i) {
    sdk::Check(host_, host_->stream_wait_event(waiter, events_.at(i)));
  }
  // waiter waits for the work enqueued on after so far.
  void Order(mstar_stream_t* after, mstar_stream_t* waiter, size_t i) {
    Record(after, i);
    Wait(waiter, i);
  }

  // Blocks until the lane's copies have landed; never throws (failure paths call it).
  void Synchronize() {
    if (stream_ == nullptr) return;
    if (mstar_status_t* status = host_->stream_synchronize(stream_)) host_->status_release(status);
  }

 private:
  const mstar_host_api_t* host_;
  mstar_host_context_t* context_;
  const DLDevice device_;
  mstar_stream_t* stream_ = nullptr;
  std::vector<mstar_event_t*> events_;
};

}  // namespace mstar::kv

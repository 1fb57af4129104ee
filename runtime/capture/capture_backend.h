// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// CaptureBackend: the graph mechanics behind the capture machinery, one implementation per device.
//   CudaGraphBackend   stream capture (thread-local mode), instantiate, launch, events as fences;
//                      compiled only in CUDA builds
//   RecordingBackend   CPU: there is no graph, so a "replay" is the host running the forward
//                      eagerly on the slot's padded buffers; fences are complete when recorded
// Every backend appends what happens (captures, replays, leases, paddings, ...) to its log; the
// recording backend keeps it (up to a bound) for tests to inspect.
//
// Ownership: graphs and fences are opaque handles created and destroyed by the backend that made
// them. Threading: a capture runs on one thread (thread-local capture mode), and one graph is
// launched by one thread at a time; the log is thread-safe.
#pragma once

#include <memory>
#include <string_view>

#include <dlpack/dlpack.h>

#include "capture/capture_log.h"
#include "core/status.h"

struct mstar_stream;

namespace mstar {

using GraphHandle = void*;  // a captured graph, backend-specific
using ExecHandle = void*;   // an instantiated graph, backend-specific
using FenceHandle = void*;  // completion of the work enqueued before it; nullptr: complete

class CaptureBackend {
 public:
  explicit CaptureBackend(size_t max_log_events) : log_(max_log_events) {}
  virtual ~CaptureBackend() = default;
  CaptureBackend(const CaptureBackend&) = delete;
  CaptureBackend& operator=(const CaptureBackend&) = delete;

  virtual std::string_view name() const = 0;
  // True when Launch does not run the captured work and the host runs the forward itself.
  virtual bool replays_eagerly() const = 0;

  // Starts capturing the work this thread enqueues on stream.
  virtual Status BeginCapture(mstar_stream* stream) = 0;
  // Ends the capture: the graph (destroy with DestroyGraph), or why capturing failed.
  virtual Result<GraphHandle> EndCapture(mstar_stream* stream) = 0;
  // An executable graph (destroy with DestroyExec).
  virtual Result<ExecHandle> Instantiate(GraphHandle graph) = 0;
  // Enqueues one run of exec on stream.
  virtual Status Launch(ExecHandle exec, mstar_stream* stream) = 0;
  virtual void DestroyGraph(GraphHandle graph) = 0;
  virtual void DestroyExec(ExecHandle exec) = 0;

  // A fence at the current end of stream (nullptr when it is already complete).
  virtual Result<FenceHandle> RecordFence(mstar_stream* stream) = 0;
  // Whether the work before fence has completed. A query refused while a capture is under way
  // counts as not yet; any other failed query counts as completed (the slot is not held forever by
  // a broken device, and the failure surfaces on the next launch).
  virtual bool FenceDone(FenceHandle fence) = 0;
  virtual void WaitFence(FenceHandle fence) = 0;
  virtual void DestroyFence(FenceHandle fence) = 0;

  void Record(CaptureEvent event) { log_.Append(std::move(event)); }
  CaptureLog& log() { return log_; }

 private:
  CaptureLog log_;
};

// The CPU backend (see the file comment). Its log keeps the first max_log_events events (0: all),
// so a long-running CPU server does not grow it without bound; tests see whole runs.
inline constexpr size_t kRecordingLogEvents = size_t{1} << 16;
std::unique_ptr<CaptureBackend> MakeRecordingBackend(size_t max_log_events = kRecordingLogEvents);

// The backend for device: CUDA graphs for kDLCUDA in CUDA builds, the recording backend for host
// devices; kUnsupported for CUDA devices in a build without CUDA.
Result<std::unique_ptr<CaptureBackend>> MakeCaptureBackend(DLDevice device);

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The recording backend: graphs are tokens, launching one does nothing (the host runs the forward
// eagerly and logs the replay), fences are complete at once.
#include <atomic>
#include <cstdint>

#include "capture/capture_backend.h"
#include "device/device.h"
#include "host/host_objects.h"

#if MSTAR_WITH_CUDA
#include "capture/cuda_graph_backend.h"
#endif

namespace mstar {
namespace {

class RecordingBackend final : public CaptureBackend {
 public:
  explicit RecordingBackend(size_t max_log_events) : CaptureBackend(max_log_events) {}

  std::string_view name() const override { return "recording"; }
  bool replays_eagerly() const override { return true; }

  Status BeginCapture(mstar_stream* stream) override {
    (void)stream;
    if (capturing_.exchange(true)) return FailedPrecondition("a capture is already in progress");
    return Status::Ok();
  }
  Result<GraphHandle> EndCapture(mstar_stream* stream) override {
    (void)stream;
    if (!capturing_.exchange(false)) return FailedPrecondition("no capture is in progress");
    return Token();
  }
  Result<ExecHandle> Instantiate(GraphHandle graph) override {
    if (graph == nullptr) return InvalidArgument("instantiating a null graph");
    return Token();
  }
  Status Launch(ExecHandle exec, mstar_stream* stream) override {
    (void)stream;
    if (exec == nullptr) return InvalidArgument("launching a null graph");
    return Status::Ok();
  }
  void DestroyGraph(GraphHandle graph) override { (void)graph; }
  void DestroyExec(ExecHandle exec) override { (void)exec; }

  Result<FenceHandle> RecordFence(mstar_stream* stream) override {
    (void)stream;
    return FenceHandle{nullptr};
  }
  bool FenceDone(FenceHandle fence) override {
    (void)fence;
    return true;
  }
  void WaitFence(FenceHandle fence) override { (void)fence; }
  void DestroyFence(FenceHandle fence) override { (void)fence; }

 private:
  // A distinct non-null handle; never dereferenced.
  void* Token() { return reinterpret_cast<void*>(static_cast<uintptr_t>(++next_token_)); }

  std::atomic<bool> capturing_{false};
  std::atomic<uint64_t> next_token_{0};
};

}  // namespace

std::unique_ptr<CaptureBackend> MakeRecordingBackend(size_t max_log_events) {
  return std::make_unique<RecordingBackend>(max_log_events);
}

Result<std::unique_ptr<CaptureBackend>> MakeCaptureBackend(DLDevice device) {
  if (IsHostDevice(device)) return MakeRecordingBackend();
#if MSTAR_WITH_CUDA
  if (device.device_type == kDLCUDA) return MakeCudaGraphBackend(device);
#endif
  return Unsupported("graph capture on " + DeviceName(device) + " needs a CUDA build");
}

}  // namespace mstar

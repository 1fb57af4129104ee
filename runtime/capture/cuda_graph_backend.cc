// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "capture/cuda_graph_backend.h"

#include <cuda_runtime_api.h>

#include <mutex>
#include <string>
#include <vector>

#include "device/cuda_backend.h"
#include "host/host_objects.h"

namespace mstar {
namespace {

// The CUDA backend keeps a bounded log: a long-running server must not grow it without limit.
constexpr size_t kMaxLogEvents = 4096;

Status FromCuda(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return Status::Ok();
  std::string message = std::string(what) + ": " + cudaGetErrorString(error);
  cudaGetLastError();  // clear a non-sticky error so later calls are not misattributed
  return Internal(message);
}

cudaStream_t Native(mstar_stream* stream) {
  return stream != nullptr ? static_cast<cudaStream_t>(stream->native) : nullptr;
}

class CudaGraphBackend final : public CaptureBackend {
 public:
  explicit CudaGraphBackend(DLDevice device) : CaptureBackend(kMaxLogEvents), device_(device) {}
  ~CudaGraphBackend() override {
    for (cudaEvent_t event : idle_events_) cudaEventDestroy(event);
  }

  std::string_view name() const override { return "cuda_graph"; }
  bool replays_eagerly() const override { return false; }

  Status BeginCapture(mstar_stream* stream) override {
    if (Native(stream) == nullptr) {
      return FailedPrecondition("capturing needs a non-default CUDA stream");
    }
    MSTAR_RETURN_IF_ERROR(SetDevice());
    // The device's block cache records no fence from here to EndCapture (device/cuda_backend.h).
    CudaBackend::Instance().CaptureStarting(device_.device_id);
    Status began =
        FromCuda(cudaStreamBeginCapture(Native(stream), cudaStreamCaptureModeThreadLocal),
                 "cudaStreamBeginCapture");
    if (!began.ok()) CudaBackend::Instance().CaptureEnded(device_.device_id);
    return began;
  }

  Result<GraphHandle> EndCapture(mstar_stream* stream) override {
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(Native(stream), &graph);
    CudaBackend::Instance().CaptureEnded(device_.device_id);
    MSTAR_RETURN_IF_ERROR(FromCuda(ended, "cudaStreamEndCapture"));
    if (graph == nullptr) return Internal("cudaStreamEndCapture returned no graph");
    return static_cast<GraphHandle>(graph);
  }

  Result<ExecHandle> Instantiate(GraphHandle graph) override {
    cudaGraphExec_t exec = nullptr;
    MSTAR_RETURN_IF_ERROR(SetDevice());
    MSTAR_RETURN_IF_ERROR(
        FromCuda(cudaGraphInstantiateWithFlags(&exec, static_cast<cudaGraph_t>(graph), 0),
                 "cudaGraphInstantiateWithFlags"));
    return static_cast<ExecHandle>(exec);
  }

  Status Launch(ExecHandle exec, mstar_stream* stream) override {
    return FromCuda(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec), Native(stream)),
                    "cudaGraphLaunch");
  }

  void DestroyGraph(GraphHandle graph) override {
    if (graph != nullptr) cudaGraphDestroy(static_cast<cudaGraph_t>(graph));
  }
  void DestroyExec(ExecHandle exec) override {
    if (exec != nullptr) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec));
  }

  // A fence per replay: its event comes from, and goes back to, the backend's idle events.
  Result<FenceHandle> RecordFence(mstar_stream* stream) override {
    MSTAR_RETURN_IF_ERROR(SetDevice());
    MSTAR_ASSIGN_OR_RETURN(cudaEvent_t event, TakeEvent());
    Status recorded = FromCuda(cudaEventRecord(event, Native(stream)), "cudaEventRecord");
    if (!recorded.ok()) {
      GiveEvent(event);
      return recorded;
    }
    return static_cast<FenceHandle>(event);
  }

  bool FenceDone(FenceHandle fence) override {
    if (fence == nullptr) return true;
    cudaError_t state = cudaEventQuery(static_cast<cudaEvent_t>(fence));
    if (state == cudaErrorNotReady) return false;
    if (state != cudaSuccess) cudaGetLastError();
    return true;
  }

  void WaitFence(FenceHandle fence) override {
    if (fence != nullptr && cudaEventSynchronize(static_cast<cudaEvent_t>(fence)) != cudaSuccess) {
      cudaGetLastError();
    }
  }

  void DestroyFence(FenceHandle fence) override {
    if (fence != nullptr) GiveEvent(static_cast<cudaEvent_t>(fence));
  }

 private:
  Status SetDevice() { return FromCuda(cudaSetDevice(device_.device_id), "cudaSetDevice"); }

  Result<cudaEvent_t> TakeEvent() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!idle_events_.empty()) {
        cudaEvent_t event = idle_events_.back();
        idle_events_.pop_back();
        return event;
      }
    }
    cudaEvent_t event = nullptr;
    MSTAR_RETURN_IF_ERROR(
        FromCuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate"));
    return event;
  }
  // Its fence is gone: the event may be recorded again (as many as were ever live are kept).
  void GiveEvent(cudaEvent_t event) {
    std::lock_guard<std::mutex> lock(mutex_);
    idle_events_.push_back(event);
  }

  DLDevice device_;
  std::mutex mutex_;                      // guards idle_events_
  std::vector<cudaEvent_t> idle_events_;  // events of fences that were destroyed
};

}  // namespace

std::unique_ptr<CaptureBackend> MakeCudaGraphBackend(DLDevice device) {
  return std::make_unique<CudaGraphBackend>(device);
}

}  // namespace mstar

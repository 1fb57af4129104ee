// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "capture/cuda_graph_backend.h"

#include <cuda_runtime_api.h>

#include <string>

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

// Errors CUDA returns for a call it does not allow while a stream captures.
bool RefusedDuringCapture(cudaError_t error) {
  return error == cudaErrorStreamCaptureUnsupported || error == cudaErrorStreamCaptureImplicit ||
         error == cudaErrorStreamCaptureInvalidated || error == cudaErrorStreamCaptureWrongThread;
}

cudaStream_t Native(mstar_stream* stream) {
  return stream != nullptr ? static_cast<cudaStream_t>(stream->native) : nullptr;
}

class CudaGraphBackend final : public CaptureBackend {
 public:
  explicit CudaGraphBackend(DLDevice device) : CaptureBackend(kMaxLogEvents), device_(device) {}

  std::string_view name() const override { return "cuda_graph"; }
  bool replays_eagerly() const override { return false; }

  Status BeginCapture(mstar_stream* stream) override {
    if (Native(stream) == nullptr) {
      return FailedPrecondition("capturing needs a non-default CUDA stream");
    }
    // The device stays current: the forward captured next runs on this thread, on this device.
    MSTAR_RETURN_IF_ERROR(FromCuda(cudaSetDevice(device_.device_id), "cudaSetDevice"));
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
    // A forward that launched its work on another stream than the one captured ran it eagerly,
    // and its graph is empty: each replay would hand back the capture run's outputs.
    size_t nodes = 0;
    Status counted = FromCuda(cudaGraphGetNodes(graph, nullptr, &nodes), "cudaGraphGetNodes");
    if (counted.ok() && nodes == 0) {
      counted = FailedPrecondition(
          "the captured forward launched no device work on the capture stream (did it run on "
          "another stream than the step's?)");
    }
    if (!counted.ok()) {
      cudaGraphDestroy(graph);
      return counted;
    }
    return static_cast<GraphHandle>(graph);
  }

  Result<ExecHandle> Instantiate(GraphHandle graph) override {
    cudaGraphExec_t exec = nullptr;
    CudaDeviceScope scope;
    MSTAR_RETURN_IF_ERROR(scope.Enter(device_));
    // A graph that allocated memory it did not free (a plugin whose allocator is cudaMallocAsync,
    // e.g. LibTorch's with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync: its outputs) could
    // launch only once without the flag; the flag frees those allocations before each launch,
    // at the same addresses again. Graphs without memory nodes are unaffected.
    MSTAR_RETURN_IF_ERROR(
        FromCuda(cudaGraphInstantiateWithFlags(&exec, static_cast<cudaGraph_t>(graph),
                                               cudaGraphInstantiateFlagAutoFreeOnLaunch),
                 "cudaGraphInstantiateWithFlags"));
    return static_cast<ExecHandle>(exec);
  }

  Status Launch(ExecHandle exec, mstar_stream* stream) override {
    CudaDeviceScope scope;  // the graph's device, whichever the calling thread had current
    MSTAR_RETURN_IF_ERROR(scope.Enter(device_));
    return FromCuda(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec), Native(stream)),
                    "cudaGraphLaunch");
  }

  void DestroyGraph(GraphHandle graph) override {
    if (graph != nullptr) cudaGraphDestroy(static_cast<cudaGraph_t>(graph));
  }
  void DestroyExec(ExecHandle exec) override {
    if (exec != nullptr) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec));
  }

  // A fence per replay: its event comes from, and goes back to, the CUDA backend's idle events.
  Result<FenceHandle> RecordFence(mstar_stream* stream) override {
    CudaDeviceScope scope;
    MSTAR_RETURN_IF_ERROR(scope.Enter(device_));
    MSTAR_ASSIGN_OR_RETURN(void* event, CudaBackend::Instance().TakeEvent(device_.device_id));
    Status recorded = FromCuda(cudaEventRecord(static_cast<cudaEvent_t>(event), Native(stream)),
                               "cudaEventRecord");
    if (!recorded.ok()) {
      CudaBackend::Instance().GiveEvent(device_.device_id, event);
      return recorded;
    }
    return static_cast<FenceHandle>(event);
  }

  bool FenceDone(FenceHandle fence) override {
    if (fence == nullptr) return true;
    // A query on a thread that captures would end its capture (and answer nothing).
    if (CudaBackend::Instance().CapturesOnThisThread()) return false;
    cudaError_t state = cudaEventQuery(static_cast<cudaEvent_t>(fence));
    if (state == cudaSuccess) return true;
    // Not ready is recorded as the thread's last error too: clear it, or the next plugin call on
    // this thread that checks cudaGetLastError (LibTorch's launch checks) fails for it.
    cudaGetLastError();
    // A query refused because a capture is under way (a plugin's own, on this thread) says
    // nothing about the fence: the slot stays in flight. Any other error counts as done.
    return state != cudaErrorNotReady && !RefusedDuringCapture(state);
  }

  void WaitFence(FenceHandle fence) override {
    if (fence != nullptr && cudaEventSynchronize(static_cast<cudaEvent_t>(fence)) != cudaSuccess) {
      cudaGetLastError();
    }
  }

  void DestroyFence(FenceHandle fence) override {
    if (fence != nullptr) CudaBackend::Instance().GiveEvent(device_.device_id, fence);
  }

 private:
  DLDevice device_;
};

}  // namespace

std::unique_ptr<CaptureBackend> MakeCudaGraphBackend(DLDevice device) {
  return std::make_unique<CudaGraphBackend>(device);
}

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "device/cuda_backend.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace mstar {
namespace {

Status FromCuda(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return Status::Ok();
  std::string message = std::string(what) + ": " + cudaGetErrorString(error);
  cudaGetLastError();  // clear the sticky-free error so later calls are not misattributed
  if (error == cudaErrorMemoryAllocation) return ResourceExhausted(message);
  return Internal(message);
}

// Whether device's primary context exists (the driver's cuDevicePrimaryCtxGetState, from the
// libcuda the CUDA runtime loaded). True when that cannot be asked.
bool HasPrimaryContext(int device) {
  using GetDevice = int (*)(int*, int);
  using GetState = int (*)(int, unsigned int*, int*);
  static const auto driver = [] {
    void* library = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (library == nullptr) return std::pair<GetDevice, GetState>{nullptr, nullptr};
    return std::pair{reinterpret_cast<GetDevice>(dlsym(library, "cuDeviceGet")),
                     reinterpret_cast<GetState>(dlsym(library, "cuDevicePrimaryCtxGetState"))};
  }();
  if (driver.first == nullptr || driver.second == nullptr) return true;
  int handle = 0;
  unsigned int flags = 0;
  int active = 0;
  if (driver.first(&handle, device) != 0 || driver.second(handle, &flags, &active) != 0)
    return true;
  return active != 0;
}

// A copy without a stream is complete when the host's copy returns (memory_copy's promise), but
// cudaMemcpy returns before a copy into device memory has landed (from pageable memory once the
// bytes are staged; between devices at once), and the host's streams are non-blocking, so
// nothing given to them later would wait for it: wait for the legacy stream it ran on. A copy
// into host memory has landed when cudaMemcpy returns.
Status FinishLegacyCopy(DLDevice dst_device) {
  if (dst_device.device_type != kDLCUDA) return Status::Ok();
  return FromCuda(cudaStreamSynchronize(cudaStreamLegacy), "cudaStreamSynchronize");
}

// Runtime captures under way on this thread (CaptureStarting / CaptureEnded).
thread_local int t_captures = 0;

}  // namespace

CudaDeviceScope::~CudaDeviceScope() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

Status CudaDeviceScope::Enter(DLDevice device) {
  if (device.device_type != kDLCUDA) return Status::Ok();
  int current = -1;
  MSTAR_RETURN_IF_ERROR(FromCuda(cudaGetDevice(&current), "cudaGetDevice"));
  if (current == device.device_id) return Status::Ok();
  MSTAR_RETURN_IF_ERROR(FromCuda(cudaSetDevice(device.device_id), "cudaSetDevice"));
  if (HasPrimaryContext(current)) previous_ = current;
  return Status::Ok();
}

int CudaDeviceCount() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return n;
  }();
  return count;
}

CudaBackend& CudaBackend::Instance() {
  // Never destroyed: the host's memory ledger (also never destroyed) may free blocks and fences
  // through it while the process exits.
  static CudaBackend* backend = new CudaBackend();
  return *backend;
}

Result<void*> CudaBackend::Allocate(DLDevice device, uint64_t size, uint64_t alignment) {
  // Device memory comes 256-byte aligned; pinned host memory in whole pages (checked below, as
  // CUDA does not promise it).
  const bool pinned = device.device_type == kDLCUDAHost;
  const uint64_t most = pinned ? 4096 : 256;
  if (alignment > most) {
    return InvalidArgument(std::string(pinned ? "pinned host" : "CUDA device") +
                           " allocations are at most " + std::to_string(most) + "-byte aligned; " +
                           std::to_string(alignment) + " was requested");
  }
  CudaDeviceScope scope;
  MSTAR_RETURN_IF_ERROR(scope.Enter(device));
  void* ptr = nullptr;
  if (cudaError_t error = pinned ? cudaMallocHost(&ptr, size) : cudaMalloc(&ptr, size);
      error != cudaSuccess) {
    // Which device and how much: with several devices and budgets, "out of memory" alone does
    // not say what to change.
    const std::string what = std::string(pinned ? "cudaMallocHost" : "cudaMalloc") + " of " +
                             std::to_string(size) + " bytes on " + DeviceName(device);
    return FromCuda(error, what.c_str());
  }
  if (alignment != 0 && reinterpret_cast<uintptr_t>(ptr) % alignment != 0) {
    Free(device, ptr);
    return InvalidArgument(std::string(pinned ? "cudaMallocHost" : "cudaMalloc") +
                           " returned memory not " + std::to_string(alignment) + "-byte aligned");
  }
  return ptr;
}

void CudaBackend::Free(DLDevice device, void* ptr) {
  if (device.device_type == kDLCUDAHost) {
    cudaFreeHost(ptr);
  } else {
    CudaDeviceScope scope;
    (void)scope.Enter(device);
    cudaFree(ptr);
  }
}

Status CudaBackend::Copy(void* dst, DLDevice dst_device, const void* src, DLDevice src_device,
                         uint64_t size, void* native_stream) {
  if (size == 0) return Status::Ok();
  CudaDeviceScope scope;
  MSTAR_RETURN_IF_ERROR(scope.Enter(dst_device.device_type == kDLCUDA ? dst_device : src_device));
  if (native_stream == nullptr) {
    MSTAR_RETURN_IF_ERROR(FromCuda(cudaMemcpy(dst, src, size, cudaMemcpyDefault), "cudaMemcpy"));
    return FinishLegacyCopy(dst_device);
  }
  return FromCuda(
      cudaMemcpyAsync(dst, src, size, cudaMemcpyDefault, static_cast<cudaStream_t>(native_stream)),
      "cudaMemcpyAsync");
}

Status CudaBackend::Copy2D(void* dst, uint64_t dst_pitch, DLDevice dst_device, const void* src,
                           uint64_t src_pitch, DLDevice src_device, uint64_t width, uint64_t height,
                           void* native_stream) {
  if (width == 0 || height == 0) return Status::Ok();
  // What cudaMemcpy2D refuses and the host's memory_copy_2d allows: a single row (its pitches
  // mean nothing), pitches past the largest CUDA takes (2^31 - 1 bytes on current GPUs).
  constexpr uint64_t kMostPitch = INT32_MAX;
  if (height == 1) return Copy(dst, dst_device, src, src_device, width, native_stream);
  if (dst_pitch > kMostPitch || src_pitch > kMostPitch) {
    return DeviceBackend::Copy2D(dst, dst_pitch, dst_device, src, src_pitch, src_device, width,
                                 height, native_stream);  // a copy per row
  }
  CudaDeviceScope scope;
  MSTAR_RETURN_IF_ERROR(scope.Enter(dst_device.device_type == kDLCUDA ? dst_device : src_device));
  if (native_stream == nullptr) {
    MSTAR_RETURN_IF_ERROR(
        FromCuda(cudaMemcpy2D(dst, dst_pitch, src, src_pitch, width, height, cudaMemcpyDefault),
                 "cudaMemcpy2D"));
    return FinishLegacyCopy(dst_device);
  }
  return FromCuda(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, height,
                                    cudaMemcpyDefault, static_cast<cudaStream_t>(native_stream)),
                  "cudaMemcpy2DAsync");
}

Result<void*> CudaBackend::CreateStream(DLDevice device, int32_t priority) {
  CudaDeviceScope scope;
  MSTAR_RETURN_IF_ERROR(scope.Enter(device));
  cudaStream_t stream = nullptr;
  MSTAR_RETURN_IF_ERROR(FromCuda(
      cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, priority), "cudaStreamCreate"));
  std::lock_guard<std::mutex> lock(mutex_);
  streams_[device.device_id].insert(stream);
  return static_cast<void*>(stream);
}

void CudaBackend::DestroyStream(DLDevice device, void* native_stream) {
  CudaDeviceScope scope;
  (void)scope.Enter(device);
  // Its work finishes before it leaves the set, so a fence recorded without it misses nothing;
  // once out of the set no fence records on it or asks about it.
  cudaStreamSynchronize(static_cast<cudaStream_t>(native_stream));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    streams_[device.device_id].erase(native_stream);
  }
  cudaStreamDestroy(static_cast<cudaStream_t>(native_stream));
}

Status CudaBackend::SynchronizeStream(DLDevice device, void* native_stream) {
  CudaDeviceScope scope;
  MSTAR_RETURN_IF_ERROR(scope.Enter(device));
  return FromCuda(cudaStreamSynchronize(static_cast<cudaStream_t>(native_stream)),
                  "cudaStreamSynchronize");
}

Result<void*> CudaBackend::CreateEvent(DLDevice device) {
  CudaDeviceScope scope;
  MSTAR_RETURN_IF_ERROR(scope.Enter(device));
  cudaEvent_t event = nullptr;
  MSTAR_RETURN_IF_ERROR(
      FromCuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate"));
  return static_cast<void*>(event);
}

void CudaBackend::DestroyEvent(DLDevice device, void* native_event) {
  (void)device;
  cudaEventDestroy(static_cast<cudaEvent_t>(native_event));
}

Status CudaBackend::RecordEvent(DLDevice device, void* native_event, void* native_stream) {
  // The legacy default stream (a null one) is the current device's: the event's device, then.
  CudaDeviceScope scope;
  if (native_stream == nullptr) MSTAR_RETURN_IF_ERROR(scope.Enter(device));
  return FromCuda(cudaEventRecord(static_cast<cudaEvent_t>(native_event),
                                  static_cast<cudaStream_t>(native_stream)),
                  "cudaEventRecord");
}

Status CudaBackend::StreamWaitEvent(void* native_stream, void* native_event) {
  return FromCuda(cudaStreamWaitEvent(static_cast<cudaStream_t>(native_stream),
                                      static_cast<cudaEvent_t>(native_event), 0),
                  "cudaStreamWaitEvent");
}

Result<bool> CudaBackend::QueryEvent(void* native_event) {
  cudaError_t error = cudaEventQuery(static_cast<cudaEvent_t>(native_event));
  if (error == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  MSTAR_RETURN_IF_ERROR(FromCuda(error, "cudaEventQuery"));
  return true;
}

Status CudaBackend::SynchronizeEvent(void* native_event) {
  return FromCuda(cudaEventSynchronize(static_cast<cudaEvent_t>(native_event)),
                  "cudaEventSynchronize");
}

// One event per stream of the device (and one on its default stream), recorded together.
class CudaBackend::Fence final : public DeviceFence {
 public:
  Fence(CudaBackend* backend, int device_id) : backend_(backend), device_id_(device_id) {}
  ~Fence() override {
    for (void* event : events_) backend_->GiveEvent(device_id_, event);
  }
  // Takes events until there is one for each of n streams (before Record, which runs under the
  // backend's lock).
  Status TakeEvents(size_t n) {
    while (events_.size() < n) {
      MSTAR_ASSIGN_OR_RETURN(void* event, backend_->TakeEvent(device_id_));
      events_.push_back(event);
    }
    return Status::Ok();
  }
  size_t events() const { return events_.size(); }
  // Records an event on each of streams (at most events() of them).
  Status Record(const std::vector<void*>& streams) {
    for (size_t i = 0; i < streams.size(); ++i)
      MSTAR_RETURN_IF_ERROR(
          backend_->RecordEvent(DLDevice{kDLCUDA, device_id_}, events_[i], streams[i]));
    recorded_ = streams.size();
    return Status::Ok();
  }
  Result<bool> Done() override {
    if (done_) return true;
    CudaDeviceScope scope;
    MSTAR_RETURN_IF_ERROR(scope.Enter(DLDevice{kDLCUDA, device_id_}));
    // cudaEventQuery is not allowed while the device captures.
    if (backend_->Capturing(device_id_)) return false;
    for (; pending_ < recorded_; ++pending_) {
      MSTAR_ASSIGN_OR_RETURN(bool finished, backend_->QueryEvent(events_[pending_]));
      if (!finished) return false;
    }
    done_ = true;
    return true;
  }

 private:
  CudaBackend* backend_;
  int device_id_;
  std::vector<void*> events_;
  size_t recorded_ = 0;  // events_[< recorded_] were recorded
  size_t pending_ = 0;   // events_[< pending_] have completed
  bool done_ = false;
};

std::vector<void*> CudaBackend::StreamsOfLocked(int device_id) {
  const std::set<void*>& made = streams_[device_id];
  std::vector<void*> streams(made.begin(), made.end());
  streams.push_back(nullptr);  // the default stream
  return streams;
}

bool CudaBackend::CapturingLocked(int device_id) {
  auto it = captures_.find(device_id);
  if (it != captures_.end() && it->second > 0) return true;
  for (void* stream : StreamsOfLocked(device_id)) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &status) != cudaSuccess) {
      cudaGetLastError();
      return true;  // cannot tell: treat as capturing, which only delays reuse
    }
    if (status != cudaStreamCaptureStatusNone) return true;
  }
  return false;
}

bool CudaBackend::Capturing(int device_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  return CapturingLocked(device_id);
}

bool CudaBackend::CapturesOnThisThread() const {
  return t_captures > 0;
}

Result<void*> CudaBackend::TakeEvent(int device_id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<void*>& idle = events_[device_id];
    if (!idle.empty()) {
      void* event = idle.back();
      idle.pop_back();
      return event;
    }
  }
  return CreateEvent(DLDevice{kDLCUDA, device_id});
}

void CudaBackend::GiveEvent(int device_id, void* event) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_[device_id].push_back(event);
}

void CudaBackend::CaptureStarting(int device_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++captures_[device_id];
  ++t_captures;
}

void CudaBackend::CaptureEnded(int device_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  --captures_[device_id];
  --t_captures;
}

Result<std::unique_ptr<DeviceFence>> CudaBackend::RecordFence(DLDevice device) {
  auto unavailable = [&] {
    return Unavailable("a stream of " + DeviceName(device) + " is being captured into a graph");
  };
  CudaDeviceScope scope;
  MSTAR_RETURN_IF_ERROR(scope.Enter(device));
  auto fence = std::make_unique<Fence>(this, device.device_id);
  for (;;) {
    size_t streams_now = 0;
    {
      // Checked before the events are taken, so that a capturing thread makes no other CUDA
      // call here.
      std::lock_guard<std::mutex> lock(mutex_);
      if (CapturingLocked(device.device_id)) return unavailable();
      streams_now = StreamsOfLocked(device.device_id).size();
    }
    MSTAR_RETURN_IF_ERROR(fence->TakeEvents(streams_now));
    // Under the lock CaptureStarting and DestroyStream take: no runtime capture begins (an event
    // would be captured into its graph rather than recorded) and no stream goes while the events
    // are recorded.
    std::lock_guard<std::mutex> lock(mutex_);
    if (CapturingLocked(device.device_id)) return unavailable();
    const std::vector<void*> streams = StreamsOfLocked(device.device_id);
    if (streams.size() > fence->events()) continue;  // a stream was made meanwhile
    MSTAR_RETURN_IF_ERROR(fence->Record(streams));
    return std::unique_ptr<DeviceFence>(std::move(fence));
  }
}

}  // namespace mstar

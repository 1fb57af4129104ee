// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "device/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <string>

namespace mstar {
namespace {

Status FromCuda(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return Status::Ok();
  std::string message = std::string(what) + ": " + cudaGetErrorString(error);
  cudaGetLastError();  // clear the sticky-free error so later calls are not misattributed
  if (error == cudaErrorMemoryAllocation) return ResourceExhausted(message);
  return Internal(message);
}

Status SetDevice(DLDevice device) {
  if (device.device_type != kDLCUDA) return Status::Ok();
  return FromCuda(cudaSetDevice(device.device_id), "cudaSetDevice");
}

}  // namespace

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
  static CudaBackend backend;
  return backend;
}

Result<void*> CudaBackend::Allocate(DLDevice device, uint64_t size, uint64_t alignment) {
  if (alignment > 256) {
    return InvalidArgument("CUDA allocations are 256-byte aligned; " + std::to_string(alignment) +
                           " was requested");
  }
  MSTAR_RETURN_IF_ERROR(SetDevice(device));
  void* ptr = nullptr;
  cudaError_t error =
      device.device_type == kDLCUDAHost ? cudaMallocHost(&ptr, size) : cudaMalloc(&ptr, size);
  MSTAR_RETURN_IF_ERROR(
      FromCuda(error, device.device_type == kDLCUDAHost ? "cudaMallocHost" : "cudaMalloc"));
  return ptr;
}

void CudaBackend::Free(DLDevice device, void* ptr) {
  if (device.device_type == kDLCUDAHost) {
    cudaFreeHost(ptr);
  } else {
    (void)SetDevice(device);
    cudaFree(ptr);
  }
}

Status CudaBackend::Copy(void* dst, DLDevice dst_device, const void* src, DLDevice src_device,
                         uint64_t size, void* native_stream) {
  if (size == 0) return Status::Ok();
  MSTAR_RETURN_IF_ERROR(SetDevice(dst_device.device_type == kDLCUDA ? dst_device : src_device));
  if (native_stream == nullptr) {
    return FromCuda(cudaMemcpy(dst, src, size, cudaMemcpyDefault), "cudaMemcpy");
  }
  return FromCuda(
      cudaMemcpyAsync(dst, src, size, cudaMemcpyDefault, static_cast<cudaStream_t>(native_stream)),
      "cudaMemcpyAsync");
}

Status CudaBackend::Copy2D(void* dst, uint64_t dst_pitch, DLDevice dst_device, const void* src,
                           uint64_t src_pitch, DLDevice src_device, uint64_t width, uint64_t height,
                           void* native_stream) {
  if (width == 0 || height == 0) return Status::Ok();
  MSTAR_RETURN_IF_ERROR(SetDevice(dst_device.device_type == kDLCUDA ? dst_device : src_device));
  if (native_stream == nullptr) {
    return FromCuda(cudaMemcpy2D(dst, dst_pitch, src, src_pitch, width, height, cudaMemcpyDefault),
                    "cudaMemcpy2D");
  }
  return FromCuda(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, height,
                                    cudaMemcpyDefault, static_cast<cudaStream_t>(native_stream)),
                  "cudaMemcpy2DAsync");
}

Result<void*> CudaBackend::CreateStream(DLDevice device, int32_t priority) {
  MSTAR_RETURN_IF_ERROR(SetDevice(device));
  cudaStream_t stream = nullptr;
  MSTAR_RETURN_IF_ERROR(FromCuda(
      cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, priority), "cudaStreamCreate"));
  return static_cast<void*>(stream);
}

void CudaBackend::DestroyStream(DLDevice device, void* native_stream) {
  (void)SetDevice(device);
  cudaStreamSynchronize(static_cast<cudaStream_t>(native_stream));
  cudaStreamDestroy(static_cast<cudaStream_t>(native_stream));
}

Status CudaBackend::SynchronizeStream(DLDevice device, void* native_stream) {
  MSTAR_RETURN_IF_ERROR(SetDevice(device));
  return FromCuda(cudaStreamSynchronize(static_cast<cudaStream_t>(native_stream)),
                  "cudaStreamSynchronize");
}

Result<void*> CudaBackend::CreateEvent(DLDevice device) {
  MSTAR_RETURN_IF_ERROR(SetDevice(device));
  cudaEvent_t event = nullptr;
  MSTAR_RETURN_IF_ERROR(
      FromCuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate"));
  return static_cast<void*>(event);
}

void CudaBackend::DestroyEvent(DLDevice device, void* native_event) {
  (void)device;
  cudaEventDestroy(static_cast<cudaEvent_t>(native_event));
}

Status CudaBackend::RecordEvent(void* native_event, void* native_stream) {
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

}  // namespace mstar

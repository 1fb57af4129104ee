// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "device/device.h"

#include <atomic>

#include "device/cpu_backend.h"
#if MSTAR_WITH_CUDA
#include "device/cuda_backend.h"
#endif

namespace mstar {

std::string DeviceName(DLDevice device) {
  switch (device.device_type) {
    case kDLCPU: return "cpu";
    case kDLCUDAHost: return "cuda_host";
    case kDLCUDA: return "cuda:" + std::to_string(device.device_id);
    default: break;
  }
  return "device_type_" + std::to_string(static_cast<int>(device.device_type)) + ":" +
         std::to_string(device.device_id);
}

Status DeviceBackend::Copy2D(void* dst, uint64_t dst_pitch, DLDevice dst_device, const void* src,
                             uint64_t src_pitch, DLDevice src_device, uint64_t width,
                             uint64_t height, void* native_stream) {
  for (uint64_t row = 0; row < height; ++row) {
    MSTAR_RETURN_IF_ERROR(Copy(static_cast<uint8_t*>(dst) + row * dst_pitch, dst_device,
                               static_cast<const uint8_t*>(src) + row * src_pitch, src_device,
                               width, native_stream));
  }
  return Status::Ok();
}

bool IsHostDevice(DLDevice device) {
  return device.device_type == kDLCPU || device.device_type == kDLCUDAHost;
}

bool SameDevice(DLDevice a, DLDevice b) {
  return a.device_type == b.device_type && a.device_id == b.device_id;
}

namespace {

std::atomic<DeviceBackend*> host_backend_for_testing{nullptr};

DeviceBackend* HostBackend() {
  static CpuBackend cpu;
  DeviceBackend* replaced = host_backend_for_testing.load(std::memory_order_acquire);
  return replaced != nullptr ? replaced : &cpu;
}

}  // namespace

void SetHostBackendForTesting(DeviceBackend* backend) {
  host_backend_for_testing.store(backend, std::memory_order_release);
}

Result<DeviceBackend*> BackendFor(DLDevice device) {
  switch (device.device_type) {
    case kDLCPU: return HostBackend();
#if MSTAR_WITH_CUDA
    case kDLCUDAHost:
      if (CudaDeviceCount() == 0) return HostBackend();
      return static_cast<DeviceBackend*>(&CudaBackend::Instance());
    case kDLCUDA:
      if (device.device_id < 0 || device.device_id >= CudaDeviceCount()) {
        return NotFound("no such CUDA device: " + DeviceName(device) + " (" +
                        std::to_string(CudaDeviceCount()) + " visible)");
      }
      return static_cast<DeviceBackend*>(&CudaBackend::Instance());
#else
    case kDLCUDAHost: return HostBackend();
    case kDLCUDA:
      return Unsupported("device " + DeviceName(device) +
                         " needs a CUDA build (configure with MSTAR_WITH_CUDA=ON)");
#endif
    default: break;
  }
  return Unsupported("device type " + DeviceName(device) + " is not supported by this runtime");
}

#if !MSTAR_WITH_CUDA
int CudaDeviceCount() {
  return 0;
}
#endif

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "capture/static_buffers.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "device/device.h"

namespace mstar {

std::vector<int64_t> ShapeOf(const DLTensor& t) {
  return std::vector<int64_t>(t.shape, t.shape + t.ndim);
}

std::string ShapeText(const DLTensor& t) {
  return fmt::format("[{}]", fmt::join(t.shape, t.shape + t.ndim, ","));
}

bool SameType(const DLTensor& a, const DLTensor& b) {
  return a.dtype.code == b.dtype.code && a.dtype.bits == b.dtype.bits &&
         a.dtype.lanes == b.dtype.lanes && SameDevice(a.device, b.device);
}

Status CopyRange(const DLTensor& dst, uint64_t dst_offset, const DLTensor& src, uint64_t src_offset,
                 uint64_t bytes, void* native_stream) {
  if (bytes == 0) return Status::Ok();
  DLDevice device = IsHostDevice(dst.device) ? src.device : dst.device;
  MSTAR_ASSIGN_OR_RETURN(DeviceBackend * backend, BackendFor(device));
  return backend->Copy(TensorBytes(dst) + dst_offset, dst.device, TensorBytes(src) + src_offset,
                       src.device, bytes, native_stream);
}

Status FillUnstable(const mstar_tensor_map& map, uint8_t value) {
  for (const mstar_tensor_map::Entry& entry : map.entries()) {
    for (const mstar_tensor_t* tensor : entry.tensors) {
      if (IsStable(tensor)) continue;  // not the slot's: shared with every step
      if (!IsHostDevice(tensor->dl.device)) return Unsupported("filling a device buffer");
      std::memset(TensorBytes(tensor->dl), value, TensorNumBytes(tensor->dl));
    }
  }
  return Status::Ok();
}

}  // namespace mstar

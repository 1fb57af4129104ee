// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// LibTorch <-> mstar tensors, for plugins that use LibTorch. Conversions share memory; nothing
// is copied.
//   ToTorch(host, view)  an at::Tensor over a host tensor's memory. When the tensor is
//                        host-managed (anything from a host map) the at::Tensor holds a reference,
//                        so it may outlive the call; otherwise it is valid only for the call.
//                        Do not write through it when view.read_only().
//   FromTorch(tensor)    an owned mstar tensor keeping the at::Tensor alive until its deleter.
// Compiles against LibTorch 1.13 and 2.x.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "mstar/sdk/error.hpp"
#include "mstar/sdk/tensor.hpp"

namespace mstar::sdk {

inline at::ScalarType ToScalarType(DLDataType t) {
  if (t.lanes != 1) throw InvalidArgument("vector dtypes have no LibTorch equivalent");
  switch (t.code) {
    case kDLFloat:
      if (t.bits == 32) return at::kFloat;
      if (t.bits == 64) return at::kDouble;
      if (t.bits == 16) return at::kHalf;
      break;
    case kDLBfloat:
      if (t.bits == 16) return at::kBFloat16;
      break;
    case kDLInt:
      if (t.bits == 8) return at::kChar;
      if (t.bits == 16) return at::kShort;
      if (t.bits == 32) return at::kInt;
      if (t.bits == 64) return at::kLong;
      break;
    case kDLUInt:
      if (t.bits == 8) return at::kByte;
      break;
    case kDLBoolCode:
      if (t.bits == 8) return at::kBool;
      break;
    default: break;
  }
  throw InvalidArgument("dtype " + DTypeName(t) + " has no LibTorch equivalent");
}

inline DLDataType FromScalarType(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return {kDLFloat, 32, 1};
    case at::kDouble: return {kDLFloat, 64, 1};
    case at::kHalf: return {kDLFloat, 16, 1};
    case at::kBFloat16: return {kDLBfloat, 16, 1};
    case at::kChar: return {kDLInt, 8, 1};
    case at::kShort: return {kDLInt, 16, 1};
    case at::kInt: return {kDLInt, 32, 1};
    case at::kLong: return {kDLInt, 64, 1};
    case at::kByte: return {kDLUInt, 8, 1};
    case at::kBool: return {kDLBoolCode, 8, 1};
    default: break;
  }
  throw InvalidArgument(std::string("LibTorch dtype ") + c10::toString(t) +
                        " cannot cross the ABI");
}

inline at::Device ToTorchDevice(DLDevice d) {
  switch (d.device_type) {
    case kDLCPU:
    case kDLCUDAHost: return at::Device(at::kCPU);
    case kDLCUDA: return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(d.device_id));
    default: break;
  }
  throw InvalidArgument("device type " + std::to_string(static_cast<int>(d.device_type)) +
                        " has no LibTorch equivalent");
}

inline DLDevice FromTorchDevice(const at::Device& d) {
  if (d.is_cpu()) return DLDevice{kDLCPU, 0};
  if (d.is_cuda()) return DLDevice{kDLCUDA, d.index() < 0 ? 0 : d.index()};
  throw InvalidArgument("LibTorch device " + d.str() + " cannot cross the ABI");
}

inline at::Tensor ToTorch(const mstar_host_api_t* host, const TensorView& view) {
  const DLTensor& dl = view.dl();
  std::vector<int64_t> sizes(dl.shape, dl.shape + dl.ndim);
  std::vector<int64_t> strides(dl.strides, dl.strides + dl.ndim);
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  auto options = at::TensorOptions().dtype(ToScalarType(dl.dtype)).device(ToTorchDevice(dl.device));
  mstar_tensor_t* reference = nullptr;
  if (mstar_status_t* not_shared = host->tensor_share(view.raw(), &reference)) {
    // Not host-managed: a view valid for this call only.
    host->status_release(not_shared);
    return at::from_blob(data, sizes, strides, options);
  }
  const mstar_host_api_t* owner = host;
  return at::from_blob(
      data, sizes, strides, [owner, reference](void*) { owner->tensor_release(reference); },
      options);
}

namespace detail {

struct TorchHolder {
  at::Tensor tensor;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  mstar_tensor_t view;
};

inline void DeleteTorchHolder(mstar_tensor_t* self) {
  delete static_cast<TorchHolder*>(self->manager_ctx);
}

}  // namespace detail

inline Tensor FromTorch(at::Tensor tensor) {
  auto* holder = new detail::TorchHolder();
  holder->tensor = std::move(tensor);
  const at::Tensor& t = holder->tensor;
  holder->shape.assign(t.sizes().begin(), t.sizes().end());
  holder->strides.assign(t.strides().begin(), t.strides().end());
  mstar_tensor_t& v = holder->view;
  v = mstar_tensor_t{};
  v.struct_size = sizeof(mstar_tensor_t);
  v.struct_version = MSTAR_TENSOR_VERSION;
  v.dlpack_major = MSTAR_DLPACK_MAJOR;
  v.dlpack_minor = MSTAR_DLPACK_MINOR;
  v.flags = 0;
  try {
    v.dl.dtype = FromScalarType(t.scalar_type());
    v.dl.device = FromTorchDevice(t.device());
  } catch (...) {
    delete holder;
    throw;
  }
  v.dl.data = t.numel() == 0 ? nullptr : t.data_ptr();
  v.dl.ndim = static_cast<int32_t>(t.dim());
  v.dl.shape = holder->shape.data();
  v.dl.strides = holder->strides.data();
  v.dl.byte_offset = 0;
  v.manager_ctx = holder;
  v.deleter = &detail::DeleteTorchHolder;
  return Tensor(&holder->view);
}

}  // namespace mstar::sdk

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// LibTorch <-> mstar tensors, for plugins that use LibTorch. Conversions share memory; only
// FromTorch of a non-contiguous tensor copies.
//   ToTorch(host, view)  an at::Tensor over a host tensor's memory. When the tensor is
//                        host-managed (anything from a host map) the at::Tensor holds a reference,
//                        so it may outlive the call; otherwise it is valid only for the call.
//                        Throws Error when the host cannot make that reference (out of
//                        memory). Do not write through it when view.read_only().
//   FromTorch(tensor)    an owned mstar tensor keeping the at::Tensor alive until its deleter.
//                        Host maps take only compact tensors (mstar/tensor.h), so a strided or
//                        expanded view is first copied with .contiguous() (on the current
//                        LibTorch stream); a contiguous tensor is taken as it is.
// Compiles against LibTorch 1.13 and 2.x.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <memory>
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
  const at::Device device = ToTorchDevice(dl.device);
  auto options = at::TensorOptions().dtype(ToScalarType(dl.dtype)).device(device);
  // No elements, no data to keep alive: LibTorch never calls a blob's deleter for an empty
  // tensor, so a shared reference would leak.
  if (std::find(sizes.begin(), sizes.end(), int64_t{0}) != sizes.end())
    return at::empty(sizes, options);
  // The device is given, so LibTorch does not ask CUDA where the pointer lives (a call per
  // tensor, and one that fails for an empty tensor's null data).
  at::TensorMaker maker = at::for_blob(data, sizes);
  maker.strides(strides).options(options).target_device(device);
  mstar_tensor_t* reference = nullptr;
  if (mstar_status_t* not_shared = host->tensor_share(view.raw(), &reference)) {
    // INVALID_ARGUMENT: not host-managed, so a view valid for this call only. Any other error
    // (the host out of memory) throws: a view without its reference could outlive the storage.
    if (host->status_code(not_shared) != MSTAR_ERR_INVALID_ARGUMENT) Check(host, not_shared);
    host->status_release(not_shared);
  } else {
    const mstar_host_api_t* owner = host;
    maker.deleter([owner, reference](void*) { owner->tensor_release(reference); });
  }
  return maker.make_tensor();
}

// A LibTorch tensor described as an mstar_tensor_t without taking ownership: view() is valid
// while this object and the tensor live (no deleter). For host services that borrow their tensor
// arguments, such as comm_all_reduce on a tensor the plugin keeps using.
class TorchView {
 public:
  explicit TorchView(const at::Tensor& t)
      : shape_(t.sizes().begin(), t.sizes().end()),
        strides_(t.strides().begin(), t.strides().end()) {
    view_.struct_size = sizeof(mstar_tensor_t);
    view_.struct_version = MSTAR_TENSOR_VERSION;
    view_.dlpack_major = MSTAR_DLPACK_MAJOR;
    view_.dlpack_minor = MSTAR_DLPACK_MINOR;
    view_.dl.dtype = FromScalarType(t.scalar_type());
    view_.dl.device = FromTorchDevice(t.device());
    view_.dl.data = t.numel() == 0 ? nullptr : t.data_ptr();
    view_.dl.ndim = static_cast<int32_t>(t.dim());
    view_.dl.shape = shape_.data();
    view_.dl.strides = strides_.data();
  }
  TorchView(const TorchView&) = delete;
  TorchView& operator=(const TorchView&) = delete;

  mstar_tensor_t* view() { return &view_; }

 private:
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  mstar_tensor_t view_{};
};

namespace detail {

// A tensor kept alive by the mstar_tensor_t that describes it.
struct TorchHolder {
  explicit TorchHolder(at::Tensor t) : tensor(std::move(t)), described(tensor) {}
  at::Tensor tensor;
  TorchView described;
};

inline void DeleteTorchHolder(mstar_tensor_t* self) {
  delete static_cast<TorchHolder*>(self->manager_ctx);
}

}  // namespace detail

inline Tensor FromTorch(const at::Tensor& tensor) {
  auto holder = std::make_unique<detail::TorchHolder>(tensor.contiguous());
  mstar_tensor_t* v = holder->described.view();
  v->manager_ctx = holder.get();
  v->deleter = &detail::DeleteTorchHolder;
  holder.release();  // the view's deleter frees it
  return Tensor(v);
}

}  // namespace mstar::sdk

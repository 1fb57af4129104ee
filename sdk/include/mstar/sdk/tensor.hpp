// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Tensors and tensor maps in plugin code.
//   Tensor        owns one mstar_tensor_t (deleted exactly once, by the destructor or by handing
//                 it to a map with release()).
//   TensorView    a borrowed const tensor (from an input map); valid while the map is unchanged.
//   TensorMapView a borrowed read-only map (inputs, host copies for stop checks).
//   TensorMapRef  a borrowed writable map the host provided (outputs, prepared inputs).
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "mstar/sdk/error.hpp"

namespace mstar::sdk {

// DLPack's type code for booleans (kDLBool in DLPack 0.8 and later).
inline constexpr uint8_t kDLBoolCode = 6;

template <typename T>
constexpr DLDataType DTypeOf() {
  if constexpr (std::is_same_v<T, bool>) {
    return DLDataType{kDLBoolCode, 8, 1};
  } else if constexpr (std::is_floating_point_v<T>) {
    return DLDataType{kDLFloat, static_cast<uint8_t>(sizeof(T) * 8), 1};
  } else if constexpr (std::is_signed_v<T>) {
    return DLDataType{kDLInt, static_cast<uint8_t>(sizeof(T) * 8), 1};
  } else {
    return DLDataType{kDLUInt, static_cast<uint8_t>(sizeof(T) * 8), 1};
  }
}

inline bool SameDType(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

inline std::string DTypeName(DLDataType t) {
  const char* base = t.code == kDLInt        ? "int"
                     : t.code == kDLUInt     ? "uint"
                     : t.code == kDLFloat    ? "float"
                     : t.code == kDLBfloat   ? "bfloat"
                     : t.code == kDLBoolCode ? "bool"
                                             : "dtype";
  std::string name = base;
  name += std::to_string(t.bits);
  if (t.lanes > 1) {
    name += 'x';
    name += std::to_string(t.lanes);
  }
  return name;
}

inline constexpr DLDevice kCpu{kDLCPU, 0};

// Shared accessors over a const mstar_tensor_t.
class TensorView {
 public:
  TensorView() = default;
  explicit TensorView(const mstar_tensor_t* tensor) : tensor_(tensor) {}

  bool valid() const { return tensor_ != nullptr; }
  const mstar_tensor_t* raw() const { return tensor_; }
  const DLTensor& dl() const { return tensor_->dl; }
  int32_t ndim() const { return tensor_->dl.ndim; }
  int64_t size(int32_t dim) const { return tensor_->dl.shape[dim < 0 ? dim + ndim() : dim]; }
  std::vector<int64_t> shape() const {
    return std::vector<int64_t>(tensor_->dl.shape, tensor_->dl.shape + tensor_->dl.ndim);
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int32_t i = 0; i < ndim(); ++i) n *= tensor_->dl.shape[i];
    return n;
  }
  DLDataType dtype() const { return tensor_->dl.dtype; }
  DLDevice device() const { return tensor_->dl.device; }
  bool read_only() const { return (tensor_->flags & MSTAR_TENSOR_FLAG_READ_ONLY) != 0; }
  // As the host judges it: a tensor of no elements is contiguous whatever its strides.
  bool contiguous() const {
    for (int32_t i = 0; i < ndim(); ++i) {
      if (tensor_->dl.shape[i] == 0) return true;
    }
    int64_t expected = 1;
    for (int32_t i = ndim(); i-- > 0;) {
      if (tensor_->dl.shape[i] != 1 && tensor_->dl.strides[i] != expected) return false;
      expected *= tensor_->dl.shape[i];
    }
    return true;
  }

  // Typed pointer to the first element; checks the dtype.
  template <typename T>
  const T* data() const {
    CheckDType<T>();
    return reinterpret_cast<const T*>(static_cast<const char*>(tensor_->dl.data) +
                                      tensor_->dl.byte_offset);
  }

  // Throws INVALID_ARGUMENT unless the tensor is a contiguous host tensor of T.
  template <typename T>
  void RequireHost(std::string_view what) const {
    CheckDType<T>(what);
    if (device().device_type != kDLCPU && device().device_type != kDLCUDAHost) {
      throw InvalidArgument(std::string(what) + " must be in host memory");
    }
    if (!contiguous()) throw InvalidArgument(std::string(what) + " must be contiguous");
  }

  // RequireHost<T>, and the tensor is 1-D and not empty (a token list, a sample run).
  template <typename T>
  void RequireHostVector(std::string_view what) const {
    RequireHost<T>(what);
    if (ndim() != 1 || numel() == 0)
      throw InvalidArgument(std::string(what) + " must be 1-D and not empty");
  }

 protected:
  template <typename T>
  void CheckDType(std::string_view what = "tensor") const {
    if (!SameDType(dtype(), DTypeOf<T>())) {
      throw InvalidArgument(std::string(what) + " has dtype " + DTypeName(dtype()) + ", expected " +
                            DTypeName(DTypeOf<T>()));
    }
  }

  const mstar_tensor_t* tensor_ = nullptr;
};

// An owned tensor.
class Tensor : public TensorView {
 public:
  Tensor() = default;
  // Takes ownership of tensor.
  explicit Tensor(mstar_tensor_t* tensor) : TensorView(tensor) {}
  Tensor(Tensor&& other) noexcept : TensorView(other.tensor_) { other.tensor_ = nullptr; }
  Tensor& operator=(Tensor&& other) noexcept {
    if (this != &other) {
      reset();
      tensor_ = other.tensor_;
      other.tensor_ = nullptr;
    }
    return *this;
  }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  ~Tensor() { reset(); }

  // A new contiguous tensor in host-accounted memory.
  static Tensor Alloc(const mstar_host_api_t* host, mstar_host_context_t* context, DLDevice device,
                      DLDataType dtype, const std::vector<int64_t>& shape) {
    mstar_tensor_t* out = nullptr;
    Check(host, host->tensor_alloc(context, device, dtype, static_cast<int32_t>(shape.size()),
                                   shape.data(), &out));
    return Tensor(out);
  }
  // A host tensor of T holding values, of shape (default: 1-D); throws INVALID_ARGUMENT when
  // the shape does not hold exactly values.size() elements.
  template <typename T>
  static Tensor FromVector(const mstar_host_api_t* host, mstar_host_context_t* context,
                           const std::vector<T>& values, std::vector<int64_t> shape = {}) {
    if (shape.empty()) shape = {static_cast<int64_t>(values.size())};
    uint64_t elements = 1;
    for (int64_t d : shape) {
      if (d < 0 || (d != 0 && elements > UINT64_MAX / static_cast<uint64_t>(d))) {
        elements = UINT64_MAX;
        break;
      }
      elements *= static_cast<uint64_t>(d);
    }
    if (elements != values.size()) {
      throw InvalidArgument("FromVector: a shape of " + std::to_string(shape.size()) +
                            " dimensions holding " + std::to_string(elements) + " elements for " +
                            std::to_string(values.size()) + " values");
    }
    Tensor t = Alloc(host, context, kCpu, DTypeOf<T>(), shape);
    if (!values.empty()) std::memcpy(t.mutable_data<T>(), values.data(), values.size() * sizeof(T));
    return t;
  }
  // A new reference to a host-managed tensor's storage (inputs from maps are host-managed).
  static Tensor Share(const mstar_host_api_t* host, TensorView view) {
    mstar_tensor_t* out = nullptr;
    Check(host, host->tensor_share(view.raw(), &out));
    return Tensor(out);
  }

  template <typename T>
  T* mutable_data() {
    CheckDType<T>();
    if (read_only()) throw InvalidArgument("tensor is read-only");
    return reinterpret_cast<T*>(static_cast<char*>(tensor_->dl.data) + tensor_->dl.byte_offset);
  }

  // Sets MSTAR_TENSOR_FLAG_* bits on this reference (e.g. MSTAR_TENSOR_FLAG_STABLE on a pool
  // handed to every step).
  void add_flags(uint64_t flags) { const_cast<mstar_tensor_t*>(tensor_)->flags |= flags; }

  // Gives up ownership (to a map, or to the host).
  mstar_tensor_t* release() {
    auto* out = const_cast<mstar_tensor_t*>(tensor_);
    tensor_ = nullptr;
    return out;
  }
  void reset() {
    auto* t = const_cast<mstar_tensor_t*>(tensor_);
    tensor_ = nullptr;
    if (t != nullptr && t->deleter != nullptr) t->deleter(t);
  }
};

// A borrowed read-only tensor map.
class TensorMapView {
 public:
  TensorMapView(const mstar_host_api_t* host, const mstar_tensor_map_t* map)
      : host_(host), map_(map) {}

  uint32_t num_names() const { return host_->tensor_map_num_names(map_); }
  std::string name_at(uint32_t i) const {
    const char* n = host_->tensor_map_name_at(map_, i);
    return n == nullptr ? std::string() : std::string(n);
  }
  uint32_t count(const char* name) const { return host_->tensor_map_count(map_, name); }
  bool contains(const char* name) const { return count(name) > 0; }
  // The index-th tensor under name, or an invalid view.
  TensorView get(const char* name, uint32_t index = 0) const {
    return TensorView(host_->tensor_map_get(map_, name, index));
  }
  // Like get, but throws NOT_FOUND naming the tensor and what the map holds (a map of step
  // outputs given to check_stop holds only the node's stop_outputs).
  TensorView require(const char* name, uint32_t index = 0) const {
    TensorView v = get(name, index);
    if (!v.valid()) {
      std::string held;
      for (uint32_t i = 0; i < num_names(); ++i) held += (i == 0 ? "" : ", ") + name_at(i);
      throw NotFound("missing tensor '" + std::string(name) + "'" +
                     (index > 0 ? " #" + std::to_string(index) : std::string()) +
                     " (the map holds " + (held.empty() ? std::string("nothing") : held) + ")");
    }
    return v;
  }
  const mstar_tensor_map_t* raw() const { return map_; }

 protected:
  const mstar_host_api_t* host_;
  const mstar_tensor_map_t* map_;
};

// A borrowed writable tensor map.
class TensorMapRef : public TensorMapView {
 public:
  TensorMapRef(const mstar_host_api_t* host, mstar_tensor_map_t* map)
      : TensorMapView(host, map), mutable_map_(map) {}

  // Appends tensor under name; the map takes ownership.
  void append(const char* name, Tensor tensor) {
    Check(host_, host_->tensor_map_append(mutable_map_, name, tensor.release()));
  }
  uint32_t remove(const char* name) { return host_->tensor_map_remove(mutable_map_, name); }
  mstar_tensor_map_t* raw_mutable() const { return mutable_map_; }

 private:
  mstar_tensor_map_t* mutable_map_;
};

// An owned tensor map (a region's inputs or outputs, say): a host map, released with its tensors
// when the object goes.
class TensorMap {
 public:
  explicit TensorMap(const mstar_host_api_t* host) : host_(host) {
    Check(host, host->tensor_map_new(&map_));
  }
  TensorMap(const TensorMap&) = delete;
  TensorMap& operator=(const TensorMap&) = delete;
  ~TensorMap() { host_->tensor_map_release(map_); }

  TensorMapRef ref() const { return TensorMapRef(host_, map_); }
  TensorMapView view() const { return TensorMapView(host_, map_); }

 private:
  const mstar_host_api_t* host_;
  mstar_tensor_map_t* map_ = nullptr;
};

}  // namespace mstar::sdk

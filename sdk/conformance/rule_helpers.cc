// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Helpers every rule shares (rule_context.h): creating the subject's instances, failing on a
// status, small host tensors, and comparing output maps.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "device/device.h"
#include "memory_tier.h"
#include "rule_context.h"

namespace mstar::conformance {

std::unique_ptr<PluginInstance> Subject::Create(const std::string& name) const {
  InstanceOptions options;
  options.name = name;
  options.config = settings.config;
  if (factory->kind == MSTAR_KIND_RESOURCE && settings.tiers)
    options.tiers.push_back(SuiteMemoryTier());
  Result<std::unique_ptr<PluginInstance>> instance = PluginInstance::Create(ref(), options);
  if (!instance.ok()) {
    throw RuleStop{Verdict::kFail,
                   "cannot create an instance with the conformance config (" +
                       instance.status().message() +
                       "); give a working config in --config [factories." + factory->name +
                       "].config, or skip the factory there (skip = \"reason\")",
                   /*no_instance=*/true};
  }
  return std::move(instance).value();
}

void RequireOk(const Status& status, const std::string& what) {
  if (!status.ok()) Fail(what + ": " + status.ToString());
}

mstar_tensor_t* Int64Tensor(const std::vector<int64_t>& values) {
  Result<mstar_tensor_t*> t =
      AllocateTensor(nullptr, DLDevice{kDLCPU, 0}, DLDataType{kDLInt, 64, 1},
                     {static_cast<int64_t>(values.size())});
  MSTAR_CHECK(t.ok());
  std::memcpy(t.value()->dl.data, values.data(), values.size() * sizeof(int64_t));
  return t.value();
}

mstar_tensor_t* Float32Tensor(const std::vector<double>& values) {
  Result<mstar_tensor_t*> t =
      AllocateTensor(nullptr, DLDevice{kDLCPU, 0}, DLDataType{kDLFloat, 32, 1},
                     {static_cast<int64_t>(values.size())});
  MSTAR_CHECK(t.ok());
  auto* data = static_cast<float*>(t.value()->dl.data);
  for (size_t i = 0; i < values.size(); ++i) data[i] = static_cast<float>(values[i]);
  return t.value();
}

namespace {

// Whether two float32 tensors of the same shape agree within tolerance (see SameMaps).
bool CloseFloats(const DLTensor& x, const DLTensor& y, double tolerance) {
  const auto* p = reinterpret_cast<const float*>(static_cast<const char*>(x.data) + x.byte_offset);
  const auto* q = reinterpret_cast<const float*>(static_cast<const char*>(y.data) + y.byte_offset);
  const size_t n = TensorNumBytes(x) / sizeof(float);
  double scale = 1;
  for (size_t i = 0; i < n; ++i)
    scale = std::max({scale, std::fabs(double{p[i]}), std::fabs(double{q[i]})});
  for (size_t i = 0; i < n; ++i) {
    if (!(std::fabs(double{p[i]} - double{q[i]}) <= tolerance * scale)) return false;
  }
  return true;
}

// "int64 [3, 1]": a tensor's dtype and shape, for messages (built by appending).
std::string DescribeTensor(const DLTensor& t) {
  std::string out = t.dtype.code == kDLInt     ? "int"
                    : t.dtype.code == kDLUInt  ? "uint"
                    : t.dtype.code == kDLFloat ? "float"
                                               : "dtype";
  out += std::to_string(t.dtype.bits);
  out += " [";
  for (int32_t d = 0; d < t.ndim; ++d) {
    if (d > 0) out += ", ";
    out += std::to_string(t.shape[d]);
  }
  out += "]";
  return out;
}

}  // namespace

bool SameMaps(const mstar_tensor_map& a, const mstar_tensor_map& b, std::string* why,
              double tolerance) {
  if (a.entries().size() != b.entries().size()) {
    *why = std::to_string(a.entries().size()) + " outputs vs " + std::to_string(b.entries().size());
    return false;
  }
  for (const auto& entry : a.entries()) {
    const mstar_tensor_map::Entry* other = b.Find(entry.name);
    if (other == nullptr || other->tensors.size() != entry.tensors.size()) {
      *why = "output '" + entry.name + "' is missing or has another count";
      return false;
    }
    for (size_t i = 0; i < entry.tensors.size(); ++i) {
      const DLTensor& x = entry.tensors[i]->dl;
      const DLTensor& y = other->tensors[i]->dl;
      bool same_shape =
          x.ndim == y.ndim && x.dtype.code == y.dtype.code && x.dtype.bits == y.dtype.bits &&
          std::equal(x.shape, x.shape + x.ndim, y.shape) && TensorNumBytes(x) == TensorNumBytes(y);
      if (!same_shape) {
        *why = "output '" + entry.name + "' differs in dtype or shape: " + DescribeTensor(x) +
               " vs " + DescribeTensor(y);
        return false;
      }
      const bool approximate = tolerance > 0 && x.dtype.code == kDLFloat && x.dtype.bits == 32 &&
                               x.dtype.lanes == 1 && IsHostDevice(x.device);
      bool same = TensorNumBytes(x) == 0 ||
                  (approximate ? CloseFloats(x, y, tolerance)
                               : std::memcmp(static_cast<const char*>(x.data) + x.byte_offset,
                                             static_cast<const char*>(y.data) + y.byte_offset,
                                             TensorNumBytes(x)) == 0);
      if (!same) {
        *why = "output '" + entry.name + "' differs" +
               (approximate ? " by more than the tolerance " + std::to_string(tolerance)
                            : std::string(" in its bytes"));
        return false;
      }
    }
  }
  return true;
}

}  // namespace mstar::conformance

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "capture/padded_inputs.h"

#include "capture/static_buffers.h"

namespace mstar {
namespace {

bool SameLayout(const DLTensor& a, const DLTensor& b) {
  return SameType(a, b) && ShapeOf(a) == ShapeOf(b);
}

// Copies src's bytes into dst (same layout; both compact: src is a map tensor, which passed
// ValidateTensor, and dst comes from AllocateTensor).
Status CopyBytes(const mstar_tensor_t* dst, const mstar_tensor_t* src, void* native_stream) {
  return CopyRange(dst->dl, 0, src->dl, 0, TensorNumBytes(src->dl), native_stream);
}

}  // namespace

Result<TensorMapPtr> CopyTensorMap(const mstar_tensor_map& map, void* native_stream,
                                   bool share_stable) {
  TensorMapPtr copy = NewTensorMap();
  for (const mstar_tensor_map::Entry& entry : map.entries()) {
    for (const mstar_tensor_t* tensor : entry.tensors) {
      if (share_stable && IsStable(tensor)) {
        MSTAR_ASSIGN_OR_RETURN(mstar_tensor_t * shared, ShareTensor(tensor));
        MSTAR_RETURN_IF_ERROR(copy->Append(entry.name, shared));
        continue;
      }
      MSTAR_ASSIGN_OR_RETURN(
          mstar_tensor_t * fresh,
          AllocateTensor(nullptr, tensor->dl.device, tensor->dl.dtype, ShapeOf(tensor->dl)));
      Status copied = CopyBytes(fresh, tensor, native_stream);
      if (!copied.ok()) {
        ReleaseTensor(fresh);
        return copied;
      }
      MSTAR_RETURN_IF_ERROR(copy->Append(entry.name, fresh));
    }
  }
  return copy;
}

Status PaddedInputs::Init(const std::vector<const mstar_tensor_map*>& templates) {
  templates_.clear();
  rows_.clear();
  for (const mstar_tensor_map* row_template : templates) {
    MSTAR_ASSIGN_OR_RETURN(TensorMapPtr kept, CopyTensorMap(*row_template, nullptr, true));
    MSTAR_ASSIGN_OR_RETURN(TensorMapPtr buffers, CopyTensorMap(*row_template, nullptr, true));
    templates_.push_back(std::move(kept));
    rows_.push_back(std::move(buffers));
  }
  return Status::Ok();
}

std::string PaddedInputs::Mismatch(uint32_t row, const mstar_tensor_map& real) const {
  const mstar_tensor_map& buffers = *rows_[row];
  if (real.entries().size() != buffers.entries().size()) {
    return "the request has " + std::to_string(real.entries().size()) +
           " prepared inputs; the capture has " + std::to_string(buffers.entries().size());
  }
  for (const mstar_tensor_map::Entry& entry : buffers.entries()) {
    const mstar_tensor_map::Entry* other = real.Find(entry.name);
    if (other == nullptr) return "prepared input '" + entry.name + "' is missing";
    if (other->tensors.size() != entry.tensors.size()) {
      return "prepared input '" + entry.name + "' has a different number of tensors";
    }
    for (size_t k = 0; k < entry.tensors.size(); ++k) {
      if (!SameLayout(entry.tensors[k]->dl, other->tensors[k]->dl)) {
        return "prepared input '" + entry.name + "' has shape " + ShapeText(other->tensors[k]->dl) +
               "; the capture has " + ShapeText(entry.tensors[k]->dl) +
               " (or the dtype or device differs)";
      }
      if (IsStable(entry.tensors[k]) &&
          TensorBytes(entry.tensors[k]->dl) != TensorBytes(other->tensors[k]->dl))
        return "stable tensor '" + entry.name + "' is not at the address the capture read";
    }
  }
  return "";
}

Status PaddedInputs::Load(uint32_t row, const mstar_tensor_map& real, void* native_stream) {
  if (std::string why = Mismatch(row, real); !why.empty()) return InvalidArgument(why);
  for (const mstar_tensor_map::Entry& entry : rows_[row]->entries()) {
    const mstar_tensor_map::Entry* other = real.Find(entry.name);
    for (size_t k = 0; k < entry.tensors.size(); ++k) {
      if (IsStable(entry.tensors[k])) continue;  // the same memory (Mismatch checked)
      MSTAR_RETURN_IF_ERROR(CopyBytes(entry.tensors[k], other->tensors[k], native_stream));
    }
  }
  return Status::Ok();
}

Status PaddedInputs::Pad(uint32_t first, void* native_stream) {
  for (uint32_t row = first; row < rows(); ++row) {
    MSTAR_RETURN_IF_ERROR(Load(row, *templates_[row], native_stream));
  }
  return Status::Ok();
}

Status PaddedInputs::Fill(uint32_t row, uint8_t value) {
  return FillUnstable(*rows_[row], value);
}

}  // namespace mstar

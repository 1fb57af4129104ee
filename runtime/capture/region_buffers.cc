// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "capture/region_buffers.h"

#include <vector>

#include "capture/padded_inputs.h"
#include "capture/static_buffers.h"
#include "device/device.h"

namespace mstar {
namespace {

bool SameTrailingShape(const DLTensor& a, const DLTensor& b) {
  if (a.ndim != b.ndim) return false;
  for (int32_t d = 1; d < a.ndim; ++d) {
    if (a.shape[d] != b.shape[d]) return false;
  }
  return true;
}

// Row-major and dense (dimensions of size 1 may have any stride).
bool IsContiguous(const DLTensor& t) {
  int64_t expected = 1;
  for (int32_t d = t.ndim; d-- > 0;) {
    if (t.shape[d] != 1 && t.strides != nullptr && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

uint64_t RowBytes(const DLTensor& t) {
  return t.ndim == 0 || t.shape[0] == 0 ? 0 : TensorNumBytes(t) / static_cast<uint64_t>(t.shape[0]);
}

}  // namespace

Status RegionBuffers::Init(const mstar_tensor_map& recorded, uint32_t rows) {
  for (const mstar_tensor_map::Entry& entry : recorded.entries()) {
    for (const mstar_tensor_t* tensor : entry.tensors) {
      if (IsStable(tensor)) continue;
      const DLTensor& dl = tensor->dl;
      if (dl.ndim == 0 || dl.shape[0] != static_cast<int64_t>(rows)) {
        return InvalidArgument("region input '" + entry.name + "' has shape " + ShapeText(dl) +
                               " at a bucket of " + std::to_string(rows) +
                               " rows; a region's inputs lead with the bucket's rows (its batch "
                               "size, or its tokens in a PACKED config)");
      }
      if (!IsContiguous(dl)) {
        return InvalidArgument("region input '" + entry.name + "' is not contiguous");
      }
    }
  }
  MSTAR_ASSIGN_OR_RETURN(template_, CopyTensorMap(recorded, nullptr, true));
  MSTAR_ASSIGN_OR_RETURN(buffers_, CopyTensorMap(recorded, nullptr, true));
  rows_ = rows;
  return Status::Ok();
}

std::string RegionBuffers::Mismatch(const mstar_tensor_map& real, uint32_t rows) const {
  if (rows == 0 || rows > rows_) {
    return std::to_string(rows) + " rows do not fit a capture of " + std::to_string(rows_);
  }
  if (real.entries().size() != buffers_->entries().size()) {
    return "the region has " + std::to_string(real.entries().size()) + " inputs; the capture has " +
           std::to_string(buffers_->entries().size());
  }
  for (const mstar_tensor_map::Entry& entry : buffers_->entries()) {
    const mstar_tensor_map::Entry* other = real.Find(entry.name);
    if (other == nullptr) return "region input '" + entry.name + "' is missing";
    if (other->tensors.size() != entry.tensors.size()) {
      return "region input '" + entry.name + "' has a different number of tensors";
    }
    for (size_t k = 0; k < entry.tensors.size(); ++k) {
      const DLTensor& mine = entry.tensors[k]->dl;
      const DLTensor& theirs = other->tensors[k]->dl;
      if (IsStable(entry.tensors[k])) {
        if (TensorBytes(mine) != TensorBytes(theirs) || ShapeOf(mine) != ShapeOf(theirs))
          return "stable tensor '" + entry.name + "' is not the storage the capture read";
        continue;
      }
      if (!SameType(mine, theirs) || !SameTrailingShape(mine, theirs) ||
          theirs.shape[0] != static_cast<int64_t>(rows)) {
        return "region input '" + entry.name + "' has shape " + ShapeText(theirs) +
               "; the capture has " + ShapeText(mine) + " (or the dtype or device differs)";
      }
      if (!IsContiguous(theirs)) return "region input '" + entry.name + "' is not contiguous";
    }
  }
  return "";
}

Status RegionBuffers::Load(const mstar_tensor_map& real, uint32_t rows, void* native_stream) {
  if (std::string why = Mismatch(real, rows); !why.empty()) return InvalidArgument(why);
  for (size_t e = 0; e < buffers_->entries().size(); ++e) {
    const mstar_tensor_map::Entry& entry = buffers_->entries()[e];
    const mstar_tensor_map::Entry* other = real.Find(entry.name);
    const mstar_tensor_map::Entry& padding = template_->entries()[e];
    for (size_t k = 0; k < entry.tensors.size(); ++k) {
      if (IsStable(entry.tensors[k])) continue;  // the same memory (Mismatch checked)
      const DLTensor& dst = entry.tensors[k]->dl;
      uint64_t row = RowBytes(dst);
      MSTAR_RETURN_IF_ERROR(CopyRange(dst, 0, other->tensors[k]->dl, 0, row * rows, native_stream));
      MSTAR_RETURN_IF_ERROR(CopyRange(dst, row * rows, padding.tensors[k]->dl, row * rows,
                                      row * (rows_ - rows), native_stream));
    }
  }
  return Status::Ok();
}

Status RegionBuffers::Fill(uint8_t value) {
  return FillUnstable(*buffers_, value);
}

uint32_t LeadingRows(const mstar_tensor_map& map, std::string* reason) {
  int64_t rows = -1;
  for (const mstar_tensor_map::Entry& entry : map.entries()) {
    for (const mstar_tensor_t* tensor : entry.tensors) {
      if (IsStable(tensor)) continue;
      if (tensor->dl.ndim == 0) {
        *reason = "region input '" + entry.name + "' has no leading dimension";
        return 0;
      }
      if (rows >= 0 && tensor->dl.shape[0] != rows) {
        *reason = "region inputs disagree on their leading dimension (" + std::to_string(rows) +
                  " and " + std::to_string(tensor->dl.shape[0]) + ")";
        return 0;
      }
      rows = tensor->dl.shape[0];
    }
  }
  if (rows <= 0) {
    *reason = "the region has no rows to replay";
    return 0;
  }
  return static_cast<uint32_t>(rows);
}

Status CutRows(const mstar_tensor_map& statics, uint32_t rows, uint32_t bucket_rows,
               mstar_tensor_map& out, void* native_stream) {
  for (const mstar_tensor_map::Entry& entry : statics.entries()) {
    for (const mstar_tensor_t* tensor : entry.tensors) {
      const DLTensor& dl = tensor->dl;
      std::vector<int64_t> shape = ShapeOf(dl);
      uint64_t bytes = TensorNumBytes(dl);
      if (dl.ndim > 0 && dl.shape[0] == static_cast<int64_t>(bucket_rows)) {
        shape[0] = rows;
        bytes = RowBytes(dl) * rows;
      }
      MSTAR_ASSIGN_OR_RETURN(mstar_tensor_t * fresh,
                             AllocateTensor(nullptr, dl.device, dl.dtype, shape));
      Status copied = CopyRange(fresh->dl, 0, dl, 0, bytes, native_stream);
      if (!copied.ok()) {
        ReleaseTensor(fresh);
        return copied;
      }
      MSTAR_RETURN_IF_ERROR(out.Append(entry.name, fresh));
    }
  }
  return Status::Ok();
}

Status OverwriteOutputs(const mstar_tensor_map& produced, const mstar_tensor_map& statics,
                        void* native_stream) {
  if (produced.entries().size() != statics.entries().size()) {
    return FailedPrecondition("the region produced " + std::to_string(produced.entries().size()) +
                              " outputs; its capture produced " +
                              std::to_string(statics.entries().size()));
  }
  for (const mstar_tensor_map::Entry& entry : statics.entries()) {
    const mstar_tensor_map::Entry* other = produced.Find(entry.name);
    if (other == nullptr || other->tensors.size() != entry.tensors.size()) {
      return FailedPrecondition("the region did not produce output '" + entry.name +
                                "' as its capture did");
    }
    for (size_t k = 0; k < entry.tensors.size(); ++k) {
      const DLTensor& mine = entry.tensors[k]->dl;
      const DLTensor& theirs = other->tensors[k]->dl;
      if (!SameType(mine, theirs) || ShapeOf(mine) != ShapeOf(theirs) || !IsContiguous(theirs)) {
        return FailedPrecondition("region output '" + entry.name + "' has shape " +
                                  ShapeText(theirs) + "; its capture has " + ShapeText(mine) +
                                  " (a captured region's outputs keep their shapes)");
      }
      MSTAR_RETURN_IF_ERROR(CopyRange(mine, 0, theirs, 0, TensorNumBytes(theirs), native_stream));
    }
  }
  return Status::Ok();
}

}  // namespace mstar

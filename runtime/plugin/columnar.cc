// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "plugin/columnar.h"

#include <cstring>
#include <string>
#include <vector>

namespace mstar {
namespace {

std::string Named(std::string_view what, std::string_view name) {
  return std::string(what) + " '" + std::string(name) + "'";
}

bool Contiguous(const DLTensor& t) {
  int64_t expected = 1;
  for (int32_t d = t.ndim; d-- > 0;) {
    if (t.shape[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

// where() names the tensor in messages (made only for one).
template <typename Where>
Status CheckOffsets(const mstar_tensor_t* offsets, const mstar_tensor_t& tensor,
                    uint32_t num_requests, const Where& where) {
  const DLTensor& dl = offsets->dl;
  if (dl.device.device_type != kDLCPU || !SameDType(dl.dtype, DLDataType{kDLInt, 64, 1}) ||
      dl.ndim != 1 || dl.shape[0] != static_cast<int64_t>(num_requests) + 1 || !Contiguous(dl)) {
    return InvalidArgument(where() + ": row offsets must be a contiguous int64 host tensor of " +
                           std::to_string(num_requests + 1) + " (requests + 1) elements");
  }
  const auto* at = reinterpret_cast<const int64_t*>(TensorBytes(dl));
  if (at[0] != 0) return InvalidArgument(where() + ": row offsets must start at 0");
  for (uint32_t i = 0; i < num_requests; ++i) {
    if (at[i + 1] < at[i]) {
      return InvalidArgument(where() + ": row offsets decrease at request " + std::to_string(i) +
                             " (" + std::to_string(at[i]) + " then " + std::to_string(at[i + 1]) +
                             ")");
    }
  }
  if (at[num_requests] != tensor.dl.shape[0]) {
    return InvalidArgument(where() + ": row offsets end at " + std::to_string(at[num_requests]) +
                           " but the tensor has " + std::to_string(tensor.dl.shape[0]) + " rows");
  }
  return Status::Ok();
}

}  // namespace

RowOffsets::RowOffsets(const mstar_tensor_map& rows, std::string_view name, uint32_t num_requests) {
  (void)num_requests;  // CheckColumnar made sure a listed tensor has num_requests + 1 entries
  if (const mstar_tensor_map::Entry* e = rows.Find(name); e != nullptr && !e->tensors.empty())
    listed_ = reinterpret_cast<const int64_t*>(TensorBytes(e->tensors[0]->dl));
}

Status CheckColumnar(const mstar_tensor_map& tensors, const mstar_tensor_map& rows,
                     uint32_t num_requests, std::string_view what) {
  for (const mstar_tensor_map::Entry& e : tensors.entries()) {
    auto where = [&] { return "columnar " + Named(what, e.name); };
    if (e.tensors.size() != 1) {
      return InvalidArgument(where() + " holds " + std::to_string(e.tensors.size()) +
                             " tensors; a columnar step has exactly one per name");
    }
    const mstar_tensor_t& t = *e.tensors[0];
    if (t.dl.ndim < 1) return InvalidArgument(where() + " has no first dimension to hold rows");
    const mstar_tensor_map::Entry* offsets = rows.Find(e.name);
    if (offsets == nullptr || offsets->tensors.empty()) {
      if (t.dl.shape[0] != static_cast<int64_t>(num_requests)) {
        return InvalidArgument(where() + " has " + std::to_string(t.dl.shape[0]) + " rows for " +
                               std::to_string(num_requests) +
                               " requests and no row offsets; give offsets for rows per request "
                               "other than one");
      }
      continue;
    }
    if (offsets->tensors.size() != 1)
      return InvalidArgument(where() + ": more than one tensor of row offsets");
    MSTAR_RETURN_IF_ERROR(CheckOffsets(offsets->tensors[0], t, num_requests, where));
  }
  for (const mstar_tensor_map::Entry& e : rows.entries()) {
    if (tensors.Find(e.name) == nullptr) {
      return InvalidArgument("row offsets for " + Named(what, e.name) + ", which the step has no " +
                             std::string(what) + " of");
    }
  }
  return Status::Ok();
}

Status ScatterColumnar(const mstar_tensor_map& tensors, const mstar_tensor_map& rows,
                       std::span<mstar_tensor_map* const> per_request) {
  const auto n = static_cast<uint32_t>(per_request.size());
  for (const mstar_tensor_map::Entry& e : tensors.entries()) {
    RowOffsets offsets(rows, e.name, n);
    for (uint32_t i = 0; i < n; ++i) {
      MSTAR_ASSIGN_OR_RETURN(mstar_tensor_t * part, ShareTensor(e.tensors[0]));
      NarrowToRows(part, offsets.begin(i), offsets.count(i));
      per_request[i]->AppendHost(e.name, part);
    }
  }
  return Status::Ok();
}

int64_t RowElements(const DLTensor& t) {
  int64_t n = 1;
  for (int32_t d = 1; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

const uint8_t* RowData(const DLTensor& t, int64_t row) {
  return TensorBytes(t) +
         static_cast<uint64_t>(row) * static_cast<uint64_t>(t.strides[0]) * ElementBytes(t.dtype);
}

void NarrowToRows(mstar_tensor_t* t, int64_t begin, int64_t count) {
  t->dl.shape[0] = count;
  if (count == 0 || TensorNumElements(t->dl) == 0) {
    t->dl.data = nullptr;  // an empty tensor has no data (mstar/tensor.h)
    t->dl.byte_offset = 0;
    return;
  }
  t->dl.byte_offset =
      static_cast<uint64_t>(RowData(t->dl, begin) - static_cast<const uint8_t*>(t->dl.data));
}

void RowView(const mstar_tensor_t& t, int64_t begin, int64_t count, mstar_tensor_t* view,
             std::vector<int64_t>* dims) {
  *view = t;
  dims->assign(t.dl.shape, t.dl.shape + t.dl.ndim);
  view->dl.shape = dims->data();
  NarrowToRows(view, begin, count);
}

bool RowsAlike(const DLTensor& a, const DLTensor& b) {
  bool alike = a.ndim == b.ndim && a.ndim >= 1 && SameDType(a.dtype, b.dtype);
  for (int32_t d = 1; alike && d < a.ndim; ++d) alike = a.shape[d] == b.shape[d];
  return alike;
}

bool StackableHostTensor(const DLTensor& t) {
  return t.device.device_type == kDLCPU && Contiguous(t);
}

std::vector<uint32_t> UnstackableRows(std::span<const RowSlice> slices) {
  const auto n = static_cast<uint32_t>(slices.size());
  // The kind most slices share: a representative slice and how many are alike it.
  int64_t common = -1;
  uint32_t common_count = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const DLTensor& dl = slices[i].tensor->dl;
    if (!StackableHostTensor(dl)) continue;
    uint32_t alike = 0;
    for (uint32_t j = 0; j < n; ++j)
      alike += StackableHostTensor(slices[j].tensor->dl) && RowsAlike(slices[j].tensor->dl, dl);
    if (alike > common_count) {
      common = i;
      common_count = alike;
    }
  }
  std::vector<uint32_t> odd;
  for (uint32_t i = 0; i < n; ++i) {
    const DLTensor& dl = slices[i].tensor->dl;
    if (common < 0 || !StackableHostTensor(dl) || !RowsAlike(dl, slices[common].tensor->dl))
      odd.push_back(i);
  }
  return odd;
}

Status StackRows(std::span<const RowSlice> slices, std::string_view name, std::string_view what,
                 mstar_tensor_map* tensors, mstar_tensor_map* rows) {
  const auto n = static_cast<uint32_t>(slices.size());
  if (n == 0) return Status::Ok();
  auto where = [&] { return Named(what, name); };  // for messages only
  const DLTensor& lead = slices[0].tensor->dl;
  std::vector<int64_t> offsets(n + 1, 0);
  for (uint32_t i = 0; i < n; ++i) {
    const DLTensor& dl = slices[i].tensor->dl;
    if (!RowsAlike(dl, lead)) {
      return InvalidArgument(where() + " of request " + std::to_string(i) +
                             " differs from request 0's in dtype or dimensions after the first");
    }
    if (!StackableHostTensor(dl)) {
      return InvalidArgument(where() + " of request " + std::to_string(i) +
                             " is not a contiguous host tensor");
    }
    offsets[i + 1] = offsets[i] + slices[i].count;
  }
  std::vector<int64_t> shape(lead.shape, lead.shape + lead.ndim);
  shape[0] = offsets[n];
  MSTAR_ASSIGN_OR_RETURN(mstar_tensor_t * stacked,
                         AllocateTensor(nullptr, DLDevice{kDLCPU, 0}, lead.dtype, shape));
  const uint64_t row_bytes = static_cast<uint64_t>(RowElements(lead)) * ElementBytes(lead.dtype);
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t bytes = static_cast<uint64_t>(slices[i].count) * row_bytes;
    if (bytes == 0) continue;
    std::memcpy(
        TensorBytes(stacked->dl) + static_cast<uint64_t>(offsets[i]) * row_bytes,
        TensorBytes(slices[i].tensor->dl) + static_cast<uint64_t>(slices[i].begin) * row_bytes,
        bytes);
  }
  bool one_each = true;
  for (uint32_t i = 0; i < n && one_each; ++i) one_each = slices[i].count == 1;
  mstar_tensor_t* listed = nullptr;
  if (!one_each) {
    const int64_t count = n + 1;
    Result<mstar_tensor_t*> made =
        AllocateTensor(nullptr, DLDevice{kDLCPU, 0}, DLDataType{kDLInt, 64, 1}, &count, 1);
    if (!made.ok()) {
      ReleaseTensor(stacked);
      return made.status();
    }
    listed = made.value();
    std::memcpy(TensorBytes(listed->dl), offsets.data(), offsets.size() * sizeof(int64_t));
  }
  tensors->AppendHost(name, stacked);
  if (listed != nullptr) rows->AppendHost(name, listed);
  return Status::Ok();
}

Status GatherColumnar(std::span<const mstar_tensor_map* const> per_request, std::string_view what,
                      mstar_tensor_map* tensors, mstar_tensor_map* rows) {
  const auto n = static_cast<uint32_t>(per_request.size());
  if (n == 0) return Status::Ok();
  for (uint32_t i = 1; i < n; ++i) {
    if (per_request[i]->entries().size() != per_request[0]->entries().size()) {
      return InvalidArgument("request " + std::to_string(i) + " has " +
                             std::to_string(per_request[i]->entries().size()) + " " +
                             std::string(what) + " names and request 0 has " +
                             std::to_string(per_request[0]->entries().size()) +
                             "; a columnar step needs the same names for every request");
    }
  }
  std::vector<RowSlice> slices(n);
  for (const mstar_tensor_map::Entry& first : per_request[0]->entries()) {
    for (uint32_t i = 0; i < n; ++i) {
      const mstar_tensor_map::Entry* e = per_request[i]->Find(first.name);
      if (e == nullptr || e->tensors.size() != 1) {
        return InvalidArgument("request " + std::to_string(i) + " has " +
                               std::to_string(e == nullptr ? 0 : e->tensors.size()) +
                               " tensors under " + Named(what, first.name) +
                               "; a columnar step needs exactly one");
      }
      const mstar_tensor_t* t = e->tensors[0];
      slices[i] = {t, 0, t->dl.ndim >= 1 ? t->dl.shape[0] : 0};
    }
    MSTAR_RETURN_IF_ERROR(StackRows(slices, first.name, what, tensors, rows));
  }
  return Status::Ok();
}

}  // namespace mstar

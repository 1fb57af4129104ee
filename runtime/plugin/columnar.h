// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Columnar steps (mstar/request.h, MSTAR_SUBMODULE_COLUMNAR): a batch's tensors as one tensor per
// name with every request's rows stacked along the first dimension, and a rows map giving the
// offsets of the names whose rows per request are not exactly one. These functions check what a
// plugin wrote in that form and move between it and the per-request form (one map per request).
//
// Every map here holds host-managed tensors (mstar/tensor_objects.h). Nothing is kept: results
// are owned by the maps they are written to. Thread-compatible (no shared state).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "host/tensor_objects.h"

namespace mstar {

// The row offsets of one name: num_requests + 1 entries (request i owns rows [at(i), at(i + 1)))
// either from a rows map or, for a name not listed there, 0, 1, ..., num_requests.
class RowOffsets {
 public:
  // One row per request.
  RowOffsets() = default;
  // Offsets listed under name in rows (checked by CheckColumnar), or one row per request.
  RowOffsets(const mstar_tensor_map& rows, std::string_view name, uint32_t num_requests);
  int64_t begin(uint32_t request) const { return listed_ ? listed_[request] : request; }
  int64_t end(uint32_t request) const { return begin(request + 1); }
  int64_t count(uint32_t request) const { return end(request) - begin(request); }

 private:
  const int64_t* listed_ = nullptr;  // borrowed from the rows map; null: one row per request
};

// Rows [begin, begin + count) of a host-managed tensor (borrowed).
struct RowSlice {
  const mstar_tensor_t* tensor = nullptr;
  int64_t begin = 0;
  int64_t count = 0;
};

// The first byte of row `row` of t (a contiguous host tensor with data), and its elements per row
// (the product of the dimensions after the first).
const uint8_t* RowData(const DLTensor& t, int64_t row);
int64_t RowElements(const DLTensor& t);

// Narrows *t (a view or a fresh reference of its own, whose shape it may change) to its rows
// [begin, begin + count): the first dimension and the byte offset; an empty result has no data.
void NarrowToRows(mstar_tensor_t* t, int64_t begin, int64_t count);

// A view of rows [begin, begin + count) of t (a host-managed tensor), in *view with its shape in
// *dims; no reference is taken (the view is borrowed from t and valid while t and *dims are).
void RowView(const mstar_tensor_t& t, int64_t begin, int64_t count, mstar_tensor_t* view,
             std::vector<int64_t>* dims);

// Whether a's rows and b's stack into one tensor: both have at least one dimension, the same
// dtype, and the same dimensions after the first.
bool RowsAlike(const DLTensor& a, const DLTensor& b);
// Whether t can be a slice of StackRows: a contiguous host tensor.
bool StackableHostTensor(const DLTensor& t);

// The indexes of the slices that keep the others from stacking: those that are not contiguous
// host tensors, and those whose rows are unlike the most common kind among the rest (the first
// slice's kind on a tie). Empty when StackRows' checks pass.
std::vector<uint32_t> UnstackableRows(std::span<const RowSlice> slices);

// Stacks slices (one per request, in request order) into one new host tensor appended under name
// to tensors, and, when some request has other than one row, its offsets under name to rows. The
// slices must be contiguous host tensors with the same dtype and dimensions after the first;
// errors name `what` ("input") and the request's index. On failure nothing is appended.
Status StackRows(std::span<const RowSlice> slices, std::string_view name, std::string_view what,
                 mstar_tensor_map* tensors, mstar_tensor_map* rows);

// Checks a columnar map and its rows map for num_requests requests: each name holds exactly one
// tensor with at least one dimension; each rows entry names a tensor of the map and is an int64
// 1-D host tensor of num_requests + 1 offsets, starting at 0, non-decreasing, ending at that
// tensor's first dimension; a tensor without offsets has num_requests rows. `what` names the map
// in messages ("output").
Status CheckColumnar(const mstar_tensor_map& tensors, const mstar_tensor_map& rows,
                     uint32_t num_requests, std::string_view what);

// Splits a map that passed CheckColumnar into per_request maps (one per request, appended to):
// request i gets, under each name, a view of its rows sharing the columnar tensor's storage.
Status ScatterColumnar(const mstar_tensor_map& tensors, const mstar_tensor_map& rows,
                       std::span<mstar_tensor_map* const> per_request);

// Stacks per-request maps into one columnar map (fresh host tensors) and its rows map. Every
// request's map must hold the same names, one contiguous host tensor per name, with the same
// dtype and the same dimensions after the first. Offsets are written for names whose rows per
// request are not all one. `what` names the maps in messages ("input"). On failure both maps may
// hold the names stacked before the one that failed.
Status GatherColumnar(std::span<const mstar_tensor_map* const> per_request, std::string_view what,
                      mstar_tensor_map* tensors, mstar_tensor_map* rows);

}  // namespace mstar

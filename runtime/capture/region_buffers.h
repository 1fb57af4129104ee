// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// RegionBuffers: the static input buffers of one captured region graph (one region, bucket and
// slot). A region's inputs are one tensor map whose tensors lead with the bucket's rows; the
// graph reads these buffers' addresses, so they are allocated once (on the template's devices)
// and never move. A replay copies the real rows of each input into the first rows and refills the
// remaining (padding) rows from the template, the inputs the region was first launched with at
// the bucket's size, so padding is the same bytes every time. A tensor flagged
// MSTAR_TENSOR_FLAG_STABLE is shared, not copied, and must be handed over at the same address.
//
// Outputs: a capture's outputs are the graph's static outputs; CutRows hands the caller fresh
// copies of their real rows (a replay rewrites the static outputs in place, so sharing them would
// let the next replay change what a caller holds).
//
// Ownership: owns its buffers and its template copy. Not thread-safe: the slot's holder (the exec
// thread, inside one forward) is the only user.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "host/tensor_objects.h"

namespace mstar {

class RegionBuffers {
 public:
  // Copies recorded, whose tensors (except STABLE ones) must be contiguous and lead with rows.
  Status Init(const mstar_tensor_map& recorded, uint32_t rows);

  uint32_t rows() const { return rows_; }
  const mstar_tensor_map* map() const { return buffers_.get(); }

  // Why real (whose tensors lead with rows real rows) cannot be loaded, or "" when it can: the
  // names, dtypes, devices or trailing shapes differ, a tensor is not contiguous, a STABLE tensor
  // moved, or rows exceeds the buffers'.
  std::string Mismatch(const mstar_tensor_map& real, uint32_t rows) const;
  // Copies real's rows into the buffers and refills the rest from the template, ordered on
  // native_stream. Mismatch must be "" (else kInvalidArgument with the reason).
  Status Load(const mstar_tensor_map& real, uint32_t rows, void* native_stream);
  // Overwrites every byte of the buffers with value (tests poison a slot to prove nobody reads
  // it); host buffers only.
  Status Fill(uint8_t value);

 private:
  TensorMapPtr template_;
  TensorMapPtr buffers_;
  uint32_t rows_ = 0;
};

// The leading dimension of map's tensors (STABLE ones aside), or 0 with *reason when a tensor has
// none or two tensors disagree.
uint32_t LeadingRows(const mstar_tensor_map& map, std::string* reason);

// Appends to out fresh copies of statics: the first rows rows of each tensor that leads with
// bucket_rows, every other tensor whole. Ordered on native_stream.
Status CutRows(const mstar_tensor_map& statics, uint32_t rows, uint32_t bucket_rows,
               mstar_tensor_map& out, void* native_stream);

// Copies produced into statics, which must have the same names and layouts, as a graph replay
// rewrites its outputs in place (the recording backend's replay runs the region eagerly).
Status OverwriteOutputs(const mstar_tensor_map& produced, const mstar_tensor_map& statics,
                        void* native_stream);

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// PaddedInputs: the static input buffers of one capture slot, one tensor map per row. A captured
// graph reads these addresses, so they are allocated once (from the host memory services, on the
// template's device) and never move; a replay copies the real requests' prepared inputs into the
// first rows and refills the remaining (padding) rows from their templates, so padding is the
// same bytes every time. A tensor flagged MSTAR_TENSOR_FLAG_STABLE (a resource's page pool) is
// not copied: the slot keeps a reference to the producer's storage, a row matches only when it
// hands over that same storage, and loading leaves it alone.
//
// Ownership: owns its buffers and its copies of the templates. Not thread-safe: the slot's lease
// gives one batch at a time the right to touch it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "host/tensor_objects.h"

namespace mstar {

class PaddedInputs {
 public:
  // One template per row (the prepared inputs of a dummy request); every row is filled from its
  // template. Fails when memory runs out or a template tensor cannot be copied.
  Status Init(const std::vector<const mstar_tensor_map*>& templates);

  uint32_t rows() const { return static_cast<uint32_t>(rows_.size()); }
  const mstar_tensor_map* row(uint32_t i) const { return rows_[i].get(); }

  // Why real cannot be loaded into row (the names, dtypes, shapes or devices differ), or "" when
  // it can.
  std::string Mismatch(uint32_t row, const mstar_tensor_map& real) const;
  // Copies real into row; Mismatch must be "" (else kInvalidArgument with the reason).
  Status Load(uint32_t row, const mstar_tensor_map& real, void* native_stream);
  // Refills rows [first, rows()) from their templates.
  Status Pad(uint32_t first, void* native_stream);
  // Overwrites every byte of row with value (tests poison a slot to prove nobody reads it).
  Status Fill(uint32_t row, uint8_t value);

 private:
  std::vector<TensorMapPtr> templates_;  // host-owned copies, per row
  std::vector<TensorMapPtr> rows_;       // the static buffers, per row
};

// A deep copy of map (same names, dtypes, shapes, devices; fresh storage), ordered on
// native_stream (nullptr: finished on return). With share_stable, tensors flagged
// MSTAR_TENSOR_FLAG_STABLE are shared instead (a new reference to the same storage).
Result<TensorMapPtr> CopyTensorMap(const mstar_tensor_map& map, void* native_stream = nullptr,
                                   bool share_stable = false);

}  // namespace mstar

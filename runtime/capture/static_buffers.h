// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// What the static buffers of a captured graph (PaddedInputs for whole forwards, RegionBuffers for
// regions) share: recognizing tensors a producer marked stable, comparing and describing layouts,
// copying byte ranges between host and device tensors, and poisoning a slot's buffers in tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "host/tensor_objects.h"

namespace mstar {

// Whether tensor is flagged MSTAR_TENSOR_FLAG_STABLE (read in place, never copied).
inline bool IsStable(const mstar_tensor_t* tensor) {
  return (tensor->flags & MSTAR_TENSOR_FLAG_STABLE) != 0;
}
std::vector<int64_t> ShapeOf(const DLTensor& t);
// "[2,16]"
std::string ShapeText(const DLTensor& t);
// Same dtype and device (shapes aside).
bool SameType(const DLTensor& a, const DLTensor& b);
// Copies bytes from src at src_offset to dst at dst_offset (both contiguous), through the backend
// of whichever side is not host memory, on native_stream (may be null).
Status CopyRange(const DLTensor& dst, uint64_t dst_offset, const DLTensor& src, uint64_t src_offset,
                 uint64_t bytes, void* native_stream);
// Sets every byte of map's tensors that are not stable to value (host memory only: kUnsupported
// for a device tensor). For tests that poison a slot.
Status FillUnstable(const mstar_tensor_map& map, uint8_t value);

}  // namespace mstar

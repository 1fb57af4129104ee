// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Helpers for the capture tests: int64 host tensors and a check that a capture log never leases a
// slot twice before releasing it.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "capture/capture_log.h"
#include "host/tensor_objects.h"

namespace mstar::test {

inline mstar_tensor_t* Int64Tensor(const std::vector<int64_t>& values) {
  Result<mstar_tensor_t*> t =
      AllocateTensor(nullptr, DLDevice{kDLCPU, 0}, DLDataType{kDLInt, 64, 1},
                     {static_cast<int64_t>(values.size())});
  EXPECT_TRUE(t.ok());
  std::copy(values.begin(), values.end(), static_cast<int64_t*>(t.value()->dl.data));
  return t.value();
}

inline std::vector<int64_t> Int64Values(const mstar_tensor_map& map, const std::string& name) {
  const mstar_tensor_map::Entry* entry = map.Find(name);
  if (entry == nullptr || entry->tensors.empty()) return {};
  const DLTensor& dl = entry->tensors[0]->dl;
  const int64_t* data =
      reinterpret_cast<const int64_t*>(static_cast<const char*>(dl.data) + dl.byte_offset);
  return std::vector<int64_t>(data, data + TensorNumElements(dl));
}

// Fails the test when a (node, slot) is leased again before its release; returns the number of
// leases seen.
inline size_t ExpectNoDoubleLease(const std::vector<CaptureEvent>& events) {
  std::map<std::pair<std::string, int32_t>, bool> leased;
  size_t leases = 0;
  for (const CaptureEvent& e : events) {
    auto key = std::make_pair(e.node, e.slot);
    if (e.kind == CaptureEventKind::kLease) {
      EXPECT_FALSE(leased[key]) << "slot " << e.slot << " of " << e.node
                                << " leased while in flight: " << e.ToString();
      leased[key] = true;
      ++leases;
    } else if (e.kind == CaptureEventKind::kRelease) {
      EXPECT_TRUE(leased[key]) << "released a slot that was not leased: " << e.ToString();
      leased[key] = false;
    }
  }
  return leases;
}

}  // namespace mstar::test

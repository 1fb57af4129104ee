// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// HostServicesTest: the host services table, called exactly as a plugin calls it, through a
// HostApi of the test's own (library context "host_test").
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "device/device.h"
#include "host/host_api.h"

namespace mstar::test {

constexpr DLDevice kCpu{kDLCPU, 0};
constexpr DLDataType kI64{kDLInt, 64, 1};

class HostServicesTest : public ::testing::Test {
 protected:
  const mstar_host_api_t* api() { return host_.table(); }
  mstar_host_context_t* ctx() { return host_.library_context(); }

  // The message of a status (released).
  std::string Message(mstar_status_t* status) {
    std::string message = api()->status_message(status);
    api()->status_release(status);
    return message;
  }

  mstar_tensor_t* NewTensor(std::vector<int64_t> values) {
    int64_t n = static_cast<int64_t>(values.size());
    mstar_tensor_t* t = nullptr;
    EXPECT_EQ(api()->tensor_alloc(ctx(), kCpu, kI64, 1, &n, &t), nullptr);
    if (!values.empty()) std::memcpy(t->dl.data, values.data(), values.size() * sizeof(int64_t));
    return t;
  }

  HostApi host_{"host_test"};
};

}  // namespace mstar::test

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The SDK's LibTorch capture pools without a CUDA LibTorch (the CPU build): Begin refuses with a
// reason the host reports as the capture's failure, and End after a refused Begin is harmless.
#include <gtest/gtest.h>

#include <string>

#include "mstar/sdk/torch_capture.hpp"

namespace mstar {
namespace {

TEST(TorchCapturePools, WithoutCudaLibTorchBeginSaysWhy) {
  sdk::TorchCapturePools pools;
  mstar_capture_info_t info{};
  info.struct_size = sizeof(info);
  info.pool_key = 7;
  try {
    pools.Begin(info, nullptr);
    FAIL() << "Begin routed allocations without a CUDA LibTorch";
  } catch (const sdk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("MSTAR_SDK_TORCH_CUDA"), std::string::npos) << e.what();
  }
  pools.End(info);
  EXPECT_EQ(pools.size(), 0u);
}

}  // namespace
}  // namespace mstar

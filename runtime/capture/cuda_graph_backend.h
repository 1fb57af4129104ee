// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// CUDA graphs through the CUDA runtime API (CUDA builds only): cudaStreamBeginCapture in
// thread-local mode, cudaStreamEndCapture, cudaGraphInstantiate, cudaGraphLaunch; fences are
// cudaEvents without timing. BeginCapture leaves the backend's device current on the capturing
// thread (the forward it captures runs there); the other calls make the caller's device current
// again before they return.
#pragma once

#include <memory>

#include "capture/capture_backend.h"

namespace mstar {

std::unique_ptr<CaptureBackend> MakeCudaGraphBackend(DLDevice device);

}  // namespace mstar

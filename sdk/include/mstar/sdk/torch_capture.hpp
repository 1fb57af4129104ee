// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// TorchCapturePools: the capture participation hooks (mstar/submodule.h, capture_begin and
// capture_end) for a LibTorch plugin on CUDA. While the host captures a graph, LibTorch must take
// the memory of every tensor the forward allocates on the capturing stream from a private pool
// that outlives the capture (the graph replays into those addresses). Captures with the same
// pool_key share one pool, as the host asks.
//
//   class MyModel : public Submodule {
//     void CaptureBegin(const mstar_capture_info_t& c) override { pools_.Begin(c, host()); }
//     void CaptureEnd(const mstar_capture_info_t& c) override { pools_.End(c); }
//     TorchCapturePools pools_;
//   };
//
// The forward itself must run on step.stream() (`TorchStreamScope on(host(), step.stream(),
// device);` below) and must not read device values on the host while capturing.
//
// CUDA only: define MSTAR_SDK_TORCH_CUDA when building against a CUDA LibTorch (2.1 or later
// routes allocations with beginAllocateToPool). Without it, or with an older LibTorch, Begin
// throws Unsupported, so the host reports the capture as failed with that reason. Not
// thread-safe: the host calls the hooks of one instance from one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "mstar/sdk/error.hpp"
#include "mstar/submodule.h"

#include <c10/core/Device.h>

#include <optional>

#if defined(MSTAR_SDK_TORCH_CUDA)
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/version.h>
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define MSTAR_SDK_TORCH_POOLS 1
#endif
#endif

namespace mstar::sdk {

// Whether TorchCapturePools can route allocations here (a CUDA LibTorch 2.1 or later, built with
// MSTAR_SDK_TORCH_CUDA): plugins capture by default only where it can.
#if defined(MSTAR_SDK_TORCH_POOLS)
inline constexpr bool kTorchCapturePools = true;
#else
inline constexpr bool kTorchCapturePools = false;
#endif

class TorchCapturePools {
 public:
  TorchCapturePools() = default;
  TorchCapturePools(const TorchCapturePools&) = delete;
  TorchCapturePools& operator=(const TorchCapturePools&) = delete;
  ~TorchCapturePools() { ReleaseAll(); }

  // From CaptureBegin: this capture's allocations on capture.stream go to pool capture.pool_key.
  void Begin(const mstar_capture_info_t& capture, const mstar_host_api_t* host) {
#if defined(MSTAR_SDK_TORCH_POOLS)
    if (active_) throw FailedPrecondition("a capture is already routed to a pool");
    auto stream = static_cast<cudaStream_t>(host->stream_native(capture.stream));
    const DLDevice on = host->stream_device(capture.stream);
    if (stream == nullptr || on.device_type != kDLCUDA)
      throw FailedPrecondition("capturing needs a CUDA stream");
    // The stream's device, not the thread's current one: the forward allocates there.
    const auto device = static_cast<c10::DeviceIndex>(on.device_id);
    auto it = pools_.find(capture.pool_key);
    if (it == pools_.end())
      it = pools_.emplace(capture.pool_key, Pool{at::cuda::graph_pool_handle(), device, 0}).first;
    if (it->second.device != device)
      throw FailedPrecondition("captures sharing a pool key must be on one device");
    c10::cuda::CUDACachingAllocator::beginAllocateToPool(
        device, it->second.id, [stream](cudaStream_t s) { return s == stream; });
    ++it->second.references;  // each routing holds the pool once, as a CUDAGraph's capture does
    active_ = true;
    active_key_ = capture.pool_key;
#else
    (void)capture;
    (void)host;
    throw Unsupported(
        "routing LibTorch allocations into a graph pool needs a CUDA LibTorch 2.1 or later "
        "(build with MSTAR_SDK_TORCH_CUDA)");
#endif
  }

  // From CaptureEnd (also after a failed capture): stops routing allocations to the pool.
  void End(const mstar_capture_info_t& capture) {
    (void)capture;
#if defined(MSTAR_SDK_TORCH_POOLS)
    if (!active_) return;
    const Pool& pool = pools_.at(active_key_);
    c10::cuda::CUDACachingAllocator::endAllocateToPool(pool.device, pool.id);
    active_ = false;
#endif
  }

  // How many pools exist (one per pool key seen).
  size_t size() const {
    return pools_.size();
  }

 private:
  void ReleaseAll() {
#if defined(MSTAR_SDK_TORCH_POOLS)
    // Once per routing: the pool's memory goes back to LibTorch's cache when the last goes.
    // Runs in the destructor, which must not throw: a pool LibTorch refuses to release (its
    // checks throw c10::Error) stays LibTorch's, and the other pools still go back.
    for (const auto& [key, pool] : pools_) {
      for (int i = 0; i < pool.references; ++i) {
        try {
          c10::cuda::CUDACachingAllocator::releasePool(pool.device, pool.id);
        } catch (...) {
          break;
        }
      }
    }
#endif
    pools_.clear();
  }

#if defined(MSTAR_SDK_TORCH_POOLS)
  struct Pool {
    at::cuda::MempoolId_t id;
    c10::DeviceIndex device;
    int references;  // Begin calls that routed allocations to it
  };
  std::map<uint64_t, Pool> pools_;
  uint64_t active_key_ = 0;
  bool active_ = false;
#else
  std::map<uint64_t, int> pools_;
#endif
};

// For its scope, makes the host stream LibTorch's current stream on a CUDA device, so the ATen
// work of a forward (and of a capture) goes where the host ordered it. Nothing on other devices,
// for a NULL stream, or without MSTAR_SDK_TORCH_CUDA.
class TorchStreamScope {
 public:
  TorchStreamScope(const mstar_host_api_t* host, mstar_stream_t* stream,
                   const c10::Device& device) {
#if defined(MSTAR_SDK_TORCH_CUDA)
    if (!device.is_cuda() || stream == nullptr) return;
    auto native = static_cast<cudaStream_t>(host->stream_native(stream));
    if (native != nullptr) guard_.emplace(c10::cuda::getStreamFromExternal(native, device.index()));
#else
    (void)host;
    (void)stream;
    (void)device;
#endif
  }
  TorchStreamScope(const TorchStreamScope&) = delete;
  TorchStreamScope& operator=(const TorchStreamScope&) = delete;

 private:
#if defined(MSTAR_SDK_TORCH_CUDA)
  std::optional<c10::cuda::CUDAStreamGuard> guard_;
#endif
};

}  // namespace mstar::sdk

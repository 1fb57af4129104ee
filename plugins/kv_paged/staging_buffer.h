// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// StagingBuffer: the host bytes kv_paged's offloads and reloads pass through between a device
// pool and a tier that copies host memory only (one page block per slot). It is taken through
// the host services with MSTAR_MEMORY_PINNED: on CUDA builds page-locked memory, so the pool <->
// staging copies run as asynchronous DMA on the resource's stream (from pageable memory the CUDA
// runtime copies through a bounce buffer and blocks the calling thread); on CPU builds ordinary
// host memory. Either way it counts against the runtime's host memory budget.
//
// It grows to the largest offload or reload seen and keeps that size; growing drops the contents.
// Not thread-safe: kv_paged uses it under the resource's serialized calls, and waits for the
// copies that read or write it (its staging fence) before it is reserved again or destroyed.
#pragma once

#include <cstdint>

#include "mstar/sdk.hpp"

namespace mstar::kv {

class StagingBuffer {
 public:
  // host and context are borrowed from the resource instance and outlive the buffer.
  StagingBuffer(const mstar_host_api_t* host, mstar_host_context_t* context)
      : host_(host), context_(context) {}
  ~StagingBuffer() { host_->memory_free(context_, data_); }
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;

  // Makes data() hold at least size bytes; what it held is lost when it grows. Throws sdk::Error
  // (RESOURCE_EXHAUSTED) when the host budget or host memory cannot give the bytes; the buffer is
  // then as it was.
  void Reserve(uint64_t size) {
    if (size <= capacity_) return;
    void* grown = nullptr;
    sdk::Check(host_, host_->memory_alloc(context_, DLDevice{kDLCPU, 0}, size, 0,
                                          MSTAR_MEMORY_PINNED, &grown));
    host_->memory_free(context_, data_);
    data_ = static_cast<uint8_t*>(grown);
    capacity_ = size;
  }
  uint8_t* data() { return data_; }

 private:
  const mstar_host_api_t* host_;
  mstar_host_context_t* context_;
  uint8_t* data_ = nullptr;
  uint64_t capacity_ = 0;
};

}  // namespace mstar::kv

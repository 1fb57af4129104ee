// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// CommTransport: what moves data between the ranks of a parallel group behind the host's
// communicator services (mstar/host.h, comm_*). A group is made once, by the runtime, as one
// mstar_comm_t per rank; the plugin instances of that rank receive it in their create args.
//
//   thread group   ranks are threads of this process, tensors in host memory (CPU builds and
//                  tests of sharded plugins; MakeThreadGroup)
//   NCCL           ranks are GPUs, tensors in device memory, collectives enqueued on the caller's
//                  stream (CUDA builds with NCCL; MakeNcclGroup)
//
// Contract (every transport): all ranks issue the same collectives in the same order with the
// same sizes and dtypes; a mismatch is an error on every rank that can see it, never a silent
// partial result. Ranks call from their own threads; one rank is never called from two threads
// at once. A single-rank group needs no transport (comm_services.cc copies locally). The host's
// services check each call's arguments before a transport sees them (NULL and read-only tensors,
// an unknown reduce op, a root or peer outside the group), so transports check only what depends
// on them (devices, dtypes, sizes agreeing across ranks).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"
#include "mstar/host.h"

namespace mstar {

class CommTransport {
 public:
  virtual ~CommTransport() = default;
  // recv = reduce(op) of every rank's send; send and recv may be the same tensor.
  virtual Status AllReduce(uint32_t rank, const mstar_tensor_t& send, mstar_tensor_t& recv,
                           uint32_t op, mstar_stream_t* stream) = 0;
  // recv = every rank's send concatenated along dim 0 in rank order.
  virtual Status AllGather(uint32_t rank, const mstar_tensor_t& send, mstar_tensor_t& recv,
                           mstar_stream_t* stream) = 0;
  // buffer on every rank = buffer on root.
  virtual Status Broadcast(uint32_t rank, mstar_tensor_t& buffer, uint32_t root,
                           mstar_stream_t* stream) = 0;
  virtual Status Send(uint32_t rank, const mstar_tensor_t& tensor, uint32_t peer,
                      mstar_stream_t* stream) = 0;
  virtual Status Recv(uint32_t rank, mstar_tensor_t& tensor, uint32_t peer,
                      mstar_stream_t* stream) = 0;
  // Rank cannot take part in the collective `what` (why: its own error, such as a bad argument):
  // a transport that can settles the round so that every rank's call fails at once, naming rank
  // and why, instead of the others waiting for it. Returns why. The default (NCCL) only returns
  // why: NCCL cannot end a round a rank skips.
  virtual Status Abstain(uint32_t rank, const char* what, const Status& why) {
    (void)rank;
    (void)what;
    return why;
  }
};

// One rank's handle on a group: what mstar_comm_t points to (host_objects.h).
using CommGroup = std::vector<std::unique_ptr<mstar_comm_t>>;

// size ranks whose collectives rendezvous in host memory; a rank that waits longer than
// timeout_ms for the others fails its call (and the group: every later call fails too).
CommGroup MakeThreadGroup(uint32_t size, uint32_t timeout_ms = 60000);

// One rank per CUDA device in devices (ncclCommInitAll). Unsupported on builds without NCCL.
Result<CommGroup> MakeNcclGroup(const std::vector<int>& devices);

}  // namespace mstar

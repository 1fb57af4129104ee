// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Collectives over an instance's parallel group: through the group's transport when it has one
// (runtime/distributed/comm_transport.h: threads of this process, or NCCL); a single-rank group
// without one reduces to local copies, and its peer-to-peer calls have no peer and say so.
#include <string>

#include "device/device.h"
#include "distributed/comm_transport.h"
#include "host/host_api.h"
#include "host/host_objects.h"
#include "host/services.h"
#include "host/tensor_objects.h"

namespace mstar {
namespace {

mstar_status_t* Fail(uint32_t code, const std::string& message) {
  return NewAbiStatus(code, message.c_str());
}

mstar_status_t* FromStatus(const Status& status) {
  return status.ok() ? nullptr : MakeAbiStatus(status);
}

// A tensor that breaks the tensor rules or is not compact (ValidateTensor): refused, because
// every transport and the local copy move numel * element-size bytes from the first element.
mstar_status_t* CheckTensor(const char* what, const char* role, const mstar_tensor_t* tensor) {
  if (TensorIsValid(tensor)) return nullptr;
  return MakeAbiStatus(ValidateTensor(tensor, std::string(what) + ": " + role + " tensor"));
}

// A NULL, invalid or strided input or output, or an output that may not be written: refused
// here, before any transport (every transport may then write outputs without checking again).
mstar_status_t* CheckTensors(const char* what, const mstar_tensor_t* input,
                             const mstar_tensor_t* output) {
  if (input == nullptr || output == nullptr)
    return Fail(MSTAR_ERR_INVALID_ARGUMENT, std::string(what) + ": NULL tensor");
  if (output == input) {
    if (mstar_status_t* bad = CheckTensor(what, "buffer", input)) return bad;
  } else {
    if (mstar_status_t* bad = CheckTensor(what, "send", input)) return bad;
    if (mstar_status_t* bad = CheckTensor(what, "recv", output)) return bad;
  }
  if ((output->flags & MSTAR_TENSOR_FLAG_READ_ONLY) != 0) {
    return Fail(MSTAR_ERR_INVALID_ARGUMENT, std::string(what) + ": output tensor is read-only");
  }
  // Every transport moves or combines elements of the input's type into the output (NCCL
  // refuses another type; the others would reinterpret the bits).
  const DLDataType in = input->dl.dtype, out = output->dl.dtype;
  if (!SameDType(in, out)) {
    return Fail(MSTAR_ERR_INVALID_ARGUMENT, std::string(what) + ": output dtype " + DTypeName(out) +
                                                " is not the input's " + DTypeName(in));
  }
  return nullptr;
}

// recv = send when they differ; both must have the same byte size (checked by CheckTensors).
mstar_status_t* CopyTensor(const mstar_tensor_t* send, mstar_tensor_t* recv, mstar_stream_t* stream,
                           const char* what) {
  uint64_t bytes = TensorNumBytes(send->dl);
  if (bytes != TensorNumBytes(recv->dl)) {
    return Fail(MSTAR_ERR_INVALID_ARGUMENT, std::string(what) + ": output holds " +
                                                std::to_string(TensorNumBytes(recv->dl)) +
                                                " bytes, expected " + std::to_string(bytes));
  }
  const auto* from = static_cast<const uint8_t*>(TensorBytes(send->dl));
  auto* to = static_cast<uint8_t*>(TensorBytes(recv->dl));
  if (from == to) return nullptr;  // in place (the views' bytes, not their base pointers)
  if (SameDevice(send->dl.device, recv->dl.device) && from < to + bytes && to < from + bytes) {
    return Fail(MSTAR_ERR_INVALID_ARGUMENT,
                std::string(what) + ": send and recv overlap without being the same bytes");
  }
  // As memory_copy: between host memories on a device stream, after what the stream was given.
  return CopyMemory(to, recv->dl.device, from, send->dl.device, bytes, stream);
}

mstar_status_t* NeedsPeers(const mstar_comm_t* comm, const char* what) {
  return Fail(MSTAR_ERR_UNSUPPORTED,
              std::string(what) + ": this group has " + std::to_string(comm->size) +
                  " ranks and no multi-rank transport is configured in this process");
}

uint32_t CommRank(const mstar_comm_t* comm) {
  return comm == nullptr ? 0 : comm->rank;
}
uint32_t CommSize(const mstar_comm_t* comm) {
  return comm == nullptr ? 1 : comm->size;
}

// A collective this rank refuses before its transport sees it: the transport settles the round
// for the other ranks (CommTransport::Abstain), then the refusal is returned.
mstar_status_t* Refuse(mstar_comm_t* comm, const char* what, mstar_status_t* refusal) {
  if (comm == nullptr || comm->transport == nullptr) return refusal;
  const Status why = TakeStatus(refusal);
  return FromStatus(comm->transport->Abstain(comm->rank, what, why));
}

mstar_status_t* CommAllReduce(mstar_comm_t* comm, const mstar_tensor_t* send, mstar_tensor_t* recv,
                              uint32_t op, mstar_stream_t* stream) {
  if (op > MSTAR_REDUCE_MIN)
    return Refuse(comm, "all_reduce", Fail(MSTAR_ERR_INVALID_ARGUMENT, "all_reduce: unknown op"));
  if (mstar_status_t* bad = CheckTensors("all_reduce", send, recv))
    return Refuse(comm, "all_reduce", bad);
  if (comm != nullptr && comm->transport != nullptr) {
    return FromStatus(comm->transport->AllReduce(comm->rank, *send, *recv, op, stream));
  }
  if (CommSize(comm) != 1) return NeedsPeers(comm, "all_reduce");
  return CopyTensor(send, recv, stream, "all_reduce");
}

mstar_status_t* CommAllGather(mstar_comm_t* comm, const mstar_tensor_t* send, mstar_tensor_t* recv,
                              mstar_stream_t* stream) {
  if (mstar_status_t* bad = CheckTensors("all_gather", send, recv))
    return Refuse(comm, "all_gather", bad);
  if (comm != nullptr && comm->transport != nullptr) {
    return FromStatus(comm->transport->AllGather(comm->rank, *send, *recv, stream));
  }
  if (CommSize(comm) != 1) return NeedsPeers(comm, "all_gather");
  return CopyTensor(send, recv, stream, "all_gather");
}

mstar_status_t* CommBroadcast(mstar_comm_t* comm, mstar_tensor_t* buffer, uint32_t root,
                              mstar_stream_t* stream) {
  if (root >= CommSize(comm))
    return Refuse(comm, "broadcast",
                  Fail(MSTAR_ERR_INVALID_ARGUMENT, "broadcast: root out of range"));
  if (mstar_status_t* bad = CheckTensors("broadcast", buffer, buffer))
    return Refuse(comm, "broadcast", bad);
  if (comm != nullptr && comm->transport != nullptr) {
    return FromStatus(comm->transport->Broadcast(comm->rank, *buffer, root, stream));
  }
  if (CommSize(comm) != 1) return NeedsPeers(comm, "broadcast");
  return nullptr;
}

mstar_status_t* CommSend(mstar_comm_t* comm, const mstar_tensor_t* tensor, uint32_t peer,
                         mstar_stream_t* stream) {
  if (peer >= CommSize(comm) || peer == CommRank(comm)) {
    return Fail(MSTAR_ERR_INVALID_ARGUMENT,
                "send: peer " + std::to_string(peer) + " is not another rank of the group");
  }
  if (comm == nullptr || comm->transport == nullptr) return NeedsPeers(comm, "send");
  if (tensor == nullptr) return Fail(MSTAR_ERR_INVALID_ARGUMENT, "send: NULL tensor");
  if (mstar_status_t* bad = CheckTensor("send", "send", tensor)) return bad;
  return FromStatus(comm->transport->Send(comm->rank, *tensor, peer, stream));
}

mstar_status_t* CommRecv(mstar_comm_t* comm, mstar_tensor_t* tensor, uint32_t peer,
                         mstar_stream_t* stream) {
  if (peer >= CommSize(comm) || peer == CommRank(comm)) {
    return Fail(MSTAR_ERR_INVALID_ARGUMENT,
                "recv: peer " + std::to_string(peer) + " is not another rank of the group");
  }
  if (comm == nullptr || comm->transport == nullptr) return NeedsPeers(comm, "recv");
  if (mstar_status_t* bad = CheckTensors("recv", tensor, tensor)) return bad;
  return FromStatus(comm->transport->Recv(comm->rank, *tensor, peer, stream));
}

}  // namespace

void InstallCommServices(mstar_host_api_t& table) {
  table.comm_rank = &CommRank;
  table.comm_size = &CommSize;
  table.comm_all_reduce = &CommAllReduce;
  table.comm_all_gather = &CommAllGather;
  table.comm_broadcast = &CommBroadcast;
  table.comm_send = &CommSend;
  table.comm_recv = &CommRecv;
}

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The NCCL transport: one rank per GPU of this process (ncclCommInitAll), collectives enqueued on
// the caller's CUDA stream (no host synchronization: the caller orders its use of the outputs
// on that stream). Tensors must be in device memory on the rank's device. Built when CMake finds
// NCCL beside the CUDA toolkit (MSTAR_WITH_NCCL); elsewhere MakeNcclGroup says it is unavailable.
#include <algorithm>
#include <string>

#include "distributed/comm_transport.h"
#include "host/host_objects.h"

#if MSTAR_WITH_NCCL
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "device/device.h"
#include "host/tensor_objects.h"
#endif

namespace mstar {

#if MSTAR_WITH_NCCL
namespace {

Status NcclStatus(ncclResult_t result, const std::string& what) {
  if (result == ncclSuccess) return Status::Ok();
  return Internal(what + ": " + ncclGetErrorString(result));
}

// NCCL's type for a DLPack dtype; false when NCCL has none.
bool NcclType(DLDataType dtype, ncclDataType_t* out) {
  if (dtype.lanes != 1) return false;
  if (dtype.code == kDLFloat && dtype.bits == 32)
    *out = ncclFloat32;
  else if (dtype.code == kDLFloat && dtype.bits == 64)
    *out = ncclFloat64;
  else if (dtype.code == kDLFloat && dtype.bits == 16)
    *out = ncclFloat16;
  else if (dtype.code == kDLBfloat && dtype.bits == 16)
    *out = ncclBfloat16;
  else if (dtype.code == kDLInt && dtype.bits == 32)
    *out = ncclInt32;
  else if (dtype.code == kDLInt && dtype.bits == 64)
    *out = ncclInt64;
  else if (dtype.code == kDLUInt && dtype.bits == 8)
    *out = ncclUint8;
  else
    return false;
  return true;
}

ncclRedOp_t NcclOp(uint32_t op) {
  switch (op) {
    case MSTAR_REDUCE_PROD: return ncclProd;
    case MSTAR_REDUCE_MAX: return ncclMax;
    case MSTAR_REDUCE_MIN: return ncclMin;
    default: return ncclSum;
  }
}

cudaStream_t Native(mstar_stream_t* stream) {
  return stream != nullptr ? static_cast<cudaStream_t>(stream->native) : nullptr;
}

class NcclGroup final : public CommTransport {
 public:
  // devices[rank]: the CUDA device of rank's communicator.
  NcclGroup(std::vector<ncclComm_t> comms, std::vector<int> devices)
      : comms_(std::move(comms)), devices_(std::move(devices)) {}
  ~NcclGroup() override {
    for (ncclComm_t comm : comms_) ncclCommDestroy(comm);
  }

  Status AllReduce(uint32_t rank, const mstar_tensor_t& send, mstar_tensor_t& recv, uint32_t op,
                   mstar_stream_t* stream) override {
    MSTAR_ASSIGN_OR_RETURN(ncclDataType_t type, Check(rank, send, "all_reduce"));
    MSTAR_RETURN_IF_ERROR(CheckOutput(send, recv, "all_reduce"));
    if (TensorNumBytes(recv.dl) != TensorNumBytes(send.dl))
      return InvalidArgument("all_reduce: output and input sizes differ");
    return NcclStatus(ncclAllReduce(TensorBytes(send.dl), TensorBytes(recv.dl), Count(send), type,
                                    NcclOp(op), comms_[rank], Native(stream)),
                      "ncclAllReduce");
  }

  Status AllGather(uint32_t rank, const mstar_tensor_t& send, mstar_tensor_t& recv,
                   mstar_stream_t* stream) override {
    MSTAR_ASSIGN_OR_RETURN(ncclDataType_t type, Check(rank, send, "all_gather"));
    MSTAR_RETURN_IF_ERROR(CheckOutput(send, recv, "all_gather"));
    if (TensorNumBytes(recv.dl) != TensorNumBytes(send.dl) * comms_.size())
      return InvalidArgument("all_gather: the output must hold every rank's input");
    return NcclStatus(ncclAllGather(TensorBytes(send.dl), TensorBytes(recv.dl), Count(send), type,
                                    comms_[rank], Native(stream)),
                      "ncclAllGather");
  }

  Status Broadcast(uint32_t rank, mstar_tensor_t& buffer, uint32_t root,
                   mstar_stream_t* stream) override {
    MSTAR_ASSIGN_OR_RETURN(ncclDataType_t type, Check(rank, buffer, "broadcast"));
    return NcclStatus(ncclBroadcast(TensorBytes(buffer.dl), TensorBytes(buffer.dl), Count(buffer),
                                    type, static_cast<int>(root), comms_[rank], Native(stream)),
                      "ncclBroadcast");
  }

  Status Send(uint32_t rank, const mstar_tensor_t& tensor, uint32_t peer,
              mstar_stream_t* stream) override {
    MSTAR_ASSIGN_OR_RETURN(ncclDataType_t type, Check(rank, tensor, "send"));
    return NcclStatus(ncclSend(TensorBytes(tensor.dl), Count(tensor), type, static_cast<int>(peer),
                               comms_[rank], Native(stream)),
                      "ncclSend");
  }

  Status Recv(uint32_t rank, mstar_tensor_t& tensor, uint32_t peer,
              mstar_stream_t* stream) override {
    MSTAR_ASSIGN_OR_RETURN(ncclDataType_t type, Check(rank, tensor, "recv"));
    return NcclStatus(ncclRecv(TensorBytes(tensor.dl), Count(tensor), type, static_cast<int>(peer),
                               comms_[rank], Native(stream)),
                      "ncclRecv");
  }

 private:
  static size_t Count(const mstar_tensor_t& t) {
    return static_cast<size_t>(TensorNumBytes(t.dl) / std::max<uint64_t>(1, t.dl.dtype.bits / 8u));
  }
  // NCCL's type for t, once t and rank are ones this group can move.
  Result<ncclDataType_t> Check(uint32_t rank, const mstar_tensor_t& t, const char* what) {
    if (t.dl.device.device_type != kDLCUDA)
      return InvalidArgument(std::string(what) + ": NCCL moves device tensors only");
    if (rank >= comms_.size()) return InvalidArgument(std::string(what) + ": no such rank");
    // NCCL runs rank's work on its own device: a tensor elsewhere would be read through a pointer
    // of another device.
    if (t.dl.device.device_id != devices_[rank]) {
      return InvalidArgument(
          std::string(what) + ": the tensor is on cuda:" + std::to_string(t.dl.device.device_id) +
          ", rank " + std::to_string(rank) + "'s device is cuda:" + std::to_string(devices_[rank]));
    }
    ncclDataType_t type;
    if (!NcclType(t.dl.dtype, &type))
      return Unsupported(std::string(what) + ": NCCL has no type for this dtype");
    return type;
  }

  // The output is on the input's device (NCCL writes it there). Its dtype is the input's:
  // checked by the host's comm services before any transport.
  static Status CheckOutput(const mstar_tensor_t& send, const mstar_tensor_t& recv,
                            const char* what) {
    if (!SameDevice(recv.dl.device, send.dl.device))
      return InvalidArgument(std::string(what) + ": the output is not on the input's device");
    return Status::Ok();
  }

  std::vector<ncclComm_t> comms_;
  std::vector<int> devices_;  // by rank
};

}  // namespace

Result<CommGroup> MakeNcclGroup(const std::vector<int>& devices) {
  if (devices.empty()) return InvalidArgument("MakeNcclGroup: no devices");
  std::vector<ncclComm_t> comms(devices.size());
  MSTAR_RETURN_IF_ERROR(
      NcclStatus(ncclCommInitAll(comms.data(), static_cast<int>(devices.size()), devices.data()),
                 "ncclCommInitAll"));
  auto transport = std::make_shared<NcclGroup>(comms, devices);
  CommGroup group;
  for (uint32_t rank = 0; rank < devices.size(); ++rank) {
    auto comm = std::make_unique<mstar_comm_t>();
    comm->rank = rank;
    comm->size = static_cast<uint32_t>(devices.size());
    comm->transport = transport;
    group.push_back(std::move(comm));
  }
  return group;
}

#else

Result<CommGroup> MakeNcclGroup(const std::vector<int>& devices) {
  (void)devices;
  return Unsupported("this build has no NCCL (configure with the CUDA toolkit and NCCL present)");
}

#endif

}  // namespace mstar

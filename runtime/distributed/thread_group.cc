// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The thread-group transport: ranks are threads of this process, tensors live in host memory.
// A collective is a rendezvous: each rank posts its call; the last to arrive checks that the
// calls agree, computes every rank's result into the ranks' own buffers and starts the next
// generation, which wakes the others. Nothing is read from a rank's buffers after its call
// returns, so a rank may reuse them at once. Point-to-point sends are buffered: Send copies into
// the (rank, peer) mailbox and returns; Recv takes the oldest message from that peer, which must
// have the receiving tensor's dtype and size (one that does not is an error, and is dropped: the
// two ranks are out of step, and a retry would meet it again). The tensors
// are host memory read and written by the calling thread: a call on a device stream first waits
// for what that stream was given (a device-to-host copy into a pinned send buffer, say), as the
// host's memory_copy does between host memories.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>

#include "device/device.h"
#include "distributed/comm_transport.h"
#include "host/host_objects.h"
#include "host/services.h"
#include "host/tensor_objects.h"

namespace mstar {
namespace {

enum class Kind { kAllReduce, kAllGather, kBroadcast, kAbstain };

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kAllReduce: return "all_reduce";
    case Kind::kAllGather: return "all_gather";
    case Kind::kBroadcast: return "broadcast";
    case Kind::kAbstain: return "a call it could not make";
  }
  return "?";
}

struct Posted {
  Kind kind = Kind::kAllReduce;
  const uint8_t* send = nullptr;
  uint8_t* recv = nullptr;
  uint64_t send_bytes = 0;
  uint64_t recv_bytes = 0;
  DLDataType dtype{};
  uint32_t op = 0;      // all_reduce: MSTAR_REDUCE_*; broadcast: the root
  std::string failure;  // kAbstain: why the rank could not take part
};

Status RequireHost(const mstar_tensor_t& t, const char* what) {
  if (!IsHostDevice(t.dl.device)) {
    return InvalidArgument(std::string(what) +
                           ": the thread-group transport moves host tensors only");
  }
  return Status::Ok();
}

// op(a, b) (std::plus or std::multiplies); signed integers wrap as NCCL's do (through their
// unsigned type: signed overflow is undefined).
template <typename T, typename Op>
T Wrapping(T a, T b, Op op) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(op(static_cast<U>(a), static_cast<U>(b)));
  } else {
    return op(a, b);
  }
}

template <typename T>
void Combine(T* acc, const T* x, uint64_t n, uint32_t op) {
  for (uint64_t i = 0; i < n; ++i) {
    switch (op) {
      case MSTAR_REDUCE_SUM: acc[i] = Wrapping(acc[i], x[i], std::plus<>()); break;
      case MSTAR_REDUCE_PROD: acc[i] = Wrapping(acc[i], x[i], std::multiplies<>()); break;
      case MSTAR_REDUCE_MAX: acc[i] = std::max(acc[i], x[i]); break;
      default: acc[i] = std::min(acc[i], x[i]); break;
    }
  }
}

// acc = reduce(op)(acc, x) over n elements of dtype; false for a dtype it cannot reduce.
bool Reduce(void* acc, const void* x, uint64_t n, DLDataType dtype, uint32_t op) {
  if (dtype.lanes != 1) return false;
  if (dtype.code == kDLFloat && dtype.bits == 32) {
    Combine(static_cast<float*>(acc), static_cast<const float*>(x), n, op);
  } else if (dtype.code == kDLFloat && dtype.bits == 64) {
    Combine(static_cast<double*>(acc), static_cast<const double*>(x), n, op);
  } else if (dtype.code == kDLInt && dtype.bits == 32) {
    Combine(static_cast<int32_t*>(acc), static_cast<const int32_t*>(x), n, op);
  } else if (dtype.code == kDLInt && dtype.bits == 64) {
    Combine(static_cast<int64_t*>(acc), static_cast<const int64_t*>(x), n, op);
  } else {
    return false;
  }
  return true;
}

// WaitForStream, its error naming the call.
Status Settle(mstar_stream_t* stream, const char* what) {
  Status waited = WaitForStream(stream);
  return waited.ok() ? waited : waited.WithContext(std::string(what) + ": waiting for the stream");
}

class ThreadGroup final : public CommTransport {
 public:
  ThreadGroup(uint32_t size, uint32_t timeout_ms)
      : size_(size), timeout_(std::chrono::milliseconds(timeout_ms)), posted_(size) {}

  Status AllReduce(uint32_t rank, const mstar_tensor_t& send, mstar_tensor_t& recv, uint32_t op,
                   mstar_stream_t* stream) override {
    if (Status local = Prepare({&send, &recv}, stream, "all_reduce"); !local.ok())
      return Abstain(rank, "all_reduce", local);
    return Collective(rank, Call(Kind::kAllReduce, send, recv, op));
  }

  Status AllGather(uint32_t rank, const mstar_tensor_t& send, mstar_tensor_t& recv,
                   mstar_stream_t* stream) override {
    if (Status local = Prepare({&send, &recv}, stream, "all_gather"); !local.ok())
      return Abstain(rank, "all_gather", local);
    return Collective(rank, Call(Kind::kAllGather, send, recv, 0));
  }

  Status Broadcast(uint32_t rank, mstar_tensor_t& buffer, uint32_t root,
                   mstar_stream_t* stream) override {
    if (Status local = Prepare({&buffer}, stream, "broadcast"); !local.ok())
      return Abstain(rank, "broadcast", local);
    return Collective(rank, Call(Kind::kBroadcast, buffer, buffer, root));
  }

  Status Abstain(uint32_t rank, const char* what, const Status& why) override {
    Posted call;
    call.kind = Kind::kAbstain;
    call.failure = std::string(what) + ": " + why.message();
    (void)Collective(rank, call);  // every rank's call of this round fails, naming this one
    return why;
  }

  Status Send(uint32_t rank, const mstar_tensor_t& tensor, uint32_t peer,
              mstar_stream_t* stream) override {
    MSTAR_RETURN_IF_ERROR(RequireHost(tensor, "send"));
    MSTAR_RETURN_IF_ERROR(Settle(stream, "send"));
    const uint8_t* data = TensorBytes(tensor.dl);
    try {
      Message message{tensor.dl.dtype,
                      std::vector<uint8_t>(data, data + TensorNumBytes(tensor.dl))};
      std::lock_guard<std::mutex> lock(mutex_);
      mailboxes_[{rank, peer}].push_back(std::move(message));
    } catch (const std::bad_alloc&) {
      return ResourceExhausted("send: no memory to buffer " +
                               std::to_string(TensorNumBytes(tensor.dl)) + " bytes for rank " +
                               std::to_string(peer));
    }
    cv_.notify_all();
    return Status::Ok();
  }

  Status Recv(uint32_t rank, mstar_tensor_t& tensor, uint32_t peer,
              mstar_stream_t* stream) override {
    MSTAR_RETURN_IF_ERROR(RequireHost(tensor, "recv"));
    MSTAR_RETURN_IF_ERROR(Settle(stream, "recv"));
    std::unique_lock<std::mutex> lock(mutex_);
    std::deque<Message>& box = mailboxes_[{peer, rank}];
    if (!cv_.wait_for(lock, timeout_, [&] { return !box.empty(); })) {
      return Unavailable("recv: rank " + std::to_string(rank) + " waited " + TimeoutText() +
                         " for a message from rank " + std::to_string(peer));
    }
    const uint64_t bytes = TensorNumBytes(tensor.dl);
    Message message = std::move(box.front());
    box.pop_front();
    if (message.bytes.size() != bytes || !SameDType(message.dtype, tensor.dl.dtype)) {
      return InvalidArgument("recv: rank " + std::to_string(peer) + " sent " +
                             std::to_string(message.bytes.size()) + " bytes of " +
                             DTypeName(message.dtype) + ", rank " + std::to_string(rank) +
                             " expects " + std::to_string(bytes) + " bytes of " +
                             DTypeName(tensor.dl.dtype) + " (the message is dropped)");
    }
    std::memcpy(TensorBytes(tensor.dl), message.bytes.data(), bytes);
    return Status::Ok();
  }

 private:
  std::string TimeoutText() const { return std::to_string(timeout_.count()) + " ms"; }

  // Rank's posting of a collective over send and recv (the same tensor for a broadcast).
  static Posted Call(Kind kind, const mstar_tensor_t& send, const mstar_tensor_t& recv,
                     uint32_t op) {
    Posted call;
    call.kind = kind;
    call.send = TensorBytes(send.dl);
    call.recv = TensorBytes(recv.dl);
    call.send_bytes = TensorNumBytes(send.dl);
    call.recv_bytes = TensorNumBytes(recv.dl);
    call.dtype = send.dl.dtype;
    call.op = op;
    return call;
  }

  // What a collective needs of its tensors and stream before the rendezvous.
  static Status Prepare(std::initializer_list<const mstar_tensor_t*> tensors,
                        mstar_stream_t* stream, const char* what) {
    for (const mstar_tensor_t* t : tensors) MSTAR_RETURN_IF_ERROR(RequireHost(*t, what));
    return Settle(stream, what);
  }

  // Posts rank's call, and either completes the generation (last to arrive) or waits for it.
  Status Collective(uint32_t rank, const Posted& call) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!broken_.empty()) return FailedPrecondition(broken_);
    posted_[rank] = call;
    const uint64_t generation = generation_;
    if (++arrived_ == size_) {
      try {
        outcome_ = Complete();
      } catch (const std::bad_alloc&) {  // the scratch buffer: every rank fails this round
        outcome_ = ResourceExhausted(std::string(KindName(posted_[0].kind)) +
                                     ": no memory for the combined result");
      }
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return outcome_;
    }
    auto settled = [&] { return generation_ != generation || !broken_.empty(); };
    if (!cv_.wait_for(lock, timeout_, settled)) {
      broken_ = std::string(KindName(call.kind)) + ": rank " + std::to_string(rank) + " waited " +
                TimeoutText() + " for the other ranks; the group is unusable from now on";
      cv_.notify_all();
    }
    if (generation_ == generation) return Unavailable(broken_);
    return outcome_;
  }

  // Checks that every rank made the same call and computes each rank's result (mutex held).
  Status Complete() {
    for (uint32_t r = 0; r < size_; ++r) {
      if (posted_[r].kind == Kind::kAbstain) {
        return FailedPrecondition("rank " + std::to_string(r) +
                                  " could not take part: " + posted_[r].failure);
      }
    }
    const Posted& first = posted_[0];
    const char* name = KindName(first.kind);
    for (uint32_t r = 1; r < size_; ++r) {
      const Posted& p = posted_[r];
      if (p.kind != first.kind) {
        return FailedPrecondition(std::string("collective mismatch: rank 0 called ") + name +
                                  ", rank " + std::to_string(r) + " " + KindName(p.kind));
      }
      if (p.send_bytes != first.send_bytes || !SameDType(p.dtype, first.dtype) ||
          p.op != first.op) {
        return InvalidArgument(
            std::string(name) + ": rank " + std::to_string(r) + " passed " +
            std::to_string(p.send_bytes) + " bytes (dtype code " + std::to_string(p.dtype.code) +
            "/" + std::to_string(p.dtype.bits) + "x" + std::to_string(p.dtype.lanes) +
            ", op/root " + std::to_string(p.op) + "), rank 0 " + std::to_string(first.send_bytes) +
            " bytes (dtype code " + std::to_string(first.dtype.code) + "/" +
            std::to_string(first.dtype.bits) + "x" + std::to_string(first.dtype.lanes) +
            ", op/root " + std::to_string(first.op) + "): every rank must pass the same");
      }
    }
    switch (first.kind) {
      case Kind::kAllReduce: return CompleteAllReduce();
      case Kind::kAllGather: return CompleteAllGather();
      case Kind::kBroadcast: return CompleteBroadcast();
      case Kind::kAbstain: break;  // settled above
    }
    return Internal("unknown collective");
  }

  Status CompleteAllReduce() {
    const Posted& first = posted_[0];
    for (const Posted& p : posted_) {
      if (p.recv_bytes != first.send_bytes)
        return InvalidArgument("all_reduce: an output holds " + std::to_string(p.recv_bytes) +
                               " bytes, expected " + std::to_string(first.send_bytes));
    }
    const uint64_t elements = first.send_bytes / std::max<uint64_t>(1, first.dtype.bits / 8u);
    scratch_.assign(first.send, first.send + first.send_bytes);
    for (uint32_t r = 1; r < size_; ++r) {
      if (!Reduce(scratch_.data(), posted_[r].send, elements, first.dtype, first.op)) {
        return Unsupported("all_reduce: dtype code " + std::to_string(first.dtype.code) + " with " +
                           std::to_string(first.dtype.bits) +
                           " bits (float32, float64, int32 and int64 reduce)");
      }
    }
    for (const Posted& p : posted_) std::memcpy(p.recv, scratch_.data(), scratch_.size());
    return Status::Ok();
  }

  Status CompleteAllGather() {
    const uint64_t part = posted_[0].send_bytes, whole = part * size_;
    for (const Posted& p : posted_) {
      if (p.recv_bytes != whole)
        return InvalidArgument("all_gather: an output holds " + std::to_string(p.recv_bytes) +
                               " bytes, expected " + std::to_string(whole) + " (" +
                               std::to_string(size_) + " ranks x " + std::to_string(part) + ")");
    }
    scratch_.resize(whole);  // a rank's send may alias its own output
    for (uint32_t r = 0; r < size_; ++r)
      std::memcpy(scratch_.data() + r * part, posted_[r].send, part);
    for (const Posted& p : posted_) std::memcpy(p.recv, scratch_.data(), whole);
    return Status::Ok();
  }

  Status CompleteBroadcast() {
    const uint32_t root = posted_[0].op;
    for (uint32_t r = 0; r < size_; ++r) {
      if (r != root) std::memcpy(posted_[r].recv, posted_[root].send, posted_[root].send_bytes);
    }
    return Status::Ok();
  }

  const uint32_t size_;
  const std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Posted> posted_;  // guarded by mutex_, like everything below
  uint32_t arrived_ = 0;
  uint64_t generation_ = 0;
  Status outcome_;
  std::string broken_;
  std::vector<uint8_t> scratch_;
  struct Message {
    DLDataType dtype;
    std::vector<uint8_t> bytes;
  };
  std::map<std::pair<uint32_t, uint32_t>, std::deque<Message>> mailboxes_;
};

}  // namespace

CommGroup MakeThreadGroup(uint32_t size, uint32_t timeout_ms) {
  CommGroup group;
  std::shared_ptr<CommTransport> transport =
      size > 1 ? std::make_shared<ThreadGroup>(size, timeout_ms) : nullptr;
  for (uint32_t rank = 0; rank < size; ++rank) {
    auto comm = std::make_unique<mstar_comm_t>();
    comm->rank = rank;
    comm->size = size;
    comm->transport = transport;
    group.push_back(std::move(comm));
  }
  return group;
}

}  // namespace mstar

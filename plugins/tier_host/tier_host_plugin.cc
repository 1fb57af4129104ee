// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The tier_host plugin: tier `tier_host`, an offload tier holding blocks in host memory
// (HostBlockStore), bounded by `capacity_bytes` with least-recently-used eviction. Block memory
// comes from the host services, pinned on CUDA builds (host_memory.h).
//
// Completion is immediate (sdk::ImmediateTier): Submit runs every op of the batch before it returns, so Poll always
// reports done and Wait never blocks; the batch object still has to be released. Device memory in
// a PUT or GET (device_access = 1) is copied with the host's memory_copy on the batch's stream,
// straight between the caller's device memory and the block (one DMA, no staging), and Submit
// synchronizes the stream before it returns, and before any op that is not a device copy that
// follows one in the same batch. A device copy that the synchronization reports failed fails its op
// (a PUT's block is removed), not the submit; so does an op that throws (out of memory): once
// the first op has run, Submit succeeds and every copy it queued has landed (Run). Each op's
// result is one of MSTAR_OK, NOT_FOUND (CONTAINS/GET/REMOVE of an absent key), INVALID_ARGUMENT
// (unknown kind, NULL data with a non-zero size, GET size different from the stored size),
// RESOURCE_EXHAUSTED (a block larger than the capacity, or host memory exhausted), or the copy's
// error.
//
// Threading: a batch runs under the instance's mutex, so concurrent callers are safe (the host
// serializes calls on one instance anyway): a block that a device GET still reads is not removed
// or its memory reused by another caller's batch before that GET's copy has landed.
#include <limits>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "host_block_store.h"
#include "mstar/sdk.hpp"

namespace {

using namespace mstar::sdk;
using mstar::tier_host::HostBlockStore;

bool HostAddressable(DLDevice device) {
  return device.device_type == kDLCPU || device.device_type == kDLCUDAHost;
}

class TierHost final : public ImmediateTier {
 public:
  explicit TierHost(const mstar_create_args_t& args)
      : ImmediateTier(args),
        store_(ReadCapacity(config()), ReadKeepFree(config()), args.host, args.context) {}

  mstar_tier_info_t Info() override {
    mstar_tier_info_t info{};
    info.capacity_bytes = store_.capacity_bytes();
    info.used_bytes = store_.used_bytes();
    info.persistent = 0;
    info.device_access = 1;  // device memory is copied straight into and out of the blocks
    return info;
  }

  // Throws only before the first op runs (nothing started). From then on nothing leaves Run: an
  // op whose execution throws (out of memory for a copy's closure, a run's keys or a message)
  // fails (RunOne), the batch goes on, and every device copy queued lands before Run returns, so
  // no caller frees memory a copy still writes or reads.
  void Run(mstar_tier_op_t* ops, uint32_t count, mstar_stream_t* stream) override {
    if (count > 0 && ops == nullptr) throw InvalidArgument("tier_host: submit with NULL ops");
    std::lock_guard<std::mutex> batch(batch_mutex_);
    std::vector<uint32_t> queued;  // ops whose device copies are queued on stream, not landed
    queued.reserve(count);         // every push_back below fits: no op is queued twice
    for (uint32_t i = 0; i < count;) {
      // The device copies queued so far land before any op that is not one of them: a host copy
      // is a plain memcpy, unordered with the stream (it may read a block one of them writes,
      // or write memory one of them still reads: a block removed or replaced earlier in the
      // batch is reused at once); and a failed copy removes its PUT's block by key, which must
      // not take a block a later op of the batch put, or answer a CONTAINS for it.
      if (!MovesDeviceBytes(ops[i])) Settle(ops, queued, stream);
      const uint32_t done = RunOne(ops + i, count - i, stream);
      if (stream != nullptr && MovesDeviceBytes(ops[i]))
        for (uint32_t k = i; k < i + done; ++k) queued.push_back(k);
      i += done;
    }
    // The copies read or write blocks the next call may evict: they land before Submit returns.
    Settle(ops, queued, stream);
  }

 private:
  static uint64_t ReadCapacity(const Config& config) {
    int64_t capacity = config.get("capacity_bytes", int64_t{0});
    if (capacity < 0) {
      throw InvalidArgument(config["capacity_bytes"].where() +
                            ": capacity_bytes must be >= 0 (0: unbounded), got " +
                            std::to_string(capacity));
    }
    return static_cast<uint64_t>(capacity);
  }
  // Freed blocks kept for reuse: keep_free_bytes, by default the capacity (all of it when
  // unbounded), since page-locking fresh memory costs more than the copies it serves.
  static uint64_t ReadKeepFree(const Config& config) {
    const int64_t capacity = config.get("capacity_bytes", int64_t{0});
    const int64_t fallback = capacity > 0 ? capacity : std::numeric_limits<int64_t>::max();
    int64_t keep = config.get("keep_free_bytes", fallback);
    if (keep < 0) {
      throw InvalidArgument(config["keep_free_bytes"].where() +
                            ": keep_free_bytes must be >= 0, got " + std::to_string(keep));
    }
    return static_cast<uint64_t>(keep);
  }

  // How many ops from ops[0] form a run: PUTs (or GETs) of one size on one device, each op's
  // data right after the last's, so that their blocks move with one copy (for device memory one
  // DMA instead of one per block, which is what makes a run worth it).
  static uint32_t RunLength(const mstar_tier_op_t* ops, uint32_t count) {
    const mstar_tier_op_t& first = ops[0];
    if ((first.kind != MSTAR_TIER_OP_PUT && first.kind != MSTAR_TIER_OP_GET) || first.size == 0 ||
        first.data == nullptr)
      return 1;
    uint32_t n = 1;
    while (n < count) {
      const mstar_tier_op_t& op = ops[n];
      if (op.kind != first.kind || op.size != first.size ||
          op.device.device_type != first.device.device_type ||
          op.device.device_id != first.device.device_id ||
          op.data != static_cast<uint8_t*>(first.data) + first.size * n)
        break;
      ++n;
    }
    return n;
  }

  // Runs ops[0], with the ops after it as one copy when they form a run; returns how many ran.
  // Never throws: an exception fails ops[0] (RESOURCE_EXHAUSTED for std::bad_alloc, else
  // INTERNAL) and the ops after it run on their own. Whatever throws does so before ops[0]'s copy
  // is queued (the store's steps after a copy do not throw), so nothing is left in flight that
  // the op's result does not cover; its device bytes are waited for all the same (Run).
  uint32_t RunOne(mstar_tier_op_t* ops, uint32_t count, mstar_stream_t* stream) noexcept {
    try {
      const uint32_t n = RunLength(ops, count);
      if (n > 1 && ExecuteRun(ops, n, stream)) return n;
      ops[0].result = Execute(ops[0], stream);
    } catch (const std::bad_alloc&) {
      ops[0].result = MSTAR_ERR_RESOURCE_EXHAUSTED;
    } catch (...) {
      ops[0].result = MSTAR_ERR_INTERNAL;
    }
    return 1;
  }

  // Executes a run of n ops as one copy; false when the store cannot (the ops then run one by
  // one).
  bool ExecuteRun(mstar_tier_op_t* ops, uint32_t n, mstar_stream_t* stream) {
    std::vector<mstar_tier_key_t> keys(n);
    for (uint32_t k = 0; k < n; ++k) keys[k] = ops[k].key;
    uint32_t result = MSTAR_OK;
    const bool done = ops[0].kind == MSTAR_TIER_OP_PUT
                          ? store_.PutRun(keys.data(), n, ops[0].data, ops[0].size,
                                          Into(ops[0].device, stream), &result)
                          : store_.GetRun(keys.data(), n, ops[0].data, ops[0].size,
                                          OutOf(ops[0].device, stream), &result);
    if (!done) return false;
    for (uint32_t k = 0; k < n; ++k) ops[k].result = result;
    return true;
  }

  // How a block's bytes move from the caller's memory on device into the store (Into) and back
  // (OutOf): memcpy for host memory, the host's memory_copy on stream for device memory.
  HostBlockStore::Copy Into(DLDevice device, mstar_stream_t* stream) {
    if (HostAddressable(device)) return HostBlockStore::HostCopy;
    return [this, device, stream](void* dst, const void* src, uint64_t n) {
      return CopyResult(host()->memory_copy(dst, DLDevice{kDLCPU, 0}, src, device, n, stream));
    };
  }
  HostBlockStore::Copy OutOf(DLDevice device, mstar_stream_t* stream) {
    if (HostAddressable(device)) return HostBlockStore::HostCopy;
    return [this, device, stream](void* dst, const void* src, uint64_t n) {
      return CopyResult(host()->memory_copy(dst, device, src, DLDevice{kDLCPU, 0}, n, stream));
    };
  }

  static bool MovesBytes(const mstar_tier_op_t& op) {
    return (op.kind == MSTAR_TIER_OP_PUT || op.kind == MSTAR_TIER_OP_GET) && op.size != 0;
  }
  static bool MovesDeviceBytes(const mstar_tier_op_t& op) {
    return MovesBytes(op) && !HostAddressable(op.device);
  }

  // Waits for the device copies of the ops at queued (cleared). When the stream reports an
  // error, none of them can be trusted to have landed: each that reported MSTAR_OK reports the
  // error instead, and a PUT's block is removed (its bytes are unknown), so no later GET returns
  // it and the batch's other ops stand. Never throws: the results are set before the warning.
  void Settle(mstar_tier_op_t* ops, std::vector<uint32_t>& queued,
              mstar_stream_t* stream) noexcept {
    if (queued.empty()) return;
    mstar_status_t* status = host()->stream_synchronize(stream);
    if (status != nullptr) {
      const uint32_t code = host()->status_code(status);
      for (uint32_t k : queued) {
        if (ops[k].result != MSTAR_OK) continue;
        ops[k].result = code;
        if (ops[k].kind == MSTAR_TIER_OP_PUT) store_.Remove(ops[k].key);
      }
      Warn([&] {
        return "tier_host: waiting for the device copies of " + std::to_string(queued.size()) +
               " ops failed (" + host()->status_message(status) + "); they fail with it";
      });
      host()->status_release(status);
    }
    queued.clear();
  }

  // memory_copy's status as an op result (the status released). Never throws.
  uint32_t CopyResult(mstar_status_t* status) noexcept {
    if (status == nullptr) return MSTAR_OK;
    const uint32_t code = host()->status_code(status);
    Warn([&] {
      return std::string("tier_host: a device copy failed: ") + host()->status_message(status);
    });
    host()->status_release(status);
    return code;
  }

  // Logs message() as a warning; out of memory for it, the warning is lost (the op's result
  // still carries the failure).
  template <typename Message>
  void Warn(const Message& message) const noexcept {
    try {
      Log(MSTAR_LOG_WARN, message());
    } catch (...) {
    }
  }

  uint32_t Execute(mstar_tier_op_t& op, mstar_stream_t* stream) {
    switch (op.kind) {
      case MSTAR_TIER_OP_CONTAINS: return store_.Contains(op.key);
      case MSTAR_TIER_OP_PUT:
        if (store_.capacity_bytes() != 0 && op.size > store_.capacity_bytes()) {
          Log(MSTAR_LOG_WARN, "tier_host: a block of " + std::to_string(op.size) +
                                  " bytes exceeds capacity_bytes " +
                                  std::to_string(store_.capacity_bytes()) +
                                  "; the PUT fails with RESOURCE_EXHAUSTED");
        }
        return store_.Put(op.key, op.data, op.size, Into(op.device, stream));
      case MSTAR_TIER_OP_GET: return store_.Get(op.key, op.data, op.size, OutOf(op.device, stream));
      case MSTAR_TIER_OP_REMOVE: return store_.Remove(op.key);
      default: return Reject(op, "unknown op kind " + std::to_string(op.kind));
    }
  }

  uint32_t Reject(const mstar_tier_op_t& op, const std::string& why) {
    Log(MSTAR_LOG_WARN, "tier_host: rejected op (kind " + std::to_string(op.kind) + "): " + why);
    return MSTAR_ERR_INVALID_ARGUMENT;
  }

  std::mutex batch_mutex_;  // held for a whole batch: its device copies land before the next
  HostBlockStore store_;
};

}  // namespace

MSTAR_PLUGIN("tier_host", 0, TierFactory<TierHost>("tier_host"));

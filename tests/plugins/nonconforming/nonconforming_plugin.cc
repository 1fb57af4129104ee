// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Deliberately non-conforming plugins for the conformance suite's own tests: compiled once per
// fault (NC_FAULT), each breaks exactly one rule and keeps every other.
//   1 export          exports more than mstar_plugin_entry (built without the version script)
//   2 throw           forward lets an exception escape when its input is missing
//   3 batched         forward_batched adds 1 more than forward
//   4 nondeterminism  declares DETERMINISTIC, but each instance adds its creation number
//   5 leaky_resource  abort_step keeps what admit took
//   6 corrupt_tier    GET flips a byte of blocks larger than 1000 bytes
//   7 lossy_offload   an evictable resource whose reload brings back one token more than it
//                     offloaded to its tier
//   8 columnar_rows   a columnar forward whose output has several rows per request and no row
//                     offsets saying so
//   9 create          the submodule's constructor throws: no instance can be created with the
//                     conformance config
//  10 nostats         conforms: a resource without the optional stats hook (so the step
//                     protocol's accounting in units goes unchecked)
//  11 leaky_nostats   abort_step keeps what admit took, in a resource without stats
//  12 never_ready     admit never answers READY, even for one token on an empty resource
//  13 stop_throws     check_stop always fails
//  14 stop_unlisted   check_stop reads output "tokens" without listing it in stop_outputs
//  15 stop_batched    check_stop_batched stops requests that check_stop does not
//  16 hang            forward_batched never returns (for the hung-rule message; not in the
//                     one-rule-each list: every rule that batches hangs)
//  17 leaky_instance  each instance allocates 4 KiB it never frees (found by LeakSanitizer in a
//                     sanitized build only; every rule that makes an instance leaks)
//  18 racy_forward    forward adds to a counter from two threads without synchronizing (found
//                     by ThreadSanitizer in a tsan build only)
//  19 overfull_tier   a tier of 4096 bytes that never evicts, and reports its use as at most
//                     its capacity
//  20 cleanup_throws  cleanup_request lets an exception escape (a hook that returns nothing, so
//                     no rule sees an error: the escaped exception itself fails the rule)
//  21 destroy_throws  the submodule's destroy frees the instance, then lets an exception escape
//  22 leaky_alloc     each instance takes 4 KiB from the host's memory_alloc it never frees
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "mstar/sdk.hpp"

namespace {

using namespace mstar::sdk;

std::atomic<int64_t> g_instances{0};

class Adder final : public Submodule {
 public:
  explicit Adder(const mstar_create_args_t& args) : Submodule(args), instance_(g_instances++) {
    if (NC_FAULT == 9) throw FailedPrecondition("nc_adder: the model failed to start");
    if (NC_FAULT == 17) {
      leaked_ = new std::array<char, 4096>();  // never deleted
      leaked_->fill(static_cast<char>(instance_));
    }
    if (NC_FAULT == 22) {
      void* block = nullptr;  // never freed
      if (mstar_status_t* failed =
              host()->memory_alloc(context(), DLDevice{kDLCPU, 0}, 4096, 64, 0, &block))
        host()->status_release(failed);
    }
  }
  SubmoduleInfo Info() override {
    if (NC_FAULT == 14) return {MSTAR_SUBMODULE_DETERMINISTIC, {}};
    return {MSTAR_SUBMODULE_DETERMINISTIC, {"tokens"}};
  }
  void PrepareInputs(const RequestInfo& request, const TensorMapView& inputs,
                     PreparedInputs& out) override {
    (void)request;
    TensorView tokens = inputs.require("tokens");
    out.tensors.append("tokens", Tensor::Share(host(), tokens));
    out.num_tokens = static_cast<uint32_t>(tokens.numel());
  }
  void Forward(const Step& step) override {
    if (NC_FAULT == 18) AddFromTwoThreads();
    Run(step, 0, 1);
  }
  // Stops the loop when the first output token passes 1000 (the conformance inputs never do).
  uint64_t CheckStop(const RequestInfo& request, const TensorMapView& host_outputs) override {
    (void)request;
    if (NC_FAULT == 13) throw std::runtime_error("nc_adder: the stop check is broken");
    TensorView tokens = host_outputs.require("tokens");
    return tokens.numel() > 0 && tokens.data<int64_t>()[0] > 1000 ? 1 : 0;
  }
  void CheckStopBatched(const std::vector<RequestInfo>& requests,
                        const std::vector<TensorMapView>& host_outputs, uint64_t* masks) override {
    for (size_t i = 0; i < requests.size(); ++i)
      masks[i] = NC_FAULT == 15 ? 1 : CheckStop(requests[i], host_outputs[i]);
  }
#if NC_FAULT != 4
  void ForwardBatched(const Step& step) override {
    while (NC_FAULT == 16) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (uint32_t i = 0; i < step.size(); ++i) Run(step, i, NC_FAULT == 3 ? 2 : 1);
  }
#endif
#if NC_FAULT == 8
  void ForwardColumnar(const Step& step) override {
    TensorView in = step.columnar_inputs().require("tokens");
    std::vector<int64_t> out(in.data<int64_t>(), in.data<int64_t>() + in.numel());
    for (int64_t& v : out) v += 1;
    step.columnar_outputs().append("tokens", FromVector(out));  // step.output_rows() left empty
  }
#endif

 private:
  void Run(const Step& step, uint32_t i, int64_t add) {
    TensorView in = step.inputs(i).require("tokens");
    std::vector<int64_t> out(in.data<int64_t>(), in.data<int64_t>() + in.numel());
    for (int64_t& v : out) v += add + (NC_FAULT == 4 ? instance_ : 0);
    step.outputs(i).append("tokens", FromVector(out));
  }
  // Both threads write g_unguarded with nothing ordering the writes: a data race.
  static void AddFromTwoThreads() {
    static int64_t g_unguarded = 0;
    std::thread other([] { ++g_unguarded; });
    ++g_unguarded;
    other.join();
  }
  int64_t instance_;
  std::array<char, 4096>* leaked_ = nullptr;
};

class Counter final : public Resource {
 public:
  explicit Counter(const mstar_create_args_t& args) : Resource(args) {}
  ResourceInfo Info() override {
    return {NC_FAULT == 7 ? MSTAR_RESOURCE_EVICTABLE | MSTAR_RESOURCE_PUBLISHES : 0u, "tokens"};
  }
  void AddRequest(const RequestInfo& request) override { held_[request.id()] = 0; }
  void RemoveRequest(mstar_request_id_t id) override {
    if (offloaded_.erase(id) == 0) used_ -= held_[id];
    held_.erase(id);
  }
#if NC_FAULT == 7
  void Publish(mstar_request_id_t id, BytesWriter& out) override {
    out.append_pod(held_[id]);
  }
  uint64_t Reclaimable(mstar_request_id_t id) override {
    return offloaded_.count(id) != 0 ? 0 : held_[id];
  }
  uint64_t Offload(mstar_request_id_t id, uint64_t max_units, mstar_stream_t* stream) override {
    (void)max_units;
    (void)stream;
    uint64_t count = held_[id];
    if (count == 0 || offloaded_.count(id) != 0 || args().num_tiers == 0) return 0;
    RunOp(MSTAR_TIER_OP_PUT, id, &count);
    used_ -= count;
    offloaded_.insert(id);
    return count;
  }
  bool Reload(mstar_request_id_t id, mstar_stream_t* stream) override {
    (void)stream;
    if (offloaded_.count(id) == 0) return true;
    uint64_t count = 0;
    RunOp(MSTAR_TIER_OP_GET, id, &count);
    held_[id] = count + 1;  // the fault: the round trip is not exact
    used_ += held_[id];
    offloaded_.erase(id);
    return true;
  }
  bool IsOffloaded(mstar_request_id_t id) override {
    return offloaded_.count(id) != 0;
  }
#endif
  void Declare(const StepDecl& step) override {
    (void)step;
    reserved_.clear();
  }
  Admission Admit(const StepDecl& step, uint32_t index) override {
    if (NC_FAULT == 12 || used_ + step.num_tokens(index) > kCapacity)
      return Admission::NotReady(MSTAR_WAIT_CAPACITY, 1);
    used_ += step.num_tokens(index);
    reserved_[step.id(index)] += step.num_tokens(index);
    return Admission::Ready();
  }
  void Plan(const StepDecl& step, TensorMapRef view, mstar_stream_t* stream) override {
    (void)step;
    (void)view;
    (void)stream;
  }
  void Commit(const StepDecl& step, const uint8_t* succeeded, mstar_stream_t* stream) override {
    (void)stream;
    for (uint32_t i = 0; i < step.size(); ++i) {
      uint64_t tokens = reserved_[step.id(i)];
      if (succeeded[i] != 0) {
        held_[step.id(i)] += tokens;
      } else {
        used_ -= tokens;
      }
    }
    reserved_.clear();
  }
  void AbortStep(const StepDecl& step) override {
    (void)step;
    if (NC_FAULT != 5 && NC_FAULT != 11) {
      for (const auto& [id, tokens] : reserved_) used_ -= tokens;
    }
    reserved_.clear();
  }
#if NC_FAULT != 10 && NC_FAULT != 11
  mstar_resource_stats_t Stats() override {
    mstar_resource_stats_t s{};
    s.capacity_units = kCapacity;
    s.used_units = used_;
    return s;
  }
#endif

 private:
  // One tier operation on the block that holds request id's count, through the host's tier
  // services; throws (a status for the host) when the tier fails it.
  void RunOp(uint32_t kind, mstar_request_id_t id, uint64_t* count) {
    mstar_tier_op_t op{};
    op.struct_size = sizeof(op);
    op.kind = kind;
    std::memcpy(op.key.bytes, &id, sizeof(id));
    op.data = count;
    op.size = sizeof(*count);
    op.device = DLDevice{kDLCPU, 0};
    mstar_tier_handle_t* tier = args().tiers[0];
    mstar_tier_batch_t* batch = nullptr;
    Check(host(), host()->tier_submit(tier, &op, 1, nullptr, &batch));
    mstar_status_t* waited = host()->tier_wait(tier, batch, UINT64_MAX);
    host()->tier_release_batch(tier, batch);
    Check(host(), waited);
    if (op.result != MSTAR_OK) throw Error(op.result, "tier operation failed");
  }

  static constexpr uint64_t kCapacity = 64;
  uint64_t used_ = 0;
  std::map<mstar_request_id_t, uint64_t> held_, reserved_;
  std::set<mstar_request_id_t> offloaded_;
};

class Store final : public ImmediateTier {
 public:
  explicit Store(const mstar_create_args_t& args) : ImmediateTier(args) {}
  mstar_tier_info_t Info() override {
    mstar_tier_info_t info{sizeof(info), MSTAR_ABI_MINOR, 0, 0, 0, 0};
    for (const auto& [key, block] : blocks_) info.used_bytes += block.size();
    if (NC_FAULT == 19) {
      info.capacity_bytes = 4096;
      info.used_bytes = std::min<uint64_t>(info.used_bytes, info.capacity_bytes);
    }
    return info;
  }
  void Run(mstar_tier_op_t* ops, uint32_t count, mstar_stream_t*) override {
    for (uint32_t i = 0; i < count; ++i) Apply(ops[i]);
  }

 private:
  void Apply(mstar_tier_op_t& op) {
    BlockKey key;
    std::memcpy(key.data(), op.key.bytes, key.size());
    auto it = blocks_.find(key);
    const auto* data = static_cast<const uint8_t*>(op.data);
    switch (op.kind) {
      case MSTAR_TIER_OP_PUT:
        blocks_[key].assign(data, data + op.size);
        op.result = MSTAR_OK;
        return;
      case MSTAR_TIER_OP_CONTAINS:
        op.result = it != blocks_.end() ? MSTAR_OK : MSTAR_ERR_NOT_FOUND;
        return;
      case MSTAR_TIER_OP_REMOVE:
        if (it == blocks_.end()) {
          op.result = MSTAR_ERR_NOT_FOUND;
          return;
        }
        blocks_.erase(it);
        op.result = MSTAR_OK;
        return;
      case MSTAR_TIER_OP_GET:
        if (it == blocks_.end() || it->second.size() != op.size) {
          op.result = MSTAR_ERR_NOT_FOUND;
          return;
        }
        std::copy(it->second.begin(), it->second.end(), static_cast<uint8_t*>(op.data));
        if (NC_FAULT == 6 && op.size > 1000) static_cast<uint8_t*>(op.data)[op.size / 2] ^= 1;
        op.result = MSTAR_OK;
        return;
      default: op.result = MSTAR_ERR_UNSUPPORTED;
    }
  }
  using BlockKey = std::array<uint8_t, sizeof(mstar_tier_key_t::bytes)>;
  std::map<BlockKey, std::vector<uint8_t>> blocks_;
};

}  // namespace

#define NC_FACTORIES                                                           \
  SubmoduleFactory<Adder>("nc_adder"), ResourceFactory<Counter>("nc_counter"), \
      TierFactory<Store>("nc_store")

#if NC_FAULT == 2 || NC_FAULT == 20 || NC_FAULT == 21
// The SDK's barrier turns exceptions into statuses; this fault needs the raw ABI. The entry
// copies the SDK's tables and swaps in a forward that throws straight through the C boundary
// when the request has no "tokens" input.

namespace {
const mstar_host_api_t* g_host = nullptr;
mstar_plugin_api_t g_api;
std::vector<mstar_factory_t> g_factories;
mstar_submodule_vtable_t g_submodule;
mstar_status_t* (*g_forward)(void*, const mstar_step_t*) = nullptr;
void (*g_destroy)(void*) = nullptr;

#if NC_FAULT == 2
mstar_status_t* ThrowingForward(void* self, const mstar_step_t* step) {
  if (g_host->tensor_map_count(step->inputs[0], "tokens") == 0)
    throw std::runtime_error("no tokens");  // escapes: the fault
  return g_forward(self, step);
}
#elif NC_FAULT == 20
void ThrowingCleanup(void* self, mstar_request_id_t request) {
  (void)self;
  (void)request;
  throw std::runtime_error("cleanup fails");  // escapes: the fault
}
#else
void ThrowingDestroy(void* self) {
  g_destroy(self);
  throw std::runtime_error("destroy fails");  // escapes: the fault
}
#endif
}  // namespace

extern "C" MSTAR_PLUGIN_EXPORT mstar_status_t* mstar_plugin_entry(
    const mstar_host_api_t* host, mstar_negotiation_t* negotiation,
    const mstar_plugin_api_t** out_plugin) {
  const mstar_plugin_api_t* api = nullptr;
  mstar_status_t* status = ::mstar::sdk::detail::Entry(host, negotiation, &api, NC_PLUGIN_NAME, 0,
                                                       {NC_FACTORIES}, nullptr);
  if (status != nullptr) return status;
  g_host = host;
  g_api = *api;
  g_factories.assign(api->factories, api->factories + api->num_factories);
  for (mstar_factory_t& factory : g_factories) {
    if (factory.kind != MSTAR_KIND_SUBMODULE) continue;
    g_submodule = *static_cast<const mstar_submodule_vtable_t*>(factory.vtable);
    g_forward = g_submodule.forward;
    g_destroy = g_submodule.destroy;
#if NC_FAULT == 2
    g_submodule.forward = &ThrowingForward;
#elif NC_FAULT == 20
    g_submodule.cleanup_request = &ThrowingCleanup;
#else
    g_submodule.destroy = &ThrowingDestroy;
#endif
    factory.vtable = &g_submodule;
  }
  g_api.factories = g_factories.data();
  *out_plugin = &g_api;
  return nullptr;
}
#else
MSTAR_PLUGIN(NC_PLUGIN_NAME, 0, NC_FACTORIES);
#endif

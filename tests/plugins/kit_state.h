// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The test kit's stateful kinds (kit_plugin.cc registers them with its submodules and model):
//   kit_counter  resource: counts tokens against `capacity`; admission of `fail_request` is
//                unservable; offload and reload keep each request's count exactly. Plan, commit,
//                offload and reload synchronize the stream they are given, so a test watching
//                the host's streams sees which stream each hook got. Stricter than the ABI (where
//                a second declare replaces an undispatched step): a declare while the previous
//                declared step was neither committed nor aborted is refused, since the engine
//                ends every step it declares with commit or abort_step, and a step it forgot
//                would keep what admit took for it. Not EVICTABLE with `evictable = false`, and
//                then refuses every offload; `refuse_offload` refuses that request's;
//                `hold_readded`: a request added again after its removal (recomputed) is never
//                admitted (not ready, for no lack of capacity). Counts the token ids each
//                committed step came with (CountIds). A commit of a step holding
//                `fail_commit_request` fails, changing nothing; so do the declare of a step
//                holding `fail_declare_request` and the plan of one holding `fail_plan_request`.
//                `fail_after_tokens`: these faults and `fail_request` strike only once the
//                request holds that many tokens (1: not its first step, a prefill).
//   kit_memory   tier: blocks in a std::map; the first `lose_gets` GETs of blocks it holds fail
//                with DATA_LOSS, as damaged blocks do.
#pragma once

#include <array>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "mstar/sdk.hpp"

namespace mstar::kit {

using namespace mstar::sdk;

class KitCounter final : public Resource {
 public:
  explicit KitCounter(const mstar_create_args_t& args) : Resource(args) {
    capacity_ = static_cast<uint64_t>(config().get("capacity", int64_t{16}));
    fail_request_ = config().get("fail_request", int64_t{-1});
    wait_request_ = config().get("wait_request", int64_t{-1});
    bad_outcome_request_ = config().get("bad_outcome_request", int64_t{-1});
    evictable_ = config().get("evictable", true);
    refuse_offload_ = config().get("refuse_offload", int64_t{-1});
    hold_readded_ = config().get("hold_readded", false);
    fail_commit_request_ = config().get("fail_commit_request", int64_t{-1});
    fail_declare_request_ = config().get("fail_declare_request", int64_t{-1});
    fail_plan_request_ = config().get("fail_plan_request", int64_t{-1});
    fail_after_tokens_ = static_cast<uint64_t>(config().get("fail_after_tokens", int64_t{0}));
  }

  ResourceInfo Info() override { return {evictable_ ? MSTAR_RESOURCE_EVICTABLE : 0u, "tokens"}; }
  // Strict: the host never adds an id it has not removed.
  void AddRequest(const RequestInfo& request) override {
    if (!held_.emplace(request.id(), 0).second)
      throw FailedPrecondition("kit_counter: request " + std::to_string(request.id()) +
                               " is added twice");
    if (hold_readded_ && removed_.count(request.id()) != 0) holding_.insert(request.id());
  }
  void RemoveRequest(mstar_request_id_t id) override {
    removed_.insert(id);
    holding_.erase(id);
    used_ -= held_[id];
    held_.erase(id);
    offloaded_.erase(id);
  }
  void Declare(const StepDecl& step) override {
    ThrowIfHolds(step, fail_declare_request_, "declare");
    if (open_) {
      uint64_t tokens = 0;
      for (const auto& [id, n] : reserved_) tokens += n;
      throw FailedPrecondition("kit_counter: declare while the previous step (" +
                               std::to_string(tokens) +
                               " tokens admitted) was neither committed nor aborted");
    }
    open_ = true;
  }
  Admission Admit(const StepDecl& step, uint32_t index) override {
    if (Strikes(step.id(index), fail_request_)) {
      throw InvalidArgument("kit_counter cannot serve request " + std::to_string(fail_request_));
    }
    if (offloaded_unasked_.count(step.id(index)) != 0) {
      throw FailedPrecondition("kit_counter: request " + std::to_string(step.id(index)) +
                               " was offloaded, though the resource is not EVICTABLE");
    }
    if (static_cast<int64_t>(step.id(index)) == bad_outcome_request_)
      return Admission{0xdead, 0, 0};  // no outcome of mstar/resource.h
    if (static_cast<int64_t>(step.id(index)) == wait_request_ ||
        holding_.count(step.id(index)) != 0) {
      return Admission::NotReady(MSTAR_WAIT_OTHER, 0);  // never ready, for no lack of capacity
    }
    uint64_t tokens = step.num_tokens(index);
    if (held_[step.id(index)] + tokens > capacity_) {
      throw ResourceExhausted("request needs " + std::to_string(held_[step.id(index)] + tokens) +
                              " tokens; capacity is " + std::to_string(capacity_));
    }
    if (used_ + tokens > capacity_) {
      return Admission::NotReady(MSTAR_WAIT_CAPACITY, used_ + tokens - capacity_);
    }
    used_ += tokens;
    reserved_[step.id(index)] = tokens;
    return Admission::Ready();
  }
  void Plan(const StepDecl& step, TensorMapRef view, mstar_stream_t* stream) override {
    ThrowIfHolds(step, fail_plan_request_, "plan");
    Touch(stream);
    std::vector<int64_t> used;
    for (uint32_t i = 0; i < step.size(); ++i)
      used.push_back(static_cast<int64_t>(held_[step.id(i)]));
    view.append("held", FromVector(used));
  }
  void Commit(const StepDecl& step, const uint8_t* succeeded, mstar_stream_t* stream) override {
    Touch(stream);
    for (uint32_t i = 0; i < step.size(); ++i) {
      if (static_cast<int64_t>(step.id(i)) == fail_commit_request_)  // before anything changed
        throw Internal("kit_counter fails the commit of request " + std::to_string(step.id(i)));
    }
    for (uint32_t i = 0; i < step.size(); ++i) {
      auto it = reserved_.find(step.id(i));
      if (it == reserved_.end()) continue;
      if (succeeded[i] != 0) {
        CountIds(step, i);
        held_[step.id(i)] += it->second;
      } else {
        used_ -= it->second;
      }
    }
    reserved_.clear();
    open_ = false;
  }
  void AbortStep(const StepDecl& step) override {
    (void)step;
    for (const auto& [id, tokens] : reserved_) used_ -= tokens;
    reserved_.clear();
    open_ = false;
  }
  uint64_t Reclaimable(mstar_request_id_t id) override { return evictable_ ? held_[id] : 0; }
  // The token ids the host gave a committed step (counters input_ids, steps_without_ids, and
  // first_step_id_sum: the ids of each request's first step, its prompt, added up).
  void CountIds(const StepDecl& step, uint32_t i) {
    TensorView ids = step.input_tokens(i);
    if (!ids.valid()) {
      AddToCounter("steps_without_ids", 1);
      return;
    }
    int64_t sum = 0;
    for (int64_t k = 0; k < ids.numel(); ++k)
      sum += ids.dtype().bits == 64 ? ids.data<int64_t>()[k] : ids.data<int32_t>()[k];
    AddToCounter("input_ids", ids.numel());
    if (held_[step.id(i)] == 0) AddToCounter("first_step_id_sum", sum);
  }
  uint64_t Offload(mstar_request_id_t id, uint64_t max_units, mstar_stream_t* stream) override {
    (void)max_units;
    Touch(stream);
    if (!evictable_) {  // the request fails at its next admission (an error here is survived)
      offloaded_unasked_.insert(id);
      throw FailedPrecondition("kit_counter: request " + std::to_string(id) +
                               " offloaded, though the resource is not EVICTABLE");
    }
    if (static_cast<int64_t>(id) == refuse_offload_) {
      throw Error(MSTAR_ERR_UNAVAILABLE,
                  "kit_counter refuses to offload request " + std::to_string(id));
    }
    if (offloaded_.count(id) != 0) return 0;
    uint64_t freed = held_[id];
    used_ -= freed;
    offloaded_[id] = freed;
    held_[id] = 0;
    return freed;
  }
  bool Reload(mstar_request_id_t id, mstar_stream_t* stream) override {
    Touch(stream);
    uint64_t need = offloaded_[id];
    if (used_ + need > capacity_) return false;
    used_ += need;
    held_[id] = need;
    offloaded_.erase(id);
    return true;
  }
  bool IsOffloaded(mstar_request_id_t id) override { return offloaded_.count(id) != 0; }
  mstar_resource_stats_t Stats() override {
    mstar_resource_stats_t s{};
    s.capacity_units = capacity_;
    s.used_units = used_;
    for (const auto& [id, n] : offloaded_) s.offloaded_units += n;
    return s;
  }

 private:
  bool Strikes(mstar_request_id_t id, int64_t request) {
    return static_cast<int64_t>(id) == request && held_[id] >= fail_after_tokens_;
  }
  void ThrowIfHolds(const StepDecl& step, int64_t request, const char* hook) {
    for (uint32_t i = 0; i < step.size(); ++i) {
      if (Strikes(step.id(i), request))
        throw Internal(std::string("kit_counter fails the ") + hook +
                       " of a step holding request " + std::to_string(request));
    }
  }
  void Touch(mstar_stream_t* stream) {
    if (stream != nullptr) Check(host(), host()->stream_synchronize(stream));
  }

  uint64_t capacity_ = 16;
  int64_t fail_request_ = -1;
  int64_t wait_request_ = -1;
  int64_t bad_outcome_request_ = -1;
  bool evictable_ = true;
  int64_t refuse_offload_ = -1;
  std::set<mstar_request_id_t> offloaded_unasked_;  // offloaded though not EVICTABLE
  bool hold_readded_ = false;
  int64_t fail_commit_request_ = -1;
  int64_t fail_declare_request_ = -1;
  int64_t fail_plan_request_ = -1;
  uint64_t fail_after_tokens_ = 0;
  std::set<mstar_request_id_t> removed_;  // every request ever removed
  std::set<mstar_request_id_t> holding_;  // added again after a removal, with hold_readded
  uint64_t used_ = 0;
  std::map<mstar_request_id_t, uint64_t> held_;
  std::map<mstar_request_id_t, uint64_t> reserved_;  // admitted in the open step
  std::map<mstar_request_id_t, uint64_t> offloaded_;
  bool open_ = false;  // a step was declared and not yet committed or aborted
};

class KitMemory final : public ImmediateTier {
 public:
  explicit KitMemory(const mstar_create_args_t& args)
      : ImmediateTier(args), lose_gets_(config().get("lose_gets", int64_t{0})) {}

  mstar_tier_info_t Info() override {
    mstar_tier_info_t info{};
    info.capacity_bytes = 0;
    info.used_bytes = used_;
    return info;
  }
  void Run(mstar_tier_op_t* ops, uint32_t count, mstar_stream_t*) override {
    for (uint32_t i = 0; i < count; ++i) Execute(ops[i]);
  }

 private:
  void Execute(mstar_tier_op_t& op) {
    BlockKey key;
    std::memcpy(key.data(), op.key.bytes, key.size());
    auto it = blocks_.find(key);
    switch (op.kind) {
      case MSTAR_TIER_OP_CONTAINS:
        op.result = it == blocks_.end() ? MSTAR_ERR_NOT_FOUND : MSTAR_OK;
        break;
      case MSTAR_TIER_OP_PUT: {
        auto* data = static_cast<uint8_t*>(op.data);
        if (it != blocks_.end()) used_ -= it->second.size();
        blocks_[key].assign(data, data + op.size);
        used_ += op.size;
        op.result = MSTAR_OK;
        break;
      }
      case MSTAR_TIER_OP_GET:
        if (it == blocks_.end()) {
          op.result = MSTAR_ERR_NOT_FOUND;
        } else if (lose_gets_ > 0) {
          --lose_gets_;
          op.result = MSTAR_ERR_DATA_LOSS;
        } else if (it->second.size() != op.size) {
          op.result = MSTAR_ERR_INVALID_ARGUMENT;
        } else {
          std::copy(it->second.begin(), it->second.end(), static_cast<uint8_t*>(op.data));
          op.result = MSTAR_OK;
        }
        break;
      case MSTAR_TIER_OP_REMOVE:
        if (it == blocks_.end()) {
          op.result = MSTAR_ERR_NOT_FOUND;
        } else {
          used_ -= it->second.size();
          blocks_.erase(it);
          op.result = MSTAR_OK;
        }
        break;
      default: op.result = MSTAR_ERR_UNSUPPORTED;
    }
  }

  using BlockKey = std::array<uint8_t, sizeof(mstar_tier_key_t::bytes)>;
  std::map<BlockKey, std::vector<uint8_t>> blocks_;
  uint64_t used_ = 0;
  int64_t lose_gets_;  // GETs of blocks held still to fail with DATA_LOSS, as damaged blocks do
};

}  // namespace mstar::kit

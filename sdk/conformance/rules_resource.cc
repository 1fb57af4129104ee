// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Rules for resources: the step protocol gives back what admit took (its capacity accounting
// exact when the resource reports stats), with and without a step's token ids, offload/reload
// round trips, and a resident delta replays on a fresh instance.
#include <map>
#include <optional>
#include <random>

#include "rule_context.h"

namespace mstar::conformance {
namespace {

// Whether a forward may write tensor's bytes in place from the host (see ResourceDriver::Plan).
bool WritableHostBytes(const mstar_tensor_t& tensor) {
  const DLTensor& dl = tensor.dl;
  if ((tensor.flags & MSTAR_TENSOR_FLAG_READ_ONLY) != 0 || dl.data == nullptr) return false;
  if (dl.device.device_type != kDLCPU && dl.device.device_type != kDLCUDAHost) return false;
  if (dl.strides == nullptr) return true;
  int64_t expected = 1;
  for (int32_t d = dl.ndim - 1; d >= 0; --d) {
    if (dl.shape[d] != 1 && dl.strides[d] != expected) return false;
    expected *= dl.shape[d];
  }
  return true;
}
// Fills the tensor's bytes with a pattern of seed and each byte's offset (no period a page shares).
void Scribble(const DLTensor& dl, uint32_t seed) {
  uint8_t* bytes = TensorBytes(dl);
  const uint64_t size = TensorNumBytes(dl);
  for (uint64_t i = 0; i < size; ++i)
    bytes[i] = static_cast<uint8_t>((static_cast<uint32_t>(i) * 2654435761u + seed * 40503u) >> 24);
}

// How an admit that took nothing answered, for messages.
std::string Refusal(const Status& status, const mstar_admit_t& out) {
  if (!status.ok()) return "an error status (" + status.message() + ")";
  if (out.outcome != MSTAR_ADMIT_NOT_READY) return "outcome " + std::to_string(out.outcome);
  switch (out.wait_reason) {
    case MSTAR_WAIT_CAPACITY: return "not ready, waiting for capacity";
    case MSTAR_WAIT_TRANSFER: return "not ready, waiting for a transfer";
    case MSTAR_WAIT_RELOAD: return "not ready, waiting for a reload";
    default: return "not ready";
  }
}

// Requests and steps against one resource instance, as the engine drives them.
class ResourceDriver {
 public:
  explicit ResourceDriver(PluginInstance& instance)
      : instance_(instance), params_(std::make_shared<ConfigTree>()) {}

  const mstar_resource_vtable_t* t() const { return instance_.resource(); }

  void Add(mstar_request_id_t id) {
    infos_[id] = mstar_request_info_t{};
    mstar_request_info_t& info = infos_[id];
    info.struct_size = sizeof(info);
    info.struct_version = MSTAR_ABI_MINOR;
    info.request_id = id;
    info.walk = "conformance";
    info.partition = "main";
    info.params = params_->root();
    RequireOk(Call("add_request", [&] { return t()->add_request(instance_.self(), &info); }),
              "add_request");
  }
  void Remove(mstar_request_id_t id) {
    CallPluginVoid(instance_, "remove_request", [&] { t()->remove_request(instance_.self(), id); });
    positions_.erase(id);
  }
  // How the following steps' declarations carry token ids (mstar_step_decl_t.input_tokens): not
  // at all, or as TokenIds says.
  void GiveTokenIds(bool give) { give_ids_ = give; }

  // Declares and admits; returns the admitted ids (re-declared as the step, like the engine).
  std::vector<mstar_request_id_t> Admit(const std::vector<mstar_request_id_t>& ids,
                                        const std::vector<uint32_t>& tokens) {
    Declare(ids, tokens);
    std::vector<mstar_request_id_t> admitted;
    std::vector<uint32_t> admitted_tokens;
    for (uint32_t i = 0; i < ids.size(); ++i) {
      mstar_admit_t out{sizeof(out), MSTAR_ABI_MINOR, MSTAR_ADMIT_READY, 0, 0};
      Status status = Call("admit", [&] { return t()->admit(instance_.self(), &decl_, i, &out); });
      if (status.ok() && out.outcome == MSTAR_ADMIT_READY) {
        admitted.push_back(ids[i]);
        admitted_tokens.push_back(tokens[i]);
      } else {
        last_refusal_ = Refusal(status, out);
      }
    }
    if (admitted.size() != ids.size()) {
      Abort();
      if (admitted.empty()) return admitted;
      return Admit(admitted, admitted_tokens);
    }
    return admitted;
  }
  // Plans the declared step. With a seed, then writes into every tensor of the view a forward
  // may write (host memory, contiguous, not read-only) bytes made from the seed and each byte's
  // offset, as a model writes its state (K/V) into the pages the view gives it.
  void Plan(std::optional<uint32_t> seed = std::nullopt) {
    auto view = NewTensorMap();
    RequireOk(
        Call("plan", [&] { return t()->plan(instance_.self(), &decl_, view.get(), nullptr); }),
        "plan");
    if (!seed) return;
    for (const mstar_tensor_map::Entry& entry : view->entries()) {
      for (mstar_tensor_t* tensor : entry.tensors) {
        if (WritableHostBytes(*tensor)) Scribble(tensor->dl, *seed);
      }
    }
  }
  void Commit(const std::vector<uint8_t>& succeeded) {
    RequireOk(
        Call("commit",
             [&] { return t()->commit(instance_.self(), &decl_, succeeded.data(), nullptr); }),
        "commit");
    for (size_t i = 0; i < ids_.size(); ++i)
      if (succeeded[i] != 0) positions_[ids_[i]] += tokens_[i];
  }
  void Abort() {
    CallPluginVoid(instance_, "abort_step", [&] { t()->abort_step(instance_.self(), &decl_); });
  }

  std::optional<mstar_resource_stats_t> Stats() {
    if (t()->stats == nullptr) return std::nullopt;
    mstar_resource_stats_t s{sizeof(s), MSTAR_ABI_MINOR, 0, 0, 0, 0};
    RequireOk(Call("stats", [&] { return t()->stats(instance_.self(), &s); }), "stats");
    return s;
  }
  uint32_t Flags() {
    mstar_resource_info_t info{sizeof(info), MSTAR_ABI_MINOR, 0, 0, nullptr};
    RequireOk(Call("info", [&] { return t()->info(instance_.self(), &info); }), "info");
    return info.flags;
  }
  template <typename F>
  Status Call(const char* hook, F&& f) {
    return CallPlugin(instance_, hook, std::forward<F>(f));
  }
  PluginInstance& instance() { return instance_; }
  // What admit last answered when it did not admit a request.
  const std::string& last_refusal() const { return last_refusal_; }

 private:
  void Declare(const std::vector<mstar_request_id_t>& ids, const std::vector<uint32_t>& tokens) {
    ids_ = ids;
    tokens_ = tokens;
    info_ptrs_.clear();
    for (mstar_request_id_t id : ids_) info_ptrs_.push_back(&infos_[id]);
    decl_ = mstar_step_decl_t{sizeof(mstar_step_decl_t),
                              MSTAR_ABI_MINOR,
                              "conformance",
                              "conformance",
                              static_cast<uint32_t>(ids_.size()),
                              -1,
                              ids_.data(),
                              tokens_.data(),
                              info_ptrs_.data(),
                              0,
                              0,
                              nullptr};
    if (give_ids_) TokenIds();
    RequireOk(Call("declare", [&] { return t()->declare(instance_.self(), &decl_); }), "declare");
  }

  // The declared step's token ids, as a host hands them: the ids at each request's next
  // positions, the same sequence for requests of the same parity (so a prefix cache finds
  // something to share), int64 or int32 by turns; now and then a request's entry, or the whole
  // array, is NULL (ids unknown).
  void TokenIds() {
    ++id_steps_;
    if (id_steps_ % 8 == 0) return;  // decl_.input_tokens stays NULL
    const bool wide = id_steps_ % 2 == 0;
    const size_t n = ids_.size();
    id_values64_.assign(n, {});
    id_values32_.assign(n, {});
    id_tensors_.assign(n, mstar_tensor_t{});
    id_lengths_.assign(n, 0);
    id_pointers_.assign(n, nullptr);
    for (size_t i = 0; i < n; ++i) {
      if ((id_steps_ + i) % 7 == 3) continue;  // this request's ids are unknown
      const uint64_t start = positions_[ids_[i]];
      for (uint64_t p = start; p < start + tokens_[i]; ++p) {
        const int64_t id = static_cast<int64_t>(p % 5 + (ids_[i] % 2) * 100);
        id_values64_[i].push_back(id);
        id_values32_[i].push_back(static_cast<int32_t>(id));
      }
      mstar_tensor_t& t = id_tensors_[i];
      t.struct_size = sizeof(t);
      t.struct_version = MSTAR_TENSOR_VERSION;
      t.dl.data = wide ? static_cast<void*>(id_values64_[i].data())
                       : static_cast<void*>(id_values32_[i].data());
      t.dl.device = DLDevice{kDLCPU, 0};
      t.dl.ndim = 1;
      t.dl.dtype = DLDataType{kDLInt, static_cast<uint8_t>(wide ? 64 : 32), 1};
      id_lengths_[i] = tokens_[i];
      t.dl.shape = &id_lengths_[i];
      t.dl.strides = &kUnitStride;
      t.flags = MSTAR_TENSOR_FLAG_READ_ONLY;
      id_pointers_[i] = &t;
    }
    decl_.input_tokens = id_pointers_.data();
  }

  PluginInstance& instance_;
  std::shared_ptr<const ConfigTree> params_;
  std::map<mstar_request_id_t, mstar_request_info_t> infos_;
  std::vector<mstar_request_id_t> ids_;
  std::vector<uint32_t> tokens_;
  std::vector<const mstar_request_info_t*> info_ptrs_;
  mstar_step_decl_t decl_{};
  std::string last_refusal_;
  // Token ids (TokenIds): each request's committed tokens, and the declared step's ids.
  static inline int64_t kUnitStride = 1;
  bool give_ids_ = false;
  uint64_t id_steps_ = 0;
  std::map<mstar_request_id_t, uint64_t> positions_;
  std::vector<std::vector<int64_t>> id_values64_;
  std::vector<std::vector<int32_t>> id_values32_;
  std::vector<mstar_tensor_t> id_tensors_;
  std::vector<int64_t> id_lengths_;
  std::vector<const mstar_tensor_t*> id_pointers_;
};

std::string Units(const mstar_resource_stats_t& s) {
  return "used " + std::to_string(s.used_units) + " of " + std::to_string(s.capacity_units) +
         " (cached " + std::to_string(s.cached_units) + ")";
}

// The largest admission LargestAdmit probes for, in tokens.
constexpr uint32_t kMaxProbeTokens = 1u << 16;
// How many times CyclesKeepAdmitting repeats each way of giving back an admission.
constexpr int kGiveBackCycles = 100;

// With stats: admitting one token for request id and aborting the step leaves used as it was.
void AbortGivesBackUnits(ResourceDriver& d, mstar_request_id_t id) {
  mstar_resource_stats_t before = *d.Stats();
  if (d.Admit({id}, {1}).empty()) return;  // LargestAdmit words that failure
  d.Abort();
  mstar_resource_stats_t after = *d.Stats();
  Require(after.used_units == before.used_units,
          "abort_step did not give back what admit took: before " + Units(before) + ", after " +
              Units(after));
}

// The largest token count (a power of two up to kMaxProbeTokens) admit answers ready for request
// id alone, each probe aborted. Fails when admit does not take even one token.
uint32_t LargestAdmit(ResourceDriver& d, mstar_request_id_t id) {
  uint32_t largest = 0;
  for (uint32_t tokens = 1; tokens <= kMaxProbeTokens; tokens *= 2) {
    if (d.Admit({id}, {tokens}).empty()) break;
    d.Abort();
    largest = tokens;
  }
  Require(largest > 0,
          "admit never answered ready for a single request of 1 token on an empty resource, "
          "only " +
              d.last_refusal() +
              ", so the protocol cannot be checked: give the resource room in its config, or "
              "skip the rule saying why");
  return largest;
}

// Admits tokens for request id again and again, giving the admission back each time by
// abort_step, then by a commit that marks the request failed: a resource that keeps any of it
// soon refuses (checked without stats).
void CyclesKeepAdmitting(ResourceDriver& d, mstar_request_id_t id, uint32_t tokens) {
  for (const bool abort : {true, false}) {
    for (int cycle = 0; cycle < kGiveBackCycles; ++cycle) {
      Require(!d.Admit({id}, {tokens}).empty(),
              "admit answered ready for one request of " + std::to_string(tokens) +
                  " tokens, then, after " + std::to_string(cycle + 1) +
                  " step(s) of that request ended by " +
                  (abort ? "abort_step" : "commit with the request failed") + ", answered " +
                  d.last_refusal() + ": " + (abort ? "abort_step" : "commit of a failed request") +
                  " must give back what admit took");
      if (abort) {
        d.Abort();
        continue;
      }
      d.Plan();
      d.Commit({0});
    }
  }
}

// Random steps over requests 1..requests, each adding 1 to max_tokens tokens: some aborted, the
// rest planned and committed (now and then with a request failed). With stats, checks used <=
// capacity and what abort gives back. Fails when no step admitted anything.
void RandomSteps(ResourceDriver& d, uint32_t requests, bool stats, uint32_t max_tokens = 4) {
  std::mt19937 rng(42);
  int admitted_steps = 0;
  for (int round = 0; round < 200; ++round) {
    if (round % 10 == 9) {  // a request leaves and another arrives: capacity comes back
      mstar_request_id_t id = 1 + rng() % requests;
      d.Remove(id);
      d.Add(id);
    }
    std::vector<mstar_request_id_t> ids;
    std::vector<uint32_t> tokens;
    for (uint32_t id = 1; id <= requests; ++id) {
      if (rng() % 2 == 0) continue;
      ids.push_back(id);
      tokens.push_back(1 + rng() % max_tokens);
    }
    if (ids.empty()) continue;
    std::optional<mstar_resource_stats_t> before = d.Stats();
    std::vector<mstar_request_id_t> admitted = d.Admit(ids, tokens);
    if (admitted.empty()) continue;
    ++admitted_steps;
    if (stats) {
      mstar_resource_stats_t during = *d.Stats();
      Require(during.capacity_units == 0 || during.used_units <= during.capacity_units,
              "after admit: " + Units(during) + ": admit took more than the capacity");
    }
    if (rng() % 5 == 0) {
      d.Abort();
      if (!stats) continue;
      mstar_resource_stats_t after = *d.Stats();
      Require(after.used_units == before->used_units,
              "abort_step did not give back what admit took: before " + Units(*before) +
                  ", after " + Units(after));
      continue;
    }
    d.Plan();
    std::vector<uint8_t> succeeded(admitted.size(), 1);
    if (rng() % 4 == 0) succeeded[rng() % succeeded.size()] = 0;
    d.Commit(succeeded);
    if (!stats) continue;
    mstar_resource_stats_t after = *d.Stats();
    Require(after.capacity_units == 0 || after.used_units <= after.capacity_units,
            "after commit: " + Units(after));
  }
  Require(admitted_steps > 0, "admit did not answer ready for any of 200 random steps of 1 to " +
                                  std::to_string(requests) + " requests adding 1 to " +
                                  std::to_string(max_tokens) + " tokens");
}

// Removes every request; afterwards the resource holds nothing but its cache (with stats) and
// admits tokens for a new request alone again.
void RemoveReleasesEverything(ResourceDriver& d, uint32_t requests, uint32_t tokens, bool stats) {
  for (uint32_t id = 1; id <= requests; ++id) d.Remove(id);
  if (stats) {
    mstar_resource_stats_t end = *d.Stats();
    Require(end.used_units == 0,
            "every request was removed but " + Units(end) +
                ": remove_request must release everything a request holds (a cache may keep "
                "pages, counted as cached_units, not used_units)");
  }
  const mstar_request_id_t fresh = requests + 1;
  d.Add(fresh);
  Require(!d.Admit({fresh}, {tokens}).empty(),
          "every request was removed, yet admit answered " + d.last_refusal() +
              " for a new request of " + std::to_string(tokens) +
              " tokens, which it admitted on the empty resource: remove_request must release "
              "everything a request holds");
  d.Abort();
  d.Remove(fresh);
}

void StepProtocol(const Subject& s) {
  std::unique_ptr<PluginInstance> instance = s.Create();
  ResourceDriver d(*instance);
  const bool stats = d.Stats().has_value();
  const uint32_t requests = std::max<uint32_t>(2, s.settings.requests);
  for (uint32_t id = 1; id <= requests; ++id) d.Add(id);
  if (stats) AbortGivesBackUnits(d, 1);
  const uint32_t largest = LargestAdmit(d, 1);
  CyclesKeepAdmitting(d, 1, largest);
  RandomSteps(d, requests, stats);
  // Again with token ids in the declarations (ABI 1.3), some unknown, and steps of up to 16
  // tokens: a prefix cache keyed by them shares pages between requests (a fresh request's first
  // step finds its predecessors' full pages), and must still give back exactly what admit took.
  for (uint32_t id = 1; id <= requests; ++id) {  // fresh requests, whose ids start at 0
    d.Remove(id);
    d.Add(id);
  }
  d.GiveTokenIds(true);
  RandomSteps(d, requests, stats, 16);
  RemoveReleasesEverything(d, requests, largest, stats);
  if (!stats) {
    Note(
        "no stats hook: the accounting in units (used <= capacity, what abort_step and "
        "remove_request give back) was not checked, only that admissions keep being given back");
  }
}

void OffloadReload(const Subject& s) {
  std::unique_ptr<PluginInstance> instance = s.Create();
  ResourceDriver d(*instance);
  if ((d.Flags() & MSTAR_RESOURCE_EVICTABLE) == 0) Skip("not MSTAR_RESOURCE_EVICTABLE");
  const mstar_resource_vtable_t* t = d.t();
  Require(t->offload && t->reload && t->is_offloaded && t->reclaimable,
          "MSTAR_RESOURCE_EVICTABLE needs offload, reload, is_offloaded and reclaimable");
  d.Add(1);
  d.Add(2);
  for (int step = 0; step < 3; ++step) {
    std::vector<mstar_request_id_t> admitted = d.Admit({1, 2}, {2, 1});
    if (admitted.size() != 2) Skip("the resource is too small for two requests of 6 and 3 units");
    d.Plan(/*seed=*/1);
    d.Commit({1, 1});
  }
  auto publish = [&](std::vector<uint8_t>* out) {
    if ((d.Flags() & MSTAR_RESOURCE_PUBLISHES) == 0 || t->publish == nullptr) return false;
    mstar_bytes bytes;
    RequireOk(d.Call("publish", [&] { return t->publish(instance->self(), 1, &bytes); }),
              "publish");
    *out = bytes.data;
    return true;
  };
  std::vector<uint8_t> published_before, published_after;
  bool publishes = publish(&published_before);
  uint64_t units = 0;
  RequireOk(d.Call("reclaimable", [&] { return t->reclaimable(instance->self(), 1, &units); }),
            "reclaimable");
  Require(units > 0, "a request holding committed state reports 0 reclaimable units");
  uint64_t reclaimed = 0;
  RequireOk(
      d.Call("offload", [&] { return t->offload(instance->self(), 1, 0, nullptr, &reclaimed); }),
      "offload");
  if (reclaimed == 0 && !s.settings.tiers)
    Skip("offload moved nothing, and the conformance config gives this resource no tiers");
  Require(reclaimed > 0, "offload reclaimed 0 units although reclaimable reported " +
                             std::to_string(units) +
                             " and the suite's memory tier accepts every block: offload must "
                             "move what reclaimable promises");
  uint32_t offloaded = 0;
  RequireOk(
      d.Call("is_offloaded", [&] { return t->is_offloaded(instance->self(), 1, &offloaded); }),
      "is_offloaded");
  Require(offloaded != 0, "is_offloaded is 0 right after an offload that reclaimed units");
  // Another request takes what the offload freed and writes other bytes there, so a reload that
  // brought back the capacity without the bytes shows in what request 1 publishes.
  d.Add(3);
  if (d.Admit({3}, {6}).size() == 1) {
    d.Plan(/*seed=*/2);
    d.Commit({1});
  } else {
    Note(
        "request 3 was not admitted in what the offload freed, so nothing overwrote request 1's "
        "old place: a reload that brings back capacity without the bytes would go unseen");
  }
  d.Remove(3);
  uint32_t done = 0;
  RequireOk(d.Call("reload", [&] { return t->reload(instance->self(), 1, nullptr, &done); }),
            "reload");
  Require(done != 0, "reload did not complete although the capacity it freed is free again");
  RequireOk(
      d.Call("is_offloaded", [&] { return t->is_offloaded(instance->self(), 1, &offloaded); }),
      "is_offloaded");
  Require(offloaded == 0, "is_offloaded is still nonzero after a completed reload");
  if (publishes) {
    publish(&published_after);
    Require(published_before == published_after,
            "the request's published state differs after offload, another request writing where "
            "it was, and reload: round trips must be byte-exact");
  } else {
    Note(
        "the bytes that came back were not compared (the resource does not publish, which is "
        "how this rule reads them)");
  }
}

void ResidentDelta(const Subject& s) {
  std::unique_ptr<PluginInstance> leader = s.Create("leader");
  ResourceDriver l(*leader);
  if ((l.Flags() & MSTAR_RESOURCE_RESIDENT_DELTA) == 0) Skip("not MSTAR_RESOURCE_RESIDENT_DELTA");
  std::unique_ptr<PluginInstance> follower = s.Create("follower");
  ResourceDriver f(*follower);
  for (mstar_request_id_t id : {1, 2, 3}) l.Add(id);  // the follower learns them from the delta
  std::mt19937 rng(7);
  // Up to `rounds` steps of random sizes of the live requests; how many were admitted.
  auto run_steps = [&](const std::vector<mstar_request_id_t>& ids, int rounds) {
    int steps = 0;
    for (int round = 0; round < rounds; ++round) {
      std::vector<uint32_t> tokens;
      for (size_t i = 0; i < ids.size(); ++i) tokens.push_back(1 + rng() % 3);
      std::vector<mstar_request_id_t> admitted = l.Admit(ids, tokens);
      if (admitted.empty()) break;
      l.Plan();
      l.Commit(std::vector<uint8_t>(admitted.size(), 1));
      ++steps;
    }
    return steps;
  };
  // Takes the leader's delta (the moves since the last take) and applies it to the follower,
  // which then holds what the leader holds.
  auto ship = [&](const std::string& which) {
    mstar_bytes delta;
    RequireOk(
        l.Call("take_resident_delta",
               [&] { return leader->resource()->take_resident_delta(leader->self(), &delta); }),
        "take_resident_delta (" + which + ")");
    uint64_t consumed = 0;
    uint32_t complete = 0;
    RequireOk(f.Call("apply_resident_delta",
                     [&] {
                       return follower->resource()->apply_resident_delta(
                           follower->self(), delta.data.data(), delta.data.size(), &consumed,
                           &complete);
                     }),
              "apply_resident_delta of the " + which);
    Require(complete != 0 && consumed == delta.data.size(),
            "apply_resident_delta of the " + which + " consumed " + std::to_string(consumed) +
                " of " + std::to_string(delta.data.size()) + " bytes without landing everything");
    std::optional<mstar_resource_stats_t> a = l.Stats(), b = f.Stats();
    if (a && b) {
      Require(a->used_units == b->used_units && a->cached_units == b->cached_units,
              "after replaying the " + which + " the follower holds " + Units(*b) +
                  ", the leader " + Units(*a));
    } else {
      Note(
          "the resource has no stats hook, so whether the follower holds what the leader holds "
          "after the replay went unchecked (only that it took in every byte)");
    }
  };
  if (run_steps({1, 2, 3}, 20) == 0) {
    Skip(
        "the leader admitted no step of the conformance requests, so its delta holds no step "
        "to replay: give it room for them in its conformance config");
  }
  ship("first delta, on a fresh instance");
  // The next delta holds only the moves since: a removed request and more steps of the others.
  l.Remove(2);
  run_steps({1, 3}, 5);
  ship("second delta, on top of the first");
}

}  // namespace

std::vector<Rule> ResourceRules() {
  return {
      {{"resource.step-protocol", "resource",
        "Admit answers ready for one request on an empty resource; abort_step, a failed commit "
        "and remove_request give back what admit took, so random declare/admit/plan/commit/abort "
        "sequences keep admitting, without and with token ids in the declarations (some "
        "unknown); with stats, used <= capacity and removing every request frees everything not "
        "cached"},
       StepProtocol},
      {{"resource.offload-reload", "resource",
        "An evictable resource offloads a request, reports it offloaded, reloads it, and the round "
        "trip is byte-exact"},
       OffloadReload},
      {{"resource.resident-delta", "resource",
        "A leader's resident deltas replay on a fresh instance into the same resident state "
        "(used and cached units): the first, then the next (a removed request, more steps)"},
       ResidentDelta},
  };
}

}  // namespace mstar::conformance

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// What the WalkRun tests share: int64 port values (plain, or plugin-made with a counting deleter),
// reading a step's inputs back, and Walk, a one-walk model compiled from manifest text with a run
// of it.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/compiled_walk.h"
#include "engine/walk_run.h"
#include "model/model_manifest.h"

namespace mstar::walktest {

constexpr DLDevice kCpu{kDLCPU, 0};
constexpr DLDataType kI64{kDLInt, 64, 1};

inline mstar_tensor_t* Value(int64_t v) {
  Result<mstar_tensor_t*> t = AllocateTensor(nullptr, kCpu, kI64, {1});
  if (!t.ok()) throw std::runtime_error(t.status().message());
  *static_cast<int64_t*>(t.value()->dl.data) = v;
  return t.value();
}

// A plugin-made tensor whose deleter counts, adopted by the host: shows when the last reference
// to its storage goes.
inline int tracked_deletes = 0;
struct Tracked {
  int64_t data;
  int64_t dims[2] = {1, 1};  // shape, strides
  mstar_tensor_t t{
      sizeof(mstar_tensor_t), MSTAR_TENSOR_VERSION, 0, 6, 0, {}, this, [](mstar_tensor_t* self) {
        ++tracked_deletes;
        delete static_cast<Tracked*>(self->manager_ctx);
      }};
};
inline mstar_tensor_t* TrackedValue(int64_t v) {
  auto* owner = new Tracked{v};
  owner->t.dl = DLTensor{&owner->data, kCpu, 1, kI64, owner->dims, owner->dims + 1, 0};
  Result<mstar_tensor_t*> adopted = AdoptTensor(&owner->t, "tracked");
  if (!adopted.ok()) throw std::runtime_error(adopted.status().message());
  return adopted.value();
}

// The int64 values a step received under name.
inline std::vector<int64_t> Values(const mstar_tensor_map& map, const std::string& name) {
  std::vector<int64_t> out;
  if (const mstar_tensor_map::Entry* e = map.Find(name)) {
    for (const mstar_tensor_t* t : e->tensors) {
      out.push_back(*static_cast<const int64_t*>(t->dl.data));
    }
  }
  return out;
}

using Ids = std::vector<int>;
using I64s = std::vector<int64_t>;
using U32s = LoopCounters;  // a ticket's per-loop counters

// A one-walk model ("w") over nodes whose plugin ("p") is never loaded (a walk run only tracks
// ports and steps), compiled, and a run of it; loop limits are the manifest's unless overridden.
// Ports are named "node.port".
struct Walk {
  ModelSpec model;
  CompiledWalk w;
  WalkRun run;
  Walk(const std::vector<std::string>& nodes, const std::string& text,
       const std::map<std::string, uint32_t>& limits = {})
      : model(Parse(nodes, text)), w(model.walks.at("w")), run(w, Limits(limits)) {}

  static ModelSpec Parse(const std::vector<std::string>& nodes, const std::string& walk) {
    std::string text = "format = 1\n[model]\nname = \"t\"\n";
    for (const std::string& n : nodes) text += "[nodes." + n + "]\nplugin = \"p\"\n";
    text += "[partitions.main]\ninitial = \"w\"\n[walks.w]\npartition = \"main\"\n" + walk;
    ModelParse parse = ParseModelManifestText(text, "m.toml");
    if (!parse.model) throw std::runtime_error(JoinDiagnostics(parse.diagnostics));
    return std::move(*parse.model);
  }
  std::vector<uint32_t> Limits(const std::map<std::string, uint32_t>& overrides) const {
    std::vector<uint32_t> limits;
    for (const CompiledSection& s : w.sections()) limits.push_back(s.max_iterations);
    for (const auto& [loop, limit] : overrides) limits[L(loop)] = limit;
    return limits;
  }
  int L(const std::string& name) const {
    for (size_t s = 0; s < w.sections().size(); ++s) {
      if (w.sections()[s].kind == SectionSpec::Kind::kLoop && w.sections()[s].loop == name) {
        return static_cast<int>(s);
      }
    }
    throw std::runtime_error("no loop " + name);
  }
  int N(const std::string& node) const { return w.FindNode(node.substr(0, node.find('.'))); }
  int P(const std::string& ref) const {
    const std::vector<CompiledPort>& ports = w.nodes().at(N(ref)).ports;
    for (size_t p = 0; p < ports.size(); ++p) {
      if (ports[p].name == ref.substr(ref.find('.') + 1)) return static_cast<int>(p);
    }
    throw std::runtime_error("no port " + ref);
  }
  const CompiledPort& Spec(const std::string& ref) const { return w.nodes()[N(ref)].ports[P(ref)]; }
  bool FeedTensor(const std::string& ref, mstar_tensor_t* t) {
    return run.Feed(N(ref), P(ref), {t});
  }
  bool Feed(const std::string& ref, int64_t v) { return FeedTensor(ref, Value(v)); }
  bool Filled(const std::string& ref) const { return run.PortFilled(N(ref), P(ref)); }
  bool Ready(const std::string& node) const { return run.Ready(N(node)); }
  Ids Id(const std::string& node) const { return {N(node)}; }
  StepTicket Dispatch(const std::string& node, TensorMapPtr* inputs = nullptr) {
    TensorMapPtr map = NewTensorMap();
    Result<StepTicket> ticket = run.Dispatch(N(node), map.get());
    if (!ticket.ok()) throw std::runtime_error("dispatch: " + ticket.status().message());
    if (inputs != nullptr) *inputs = std::move(map);
    return ticket.value();
  }
  // Feeds 0 to every port that has a walk input and starts the run.
  Ids Begin() {
    for (size_t n = 0; n < w.nodes().size(); ++n) {
      for (size_t p = 0; p < w.nodes()[n].ports.size(); ++p) {
        if (w.nodes()[n].ports[p].has_initial) run.Feed(n, p, {Value(0)});
      }
    }
    return run.Start();
  }
  // Dispatches node and feeds back (its loop-back port) the value 100 + the step's sequence
  // number, produced by that step, as the conductor routes a step's outputs before Complete.
  StepTicket Step(const std::string& node, const std::string& back, TensorMapPtr* in = nullptr) {
    StepTicket t = Dispatch(node, in);
    run.Feed(N(back), P(back), {Value(100 + static_cast<int64_t>(t.seq))}, t.seq);
    return t;
  }
  // Step, and also sends 200 + the step's sequence number, produced by that step, to the port to
  // (as an edge out of the node's loop).
  StepTicket StepAndSend(const std::string& node, const std::string& back, const std::string& to) {
    StepTicket t = Step(node, back);
    run.Feed(N(to), P(to), {Value(200 + static_cast<int64_t>(t.seq))}, t.seq);
    return t;
  }
  // A ticket like t from another run of its loops.
  static StepTicket OtherRun(StepTicket t, int delta) {
    for (uint32_t& e : t.epochs) e += delta;
    return t;
  }
};

}  // namespace mstar::walktest

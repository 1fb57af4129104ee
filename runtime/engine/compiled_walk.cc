// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "engine/compiled_walk.h"

#include <algorithm>

#include "model/walk_layout.h"

namespace mstar {
namespace {

bool InLoop(const CompiledNode& node, int loop) {
  return std::find(node.loops.begin(), node.loops.end(), loop) != node.loops.end();
}

// Whether some loop encloses a but not b.
bool InLoopOutside(const CompiledNode& a, const CompiledNode& b) {
  return std::any_of(a.loops.begin(), a.loops.end(), [&](int loop) { return !InLoop(b, loop); });
}

}  // namespace

CompiledWalk::CompiledWalk(const WalkSpec& walk) : spec_(&walk) {
  std::vector<int> loops;
  AddSection(walk.run, -1, loops);
  for (const WalkInputSpec& input : walk.inputs) {
    int node = FindNode(input.node);
    int port = FindOrAddPort(node, input.input);
    CompiledPort& p = nodes_[node].ports[port];
    p.has_initial = true;
    p.sticky = true;  // until an edge is found to feed it
    p.source = input.source;
    p.source_name = input.name;
  }
  const WalkLayout layout(walk);
  std::vector<std::pair<int, int>> entered;   // ports fed by an edge entering a loop
  std::vector<std::pair<int, int>> fed_back;  // ports fed back by their own loop's edge
  for (const EdgeSpec& edge : walk.edges) {
    CompiledEdge compiled{&edge, -1, -1};
    const int from = FindNode(edge.from_node);
    if (edge.kind == EdgeSpec::Kind::kNode) {
      compiled.to_node = FindNode(edge.to_node);
      compiled.to_port = FindOrAddPort(compiled.to_node, edge.to_input);
      const std::pair<int, int> port{compiled.to_node, compiled.to_port};
      CompiledPort& p = nodes_[compiled.to_node].ports[compiled.to_port];
      p.sticky = false;
      const CompiledNode& source = nodes_[from];
      const CompiledNode& target = nodes_[compiled.to_node];
      if (InLoopOutside(source, target)) p.latest = true;
      const NodePlacement* a = layout.Find(edge.from_node);
      const NodePlacement* b = layout.Find(edge.to_node);
      const bool back = a != nullptr && b != nullptr && layout.IsBackEdge(*a, *b);
      if (InLoopOutside(target, source)) {
        entered.push_back(port);
        if (!back) p.fed_by = from;  // a back edge's value is for the next pass: kept
      }
      // The loop-back edge of the target's innermost loop carries a value from one of its
      // iterations to the next; a back edge of an enclosing loop enters the inner loop instead.
      if (back && !target.loops.empty() && InLoop(source, target.loops.back()))
        fed_back.push_back(port);
    }
    nodes_[from].edges.push_back(compiled);
  }
  // A port fed from outside its loop keeps its value for every iteration, unless its loop's own
  // loop-back edge also feeds it (then the outside value is only the first iteration's). Either
  // way a run reads the newest value: the outside one once its source ran again.
  for (const auto& [node, port] : entered) {
    CompiledPort& p = nodes_[node].ports[port];
    p.latest = true;
    p.sticky =
        std::find(fed_back.begin(), fed_back.end(), std::make_pair(node, port)) == fed_back.end();
  }
}

int CompiledWalk::AddSection(const SectionSpec& spec, int parent, std::vector<int>& loops) {
  int id = static_cast<int>(sections_.size());
  sections_.push_back({});
  sections_[id].kind = spec.kind;
  sections_[id].parent = parent;
  if (spec.kind == SectionSpec::Kind::kNode) {
    int node = static_cast<int>(nodes_.size());
    nodes_.push_back({spec.node, id, {}, {}, loops});
    sections_[id].node = node;
  } else {
    if (spec.kind == SectionSpec::Kind::kLoop) {
      sections_[id].loop = spec.loop;
      sections_[id].max_iterations = spec.max_iterations;
      sections_[id].max_iterations_param = spec.max_iterations_param;
      loops.push_back(id);
    }
    for (const SectionSpec& child : spec.children) {
      int child_id = AddSection(child, id, loops);
      sections_[id].children.push_back(child_id);
    }
    if (spec.kind == SectionSpec::Kind::kLoop) loops.pop_back();
  }
  // Every node below this section, for resets (children were added after id).
  for (size_t n = 0; n < nodes_.size(); ++n) {
    for (int s = nodes_[n].section; s != -1; s = sections_[s].parent) {
      if (s == id) {
        sections_[id].nodes.push_back(static_cast<int>(n));
        break;
      }
    }
  }
  return id;
}

int CompiledWalk::FindNode(const std::string& node) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].name == node) return static_cast<int>(i);
  }
  return -1;
}

int CompiledWalk::FindOrAddPort(int node, const std::string& port) {
  std::vector<CompiledPort>& ports = nodes_[node].ports;
  for (size_t i = 0; i < ports.size(); ++i) {
    if (ports[i].name == port) return static_cast<int>(i);
  }
  CompiledPort added;
  added.name = port;
  ports.push_back(std::move(added));
  return static_cast<int>(ports.size()) - 1;
}

std::vector<std::pair<int, std::string>> CompiledWalk::StreamPorts(int node) const {
  std::vector<std::pair<int, std::string>> out;
  const std::vector<CompiledPort>& ports = nodes_[node].ports;
  for (size_t i = 0; i < ports.size(); ++i) {
    if (ports[i].has_initial && ports[i].source == WalkInputSpec::Source::kStream) {
      out.emplace_back(static_cast<int>(i), ports[i].source_name);
    }
  }
  return out;
}

}  // namespace mstar

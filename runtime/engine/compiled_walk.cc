// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "engine/compiled_walk.h"

namespace mstar {

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
  for (const EdgeSpec& edge : walk.edges) {
    CompiledEdge compiled{&edge, -1, -1};
    if (edge.kind == EdgeSpec::Kind::kNode) {
      compiled.to_node = FindNode(edge.to_node);
      compiled.to_port = FindOrAddPort(compiled.to_node, edge.to_input);
      nodes_[compiled.to_node].ports[compiled.to_port].sticky = false;
    }
    nodes_[FindNode(edge.from_node)].edges.push_back(compiled);
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

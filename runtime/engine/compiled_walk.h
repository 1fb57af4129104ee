// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// CompiledWalk: a walk of a validated model, flattened for execution. Sections become an array
// with parent links; each node knows its input ports (with where their first value comes from),
// its outgoing edges (node edges resolved to target ports) and its enclosing loops.
//
// Immutable after construction; shared by every request running the walk.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_spec.h"

namespace mstar {

struct CompiledSection {
  SectionSpec::Kind kind = SectionSpec::Kind::kNode;
  int parent = -1;            // -1 for the root
  std::vector<int> children;  // section ids
  int node = -1;              // kNode: the walk-local node index
  std::vector<int> nodes;     // every node inside this section (for resets)
  // kLoop
  std::string loop;
  uint32_t max_iterations = 1;
  std::string max_iterations_param;
};

struct CompiledPort {
  std::string name;
  bool has_initial = false;  // given a value when the walk starts
  WalkInputSpec::Source source = WalkInputSpec::Source::kRequest;
  std::string source_name;
  // Its value stays for every run of the node (e.g. across loop iterations) instead of being
  // consumed by each run: fed only at the start of the walk, or by an edge from outside a loop
  // the node is in (the loop's iterations all read what came in). Other ports fed by edges are
  // consumed by each run.
  bool sticky = false;
  // A run reads only the values of the newest producer: fed by an edge leaving a loop (the node
  // after the loop reads the last iteration's value) or entering one (each run of the enclosing
  // section reads its own value). Older values are released when the node runs.
  bool latest = false;
  // For a port fed by a forward edge entering its loop: the node feeding it (its value is released
  // when a section holding both restarts, so a run never reads the previous pass's value).
  int fed_by = -1;
};

struct CompiledEdge {
  const EdgeSpec* spec = nullptr;
  int to_node = -1;  // kNode edges: target node and port
  int to_port = -1;
};

struct CompiledNode {
  std::string name;
  int section = -1;
  std::vector<CompiledPort> ports;
  std::vector<CompiledEdge> edges;  // outgoing
  std::vector<int> loops;           // enclosing loop sections, outermost first
};

class CompiledWalk {
 public:
  // walk must belong to a model that passed ValidateModel.
  explicit CompiledWalk(const WalkSpec& walk);

  const WalkSpec& spec() const { return *spec_; }
  const std::string& name() const { return spec_->name; }
  const std::vector<CompiledSection>& sections() const { return sections_; }
  const std::vector<CompiledNode>& nodes() const { return nodes_; }
  // The walk-local index of node, or -1.
  int FindNode(const std::string& node) const;
  // Ports of node fed from a stream (consumer walks): (port index, stream name).
  std::vector<std::pair<int, std::string>> StreamPorts(int node) const;

 private:
  int AddSection(const SectionSpec& spec, int parent, std::vector<int>& loops);
  int FindOrAddPort(int node, const std::string& port);

  const WalkSpec* spec_;
  std::vector<CompiledSection> sections_;
  std::vector<CompiledNode> nodes_;
};

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// WalkLayout: where each node sits in a walk's program (its path through the sections and its
// enclosing loops), and program order between nodes. Used by validation and by the engine when it
// compiles a walk.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/model_spec.h"

namespace mstar {

struct NodePlacement {
  std::string node;
  std::vector<size_t> path;                   // child index at each level, from the root
  std::vector<const SectionSpec*> ancestors;  // the sections containing the node, root first
  std::vector<std::string> loops;             // enclosing loops, outermost first
  const SectionSpec* section = nullptr;       // the node's own section
};

class WalkLayout {
 public:
  explicit WalkLayout(const WalkSpec& walk);

  const std::vector<NodePlacement>& placements() const { return placements_; }
  const NodePlacement* Find(const std::string& node) const;
  // Nodes named more than once in the walk (a node may appear once per walk).
  const std::vector<std::string>& repeated() const { return repeated_; }

  // Whether a runs before b in one pass over the program (false for parallel siblings, and for
  // a == b).
  bool Precedes(const NodePlacement& a, const NodePlacement& b) const;
  // The innermost loop enclosing both, or nullptr.
  const SectionSpec* CommonLoop(const NodePlacement& a, const NodePlacement& b) const;
  // Whether a node edge from `from` to `to` runs backward (a loop-back edge): to runs before from
  // in program order, or they are the same node.
  bool IsBackEdge(const NodePlacement& from, const NodePlacement& to) const {
    return &from == &to || Precedes(to, from);
  }

 private:
  void Visit(const SectionSpec& section, std::vector<size_t>& path,
             std::vector<const SectionSpec*>& ancestors, std::vector<std::string>& loops);

  std::vector<NodePlacement> placements_;
  std::vector<std::string> repeated_;
};

}  // namespace mstar

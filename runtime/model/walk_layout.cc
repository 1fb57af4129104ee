// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "model/walk_layout.h"

#include <algorithm>

namespace mstar {

WalkLayout::WalkLayout(const WalkSpec& walk) {
  std::vector<size_t> path;
  std::vector<const SectionSpec*> ancestors;
  std::vector<std::string> loops;
  Visit(walk.run, path, ancestors, loops);
}

void WalkLayout::Visit(const SectionSpec& section, std::vector<size_t>& path,
                       std::vector<const SectionSpec*>& ancestors,
                       std::vector<std::string>& loops) {
  if (section.kind == SectionSpec::Kind::kNode) {
    if (Find(section.node) != nullptr) {
      if (std::find(repeated_.begin(), repeated_.end(), section.node) == repeated_.end()) {
        repeated_.push_back(section.node);
      }
      return;
    }
    placements_.push_back({section.node, path, ancestors, loops, &section});
    return;
  }
  ancestors.push_back(&section);
  if (section.kind == SectionSpec::Kind::kLoop) loops.push_back(section.loop);
  for (size_t i = 0; i < section.children.size(); ++i) {
    path.push_back(i);
    Visit(section.children[i], path, ancestors, loops);
    path.pop_back();
  }
  if (section.kind == SectionSpec::Kind::kLoop) loops.pop_back();
  ancestors.pop_back();
}

const NodePlacement* WalkLayout::Find(const std::string& node) const {
  for (const NodePlacement& p : placements_) {
    if (p.node == node) return &p;
  }
  return nullptr;
}

bool WalkLayout::Precedes(const NodePlacement& a, const NodePlacement& b) const {
  size_t depth = 0;
  while (depth < a.path.size() && depth < b.path.size() && a.path[depth] == b.path[depth]) ++depth;
  if (depth == a.path.size() || depth == b.path.size()) return false;  // the same node
  // ancestors[depth] is the lowest common section: order exists only in a sequence.
  const SectionSpec* common = a.ancestors[depth];
  return common->kind == SectionSpec::Kind::kSequence && a.path[depth] < b.path[depth];
}

const SectionSpec* WalkLayout::CommonLoop(const NodePlacement& a, const NodePlacement& b) const {
  const SectionSpec* loop = nullptr;
  for (size_t i = 0; i < a.ancestors.size() && i < b.ancestors.size(); ++i) {
    if (a.ancestors[i] != b.ancestors[i]) break;
    if (a.ancestors[i]->kind == SectionSpec::Kind::kLoop) loop = a.ancestors[i];
  }
  return loop;
}

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// One idea at some length (about 670 lines): the Validator's cross-checks of a parsed model, walk
// by walk (inputs, edges, dataflow and its cycles, program order) and then across walks
// (persisted values, emits, streams, partitions and their transitions). They share the state
// gathered on the way (persisted names, emit edges, the controller's choices), which is why they
// stay one class; the walk's program order itself is walk_layout.cc's.
#include "model/model_validate.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "device/device.h"
#include "model/walk_layout.h"

namespace mstar {
namespace {

using Graph = std::map<std::string, std::set<std::string>>;  // node -> the nodes it leads to
using Port = std::pair<std::string, std::string>;            // (node, input)

// What feeds a node input: the walk input (from nullptr) or a node edge.
struct Feeder {
  std::string label;                    // "the walk input", "the edge from 'b.y'"; "" for none
  const NodePlacement* from = nullptr;  // an edge's source
  const SectionSpec* loop = nullptr;    // a loop-back edge's loop
  const EdgeSpec* edge = nullptr;
};

// A cycle of graph, as its nodes in order with the first again at the end (a -> b -> a), or empty
// when there is none. Searches from each node in the graph's order, so the result is stable.
std::vector<std::string> FindCycle(const Graph& graph) {
  std::map<std::string, int> state;  // 0 unvisited, 1 on the path, 2 done
  std::vector<std::string> path, cycle;
  std::function<bool(const std::string&)> visit = [&](const std::string& node) {
    state[node] = 1;
    path.push_back(node);
    if (auto out = graph.find(node); out != graph.end()) {
      for (const std::string& next : out->second) {
        if (state[next] == 1) {
          cycle.assign(std::find(path.begin(), path.end(), next), path.end());
          cycle.push_back(next);
          return true;
        }
        if (state[next] == 0 && visit(next)) return true;
      }
    }
    path.pop_back();
    state[node] = 2;
    return false;
  };
  for (const auto& [node, next] : graph) {
    if (state[node] == 0 && visit(node)) break;
  }
  return cycle;
}

std::string Join(const std::vector<std::string>& items, const std::string& quote) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : " -> ") + quote + item + quote;
  return out;
}

class Validator {
 public:
  Validator(ModelSpec& model, Diagnostics* diagnostics, ControllerChoices choices)
      : model_(model),
        diagnostics_(diagnostics),
        chooses_first_(!model.controller.empty() && choices.first_walk),
        chooses_next_(!model.controller.empty() && choices.next_walk) {}

  void Run() {
    CheckParts();
    CheckStreams();
    std::set<std::string> loops;
    for (auto& [name, walk] : model_.walks) CheckWalk(walk, loops);
    CheckPersistedSources();
    CheckPartitions();
    CheckStreamFlow();
  }

 private:
  struct PersistedInput {
    std::string key;
    const WalkInputSpec* input;
    const WalkSpec* walk;  // the walk that reads it
  };

  void Error(const SourceLocation& where, const std::string& key, const std::string& message) {
    diagnostics_->push_back({where, key, message});
  }

  void CheckParts() {
    for (const auto& [name, node] : model_.nodes) {
      std::set<std::string> listed;
      for (const std::string& label : node.resources) {
        if (model_.resources.count(label) == 0) {
          Error(node.resources_where, "nodes." + name + ".resources",
                "unknown resource '" + label + "' (no [resources." + label + "])");
        }
        // Twice would run its declare, admit, plan and commit twice a step.
        if (!listed.insert(label).second) {
          Error(node.resources_where, "nodes." + name + ".resources",
                "resource '" + label + "' is listed twice");
        }
      }
    }
    for (auto& [name, resource] : model_.resources) {
      ResolveDevice(name, resource);
      std::set<std::string> listed;
      for (const std::string& tier : resource.tiers) {
        if (model_.tiers.count(tier) == 0) {
          Error(resource.tiers_where, "resources." + name + ".tiers",
                "unknown tier '" + tier + "' (no [tiers." + tier + "])");
        }
        // The list is nearest first: a tier twice would be tried again as a farther one.
        if (!listed.insert(tier).second) {
          Error(resource.tiers_where, "resources." + name + ".tiers",
                "tier '" + tier + "' is listed twice");
        }
      }
    }
  }

  // A resource without a `device` lives where the nodes that use it run; nodes on different
  // devices must say where (a KV pool on another device than its model fails at the first step).
  void ResolveDevice(const std::string& name, ResourceSpec& resource) {
    if (resource.explicit_device) return;
    const NodeSpec* first = nullptr;
    for (const auto& [node_name, node] : model_.nodes) {
      if (std::find(node.resources.begin(), node.resources.end(), name) == node.resources.end())
        continue;
      if (first == nullptr) {
        first = &node;
        resource.device = node.device;
      } else if (!SameDevice(first->device, node.device)) {
        Error(resource.where, "resources." + name,
              "used by nodes on different devices (" + first->name + " on " +
                  DeviceName(first->device) + ", " + node_name + " on " + DeviceName(node.device) +
                  "); set resources." + name + ".device");
        return;
      }
    }
  }

  void CheckStreams() {
    for (auto& [name, stream] : model_.streams) {
      auto partition = model_.partitions.find(stream.consumer);
      if (partition == model_.partitions.end()) {
        Error(stream.to_where, "streams." + name + ".to",
              "unknown partition '" + stream.consumer + "'");
        continue;
      }
      if (!partition->second.stream.empty()) {
        Error(stream.to_where, "streams." + name + ".to",
              "partition '" + stream.consumer + "' is already fed by stream '" +
                  partition->second.stream + "'");
        continue;
      }
      partition->second.stream = name;
      bool fed = false;
      for (const auto& [walk_name, walk] : model_.walks) {
        for (const EdgeSpec& e : walk.edges)
          fed |= e.kind == EdgeSpec::Kind::kStream && e.name == name;
      }
      if (!fed) {
        Error(stream.where, "streams." + name,
              "chunk policy without a streaming edge: no walk has an edge { stream = \"" + name +
                  "\" }");
      }
    }
  }

  void CheckSection(const SectionSpec& section, const std::string& walk,
                    std::set<std::string>& loops) {
    if (section.kind == SectionSpec::Kind::kNode) {
      if (model_.nodes.count(section.node) == 0) {
        Error(section.where, "walks." + walk + ".run",
              "unknown node '" + section.node + "' (no [nodes." + section.node + "])");
      }
      return;
    }
    if (section.kind == SectionSpec::Kind::kLoop && !loops.insert(section.loop).second) {
      Error(section.where, "walks." + walk + ".run",
            "loop name '" + section.loop + "' is used twice (stop checks end loops by name)");
    }
    for (const SectionSpec& child : section.children) CheckSection(child, walk, loops);
  }

  void CheckWalk(const WalkSpec& walk, std::set<std::string>& loops) {
    std::string key = "walks." + walk.name;
    if (model_.partitions.count(walk.partition) == 0) {
      Error(walk.where, key + ".partition", "unknown partition '" + walk.partition + "'");
    }
    CheckSection(walk.run, walk.name, loops);
    WalkLayout layout(walk);
    for (const std::string& node : layout.repeated()) {
      Error(walk.where, key + ".run", "node '" + node + "' appears more than once in the walk");
    }
    CheckInputs(walk, layout);
    CheckEdges(walk, layout);
    CheckDataflow(walk, layout);
  }

  void CheckInputs(const WalkSpec& walk, const WalkLayout& layout) {
    std::string key = "walks." + walk.name + ".inputs";
    std::set<std::pair<std::string, std::string>> given;
    for (const WalkInputSpec& input : walk.inputs) {
      std::string port = input.node + "." + input.input;
      if (layout.Find(input.node) == nullptr) {
        Error(input.where, key, "input '" + port + "' names a node that is not in this walk");
        continue;
      }
      if (!given.insert({input.node, input.input}).second) {
        Error(input.where, key, "input '" + port + "' is given twice");
      }
      if (input.source == WalkInputSpec::Source::kRequest && input.name != model_.prompt) {
        Error(input.where, key,
              "unknown request value '" + input.name + "' (the prompt is request." + model_.prompt +
                  ")");
      }
      if (input.source == WalkInputSpec::Source::kStream) {
        auto stream = model_.streams.find(input.name);
        if (stream == model_.streams.end()) {
          Error(input.where, key, "unknown stream '" + input.name + "'");
        } else if (stream->second.consumer != walk.partition) {
          Error(input.where, key,
                "stream '" + input.name + "' feeds partition '" + stream->second.consumer +
                    "', not this walk's partition '" + walk.partition + "'");
        }
      }
      if (input.source == WalkInputSpec::Source::kPersisted)
        persisted_inputs_.push_back({key, &input, &walk});
      if (input.source == WalkInputSpec::Source::kController && model_.controller.empty()) {
        Error(input.where, key,
              "input '" + port + "' reads controller." + input.name +
                  ", but the model has no controller ([model] controller)");
      } else if (input.source == WalkInputSpec::Source::kController && !chooses_first_ &&
                 !chooses_next_) {
        // A controller gives inputs with the walks it chooses.
        Error(input.where, key,
              "input '" + port + "' reads controller." + input.name + ", but controller '" +
                  model_.controller + "' chooses no walk (it has neither first_walk nor " +
                  "next_walk), so it gives no inputs");
      }
    }
  }

  void CheckEdges(const WalkSpec& walk, const WalkLayout& layout) {
    std::string key = "walks." + walk.name + ".edges";
    for (const EdgeSpec& edge : walk.edges) {
      if (layout.Find(edge.from_node) == nullptr) {
        Error(edge.where, key,
              "edge from '" + edge.from_node + "." + edge.from_output + "': node '" +
                  edge.from_node + "' is not in this walk");
        continue;
      }
      switch (edge.kind) {
        case EdgeSpec::Kind::kNode:
          if (layout.Find(edge.to_node) == nullptr) {
            Error(edge.where, key,
                  "edge to nothing: '" + edge.to_node + "." + edge.to_input +
                      "' is not a node of this walk");
          }
          break;
        case EdgeSpec::Kind::kStream:
          if (model_.streams.count(edge.name) == 0) {
            Error(edge.where, key,
                  "edge to nothing: no stream '" + edge.name + "' (declare [streams." + edge.name +
                      "])");
          }
          break;
        case EdgeSpec::Kind::kPersist:
          persisted_.insert(edge.name);
          if (edge.name.empty())
            Error(edge.where, key, "edge to nothing: persist needs a value name");
          break;
        case EdgeSpec::Kind::kEmit:
          if (edge.name.empty())
            Error(edge.where, key, "edge to nothing: emit needs an output name");
          else
            CheckEmitAgrees(edge, walk.name, key);
          break;
      }
    }
  }

  // The client reads an output one way: every emit edge of the same output name, in any walk, has
  // the same modality and sample rate.
  void CheckEmitAgrees(const EdgeSpec& edge, const std::string& walk, const std::string& key) {
    auto [first, inserted] = emits_.try_emplace(edge.name, &edge, walk);
    if (inserted) return;
    const auto& [other, other_walk] = first->second;
    if (other->modality != edge.modality || other->sample_rate != edge.sample_rate) {
      std::string there = "walk '" + other_walk + "'";
      if (other->where.line != 0)
        there.append(" (line ").append(std::to_string(other->where.line)).append(")");
      Error(edge.where, key,
            "output '" + edge.name + "' is emitted as " + EmitKind(edge) + " here and as " +
                EmitKind(*other) + " in " + there + "; the client reads an output one way");
    }
  }

  static std::string EmitKind(const EdgeSpec& edge) {
    std::string kind = "modality \"" + edge.modality + "\"";
    if (edge.sample_rate != 0)
      kind.append(" at ").append(std::to_string(edge.sample_rate)).append(" Hz");
    return kind;
  }

  // Every node input is available when the node first runs, and dependencies outside loops form
  // no cycle.
  void CheckDataflow(const WalkSpec& walk, const WalkLayout& layout) {
    std::string key = "walks." + walk.name + ".edges";
    Graph forward;  // node -> nodes it feeds
    std::map<Port, bool> available;
    // Who feeds each input forward (a walk input or a forward edge): one at most, so a node never
    // reads a list it did not ask for.
    std::map<Port, Feeder> forward_feed;
    std::map<Port, std::vector<Feeder>> back_feeds;  // loop-back edges, in manifest order
    for (const WalkInputSpec& input : walk.inputs) {
      available[{input.node, input.input}] = true;
      forward_feed[{input.node, input.input}] = Feeder{"the walk input", nullptr, nullptr, nullptr};
    }
    for (const EdgeSpec& edge : walk.edges) {
      if (edge.kind != EdgeSpec::Kind::kNode) continue;
      const NodePlacement* from = layout.Find(edge.from_node);
      const NodePlacement* to = layout.Find(edge.to_node);
      if (from == nullptr || to == nullptr) continue;
      bool backward = layout.IsBackEdge(*from, *to);
      const SectionSpec* loop = backward ? layout.CommonLoop(*from, *to) : nullptr;
      if (backward && loop == nullptr) {
        Error(edge.where, key,
              from == to ? "cycle outside a loop: '" + edge.from_node + "' feeds itself ('" +
                               edge.from_node + "." + edge.from_output + "' -> '" + edge.to_node +
                               "." + edge.to_input + "'), and no loop encloses it"
                         : "cycle outside a loop: '" + edge.to_node + "' runs before '" +
                               edge.from_node + "' in the walk, and no loop encloses both");
        continue;
      }
      const Port port{edge.to_node, edge.to_input};
      Feeder feeder{"the edge from '" + edge.from_node + "." + edge.from_output + "'", from, loop,
                    &edge};
      if (backward) {
        available.emplace(port, false);
        back_feeds[port].push_back(std::move(feeder));
        continue;
      }
      Feeder& first = forward_feed[port];
      if (!first.label.empty()) {
        Error(edge.where, key,
              "input '" + edge.to_node + "." + edge.to_input + "' is fed twice: by " + first.label +
                  " and by " + feeder.label +
                  " (a node reads one value per input; combine them in a node)");
        continue;
      }
      first = std::move(feeder);
      forward[edge.from_node].insert(edge.to_node);
      available[port] = true;
    }
    for (const auto& [port, feeds] : back_feeds) CheckBackFeeds(port, feeds, forward_feed, key);
    for (const auto& [port, ok] : available) {
      if (!ok) {
        Error(walk.where, "walks." + walk.name,
              "input never produced: '" + port.first + "." + port.second +
                  "' is fed only by a loop-back edge and has no value for the first iteration (add "
                  "it to inputs)");
      }
    }
    // A node named twice orders itself before itself (reported as repeated).
    FindCycles(walk, forward, /*with_order=*/layout.repeated().empty());
  }

  // A loop-back edge brings the value for its loop's next iteration, in place of the one that
  // came from outside the loop: a loop-back edge of another loop may share the input, but
  // neither a second one of the same loop nor a forward edge from inside the loop (both would
  // deliver a value every iteration, and the node would read two).
  void CheckBackFeeds(const Port& port, const std::vector<Feeder>& feeds,
                      const std::map<Port, Feeder>& forward_feed, const std::string& key) {
    auto forward = forward_feed.find(port);
    for (size_t i = 0; i < feeds.size(); ++i) {
      const Feeder& back = feeds[i];
      const Feeder* other = nullptr;
      for (size_t j = 0; j < i && other == nullptr; ++j)
        if (feeds[j].loop == back.loop) other = &feeds[j];
      if (other == nullptr && forward != forward_feed.end() && forward->second.from != nullptr &&
          Encloses(*back.loop, *forward->second.from))
        other = &forward->second;
      if (other == nullptr) continue;
      Error(back.edge->where, key,
            "input '" + port.first + "." + port.second + "' is fed twice in each iteration of " +
                "loop '" + back.loop->loop + "': by " + other->label + " and by " + back.label +
                " (a node reads one value per input; combine them in a node)");
    }
  }

  static bool Encloses(const SectionSpec& loop, const NodePlacement& node) {
    return std::find(node.ancestors.begin(), node.ancestors.end(), &loop) != node.ancestors.end();
  }

  // Nodes that wait on each other outside loops: through forward data edges, or through program
  // order (a node of a sequence runs after those before it, whatever its inputs). Order alone
  // has no cycle, so one it closes holds a data edge between parallel branches.
  void FindCycles(const WalkSpec& walk, const Graph& forward, bool with_order) {
    const std::string key = "walks." + walk.name + ".edges";
    std::vector<std::string> cycle = FindCycle(forward);
    if (!cycle.empty()) {
      Error(walk.where, key, "cycle outside a loop: " + Join(cycle, ""));
      return;
    }
    if (!with_order) return;
    Graph waits = forward;
    int joints = 0;
    AddOrder(walk.run, waits, joints);
    cycle = FindCycle(waits);
    // The nodes of the cycle, without the joints of parallel sections.
    std::erase_if(cycle, [](const std::string& v) { return IsJoint(v); });
    if (cycle.empty()) return;
    if (cycle.front() != cycle.back()) cycle.push_back(cycle.front());  // it closed at a joint
    if (cycle.size() < 3) return;  // a node met twice on the way (reported as repeated)
    std::string steps;
    for (size_t i = 0; i + 1 < cycle.size(); ++i) {
      auto fed = forward.find(cycle[i]);
      const bool feeds = fed != forward.end() && fed->second.count(cycle[i + 1]) > 0;
      steps.append(i == 0 ? "" : ", ")
          .append("'" + cycle[i] + (feeds ? "' feeds '" : "' runs before '") + cycle[i + 1] + "'");
    }
    Error(walk.where, key,
          "cycle outside a loop: " + steps + " (a node of a sequence waits for those before it)");
  }

  // Adds section's program order to graph, in as many edges as it has parts: a sequence links
  // each child's exit to the next child's entry; a parallel section fans out from a joint vertex
  // (named so that no node is) and back into another. Returns the section's entry and exit.
  static std::pair<std::string, std::string> AddOrder(const SectionSpec& section, Graph& graph,
                                                      int& joints) {
    switch (section.kind) {
      case SectionSpec::Kind::kNode: return {section.node, section.node};
      case SectionSpec::Kind::kLoop:
        if (!section.children.empty()) return AddOrder(section.children[0], graph, joints);
        break;
      case SectionSpec::Kind::kSequence: {
        if (section.children.empty()) break;
        std::pair<std::string, std::string> ends = AddOrder(section.children[0], graph, joints);
        for (size_t i = 1; i < section.children.size(); ++i) {
          auto [entry, exit] = AddOrder(section.children[i], graph, joints);
          graph[ends.second].insert(entry);
          ends.second = exit;
        }
        return ends;
      }
      case SectionSpec::Kind::kParallel: {
        const std::string in = Joint(joints++), out = Joint(joints++);
        for (const SectionSpec& child : section.children) {
          auto [entry, exit] = AddOrder(child, graph, joints);
          graph[in].insert(entry);
          graph[exit].insert(out);
        }
        return {in, out};
      }
    }
    std::string empty = Joint(joints++);  // an empty section (reported elsewhere)
    return {empty, empty};
  }
  static std::string Joint(int index) {
    std::string joint(1, '\x01');  // not "\x01" + ...: GCC 12 at -O3 warns falsely (-Wrestrict)
    return joint.append(std::to_string(index));
  }
  static bool IsJoint(const std::string& vertex) { return !vertex.empty() && vertex[0] == '\x01'; }

  // Each stream is read by a walk of its consumer partition, and partitions do not feed
  // themselves through streams: a stream closes once every partition writing it is done, so one
  // that feeds its own writer never closes, and one nobody reads re-runs its walks on each chunk.
  void CheckStreamFlow() {
    Graph feeds;  // partition -> partitions it feeds
    for (const auto& [name, stream] : model_.streams) {
      auto consumer = model_.partitions.find(stream.consumer);
      // An unknown consumer, a second stream into one partition: reported by CheckStreams.
      if (consumer == model_.partitions.end() || consumer->second.stream != name) continue;
      bool read = false, fed = false;
      for (const auto& [walk_name, walk] : model_.walks) {
        for (const WalkInputSpec& input : walk.inputs)
          read |= input.source == WalkInputSpec::Source::kStream && input.name == name &&
                  walk.partition == stream.consumer;
        for (const EdgeSpec& e : walk.edges) {
          if (e.kind == EdgeSpec::Kind::kStream && e.name == name) {
            feeds[walk.partition].insert(stream.consumer);
            fed = true;
          }
        }
      }
      if (fed && !read) {
        Error(stream.where, "streams." + name,
              "no walk of partition '" + stream.consumer + "' reads stream '" + name +
                  "' (give a node the input \"stream." + name + "\")");
      }
    }
    std::vector<std::string> cycle = FindCycle(feeds);
    if (!cycle.empty()) {
      Error(model_.partitions.at(cycle.front()).where, "partitions." + cycle.front(),
            "partitions feed each other through streams (" + Join(cycle, "'") +
                "): such a stream never closes, so the request never ends");
    }
  }

  void CheckPersistedSources() {
    for (const PersistedInput& read : persisted_inputs_) {
      if (persisted_.count(read.input->name) == 0) {
        Error(
            read.input->where, read.key,
            "input never produced: no walk has an edge { persist = \"" + read.input->name + "\" }");
      } else {
        CheckPersistedBeforeRead(read);
      }
    }
  }

  // The walks of a partition whose walks no model controller chooses run in the order of its
  // transitions: a walk that reads a persisted value must come after one of them persists it.
  // (Skipped when a walk of another partition persists it too: partitions run side by side.)
  void CheckPersistedBeforeRead(const PersistedInput& read) {
    if (chooses_first_ || chooses_next_) return;
    const std::string& name = read.input->name;
    auto persists = [&](const WalkSpec& walk) {
      return std::any_of(walk.edges.begin(), walk.edges.end(), [&](const EdgeSpec& edge) {
        return edge.kind == EdgeSpec::Kind::kPersist && edge.name == name;
      });
    };
    for (const auto& [walk_name, walk] : model_.walks) {
      if (walk.partition != read.walk->partition && persists(walk)) return;
    }
    auto partition = model_.partitions.find(read.walk->partition);
    if (partition == model_.partitions.end()) return;
    std::set<std::string> seen;
    std::string order;
    for (std::string at = partition->second.initial; at != kDoneWalk && seen.insert(at).second;) {
      auto walk = model_.walks.find(at);
      if (walk == model_.walks.end()) return;  // reported elsewhere
      order += (order.empty() ? "'" : " -> '") + at + "'";
      if (at == read.walk->name) {
        Error(read.input->where, read.key,
              "walk '" + at + "' reads persisted value '" + name +
                  "' before any walk persists it (partition '" + partition->first + "' runs " +
                  order + ")");
        return;
      }
      if (persists(walk->second)) return;
      auto next = partition->second.transitions.find(at);
      at = next == partition->second.transitions.end() ? std::string(kDoneWalk) : next->second;
    }
  }

  void CheckPartitions() {
    std::set<std::string> reached;
    for (const auto& [name, partition] : model_.partitions) {
      std::string key = "partitions." + name;
      const std::string& partition_name = name;  // (clang 14 cannot capture structured bindings)
      auto belongs = [&](const std::string& walk) {
        auto it = model_.walks.find(walk);
        return it != model_.walks.end() && it->second.partition == partition_name;
      };
      if (!belongs(partition.initial)) {
        Error(partition.where, key + ".initial",
              "initial walk '" + partition.initial + "' is not a walk of this partition");
        continue;
      }
      // Named at the transition's own key and position; a walk of another partition says so.
      auto not_here = [&](const std::string& walk) {
        auto it = model_.walks.find(walk);
        if (it == model_.walks.end()) return "an unknown walk '" + walk + "'";
        return "walk '" + walk + "' of partition '" + it->second.partition + "'";
      };
      for (const auto& [from, to] : partition.transitions) {
        auto at = partition.transition_where.find(from);
        const SourceLocation& where =
            at != partition.transition_where.end() ? at->second : partition.where;
        if (!belongs(from))
          Error(where, key + ".transitions." + from, "transition from " + not_here(from));
        if (to != kDoneWalk && !belongs(to))
          Error(where, key + ".transitions." + from, "transition to " + not_here(to));
      }
      for (std::string walk = partition.initial; reached.insert(walk).second;) {
        auto next = partition.transitions.find(walk);
        if (next == partition.transitions.end() || next->second == kDoneWalk ||
            !belongs(next->second))
          break;
        walk = next->second;
      }
      CheckTransitionsEnd(partition, belongs);
    }
    for (const auto& [name, walk] : model_.walks) {
      // A model controller that chooses walks may choose any walk of the partition.
      if (reached.count(name) == 0 && model_.partitions.count(walk.partition) != 0 &&
          !chooses_first_ && !chooses_next_) {
        Error(walk.where, "walks." + name,
              "unreachable walk: no transition of partition '" + walk.partition + "' leads to it");
      }
    }
    if (model_.partitions.empty())
      Error(SourceLocation{model_.path, 0, 0}, "partitions",
            "a model needs at least one partition");
  }

  // The transitions from the initial walk (from every walk of the partition, when a model
  // controller chooses the first) must reach "done". Stop checks end loops, not walks, and the
  // output limit ends a partition only once it has emitted that many tokens, so a partition whose
  // walks lead back to themselves would run forever once its walks stop emitting. A partition fed
  // by a stream may cycle (it ends when the stream is drained), and so may one whose next walk a
  // model controller chooses. Reports one cycle per partition.
  template <typename Belongs>
  void CheckTransitionsEnd(const PartitionSpec& partition, const Belongs& belongs) {
    if (!partition.stream.empty() || chooses_next_) return;
    std::vector<std::string> starts = {partition.initial};
    if (chooses_first_) {
      for (const auto& [name, walk] : model_.walks) {
        if (walk.partition == partition.name && name != partition.initial) starts.push_back(name);
      }
    }
    for (const std::string& start : starts) {
      if (ReportsCycleFrom(partition, start, belongs)) return;
    }
  }

  // Follows the transitions from start; a walk met twice is reported (true).
  template <typename Belongs>
  bool ReportsCycleFrom(const PartitionSpec& partition, const std::string& start,
                        const Belongs& belongs) {
    std::vector<std::string> path;
    for (std::string walk = start;;) {
      auto seen = std::find(path.begin(), path.end(), walk);
      if (seen != path.end()) {
        std::string cycle;
        for (auto it = seen; it != path.end(); ++it) cycle += *it + " -> ";
        const std::string& last = path.back();
        auto where = partition.transition_where.find(last);
        Error(where != partition.transition_where.end() ? where->second : partition.where,
              "partitions." + partition.name + ".transitions." + last,
              "the transitions never reach \"done\": " + cycle + walk +
                  " repeats forever (stop checks end loops, not walks; only a partition fed by a "
                  "stream, or one whose next walks a model controller chooses, may cycle)");
        return true;
      }
      path.push_back(walk);
      auto next = partition.transitions.find(walk);
      if (next == partition.transitions.end() || next->second == kDoneWalk ||
          !belongs(next->second))
        return false;
      walk = next->second;
    }
  }

  ModelSpec& model_;
  Diagnostics* diagnostics_;
  const bool chooses_first_;  // a model controller chooses each partition's first walk
  const bool chooses_next_;   // ... and the walk after each
  std::set<std::string> persisted_;
  std::vector<PersistedInput> persisted_inputs_;
  // Output name -> its first emit edge and that edge's walk.
  std::map<std::string, std::pair<const EdgeSpec*, std::string>> emits_;
};

}  // namespace

void ValidateModel(ModelSpec& model, Diagnostics* diagnostics, ControllerChoices choices) {
  Validator(model, diagnostics, choices).Run();
}

}  // namespace mstar

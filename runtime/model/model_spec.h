// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// ModelSpec: a model manifest, parsed and validated (docs/manifests.md, "Model manifest").
//
// A model is a set of nodes (each a submodule plugin with its config and resources), resources and
// tiers, walks, streams and partitions. A walk is a structured program over nodes: a node, a
// sequence, a parallel group, or a named loop. Data moves along edges: from a node's output to
// another node's input within the walk, to a persisted value (kept across walks), to a stream
// (another partition's buffer, cut into chunks by the stream's policy), or to the client. Each
// partition runs one walk at a time and moves between walks by its transitions; a request is done
// when all its partitions are done.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <dlpack/dlpack.h>

#include "config/config_tree.h"
#include "core/diagnostic.h"

namespace mstar {

// The largest bounds a manifest or a request may set: a loop's iterations, a request's output
// tokens and an audio output's sample rate (Hz).
inline constexpr int64_t kMaxLoopIterations = 1000000000;
inline constexpr int64_t kMaxOutputTokens = 100000000;
inline constexpr int64_t kMaxSampleRate = 1000000;
// The most entries of one kind a model manifest holds (nodes, resources, tiers, streams, walks,
// partitions; edges per walk): bounds what validation walks, recursion depth included.
inline constexpr size_t kMaxManifestEntries = 4096;
// The most loops around one node: a stop check names each by a bit of its 64-bit answer, whose
// top bit (MSTAR_STOP_PARTITION) ends the partition.
inline constexpr size_t kMaxNestedLoops = 63;

inline constexpr int64_t kModelManifestFormat = 1;
// The transition target that ends a partition.
inline constexpr const char* kDoneWalk = "done";

struct NodeSpec {
  std::string name;
  std::string plugin;  // a submodule factory name
  std::shared_ptr<const ConfigTree> config;
  std::vector<std::string> resources;  // labels of [resources.*]
  // `device` when the manifest sets it (explicit_device), else the runtime config's [device].
  DLDevice device{kDLCPU, 0};
  SourceLocation where;
  SourceLocation resources_where;  // of the `resources` value (where, when there is none)
  bool explicit_device = false;
};

struct ResourceSpec {
  std::string name;    // the label nodes use
  std::string plugin;  // a resource factory name
  std::shared_ptr<const ConfigTree> config;
  std::vector<std::string> tiers;  // names of [tiers.*], nearest first
  // Where the resource keeps its state: `device` when the manifest sets it (explicit_device), else
  // the device of the nodes that use it (resolved by ValidateModel; cpu when no node does).
  DLDevice device{kDLCPU, 0};
  bool explicit_device = false;
  SourceLocation where;
  SourceLocation tiers_where;  // of the `tiers` value (where, when there is none)
};

struct TierSpec {
  std::string name;
  std::string plugin;  // a tier factory name
  std::shared_ptr<const ConfigTree> config;
  SourceLocation where;
};

// How a stream's buffer is cut into chunks for its consumer.
struct ChunkPolicySpec {
  enum class Kind { kSlidingWindow, kFixed };
  Kind kind = Kind::kFixed;
  uint32_t window = 1;  // sliding window: items per chunk; fixed: the chunk size
  uint32_t stride = 1;  // sliding window: items the window advances per chunk
};

struct StreamSpec {
  std::string name;
  std::string consumer;  // the partition whose walks consume the chunks
  ChunkPolicySpec policy;
  SourceLocation where;     // the [streams.NAME] table
  SourceLocation to_where;  // its `to` key
};

// A section of a walk's program.
struct SectionSpec {
  enum class Kind { kNode, kSequence, kParallel, kLoop };
  Kind kind = Kind::kNode;
  std::string node;                   // kNode
  std::vector<SectionSpec> children;  // kSequence, kParallel; kLoop: exactly one (the body)
  std::string loop;                   // kLoop: its name (stop checks end it by name)
  uint32_t max_iterations = 1;        // kLoop
  std::string max_iterations_param;   // kLoop: a request parameter that overrides it, or ""
  SourceLocation where;
};

// Where a node input gets its value at the start of a walk.
struct WalkInputSpec {
  enum class Source { kRequest, kPersisted, kStream, kController };
  std::string node;
  std::string input;
  Source source = Source::kRequest;
  std::string name;  // the request value, persisted value, stream or controller-given value
  SourceLocation where;
};

struct EdgeSpec {
  enum class Kind { kNode, kPersist, kStream, kEmit };
  std::string from_node;
  std::string from_output;
  Kind kind = Kind::kNode;
  std::string to_node;         // kNode
  std::string to_input;        // kNode
  std::string name;            // kPersist: value; kStream: stream; kEmit: the client output's name
  std::string modality;        // kEmit: "text", "tokens", "audio", ...
  bool counts_tokens = false;  // each element counts toward the request's output-token limit
  uint32_t sample_rate = 0;    // kEmit, modality "audio": samples per second; 0: not declared
  SourceLocation where;
};

struct WalkSpec {
  std::string name;
  std::string partition;
  SectionSpec run;
  std::vector<WalkInputSpec> inputs;
  std::vector<EdgeSpec> edges;
  SourceLocation where;
};

struct PartitionSpec {
  std::string name;
  std::string initial;                             // the first walk
  std::map<std::string, std::string> transitions;  // walk -> next walk or kDoneWalk (the default)
  std::string stream;  // derived: the stream feeding this partition, whose chunks trigger its walks
  SourceLocation where;
  std::map<std::string, SourceLocation> transition_where;  // walk -> where its transition is
};

struct ModelSpec {
  std::string path;      // the manifest
  std::string base_dir;  // its directory; relative paths in node configs resolve here
  std::string name;
  std::string description;
  std::string controller;  // a model plugin, or "" for the declarative walks
  SourceLocation controller_where;
  std::string prompt;      // the request value a prompt becomes
  std::string checkpoint;  // the weights' directory or file naming the checkpoint identity, or ""
  SourceLocation checkpoint_where;
  uint32_t max_output_tokens = 256;  // at most kMaxOutputTokens
  std::map<std::string, NodeSpec> nodes;
  std::map<std::string, ResourceSpec> resources;
  std::map<std::string, TierSpec> tiers;
  std::map<std::string, StreamSpec> streams;
  std::map<std::string, WalkSpec> walks;
  std::map<std::string, PartitionSpec> partitions;
};

}  // namespace mstar

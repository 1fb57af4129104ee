// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The cross-checks of model_validate.cc, each with its message and place (file:line:column: key).
#include "model/model_validate.h"

#include <gtest/gtest.h>

#include "model/model_manifest.h"
#include "runtime/model/model_validate_fixture.h"

namespace mstar {
namespace {

using test::OneWalk;
using test::Parse;
using test::Reports;

TEST(ModelValidate, AcceptsAWellFormedWalk) {
  ModelParse parse = OneWalk(R"({ sequence = ["a", "b"] })", R"({ "a.x" = "request.prompt" })",
                             R"([{ from = "a.y", to = "b.x" }])");
  EXPECT_TRUE(parse.model.has_value()) << JoinDiagnostics(parse.diagnostics);
}

// A resource lives where the nodes that use it run, unless it says otherwise; nodes on two
// devices must say.
TEST(ModelValidate, AResourceFollowsItsNodesDeviceUnlessItNamesOne) {
  const std::string walk =
      "[partitions.main]\ninitial = \"w\"\n[walks.w]\npartition = \"main\"\nrun = \"d\"\n";
  ModelParse same = Parse(
      "[nodes.d]\nplugin = \"p\"\ndevice = \"cuda:1\"\nresources = [\"kv\"]\n"
      "[nodes.e]\nplugin = \"p\"\ndevice = \"cuda:1\"\nresources = [\"kv\"]\n"
      "[resources.kv]\nplugin = \"r\"\n[resources.unused]\nplugin = \"r\"\n" +
      walk);
  ASSERT_TRUE(same.model.has_value()) << JoinDiagnostics(same.diagnostics);
  const ResourceSpec& kv = same.model->resources.at("kv");
  EXPECT_FALSE(kv.explicit_device);
  EXPECT_EQ(kv.device.device_type, kDLCUDA);
  EXPECT_EQ(kv.device.device_id, 1);
  EXPECT_EQ(same.model->resources.at("unused").device.device_type, kDLCPU);

  const std::string split =
      "[nodes.d]\nplugin = \"p\"\ndevice = \"cuda:0\"\nresources = [\"kv\"]\n"
      "[nodes.e]\nplugin = \"p\"\nresources = [\"kv\"]\n"
      "[resources.kv]\nplugin = \"r\"\n";
  EXPECT_TRUE(Reports(Parse(split + walk),
                      "m.toml:17:1: resources.kv: used by nodes on different devices (d on cuda:0, "
                      "e on cpu); set resources.kv.device"));
  ModelParse named = Parse(split + "device = \"cpu\"\n" + walk);
  ASSERT_TRUE(named.model.has_value()) << JoinDiagnostics(named.diagnostics);
  EXPECT_TRUE(named.model->resources.at("kv").explicit_device);
  EXPECT_EQ(named.model->resources.at("kv").device.device_type, kDLCPU);
  EXPECT_TRUE(
      Reports(Parse(split + "device = \"gpu\"\n" + walk),
              "m.toml:19:10: resources.kv.device: expected \"cpu\", \"cuda\" or \"cuda:N\""));
}

// A resource listed twice in a node would take part in each step twice; a tier listed twice
// would be tried again as a farther one.
TEST(ModelValidate, AResourceOrTierListedTwiceIsRefused) {
  ModelParse parse = Parse(R"([nodes.d]
plugin = "p"
resources = ["kv", "kv"]
[resources.kv]
plugin = "r"
tiers = ["host", "host"]
[tiers.host]
plugin = "t"
[partitions.main]
initial = "w"
[walks.w]
partition = "main"
run = "d"
)");
  EXPECT_TRUE(Reports(parse, "m.toml:12:13: nodes.d.resources: resource 'kv' is listed twice"));
  EXPECT_TRUE(Reports(parse, "m.toml:15:9: resources.kv.tiers: tier 'host' is listed twice"));
  EXPECT_EQ(parse.diagnostics.size(), 2u) << JoinDiagnostics(parse.diagnostics);
}

TEST(ModelValidate, UnknownNamesAndEdgesToNothing) {
  ModelParse parse = Parse(R"([nodes.d]
plugin = "p"
resources = ["kv", "nokv"]
[resources.kv]
plugin = "r"
tiers = ["notier"]
[streams.s]
to = "nopart"
policy = "fixed"
size = 1
[partitions.main]
initial = "w"
[walks.w]
partition = "main"
run = { sequence = ["a", "zz"] }
edges = [
  { from = "q.y", to = "a.x" },
  { from = "a.y", to = "q.x" },
  { from = "a.y", stream = "nostream" },
  { from = "a.y", persist = "" },
  { from = "a.y", emit = "" },
  { from = "a.y", stream = "s" },
]
[walks.v]
partition = "nopart"
run = "b"
)");
  EXPECT_TRUE(Reports(parse,
                      "m.toml:12:13: nodes.d.resources: unknown resource 'nokv' (no "
                      "[resources.nokv])"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:15:9: resources.kv.tiers: unknown tier 'notier' (no "
                      "[tiers.notier])"));
  EXPECT_TRUE(Reports(parse, "m.toml:17:6: streams.s.to: unknown partition 'nopart'"));
  EXPECT_TRUE(Reports(parse, "m.toml:24:26: walks.w.run: unknown node 'zz' (no [nodes.zz])"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:26:3: walks.w.edges: edge from 'q.y': node 'q' is not in "
                      "this walk"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:27:3: walks.w.edges: edge to nothing: 'q.x' is not a node "
                      "of this walk"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:28:3: walks.w.edges: edge to nothing: no stream 'nostream' "
                      "(declare [streams.nostream])"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:29:3: walks.w.edges: edge to nothing: persist needs a value "
                      "name"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:30:3: walks.w.edges: edge to nothing: emit needs an output "
                      "name"));
  EXPECT_TRUE(Reports(parse, "m.toml:33:1: walks.v.partition: unknown partition 'nopart'"));
  EXPECT_EQ(parse.diagnostics.size(), 10u) << JoinDiagnostics(parse.diagnostics);
}

// The client reads each output one way, whichever walk emits it.
TEST(ModelValidate, EmitsOfOneOutputAgreeOnModalityAndSampleRate) {
  const std::string walks =
      "[partitions.main]\ninitial = \"w\"\ntransitions = { w = \"v\" }\n"
      "[walks.w]\npartition = \"main\"\nrun = \"a\"\ninputs = { \"a.x\" = \"request.prompt\" }\n"
      "edges = [{ from = \"a.y\", emit = \"out\", modality = \"audio\", sample_rate = 16000 }]\n"
      "[walks.v]\npartition = \"main\"\nrun = \"b\"\ninputs = { \"b.x\" = \"request.prompt\" }\n"
      "edges = [{ from = \"b.y\", emit = \"out\", ";
  ModelParse same = Parse(walks + "modality = \"audio\", sample_rate = 16000 }]\n");
  EXPECT_TRUE(same.model.has_value()) << JoinDiagnostics(same.diagnostics);
  EXPECT_TRUE(Reports(Parse(walks + "modality = \"audio\", sample_rate = 24000 }]\n"),
                      "m.toml:17:10: walks.w.edges: output 'out' is emitted as modality \"audio\" "
                      "at 16000 Hz here and as modality \"audio\" at 24000 Hz in walk 'v' (line "
                      "22); the client reads an output one way"));
  EXPECT_TRUE(Reports(Parse(walks + "modality = \"text\" }]\n"),
                      "at 16000 Hz here and as modality \"text\" in walk 'v'"));
}

TEST(ModelValidate, LoopBackInputNeedsAnInitialValue) {
  const char* run = R"({ loop = "l", max_iterations = 4, body = { sequence = ["a", "b"] } })";
  const char* edges = R"([{ from = "a.y", to = "b.x" }, { from = "b.y", to = "a.h" }])";
  EXPECT_TRUE(Reports(OneWalk(run, R"({ "a.x" = "request.prompt" })", edges),
                      "m.toml:12:1: walks.w: input never produced: 'a.h' is fed only by a "
                      "loop-back edge and has no value for the first iteration (add it to "
                      "inputs)"));
  ModelParse fixed =
      OneWalk(run, R"({ "a.x" = "request.prompt", "a.h" = "request.prompt" })", edges);
  EXPECT_TRUE(fixed.model.has_value()) << JoinDiagnostics(fixed.diagnostics);
}

TEST(ModelValidate, BackEdgeOutsideALoopIsACycle) {
  const char* inputs = R"({ "a.x" = "request.prompt" })";
  EXPECT_TRUE(Reports(OneWalk(R"({ sequence = ["a", "b"] })", inputs,
                              R"([{ from = "a.y", to = "b.x" }, { from = "b.y", to = "a.x" }])"),
                      "m.toml:16:40: walks.w.edges: cycle outside a loop: 'a' runs before 'b' in "
                      "the walk, and no loop encloses both"));
  // From inside a loop back to a node before it: the loop does not enclose both.
  EXPECT_TRUE(
      Reports(OneWalk(R"({ sequence = ["a", { loop = "l", max_iterations = 2, body = "b" }] })",
                      inputs, R"([{ from = "b.y", to = "a.x" }])"),
              "m.toml:16:10: walks.w.edges: cycle outside a loop: 'a' runs before 'b'"));
  EXPECT_TRUE(Reports(OneWalk(R"("a")", inputs, R"([{ from = "a.y", to = "a.x" }])"),
                      "m.toml:16:10: walks.w.edges: cycle outside a loop: 'a' feeds itself "
                      "('a.y' -> 'a.x'), and no loop encloses it"));
}

TEST(ModelValidate, AnInputHasOneForwardFeedAtMost) {
  // A walk input and a forward edge; two forward edges.
  EXPECT_TRUE(Reports(OneWalk(R"({ sequence = ["b", "a"] })", R"({ "a.x" = "request.prompt" })",
                              R"([{ from = "b.y", to = "a.x" }])"),
                      "m.toml:16:10: walks.w.edges: input 'a.x' is fed twice: by the walk input "
                      "and by the edge from 'b.y' (a node reads one value per input; combine "
                      "them in a node)"));
  EXPECT_TRUE(
      Reports(OneWalk(R"({ sequence = ["a", "b", "c"] })", R"({ "a.x" = "request.prompt" })",
                      R"([{ from = "a.y", to = "c.x" }, { from = "b.y", to = "c.x" }])"),
              "walks.w.edges: input 'c.x' is fed twice: by the edge from 'a.y' and by "
              "the edge from 'b.y'"));
  // A first value and a loop-back edge is the usual pair.
  ModelParse pair = OneWalk(R"({ loop = "l", max_iterations = 2, body = "a" })",
                            R"({ "a.x" = "request.prompt" })", R"([{ from = "a.y", to = "a.x" }])");
  EXPECT_TRUE(pair.model.has_value()) << JoinDiagnostics(pair.diagnostics);
}

// A loop-back edge replaces, for the next iteration, the value that came from outside its loop:
// a forward edge from inside the same loop, or a second loop-back edge of that loop, would give
// the node two values every iteration. Loop-back edges of different loops may share an input.
TEST(ModelValidate, ALoopBackEdgeIsTheOnlyFeedOfItsLoop) {
  const char* inputs = R"({ "c.x" = "request.prompt" })";
  EXPECT_TRUE(Reports(
      OneWalk(R"({ loop = "l", max_iterations = 3, body = { sequence = ["c", "a"] } })", inputs,
              R"([{ from = "c.y", to = "a.x" }, { from = "a.y", to = "a.x" }])"),
      "m.toml:16:40: walks.w.edges: input 'a.x' is fed twice in each iteration of loop 'l': by "
      "the edge from 'c.y' and by the edge from 'a.y' (a node reads one value per input; "
      "combine them in a node)"));
  // Order in the manifest does not matter.
  EXPECT_TRUE(Reports(
      OneWalk(R"({ loop = "l", max_iterations = 3, body = { sequence = ["c", "a"] } })", inputs,
              R"([{ from = "a.y", to = "a.x" }, { from = "c.y", to = "a.x" }])"),
      "m.toml:16:10: walks.w.edges: input 'a.x' is fed twice in each iteration of loop 'l': by "
      "the edge from 'c.y' and by the edge from 'a.y'"));
  EXPECT_TRUE(Reports(
      OneWalk(R"({ loop = "l", max_iterations = 3, body = { sequence = ["a", "b", "c"] } })",
              R"({ "a.x" = "request.prompt" })",
              R"([{ from = "b.y", to = "a.x" }, { from = "c.y", to = "a.x" }])"),
      "m.toml:16:40: walks.w.edges: input 'a.x' is fed twice in each iteration of loop 'l': by "
      "the edge from 'b.y' and by the edge from 'c.y'"));
  // Fed from outside the loop (by a node before it in an outer loop), and back from inside it.
  ModelParse nested =
      OneWalk(R"({ loop = "o", max_iterations = 2, body = { sequence = ["c", )"
              R"({ loop = "i", max_iterations = 3, body = "a" }] } })",
              inputs, R"([{ from = "c.y", to = "a.x" }, { from = "a.y", to = "a.x" }])");
  EXPECT_TRUE(nested.model.has_value()) << JoinDiagnostics(nested.diagnostics);
  // Loop-back edges of two loops: each brings the value for its own loop's next iteration.
  ModelParse two_loops =
      OneWalk(R"({ loop = "o", max_iterations = 2, body = { sequence = [)"
              R"({ loop = "i", max_iterations = 3, body = { sequence = ["a", "b"] } }, "c"] } })",
              R"({ "a.x" = "request.prompt" })",
              R"([{ from = "b.y", to = "a.x" }, { from = "c.y", to = "a.x" }])");
  EXPECT_TRUE(two_loops.model.has_value()) << JoinDiagnostics(two_loops.diagnostics);
}

TEST(ModelValidate, CycleBetweenParallelBranches) {
  ModelParse parse = OneWalk(R"({ parallel = ["a", "b", "c"] })", R"({ "a.x" = "request.prompt" })",
                             R"([{ from = "a.y", to = "b.x" }, { from = "b.y", to = "a.z" }])");
  EXPECT_TRUE(Reports(parse, "m.toml:12:1: walks.w.edges: cycle outside a loop: a -> b -> a"));
  EXPECT_EQ(parse.diagnostics.size(), 1u) << JoinDiagnostics(parse.diagnostics);
}

// A sequence orders its nodes whatever their inputs: with edges between parallel branches, the
// order can close a cycle no data edge alone makes (b waits for a, c for b, a for c).
TEST(ModelValidate, CycleThroughASequencesOrder) {
  ModelParse parse = OneWalk(R"({ parallel = [{ sequence = ["a", "b"] }, "c"] })",
                             R"({ "a.x" = "request.prompt" })",
                             R"([{ from = "b.y", to = "c.x" }, { from = "c.y", to = "a.z" }])");
  EXPECT_TRUE(Reports(parse,
                      "m.toml:12:1: walks.w.edges: cycle outside a loop: 'a' runs before 'b', "
                      "'b' feeds 'c', 'c' feeds 'a' (a node of a sequence waits for those before "
                      "it)"))
      << JoinDiagnostics(parse.diagnostics);
  EXPECT_EQ(parse.diagnostics.size(), 1u) << JoinDiagnostics(parse.diagnostics);
  // Without the edge back into the sequence, the branches only feed forward.
  ModelParse fine = OneWalk(R"({ parallel = [{ sequence = ["a", "b"] }, "c"] })",
                            R"({ "a.x" = "request.prompt" })", R"([{ from = "b.y", to = "c.x" }])");
  EXPECT_TRUE(fine.model.has_value()) << JoinDiagnostics(fine.diagnostics);
}

TEST(ModelValidate, WalkInputSources) {
  ModelParse parse = Parse(R"([streams.s]
to = "side"
policy = "fixed"
size = 1
[partitions.main]
initial = "w"
[partitions.side]
initial = "v"
[walks.w]
partition = "main"
run = { sequence = ["a", "b", "c"] }
inputs = { "a.x" = "persisted.state", "b.x" = "stream.s", "c.x" = "request.text", "d.x" = "stream.s" }
edges = [{ from = "a.y", stream = "s" }]
[walks.v]
partition = "side"
run = "a"
inputs = { "a.x" = "stream.nos" }
)");
  EXPECT_TRUE(Reports(parse,
                      "m.toml:21:20: walks.w.inputs: input never produced: no walk has an "
                      "edge { persist = \"state\" }"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:21:47: walks.w.inputs: stream 's' feeds partition 'side', "
                      "not this walk's partition 'main'"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:21:67: walks.w.inputs: unknown request value 'text' (the "
                      "prompt is request.prompt)"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:21:91: walks.w.inputs: input 'd.x' names a node that is not "
                      "in this walk"));
  EXPECT_TRUE(Reports(parse, "m.toml:26:20: walks.v.inputs: unknown stream 'nos'"));
  EXPECT_TRUE(
      Reports(parse, "m.toml:10:1: streams.s: no walk of partition 'side' reads stream 's'"));
  EXPECT_EQ(parse.diagnostics.size(), 6u) << JoinDiagnostics(parse.diagnostics);
}

TEST(ModelValidate, StreamsAndTheirConsumers) {
  ModelParse parse = Parse(R"([streams.s]
to = "side"
policy = "fixed"
size = 1
[streams.t]
to = "side"
policy = "fixed"
size = 1
[streams.unfed]
to = "other"
policy = "sliding_window"
window = 2
stride = 1
[partitions.main]
initial = "w"
[partitions.side]
initial = "v"
[partitions.other]
initial = "u"
[walks.w]
partition = "main"
run = "a"
edges = [{ from = "a.y", stream = "s" }, { from = "a.z", stream = "t" }]
[walks.v]
partition = "side"
run = "b"
inputs = { "b.x" = "stream.s" }
[walks.u]
partition = "other"
run = "c"
)");
  EXPECT_TRUE(Reports(parse,
                      "m.toml:15:6: streams.t.to: partition 'side' is already fed by "
                      "stream 's'"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:18:1: streams.unfed: chunk policy without a streaming edge: "
                      "no walk has an edge { stream = \"unfed\" }"));
  EXPECT_EQ(parse.diagnostics.size(), 2u) << JoinDiagnostics(parse.diagnostics);
}

// A stream nobody reads, and streams that feed their own writer (directly or in a ring).
TEST(ModelValidate, StreamsFlowFromPartitionToPartition) {
  const std::string partitions = R"([partitions.main]
initial = "w"
[partitions.side]
initial = "v"
[walks.w]
partition = "main"
run = "a"
)";
  ModelParse unread = Parse(R"([streams.s]
to = "side"
policy = "fixed"
size = 1
)" + partitions + R"(edges = [{ from = "a.y", stream = "s" }]
[walks.v]
partition = "side"
run = "b"
)");
  EXPECT_TRUE(Reports(unread,
                      "m.toml:10:1: streams.s: no walk of partition 'side' reads stream 's' "
                      "(give a node the input \"stream.s\")"));
  ModelParse self = Parse(R"([streams.s]
to = "side"
policy = "fixed"
size = 1
)" + partitions + R"(inputs = { "a.x" = "request.prompt" }
[walks.v]
partition = "side"
run = "b"
inputs = { "b.x" = "stream.s" }
edges = [{ from = "b.y", stream = "s" }]
)");
  EXPECT_TRUE(Reports(self,
                      "partitions.side: partitions feed each other through streams ('side' -> "
                      "'side'): such a stream never closes, so the request never ends"));
  ModelParse ring = Parse(R"([streams.s]
to = "side"
policy = "fixed"
size = 1
[streams.t]
to = "main"
policy = "fixed"
size = 1
)" + partitions + R"(inputs = { "a.x" = "stream.t" }
edges = [{ from = "a.y", stream = "s" }]
[walks.v]
partition = "side"
run = "b"
inputs = { "b.x" = "stream.s" }
edges = [{ from = "b.y", stream = "t" }]
)");
  EXPECT_TRUE(Reports(ring,
                      "partitions feed each other through streams ('main' -> 'side' -> "
                      "'main')"));
}

TEST(ModelValidate, RepeatedNodeInAWalk) {
  ModelParse parse = OneWalk(R"({ sequence = ["a", { parallel = ["b", "a"] }, "b"] })",
                             R"({ "a.x" = "request.prompt" })", "[]");
  EXPECT_TRUE(Reports(parse,
                      "m.toml:12:1: walks.w.run: node 'a' appears more than once in the "
                      "walk"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:12:1: walks.w.run: node 'b' appears more than once in the "
                      "walk"));
  EXPECT_EQ(parse.diagnostics.size(), 2u) << JoinDiagnostics(parse.diagnostics);
}

TEST(ModelValidate, RepeatedLoopName) {
  EXPECT_TRUE(Reports(
      OneWalk(
          R"({ loop = "l", max_iterations = 2, body = { loop = "l", max_iterations = 2, body = "a" } })",
          "{}", "[]"),
      "m.toml:14:48: walks.w.run: loop name 'l' is used twice (stop checks end loops by name)"));
  // Loop names are unique in the whole model, not only in one walk.
  ModelParse two_walks = Parse(R"([partitions.main]
initial = "w"
transitions = { w = "v" }
[walks.w]
partition = "main"
run = { loop = "gen", max_iterations = 2, body = "a" }
[walks.v]
partition = "main"
run = { loop = "gen", max_iterations = 2, body = "a" }
)");
  EXPECT_TRUE(Reports(two_walks, "m.toml:15:7: walks.w.run: loop name 'gen' is used twice"));
}

}  // namespace
}  // namespace mstar

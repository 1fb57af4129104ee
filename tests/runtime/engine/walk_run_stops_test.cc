// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// WalkRun's late stops: one step runs ahead of the previous step's stop check, so a stop may land
// after the step run ahead ended its loop, or after an enclosing loop reset or restarted that loop;
// and the epochs by which steps of an inner loop's earlier runs are told apart. (The basics:
// walk_run_test.cc.)
#include <gtest/gtest.h>

#include <string>

#include "engine/walk_run.h"
#include "runtime/engine/walk_run_fixture.h"

namespace mstar {
namespace {

using namespace walktest;

// loop outer (2) { sequence [loop inner (2) { x }, y] }; x.h: walk input, then loop-back edges
// from x (inner) and from y (outer).
constexpr const char* kNested = R"(inputs = { "x.h" = "request.prompt", "y.c" = "request.prompt" }
edges = [{ from = "x.out", to = "x.h" }, { from = "y.out", to = "x.h" }]
[walks.w.run]
loop = "outer"
max_iterations = 2
body = { sequence = [{ loop = "inner", max_iterations = 2, body = "x" }, "y"] })";

TEST(WalkRun, NestedInnerLoopRestartsWithANewEpoch) {
  Walk t({"x", "y"}, kNested);
  int outer = t.L("outer"), inner = t.L("inner");
  EXPECT_EQ(t.w.nodes()[t.N("x")].loops, (Ids{outer, inner}));
  EXPECT_EQ(t.Begin(), t.Id("x"));
  std::vector<StepTicket> xs;
  for (uint32_t o = 0; o < 2; ++o) {
    EXPECT_EQ(t.run.iteration(outer), o);
    for (uint32_t i = 0; i < 2; ++i) {
      EXPECT_EQ(t.run.iteration(inner), i);
      StepTicket step = t.Step("x", "x.h");
      EXPECT_EQ(step.iterations, (U32s{o, i}));
      EXPECT_EQ(step.epochs, (U32s{1, o + 1}));
      EXPECT_EQ(t.run.Complete(step), t.Id(i == 0 ? "x" : "y"));
      xs.push_back(step);
    }
    EXPECT_TRUE(t.Filled("x.h"));  // the inner loop's last value, carried to its next run
    StepTicket ty = t.Step("y", "x.h");
    EXPECT_EQ(ty.epochs, U32s{1});
    EXPECT_EQ(t.run.Complete(ty), o == 0 ? t.Id("x") : Ids{});
    if (o == 0) {
      // Late stops for the inner's first run, after y read what it left: ignored.
      EXPECT_EQ(t.run.StopLoop(inner, xs[1]), Ids{});
      EXPECT_EQ(t.run.StopLoop(inner, xs[0]), Ids{});
      EXPECT_TRUE(t.Ready("x"));
      EXPECT_EQ(t.run.iteration(inner), 0u);
    }
  }
  EXPECT_TRUE(t.run.finished());
  // Steps of the inner loop's earlier run completed normally: not abandoned (their stop checks
  // and outputs may be applied after the inner loop restarted).
  for (const StepTicket& x : xs) EXPECT_FALSE(t.run.Abandoned(x)) << x.iterations[0];
}

// a feeding itself in a loop "gen" of limit iterations, then b reading a's last value.
std::string LoopThenB(int limit) {
  return R"(run = { sequence = [{ loop = "gen", max_iterations = )" + std::to_string(limit) +
         R"(, body = "a" }, "b"] }
inputs = { "a.in" = "request.prompt" }
edges = [{ from = "a.out", to = "a.in" }, { from = "a.out", to = "b.x" }])";
}

// A stop that lands after the loop reached its limit through the step run ahead of it (one step
// runs before the previous one's stop check): the loop ends after the stopper all the same. The
// last step is abandoned, and the node after the loop reads the stopper's value, not its.
TEST(WalkRun, AStopAfterTheLimitWithdrawsTheStepThatRanAhead) {
  Walk t({"a", "b"}, LoopThenB(3));
  int gen = t.L("gen");
  t.Begin();
  auto step = [&] { return t.StepAndSend("a", "a.in", "b.x"); };  // fed back, sent past the loop
  StepTicket s0 = step();
  t.run.Complete(s0);
  t.run.Confirm(s0);
  StepTicket s1 = step();
  t.run.Complete(s1);
  StepTicket s2 = step();  // ran ahead of s1's stop check: the last iteration
  EXPECT_EQ(t.run.Complete(s2), t.Id("b"));
  EXPECT_EQ(t.run.StopLoop(gen, s1), Ids{});  // b is reached already
  EXPECT_TRUE(t.run.Abandoned(s2));
  EXPECT_FALSE(t.run.Abandoned(s1));
  EXPECT_EQ(t.run.iteration(gen), 1u);
  ASSERT_TRUE(t.Ready("b"));
  TensorMapPtr inputs;
  StepTicket tb = t.Dispatch("b", &inputs);
  EXPECT_EQ(Values(*inputs, "x"), I64s{200 + static_cast<int64_t>(s1.seq)});
  EXPECT_EQ(t.run.Complete(tb), Ids{});
  EXPECT_TRUE(t.run.finished());
}

// A stop from the step that ended its loop at the limit (no step of the loop ran after it) lands
// after the node past the loop ran and fed the loop's port for the next pass: it changes nothing.
TEST(WalkRun, AStopFromTheLoopsLastStepKeepsWhatRanAfterTheLoop) {
  Walk t({"x", "y", "z"}, R"(inputs = { "x.h" = "request.prompt" }
edges = [{ from = "x.out", to = "x.h" }, { from = "y.out", to = "x.h" }]
[walks.w.run]
loop = "outer"
max_iterations = 2
body = { sequence = [{ loop = "inner", max_iterations = 2, body = "x" }, "y", "z"] })");
  int inner = t.L("inner");
  t.Begin();
  StepTicket x0 = t.Step("x", "x.h");
  t.run.Complete(x0);
  t.run.Confirm(x0);
  StepTicket x1 = t.Step("x", "x.h");
  EXPECT_EQ(t.run.Complete(x1), t.Id("y"));  // the inner loop's limit
  StepTicket y = t.Step("y", "x.h");         // for the outer loop's next pass
  EXPECT_EQ(t.run.Complete(y), t.Id("z"));
  EXPECT_EQ(t.run.StopLoop(inner, x1), Ids{});
  EXPECT_FALSE(t.run.Abandoned(x1));
  EXPECT_FALSE(t.run.Abandoned(y));
  EXPECT_EQ(t.run.Complete(t.Dispatch("z")), t.Id("x"));  // the outer loop's second pass
  TensorMapPtr inputs;
  t.Dispatch("x", &inputs);
  EXPECT_EQ(Values(*inputs, "h"), I64s{100 + static_cast<int64_t>(y.seq)});
}

// The inner loop is the last section of the outer loop's body: the step that ends it at its limit,
// run ahead of the previous step's stop check, also moves the outer loop to its next pass (which
// resets the inner loop). The late stop still abandons that step and withdraws what it left.
TEST(WalkRun, ALateStopEndsAnInnerRunItsOuterLoopReset) {
  Walk t({"x", "y"}, R"(inputs = { "x.h" = "request.prompt", "y.c" = "request.prompt" }
edges = [{ from = "x.out", to = "x.h" }, { from = "x.out", to = "y.c" }]
[walks.w.run]
loop = "outer"
max_iterations = 2
body = { sequence = ["y", { loop = "inner", max_iterations = 3, body = "x" }] })");
  int inner = t.L("inner");
  EXPECT_EQ(t.Begin(), t.Id("y"));
  EXPECT_EQ(t.run.Complete(t.Dispatch("y")), t.Id("x"));
  auto step = [&] { return t.StepAndSend("x", "x.h", "y.c"); };  // fed back, to y's next pass
  StepTicket x0 = step();
  t.run.Complete(x0);
  t.run.Confirm(x0);
  StepTicket x1 = step();
  t.run.Complete(x1);
  StepTicket x2 = step();                    // ran ahead of x1's stop check: the inner loop's limit
  EXPECT_EQ(t.run.Complete(x2), t.Id("y"));  // the outer loop's second pass
  EXPECT_EQ(t.run.StopLoop(inner, x1), Ids{});
  EXPECT_TRUE(t.run.Abandoned(x2));
  EXPECT_FALSE(t.run.Abandoned(x1));
  TensorMapPtr inputs;
  t.Dispatch("y", &inputs);  // y's port is `latest`: it would read x2's value if it were there
  EXPECT_EQ(Values(*inputs, "c"), I64s{200 + static_cast<int64_t>(x1.seq)});
}

// x feeding itself in a loop "inner" of inner_limit iterations that is all of the body of a loop
// "outer" of 3.
std::string InnerLoopIsTheOuterBody(int inner_limit) {
  return R"(inputs = { "x.h" = "request.prompt" }
edges = [{ from = "x.out", to = "x.h" }]
[walks.w.run]
loop = "outer"
max_iterations = 3
body = { loop = "inner", max_iterations = )" +
         std::to_string(inner_limit) + R"(, body = "x" })";
}

// The inner loop is all of the outer loop's body: the step that ends it at its limit, run ahead of
// the previous step's stop check, starts its next run at once. The late stop still abandons that
// step, and the next run starts from what the stopper left.
TEST(WalkRun, ALateStopEndsAnInnerRunItsOuterLoopRestarted) {
  Walk t({"x"}, InnerLoopIsTheOuterBody(2));
  int inner = t.L("inner");
  t.Begin();
  StepTicket x0 = t.Step("x", "x.h");
  t.run.Complete(x0);
  StepTicket x1 = t.Step("x", "x.h");        // ran ahead of x0's stop check: the limit
  EXPECT_EQ(t.run.Complete(x1), t.Id("x"));  // the inner loop's second run starts
  EXPECT_EQ(x1.epochs, (U32s{1, 1}));
  EXPECT_EQ(t.run.StopLoop(inner, x0), Ids{});  // x stays ready: its port is refilled
  EXPECT_TRUE(t.run.Abandoned(x1));
  EXPECT_FALSE(t.run.Abandoned(x0));
  EXPECT_EQ(t.run.iteration(inner), 0u);
  TensorMapPtr inputs;
  StepTicket next = t.Dispatch("x", &inputs);
  EXPECT_EQ(next.epochs, (U32s{1, 2}));
  EXPECT_EQ(Values(*inputs, "h"), I64s{100 + static_cast<int64_t>(x0.seq)});
  EXPECT_FALSE(t.run.Abandoned(next));
}

// A stop from a step that a stop before it abandoned changes nothing.
TEST(WalkRun, AStopFromAnAbandonedStepIsIgnored) {
  Walk t({"a", "b"}, LoopThenB(5));
  int gen = t.L("gen");
  t.Begin();
  StepTicket s0 = t.Step("a", "a.in");
  t.run.Complete(s0);
  StepTicket s1 = t.Step("a", "a.in");
  t.run.Feed(t.N("b"), t.P("b.x"), {Value(7)}, s0.seq);
  EXPECT_EQ(t.run.StopLoop(gen, s0), Ids{});  // s1 is still in flight
  EXPECT_TRUE(t.run.Abandoned(s1));
  EXPECT_EQ(t.run.StopLoop(gen, s1), Ids{});
  EXPECT_EQ(t.run.Complete(s1), t.Id("b"));  // the abandoned loop settles after s0
  EXPECT_EQ(t.run.iteration(gen), 0u);
}

// A loop of one iteration inside another restarts at each step: a step two runs old, whose stop
// check has not landed, is not abandoned for that.
TEST(WalkRun, AStepTwoRunsOldOfAOneIterationLoopIsNotAbandoned) {
  Walk t({"x"}, InnerLoopIsTheOuterBody(1));
  t.Begin();
  StepTicket x0 = t.Step("x", "x.h");
  EXPECT_EQ(t.run.Complete(x0), t.Id("x"));  // the inner loop's second run starts
  StepTicket x1 = t.Step("x", "x.h");        // ran ahead of x0's stop check
  EXPECT_EQ(t.run.Complete(x1), t.Id("x"));  // and its third
  EXPECT_EQ(x1.epochs, (U32s{1, 2}));
  EXPECT_FALSE(t.run.Abandoned(x0));
  EXPECT_FALSE(t.run.Abandoned(x1));
  EXPECT_TRUE(t.run.Abandoned(Walk::OtherRun(x0, -3)));  // older than any run kept
}

TEST(WalkRun, NestedAbandonmentOutlivesTheInnerRestart) {
  Walk t({"x", "y"}, kNested, {{"inner", 3}});
  int inner = t.L("inner");
  t.Begin();
  StepTicket x0 = t.Step("x", "x.h");
  t.run.Complete(x0);
  StepTicket x1 = t.Step("x", "x.h");  // speculative: ran before x0's stop check
  EXPECT_EQ(t.run.Complete(x1), t.Id("x"));
  EXPECT_EQ(t.run.StopLoop(inner, x0), t.Id("y"));  // withdraws what came after x0
  EXPECT_TRUE(t.run.Abandoned(x1));
  EXPECT_FALSE(t.run.Abandoned(x0));
  TensorMapPtr inputs;
  StepTicket y = t.Dispatch("y", &inputs);
  t.run.Complete(y);  // outer iteration 1: the inner loop starts again
  EXPECT_EQ(t.run.iteration(inner), 0u);
  EXPECT_TRUE(t.run.Abandoned(x1));
  EXPECT_FALSE(t.run.Abandoned(x0));
  // The rerun starts from what x0 left: x1's output was removed and its input (x0's output) put
  // back.
  t.Dispatch("x", &inputs);
  EXPECT_EQ(Values(*inputs, "h"), I64s{100 + static_cast<int64_t>(x0.seq)});
}

}  // namespace
}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// WalkRun across loops: an input fed from outside a loop is read by every iteration and belongs to
// its own pass; an outer loop's back edge into an inner loop stays for the inner iterations; a node
// after a loop reads the last iteration's value, and a stop withdraws what abandoned iterations
// sent out of the loop.
#include <gtest/gtest.h>

#include "runtime/engine/walk_run_fixture.h"

namespace mstar {
namespace {

using namespace walktest;

// loop gen (3) over a, then b, which reads a's output: the last iteration's value only.
constexpr const char* kLoopThenReader =
    R"(run = { sequence = [{ loop = "gen", max_iterations = 3, body = "a" }, "b"] }
inputs = { "a.in" = "request.prompt" }
edges = [{ from = "a.out", to = "a.in" }, { from = "a.out", to = "b.x" }])";

TEST(WalkRun, ANodeAfterALoopReadsTheLastIterationsValue) {
  Walk t({"a", "b"}, kLoopThenReader);
  EXPECT_TRUE(t.Spec("b.x").latest);
  EXPECT_FALSE(t.Spec("b.x").sticky);
  t.Begin();
  for (int64_t i = 0; i < 3; ++i) {
    StepTicket step = t.Step("a", "a.in");
    t.run.Feed(t.N("b.x"), t.P("b.x"), {Value(10 + i)}, step.seq);
    t.run.Complete(step);
  }
  TensorMapPtr inputs;
  StepTicket b = t.Dispatch("b", &inputs);
  EXPECT_EQ(Values(*inputs, "x"), I64s{12});
  EXPECT_FALSE(t.Filled("b.x"));  // the older values went with the step
  t.run.Complete(b);
  EXPECT_TRUE(t.run.finished());
}

TEST(WalkRun, AStopWithdrawsWhatAbandonedIterationsSentOutOfTheLoop) {
  Walk t({"a", "b"}, kLoopThenReader);
  t.Begin();
  StepTicket first = t.Step("a", "a.in");
  t.run.Feed(t.N("b.x"), t.P("b.x"), {Value(10)}, first.seq);
  EXPECT_EQ(t.run.Complete(first), t.Id("a"));
  StepTicket ahead = t.Step("a", "a.in");  // runs ahead of first's stop check
  t.run.Feed(t.N("b.x"), t.P("b.x"), {Value(11)}, ahead.seq);
  EXPECT_EQ(t.run.Complete(ahead), t.Id("a"));
  EXPECT_EQ(t.run.StopLoop(t.L("gen"), first), t.Id("b"));  // first's check stops the loop
  TensorMapPtr inputs;
  t.Dispatch("b", &inputs);
  EXPECT_EQ(Values(*inputs, "x"), I64s{10});
}

// e, then loop outer (2) of [f, loop inner (2) of d]: e's value reaches every run of d, and f's
// value of each outer iteration reaches that iteration's runs of d.
TEST(WalkRun, InputsFromOutsideALoopStayForItsIterations) {
  Walk t(
      {"e", "f", "d"},
      R"(run = { sequence = ["e", { loop = "outer", max_iterations = 2, body = { sequence = ["f", { loop = "inner", max_iterations = 2, body = "d" }] } }] }
inputs = { "e.x" = "request.prompt", "f.x" = "request.prompt" }
edges = [{ from = "e.y", to = "d.e" }, { from = "f.y", to = "d.f" }])");
  EXPECT_TRUE(t.Spec("d.e").sticky && t.Spec("d.e").latest);
  EXPECT_TRUE(t.Spec("d.f").sticky && t.Spec("d.f").latest);
  t.Begin();
  StepTicket e = t.Dispatch("e");
  t.run.Feed(t.N("d.e"), t.P("d.e"), {Value(7)}, e.seq);
  t.run.Complete(e);
  for (int64_t outer = 0; outer < 2; ++outer) {
    StepTicket f = t.Dispatch("f");
    t.run.Feed(t.N("d.f"), t.P("d.f"), {Value(20 + outer)}, f.seq);
    EXPECT_EQ(t.run.Complete(f), t.Id("d"));
    for (int inner = 0; inner < 2; ++inner) {
      TensorMapPtr inputs;
      StepTicket d = t.Dispatch("d", &inputs);
      EXPECT_EQ(Values(*inputs, "e"), I64s{7});
      EXPECT_EQ(Values(*inputs, "f"), I64s{20 + outer}) << outer << " " << inner;
      t.run.Complete(d);
    }
  }
  EXPECT_TRUE(t.run.finished());
}

// loop outer (2) of parallel [f, loop inner (2) of d]: d may be reached before f has run again;
// it waits for f's new value instead of reading the last pass's.
TEST(WalkRun, AValueFromOutsideALoopIsOnlyForItsOwnPass) {
  Walk t(
      {"f", "d"},
      R"(run = { loop = "outer", max_iterations = 2, body = { parallel = ["f", { loop = "inner", max_iterations = 2, body = "d" }] } }
inputs = { "f.x" = "request.prompt" }
edges = [{ from = "f.y", to = "f.x" }, { from = "f.y", to = "d.x" }])");
  EXPECT_EQ(t.Begin(), t.Id("f"));
  for (int64_t outer = 0; outer < 2; ++outer) {
    EXPECT_FALSE(t.Ready("d")) << outer;  // reached, but f has not run in this pass
    StepTicket f = t.Step("f", "f.x");
    EXPECT_TRUE(t.run.Feed(t.N("d.x"), t.P("d.x"), {Value(10 + outer)}, f.seq));  // d ready now
    t.run.Complete(f);
    for (int inner = 0; inner < 2; ++inner) {
      TensorMapPtr inputs;
      StepTicket d = t.Dispatch("d", &inputs);
      EXPECT_EQ(Values(*inputs, "x"), I64s{10 + outer}) << outer << " " << inner;
      t.run.Complete(d);
    }
  }
  EXPECT_TRUE(t.run.finished());
}

// loop outer (2) of [loop inner (2) of d, f], f feeding d back: f's edge is the outer loop's, and
// enters the inner loop, whose iterations all read it (the walk input before f has run).
TEST(WalkRun, AnOuterLoopBackEdgeIntoAnInnerLoopIsReadByEveryInnerIteration) {
  Walk t(
      {"d", "f"},
      R"(run = { loop = "outer", max_iterations = 2, body = { sequence = [{ loop = "inner", max_iterations = 2, body = "d" }, "f"] } }
inputs = { "d.x" = "request.prompt", "f.x" = "request.prompt" }
edges = [{ from = "f.y", to = "d.x" }])");
  EXPECT_TRUE(t.Spec("d.x").sticky && t.Spec("d.x").latest);
  t.Begin();
  for (int64_t outer = 0; outer < 2; ++outer) {
    for (int inner = 0; inner < 2; ++inner) {
      TensorMapPtr inputs;
      StepTicket d = t.Dispatch("d", &inputs);
      EXPECT_EQ(Values(*inputs, "x"), I64s{outer == 0 ? 0 : 20}) << outer << " " << inner;
      t.run.Complete(d);
    }
    StepTicket f = t.Dispatch("f");
    t.run.Feed(t.N("d.x"), t.P("d.x"), {Value(20 + outer)}, f.seq);
    t.run.Complete(f);
  }
  EXPECT_TRUE(t.run.finished());
}

}  // namespace
}  // namespace mstar

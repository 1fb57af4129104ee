// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// WalkRun: sequences, parallel groups, loops (limits, sticky ports, loop-back edges), speculative
// stops, undispatch and abort, on walks compiled from manifests. (Edges into and out of loops:
// walk_run_loop_edges_test.cc; late stops and nested loops' epochs: walk_run_stops_test.cc.)
#include "engine/walk_run.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "runtime/engine/walk_run_fixture.h"

namespace mstar {
namespace {

using namespace walktest;

TEST(WalkRun, SequenceRunsNodesInOrder) {
  Walk t({"a", "b", "c"}, R"(run = { sequence = ["a", "b", "c"] }
inputs = { "a.x" = "request.prompt" }
edges = [{ from = "a.out", to = "b.in" }, { from = "b.out", to = "c.in" }])");
  EXPECT_TRUE(t.Spec("a.x").sticky);
  EXPECT_FALSE(t.Spec("b.in").sticky);
  EXPECT_FALSE(t.Feed("a.x", 7));  // not reached before Start
  EXPECT_EQ(t.run.Start(), t.Id("a"));
  EXPECT_TRUE(t.Ready("a"));
  EXPECT_FALSE(t.Ready("b") || t.Ready("c"));

  TensorMapPtr inputs;
  StepTicket ta = t.Dispatch("a", &inputs);
  EXPECT_EQ(Values(*inputs, "x"), I64s{7});
  EXPECT_TRUE(t.Filled("a.x"));  // sticky: shared, not consumed
  EXPECT_FALSE(t.Ready("a"));
  EXPECT_EQ(t.run.in_flight(), 1u);
  TensorMapPtr again = NewTensorMap();
  EXPECT_FALSE(t.run.Dispatch(t.N("a"), again.get()).ok());
  EXPECT_FALSE(t.run.IsStale(ta));

  EXPECT_EQ(t.run.Complete(ta), Ids{});  // b is reached but its port is empty
  EXPECT_EQ(t.run.in_flight(), 0u);
  EXPECT_FALSE(t.Ready("b"));
  EXPECT_TRUE(t.Feed("b.in", 8));
  EXPECT_FALSE(t.Feed("b.in", 9));  // appends; already ready
  EXPECT_TRUE(t.Ready("b"));
  EXPECT_FALSE(t.Ready("c"));
  StepTicket tb = t.Dispatch("b", &inputs);
  EXPECT_EQ(Values(*inputs, "in"), (I64s{8, 9}));
  EXPECT_FALSE(t.Filled("b.in"));    // consumed
  EXPECT_FALSE(t.Feed("c.in", 10));  // c's input arrives before b completes
  EXPECT_EQ(t.run.Complete(tb), t.Id("c"));
  EXPECT_FALSE(t.run.finished());
  StepTicket tc = t.Dispatch("c", &inputs);
  EXPECT_EQ(Values(*inputs, "in"), I64s{10});
  EXPECT_EQ(t.run.Complete(tc), Ids{});
  EXPECT_TRUE(t.run.finished());
}

TEST(WalkRun, ParallelFinishesWhenAllBranchesComplete) {
  Walk t({"a", "b"}, R"(run = { parallel = ["a", "b"] }
inputs = { "a.x" = "request.prompt", "b.x" = "request.prompt" })");
  Ids started = t.Begin();
  std::sort(started.begin(), started.end());
  EXPECT_EQ(started, (Ids{t.N("a"), t.N("b")}));
  StepTicket ta = t.Dispatch("a"), tb = t.Dispatch("b");
  EXPECT_EQ(t.run.Complete(tb), Ids{});
  EXPECT_FALSE(t.run.finished());
  EXPECT_EQ(t.run.Complete(ta), Ids{});
  EXPECT_TRUE(t.run.finished());

  // Inside a sequence: c is reached only when both branches are done.
  Walk s({"a", "b", "c"}, R"(run = { sequence = [{ parallel = ["a", "b"] }, "c"] }
inputs = { "a.x" = "request.prompt", "b.x" = "request.prompt" }
edges = [{ from = "a.out", to = "c.p" }, { from = "b.out", to = "c.q" }])");
  s.Begin();
  ta = s.Step("a", "c.p");
  tb = s.Step("b", "c.q");
  EXPECT_EQ(s.run.Complete(ta), Ids{});
  EXPECT_FALSE(s.Ready("c"));  // filled, but the group still waits for b
  EXPECT_EQ(s.run.Complete(tb), s.Id("c"));
  EXPECT_EQ(s.run.Complete(s.Dispatch("c")), Ids{});
  EXPECT_TRUE(s.run.finished());
}

// loop gen (3) over a; a.in is fed by the walk input first, then by the loop-back edge; a.ctx
// only by the walk input (sticky).
constexpr const char* kLoop = R"(run = { loop = "gen", max_iterations = 3, body = "a" }
inputs = { "a.in" = "request.prompt", "a.ctx" = "request.prompt" }
edges = [{ from = "a.out", to = "a.in" }])";

// Starts t (a kLoop walk) with tracked values in a.in and a.ctx, counting deletions from zero.
void StartTracked(Walk& t, int64_t in, int64_t ctx) {
  tracked_deletes = 0;
  t.FeedTensor("a.in", TrackedValue(in));
  t.FeedTensor("a.ctx", TrackedValue(ctx));
  t.run.Start();
}

TEST(WalkRun, LoopRunsExactlyItsLimit) {
  Walk t({"a"}, kLoop);
  EXPECT_EQ(t.run.limit(t.L("gen")), 3u);
  t.Feed("a.in", 100);
  t.Feed("a.ctx", -1);
  EXPECT_EQ(t.run.Start(), t.Id("a"));
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(t.run.iteration(t.L("gen")), i);
    TensorMapPtr inputs;
    StepTicket step = t.Dispatch("a", &inputs);
    EXPECT_EQ(step.iterations, U32s{i});
    EXPECT_EQ(step.epochs, U32s{1});
    EXPECT_EQ(Values(*inputs, "in"), I64s{100 + i});
    EXPECT_EQ(Values(*inputs, "ctx"), I64s{-1});
    EXPECT_FALSE(t.Feed("a.in", 101 + i));  // the loop-back value, while dispatched
    EXPECT_EQ(t.run.Complete(step), i < 2 ? t.Id("a") : Ids{}) << i;
    EXPECT_EQ(t.run.finished(), i == 2) << i;
  }
  EXPECT_EQ(t.run.iteration(t.L("gen")), 2u);
  EXPECT_FALSE(t.Ready("a"));
  // The last loop-back value stays: an enclosing loop running this loop again starts from it.
  EXPECT_TRUE(t.Filled("a.in"));
  EXPECT_TRUE(t.Filled("a.ctx"));
}

TEST(WalkRun, SetIterationContinuesALoopRunElsewhere) {
  // A cohort ran iterations 0 and 1 under one dispatched step: its loop-back value goes into the
  // port, the count is set to the last iteration it ran, and completing the step starts the third
  // (and last) iteration here.
  Walk t({"a"}, kLoop);
  t.Feed("a.in", 100);
  t.Feed("a.ctx", -1);
  t.run.Start();
  StepTicket cohort = t.Dispatch("a");
  EXPECT_EQ(cohort.iterations, U32s{0});
  EXPECT_FALSE(t.FeedTensor("a.in", Value(102)));
  t.run.SetIteration(t.L("gen"), 1);
  EXPECT_EQ(t.run.Complete(cohort), t.Id("a"));
  t.run.Confirm(cohort);
  EXPECT_EQ(t.run.iteration(t.L("gen")), 2u);
  TensorMapPtr inputs;
  StepTicket last = t.Dispatch("a", &inputs);
  EXPECT_EQ(last.iterations, U32s{2});
  EXPECT_EQ(Values(*inputs, "in"), I64s{102});
  EXPECT_EQ(Values(*inputs, "ctx"), I64s{-1});
  EXPECT_EQ(t.run.Complete(last), Ids{});  // the loop's limit, 3, is reached
  EXPECT_TRUE(t.run.finished());
}

TEST(WalkRun, StickyPortIsSharedEdgePortConsumed) {
  {
    Walk t({"a"}, kLoop);
    EXPECT_TRUE(t.Spec("a.ctx").sticky);
    EXPECT_FALSE(t.Spec("a.in").sticky);  // fed by the loop-back edge too
    StartTracked(t, 1, 2);
    for (int i = 0; i < 3; ++i) {
      TensorMapPtr inputs;
      StepTicket step = t.Dispatch("a", &inputs);
      EXPECT_EQ(Values(*inputs, "ctx"), I64s{2});
      EXPECT_FALSE(t.Filled("a.in"));
      EXPECT_TRUE(t.Filled("a.ctx"));
      inputs.reset();  // the step is done with its inputs, but the run keeps 'in' until confirmed
      EXPECT_EQ(tracked_deletes, i == 0 ? 0 : 1);
      t.Feed("a.in", i);
      t.run.Complete(step);
      t.run.Confirm(step);
      EXPECT_EQ(tracked_deletes, 1);  // the first 'in' value was consumed; ctx lives on
    }
    EXPECT_TRUE(t.run.finished());
  }
  EXPECT_EQ(tracked_deletes, 2);  // ctx is released with the run
}

TEST(WalkRun, RestartIsAFreshRunAndReleasesWhatTheOldOneHeld) {
  Walk t({"a"}, kLoop);
  StartTracked(t, 1, 2);
  TensorMapPtr inputs;
  StepTicket old = t.Dispatch("a", &inputs);  // in flight when the run is restarted
  inputs.reset();
  t.run.Complete(old);
  t.run.Restart(t.w, {2});
  EXPECT_EQ(tracked_deletes, 2);  // ctx from its port, in from the unconfirmed step's retention
  EXPECT_TRUE(t.run.IsStale(old));
  EXPECT_FALSE(t.run.finished());
  EXPECT_EQ(t.run.in_flight(), 0u);
  EXPECT_EQ(t.run.limit(t.L("gen")), 2u);
  EXPECT_FALSE(t.Filled("a.in"));
  EXPECT_FALSE(t.Filled("a.ctx"));
  // The same program again, under the new limit: sequence numbers start over.
  t.Feed("a.in", 7);
  t.Feed("a.ctx", -1);
  EXPECT_EQ(t.run.Start(), t.Id("a"));
  for (uint32_t i = 0; i < 2; ++i) {
    StepTicket step = t.Step("a", "a.in", &inputs);
    EXPECT_EQ(step.seq, i + 1u);
    EXPECT_EQ(step.iterations, U32s{i});
    EXPECT_EQ(step.epochs, U32s{1});
    EXPECT_EQ(Values(*inputs, "in"), I64s{i == 0 ? 7 : 101});
    t.run.Complete(step);
    t.run.Confirm(step);
  }
  EXPECT_TRUE(t.run.finished());
}

// sequence [loop gen (5) over a, b].
constexpr const char* kLoopThenB =
    R"(run = { sequence = [{ loop = "gen", max_iterations = 5, body = "a" }, "b"] }
inputs = { "a.in" = "request.prompt", "b.x" = "request.prompt" }
edges = [{ from = "a.out", to = "a.in" }])";

TEST(WalkRun, RestartTakesAnotherWalk) {
  Walk one({"a"}, kLoop);
  Walk two({"a", "b"}, kLoopThenB, {{"gen", 2}});
  one.Begin();
  one.run.Restart(two.w, two.Limits({{"gen", 2}}));
  WalkRun& run = one.run;
  EXPECT_EQ(&run.walk(), &two.w);
  EXPECT_EQ(run.limit(two.L("gen")), 2u);
  const int a = two.N("a"), b = two.N("b");
  run.Feed(a, two.P("a.in"), Value(1));
  run.Feed(b, two.P("b.x"), Value(2));
  EXPECT_EQ(run.Start(), Ids{a});
  for (int i = 0; i < 2; ++i) {
    TensorMapPtr inputs = NewTensorMap();
    Result<StepTicket> step = run.Dispatch(a, inputs.get());
    ASSERT_TRUE(step.ok());
    run.Feed(a, two.P("a.in"), Value(100 + i), step.value().seq);
    EXPECT_EQ(run.Complete(step.value()), i == 0 ? Ids{a} : Ids{b});
    run.Confirm(step.value());
  }
  TensorMapPtr inputs = NewTensorMap();
  Result<StepTicket> last = run.Dispatch(b, inputs.get());
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(run.Complete(last.value()), Ids{});
  EXPECT_TRUE(run.finished());
}

TEST(WalkRun, StopWithdrawsTheSpeculativeIterationOfItsRun) {
  Walk t({"a", "b"}, kLoopThenB);
  int gen = t.L("gen");
  t.Begin();
  StepTicket t0 = t.Step("a", "a.in");
  EXPECT_EQ(t.run.Complete(t0), t.Id("a"));  // iteration 1 starts before 0's stop check
  EXPECT_EQ(t.run.iteration(gen), 1u);
  uint64_t activation = t.run.Activation(t.N("a"));
  EXPECT_EQ(t.run.StopLoop(gen, Walk::OtherRun(t0, 1)), Ids{});  // another run's stop: ignored
  EXPECT_EQ(t.run.StopLoop(gen, Walk::OtherRun(t0, -1)), Ids{});
  EXPECT_TRUE(t.Ready("a"));
  EXPECT_EQ(t.run.StopLoop(gen, t0), t.Id("b"));
  EXPECT_FALSE(t.Ready("a"));
  EXPECT_GT(t.run.Activation(t.N("a")), activation);
  EXPECT_TRUE(t.Filled("a.in"));  // what t0 fed back stays: it is the state the loop ends in
  EXPECT_FALSE(t.run.Abandoned(t0));
  EXPECT_EQ(t.run.StopLoop(gen, t0), Ids{});  // the loop has ended: a repeated stop does nothing
  EXPECT_TRUE(t.Ready("b"));
  t.run.Complete(t.Dispatch("b"));
  EXPECT_TRUE(t.run.finished());
}

TEST(WalkRun, StopWaitsForTheDispatchedStaleStep) {
  Walk t({"a", "b"}, kLoopThenB);
  int gen = t.L("gen");
  t.Begin();
  StepTicket t0 = t.Step("a", "a.in");
  t.run.Complete(t0);
  StepTicket t1 = t.Step("a", "a.in");
  EXPECT_EQ(t.run.StopLoop(gen, t0), Ids{});
  EXPECT_TRUE(t.run.IsStale(t1));
  EXPECT_TRUE(t.run.Abandoned(t1));
  EXPECT_FALSE(t.run.Abandoned(t0));
  EXPECT_FALSE(t.Ready("b"));
  EXPECT_EQ(t.run.Complete(t1), t.Id("b"));  // the stale step settles the loop
  EXPECT_EQ(t.run.in_flight(), 0u);
  EXPECT_FALSE(t.Ready("a"));

  // A loop that is the whole walk finishes only when the stale step completes.
  Walk w({"a"}, kLoop);
  w.Begin();
  StepTicket w0 = w.Step("a", "a.in");
  w.run.Complete(w0);
  StepTicket w1 = w.Step("a", "a.in");
  EXPECT_EQ(w.run.StopLoop(w.L("gen"), w0), Ids{});
  EXPECT_FALSE(w.run.finished());
  EXPECT_TRUE(w.run.IsStale(w1));
  EXPECT_EQ(w.run.Complete(w1), Ids{});
  EXPECT_TRUE(w.run.finished());
}

TEST(WalkRun, StopEndsTheLoopRightAfterTheStoppingStep) {
  // loop gen { sequence [a, c] }, then b: a stop decided by a's step withdraws c of the same
  // iteration (it comes after the stopping step), and the loop ends.
  Walk t(
      {"a", "b", "c"},
      R"(run = { sequence = [{ loop = "gen", max_iterations = 5, body = { sequence = ["a", "c"] } }, "b"] }
inputs = { "a.in" = "request.prompt", "b.x" = "request.prompt", "c.x" = "request.prompt" }
edges = [{ from = "a.out", to = "a.in" }])");
  int gen = t.L("gen");
  t.Begin();
  StepTicket a0 = t.Step("a", "a.in");
  EXPECT_EQ(t.run.Complete(a0), t.Id("c"));
  EXPECT_EQ(t.run.StopLoop(gen, a0), t.Id("b"));
  EXPECT_FALSE(t.Ready("c"));
  EXPECT_EQ(t.run.iteration(gen), 0u);
}

TEST(WalkRun, UndispatchReturnsTheInputs) {
  Walk t({"a"}, kLoop);
  StartTracked(t, 5, 6);
  TensorMapPtr inputs;
  StepTicket step = t.Dispatch("a", &inputs);
  EXPECT_EQ(t.run.Undispatch(step, inputs.get()), t.Id("a"));
  EXPECT_TRUE(inputs->entries().empty());
  EXPECT_EQ(tracked_deletes, 0);
  EXPECT_TRUE(t.Ready("a"));
  EXPECT_EQ(t.run.in_flight(), 0u);
  StepTicket again = t.Step("a", "a.in", &inputs);
  EXPECT_EQ(again.iterations, U32s{0});
  EXPECT_EQ(Values(*inputs, "in"), I64s{5});
  EXPECT_EQ(Values(*inputs, "ctx"), I64s{6});
  inputs.reset();
  EXPECT_EQ(t.run.Complete(again), t.Id("a"));
  t.run.Confirm(again);
  EXPECT_EQ(tracked_deletes, 1);  // in consumed; ctx still held by the port
  EXPECT_EQ(t.run.iteration(t.L("gen")), 1u);

  // A port holding several values gets them back in the order it held them.
  Walk many({"a"}, kLoop);
  many.Feed("a.in", 1);
  many.Feed("a.in", 2);
  many.Feed("a.in", 3);
  many.Feed("a.ctx", 9);
  many.run.Start();
  StepTicket first = many.Dispatch("a", &inputs);
  EXPECT_EQ(Values(*inputs, "in"), (I64s{1, 2, 3}));
  many.run.Undispatch(first, inputs.get());
  StepTicket second = many.Dispatch("a", &inputs);
  EXPECT_EQ(Values(*inputs, "in"), (I64s{1, 2, 3}));
  many.run.Undispatch(second, inputs.get());

  // An undispatched step whose iteration was abandoned meanwhile settles the loop instead.
  Walk l({"a", "b"}, kLoopThenB);
  l.Begin();
  StepTicket l0 = l.Step("a", "a.in");
  l.run.Complete(l0);
  StepTicket l1 = l.Dispatch("a", &inputs);
  l.run.StopLoop(l.L("gen"), l0);
  EXPECT_EQ(l.run.Undispatch(l1, inputs.get()), l.Id("b"));
  EXPECT_TRUE(inputs->entries().empty());
  EXPECT_FALSE(l.Ready("a"));
  EXPECT_EQ(l.run.in_flight(), 0u);
}

TEST(WalkRun, LoopWithLimitZeroIsSkipped) {
  Walk t({"a", "b"}, kLoopThenB, {{"gen", 0}});
  EXPECT_EQ(t.Begin(), t.Id("b"));
  EXPECT_FALSE(t.Ready("a"));
  EXPECT_EQ(t.run.Complete(t.Dispatch("b")), Ids{});
  EXPECT_TRUE(t.run.finished());

  Walk only({"a"}, kLoop, {{"gen", 0}});
  EXPECT_EQ(only.Begin(), Ids{});
  EXPECT_FALSE(only.Ready("a"));
  EXPECT_TRUE(only.run.finished());
}

TEST(WalkRun, AbortWithdrawsEverything) {
  tracked_deletes = 0;
  Walk t({"a", "b"}, R"(run = { parallel = ["a", "b"] }
inputs = { "a.x" = "request.prompt", "b.x" = "request.prompt" })");
  t.Feed("a.x", 1);
  t.FeedTensor("b.x", TrackedValue(2));
  t.run.Start();
  StepTicket ta = t.Dispatch("a");
  EXPECT_TRUE(t.Ready("b"));
  t.run.Abort();
  EXPECT_TRUE(t.run.aborted());
  EXPECT_FALSE(t.Ready("a") || t.Ready("b"));
  EXPECT_EQ(tracked_deletes, 1);  // ports are released
  EXPECT_TRUE(t.run.IsStale(ta));
  EXPECT_TRUE(t.run.Abandoned(ta));
  EXPECT_FALSE(t.Feed("b.x", 3));
  EXPECT_EQ(t.run.Complete(ta), Ids{});
  EXPECT_EQ(t.run.in_flight(), 0u);
  EXPECT_FALSE(t.run.finished());

  // In a loop waiting for an abandoned step: that step settles nothing after an abort.
  Walk l({"a", "b"}, kLoopThenB);
  int gen = l.L("gen");
  l.Begin();
  StepTicket l0 = l.Step("a", "a.in");
  l.run.Complete(l0);
  StepTicket l1 = l.Step("a", "a.in");
  l.run.StopLoop(gen, l0);
  l.run.Abort();
  EXPECT_EQ(l.run.StopLoop(gen, l0), Ids{});
  EXPECT_EQ(l.run.Complete(l1), Ids{});
  EXPECT_FALSE(l.Ready("b"));
  EXPECT_FALSE(l.run.finished());
  EXPECT_TRUE(l.run.Abandoned(l0));
}

}  // namespace
}  // namespace mstar

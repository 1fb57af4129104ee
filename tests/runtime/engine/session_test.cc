// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Session calls made from stream callbacks that run inside another call of the same session on
// the same thread: a request cancelled while it waits in a busy queue ends inside Cancel, and its
// end callback runs there. Submit, Cancel and stats work from there; WaitIdle and Close are
// checked errors (each would wait for the call it is part of).
#include <gtest/gtest.h>

#include <thread>

#include "runtime/engine/engine_harness.h"

namespace mstar {
namespace {

// The first batched forward sleeps: the queue stays busy, and requests submitted meanwhile wait.
ModelSpec BusyModel(int sleep_us) {
  return test::Model(R"(
format = 1
[model]
name = "busy"
max_output_tokens = 100
[nodes.lm]
plugin = "kit_columnar"
[nodes.lm.config]
first_batched_sleep_us = )" +
                     std::to_string(sleep_us) + "\n" + test::LmWalks(2));
}

std::shared_ptr<RequestStream> SubmitPrompt(Session& session, const std::string& prompt,
                                            std::shared_ptr<RequestStream> stream = nullptr) {
  SubmitSpec spec;
  spec.prompt = prompt;
  spec.stream = std::move(stream);
  Result<std::shared_ptr<RequestStream>> submitted = session.Submit(std::move(spec));
  EXPECT_TRUE(submitted.ok()) << submitted.status().ToString();
  return submitted.ok() ? submitted.value() : nullptr;
}

// Opens the busy model and submits a request whose batch then sleeps in forward.
std::unique_ptr<Session> OpenBusy(int sleep_us) {
  Result<std::unique_ptr<Session>> session =
      Session::Open(BusyModel(sleep_us), test::TestRegistry());
  if (!session.ok()) {
    ADD_FAILURE() << session.status().ToString();
    return nullptr;
  }
  std::unique_ptr<Session> s = std::move(session).value();
  if (SubmitPrompt(*s, "AB") == nullptr) return nullptr;
  while (s->stats().batches == 0) std::this_thread::yield();
  return s;
}

TEST(Session, ACallbackInsideCancelMaySubmitCancelAndReadStats) {
  std::unique_ptr<Session> session = OpenBusy(1000000);
  ASSERT_NE(session, nullptr);
  std::shared_ptr<RequestStream> waiting = SubmitPrompt(*session, "CD");
  ASSERT_NE(waiting, nullptr);
  std::shared_ptr<RequestStream> submitted;
  bool cancelled_the_other = false;
  uint64_t batches_seen = 0;
  std::thread::id callback_thread;
  auto cancelled = std::make_shared<RequestStream>(100);
  cancelled->SetCallbacks(nullptr, [&](const RequestResult&) {
    callback_thread = std::this_thread::get_id();
    cancelled_the_other = session->Cancel(waiting->id());
    submitted = SubmitPrompt(*session, "EF");
    batches_seen = session->stats().batches;
  });
  ASSERT_NE(SubmitPrompt(*session, "GH", cancelled), nullptr);

  EXPECT_TRUE(session->Cancel(100));
  EXPECT_EQ(callback_thread, std::this_thread::get_id());  // inside Cancel, on this thread
  EXPECT_TRUE(cancelled_the_other);
  EXPECT_GE(batches_seen, 1u);
  EXPECT_EQ(waiting->Wait().end, RequestEnd::kCancelled);
  ASSERT_NE(submitted, nullptr);
  const RequestResult result = submitted->Wait();
  EXPECT_EQ(result.end, RequestEnd::kDone) << result.error;
  session->Close();
}

// The child's callback runs inside its Cancel (the queue is busy for a minute), then dies.
void DieCallingFromInsideCancel(const std::function<void(Session&)>& call) {
  std::unique_ptr<Session> session = OpenBusy(60000000);
  if (session == nullptr) return;
  auto stream = std::make_shared<RequestStream>(100);
  stream->SetCallbacks(nullptr, [&](const RequestResult&) { call(*session); });
  if (SubmitPrompt(*session, "GH", stream) == nullptr) return;
  session->Cancel(100);
}

TEST(SessionDeathTest, CloseOrWaitIdleFromACallbackInsideACallIsACheckedError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(DieCallingFromInsideCancel([](Session& s) { s.Close(); }),
               "called_outside_a_stream_callback_of_this_session");
  EXPECT_DEATH(DieCallingFromInsideCancel([](Session& s) { s.WaitIdle(); }),
               "called_outside_a_stream_callback_of_this_session");
}

}  // namespace
}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Session calls made from stream callbacks, also from those that run inside another call of the
// same session on the same thread (a request that Close cancels ends inside Close): Submit,
// Cancel and stats work from there; WaitIdle and Close are checked errors (each would wait for
// the call it is part of).
#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <thread>

#include "runtime/engine/engine_harness.h"
#include "support/test_support.h"

namespace mstar {
namespace {

std::shared_ptr<RequestStream> SubmitPrompt(Session& session, const std::string& prompt,
                                            std::shared_ptr<RequestStream> stream = nullptr) {
  SubmitSpec spec;
  spec.prompt = prompt;
  spec.stream = std::move(stream);
  Result<std::shared_ptr<RequestStream>> submitted = session.Submit(std::move(spec));
  EXPECT_TRUE(submitted.ok()) << submitted.status().ToString();
  return submitted.ok() ? submitted.value() : nullptr;
}

// Opens the busy model and submits a request whose batch then waits in forward until the file
// gate exists.
std::unique_ptr<Session> OpenBusy(const std::string& gate) {
  Result<std::unique_ptr<Session>> session =
      Session::Open(test::BusyKitModel(0, gate), test::TestRegistry());
  if (!session.ok()) {
    ADD_FAILURE() << session.status().ToString();
    return nullptr;
  }
  std::unique_ptr<Session> s = std::move(session).value();
  if (SubmitPrompt(*s, "AB") == nullptr) return nullptr;
  while (s->stats().batches == 0) std::this_thread::yield();
  return s;
}

// A callback (here the end of a request cancelled while it waits in a busy queue: it runs inside
// Cancel, or on the thread delivering then) may submit, cancel and read stats.
TEST(Session, ACallbackOfACancelledRequestMaySubmitCancelAndReadStats) {
  test::TempDir dir;
  std::unique_ptr<Session> session = OpenBusy(dir.file("go"));
  ASSERT_NE(session, nullptr);
  std::shared_ptr<RequestStream> waiting = SubmitPrompt(*session, "CD");
  ASSERT_NE(waiting, nullptr);
  std::shared_ptr<RequestStream> submitted;
  bool cancelled_the_other = false;
  uint64_t batches_seen = 0;
  std::promise<void> called;
  auto cancelled = std::make_shared<RequestStream>(100);
  cancelled->SetCallbacks(nullptr, [&](const RequestResult&) {
    cancelled_the_other = session->Cancel(waiting->id());
    submitted = SubmitPrompt(*session, "EF");
    batches_seen = session->stats().batches;
    called.set_value();
  });
  ASSERT_NE(SubmitPrompt(*session, "GH", cancelled), nullptr);

  EXPECT_TRUE(session->Cancel(100));
  called.get_future().wait();
  EXPECT_TRUE(cancelled_the_other);
  EXPECT_GE(batches_seen, 1u);
  EXPECT_EQ(waiting->Wait().end, RequestEnd::kCancelled);
  test::WriteFile(dir.file("go"), "");  // the busy batch ends; the one submitted runs
  ASSERT_NE(submitted, nullptr);
  const RequestResult result = submitted->Wait();
  EXPECT_EQ(result.end, RequestEnd::kDone) << result.error;
  session->Close();
}

// The requests Close cancels end inside it, on its thread (the pipeline is stopped by then): their
// callbacks may still call the session, which refuses new requests.
TEST(Session, ACallbackInsideCloseMayCallTheSession) {
  Result<std::unique_ptr<Session>> opened =
      Session::Open(test::EndlessEcho(), test::TestRegistry());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Session& s = **opened;
  std::thread::id callback_thread;
  bool refused = false;
  auto stream = std::make_shared<RequestStream>(100);
  stream->SetCallbacks(nullptr, [&](const RequestResult&) {
    callback_thread = std::this_thread::get_id();
    SubmitSpec spec;
    spec.prompt = "late";
    refused = !s.Submit(std::move(spec)).ok();
    (void)s.stats();
    (void)s.Cancel(100);
  });
  ASSERT_NE(SubmitPrompt(s, "x", stream), nullptr);
  s.Close();
  EXPECT_EQ(callback_thread, std::this_thread::get_id());
  EXPECT_TRUE(refused);
  EXPECT_EQ(stream->Wait().end, RequestEnd::kCancelled);
}

// The child's request runs until Close cancels it; its callback, inside Close, makes call and dies.
void DieCallingFromACallbackOfClose(const std::function<void(Session&)>& call) {
  Result<std::unique_ptr<Session>> session =
      Session::Open(test::EndlessEcho(), test::TestRegistry());
  if (!session.ok()) return;
  Session& s = **session;
  auto stream = std::make_shared<RequestStream>(100);
  stream->SetCallbacks(nullptr, [&](const RequestResult&) { call(s); });
  if (SubmitPrompt(s, "x", stream) == nullptr) return;
  s.Close();
}

TEST(SessionDeathTest, CloseOrWaitIdleFromACallbackInsideACallIsACheckedError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(DieCallingFromACallbackOfClose([](Session& s) { s.Close(); }),
               "called_outside_a_stream_callback_of_this_session");
  EXPECT_DEATH(DieCallingFromACallbackOfClose([](Session& s) { s.WaitIdle(); }),
               "called_outside_a_stream_callback_of_this_session");
}

}  // namespace
}  // namespace mstar

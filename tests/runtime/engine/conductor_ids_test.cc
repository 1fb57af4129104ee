// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Request ids through a real Session: an id is free again only once its request has left the
// engine, a step left queued by a cancelled request is not taken for a later request with its
// id, and ids the conductor assigns skip those clients chose.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "config/toml_reader.h"
#include "runtime/engine/engine_harness.h"

namespace mstar {
namespace {

using test::Model;

// A request cancelled while its step waits in a busy queue leaves that entry behind; a new request
// given the same id must not be taken for it when the queue frees (its walk run is another).
TEST(Conductor, AQueuedStepOfACancelledRequestIsNotTakenForItsIdsNextRequest) {
  const ModelSpec model = Model(R"(
format = 1
[model]
name = "busy"
max_output_tokens = 100
[nodes.lm]
plugin = "kit_columnar"
[nodes.lm.config]
first_batched_sleep_us = 500000
)" + test::LmWalks(2));
  Result<std::unique_ptr<Session>> session = Session::Open(model, test::TestRegistry());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  auto submit = [&](RequestId id) {
    SubmitSpec spec;
    spec.id = id;
    spec.prompt = "AB";
    Result<std::shared_ptr<RequestStream>> stream = (*session)->Submit(std::move(spec));
    EXPECT_TRUE(stream.ok()) << stream.status().ToString();
    return stream.ok() ? stream.value() : nullptr;
  };
  std::shared_ptr<RequestStream> blocker = submit(1);
  ASSERT_NE(blocker, nullptr);
  // Its prefill batch is formed: the prefill queue stays busy while it sleeps in forward.
  while ((*session)->stats().batches == 0) std::this_thread::yield();
  std::shared_ptr<RequestStream> first = submit(7);
  ASSERT_NE(first, nullptr);
  EXPECT_TRUE((*session)->Cancel(7));
  EXPECT_EQ(first->Wait().end, RequestEnd::kCancelled);
  std::shared_ptr<RequestStream> second = submit(7);
  ASSERT_NE(second, nullptr);
  const RequestResult result = second->Wait();
  EXPECT_EQ(result.end, RequestEnd::kDone) << result.error;
  EXPECT_EQ(blocker->Wait().end, RequestEnd::kDone);
}

// A finished request's id is free again only once the engine has removed the request (its
// resources and node state): kit_counter refuses an id it holds. Request 100 ends in the same
// step as 7, before it, and its end callback holds up the delivery that removes both, while 7 is
// submitted again.
TEST(Conductor, AnIdIsFreeAgainOnlyOnceItsRequestHasLeftTheEngine) {
  Result<std::unique_ptr<Session>> session =
      Session::Open(Model(test::kKitModel), test::TestRegistry());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::mutex mu;
  std::condition_variable cv;
  bool holding = false, released = false;
  Diagnostics problems;
  auto params = std::make_shared<ConfigTree>(*ParseTomlText("max_tokens = 3", "params", &problems),
                                             "params", "");
  std::vector<SubmitSpec> specs(2);
  specs[0].id = 100;
  specs[0].stream = std::make_shared<RequestStream>(100);
  specs[0].stream->SetCallbacks(nullptr, [&](const RequestResult&) {
    std::unique_lock<std::mutex> lock(mu);
    holding = true;
    cv.notify_all();
    cv.wait(lock, [&] { return released; });
  });
  specs[1].id = 7;
  for (SubmitSpec& spec : specs) {
    spec.prompt = "AB";
    spec.params = params;
  }
  auto streams = (*session)->SubmitAll(specs);
  ASSERT_TRUE(streams[0].ok() && streams[1].ok());
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return holding; });
  }
  SubmitSpec again = specs[1];
  auto rerun = (*session)->Submit(again);
  // Refused while the old 7 is in the engine, or taken once it has left: never added twice.
  if (!rerun.ok()) {
    EXPECT_NE(rerun.status().message().find("request 7 is still ending"), std::string::npos)
        << rerun.status().ToString();
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    released = true;
  }
  cv.notify_all();
  EXPECT_EQ(streams[1].value()->Wait().end, RequestEnd::kDone);
  if (!rerun.ok()) rerun = (*session)->Submit(again);  // its stream has ended: the id is free
  ASSERT_TRUE(rerun.ok()) << rerun.status().ToString();
  RequestResult result = rerun.value()->Wait();
  EXPECT_EQ(result.end, RequestEnd::kDone) << result.error;
  EXPECT_EQ(result.tokens, 3u);
  (*session)->Close();
}

// Ids the conductor assigns skip the ids clients chose themselves.
TEST(Conductor, AssignedIdsSkipTheIdsClientsChose) {
  ModelSpec model = test::EndlessEcho();
  Result<std::unique_ptr<Session>> session = Session::Open(model, test::TestRegistry());
  ASSERT_TRUE(session.ok());
  SubmitSpec chosen;
  chosen.prompt = "mine";
  chosen.id = 1;  // the first id the conductor would assign
  auto mine = (*session)->Submit(chosen);
  ASSERT_TRUE(mine.ok());
  SubmitSpec any;
  any.prompt = "any";
  auto assigned = (*session)->Submit(any);
  ASSERT_TRUE(assigned.ok()) << assigned.status().ToString();
  EXPECT_NE(assigned.value()->id(), 1u);
  (*session)->Close();
}

}  // namespace
}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Request ids through a real Session: an id is free again only once its request has left the
// engine, a step left queued by a cancelled request is not taken for a later request with its
// id, ids the conductor assigns skip those clients chose, ids start at 1 and a stream names its
// request; and a client's callback that throws fails only its own request.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "config/toml_reader.h"
#include "runtime/engine/engine_harness.h"
#include "support/test_support.h"

namespace mstar {
namespace {

using test::Model;

// A request cancelled while its step waits in a busy queue leaves that entry behind; a new request
// given the same id must not be taken for it when the queue frees (its walk run is another).
TEST(Conductor, AQueuedStepOfACancelledRequestIsNotTakenForItsIdsNextRequest) {
  test::TempDir dir;
  const ModelSpec model = test::BusyKitModel(0, dir.file("go"));
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
  // Its prefill batch is formed: the prefill queue stays busy while it waits in forward.
  while ((*session)->stats().batches == 0) std::this_thread::yield();
  std::shared_ptr<RequestStream> first = submit(7);
  ASSERT_NE(first, nullptr);
  EXPECT_TRUE((*session)->Cancel(7));
  EXPECT_EQ(first->Wait().end, RequestEnd::kCancelled);
  std::shared_ptr<RequestStream> second = submit(7);
  test::WriteFile(dir.file("go"), "");  // the queue frees
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

// Id 0 is refused (the conductor marks settled steps with it: request 0 never finished). A
// stream names its request: a request given another request's stream, or a stream given to a
// request before, is refused; one given a stream and no id takes the stream's, so Cancel(stream->id())
// reaches it.
TEST(Conductor, RequestIdsAreOneOrMoreAndAStreamNamesItsRequest) {
  ModelSpec model = test::EndlessEcho();
  Result<std::unique_ptr<Session>> session = Session::Open(model, test::TestRegistry());
  ASSERT_TRUE(session.ok());
  auto submit = [&](std::optional<RequestId> id, std::shared_ptr<RequestStream> stream) {
    SubmitSpec spec;
    spec.prompt = "x";
    spec.id = id;
    spec.stream = std::move(stream);
    return (*session)->Submit(std::move(spec));
  };
  Result<std::shared_ptr<RequestStream>> zero = submit(0, nullptr);
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().message(), "request id 0 is not valid (ids start at 1)");
  EXPECT_FALSE(submit(std::nullopt, std::make_shared<RequestStream>(0)).ok());

  Result<std::shared_ptr<RequestStream>> other = submit(3, std::make_shared<RequestStream>(4));
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().message(),
            "request 3 was given the stream of request 4 (a stream's id is its request's)");

  auto mine = std::make_shared<RequestStream>(42);
  Result<std::shared_ptr<RequestStream>> taken = submit(std::nullopt, mine);
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  EXPECT_TRUE((*session)->Cancel(42));  // the endless echo runs until cancelled
  EXPECT_EQ(mine->Wait().end, RequestEnd::kCancelled);

  Result<std::shared_ptr<RequestStream>> again = submit(std::nullopt, mine);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().message(),
            "the stream of request 42 was given to a request already (each request needs a "
            "stream of its own)");
  // Nor is a stream the engine made (a client given it back may not submit it).
  SubmitSpec plain;
  plain.prompt = "x";
  Result<std::shared_ptr<RequestStream>> made = (*session)->Submit(std::move(plain));
  ASSERT_TRUE(made.ok());
  const RequestId made_id = made.value()->id();
  EXPECT_TRUE((*session)->Cancel(made_id));
  made.value()->Wait();
  EXPECT_FALSE(submit(std::nullopt, made.value()).ok());
  // A submission refused after the stream was taken (a bad parameter) leaves it free.
  auto unused = std::make_shared<RequestStream>(43);
  SubmitSpec bad;
  bad.prompt = "x";
  bad.stream = unused;
  Diagnostics problems;
  bad.params = std::make_shared<ConfigTree>(*ParseTomlText("max_tokens = -1", "params", &problems),
                                            "params", "");
  ASSERT_FALSE((*session)->Submit(std::move(bad)).ok());
  Result<std::shared_ptr<RequestStream>> retried = submit(std::nullopt, unused);
  ASSERT_TRUE(retried.ok()) << retried.status().ToString();
  EXPECT_TRUE((*session)->Cancel(43));
  (*session)->Close();
}

// A client whose chunk callback throws fails its own request, saying so; the engine's threads
// go on, and the other requests finish.
TEST(Conductor, AChunkCallbackThatThrowsFailsOnlyItsRequest) {
  Result<std::unique_ptr<Session>> session =
      Session::Open(Model(test::kKitModel), test::TestRegistry());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  auto throwing = std::make_shared<RequestStream>(1);
  throwing->SetCallbacks([](const OutputChunk&) { throw std::runtime_error("client bug"); },
                         [](const RequestResult&) { throw std::logic_error("client bug too"); });
  SubmitSpec spec;
  spec.prompt = "AB";
  spec.stream = throwing;
  ASSERT_TRUE((*session)->Submit(std::move(spec)).ok());
  SubmitSpec other;
  other.prompt = "CD";
  Result<std::shared_ptr<RequestStream>> fine = (*session)->Submit(std::move(other));
  ASSERT_TRUE(fine.ok());
  const RequestResult failed = throwing->Wait();
  EXPECT_EQ(failed.end, RequestEnd::kFailed);
  EXPECT_EQ(failed.error, "the client's chunk callback threw: client bug");
  const RequestResult done = fine.value()->Wait();
  EXPECT_EQ(done.end, RequestEnd::kDone) << done.error;
  (*session)->Close();
}

}  // namespace
}  // namespace mstar

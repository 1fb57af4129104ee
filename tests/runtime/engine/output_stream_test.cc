// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// RequestStream: chunks in order with their sequence numbers, exactly one end, nothing after it,
// callbacks instead of the queue, and readers blocked in other threads (Next gets chunks, Wait
// only the end).
#include "engine/output_stream.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace mstar {
namespace {

OutputChunk Chunk(uint8_t byte) {
  OutputChunk chunk;
  chunk.name = "text";
  chunk.modality = "text";
  chunk.bytes.push_back(byte);
  return chunk;
}

TEST(RequestStream, ChunksComeInOrderThenTheEnd) {
  RequestStream stream(7);
  stream.Push(Chunk('a'));
  stream.Push(Chunk('b'));
  stream.Finish(RequestResult{RequestEnd::kDone, "", 2, 2, 0});
  OutputChunk chunk;
  ASSERT_TRUE(stream.Next(&chunk));
  EXPECT_EQ(chunk.bytes[0], 'a');
  EXPECT_EQ(chunk.sequence, 0u);
  ASSERT_TRUE(stream.Next(&chunk));
  EXPECT_EQ(chunk.bytes[0], 'b');
  EXPECT_EQ(chunk.sequence, 1u);
  EXPECT_FALSE(stream.Next(&chunk));
  EXPECT_EQ(stream.Wait().tokens, 2u);
}

TEST(RequestStream, NothingAfterTheEndAndTheFirstEndStays) {
  RequestStream stream(1);
  stream.Finish(RequestResult{RequestEnd::kFailed, "first", 0, 0, 0});
  stream.Finish(RequestResult{RequestEnd::kDone, "", 0, 0, 0});
  stream.Push(Chunk('x'));
  OutputChunk chunk;
  EXPECT_FALSE(stream.Next(&chunk));
  ASSERT_TRUE(stream.result().has_value());
  EXPECT_EQ(stream.result()->end, RequestEnd::kFailed);
  EXPECT_EQ(stream.result()->error, "first");
}

TEST(RequestStream, CallbacksReceiveEverythingAndNothingIsQueued) {
  RequestStream stream(3);
  std::vector<uint64_t> sequences;
  int ends = 0;
  stream.SetCallbacks([&](const OutputChunk& c) { sequences.push_back(c.sequence); },
                      [&](const RequestResult& r) { ends += r.end == RequestEnd::kDone; });
  stream.Push(Chunk('a'));
  stream.Push(Chunk('b'));
  stream.Finish(RequestResult{});
  stream.Finish(RequestResult{});
  stream.Push(Chunk('c'));  // after the end: not delivered
  EXPECT_EQ(sequences, (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(ends, 1);
  OutputChunk chunk;
  EXPECT_FALSE(stream.Next(&chunk));  // delivered to the callback, not queued
}

// Callbacks are client code: one that throws must neither end the engine's thread nor leave a
// reader waiting. A throwing chunk callback refuses the push, and every later one, saying why;
// a throwing end callback is logged and the stream ends all the same.
TEST(RequestStream, ACallbackThatThrowsNeitherEscapesNorKeepsTheStreamFromEnding) {
  RequestStream stream(5);
  int chunks = 0;
  stream.SetCallbacks(
      [&](const OutputChunk&) {
        if (++chunks == 2) throw std::runtime_error("the client's buffer is full");
      },
      [](const RequestResult&) { throw 42; });
  EXPECT_TRUE(stream.Push(Chunk('a')));
  EXPECT_EQ(stream.PushFailure(), "");
  EXPECT_FALSE(stream.Push(Chunk('b')));
  EXPECT_EQ(stream.PushFailure(), "the client's chunk callback threw: the client's buffer is full");
  EXPECT_FALSE(stream.Push(Chunk('c')));  // not handed to the callback again
  EXPECT_EQ(chunks, 2);
  stream.Finish(RequestResult{RequestEnd::kFailed, "failed", 0, 0, 0});
  EXPECT_EQ(stream.Wait().end, RequestEnd::kFailed);
}

// A client may keep what its end callback writes on its own stack: Wait returns only after the
// callback has. The callback is slow on purpose, so a Wait woken before it would see the flag
// still unset.
TEST(RequestStream, WaitReturnsAfterTheEndCallbackHasReturned) {
  RequestStream stream(4);
  std::atomic<bool> callback_returned{false};
  stream.SetCallbacks(nullptr, [&](const RequestResult&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    callback_returned = true;
  });
  std::thread writer([&] { stream.Finish(RequestResult{}); });
  EXPECT_EQ(stream.Wait().end, RequestEnd::kDone);
  EXPECT_TRUE(callback_returned.load());
  writer.join();
}

// A reader blocked in Next wakes for each chunk; one blocked in Wait only for the end. The first
// chunk is pushed once the waiter says it is about to wait, and before the reader starts, so a
// Wait that returned for chunks would find one queued; the check that the waiter still waits
// comes once the reader has taken every chunk (every push has woken whoever it wakes).
TEST(RequestStream, BlockedReadersWakeForWhatTheyWait) {
  RequestStream stream(9);
  std::mutex mutex;
  std::condition_variable changed;
  bool waiting = false;       // under mutex: the waiter is about to call Wait
  std::vector<uint8_t> read;  // under mutex
  std::atomic<bool> waited{false};
  std::thread waiter([&] {
    {
      std::lock_guard<std::mutex> lock(mutex);
      waiting = true;
    }
    changed.notify_all();
    RequestResult result = stream.Wait();
    EXPECT_EQ(result.end, RequestEnd::kDone);
    EXPECT_EQ(result.tokens, 3u);
    waited = true;
  });
  auto until = [&](auto done) {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, done);
  };
  until([&] { return waiting; });
  stream.Push(Chunk('x'));
  std::thread reader([&] {
    OutputChunk chunk;
    while (stream.Next(&chunk)) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        read.push_back(chunk.bytes[0]);
      }
      changed.notify_all();
    }
  });
  until([&] { return read.size() == 1; });
  stream.Push(Chunk('y'));  // the reader is (or soon is) blocked in Next again
  stream.Push(Chunk('z'));
  until([&] { return read.size() == 3; });
  EXPECT_FALSE(waited.load());  // chunks do not end a Wait
  stream.Finish(RequestResult{RequestEnd::kDone, "", 3, 3, 0});
  waiter.join();
  reader.join();
  EXPECT_TRUE(waited.load());
  EXPECT_EQ(read, (std::vector<uint8_t>{'x', 'y', 'z'}));
}

}  // namespace
}  // namespace mstar

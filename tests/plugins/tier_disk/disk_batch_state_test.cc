// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// DiskBatchState (plugins/tier_disk/disk_batch.h) when a GET throws: the op fails with INTERNAL,
// the exception leaves neither the worker nor a waiting thread, and the batch still completes.
// Each side runs on a thread of its own holding the batch, so that a side stuck for good (the
// defect these tests guard against) fails the test by a bounded wait instead of hanging it; the
// bound only detects a hang, it says nothing about speed.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "disk_batch.h"

namespace mstar::tier_disk {
namespace {

constexpr auto kHang = std::chrono::seconds(60);  // a side not back by then is stuck for good

// A batch of count GETs; the ops and the state live as long as any thread using them.
struct Batch {
  explicit Batch(uint32_t count) : ops(count), state(ops.data(), count) {
    for (mstar_tier_op_t& op : ops) {
      op.kind = MSTAR_TIER_OP_GET;
      op.result = 0xFFFFFFFFu;  // a value nobody writes
    }
  }
  uint32_t index(const mstar_tier_op_t& op) const {
    return static_cast<uint32_t>(&op - ops.data());
  }

  std::vector<mstar_tier_op_t> ops;
  DiskBatchState state;
  std::atomic<bool> thrower_started{false};
};

// A side of a batch on a thread of its own; its result (or exception) comes through the future.
// The thread is joined at the end when its result came, and left to itself (detached) when it is
// stuck, so that a hang fails the test instead of hanging it.
template <typename Result>
struct Side {
  explicit Side(std::function<Result()> body) {
    std::packaged_task<Result()> task(std::move(body));
    result = task.get_future();
    thread = std::thread(std::move(task));
  }
  ~Side() {
    if (result.valid() && result.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      thread.detach();
    } else {
      thread.join();
    }
  }
  std::future<Result> result;
  std::thread thread;
};

// The worker's part of a batch of GETs: runs them (with any waiting thread), then marks it done.
std::function<void()> Worker(const std::shared_ptr<Batch>& batch, RunGet run) {
  return [batch, run = std::move(run)] {
    batch->state.RunGets(0, batch->state.count(), run);
    batch->state.MarkDone();
  };
}

TEST(DiskBatchState, AGetThatThrowsOnTheWorkerFailsAloneAndTheBatchCompletes) {
  auto batch = std::make_shared<Batch>(3);
  RunGet run = [raw = batch.get()](mstar_tier_op_t& op) {
    if (raw->index(op) == 1) throw std::runtime_error("injected");
    op.result = MSTAR_OK;
  };
  Side<void> worker(Worker(batch, run));
  ASSERT_EQ(worker.result.wait_for(kHang), std::future_status::ready)
      << "the worker never finished";
  EXPECT_NO_THROW(worker.result.get());  // an exception here would have ended the worker thread
  EXPECT_TRUE(batch->state.done());
  EXPECT_EQ(batch->ops[0].result, MSTAR_OK);
  EXPECT_EQ(batch->ops[1].result, MSTAR_ERR_INTERNAL);
  EXPECT_EQ(batch->ops[2].result, MSTAR_OK);
}

// The worker takes GET 0 and holds it until the waiting thread has taken GET 1, which throws:
// the worker must still see every GET finished, and the waiter must see the batch done.
TEST(DiskBatchState, AGetThatThrowsOnAWaitingThreadNeitherEscapesNorStallsTheWorker) {
  auto batch = std::make_shared<Batch>(2);
  RunGet run = [raw = batch.get()](mstar_tier_op_t& op) {
    if (raw->index(op) == 1) {
      raw->thrower_started.store(true);
      throw std::runtime_error("injected");
    }
    // GET 0 (the worker claims it first): wait until the other thread has GET 1. Bounded, so
    // that a defect elsewhere cannot hang the test here.
    const auto give_up = std::chrono::steady_clock::now() + kHang;
    while (!raw->thrower_started.load() && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    op.result = MSTAR_OK;
  };
  Side<bool> waiter([batch, run] { return batch->state.WaitHelping(std::nullopt, run); });
  Side<void> worker(Worker(batch, run));

  ASSERT_EQ(worker.result.wait_for(kHang), std::future_status::ready)
      << "the worker waits for a GET that will never report finished";
  EXPECT_NO_THROW(worker.result.get());
  ASSERT_EQ(waiter.result.wait_for(kHang), std::future_status::ready)
      << "the waiter never returned";
  bool waited = false;
  EXPECT_NO_THROW(waited = waiter.result.get());
  EXPECT_TRUE(waited);
  EXPECT_TRUE(batch->thrower_started.load());
  EXPECT_EQ(batch->ops[0].result, MSTAR_OK);
  EXPECT_EQ(batch->ops[1].result, MSTAR_ERR_INTERNAL);
}

}  // namespace
}  // namespace mstar::tier_disk

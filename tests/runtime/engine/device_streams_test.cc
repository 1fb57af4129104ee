// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// DeviceStreams on the host, watched through StreamLogBackend: three streams told apart, ordering
// by an event recorded on the source lane and waited on by the waiter, and failures that say why
// and leave nothing behind.
#include "engine/device_streams.h"

#include <gtest/gtest.h>

#include "runtime/engine/stream_log_backend.h"

namespace mstar {
namespace {

using test::StreamLogBackend;
using test::StreamLogEntry;
using test::StreamLogScope;
using test::StreamOp;

TEST(DeviceStreams, ThreeStreamsOfTheirOwnOnTheHost) {
  StreamLogBackend backend;
  StreamLogScope scope(backend);
  Result<std::unique_ptr<DeviceStreams>> made = DeviceStreams::Create(DLDevice{kDLCPU, 0});
  ASSERT_TRUE(made.ok()) << made.status().message();
  DeviceStreams& streams = *made.value();
  EXPECT_EQ(backend.live_streams(), 3u);
  EXPECT_NE(streams.exec()->native, nullptr);
  EXPECT_NE(streams.exec()->native, streams.plan()->native);
  EXPECT_NE(streams.plan()->native, streams.copy()->native);
  EXPECT_NE(streams.exec()->native, streams.copy()->native);
  EXPECT_EQ(streams.exec()->backend, &backend);
  made.value().reset();
  EXPECT_EQ(backend.live_streams(), 0u);
}

TEST(DeviceStreams, PinnedHostMemoryRunsOnTheHostStreams) {
  Result<std::unique_ptr<DeviceStreams>> made = DeviceStreams::Create(DLDevice{kDLCUDAHost, 0});
  ASSERT_TRUE(made.ok()) << made.status().message();
  EXPECT_EQ(made.value()->device().device_type, kDLCPU);
}

TEST(DeviceStreams, OrderingRecordsOnTheSourceAndWaitsOnTheWaiter) {
  StreamLogBackend backend;
  StreamLogScope scope(backend);
  std::unique_ptr<DeviceStreams> streams = DeviceStreams::Create(DLDevice{kDLCPU, 0}).value();
  streams->Gave(DeviceStreams::kPlan);
  const size_t before = backend.log().size();
  ASSERT_TRUE(streams->OrderAfter(streams->exec(), DeviceStreams::kPlan).ok());
  ASSERT_TRUE(streams->OrderAfter(streams->copy(), DeviceStreams::kExec).ok());
  std::vector<StreamLogEntry> log = backend.log();
  ASSERT_EQ(log.size(), before + 4);
  EXPECT_EQ(log[before].op, StreamOp::kRecord);
  EXPECT_EQ(log[before].stream, streams->plan()->native);
  EXPECT_EQ(log[before + 1].op, StreamOp::kWait);
  EXPECT_EQ(log[before + 1].stream, streams->exec()->native);
  EXPECT_EQ(log[before + 1].event, log[before].event);
  EXPECT_EQ(log[before + 2].stream, streams->exec()->native);
  EXPECT_EQ(log[before + 3].stream, streams->copy()->native);
  EXPECT_EQ(log[before + 3].event, log[before + 2].event);
  EXPECT_NE(log[before].event, log[before + 2].event);  // one event per lane

  // A stream is ordered after itself already: nothing is recorded.
  streams->Gave(DeviceStreams::kCopy);
  ASSERT_TRUE(streams->OrderAfter(streams->copy(), DeviceStreams::kCopy).ok());
  ASSERT_TRUE(streams->Synchronize(DeviceStreams::kExec).ok());
  log = backend.log();
  ASSERT_EQ(log.size(), before + 5);
  EXPECT_EQ(log.back().op, StreamOp::kSync);
  EXPECT_EQ(log.back().stream, streams->exec()->native);
}

// A node on the host using a resource on a device, and the other way round. The logging backend
// stands in for the device's.
TEST(DeviceStreams, AcrossHostAndDeviceTheHostWaitsAndTheDeviceDoesNot) {
  StreamLogBackend device_backend;
  std::unique_ptr<DeviceStreams> host = DeviceStreams::Create(DLDevice{kDLCPU, 0}).value();
  std::unique_ptr<DeviceStreams> device =
      DeviceStreams::CreateOn(DLDevice{kDLCUDA, 0}, &device_backend).value();
  device->Gave(DeviceStreams::kCopy);
  host->Gave(DeviceStreams::kPlan);
  const size_t before = device_backend.log().size();
  // A host stream cannot wait: the host blocks on the device lane's event.
  ASSERT_TRUE(device->OrderAfter(host->exec(), DeviceStreams::kCopy).ok());
  std::vector<StreamLogEntry> log = device_backend.log();
  ASSERT_EQ(log.size(), before + 2);
  EXPECT_EQ(log[before].op, StreamOp::kRecord);
  EXPECT_EQ(log[before].stream, device->copy()->native);
  EXPECT_EQ(log[before + 1].op, StreamOp::kSyncEvent);
  EXPECT_EQ(log[before + 1].event, log[before].event);
  // Host work ran when it was given: a device stream has nothing to wait for.
  ASSERT_TRUE(host->OrderAfter(device->exec(), DeviceStreams::kPlan).ok());
  EXPECT_EQ(device_backend.log().size(), before + 2);
}

TEST(DeviceStreams, AWaitThatFailsSaysWhy) {
  StreamLogBackend backend;
  backend.fail_waits = true;
  StreamLogScope scope(backend);
  std::unique_ptr<DeviceStreams> streams = DeviceStreams::Create(DLDevice{kDLCPU, 0}).value();
  streams->Gave(DeviceStreams::kCopy);
  Status status = streams->OrderAfter(streams->exec(), DeviceStreams::kCopy);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("the stream cannot wait"), std::string::npos) << status.message();
}

// Plan and copy count the hooks they were handed to: a waiter orders after one of them only when
// it was given something since that waiter last did. Exec is not counted and always orders.
TEST(DeviceStreams, AnIdleLaneIsNotWaitedFor) {
  StreamLogBackend backend;
  StreamLogScope scope(backend);
  std::unique_ptr<DeviceStreams> streams = DeviceStreams::Create(DLDevice{kDLCPU, 0}).value();
  auto waits = [&] {
    size_t n = 0;
    for (const StreamLogEntry& e : backend.log()) n += e.op == StreamOp::kWait;
    return n;
  };
  ASSERT_TRUE(streams->OrderAfter(streams->exec(), DeviceStreams::kCopy).ok());
  EXPECT_EQ(waits(), 0u);  // never given
  { LaneUse use(*streams, DeviceStreams::kCopy); }
  ASSERT_TRUE(streams->OrderAfter(streams->exec(), DeviceStreams::kCopy).ok());
  EXPECT_EQ(waits(), 1u);
  ASSERT_TRUE(streams->OrderAfter(streams->exec(), DeviceStreams::kCopy).ok());
  EXPECT_EQ(waits(), 1u);  // nothing given since
  // Each waiter keeps its own count.
  ASSERT_TRUE(streams->OrderAfter(streams->plan(), DeviceStreams::kCopy).ok());
  EXPECT_EQ(waits(), 2u);
  // Exec always orders.
  ASSERT_TRUE(streams->OrderAfter(streams->copy(), DeviceStreams::kExec).ok());
  ASSERT_TRUE(streams->OrderAfter(streams->copy(), DeviceStreams::kExec).ok());
  EXPECT_EQ(waits(), 4u);
  // A wait that failed is tried again by the next order.
  streams->Gave(DeviceStreams::kCopy);
  backend.fail_waits = true;
  EXPECT_FALSE(streams->OrderAfter(streams->exec(), DeviceStreams::kCopy).ok());
  backend.fail_waits = false;
  ASSERT_TRUE(streams->OrderAfter(streams->exec(), DeviceStreams::kCopy).ok());
  EXPECT_EQ(waits(), 5u);
}

TEST(DeviceStreams, AnEventThatCannotBeMadeLeavesNoStreamBehind) {
  for (int failing = 1; failing <= 3; ++failing) {
    StreamLogBackend backend;
    backend.fail_event_number = failing;
    StreamLogScope scope(backend);
    Result<std::unique_ptr<DeviceStreams>> made = DeviceStreams::Create(DLDevice{kDLCPU, 0});
    ASSERT_FALSE(made.ok()) << failing;
    EXPECT_NE(made.status().message().find("no events left"), std::string::npos)
        << made.status().message();
    EXPECT_EQ(backend.live_streams(), 0u) << failing;
  }
}

}  // namespace
}  // namespace mstar

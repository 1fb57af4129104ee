// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Streams, events and copies of the host services table.
#include "runtime/host/host_services_fixture.h"

#include "core/fault_injection.h"
#include "runtime/engine/stream_log_backend.h"
#include "support/test_support.h"

namespace mstar {
namespace {

using test::HostServicesTest;
using test::kCpu;

// A stream the host lends a hook (a step's, a plan's) is the host's: stream_release on it is
// refused with an error, and the stream stays usable.
TEST_F(HostServicesTest, StreamReleaseRefusesAStreamTheHostLent) {
  mstar_stream lent;
  lent.device = kCpu;
  lent.backend = BackendFor(kCpu).value();
  test::LogCapture capture;
  api()->stream_release(&lent);
  EXPECT_TRUE(capture.Contains("stream_release: the stream was lent by the host"))
      << ::testing::PrintToString(capture.Lines());
  EXPECT_EQ(api()->stream_synchronize(&lent), nullptr);
}

// Both sides in host memory, on a device stream: the copy comes after what the stream was given
// before (a device-to-host copy into the source, say), so the stream is synchronized first; the
// bytes are in place when the call returns.
TEST_F(HostServicesTest, HostToHostCopiesOnADeviceStreamWaitForTheStream) {
  test::StreamLogBackend device_backend;
  Result<void*> native = device_backend.CreateStream(DLDevice{kDLCUDA, 0}, 0);
  ASSERT_TRUE(native.ok());
  mstar_stream stream;
  stream.device = DLDevice{kDLCUDA, 0};
  stream.native = native.value();
  stream.backend = &device_backend;
  std::vector<uint8_t> pinned(64, 5), pageable(64, 0);
  for (const auto& [dst, src] :
       {std::pair{kCpu, DLDevice{kDLCUDAHost, 0}}, std::pair{DLDevice{kDLCUDAHost, 0}, kCpu},
        std::pair{kCpu, kCpu}}) {
    std::fill(pageable.begin(), pageable.end(), 0);
    const size_t before = device_backend.log().size();
    ASSERT_EQ(api()->memory_copy(pageable.data(), dst, pinned.data(), src, 64, &stream), nullptr);
    EXPECT_EQ(pageable, pinned);
    std::vector<test::StreamLogEntry> log = device_backend.log();
    ASSERT_EQ(log.size(), before + 1);  // one synchronization, no copy on the device backend
    EXPECT_EQ(log.back().op, test::StreamOp::kSync);
    EXPECT_EQ(log.back().stream, native.value());
  }
  const size_t before = device_backend.log().size();
  ASSERT_EQ(api()->memory_copy_2d(pageable.data(), 8, kCpu, pinned.data(), 8, kCpu, 8, 8, &stream),
            nullptr);
  EXPECT_EQ(device_backend.log().size(), before + 1);
}

// memory_copy_2d (since 1.2) moves rows between pitched regions: a strided gather into a
// contiguous block and back, leaving the bytes between rows alone; pitches under the width fail.
TEST_F(HostServicesTest, StridedCopiesMoveRowsAndKeepTheGaps) {
  ASSERT_GE(api()->struct_version, 2u);
  std::vector<uint8_t> strided(5 * 16);
  for (size_t i = 0; i < strided.size(); ++i) strided[i] = static_cast<uint8_t>(i);
  std::vector<uint8_t> block(5 * 6, 0xEE);
  ASSERT_EQ(
      api()->memory_copy_2d(block.data(), 6, kCpu, strided.data() + 3, 16, kCpu, 6, 5, nullptr),
      nullptr);
  for (size_t row = 0; row < 5; ++row)
    for (size_t col = 0; col < 6; ++col)
      EXPECT_EQ(block[row * 6 + col], strided[row * 16 + 3 + col]) << row << "," << col;

  std::vector<uint8_t> back(5 * 16, 0);
  ASSERT_EQ(api()->memory_copy_2d(back.data() + 3, 16, kCpu, block.data(), 6, kCpu, 6, 5, nullptr),
            nullptr);
  for (size_t i = 0; i < back.size(); ++i) {
    const bool in_row = i % 16 >= 3 && i % 16 < 9;
    EXPECT_EQ(back[i], in_row ? strided[i] : 0) << i;
  }

  mstar_status_t* s =
      api()->memory_copy_2d(block.data(), 4, kCpu, strided.data(), 16, kCpu, 6, 2, nullptr);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(api()->status_code(s), MSTAR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(api()->status_message(s)).find("must be at least the width"),
            std::string::npos);
  api()->status_release(s);
  // A device that is not there: NOT_FOUND on a CUDA build (no GPU has index 4096), UNSUPPORTED on
  // a CPU build; either way the message names the device.
  s = api()->memory_copy_2d(block.data(), 6, DLDevice{kDLCUDA, 4096}, strided.data(), 16, kCpu, 6,
                            2, nullptr);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(api()->status_code(s), MSTAR_WITH_CUDA ? MSTAR_ERR_NOT_FOUND : MSTAR_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(api()->status_message(s)).find("cuda:4096"), std::string::npos)
      << api()->status_message(s);
  api()->status_release(s);
}

TEST_F(HostServicesTest, UnsupportedDeviceIsAnError) {
  void* p = nullptr;
  mstar_status_t* s = api()->memory_alloc(ctx(), DLDevice{kDLVulkan, 0}, 16, 0, 0, &p);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(api()->status_code(s), MSTAR_ERR_UNSUPPORTED);
  api()->status_release(s);
  EXPECT_EQ(p, nullptr);
  // Also a tensor without bytes: it names a device, and later copies of it would fail there.
  for (int64_t rows : {int64_t{0}, int64_t{4}}) {
    mstar_tensor_t* t = nullptr;
    s = api()->tensor_alloc(ctx(), DLDevice{kDLVulkan, 0}, DLDataType{kDLFloat, 32, 1}, 1, &rows,
                            &t);
    ASSERT_NE(s, nullptr) << rows;
    EXPECT_EQ(api()->status_code(s), MSTAR_ERR_UNSUPPORTED) << rows;
    api()->status_release(s);
    EXPECT_EQ(t, nullptr);
  }
}

// Streams and events of host memory, pinned included (also on a machine with a GPU), are the
// CPU's: inline, with no handle, as host copies expect (they wait for no stream).
TEST_F(HostServicesTest, CpuStreamsAndEventsCompleteInline) {
  for (DLDevice device : {kCpu, DLDevice{kDLCUDAHost, 0}}) {
    SCOPED_TRACE(device.device_type);
    mstar_stream_t* stream = nullptr;
    ASSERT_EQ(api()->stream_create(ctx(), device, 0, &stream), nullptr);
    EXPECT_EQ(api()->stream_device(stream).device_type, kDLCPU);
    EXPECT_EQ(api()->stream_native(stream), nullptr);
    mstar_event_t* event = nullptr;
    ASSERT_EQ(api()->event_create(ctx(), device, &event), nullptr);
    ASSERT_EQ(api()->event_record(event, stream), nullptr);
    ASSERT_EQ(api()->stream_wait_event(stream, event), nullptr);
    uint32_t done = 0;
    ASSERT_EQ(api()->event_query(event, &done), nullptr);
    EXPECT_EQ(done, 1u);
    EXPECT_EQ(api()->event_synchronize(event), nullptr);
    EXPECT_EQ(api()->stream_synchronize(stream), nullptr);
    api()->event_release(event);
    api()->stream_release(stream);
  }
}

// A stream, event or map whose record cannot be made (out of memory, injected here) is an error
// status naming the service and the reason; nothing is handed out.
TEST_F(HostServicesTest, ObjectsThatCannotBeMadeAreErrorsNamingTheService) {
  auto expect_failure = [&](mstar_status_t* status, const char* service) {
    ASSERT_NE(status, nullptr) << service;
    EXPECT_EQ(api()->status_code(status), MSTAR_ERR_RESOURCE_EXHAUSTED) << service;
    EXPECT_EQ(Message(status), std::string(service) + ": injected fault (host object #1)");
  };
  mstar_stream_t* stream = nullptr;
  ArmFault(FaultSite::kHostObject, 1);
  expect_failure(api()->stream_create(ctx(), kCpu, 0, &stream), "stream_create");
  EXPECT_EQ(stream, nullptr);
  mstar_event_t* event = nullptr;
  ArmFault(FaultSite::kHostObject, 1);
  expect_failure(api()->event_create(ctx(), kCpu, &event), "event_create");
  EXPECT_EQ(event, nullptr);
  mstar_tensor_map_t* map = nullptr;
  ArmFault(FaultSite::kHostObject, 1);
  expect_failure(api()->tensor_map_new(&map), "tensor_map_new");
  EXPECT_EQ(map, nullptr);
  DisarmFaults();
}

// A NULL stream is the host's inline stream: CPU, no handle, idle; a NULL event is an error.
TEST_F(HostServicesTest, ANullStreamIsTheInlineStreamAndANullEventAnError) {
  EXPECT_EQ(api()->stream_device(nullptr).device_type, kDLCPU);
  EXPECT_EQ(api()->stream_native(nullptr), nullptr);
  EXPECT_EQ(api()->stream_synchronize(nullptr), nullptr);
  mstar_event_t* event = nullptr;
  ASSERT_EQ(api()->event_create(ctx(), kCpu, &event), nullptr);
  EXPECT_EQ(api()->event_record(event, nullptr), nullptr);
  EXPECT_EQ(api()->stream_wait_event(nullptr, event), nullptr);
  uint32_t done = 0;
  ASSERT_EQ(api()->event_query(event, &done), nullptr);
  EXPECT_EQ(done, 1u);
  api()->event_release(event);
  for (mstar_status_t* status :
       {api()->event_record(nullptr, nullptr), api()->stream_wait_event(nullptr, nullptr),
        api()->event_query(nullptr, &done), api()->event_synchronize(nullptr)}) {
    ASSERT_NE(status, nullptr);
    EXPECT_EQ(api()->status_code(status), MSTAR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(Message(status).find("the event is NULL"), std::string::npos);
  }
}

}  // namespace
}  // namespace mstar

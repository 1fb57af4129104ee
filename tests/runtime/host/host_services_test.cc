// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The host services table, called exactly as a plugin calls it.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/fault_injection.h"
#include "core/metrics.h"
#include "device/device.h"
#include "host/host_api.h"
#include "host/host_objects.h"
#include "host/tensor_objects.h"
#include "plugin/columnar.h"
#include "runtime/engine/stream_log_backend.h"
#include "support/test_support.h"

namespace mstar {
namespace {

constexpr DLDevice kCpu{kDLCPU, 0};
constexpr DLDataType kI64{kDLInt, 64, 1};

class HostServicesTest : public ::testing::Test {
 protected:
  const mstar_host_api_t* api() { return host_.table(); }
  mstar_host_context_t* ctx() { return host_.library_context(); }

  // The message of a status (released).
  std::string Message(mstar_status_t* status) {
    std::string message = api()->status_message(status);
    api()->status_release(status);
    return message;
  }

  mstar_tensor_t* NewTensor(std::vector<int64_t> values) {
    int64_t n = static_cast<int64_t>(values.size());
    mstar_tensor_t* t = nullptr;
    EXPECT_EQ(api()->tensor_alloc(ctx(), kCpu, kI64, 1, &n, &t), nullptr);
    if (!values.empty()) std::memcpy(t->dl.data, values.data(), values.size() * sizeof(int64_t));
    return t;
  }

  HostApi host_{"host_test"};
};

TEST_F(HostServicesTest, TableIsCompleteAndVersioned) {
  EXPECT_EQ(api()->struct_size, sizeof(mstar_host_api_t));
  EXPECT_EQ(api()->struct_version, MSTAR_ABI_MINOR);
  const auto* slots = reinterpret_cast<void* const*>(reinterpret_cast<const char*>(api()) + 8);
  for (size_t i = 0; i < (sizeof(mstar_host_api_t) - 8) / sizeof(void*); ++i) {
    EXPECT_NE(slots[i], nullptr) << "host slot " << i << " is empty";
  }
}

TEST_F(HostServicesTest, StatusObjects) {
  mstar_status_t* s = api()->status_new(MSTAR_ERR_IO, "disk on fire");
  EXPECT_EQ(api()->status_code(s), MSTAR_ERR_IO);
  EXPECT_STREQ(api()->status_message(s), "disk on fire");
  Status taken = TakeStatus(s);
  EXPECT_EQ(taken.code(), Code::kIo);
  EXPECT_EQ(api()->status_code(nullptr), MSTAR_OK);
  EXPECT_STREQ(api()->status_message(nullptr), "");
  api()->status_release(nullptr);
  // A status claiming OK is a plugin bug, reported as such.
  EXPECT_EQ(TakeStatus(api()->status_new(MSTAR_OK, "odd")).code(), Code::kInternal);
}

// Only statuses status_new made, and not yet released, are taken: a hook returning its own object
// or a status it released fails with an internal error naming the fault, and nothing is freed.
TEST_F(HostServicesTest, AStatusNotMadeByStatusNewOrReleasedAlreadyIsRefused) {
  mstar_status own{MSTAR_ERR_IO, "a plugin's own"};
  Status taken = TakeStatus(&own);
  EXPECT_EQ(taken.code(), Code::kInternal);
  EXPECT_NE(taken.message().find("a status that status_new did not make"), std::string::npos)
      << taken.message();
  EXPECT_EQ(own.message, "a plugin's own");
  test::LogCapture capture;
  mstar_status_t* made = api()->status_new(MSTAR_ERR_IO, "once");
  api()->status_release(made);
  api()->status_release(made);
  EXPECT_TRUE(capture.Contains("was released already; nothing is released"))
      << ::testing::PrintToString(capture.Lines());
  EXPECT_EQ(TakeStatus(made).code(), Code::kInternal);
}

TEST_F(HostServicesTest, PluginLogLinesCarryTheLabel) {
  test::LogCapture capture;
  auto instance = host_.NewInstanceContext("node7");
  api()->log(instance.get(), MSTAR_LOG_WARN, "x.cc", 3, "careful now");
  EXPECT_TRUE(capture.Contains("[host_test/node7] careful now"));
  EXPECT_EQ(api()->log_enabled(ctx(), MSTAR_LOG_TRACE), 0u);
  EXPECT_EQ(api()->log_enabled(ctx(), MSTAR_LOG_ERROR), 1u);
}

TEST_F(HostServicesTest, MemoryIsAccountedPerContext) {
  auto instance = host_.NewInstanceContext("mem");
  void* p = nullptr;
  ASSERT_EQ(api()->memory_alloc(instance.get(), kCpu, 4096, 0, 0, &p), nullptr);
  uint64_t used = 0, limit = 1;
  ASSERT_EQ(api()->memory_usage(instance.get(), kCpu, &used, &limit), nullptr);
  EXPECT_EQ(used, 4096u);
  EXPECT_EQ(limit, 0u);
  std::vector<uint8_t> source(4096, 9);
  ASSERT_EQ(api()->memory_copy(p, kCpu, source.data(), kCpu, 4096, nullptr), nullptr);
  EXPECT_EQ(static_cast<uint8_t*>(p)[4095], 9);
  api()->memory_free(instance.get(), p);
  ASSERT_EQ(api()->memory_usage(instance.get(), kCpu, &used, &limit), nullptr);
  EXPECT_EQ(used, 0u);
  test::LogCapture capture;
  api()->memory_free(instance.get(), p);  // double free: reported, not executed
  EXPECT_TRUE(capture.Contains("freed already"));
}

// memory_free frees only what the calling instance allocated with memory_alloc: a tensor's
// storage (freed with the tensor) and another instance's memory are refused and stay as they were.
TEST_F(HostServicesTest, MemoryFreeRefusesATensorsStorageAndAnotherInstancesMemory) {
  auto mine = host_.NewInstanceContext("mine");
  auto theirs = host_.NewInstanceContext("theirs");
  test::LogCapture capture;
  mstar_tensor_t* tensor = NewTensor({7, 8, 9});
  api()->memory_free(ctx(), tensor->dl.data);
  EXPECT_TRUE(capture.Contains("a tensor's storage: release the tensor"))
      << ::testing::PrintToString(capture.Lines());
  EXPECT_EQ(static_cast<int64_t*>(tensor->dl.data)[2], 9);
  api()->tensor_release(tensor);
  void* p = nullptr;
  ASSERT_EQ(api()->memory_alloc(theirs.get(), kCpu, 512, 0, 0, &p), nullptr);
  api()->memory_free(mine.get(), p);
  EXPECT_TRUE(capture.Contains("[host_test/mine] memory_free"))
      << ::testing::PrintToString(capture.Lines());
  EXPECT_TRUE(capture.Contains("allocated by another owner"))
      << ::testing::PrintToString(capture.Lines());
  uint64_t used = 0, limit = 0;
  ASSERT_EQ(api()->memory_usage(theirs.get(), kCpu, &used, &limit), nullptr);
  EXPECT_EQ(used, 512u);
  api()->memory_free(theirs.get(), p);
  ASSERT_EQ(api()->memory_usage(theirs.get(), kCpu, &used, &limit), nullptr);
  EXPECT_EQ(used, 0u);
}

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
}

TEST_F(HostServicesTest, TensorMapsAndSharing) {
  mstar_tensor_map_t* map = nullptr;
  ASSERT_EQ(api()->tensor_map_new(&map), nullptr);
  ASSERT_EQ(api()->tensor_map_append(map, "tokens", NewTensor({1, 2, 3})), nullptr);
  ASSERT_EQ(api()->tensor_map_append(map, "tokens", NewTensor({4})), nullptr);
  ASSERT_EQ(api()->tensor_map_append(map, "audio", NewTensor({})), nullptr);
  EXPECT_EQ(api()->tensor_map_num_names(map), 2u);
  EXPECT_STREQ(api()->tensor_map_name_at(map, 1), "audio");
  EXPECT_EQ(api()->tensor_map_count(map, "tokens"), 2u);
  const mstar_tensor_t* second = api()->tensor_map_get(map, "tokens", 1);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(static_cast<int64_t*>(second->dl.data)[0], 4);
  EXPECT_EQ(api()->tensor_map_get(map, "tokens", 2), nullptr);
  mstar_tensor_t* kept = nullptr;
  ASSERT_EQ(api()->tensor_share(second, &kept), nullptr);
  EXPECT_EQ(api()->tensor_map_remove(map, "tokens"), 2u);
  EXPECT_EQ(static_cast<int64_t*>(kept->dl.data)[0], 4);  // still alive through the share
  api()->tensor_release(kept);
  api()->tensor_map_release(map);
}

// tensor_map_release takes only maps made by tensor_map_new: a map the host lends a hook (a
// step's inputs, outputs) stays the host's. (A second release of a made map is refused too while
// the map waits in the recycler; a build without recycling frees it, so that is not tested.)
TEST_F(HostServicesTest, TensorMapReleaseRefusesAMapTheHostLent) {
  TensorMapPtr lent = NewTensorMap();
  lent->AppendHost("tokens", NewTensor({1, 2}));
  test::LogCapture capture;
  api()->tensor_map_release(lent.get());
  EXPECT_TRUE(capture.Contains("tensor_map_release: the map was lent by the host"))
      << ::testing::PrintToString(capture.Lines());
  EXPECT_EQ(api()->tensor_map_count(lent.get(), "tokens"), 1u);
  mstar_tensor_map_t* made = nullptr;
  ASSERT_EQ(api()->tensor_map_new(&made), nullptr);
  api()->tensor_map_release(made);
  EXPECT_EQ(capture.Lines().size(), 1u);  // a made map is released without a word
}

// A tensor a map holds (tensor_map_get lends it) is not the caller's: appending it to another
// map or releasing it is refused and the map keeps it intact; a tensor_share of it may go
// anywhere. A row view the host lends (a copy of a tensor's fields) is not the caller's either.
TEST_F(HostServicesTest, ATensorAMapHoldsCannotEnterAnotherMapOrBeReleased) {
  mstar_tensor_map_t *first = nullptr, *second = nullptr;
  ASSERT_EQ(api()->tensor_map_new(&first), nullptr);
  ASSERT_EQ(api()->tensor_map_new(&second), nullptr);
  ASSERT_EQ(api()->tensor_map_append(first, "x", NewTensor({1, 2, 3})), nullptr);
  auto* held = const_cast<mstar_tensor_t*>(api()->tensor_map_get(first, "x", 0));
  mstar_status_t* twice = api()->tensor_map_append(second, "x", held);
  ASSERT_NE(twice, nullptr);
  EXPECT_NE(Message(twice).find("a tensor map holds the tensor"), std::string::npos);
  EXPECT_EQ(api()->tensor_map_count(second, "x"), 0u);
  test::LogCapture capture;
  api()->tensor_release(held);
  EXPECT_TRUE(capture.Contains("tensor_release: a tensor map holds the tensor"))
      << ::testing::PrintToString(capture.Lines());
  EXPECT_EQ(static_cast<int64_t*>(api()->tensor_map_get(first, "x", 0)->dl.data)[2], 3);
  mstar_tensor_t* shared = nullptr;
  ASSERT_EQ(api()->tensor_share(held, &shared), nullptr);
  ASSERT_EQ(api()->tensor_map_append(second, "x", shared), nullptr);

  mstar_tensor_t view;
  std::vector<int64_t> dims;
  RowView(*held, 1, 1, &view, &dims);
  api()->tensor_release(&view);
  EXPECT_TRUE(capture.Contains("tensor_release: the tensor is a view the host lent"))
      << ::testing::PrintToString(capture.Lines());
  mstar_status_t* lent = api()->tensor_map_append(second, "view", &view);
  ASSERT_NE(lent, nullptr);
  EXPECT_NE(Message(lent).find("a view the host lent"), std::string::npos);
  // Nor does a failing append free them: with no map, a held tensor or a lent view stays.
  mstar_status_t* nowhere = api()->tensor_map_append(nullptr, "x", held);
  ASSERT_NE(nowhere, nullptr);
  api()->status_release(nowhere);
  nowhere = api()->tensor_map_append(nullptr, "x", &view);
  ASSERT_NE(nowhere, nullptr);
  api()->status_release(nowhere);
  EXPECT_EQ(static_cast<int64_t*>(api()->tensor_map_get(first, "x", 0)->dl.data)[2], 3);
  mstar_tensor_t* row = nullptr;
  ASSERT_EQ(api()->tensor_share(&view, &row), nullptr);
  EXPECT_EQ(row->dl.shape[0], 1);
  EXPECT_EQ(*static_cast<const int64_t*>(static_cast<const void*>(TensorBytes(row->dl))), 2);
  api()->tensor_release(row);
  api()->tensor_map_release(second);
  api()->tensor_map_release(first);
}

TEST_F(HostServicesTest, AppendingAnInvalidTensorFailsAndConsumesIt) {
  mstar_tensor_map_t* map = nullptr;
  ASSERT_EQ(api()->tensor_map_new(&map), nullptr);
  mstar_tensor_t* t = NewTensor({1, 2});
  t->dl.strides = nullptr;  // breaks the tensor rules
  t->dl.ndim = 1;
  mstar_status_t* s = api()->tensor_map_append(map, "bad", t);
  ASSERT_NE(s, nullptr);
  EXPECT_NE(Message(s).find("strides"), std::string::npos);
  EXPECT_EQ(api()->tensor_map_num_names(map), 0u);
  api()->tensor_map_release(map);
}

TEST_F(HostServicesTest, BytesBuffers) {
  mstar_bytes_t bytes;
  EXPECT_EQ(api()->bytes_data(&bytes), nullptr);
  ASSERT_EQ(api()->bytes_append(&bytes, "abc", 3), nullptr);
  ASSERT_EQ(api()->bytes_append(&bytes, "de", 2), nullptr);
  EXPECT_EQ(api()->bytes_size(&bytes), 5u);
  EXPECT_EQ(std::memcmp(api()->bytes_data(&bytes), "abcde", 5), 0);
  mstar_status_t* s = api()->bytes_append(&bytes, nullptr, 4);
  EXPECT_EQ(api()->status_code(s), MSTAR_ERR_INVALID_ARGUMENT);
  api()->status_release(s);
  // A size no buffer holds (a plugin's arithmetic gone wrong) is refused before data + size is
  // formed, and the buffer keeps what it held.
  s = api()->bytes_append(&bytes, "x", UINT64_MAX - 2);
  EXPECT_EQ(api()->status_code(s), MSTAR_ERR_RESOURCE_EXHAUSTED);
  api()->status_release(s);
  s = api()->bytes_append(nullptr, "x", 1);
  EXPECT_EQ(api()->status_code(s), MSTAR_ERR_INVALID_ARGUMENT);
  api()->status_release(s);
  EXPECT_EQ(api()->bytes_size(&bytes), 5u);
}

TEST_F(HostServicesTest, CpuStreamsAndEventsCompleteInline) {
  mstar_stream_t* stream = nullptr;
  ASSERT_EQ(api()->stream_create(ctx(), kCpu, 0, &stream), nullptr);
  EXPECT_EQ(api()->stream_device(stream).device_type, kDLCPU);
  EXPECT_EQ(api()->stream_native(stream), nullptr);
  mstar_event_t* event = nullptr;
  ASSERT_EQ(api()->event_create(ctx(), kCpu, &event), nullptr);
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

TEST_F(HostServicesTest, MetricsArePrefixedWithThePlugin) {
  auto instance = host_.NewInstanceContext("kv");
  api()->counter_add(instance.get(), "pages.evicted", 3);
  api()->counter_add(instance.get(), "pages.evicted", 2);
  api()->gauge_set(instance.get(), "pages.free", 17.5);
  EXPECT_EQ(Metrics::Global().Counter("host_test/kv.pages.evicted"), 5);
  EXPECT_DOUBLE_EQ(Metrics::Global().Gauge("host_test/kv.pages.free"), 17.5);
}

TEST_F(HostServicesTest, SingleRankCommunicator) {
  mstar_comm_t comm;
  EXPECT_EQ(api()->comm_rank(&comm), 0u);
  EXPECT_EQ(api()->comm_size(&comm), 1u);
  mstar_tensor_t* send = NewTensor({5, 6, 7});
  mstar_tensor_t* recv = NewTensor({0, 0, 0});
  ASSERT_EQ(api()->comm_all_reduce(&comm, send, recv, MSTAR_REDUCE_SUM, nullptr), nullptr);
  EXPECT_EQ(static_cast<int64_t*>(recv->dl.data)[2], 7);
  mstar_tensor_t* small = NewTensor({0});
  mstar_status_t* s = api()->comm_all_gather(&comm, send, small, nullptr);
  EXPECT_NE(Message(s).find("expected 24"), std::string::npos);
  s = api()->comm_send(&comm, send, 1, nullptr);
  EXPECT_NE(Message(s).find("not another rank"), std::string::npos);
  EXPECT_EQ(api()->comm_broadcast(&comm, recv, 0, nullptr), nullptr);
  api()->tensor_release(send);
  api()->tensor_release(recv);
  api()->tensor_release(small);
}

// A single rank's collective copies the views' bytes (data plus byte_offset): two views of one
// buffer at different offsets are not "in place". Views that overlap otherwise are refused, and
// so is an output of another dtype (NCCL refuses it; a copy would reinterpret the bits).
TEST_F(HostServicesTest, SingleRankCollectivesCopyViewsAndCheckTheOutputDtype) {
  mstar_comm_t comm;
  mstar_tensor_t* backing = NewTensor({1, 2, 3, 4});
  int64_t half = 2, one = 1;
  auto view = [&](uint64_t byte_offset) {
    mstar_tensor_t v = *backing;  // borrowed: no deleter
    v.dl.shape = &half;
    v.dl.strides = &one;
    v.dl.byte_offset = byte_offset;
    v.manager_ctx = nullptr;
    v.deleter = nullptr;
    return v;
  };
  mstar_tensor_t front = view(0), back = view(16), middle = view(8);
  mstar_status_t* reduced = api()->comm_all_reduce(&comm, &front, &back, MSTAR_REDUCE_SUM, nullptr);
  ASSERT_EQ(reduced, nullptr) << Message(reduced);
  const auto* values = static_cast<const int64_t*>(backing->dl.data);
  EXPECT_EQ(std::vector<int64_t>(values, values + 4), (std::vector<int64_t>{1, 2, 1, 2}));
  std::string message = Message(api()->comm_all_gather(&comm, &front, &middle, nullptr));
  EXPECT_NE(message.find("all_gather: send and recv overlap"), std::string::npos) << message;

  mstar_tensor_t* send = NewTensor({5, 6});
  mstar_tensor_t other_type = view(16);
  other_type.dl.dtype = DLDataType{kDLFloat, 64, 1};
  mstar_status_t* s = api()->comm_all_reduce(&comm, send, &other_type, MSTAR_REDUCE_SUM, nullptr);
  EXPECT_EQ(api()->status_code(s), MSTAR_ERR_INVALID_ARGUMENT);
  message = Message(s);
  EXPECT_NE(message.find("all_reduce: output dtype float64 is not the input's int64"),
            std::string::npos)
      << message;
  EXPECT_EQ(std::vector<int64_t>(values, values + 4), (std::vector<int64_t>{1, 2, 1, 2}));
  api()->tensor_release(send);
  api()->tensor_release(backing);
}

// Collectives move tensors as plain bytes: a strided view (here every other element of a buffer)
// would be written in the wrong places, so it is refused naming the call, the tensor and the rule.
TEST_F(HostServicesTest, CommunicatorRefusesStridedTensors) {
  mstar_comm_t comm;
  mstar_tensor_t* send = NewTensor({5, 6, 7});
  mstar_tensor_t* backing = NewTensor({0, 0, 0, 0, 0, 0});
  int64_t shape = 3;
  int64_t stride = 2;
  mstar_tensor_t every_other = *backing;  // borrowed: no deleter
  every_other.dl.shape = &shape;
  every_other.dl.strides = &stride;
  every_other.manager_ctx = nullptr;
  every_other.deleter = nullptr;
  mstar_status_t* s = api()->comm_all_reduce(&comm, send, &every_other, MSTAR_REDUCE_SUM, nullptr);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(api()->status_code(s), MSTAR_ERR_INVALID_ARGUMENT);
  const std::string message = Message(s);
  EXPECT_NE(message.find("all_reduce: recv tensor: strides {2} are not the contiguous row-major "
                         "strides of shape {3}"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("must be contiguous"), std::string::npos) << message;
  const auto* written = static_cast<const int64_t*>(backing->dl.data);
  EXPECT_EQ(std::vector<int64_t>(written, written + 6), std::vector<int64_t>(6, 0));
  // As the source of a collective too.
  mstar_tensor_t* recv = NewTensor({0, 0, 0});
  s = api()->comm_all_gather(&comm, &every_other, recv, nullptr);
  EXPECT_NE(Message(s).find("all_gather: send tensor: strides {2}"), std::string::npos);
  // A single rank's broadcast moves nothing, but refuses what N ranks would.
  s = api()->comm_broadcast(&comm, &every_other, 0, nullptr);
  EXPECT_NE(Message(s).find("broadcast: "), std::string::npos);
  api()->tensor_release(send);
  api()->tensor_release(backing);
  api()->tensor_release(recv);
}

mstar_status_t* SubmitWithoutABatch(void*, mstar_tier_op_t*, uint32_t, mstar_stream_t*,
                                    mstar_tier_batch_t**) {
  return nullptr;  // "succeeds" without writing *out_batch
}

// A tier whose submit reports success without a batch is caught in the tier services: the
// resource gets an error naming the tier, never a NULL (or its own stale) batch to poll and
// release.
TEST_F(HostServicesTest, ATierSubmitThatGivesNoBatchIsAnError) {
  mstar_tier_vtable_t vtable{};
  vtable.struct_size = sizeof(vtable);
  vtable.submit = &SubmitWithoutABatch;
  mstar_tier_handle_t tier;
  tier.name = "mem";
  tier.vtable = &vtable;
  mstar_tier_op_t op{};
  op.struct_size = sizeof(op);
  op.kind = MSTAR_TIER_OP_CONTAINS;
  auto* batch = reinterpret_cast<mstar_tier_batch_t*>(&op);  // stale, as a caller's variable may be
  mstar_status_t* s = api()->tier_submit(&tier, &op, 1, nullptr, &batch);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(api()->status_code(s), MSTAR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Message(s).find("tier 'mem': submit succeeded but left *out_batch NULL"),
            std::string::npos);
  // A failed call leaves its out-parameters as they were (abi.h).
  EXPECT_EQ(batch, reinterpret_cast<mstar_tier_batch_t*>(&op));
}

// Resource and tier each index the ops by their own sizeof(mstar_tier_op_t): an op of another
// size is refused before the tier sees the batch.
TEST_F(HostServicesTest, TierOpsOfAnotherSizeAreRefused) {
  mstar_tier_vtable_t vtable{};
  vtable.struct_size = sizeof(vtable);
  vtable.submit = &SubmitWithoutABatch;  // never reached
  mstar_tier_handle_t tier;
  tier.name = "mem";
  tier.vtable = &vtable;
  mstar_tier_op_t ops[2]{};
  for (mstar_tier_op_t& op : ops) {
    op.struct_size = sizeof(op);
    op.kind = MSTAR_TIER_OP_CONTAINS;
  }
  ops[1].struct_size = sizeof(mstar_tier_op_t) + 8;
  mstar_tier_batch_t* batch = nullptr;
  mstar_status_t* s = api()->tier_submit(&tier, ops, 2, nullptr, &batch);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(api()->status_code(s), MSTAR_ERR_INVALID_ARGUMENT);
  const std::string message = Message(s);  // releases s
  EXPECT_NE(message.find("tier_submit: ops[1].struct_size is " +
                         std::to_string(sizeof(mstar_tier_op_t) + 8)),
            std::string::npos)
      << message;
  EXPECT_EQ(batch, nullptr);
}

// A tier built without the SDK whose slots throw: the exception stops in the tier services as an
// error naming the tier and slot (it never unwinds through the calling resource's C frames), and a
// throwing release is logged.
mstar_status_t* SubmitThrows(void*, mstar_tier_op_t*, uint32_t, mstar_stream_t*,
                             mstar_tier_batch_t**) {
  throw std::runtime_error("disk on fire");
}
void ReleaseThrows(void*, mstar_tier_batch_t*) {
  throw std::runtime_error("release failed");
}

TEST_F(HostServicesTest, ATierSlotThatThrowsIsAnErrorNamingTheTierAndSlot) {
  mstar_tier_vtable_t vtable{};
  vtable.struct_size = sizeof(vtable);
  vtable.submit = &SubmitThrows;
  vtable.release = &ReleaseThrows;
  mstar_tier_handle_t tier;
  tier.name = "disk";
  tier.vtable = &vtable;
  mstar_tier_op_t op{};
  op.struct_size = sizeof(op);
  op.kind = MSTAR_TIER_OP_CONTAINS;
  mstar_tier_batch_t* batch = nullptr;
  mstar_status_t* s = api()->tier_submit(&tier, &op, 1, nullptr, &batch);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(api()->status_code(s), MSTAR_ERR_INTERNAL);
  EXPECT_NE(Message(s).find("tier 'disk': submit threw an exception through the ABI: disk on fire"),
            std::string::npos);
  api()->tier_release_batch(&tier, reinterpret_cast<mstar_tier_batch_t*>(&op));  // logged
}

TEST_F(HostServicesTest, RegionLaunchNeedsASubmoduleContext) {
  mstar_status_t* s = api()->region_launch(ctx(), "r", nullptr, nullptr, nullptr);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(api()->status_code(s), MSTAR_ERR_FAILED_PRECONDITION);
  api()->status_release(s);
}

}  // namespace
}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The host services table: its version, statuses, logs, memory, tensor maps, bytes, metrics.
#include "runtime/host/host_services_fixture.h"

#include <memory>

#include "core/metrics.h"
#include "host/host_objects.h"
#include "host/region_runner.h"
#include "host/tensor_objects.h"
#include "plugin/columnar.h"
#include "support/test_support.h"

namespace mstar {
namespace {

using test::HostServicesTest;
using test::kCpu;

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

// A host tensor's fields are its holder's to write: tensor_share reads its shape only once it
// checks out, and a tensor whose shape and strides were pointed at the holder's own memory (a
// reshape in place) enters a map with its own copies of them.
TEST_F(HostServicesTest, AHostTensorsEditedFieldsAreCheckedAndCopiedNotTrusted) {
  mstar_tensor_t* t = NewTensor({1, 2, 3, 4, 5, 6});
  t->dl.ndim = -1;
  mstar_tensor_t* shared = nullptr;
  mstar_status_t* s = api()->tensor_share(t, &shared);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(api()->status_code(s), MSTAR_ERR_INVALID_ARGUMENT);
  api()->status_release(s);
  EXPECT_EQ(shared, nullptr);

  auto dims = std::make_unique<int64_t[]>(4);  // 2 x 3, row-major
  dims[0] = 2;
  dims[1] = 3;
  dims[2] = 3;
  dims[3] = 1;
  t->dl.ndim = 2;
  t->dl.shape = dims.get();
  t->dl.strides = dims.get() + 2;
  mstar_tensor_map_t* map = nullptr;
  ASSERT_EQ(api()->tensor_map_new(&map), nullptr);
  ASSERT_EQ(api()->tensor_map_append(map, "x", t), nullptr);
  const int64_t* lent = dims.get();
  dims.reset();  // the holder's memory goes: the map does not read it
  const mstar_tensor_t* held = api()->tensor_map_get(map, "x", 0);
  ASSERT_NE(held, nullptr);
  EXPECT_NE(held->dl.shape, lent);
  ASSERT_EQ(held->dl.ndim, 2);
  EXPECT_EQ(held->dl.shape[0], 2);
  EXPECT_EQ(held->dl.shape[1], 3);
  EXPECT_EQ(held->dl.strides[0], 3);
  EXPECT_EQ(static_cast<const int64_t*>(held->dl.data)[5], 6);
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

TEST_F(HostServicesTest, MetricsArePrefixedWithThePlugin) {
  auto instance = host_.NewInstanceContext("kv");
  api()->counter_add(instance.get(), "pages.evicted", 3);
  api()->counter_add(instance.get(), "pages.evicted", 2);
  api()->gauge_set(instance.get(), "pages.free", 17.5);
  EXPECT_EQ(Metrics::Global().Counter("host_test/kv.pages.evicted"), 5);
  EXPECT_DOUBLE_EQ(Metrics::Global().Gauge("host_test/kv.pages.free"), 17.5);
}

TEST_F(HostServicesTest, RegionLaunchNeedsASubmoduleContext) {
  mstar_status_t* s = api()->region_launch(ctx(), "r", nullptr, nullptr, nullptr);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(api()->status_code(s), MSTAR_ERR_FAILED_PRECONDITION);
  api()->status_release(s);
}

// A region runner that runs out of memory: the submodule's forward gets RESOURCE_EXHAUSTED back,
// never the exception.
TEST_F(HostServicesTest, ARegionRunnerThatThrowsIsAnErrorStatus) {
  class ThrowingRunner final : public RegionRunner {
   public:
    Status Launch(const char*, const mstar_tensor_map_t&, mstar_tensor_map_t&,
                  mstar_stream_t*) override {
      throw std::bad_alloc();
    }
  } runner;
  mstar_submodule_vtable_t submodule{};
  submodule.struct_size = sizeof(submodule);
  submodule.run_region = [](void*, const char*, const mstar_tensor_map_t*, mstar_tensor_map_t*,
                            mstar_stream_t*) -> mstar_status_t* { return nullptr; };
  mstar_host_context_t context;
  context.label = "host_test/lm";
  context.submodule = &submodule;
  context.regions = &runner;
  TensorMapPtr inputs = NewTensorMap(), outputs = NewTensorMap();
  mstar_status_t* s = api()->region_launch(&context, "mlp", inputs.get(), outputs.get(), nullptr);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(api()->status_code(s), MSTAR_ERR_RESOURCE_EXHAUSTED);
  EXPECT_NE(Message(s).find("region_launch"), std::string::npos);
}

}  // namespace
}  // namespace mstar

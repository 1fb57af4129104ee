// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The thread-group communicator, called through the host's comm_* services exactly as a sharded
// plugin calls them: every collective and point-to-point call across 4 ranks on 4 threads, and
// what goes wrong: mismatched calls fail on every rank with a message, a rank that never comes
// fails the others after the timeout (and the group stays failed), device tensors are refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "distributed/comm_transport.h"
#include "host/host_api.h"
#include "host/host_objects.h"
#include "host/tensor_objects.h"
#include "runtime/engine/stream_log_backend.h"

namespace mstar {
namespace {

constexpr uint32_t kRanks = 4;

class ThreadGroupTest : public ::testing::Test {
 protected:
  const mstar_host_api_t* api() { return host_.table(); }

  template <typename T>
  mstar_tensor_t* Tensor(const std::vector<T>& values, DLDataType dtype) {
    int64_t n = static_cast<int64_t>(values.size());
    mstar_tensor_t* t = nullptr;
    EXPECT_EQ(api()->tensor_alloc(host_.library_context(), DLDevice{kDLCPU, 0}, dtype, 1, &n, &t),
              nullptr);
    std::memcpy(t->dl.data, values.data(), values.size() * sizeof(T));
    return t;
  }
  template <typename T>
  static std::vector<T> Values(const mstar_tensor_t* t) {
    const T* p = static_cast<const T*>(t->dl.data);
    return std::vector<T>(p, p + TensorNumBytes(t->dl) / sizeof(T));
  }
  // The status message, released; empty for success.
  std::string Message(mstar_status_t* status) {
    if (status == nullptr) return "";
    std::string message = api()->status_message(status);
    api()->status_release(status);
    return message;
  }
  // Runs body(rank) on one thread per rank and joins them.
  static void OnEveryRank(uint32_t ranks, const std::function<void(uint32_t)>& body) {
    std::vector<std::thread> threads;
    for (uint32_t r = 0; r < ranks; ++r) threads.emplace_back(body, r);
    for (std::thread& t : threads) t.join();
  }

  HostApi host_{"comm_test"};
};

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kI64{kDLInt, 64, 1};

TEST_F(ThreadGroupTest, AllReduceEveryOpInPlaceAndOutOfPlace) {
  CommGroup group = MakeThreadGroup(kRanks);
  std::vector<std::vector<float>> sums(kRanks), maxima(kRanks);
  std::vector<std::vector<int64_t>> products(kRanks), minima(kRanks);
  OnEveryRank(kRanks, [&](uint32_t r) {
    mstar_comm_t* comm = group[r].get();
    EXPECT_EQ(api()->comm_rank(comm), r);
    EXPECT_EQ(api()->comm_size(comm), kRanks);
    const float f = static_cast<float>(r + 1);
    mstar_tensor_t* x = Tensor<float>({f, -f, 0.5f * f}, kF32);
    mstar_tensor_t* out = Tensor<float>({0, 0, 0}, kF32);
    EXPECT_EQ(Message(api()->comm_all_reduce(comm, x, out, MSTAR_REDUCE_SUM, nullptr)), "");
    sums[r] = Values<float>(out);
    EXPECT_EQ(Message(api()->comm_all_reduce(comm, x, x, MSTAR_REDUCE_MAX, nullptr)), "");
    maxima[r] = Values<float>(x);
    const auto i = static_cast<int64_t>(r + 1);
    mstar_tensor_t* y = Tensor<int64_t>({i, 10 - i}, kI64);
    mstar_tensor_t* z = Tensor<int64_t>({0, 0}, kI64);
    EXPECT_EQ(Message(api()->comm_all_reduce(comm, y, z, MSTAR_REDUCE_PROD, nullptr)), "");
    products[r] = Values<int64_t>(z);
    EXPECT_EQ(Message(api()->comm_all_reduce(comm, y, y, MSTAR_REDUCE_MIN, nullptr)), "");
    minima[r] = Values<int64_t>(y);
    for (mstar_tensor_t* t : {x, out, y, z}) api()->tensor_release(t);
  });
  for (uint32_t r = 0; r < kRanks; ++r) {
    EXPECT_EQ(sums[r], (std::vector<float>{10, -10, 5}));
    EXPECT_EQ(maxima[r], (std::vector<float>{4, -1, 2}));
    EXPECT_EQ(products[r], (std::vector<int64_t>{24, 9 * 8 * 7 * 6}));
    EXPECT_EQ(minima[r], (std::vector<int64_t>{1, 6}));
  }
}

// Integer sums and products wrap, as NCCL's do, rather than overflow (undefined for signed
// integers; UBSan reports it).
TEST_F(ThreadGroupTest, IntegerSumsAndProductsWrapAround) {
  constexpr DLDataType kI32{kDLInt, 32, 1};
  CommGroup group = MakeThreadGroup(2);
  std::vector<std::vector<int32_t>> sums(2), products(2);
  OnEveryRank(2, [&](uint32_t r) {
    mstar_comm_t* comm = group[r].get();
    mstar_tensor_t* x = Tensor<int32_t>({INT32_MAX, INT32_MIN, 65536}, kI32);
    mstar_tensor_t* out = Tensor<int32_t>({0, 0, 0}, kI32);
    EXPECT_EQ(Message(api()->comm_all_reduce(comm, x, out, MSTAR_REDUCE_SUM, nullptr)), "");
    sums[r] = Values<int32_t>(out);
    EXPECT_EQ(Message(api()->comm_all_reduce(comm, x, out, MSTAR_REDUCE_PROD, nullptr)), "");
    products[r] = Values<int32_t>(out);
    for (mstar_tensor_t* t : {x, out}) api()->tensor_release(t);
  });
  for (uint32_t r = 0; r < 2; ++r) {
    EXPECT_EQ(sums[r], (std::vector<int32_t>{-2, 0, 131072}));
    EXPECT_EQ(products[r], (std::vector<int32_t>{1, 0, 0}));  // 2^32 wraps to 0
  }
}

// Host tensors handed over on a device stream (a device-to-host copy into them may still be
// queued there): every call waits for that stream before reading or writing them.
TEST_F(ThreadGroupTest, ACallOnADeviceStreamWaitsForIt) {
  test::StreamLogBackend backend;
  std::vector<mstar_stream_t> streams(kRanks);
  for (uint32_t r = 0; r < kRanks; ++r) {
    streams[r].device = DLDevice{kDLCUDA, 0};
    streams[r].native = &streams[r];
    streams[r].backend = &backend;
  }
  CommGroup group = MakeThreadGroup(kRanks);
  OnEveryRank(kRanks, [&](uint32_t r) {
    mstar_comm_t* comm = group[r].get();
    mstar_stream_t* stream = &streams[r];
    mstar_tensor_t* x = Tensor<int64_t>({1, 2}, kI64);
    mstar_tensor_t* all = Tensor<int64_t>(std::vector<int64_t>(2 * kRanks, 0), kI64);
    EXPECT_EQ(Message(api()->comm_all_reduce(comm, x, x, MSTAR_REDUCE_SUM, stream)), "");
    EXPECT_EQ(Message(api()->comm_all_gather(comm, x, all, stream)), "");
    EXPECT_EQ(Message(api()->comm_broadcast(comm, x, 0, stream)), "");
    EXPECT_EQ(Message(api()->comm_send(comm, x, (r + 1) % kRanks, stream)), "");
    EXPECT_EQ(Message(api()->comm_recv(comm, x, (r + kRanks - 1) % kRanks, stream)), "");
    for (mstar_tensor_t* t : {x, all}) api()->tensor_release(t);
  });
  std::map<const void*, int> syncs;
  for (const test::StreamLogEntry& e : backend.log())
    if (e.op == test::StreamOp::kSync) ++syncs[e.stream];
  for (uint32_t r = 0; r < kRanks; ++r) EXPECT_EQ(syncs[&streams[r]], 5) << "rank " << r;
}

TEST_F(ThreadGroupTest, AllGatherBroadcastAndARingOfSends) {
  CommGroup group = MakeThreadGroup(kRanks);
  std::vector<std::vector<int64_t>> gathered(kRanks), broadcast(kRanks), received(kRanks);
  OnEveryRank(kRanks, [&](uint32_t r) {
    mstar_comm_t* comm = group[r].get();
    const auto i = static_cast<int64_t>(r);
    mstar_tensor_t* part = Tensor<int64_t>({i, 100 + i}, kI64);
    mstar_tensor_t* all = Tensor<int64_t>(std::vector<int64_t>(2 * kRanks, -1), kI64);
    EXPECT_EQ(Message(api()->comm_all_gather(comm, part, all, nullptr)), "");
    gathered[r] = Values<int64_t>(all);
    mstar_tensor_t* buffer = Tensor<int64_t>({i * 7, i * 11}, kI64);
    EXPECT_EQ(Message(api()->comm_broadcast(comm, buffer, 2, nullptr)), "");
    broadcast[r] = Values<int64_t>(buffer);
    // Each rank sends to the next and receives from the previous.
    mstar_tensor_t* out = Tensor<int64_t>({1000 + i}, kI64);
    mstar_tensor_t* in = Tensor<int64_t>({0}, kI64);
    EXPECT_EQ(Message(api()->comm_send(comm, out, (r + 1) % kRanks, nullptr)), "");
    EXPECT_EQ(Message(api()->comm_recv(comm, in, (r + kRanks - 1) % kRanks, nullptr)), "");
    received[r] = Values<int64_t>(in);
    for (mstar_tensor_t* t : {part, all, buffer, out, in}) api()->tensor_release(t);
  });
  for (uint32_t r = 0; r < kRanks; ++r) {
    EXPECT_EQ(gathered[r], (std::vector<int64_t>{0, 100, 1, 101, 2, 102, 3, 103}));
    EXPECT_EQ(broadcast[r], (std::vector<int64_t>{14, 22}));
    EXPECT_EQ(received[r], (std::vector<int64_t>{1000 + (r + kRanks - 1) % kRanks}));
  }
}

// A message must have the receiving tensor's dtype and size: one that does not is an error naming
// both, and is dropped, so the next message goes through.
TEST_F(ThreadGroupTest, AMessageOfAnotherDtypeOrSizeIsRefusedAndDropped) {
  CommGroup group = MakeThreadGroup(2);
  mstar_tensor_t* floats = Tensor<float>({1.5f, 2.5f}, kF32);
  mstar_tensor_t* longs = Tensor<int64_t>({7}, kI64);
  mstar_tensor_t* into = Tensor<int64_t>({0}, kI64);
  EXPECT_EQ(Message(api()->comm_send(group[0].get(), floats, 1, nullptr)), "");  // 8 bytes
  EXPECT_EQ(Message(api()->comm_send(group[0].get(), longs, 1, nullptr)), "");
  const std::string refused = Message(api()->comm_recv(group[1].get(), into, 0, nullptr));
  EXPECT_NE(refused.find("rank 0 sent 8 bytes of float32, rank 1 expects 8 bytes of int64"),
            std::string::npos)
      << refused;
  EXPECT_EQ(Message(api()->comm_recv(group[1].get(), into, 0, nullptr)), "");
  EXPECT_EQ(Values<int64_t>(into), (std::vector<int64_t>{7}));
  for (mstar_tensor_t* t : {floats, longs, into}) api()->tensor_release(t);
}

TEST_F(ThreadGroupTest, MismatchedCallsFailOnEveryRankAndTheGroupGoesOn) {
  CommGroup group = MakeThreadGroup(2);
  std::vector<std::string> errors(2);
  std::vector<std::vector<float>> after(2);
  OnEveryRank(2, [&](uint32_t r) {
    mstar_comm_t* comm = group[r].get();
    // Rank 1 passes three elements where rank 0 passes two.
    mstar_tensor_t* x = Tensor<float>(std::vector<float>(2 + r, 1.0f), kF32);
    errors[r] = Message(api()->comm_all_reduce(comm, x, x, MSTAR_REDUCE_SUM, nullptr));
    mstar_tensor_t* y = Tensor<float>({2.0f}, kF32);
    EXPECT_EQ(Message(api()->comm_all_reduce(comm, y, y, MSTAR_REDUCE_SUM, nullptr)), "");
    after[r] = Values<float>(y);
    api()->tensor_release(x);
    api()->tensor_release(y);
  });
  for (uint32_t r = 0; r < 2; ++r) {
    EXPECT_NE(errors[r].find("every rank must pass the same"), std::string::npos) << errors[r];
    EXPECT_EQ(after[r], (std::vector<float>{4.0f}));
  }
}

TEST_F(ThreadGroupTest, ARankThatNeverComesFailsTheOthersAfterTheTimeout) {
  CommGroup group = MakeThreadGroup(3, /*timeout_ms=*/200);
  std::vector<std::string> errors(2);
  OnEveryRank(2, [&](uint32_t r) {  // rank 2 never calls
    mstar_tensor_t* x = Tensor<float>({1.0f}, kF32);
    errors[r] = Message(api()->comm_all_reduce(group[r].get(), x, x, MSTAR_REDUCE_SUM, nullptr));
    api()->tensor_release(x);
  });
  for (const std::string& e : errors) {
    EXPECT_NE(e.find("waited 200 ms for the other ranks"), std::string::npos) << e;
  }
  mstar_tensor_t* x = Tensor<float>({1.0f}, kF32);
  std::string later = Message(api()->comm_all_reduce(group[2].get(), x, x, 0, nullptr));
  EXPECT_NE(later.find("unusable"), std::string::npos) << later;
  mstar_tensor_t* in = Tensor<float>({0.0f}, kF32);
  std::string recv = Message(api()->comm_recv(group[2].get(), in, 0, nullptr));
  EXPECT_NE(recv.find("waited 200 ms for a message from rank 0"), std::string::npos) << recv;
  api()->tensor_release(x);
  api()->tensor_release(in);
}

// A rank whose collective is refused (a bad argument, a device tensor) still settles the round:
// every other rank's call fails at once naming it and why, instead of waiting out the timeout,
// and the group goes on. Point-to-point calls are refused before reaching the peer.
TEST_F(ThreadGroupTest, ARankWhoseCallIsRefusedFailsTheRoundOnEveryRankAndTheGroupGoesOn) {
  CommGroup group = MakeThreadGroup(2, 60000);  // a stranded rank would wait a minute
  mstar_tensor_t* x[2] = {Tensor<float>({1.0f}, kF32), Tensor<float>({2.0f}, kF32)};
  mstar_tensor_t device_view = *x[0];
  device_view.dl.device = DLDevice{kDLCUDA, 0};
  std::vector<std::pair<std::string, std::string>> rounds = {
      {"unknown op", "rank 0 could not take part: all_reduce: all_reduce: unknown op"},
      {"NULL", "rank 0 could not take part: all_reduce: all_reduce: NULL tensor"},
      {"root out of range", "rank 0 could not take part: broadcast: broadcast: root out of range"},
      {"host tensors only", "rank 0 could not take part: all_gather: all_gather: the thread-group"},
  };
  std::vector<std::string> got[2];
  OnEveryRank(2, [&](uint32_t r) {
    mstar_comm_t* comm = group[r].get();
    mstar_tensor_t* mine = x[r];
    got[r].push_back(Message(api()->comm_all_reduce(comm, mine, mine, r == 0 ? 99 : 0, nullptr)));
    got[r].push_back(
        Message(api()->comm_all_reduce(comm, r == 0 ? nullptr : mine, mine, 0, nullptr)));
    got[r].push_back(Message(api()->comm_broadcast(comm, mine, r == 0 ? 5 : 0, nullptr)));
    mstar_tensor_t* all = Tensor<float>({0.0f, 0.0f}, kF32);
    got[r].push_back(
        Message(api()->comm_all_gather(comm, r == 0 ? &device_view : mine, all, nullptr)));
    got[r].push_back(Message(api()->comm_all_reduce(comm, mine, mine, 0, nullptr)));  // fine
    api()->tensor_release(all);
  });
  ASSERT_EQ(got[0].size(), rounds.size() + 1);
  for (size_t i = 0; i < rounds.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_NE(got[0][i].find(rounds[i].first), std::string::npos) << got[0][i];
    EXPECT_NE(got[1][i].find(rounds[i].second), std::string::npos) << got[1][i];
  }
  EXPECT_EQ(got[0].back(), "");
  EXPECT_EQ(got[1].back(), "");
  EXPECT_EQ(Values<float>(x[0]), (std::vector<float>{3.0f}));

  mstar_comm_t* comm = group[0].get();
  EXPECT_NE(Message(api()->comm_send(comm, x[0], 0, nullptr)).find("not another rank"),
            std::string::npos);
  EXPECT_NE(Message(api()->comm_send(comm, &device_view, 1, nullptr)).find("host tensors only"),
            std::string::npos);
  for (mstar_tensor_t* t : x) api()->tensor_release(t);
}

TEST_F(ThreadGroupTest, ASingleRankGroupCopiesLocally) {
  CommGroup group = MakeThreadGroup(1);
  ASSERT_EQ(group.size(), 1u);
  EXPECT_EQ(group[0]->transport, nullptr);
  mstar_tensor_t* x = Tensor<int64_t>({5, 6}, kI64);
  mstar_tensor_t* y = Tensor<int64_t>({0, 0}, kI64);
  EXPECT_EQ(Message(api()->comm_all_reduce(group[0].get(), x, y, MSTAR_REDUCE_SUM, nullptr)), "");
  EXPECT_EQ(Values<int64_t>(y), (std::vector<int64_t>{5, 6}));
  api()->tensor_release(x);
  api()->tensor_release(y);
}

TEST_F(ThreadGroupTest, NcclGroupsNeedNcclAndADevice) {
#if !MSTAR_WITH_NCCL
  Result<CommGroup> made = MakeNcclGroup({0});
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.status().message().find("no NCCL"), std::string::npos);
#else
  GTEST_SKIP() << "NCCL builds check MakeNcclGroup in runtime_distributed_gpu_test";
#endif
}

}  // namespace
}  // namespace mstar

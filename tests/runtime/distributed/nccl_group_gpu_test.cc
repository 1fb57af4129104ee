// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The NCCL communicator on the GPUs of this machine (skips without one): a group over every
// visible device (one device: a single-rank group, which still goes through NCCL), each rank's
// all-reduce (out of place), all-gather and broadcast enqueued on its own stream through the
// host's comm_* services, results copied back and compared.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "device/device.h"
#include "distributed/comm_transport.h"
#include "host/host_api.h"
#include "host/host_objects.h"

namespace mstar {
namespace {

constexpr DLDataType kF32{kDLFloat, 32, 1};

TEST(NcclGroup, CollectivesOnEveryVisibleDevice) {
  const int devices = CudaDeviceCount();
  if (devices == 0) GTEST_SKIP() << "no CUDA device";
  std::vector<int> ids;
  for (int d = 0; d < devices; ++d) ids.push_back(d);
  Result<CommGroup> made = MakeNcclGroup(ids);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  CommGroup& group = made.value();
  for (const auto& comm : group) ASSERT_NE(comm->transport, nullptr) << "NCCL, even for one rank";
  HostApi host("nccl_test");
  const mstar_host_api_t* api = host.table();
  const int64_t n = 1024;
  std::vector<std::vector<float>> reduced(devices), gathered(devices), broadcast(devices);
  auto rank_body = [&](int r) {
    ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
    DLDevice gpu{kDLCUDA, r};
    mstar_stream_t* stream = nullptr;
    ASSERT_EQ(api->stream_create(host.library_context(), gpu, 0, &stream), nullptr);
    auto make = [&](int64_t count, float value) {
      mstar_tensor_t* t = nullptr;
      EXPECT_EQ(api->tensor_alloc(host.library_context(), gpu, kF32, 1, &count, &t), nullptr);
      std::vector<float> host_values(static_cast<size_t>(count), value);
      EXPECT_EQ(
          cudaMemcpy(t->dl.data, host_values.data(), count * sizeof(float), cudaMemcpyHostToDevice),
          cudaSuccess);
      return t;
    };
    auto read = [&](mstar_tensor_t* t, int64_t count) {
      std::vector<float> out(static_cast<size_t>(count));
      EXPECT_EQ(cudaStreamSynchronize(static_cast<cudaStream_t>(stream->native)), cudaSuccess);
      EXPECT_EQ(cudaMemcpy(out.data(), t->dl.data, count * sizeof(float), cudaMemcpyDeviceToHost),
                cudaSuccess);
      return out;
    };
    mstar_comm_t* comm = group[r].get();
    // Out of place, into -1s: a collective that did nothing shows, even with one rank.
    mstar_tensor_t* x = make(n, static_cast<float>(r + 1));
    mstar_tensor_t* sum = make(n, -1.0f);
    EXPECT_EQ(api->comm_all_reduce(comm, x, sum, MSTAR_REDUCE_SUM, stream), nullptr);
    reduced[r] = read(sum, n);
    mstar_tensor_t* part = make(n, static_cast<float>(r));
    mstar_tensor_t* all = make(n * devices, -1.0f);
    EXPECT_EQ(api->comm_all_gather(comm, part, all, stream), nullptr);
    gathered[r] = read(all, n * devices);
    // In place: with one rank, root's buffer is already its own (only the call is checked).
    mstar_tensor_t* b = make(n, static_cast<float>(10 + r));
    EXPECT_EQ(api->comm_broadcast(comm, b, 0, stream), nullptr);
    broadcast[r] = read(b, n);
    for (mstar_tensor_t* t : {x, sum, part, all, b}) api->tensor_release(t);
    api->stream_release(stream);
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < devices; ++r) threads.emplace_back(rank_body, r);
  for (std::thread& t : threads) t.join();
  const float sum = static_cast<float>(devices * (devices + 1) / 2);
  for (int r = 0; r < devices; ++r) {
    EXPECT_EQ(reduced[r], std::vector<float>(n, sum)) << "rank " << r;
    for (int p = 0; p < devices; ++p) {
      EXPECT_EQ(std::vector<float>(gathered[r].begin() + p * n, gathered[r].begin() + (p + 1) * n),
                std::vector<float>(n, static_cast<float>(p)));
    }
    EXPECT_EQ(broadcast[r], std::vector<float>(n, 10.0f));
  }
}

TEST(NcclGroup, HostTensorsAreRefused) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  Result<CommGroup> made = MakeNcclGroup({0});
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  HostApi host("nccl_test");
  const mstar_host_api_t* api = host.table();
  int64_t n = 4;
  mstar_tensor_t* t = nullptr;
  ASSERT_EQ(api->tensor_alloc(host.library_context(), DLDevice{kDLCPU, 0}, kF32, 1, &n, &t),
            nullptr);
  mstar_status_t* s = api->comm_all_reduce(made.value()[0].get(), t, t, MSTAR_REDUCE_SUM, nullptr);
  ASSERT_NE(s, nullptr);
  EXPECT_NE(std::string(api->status_message(s)).find("device tensors only"), std::string::npos);
  api->status_release(s);
  api->tensor_release(t);
}

}  // namespace
}  // namespace mstar

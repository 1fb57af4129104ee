// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The communicator of the host services table on a single rank.
#include "runtime/host/host_services_fixture.h"

#include "host/tensor_objects.h"

namespace mstar {
namespace {

using test::HostServicesTest;

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

}  // namespace
}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// What the engine hands resources as a step's token ids (mstar_step_decl_t.input_tokens): the
// node's token input only when it is what the ABI promises (1-D, contiguous, int32 or int64, in
// host memory, one value per token the step adds), else nothing; for a columnar step each
// request's rows of the stacked input, as views into it.
#include "engine/input_tokens.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace mstar {
namespace {

template <typename T>
mstar_tensor_t* Values(const std::vector<T>& values, DLDataType dtype,
                       std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(values.size())};
  Result<mstar_tensor_t*> tensor = AllocateTensor(nullptr, DLDevice{kDLCPU, 0}, dtype, shape);
  EXPECT_TRUE(tensor.ok());
  if (!values.empty())
    std::memcpy(tensor.value()->dl.data, values.data(), values.size() * sizeof(T));
  return tensor.value();
}

constexpr DLDataType kI64{kDLInt, 64, 1};
constexpr DLDataType kI32{kDLInt, 32, 1};

TEST(TokenInputOf, PassesOnOneHostVectorOfAsManyIntegerIdsAsTheStepAdds) {
  TensorMapPtr inputs = NewTensorMap();
  inputs->AppendHost("tokens", Values<int64_t>({5, 6, 7}, kI64));
  inputs->AppendHost("ids32", Values<int32_t>({5, 6}, kI32));
  const mstar_tensor_t* t = TokenInputOf(*inputs, "tokens", 3);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t, inputs->Find("tokens")->tensors.front());  // borrowed, not copied
  EXPECT_NE(TokenInputOf(*inputs, "ids32", 2), nullptr);
}

TEST(TokenInputOf, GivesNothingForAnythingElse) {
  TensorMapPtr inputs = NewTensorMap();
  inputs->AppendHost("tokens", Values<int64_t>({5, 6, 7}, kI64));
  inputs->AppendHost("floats", Values<float>({1, 2, 3}, DLDataType{kDLFloat, 32, 1}));
  inputs->AppendHost("unsigned", Values<uint32_t>({1, 2, 3}, DLDataType{kDLUInt, 32, 1}));
  inputs->AppendHost("matrix", Values<int64_t>({1, 2, 3, 4, 5, 6}, kI64, {3, 2}));
  inputs->AppendHost("two", Values<int64_t>({1, 2, 3}, kI64));
  inputs->AppendHost("two", Values<int64_t>({1, 2, 3}, kI64));
  mstar_tensor_t* on_device = Values<int64_t>({1, 2, 3}, kI64);
  inputs->AppendHost("device", on_device);
  on_device->dl.device = DLDevice{kDLCUDA, 0};  // read only by the check, never dereferenced
  mstar_tensor_t* strided = Values<int64_t>({1, 0, 2, 0, 3, 0}, kI64);
  inputs->AppendHost("strided", strided);
  strided->dl.shape[0] = 3;
  strided->dl.strides[0] = 2;

  EXPECT_EQ(TokenInputOf(*inputs, "", 3), nullptr);         // the node names none
  EXPECT_EQ(TokenInputOf(*inputs, "missing", 3), nullptr);  // the step has no such input
  EXPECT_EQ(TokenInputOf(*inputs, "tokens", 2), nullptr);   // not one id per token
  EXPECT_EQ(TokenInputOf(*inputs, "tokens", 4), nullptr);
  EXPECT_EQ(TokenInputOf(*inputs, "floats", 3), nullptr);
  EXPECT_EQ(TokenInputOf(*inputs, "unsigned", 3), nullptr);
  EXPECT_EQ(TokenInputOf(*inputs, "matrix", 6), nullptr);
  EXPECT_EQ(TokenInputOf(*inputs, "two", 3), nullptr);
  EXPECT_EQ(TokenInputOf(*inputs, "device", 3), nullptr);
  EXPECT_EQ(TokenInputOf(*inputs, "strided", 3), nullptr);
  on_device->dl.device = DLDevice{kDLCPU, 0};  // the map frees it as a host tensor
  strided->dl.shape[0] = 6;
  strided->dl.strides[0] = 1;
}

TEST(RowTokenInputs, ViewsEachRequestsRowsOfTheStackedInput) {
  TensorMapPtr inputs = NewTensorMap();
  TensorMapPtr rows = NewTensorMap();
  inputs->AppendHost("tokens", Values<int64_t>({1, 2, 9, 7, 8, 6}, kI64));
  rows->AppendHost("tokens", Values<int64_t>({0, 2, 2, 3, 6}, kI64));  // 2, 0, 1 and 3 rows
  RowTokenInputs tokens;
  // The third request's count disagrees with its rows: its ids are unknown, the others' are not.
  tokens.Build(*inputs, *rows, "tokens", {2, 0, 5, 3});
  const std::vector<const mstar_tensor_t*>& views = tokens.views();
  ASSERT_EQ(views.size(), 4u);
  auto ids = [](const mstar_tensor_t* t) {
    const auto* p =
        reinterpret_cast<const int64_t*>(static_cast<const char*>(t->dl.data) + t->dl.byte_offset);
    return std::vector<int64_t>(p, p + t->dl.shape[0]);
  };
  ASSERT_NE(views[0], nullptr);
  EXPECT_EQ(ids(views[0]), (std::vector<int64_t>{1, 2}));
  ASSERT_NE(views[1], nullptr);
  EXPECT_EQ(views[1]->dl.shape[0], 0);
  EXPECT_EQ(views[2], nullptr);
  ASSERT_NE(views[3], nullptr);
  EXPECT_EQ(ids(views[3]), (std::vector<int64_t>{7, 8, 6}));

  // One row per request without offsets; a name the step lacks gives nothing.
  TensorMapPtr single = NewTensorMap();
  single->AppendHost("tokens", Values<int32_t>({4, 5}, kI32));
  tokens.Build(*single, *NewTensorMap(), "tokens", {1, 1});
  ASSERT_EQ(tokens.views().size(), 2u);
  ASSERT_NE(tokens.views()[1], nullptr);
  EXPECT_EQ(*reinterpret_cast<const int32_t*>(static_cast<const char*>(tokens.views()[1]->dl.data) +
                                              tokens.views()[1]->dl.byte_offset),
            5);
  tokens.Build(*single, *NewTensorMap(), "other", {1, 1});
  EXPECT_EQ(tokens.views(), (std::vector<const mstar_tensor_t*>{nullptr, nullptr}));
}

}  // namespace
}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Columnar steps: what the host accepts from a columnar forward (CheckColumnar), and the moves
// between the columnar and the per-request forms (GatherColumnar, ScatterColumnar).
#include "plugin/columnar.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace mstar {
namespace {

constexpr DLDevice kCpu{kDLCPU, 0};
constexpr DLDataType kI64{kDLInt, 64, 1};
constexpr DLDataType kF32{kDLFloat, 32, 1};

mstar_tensor_t* Ints(const std::vector<int64_t>& values, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(values.size())};
  mstar_tensor_t* t = AllocateTensor(nullptr, kCpu, kI64, shape).value();
  if (!values.empty()) std::memcpy(TensorBytes(t->dl), values.data(), values.size() * 8);
  return t;
}

std::vector<int64_t> Values(const mstar_tensor_t& t) {
  const auto* at =
      reinterpret_cast<const int64_t*>(t.dl.data == nullptr ? nullptr : TensorBytes(t.dl));
  return at == nullptr ? std::vector<int64_t>{}
                       : std::vector<int64_t>(at, at + TensorNumElements(t.dl));
}

std::string CheckMessage(const mstar_tensor_map& tensors, const mstar_tensor_map& rows,
                         uint32_t n) {
  Status s = CheckColumnar(tensors, rows, n, "output");
  return s.ok() ? "ok" : s.message();
}

TEST(Columnar, AcceptsOneRowPerRequestAndListedOffsets) {
  TensorMapPtr tensors = NewTensorMap(), rows = NewTensorMap();
  tensors->AppendHost("token", Ints({7, 8, 9}));
  tensors->AppendHost("text", Ints({7, 9}));
  rows->AppendHost("text", Ints({0, 1, 1, 2}));
  EXPECT_EQ(CheckMessage(*tensors, *rows, 3), "ok");
  RowOffsets text(*rows, "text", 3), token(*rows, "token", 3);
  EXPECT_EQ(text.count(1), 0);
  EXPECT_EQ(text.begin(2), 1);
  EXPECT_EQ(token.begin(2), 2);
  EXPECT_EQ(token.count(2), 1);
}

TEST(Columnar, RefusesRowsThatDoNotAddUp) {
  struct Case {
    const char* name;
    std::vector<int64_t> offsets;  // empty: none listed
    std::vector<int64_t> shape;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"no offsets, wrong rows", {}, {4}, "columnar output 'x' has 4 rows for 3 requests"},
      {"scalar", {}, {}, "columnar output 'x' has no first dimension"},
      {"short offsets", {0, 1, 2}, {2}, "row offsets must be a contiguous int64 host tensor of 4"},
      {"not from zero", {1, 1, 2, 3}, {3}, "row offsets must start at 0"},
      {"decreasing", {0, 2, 1, 3}, {3}, "row offsets decrease at request 1 (2 then 1)"},
      {"short of the rows", {0, 1, 2, 2}, {3}, "row offsets end at 2 but the tensor has 3 rows"},
      {"beyond the rows", {0, 1, 2, 9}, {3}, "row offsets end at 9 but the tensor has 3 rows"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TensorMapPtr tensors = NewTensorMap(), rows = NewTensorMap();
    int64_t numel = 1;
    for (int64_t d : c.shape) numel *= d;
    std::vector<int64_t> values(static_cast<size_t>(numel), 5);
    mstar_tensor_t* t = AllocateTensor(nullptr, kCpu, kI64, c.shape).value();
    if (numel > 0) std::memcpy(TensorBytes(t->dl), values.data(), values.size() * 8);
    tensors->AppendHost("x", t);
    if (!c.offsets.empty()) rows->AppendHost("x", Ints(c.offsets));
    EXPECT_NE(CheckMessage(*tensors, *rows, 3).find(c.expected), std::string::npos)
        << CheckMessage(*tensors, *rows, 3);
  }
}

TEST(Columnar, RefusesTwoTensorsUnderANameAndOffsetsOfNothing) {
  TensorMapPtr tensors = NewTensorMap(), rows = NewTensorMap();
  tensors->AppendHost("x", Ints({1, 2}));
  tensors->AppendHost("x", Ints({1, 2}));
  EXPECT_NE(CheckMessage(*tensors, *rows, 2).find("holds 2 tensors"), std::string::npos);
  TensorMapPtr one = NewTensorMap();
  one->AppendHost("x", Ints({1, 2}));
  rows->AppendHost("y", Ints({0, 1, 2}));
  EXPECT_NE(CheckMessage(*one, *rows, 2).find("row offsets for output 'y', which the step has no"),
            std::string::npos);
  TensorMapPtr float_rows = NewTensorMap();
  const int64_t three = 3;
  float_rows->AppendHost("x", AllocateTensor(nullptr, kCpu, kF32, &three, 1).value());
  EXPECT_NE(CheckMessage(*one, *float_rows, 2).find("int64 host tensor"), std::string::npos);
}

TEST(Columnar, GatherThenScatterGivesEachRequestItsRows) {
  std::vector<TensorMapPtr> owned;
  std::vector<const mstar_tensor_map*> requests;
  const std::vector<std::vector<int64_t>> tokens = {{1, 2, 3}, {}, {4}, {5, 6}};
  for (const auto& t : tokens) {
    owned.push_back(NewTensorMap());
    owned.back()->AppendHost("tokens", Ints(t, {static_cast<int64_t>(t.size())}));
    owned.back()->AppendHost("one", Ints({static_cast<int64_t>(t.size()) * 10}));
    requests.push_back(owned.back().get());
  }
  TensorMapPtr tensors = NewTensorMap(), rows = NewTensorMap();
  ASSERT_TRUE(GatherColumnar(requests, "input", tensors.get(), rows.get()).ok());
  EXPECT_EQ(Values(*tensors->Find("tokens")->tensors[0]), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Values(*rows->Find("tokens")->tensors[0]), (std::vector<int64_t>{0, 3, 3, 4, 6}));
  EXPECT_EQ(rows->Find("one"), nullptr);  // one row each: no offsets listed
  ASSERT_EQ(CheckMessage(*tensors, *rows, 4), "ok");

  std::vector<TensorMapPtr> back;
  std::vector<mstar_tensor_map*> targets;
  for (size_t i = 0; i < tokens.size(); ++i) {
    back.push_back(NewTensorMap());
    targets.push_back(back.back().get());
  }
  ASSERT_TRUE(ScatterColumnar(*tensors, *rows, targets).ok());
  for (size_t i = 0; i < tokens.size(); ++i) {
    SCOPED_TRACE(i);
    const mstar_tensor_t& part = *back[i]->Find("tokens")->tensors[0];
    EXPECT_EQ(Values(part), tokens[i]);
    EXPECT_TRUE(TensorIsValid(&part));  // an empty view has no data
    EXPECT_EQ(Values(*back[i]->Find("one")->tensors[0]),
              (std::vector<int64_t>{static_cast<int64_t>(tokens[i].size()) * 10}));
  }
  // The views share the stacked tensor's storage: they outlive the columnar map.
  tensors.reset();
  EXPECT_EQ(Values(*back[3]->Find("tokens")->tensors[0]), (std::vector<int64_t>{5, 6}));
}

TEST(Columnar, ScatterKeepsTrailingDimensions) {
  TensorMapPtr tensors = NewTensorMap(), rows = NewTensorMap();
  tensors->AppendHost("x", Ints({1, 2, 3, 4, 5, 6}, {3, 2}));
  rows->AppendHost("x", Ints({0, 2, 3}));
  ASSERT_EQ(CheckMessage(*tensors, *rows, 2), "ok");
  TensorMapPtr a = NewTensorMap(), b = NewTensorMap();
  std::vector<mstar_tensor_map*> targets = {a.get(), b.get()};
  ASSERT_TRUE(ScatterColumnar(*tensors, *rows, targets).ok());
  const mstar_tensor_t& second = *b->Find("x")->tensors[0];
  EXPECT_EQ(second.dl.shape[0], 1);
  EXPECT_EQ(second.dl.shape[1], 2);
  EXPECT_EQ(Values(second), (std::vector<int64_t>{5, 6}));
}

TEST(Columnar, GatherRefusesRequestsThatDoNotStack) {
  TensorMapPtr a = NewTensorMap(), b = NewTensorMap();
  a->AppendHost("x", Ints({1, 2}));
  const int64_t two = 2;
  b->AppendHost("x", AllocateTensor(nullptr, kCpu, kF32, &two, 1).value());
  std::vector<const mstar_tensor_map*> requests = {a.get(), b.get()};
  TensorMapPtr tensors = NewTensorMap(), rows = NewTensorMap();
  Status s = GatherColumnar(requests, "input", tensors.get(), rows.get());
  EXPECT_NE(s.message().find("input 'x' of request 1 differs from request 0's"), std::string::npos)
      << s.message();

  TensorMapPtr c = NewTensorMap();
  c->AppendHost("y", Ints({1}));
  requests = {a.get(), c.get()};
  s = GatherColumnar(requests, "input", tensors.get(), rows.get());
  EXPECT_NE(s.message().find("request 1 has 0 tensors under input 'x'"), std::string::npos)
      << s.message();

  TensorMapPtr d = NewTensorMap();
  d->AppendHost("x", Ints({1}));
  d->AppendHost("z", Ints({1}));
  requests = {a.get(), d.get()};
  s = GatherColumnar(requests, "input", tensors.get(), rows.get());
  EXPECT_NE(s.message().find("request 1 has 2 input names and request 0 has 1"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace mstar

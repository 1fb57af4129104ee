// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// RowEncoder: a cohort step's rows encoded for clients exactly as EncodeOutput encodes a view of
// those rows (the default encoding, no controller), for every row shape the fast path for one
// int64 a row and the general path take, text and other modalities.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "engine/conductor_pending.h"
#include "host/tensor_objects.h"
#include "plugin/columnar.h"

namespace mstar {
namespace {

struct Shape {
  DLDataType dtype;
  std::vector<int64_t> dims;
};

// A tensor of shape's dtype and dims whose bytes count up from 1 (so every row differs and the
// int64 values include ones outside a byte, for text's '?').
mstar_tensor_t* CountingTensor(const Shape& shape) {
  Result<mstar_tensor_t*> t = AllocateTensor(nullptr, DLDevice{kDLCPU, 0}, shape.dtype, shape.dims);
  EXPECT_TRUE(t.ok());
  const DLTensor& dl = t.value()->dl;
  auto* bytes = static_cast<uint8_t*>(dl.data);
  const int64_t size = TensorNumElements(dl) * static_cast<int64_t>(ElementBytes(dl.dtype));
  for (int64_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(i * 37 + 1);
  return t.value();
}

void ExpectSameChunk(const OutputChunk& expected, const OutputChunk& got, const char* what) {
  EXPECT_EQ(std::vector<uint8_t>(expected.bytes.begin(), expected.bytes.end()),
            std::vector<uint8_t>(got.bytes.begin(), got.bytes.end()))
      << what;
  EXPECT_EQ(std::vector<int64_t>(expected.values.begin(), expected.values.end()),
            std::vector<int64_t>(got.values.begin(), got.values.end()))
      << what;
}

TEST(RowEncoder, EncodesRowsAsTheDefaultEncodingOfTheirView) {
  const DLDataType i64{kDLInt, 64, 1}, i32{kDLInt, 32, 1}, u8{kDLUInt, 8, 1};
  const DLDataType f32{kDLFloat, 32, 1};
  const std::vector<Shape> shapes = {
      {i64, {5}},     // one token a row: the fast path
      {i64, {5, 1}},  // likewise, with a trailing dimension
      {i64, {5, 3}}, {i32, {5}}, {u8, {5, 2}}, {f32, {5, 4}},
  };
  for (const Shape& shape : shapes) {
    mstar_tensor_t* tensor = CountingTensor(shape);
    for (bool text : {true, false}) {
      const RowEncoder encoder(*tensor, text);
      for (int64_t begin = 0; begin < 5; ++begin) {
        for (int64_t count = 0; begin + count <= 5 && count <= 2; ++count) {
          mstar_tensor_t view;
          std::vector<int64_t> dims;
          RowView(*tensor, begin, count, &view, &dims);
          OutputChunk expected, got;
          Status error;
          EncodeOutput(nullptr, nullptr, mstar_request_info_t{}, "out", text ? "text" : "tokens",
                       view, &expected, &error);
          ASSERT_TRUE(error.ok());
          encoder.Encode(begin, count, &got);
          const std::string what = "dtype bits " + std::to_string(shape.dtype.bits) + ", " +
                                   std::to_string(shape.dims.size()) + " dims, text " +
                                   std::to_string(text) + ", rows " + std::to_string(begin) + "+" +
                                   std::to_string(count);
          ExpectSameChunk(expected, got, what.c_str());
        }
      }
    }
    ReleaseTensor(tensor);
  }
}

TEST(RowEncoder, AnEmptyTensorEncodesNothing) {
  mstar_tensor_t* tensor = CountingTensor({DLDataType{kDLInt, 64, 1}, {0}});
  const RowEncoder encoder(*tensor, /*text=*/false);
  OutputChunk chunk;
  encoder.Encode(0, 0, &chunk);
  EXPECT_TRUE(chunk.bytes.empty());
  EXPECT_TRUE(chunk.values.empty());
  ReleaseTensor(tensor);
}

}  // namespace
}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// RegionBuffers and the row helpers on host tensors: a region's static inputs take the real rows
// and refill the padding rows from the template; outputs are cut to the real rows.
#include <gtest/gtest.h>

#include "capture/region_buffers.h"
#include "runtime/capture/capture_test_util.h"

namespace mstar {
namespace {

using test::Int64Values;

mstar_tensor_t* Int64(const std::vector<int64_t>& values, const std::vector<int64_t>& shape) {
  Result<mstar_tensor_t*> t =
      AllocateTensor(nullptr, DLDevice{kDLCPU, 0}, DLDataType{kDLInt, 64, 1}, shape);
  EXPECT_TRUE(t.ok());
  std::copy(values.begin(), values.end(), static_cast<int64_t*>(t.value()->dl.data));
  return t.value();
}

// x [rows, 2] and scale [rows], every value v.
TensorMapPtr Inputs(uint32_t rows, int64_t v, int64_t width = 2) {
  TensorMapPtr map = NewTensorMap();
  EXPECT_TRUE(map->Append("x", Int64(std::vector<int64_t>(rows * width, v), {rows, width})).ok());
  EXPECT_TRUE(map->Append("scale", Int64(std::vector<int64_t>(rows, v), {rows})).ok());
  return map;
}

TEST(RegionBuffers, LoadCopiesTheRealRowsAndPadsTheRestFromTheTemplate) {
  RegionBuffers buffers;
  ASSERT_TRUE(buffers.Init(*Inputs(4, 9), 4).ok());
  TensorMapPtr real = NewTensorMap();
  ASSERT_TRUE(real->Append("x", Int64({1, 2, 3, 4}, {2, 2})).ok());
  ASSERT_TRUE(real->Append("scale", Int64({5, 6}, {2})).ok());
  EXPECT_EQ(buffers.Mismatch(*real, 2), "");
  ASSERT_TRUE(buffers.Load(*real, 2, nullptr).ok());
  EXPECT_EQ(Int64Values(*buffers.map(), "x"), (std::vector<int64_t>{1, 2, 3, 4, 9, 9, 9, 9}));
  EXPECT_EQ(Int64Values(*buffers.map(), "scale"), (std::vector<int64_t>{5, 6, 9, 9}));
  // Poisoned padding comes back from the template on the next load.
  ASSERT_TRUE(buffers.Fill(0xAB).ok());
  ASSERT_TRUE(buffers.Load(*real, 2, nullptr).ok());
  EXPECT_EQ(Int64Values(*buffers.map(), "x"), (std::vector<int64_t>{1, 2, 3, 4, 9, 9, 9, 9}));
}

TEST(RegionBuffers, ATemplateMustLeadWithTheBucketsRows) {
  RegionBuffers buffers;
  Status status = buffers.Init(*Inputs(3, 0), 4);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("region input 'x' has shape [3,2] at a bucket of 4 rows"),
            std::string::npos)
      << status.message();
}

TEST(RegionBuffers, MismatchNamesWhatDiffers) {
  RegionBuffers buffers;
  ASSERT_TRUE(buffers.Init(*Inputs(4, 0), 4).ok());
  EXPECT_NE(
      buffers.Mismatch(*Inputs(2, 1, 3), 2).find("'x' has shape [2,3]; the capture has [4,2]"),
      std::string::npos);
  EXPECT_NE(buffers.Mismatch(*Inputs(5, 1), 5).find("5 rows do not fit a capture of 4"),
            std::string::npos);
  TensorMapPtr missing = NewTensorMap();
  ASSERT_TRUE(missing->Append("x", Int64({1, 2}, {1, 2})).ok());
  ASSERT_TRUE(missing->Append("bias", Int64({1}, {1})).ok());
  EXPECT_NE(buffers.Mismatch(*missing, 1).find("'scale' is missing"), std::string::npos);
  EXPECT_FALSE(buffers.Load(*missing, 1, nullptr).ok());
}

TEST(RegionBuffers, LeadingRowsAreSharedByEveryInput) {
  std::string reason;
  EXPECT_EQ(LeadingRows(*Inputs(3, 0), &reason), 3u);
  TensorMapPtr odd = NewTensorMap();
  ASSERT_TRUE(odd->Append("x", Int64({1, 2}, {1, 2})).ok());
  ASSERT_TRUE(odd->Append("scale", Int64({1, 2}, {2})).ok());
  EXPECT_EQ(LeadingRows(*odd, &reason), 0u);
  EXPECT_NE(reason.find("disagree"), std::string::npos) << reason;
}

TEST(RegionBuffers, CutRowsCopiesTheRealRowsOfLeadingOutputs) {
  TensorMapPtr statics = NewTensorMap();
  ASSERT_TRUE(statics->Append("y", Int64({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2})).ok());
  ASSERT_TRUE(statics->Append("total", Int64({36}, {1})).ok());
  TensorMapPtr out = NewTensorMap();
  ASSERT_TRUE(CutRows(*statics, 3, 4, *out, nullptr).ok());
  EXPECT_EQ(Int64Values(*out, "y"), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Int64Values(*out, "total"), (std::vector<int64_t>{36}));  // not led by the rows
  // Copies, not views: the next replay rewriting the statics leaves them alone.
  static_cast<int64_t*>(statics->Find("y")->tensors[0]->dl.data)[0] = -1;
  EXPECT_EQ(Int64Values(*out, "y")[0], 1);
}

TEST(RegionBuffers, OverwriteOutputsKeepsTheCapturedShapes) {
  TensorMapPtr statics = NewTensorMap();
  ASSERT_TRUE(statics->Append("y", Int64({0, 0}, {2, 1})).ok());
  TensorMapPtr produced = NewTensorMap();
  ASSERT_TRUE(produced->Append("y", Int64({4, 5}, {2, 1})).ok());
  ASSERT_TRUE(OverwriteOutputs(*produced, *statics, nullptr).ok());
  EXPECT_EQ(Int64Values(*statics, "y"), (std::vector<int64_t>{4, 5}));
  TensorMapPtr other = NewTensorMap();
  ASSERT_TRUE(other->Append("y", Int64({4, 5, 6}, {3, 1})).ok());
  Status status = OverwriteOutputs(*other, *statics, nullptr);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("keep their shapes"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// ColumnarBatch::Clear: a recycled batch object keeps its buffers for the next step, its outputs'
// maps included when nothing else holds them, and never empties outputs another holder still
// reads (a delivery not yet carried out, a cohort keeping a step's outputs whole).
#include "engine/columnar_batch.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "host/tensor_objects.h"

namespace mstar {
namespace {

// A host tensor of int64 values, owned by the caller.
mstar_tensor_t* Int64s(const std::vector<int64_t>& values) {
  Result<mstar_tensor_t*> tensor =
      AllocateTensor(nullptr, DLDevice{kDLCPU, 0}, DLDataType{kDLInt, 64, 1},
                     std::vector<int64_t>{static_cast<int64_t>(values.size())});
  EXPECT_TRUE(tensor.ok());
  std::memcpy(tensor.value()->dl.data, values.data(), values.size() * sizeof(int64_t));
  return tensor.value();
}

int64_t First(const mstar_tensor_map& map, const char* name) {
  const mstar_tensor_map::Entry* entry = map.Find(name);
  if (entry == nullptr || entry->tensors.empty()) return -1;
  return static_cast<const int64_t*>(entry->tensors[0]->dl.data)[0];
}

TEST(ColumnarBatch, ClearKeepsTheOutputsMapsEmptiedWhenNothingElseHoldsThem) {
  ColumnarBatch batch;
  batch.outputs = std::make_shared<ColumnarOutputs>();
  batch.outputs->tensors->AppendHost("tokens", Int64s({7, 8}));
  batch.outputs->rows->AppendHost("tokens", Int64s({0, 1, 2}));
  const ColumnarOutputs* kept = batch.outputs.get();

  batch.Clear();

  ASSERT_EQ(batch.outputs.get(), kept);
  EXPECT_TRUE(batch.outputs->tensors->entries().empty());
  EXPECT_TRUE(batch.outputs->rows->entries().empty());
}

TEST(ColumnarBatch, ClearLeavesOutputsThatAnotherHolderStillReads) {
  ColumnarBatch batch;
  batch.outputs = std::make_shared<ColumnarOutputs>();
  batch.outputs->tensors->AppendHost("tokens", Int64s({7, 8}));
  std::shared_ptr<ColumnarOutputs> delivery = batch.outputs;  // as Pending::Rows holds it

  batch.Clear();

  EXPECT_EQ(batch.outputs, nullptr);  // the next step makes its own
  ASSERT_EQ(delivery.use_count(), 1);
  EXPECT_EQ(First(*delivery->tensors, "tokens"), 7);
}

TEST(ColumnarBatch, ClearEmptiesTheStepButKeepsRowInfosForTheNextStep) {
  ColumnarBatch batch;
  batch.rows.emplace_back();
  batch.infos.emplace_back();
  batch.info_serials.push_back(5);
  batch.inputs->AppendHost("tokens", Int64s({1}));
  batch.Fail(batch.rows[0], "broken");
  batch.rows_settled = true;

  batch.Clear();

  EXPECT_TRUE(batch.rows.empty());
  EXPECT_TRUE(batch.errors.empty());
  EXPECT_TRUE(batch.inputs->entries().empty());
  EXPECT_FALSE(batch.rows_settled);
  ASSERT_EQ(batch.info_serials.size(), 1u);  // a member formed into row 0 again is not copied
  EXPECT_EQ(batch.info_serials[0], 5u);
}

}  // namespace
}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "host/tensor_objects.h"

#include <gtest/gtest.h>

#include <cstring>

#include "host/memory_ledger.h"

namespace mstar {
namespace {

constexpr DLDevice kCpu{kDLCPU, 0};
constexpr DLDataType kF32{kDLFloat, 32, 1};

// A plugin-style tensor over a static buffer whose deleter counts its calls.
struct ForeignTensor {
  static int deletes;
  float data[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  int64_t strides[2] = {3, 1};
  mstar_tensor_t t{};

  ForeignTensor() {
    t.struct_size = sizeof(mstar_tensor_t);
    t.struct_version = MSTAR_TENSOR_VERSION;
    t.dlpack_major = 0;
    t.dlpack_minor = 6;
    t.dl.data = data;
    t.dl.device = kCpu;
    t.dl.ndim = 2;
    t.dl.dtype = kF32;
    t.dl.shape = shape;
    t.dl.strides = strides;
    t.manager_ctx = this;
    t.deleter = [](mstar_tensor_t*) { ++deletes; };
  }
};
int ForeignTensor::deletes = 0;

TEST(TensorObjects, AllocateGivesContiguousAccountedTensor) {
  Result<mstar_tensor_t*> t = AllocateTensor(nullptr, kCpu, kF32, {4, 5});
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(IsHostTensor(t.value()));
  EXPECT_EQ(t.value()->dl.strides[0], 5);
  EXPECT_EQ(t.value()->dl.strides[1], 1);
  EXPECT_EQ(TensorNumBytes(t.value()->dl), 80u);
  EXPECT_TRUE(ValidateTensor(t.value(), "t").ok());
  uint64_t before = MemoryLedger::Global().Used(kCpu);
  ReleaseTensor(t.value());
  EXPECT_EQ(MemoryLedger::Global().Used(kCpu), before - 80);
}

TEST(TensorObjects, EmptyTensorHasNoData) {
  Result<mstar_tensor_t*> t = AllocateTensor(nullptr, kCpu, kF32, {0, 3});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t.value()->dl.data, nullptr);
  EXPECT_TRUE(ValidateTensor(t.value(), "t").ok());
  ReleaseTensor(t.value());
}

TEST(TensorObjects, SharedStorageLivesUntilTheLastReference) {
  ForeignTensor::deletes = 0;
  ForeignTensor foreign;
  Result<mstar_tensor_t*> adopted = AdoptTensor(&foreign.t, "x");
  ASSERT_TRUE(adopted.ok());
  Result<mstar_tensor_t*> shared = ShareTensor(adopted.value());
  ASSERT_TRUE(shared.ok());
  EXPECT_EQ(shared.value()->dl.data, foreign.data);
  ReleaseTensor(adopted.value());
  EXPECT_EQ(ForeignTensor::deletes, 0);
  ReleaseTensor(shared.value());
  EXPECT_EQ(ForeignTensor::deletes, 1);  // exactly once
}

TEST(TensorObjects, SharingAForeignTensorIsRefused) {
  ForeignTensor foreign;
  Result<mstar_tensor_t*> shared = ShareTensor(&foreign.t);
  ASSERT_FALSE(shared.ok());
  EXPECT_EQ(shared.status().code(), Code::kInvalidArgument);
}

TEST(TensorObjects, InvalidTensorsAreRejectedAndStillDeleted) {
  struct Case {
    const char* name;
    void (*mutate)(ForeignTensor&);
    const char* message;
  } cases[] = {
      {"null strides", [](ForeignTensor& f) { f.t.dl.strides = nullptr; }, "strides"},
      {"negative dim", [](ForeignTensor& f) { f.shape[1] = -1; }, "negative size"},
      {"zero bits", [](ForeignTensor& f) { f.t.dl.dtype.bits = 0; }, "zero bits"},
      {"null data", [](ForeignTensor& f) { f.t.dl.data = nullptr; }, "data is NULL"},
      {"dlpack 2", [](ForeignTensor& f) { f.t.dlpack_major = 2; }, "DLPack 2"},
      {"bad ndim", [](ForeignTensor& f) { f.t.dl.ndim = 1000; }, "ndim"},
  };
  for (const Case& c : cases) {
    ForeignTensor::deletes = 0;
    ForeignTensor foreign;
    c.mutate(foreign);
    Result<mstar_tensor_t*> adopted = AdoptTensor(&foreign.t, "output 'y'");
    ASSERT_FALSE(adopted.ok()) << c.name;
    EXPECT_NE(adopted.status().message().find(c.message), std::string::npos)
        << c.name << ": " << adopted.status().message();
    EXPECT_NE(adopted.status().message().find("output 'y'"), std::string::npos);
    EXPECT_EQ(ForeignTensor::deletes, 1) << c.name << ": a rejected tensor is still deleted once";
  }
}

TEST(TensorMap, KeepsInsertionOrderAndLists) {
  TensorMapPtr map = NewTensorMap();
  for (const char* name : {"b", "a", "b"}) {
    Result<mstar_tensor_t*> t = AllocateTensor(nullptr, kCpu, kF32, {1});
    ASSERT_TRUE(map->Append(name, t.value()).ok());
  }
  ASSERT_EQ(map->entries.size(), 2u);
  EXPECT_EQ(map->entries[0].name, "b");
  EXPECT_EQ(map->entries[0].tensors.size(), 2u);
  EXPECT_EQ(map->Remove("b"), 2u);
  EXPECT_EQ(map->Remove("b"), 0u);
  EXPECT_EQ(map->entries.size(), 1u);
}

}  // namespace
}  // namespace mstar

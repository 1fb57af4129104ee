// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "host/tensor_objects.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "core/fault_injection.h"
#include "host/memory_ledger.h"
#include "host/recycler.h"

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
  // The bytes its block took: a recycled size class, or the 80 asked for.
  EXPECT_EQ(MemoryLedger::Global().Used(kCpu),
            before - (kRecycling ? MemoryLedger::kSmallestCached : 80));
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
      // 4 * 2^62 elements wrap to 0: not an empty tensor that may have NULL data.
      {"wrapping shape",
       [](ForeignTensor& f) {
         f.shape[0] = 4;
         f.shape[1] = int64_t{1} << 62;
         f.t.dl.data = nullptr;
       },
       "shape {4, 4611686018427387904} has more elements or bytes than 64 bits can count"},
      // 2^62 four-byte elements: the count fits, the byte size does not.
      {"wrapping bytes",
       [](ForeignTensor& f) {
         f.shape[0] = 1;
         f.shape[1] = int64_t{1} << 62;
       },
       "more elements or bytes than 64 bits can count"},
      {"transposed",
       [](ForeignTensor& f) {
         f.shape[0] = 3;
         f.shape[1] = 2;
         f.strides[0] = 1;
         f.strides[1] = 3;
       },
       "strides {1, 3} are not the contiguous row-major strides of shape {3, 2}"},
      {"expanded", [](ForeignTensor& f) { f.strides[0] = 0; }, "call .contiguous() first"},
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

// A dimension of size 1 is never stepped over, so its stride may be anything (LibTorch leaves
// such strides as they fall); an empty tensor has no layout at all.
TEST(TensorObjects, SizeOneAndEmptyDimensionsTakeAnyStride) {
  ForeignTensor one_row;
  one_row.shape[0] = 1;
  one_row.shape[1] = 6;
  one_row.strides[0] = 100;
  EXPECT_TRUE(ValidateTensor(&one_row.t, "t").ok());
  ForeignTensor empty;
  empty.shape[0] = 0;
  empty.strides[0] = 7;
  empty.t.dl.data = nullptr;
  EXPECT_TRUE(ValidateTensor(&empty.t, "t").ok());
}

// tensor_alloc's size is computed with checked multiplication: a shape whose byte size wraps
// around 64 bits is refused instead of "allocating" nothing and returning NULL data.
TEST(TensorObjects, AllocatingAShapeWhoseSizeOverflowsIsRefused) {
  constexpr DLDataType kI8{kDLInt, 8, 1};
  constexpr DLDataType kI64{kDLInt, 64, 1};
  const std::vector<int64_t> too_many = {int64_t{1} << 33, int64_t{1} << 31};  // 2^64 elements
  const std::vector<int64_t> too_large = {int64_t{1} << 61};  // 2^64 bytes of int64
  for (const auto& [shape, dtype] : {std::pair{too_many, kI8}, std::pair{too_large, kI64}}) {
    Result<mstar_tensor_t*> t = AllocateTensor(nullptr, kCpu, dtype, shape);
    ASSERT_FALSE(t.ok()) << shape[0];
    EXPECT_EQ(t.status().code(), Code::kInvalidArgument);
    EXPECT_NE(t.status().message().find("more elements or bytes than 64 bits can count"),
              std::string::npos)
        << t.status().message();
  }
  Result<mstar_tensor_t*> negative = AllocateTensor(nullptr, kCpu, kI8, {2, -1});
  EXPECT_EQ(negative.status().code(), Code::kInvalidArgument);
  // A zero dimension makes the tensor empty however large the others are.
  Result<mstar_tensor_t*> empty =
      AllocateTensor(nullptr, kCpu, kI64, {0, int64_t{1} << 62, int64_t{1} << 62});
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_EQ(empty.value()->dl.data, nullptr);
  ReleaseTensor(empty.value());
}

// A dtype of no bits or no lanes has no element size: a tensor of it would have elements and no
// storage, so tensor_alloc refuses it.
TEST(TensorObjects, AllocatingADtypeWithoutAnElementSizeIsRefused) {
  for (DLDataType dtype : {DLDataType{kDLFloat, 0, 1}, DLDataType{kDLInt, 32, 0}}) {
    Result<mstar_tensor_t*> t = AllocateTensor(nullptr, kCpu, dtype, {1000});
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), Code::kInvalidArgument);
    EXPECT_NE(t.status().message().find("has no element size"), std::string::npos)
        << t.status().message();
  }
}

TEST(TensorMap, KeepsInsertionOrderAndLists) {
  TensorMapPtr map = NewTensorMap();
  for (const char* name : {"b", "a", "b"}) {
    Result<mstar_tensor_t*> t = AllocateTensor(nullptr, kCpu, kF32, {1});
    ASSERT_TRUE(map->Append(name, t.value()).ok());
  }
  ASSERT_EQ(map->entries().size(), 2u);
  EXPECT_EQ(map->entries()[0].name, "b");
  EXPECT_EQ(map->entries()[0].tensors.size(), 2u);
  EXPECT_EQ(map->Remove("b"), 2u);
  EXPECT_EQ(map->Remove("b"), 0u);
  EXPECT_EQ(map->entries().size(), 1u);
}

TEST(TensorMap, AClearedMapIsEmptyAndReusable) {
  // A recycled map comes back empty, whatever it held, and its names start afresh.
  uint64_t before = MemoryLedger::Global().Used(kCpu);
  for (int round = 0; round < 3; ++round) {
    TensorMapPtr map = NewTensorMap();
    EXPECT_TRUE(map->entries().empty());
    for (const char* name : {"x", "a_much_longer_name_than_fits_inline", "x"}) {
      Result<mstar_tensor_t*> t = AllocateTensor(nullptr, kCpu, kF32, {3});
      ASSERT_TRUE(map->Append(name, t.value()).ok());
    }
    ASSERT_EQ(map->entries().size(), 2u);
    EXPECT_EQ(map->entries()[1].name, "a_much_longer_name_than_fits_inline");
    EXPECT_EQ(map->Find("x")->tensors.size(), 2u);
    EXPECT_EQ(map->Remove("x"), 2u);
    Result<mstar_tensor_t*> t = AllocateTensor(nullptr, kCpu, kF32, {3});
    ASSERT_TRUE(map->Append("y", t.value()).ok());  // an emptied entry, renamed
    EXPECT_EQ(map->entries().back().name, "y");
    EXPECT_EQ(map->Find("x"), nullptr);
  }
  EXPECT_EQ(MemoryLedger::Global().Used(kCpu), before);  // every tensor was released
}

TEST(TensorMap, ReusedNamesComeBackInTheNewOrderWithNothingStale) {
  // Entries emptied by Clear and Remove are taken back by name; the map's order is always the
  // order of this use's first appends, and a reused entry holds only what was appended since.
  TensorMapPtr map = NewTensorMap();
  auto append = [&](const char* name, int64_t rows) {
    Result<mstar_tensor_t*> t = AllocateTensor(nullptr, kCpu, kF32, {rows});
    ASSERT_TRUE(t.ok());
    ASSERT_TRUE(map->Append(name, t.value()).ok());
  };
  auto names = [&] {
    std::vector<std::string> out;
    for (const auto& entry : map->entries()) out.push_back(entry.name);
    return out;
  };
  append("a", 1);
  append("b", 2);
  append("c", 3);
  EXPECT_EQ(map->Remove("a"), 1u);
  EXPECT_EQ(names(), (std::vector<std::string>{"b", "c"}));
  append("a", 4);  // the emptied "a" again, now last
  EXPECT_EQ(names(), (std::vector<std::string>{"b", "c", "a"}));
  map->Clear();
  append("c", 5);
  append("d", 6);  // a new name takes an emptied entry
  append("b", 7);
  EXPECT_EQ(names(), (std::vector<std::string>{"c", "d", "b"}));
  ASSERT_EQ(map->Find("b")->tensors.size(), 1u);
  EXPECT_EQ(map->Find("b")->tensors[0]->dl.shape[0], 7);
  EXPECT_EQ(map->Find("a"), nullptr);
  EXPECT_EQ(map->Remove("a"), 0u);
}

TEST(TensorMap, ABorrowingMapNeverReleasesItsTensors) {
  Result<mstar_tensor_t*> t = AllocateTensor(nullptr, kCpu, kF32, {2});
  ASSERT_TRUE(t.ok());
  uint64_t used = MemoryLedger::Global().Used(kCpu);
  {
    TensorMapPtr view = NewTensorMap();
    view->AppendBorrowed("t", t.value());
    view->AppendBorrowed("t", t.value());
    EXPECT_TRUE(view->borrowing());
    EXPECT_EQ(view->Find("t")->tensors.size(), 2u);
    // Owning appends are refused (and the tensor is released, as a failed append does).
    Result<mstar_tensor_t*> other = AllocateTensor(nullptr, kCpu, kF32, {2});
    Status appended = view->Append("other", other.value());
    EXPECT_EQ(appended.code(), Code::kInternal);
    EXPECT_EQ(MemoryLedger::Global().Used(kCpu), used);
    EXPECT_EQ(view->Remove("t"), 2u);  // removed, not released
    view->AppendBorrowed("t", t.value());
  }  // dropped: still not released
  EXPECT_EQ(MemoryLedger::Global().Used(kCpu), used);
  EXPECT_TRUE(IsHostTensor(t.value()));
  static_cast<float*>(t.value()->dl.data)[1] = 2.0f;  // still alive
  // Cleared, a map owns again.
  TensorMapPtr map = NewTensorMap();
  map->AppendBorrowed("t", t.value());
  map->Clear();
  EXPECT_FALSE(map->borrowing());
  ASSERT_TRUE(map->Append("t", t.value()).ok());  // takes it now
  map.reset();
  EXPECT_EQ(MemoryLedger::Global().Used(kCpu),
            used - (kRecycling ? MemoryLedger::kSmallestCached : 8));
}

struct Pooled {
  int value = 0;
};

TEST(Recycler, ObjectsCrossThreadsAndComeBack) {
  // One thread makes objects, another drops them (as the engine's exec and finish threads do);
  // every object is handed out once at a time, and recycled ones are reused.
  constexpr int kObjects = 1000;
  std::vector<Pooled*> made(kObjects);
  std::thread maker([&] {
    for (Pooled*& p : made) {
      p = Recycler<Pooled>::Get();
      p->value = 7;
    }
  });
  maker.join();
  EXPECT_EQ(std::set<Pooled*>(made.begin(), made.end()).size(), made.size());
  std::thread dropper([&] {
    for (Pooled* p : made) Recycler<Pooled>::Put(p);
  });
  dropper.join();  // its cache went back to the shared list when it exited
  std::set<Pooled*> returned(made.begin(), made.end());
  std::vector<Pooled*> again(kObjects);
  size_t reused = 0;
  for (Pooled*& p : again) {
    p = Recycler<Pooled>::Get();
    reused += returned.count(p);
  }
  EXPECT_EQ(std::set<Pooled*>(again.begin(), again.end()).size(), again.size());
  if (kRecycling) {
    EXPECT_EQ(reused, again.size());
    EXPECT_EQ(again.front()->value, 7);  // as Put left it
  }
  for (Pooled* p : again) Recycler<Pooled>::Put(p);
}

// Each record a tensor needs that cannot be made (out of memory, injected here) fails the call
// with the reason and loses nothing: ledger memory goes back, a plugin's tensor is deleted exactly
// once (it was transferred), a shared source stays whole, and a map gains no entry.
TEST(TensorObjects, EachRecordThatCannotBeMadeFailsAndLosesNothing) {
  const uint64_t before = MemoryLedger::Global().Used(kCpu);
  auto expect_injected = [](const Status& status, uint64_t nth) {
    EXPECT_EQ(status.code(), Code::kResourceExhausted);
    EXPECT_NE(status.message().find("injected fault (host object #" + std::to_string(nth) + ")"),
              std::string::npos)
        << status.ToString();
  };
  for (uint64_t nth : {1, 2, 3}) {  // the ledger's record, the storage record, the tensor record
    SCOPED_TRACE(nth);
    ArmFault(FaultSite::kHostObject, nth);
    Result<mstar_tensor_t*> allocated = AllocateTensor(nullptr, kCpu, kF32, {64, 64});
    DisarmFaults();
    ASSERT_FALSE(allocated.ok());
    expect_injected(allocated.status(), nth);
    EXPECT_EQ(MemoryLedger::Global().Used(kCpu), before);
  }
  for (uint64_t nth : {1, 2}) {  // the storage record, the tensor record
    SCOPED_TRACE(nth);

    ForeignTensor::deletes = 0;
    ForeignTensor foreign;
    ArmFault(FaultSite::kHostObject, nth);
    Result<mstar_tensor_t*> adopted = AdoptTensor(&foreign.t, "x");
    DisarmFaults();
    ASSERT_FALSE(adopted.ok());
    expect_injected(adopted.status(), nth);
    EXPECT_EQ(ForeignTensor::deletes, 1);
  }
  for (uint64_t nth : {1, 2, 3}) {  // storage record, tensor record, the map's entry
    SCOPED_TRACE(nth);
    ForeignTensor::deletes = 0;
    ForeignTensor foreign;
    mstar_tensor_map* map = NewMap();
    ArmFault(FaultSite::kHostObject, nth);
    Status appended = map->Append("x", &foreign.t);
    DisarmFaults();
    expect_injected(appended, nth);
    EXPECT_EQ(ForeignTensor::deletes, 1);
    EXPECT_TRUE(map->entries().empty());
    DropMap(map);
  }
  ForeignTensor::deletes = 0;
  ForeignTensor foreign;
  Result<mstar_tensor_t*> source = AdoptTensor(&foreign.t, "x");
  ASSERT_TRUE(source.ok());
  ArmFault(FaultSite::kHostObject, 1);
  Result<mstar_tensor_t*> shared = ShareTensor(source.value());
  DisarmFaults();
  ASSERT_FALSE(shared.ok());
  expect_injected(shared.status(), 1);
  EXPECT_EQ(ForeignTensor::deletes, 0);  // the source's reference is whole
  EXPECT_EQ(source.value()->dl.data, foreign.data);
  ReleaseTensor(source.value());
  EXPECT_EQ(ForeignTensor::deletes, 1);
}

}  // namespace
}  // namespace mstar

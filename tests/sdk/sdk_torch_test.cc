// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The SDK's LibTorch helpers: tensors cross into host maps and back without copies, and the
// LibTorch storage lives exactly as long as someone holds it.
#include "mstar/sdk/torch.hpp"

#include <gtest/gtest.h>

#include "core/fault_injection.h"
#include "host/host_api.h"
#include "host/tensor_objects.h"

namespace mstar {
namespace {

// A host-managed 1-D float tensor of n elements (null when the host refuses).
mstar_tensor_t* HostFloats(HostApi& host, int64_t n) {
  mstar_tensor_t* tensor = nullptr;
  mstar_status_t* status = host.table()->tensor_alloc(host.library_context(), DLDevice{kDLCPU, 0},
                                                      DLDataType{kDLFloat, 32, 1}, 1, &n, &tensor);
  if (status != nullptr) host.table()->status_release(status);
  return tensor;
}

TEST(SdkTorch, DtypesRoundTrip) {
  for (at::ScalarType t : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kChar, at::kShort,
                           at::kInt, at::kLong, at::kByte, at::kBool}) {
    EXPECT_EQ(sdk::ToScalarType(sdk::FromScalarType(t)), t) << c10::toString(t);
  }
  EXPECT_THROW(sdk::ToScalarType(DLDataType{kDLUInt, 32, 1}), sdk::Error);
}

TEST(SdkTorch, TorchTensorIntoAHostMapAndBackWithoutCopies) {
  HostApi host("torch_test");
  const mstar_host_api_t* api = host.table();
  at::Tensor original = at::arange(12, at::kFloat).reshape({3, 4});
  const void* data = original.data_ptr();
  {
    TensorMapPtr map = NewTensorMap();
    sdk::Tensor crossed = sdk::FromTorch(original);
    ASSERT_TRUE(map->Append("x", crossed.release()).ok());  // passes the host's tensor checks
    EXPECT_EQ(original.use_count(), 2);  // the map's reference keeps the storage alive

    sdk::TensorView view(map->Find("x")->tensors[0]);
    EXPECT_EQ(view.shape(), (std::vector<int64_t>{3, 4}));
    at::Tensor back = sdk::ToTorch(api, view);
    EXPECT_EQ(back.data_ptr(), data);
    EXPECT_TRUE(back.equal(original));
    map.reset();  // the host drops its reference; `back` still holds a shared one
    EXPECT_FLOAT_EQ(back[2][3].item<float>(), 11.0f);
  }
  EXPECT_EQ(original.use_count(), 1);
}

// A host-managed tensor whose reference the host cannot make (out of memory) throws rather than
// coming back as a view that would outlive its storage.
TEST(SdkTorch, AReferenceTheHostCannotMakeThrowsInsteadOfLending) {
  HostApi host("torch_test");
  const mstar_host_api_t* api = host.table();
  mstar_tensor_t* tensor = HostFloats(host, 4);
  ASSERT_NE(tensor, nullptr);
  ArmFault(FaultSite::kHostObject, 1);
  EXPECT_THROW(sdk::ToTorch(api, sdk::TensorView(tensor)), sdk::Error);
  DisarmFaults();
  {
    at::Tensor back = sdk::ToTorch(api, sdk::TensorView(tensor));
    api->tensor_release(tensor);  // `back` holds a reference of its own
    back.fill_(2.0f);
    EXPECT_FLOAT_EQ(back.sum().item<float>(), 8.0f);
  }
}

// An empty host tensor comes back as an empty LibTorch tensor holding no reference to it (LibTorch
// never calls an empty blob's deleter, so a reference would leak: LeakSanitizer builds see it).
TEST(SdkTorch, AnEmptyTensorComesBackEmptyAndHoldsNoReference) {
  HostApi host("torch_test");
  const mstar_host_api_t* api = host.table();
  mstar_tensor_t* empty = HostFloats(host, 0);
  ASSERT_NE(empty, nullptr);
  {
    at::Tensor back = sdk::ToTorch(api, sdk::TensorView(empty));
    EXPECT_EQ(back.numel(), 0);
    EXPECT_EQ(back.scalar_type(), at::kFloat);
  }
  api->tensor_release(empty);
}

// Host maps take only compact tensors, so FromTorch hands a transposed or expanded view over as a
// contiguous copy with the same values; a contiguous tensor crosses as it is.
TEST(SdkTorch, FromTorchHandsOverContiguousTensors) {
  at::Tensor t = at::arange(6, at::kLong).reshape({2, 3}).t();  // strides {1, 3}
  sdk::Tensor crossed = sdk::FromTorch(t);
  EXPECT_EQ(crossed.dl().strides[0], 2);
  EXPECT_EQ(crossed.dl().strides[1], 1);
  EXPECT_TRUE(crossed.contiguous());
  HostApi host("torch_test");
  at::Tensor back = sdk::ToTorch(host.table(), crossed);  // not host-managed: a plain view
  EXPECT_TRUE(back.equal(t));
  TensorMapPtr map = NewTensorMap();
  EXPECT_TRUE(map->Append("t", crossed.release()).ok());
  EXPECT_TRUE(map->Append("expanded", sdk::FromTorch(at::arange(3).expand({4, 3})).release()).ok());

  at::Tensor contiguous = at::arange(6, at::kLong).reshape({2, 3});
  EXPECT_EQ(sdk::FromTorch(contiguous).dl().data, contiguous.data_ptr());  // no copy
}

// ToTorch reads a view through its strides (TorchView describes a LibTorch tensor as it is).
TEST(SdkTorch, ToTorchOfAStridedViewKeepsItsStrides) {
  at::Tensor t = at::arange(6, at::kLong).reshape({2, 3}).t();
  sdk::TorchView described(t);
  EXPECT_EQ(described.view()->dl.strides[0], 1);
  EXPECT_EQ(described.view()->dl.strides[1], 3);
  HostApi host("torch_test");
  at::Tensor back = sdk::ToTorch(host.table(), sdk::TensorView(described.view()));
  EXPECT_TRUE(back.equal(t));
}

}  // namespace
}  // namespace mstar

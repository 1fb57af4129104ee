// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The ABI's pinned layout, as seen from C++: slot offsets, frozen prefixes and flag values.
#include <gtest/gtest.h>

#include "mstar/plugin.h"

namespace {

TEST(AbiLayout, NegotiationStructIsFrozen) {
  EXPECT_EQ(sizeof(mstar_negotiation_t), 32u);
  EXPECT_EQ(offsetof(mstar_negotiation_t, host_major), 8u);
  EXPECT_EQ(offsetof(mstar_negotiation_t, negotiated_minor), 28u);
}

TEST(AbiLayout, HostTableFrozenPrefix) {
  // struct_size, struct_version, context, status_new stay where they are in every major.
  EXPECT_EQ(offsetof(mstar_host_api_t, struct_size), 0u);
  EXPECT_EQ(offsetof(mstar_host_api_t, struct_version), 4u);
  EXPECT_EQ(offsetof(mstar_host_api_t, context), 8u);
  EXPECT_EQ(offsetof(mstar_host_api_t, status_new), 16u);
}

TEST(AbiLayout, TablesAreHeaderPlusPointerSlots) {
  EXPECT_EQ(sizeof(mstar_host_api_t), MSTAR_SLOT_OFFSET(62));
  EXPECT_EQ(sizeof(mstar_submodule_vtable_t), MSTAR_SLOT_OFFSET(19));
  EXPECT_EQ(sizeof(mstar_resource_vtable_t), MSTAR_SLOT_OFFSET(23));
  EXPECT_EQ(sizeof(mstar_tier_vtable_t), MSTAR_SLOT_OFFSET(7));
  EXPECT_EQ(sizeof(mstar_model_vtable_t), MSTAR_SLOT_OFFSET(6));
}

TEST(AbiLayout, TensorCarriesDlpackVersionAndFlags) {
  EXPECT_EQ(offsetof(mstar_tensor_t, struct_size), 0u);
  EXPECT_EQ(offsetof(mstar_tensor_t, struct_version), 4u);
  EXPECT_EQ(offsetof(mstar_tensor_t, dlpack_major), 8u);
  EXPECT_EQ(offsetof(mstar_tensor_t, dlpack_minor), 12u);
  EXPECT_EQ(offsetof(mstar_tensor_t, flags), 16u);
  EXPECT_EQ(offsetof(mstar_tensor_t, dl), 24u);
  EXPECT_EQ(sizeof(mstar_tensor_t::flags), 8u);
  // The DLPack the ABI is built against: 0.x (dlpack.h of Debian's libdlpack-dev) or 1.x.
  EXPECT_LE(MSTAR_DLPACK_MAJOR, 1);
  EXPECT_EQ(MSTAR_TENSOR_FLAG_READ_ONLY, 1u);
  EXPECT_EQ(MSTAR_TENSOR_FLAG_IS_COPIED, 2u);
}

TEST(AbiLayout, StatusCodesAreStable) {
  EXPECT_EQ(MSTAR_OK, 0u);
  EXPECT_EQ(MSTAR_ERR_INVALID_ARGUMENT, 1u);
  EXPECT_EQ(MSTAR_ERR_INTERNAL, 12u);
  EXPECT_EQ(MSTAR_STATUS_CODE_COUNT, 13u);
}

}  // namespace

TEST(AbiLayout, StepFieldsOf1_1FollowThoseOf1_0) {
  // 1.0 ended with padded_rows and reserved0; 1.1 appended the columnar form after them.
  EXPECT_EQ(offsetof(mstar_step_t, columnar_inputs), offsetof(mstar_step_t, reserved0) + 4);
  EXPECT_EQ(offsetof(mstar_step_t, output_rows), offsetof(mstar_step_t, columnar_inputs) + 24);
  EXPECT_EQ(sizeof(mstar_step_t), offsetof(mstar_step_t, output_rows) + sizeof(void*));
  EXPECT_EQ(offsetof(mstar_submodule_vtable_t, check_stop_columnar), MSTAR_SLOT_OFFSET(17));
  EXPECT_EQ(offsetof(mstar_submodule_vtable_t, prepare_inputs_columnar), MSTAR_SLOT_OFFSET(18));
}

TEST(AbiLayout, FieldsOf1_3FollowThoseBefore) {
  // 1.0's step declaration ended with preplan and padded_rows; 1.3 appended input_tokens.
  EXPECT_EQ(offsetof(mstar_step_decl_t, padded_rows), 60u);
  EXPECT_EQ(offsetof(mstar_step_decl_t, input_tokens), 64u);
  EXPECT_EQ(sizeof(mstar_step_decl_t), 72u);
  // 1.0's submodule info ended with stop_outputs; 1.3 appended token_input.
  EXPECT_EQ(offsetof(mstar_submodule_info_t, stop_outputs), 16u);
  EXPECT_EQ(offsetof(mstar_submodule_info_t, token_input), 24u);
  EXPECT_EQ(sizeof(mstar_submodule_info_t), 32u);
}

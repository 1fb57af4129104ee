/* Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0 */
/* Compiles every ABI header as strict C11 (-std=c11 -Wall -Wextra -pedantic -Werror) and checks
 * the layout facts a C plugin depends on. */
#include <stdio.h>

#include "mstar/plugin.h"

static int failures = 0;

static void expect(int condition, const char* what) {
  if (!condition) {
    fprintf(stderr, "FAILED: %s\n", what);
    ++failures;
  }
}

int main(void) {
  mstar_negotiation_t negotiation = {
      sizeof(mstar_negotiation_t), 0, MSTAR_ABI_MAJOR, MSTAR_ABI_MINOR, 0, 0, 0, 0};
  mstar_tensor_t tensor = {0};
  mstar_submodule_vtable_t submodule = {0};
  mstar_resource_vtable_t resource = {0};
  mstar_tier_vtable_t tier = {0};
  mstar_model_vtable_t model = {0};
  mstar_host_api_t host = {0};

  expect(negotiation.struct_size == 32, "mstar_negotiation_t is 32 bytes");
  expect(sizeof(tensor.flags) == 8, "tensor flags are 64-bit");
  expect(offsetof(mstar_tensor_t, dl) == 24, "DLTensor sits at offset 24");
  expect((void*)&submodule.create == (void*)((char*)&submodule + 8), "create is slot 0");
  expect((void*)&resource.create == (void*)((char*)&resource + 8), "resource create is slot 0");
  expect((void*)&tier.create == (void*)((char*)&tier + 8), "tier create is slot 0");
  expect((void*)&model.create == (void*)((char*)&model + 8), "model create is slot 0");
  expect(offsetof(mstar_host_api_t, status_new) == 16, "status_new is frozen at offset 16");
  expect((void*)&host.status_new == (void*)((char*)&host + 16), "status_new sits at offset 16");
  expect(MSTAR_TENSOR_FLAG_READ_ONLY == 1 && MSTAR_TENSOR_FLAG_IS_COPIED == 2,
         "tensor flags match DLPack 1.x bits");
  if (failures == 0) printf("ABI headers compile as C11; layout checks passed\n");
  return failures == 0 ? 0 : 1;
}

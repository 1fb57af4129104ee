// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The kv_paged plugin library: one resource factory, `kv_paged`.
#include "mstar/sdk.hpp"

#include "kv_paged.h"

MSTAR_PLUGIN("kv_paged", 0, mstar::sdk::ResourceFactory<mstar::kv::KvPaged>("kv_paged"));

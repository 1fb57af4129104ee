// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The M* plugin SDK: include this to write a plugin (mstar/sdk/torch.hpp adds LibTorch helpers).
#pragma once

#include "mstar/sdk/bytes.hpp"
#include "mstar/sdk/config.hpp"
#include "mstar/sdk/error.hpp"
#include "mstar/sdk/instance.hpp"
#include "mstar/sdk/model.hpp"
#include "mstar/sdk/plugin.hpp"
#include "mstar/sdk/request.hpp"
#include "mstar/sdk/resource.hpp"
#include "mstar/sdk/submodule.hpp"
#include "mstar/sdk/tensor.hpp"
#include "mstar/sdk/tier.hpp"

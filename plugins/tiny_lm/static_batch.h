// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// ReadStaticBatch: the PagedBatch of a step that runs on a capture slot (a captured graph, its
// replay, or on CPU the eager run over the slot's padded rows). Everything is built on the device
// with tensor operations from the step's inputs and the kv_paged view, reading no device value on
// the host, so the work can be recorded into a graph; only shapes (fixed per bucket) are read.
//
// The step holds step.size() real rows followed by step.raw()->padded_rows padding rows, each
// with exactly one new token (a decode step); the view has at least that many rows (see
// kv_view.h for its contract; kv_paged gives padding rows a scratch page). Every row attends over
// the view's full block-table width (max_ctx = width * page_size), masked past its context.
#pragma once

#include <ATen/ATen.h>

#include <string>

#include "kv_view.h"
#include "lm_config.h"
#include "mstar/sdk/request.hpp"

namespace tiny_lm {

// Rows of a slot step: real and padding.
inline uint32_t SlotRows(const mstar::sdk::Step& step) {
  return step.size() + step.raw()->padded_rows;
}

// Throws mstar::sdk::Error naming what breaks the contract (a row with more than one token, a
// view tensor of the wrong dtype or shape). The batch's rope is left for the caller to set
// (Transformer::RopeRows, made before any capture and kept, covering max_ctx positions).
PagedBatch ReadStaticBatch(const mstar_host_api_t* host, const mstar::sdk::Step& step,
                           const std::string& label, const LmConfig& config, at::Device device);

}  // namespace tiny_lm

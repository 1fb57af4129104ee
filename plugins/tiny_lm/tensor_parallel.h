// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Tensor parallelism for the decoder (the Megatron split): rank r of a group of W keeps the
// attention heads [r H/W, (r+1) H/W) with their share of the KV heads (rows of q, k, v and their
// biases, columns of o) and the MLP's intermediate columns [r I/W, (r+1) I/W) (rows of gate and
// up, columns of down). Embedding, norms and lm_head stay whole on every rank. Each rank's
// attention-output and down projections are then partial sums, which the ranks all-reduce
// (Transformer's PartialSum hook) before adding the residual; every rank ends a forward with the
// same hidden states and logits. A rank's KV cache holds only its KV heads.
#pragma once

#include <cstdint>

#include "lm_config.h"
#include "lm_weights.h"

namespace tiny_lm {

// The architecture one rank of `world` computes: heads, KV heads and the intermediate size
// divided by world. Throws mstar::sdk::Error (INVALID_ARGUMENT) naming the count that does not
// divide.
LmConfig ShardConfig(const LmConfig& full, int64_t world);

// Rank `rank`'s slices of the full weights (copies; the full tensors are released with w).
LmWeights ShardWeights(const LmConfig& full, LmWeights w, int64_t rank, int64_t world);

}  // namespace tiny_lm

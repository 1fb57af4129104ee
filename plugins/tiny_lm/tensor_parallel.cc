// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "tensor_parallel.h"

#include <string>
#include <utility>

#include "mstar/sdk/error.hpp"

namespace tiny_lm {
namespace {

int64_t Divide(int64_t count, int64_t world, const char* what) {
  if (world <= 0 || count % world != 0) {
    throw mstar::sdk::InvalidArgument("tiny_lm: " + std::string(what) + " (" +
                                      std::to_string(count) + ") is not divisible by the " +
                                      std::to_string(world) + " ranks of the parallel group");
  }
  return count / world;
}

// Rows [rank * n, (rank + 1) * n) of t (dim 0), or of dim 1 for columns; undefined stays so.
at::Tensor Slice(const at::Tensor& t, int64_t dim, int64_t rank, int64_t n) {
  if (!t.defined()) return t;
  return t.narrow(dim, rank * n, n).contiguous();
}

}  // namespace

LmConfig ShardConfig(const LmConfig& full, int64_t world) {
  LmConfig c = full;
  c.num_heads = Divide(full.num_heads, world, "num_attention_heads");
  c.num_kv_heads = Divide(full.num_kv_heads, world, "num_key_value_heads");
  c.intermediate_size = Divide(full.intermediate_size, world, "intermediate_size");
  return c;
}

LmWeights ShardWeights(const LmConfig& full, LmWeights w, int64_t rank, int64_t world) {
  const LmConfig local = ShardConfig(full, world);
  const int64_t qd = local.num_heads * full.head_dim, kvd = local.num_kv_heads * full.head_dim;
  const int64_t inter = local.intermediate_size;
  for (LayerWeights& l : w.layers) {
    l.q = Slice(l.q, 0, rank, qd);
    l.k = Slice(l.k, 0, rank, kvd);
    l.v = Slice(l.v, 0, rank, kvd);
    l.q_bias = Slice(l.q_bias, 0, rank, qd);
    l.k_bias = Slice(l.k_bias, 0, rank, kvd);
    l.v_bias = Slice(l.v_bias, 0, rank, kvd);
    l.o = Slice(l.o, 1, rank, qd);  // o_bias is added once, after the all-reduce
    l.gate = Slice(l.gate, 0, rank, inter);
    l.up = Slice(l.up, 0, rank, inter);
    l.down = Slice(l.down, 1, rank, inter);
  }
  return w;
}

}  // namespace tiny_lm

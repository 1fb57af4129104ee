// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// PagedBatch: one step's batch as the forward needs it, read from the step's inputs and the
// plan view of the paged KV cache resource. The view's contract (B = requests in the step, in
// order; T = the sum of their new tokens):
//   kv_pool       float32 [num_pages, layers, 2, page_size, kv_heads, head_dim]; 0 = K, 1 = V;
//                 written in place (page-major: see PoolRow)
//   block_table   int32 [B, max_pages], -1 padded
//   context_lens  int32 [B]    tokens in the cache after this step, including the new ones
//   query_start   int32 [B+1]  request b's new tokens are [query_start[b], query_start[b+1])
//   slot_mapping  int64 [T]    page * page_size + offset of each new token
//   positions     int64 [T]
//   cached        int32 [B]    leading new tokens already in the cache (a prefix hit): not
//                              computed, except that a request's last token always is
//
// Besides the packed rows, the batch carries the padded layout attention uses, built on the host
// from the view once per step (no device reads, no host syncs) and shared by every layer: the
// requests fall into groups (attention_groups.h), and each request gets its group's longest
// context (max_ctx) and most query rows (max_rows).
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "lm_config.h"
#include "mstar/sdk/request.hpp"

namespace tiny_lm {

// The rows one request contributes to the packed batch.
struct RequestRows {
  int64_t row_begin = 0;    // first computed row in the packed batch
  int64_t rows = 0;         // computed rows (at least 1: the last new token)
  int64_t context_len = 0;  // tokens in the cache after the step
};

// Requests attended together over one padded block.
struct AttentionGroup {
  int64_t count = 0;     // requests in the group
  int64_t max_rows = 0;  // the most query rows among them
  int64_t max_ctx = 0;   // the longest context among them
  // int64 [2 * count * max_ctx]: PoolRows of each member's context positions (K), then the same
  // rows plus page_size (V), as LayerRows(kv_pool, l, ...) of every layer reads them. Past a
  // member's context: the row of its last new token (written before attention, so the gathered
  // value is finite whatever the pool holds elsewhere).
  at::Tensor context_rows;
  // float32 [count, max_rows, max_ctx]: 0 where a (padded) query row may look, -inf past its own
  // position or its request's context.
  at::Tensor bias;
  // int64 [count * max_rows]: the packed row of each padded query row (padding repeats the
  // member's last row). Undefined when those are the packed rows themselves (the step's only
  // group, one row per request).
  at::Tensor q_rows;
};

struct PagedBatch {
  at::Tensor tokens;     // int64 [R]: the computed tokens, requests in order
  at::Tensor positions;  // int64 [R]
  at::Tensor slots;      // int64 [R]: PoolRow of each computed token's slot (where its K goes)
  std::vector<RequestRows> requests;
  at::Tensor kv_pool;  // the resource's pool (shares its memory)
  int64_t page_size = 0;

  int64_t max_position = 0;  // the largest of positions
  at::Tensor rope;           // when defined: the RoPE table to read (else the workspace's)

  int64_t max_ctx = 0;  // the longest context of any request
  std::vector<AttentionGroup> groups;
  // int64 [R]: where each packed row sits among the groups' padded query rows (group after
  // group). Undefined when those are the packed rows in order.
  at::Tensor out_rows;
  // Only when R > B: int64 [B], each request's last packed row.
  at::Tensor last_rows;
};

// The pool viewed as rows of kv_heads * head_dim elements: the K of slot s (page s / page_size,
// offset s % page_size) at layer 0 is row PoolRow(s), its V row PoolRow(s) + page_size; layer l's
// rows are 2 * l * page_size further (a page is [layers, 2, page_size] rows).
inline int64_t PoolRow(int64_t slot, int64_t page_size, int64_t layers) {
  return slot / page_size * 2 * layers * page_size + slot % page_size;
}
// The same for a tensor of slots (on its device).
at::Tensor PoolRows(const at::Tensor& slots, int64_t page_size, int64_t layers);
// Layer l's rows of kv_pool: a view (sharing the pool) in which PoolRow(s) is slot s's K at
// layer l and PoolRow(s) + page_size its V.
at::Tensor LayerRows(const at::Tensor& kv_pool, int64_t layer, int64_t page_size);

// Reads and checks the step against the view's contract and config (layer, head and head_dim
// sizes of the pool). Each request's new tokens come from its "tokens" input (in a columnar step,
// its rows of the stacked one). Throws
// mstar::sdk::Error naming the view tensor that breaks the contract.
PagedBatch ReadPagedBatch(const mstar_host_api_t* host, const mstar::sdk::Step& step,
                          const std::string& label, const LmConfig& config, at::Device device);

// "resource 'label' view tensor 'name'", how errors name a view tensor.
std::string What(const std::string& label, const char* name);
// Throws mstar::sdk::InvalidArgument unless the view tensor lives on the model's device (the
// pool is written in place, so a copy would lose the writes; a captured step reads no host
// memory).
void RequireViewOn(const at::Tensor& t, at::Device device, const std::string& label,
                   const char* name);
// Throws mstar::sdk::InvalidArgument unless kv_pool (the view tensor of resource `label`) is a
// float32 [pages, num_layers, 2, page_size, num_kv_heads, head_dim] pool for the model `config`.
// The message names each mismatch by the kv_paged config key that sizes it
// (resources.<label>.config.layers, kv_heads, head_dim, dtype) and the model's value.
void CheckKvPool(const at::Tensor& kv_pool, const std::string& label, const LmConfig& config);

}  // namespace tiny_lm

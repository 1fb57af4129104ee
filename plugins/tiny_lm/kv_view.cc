// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "kv_view.h"

#include <algorithm>
#include <vector>

#include "mstar/sdk/torch.hpp"

namespace tiny_lm {
namespace {

using mstar::sdk::InvalidArgument;
std::string ShapeString(at::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The view tensor called name, checked for dtype and shape (-1 in shape: any size).
at::Tensor ViewTensor(const mstar_host_api_t* host, const mstar::sdk::TensorMapView& view,
                      const std::string& label, const char* name, at::ScalarType type,
                      const std::vector<int64_t>& shape) {
  mstar::sdk::TensorView v = view.get(name);
  const std::string what = "resource '" + label + "' view tensor '" + name + "'";
  if (!v.valid()) throw mstar::sdk::NotFound(what + " is missing");
  at::Tensor t = mstar::sdk::ToTorch(host, v);
  if (t.scalar_type() != type) {
    throw InvalidArgument(what + " has dtype " + c10::toString(t.scalar_type()) + ", expected " +
                          c10::toString(type));
  }
  bool ok = t.dim() == static_cast<int64_t>(shape.size());
  for (size_t i = 0; ok && i < shape.size(); ++i) ok = shape[i] < 0 || t.size(i) == shape[i];
  if (!ok) {
    throw InvalidArgument(what + " has shape " + ShapeString(t.sizes()) + ", expected " +
                          ShapeString(shape) + " (-1: any)");
  }
  return t;
}

}  // namespace

PagedBatch ReadPagedBatch(const mstar_host_api_t* host, const mstar::sdk::Step& step,
                          const std::string& label, const LmConfig& c, at::Device device) {
  const mstar::sdk::TensorMapView view = step.resource(label);
  const int64_t b_count = step.size();
  PagedBatch batch;
  batch.kv_pool = ViewTensor(host, view, label, "kv_pool", at::kFloat,
                             {c.num_layers, 2, -1, -1, c.num_kv_heads, c.head_dim});
  if (!batch.kv_pool.is_contiguous())
    throw InvalidArgument("resource '" + label + "' view tensor 'kv_pool' must be contiguous");
  if (view.get("kv_pool").read_only())
    throw InvalidArgument("resource '" + label + "' view tensor 'kv_pool' is read-only");
  const int64_t num_pages = batch.kv_pool.size(2);
  batch.page_size = batch.kv_pool.size(3);
  at::Tensor table =
      ViewTensor(host, view, label, "block_table", at::kInt, {b_count, -1}).to(at::kCPU);
  at::Tensor context =
      ViewTensor(host, view, label, "context_lens", at::kInt, {b_count}).to(at::kCPU);
  at::Tensor qs =
      ViewTensor(host, view, label, "query_start", at::kInt, {b_count + 1}).to(at::kCPU);
  at::Tensor cached = ViewTensor(host, view, label, "cached", at::kInt, {b_count}).to(at::kCPU);
  const int64_t total = qs[b_count].item<int64_t>();
  at::Tensor slots = ViewTensor(host, view, label, "slot_mapping", at::kLong, {total}).to(at::kCPU);
  at::Tensor positions =
      ViewTensor(host, view, label, "positions", at::kLong, {total}).to(at::kCPU);

  const auto q = qs.accessor<int32_t, 1>();
  const auto ctx = context.accessor<int32_t, 1>();
  const auto hit = cached.accessor<int32_t, 1>();
  const auto pos = positions.accessor<int64_t, 1>();
  const auto slot = slots.accessor<int64_t, 1>();
  const auto tab = table.accessor<int32_t, 2>();
  const std::string where = "resource '" + label + "' view: ";
  std::vector<at::Tensor> tokens;
  std::vector<int64_t> rows;  // indices into the T new tokens
  if (q[0] != 0) throw InvalidArgument(where + "query_start[0] is " + std::to_string(q[0]));
  for (int64_t b = 0; b < b_count; ++b) {
    const int64_t begin = q[b], end = q[b + 1], n = end - begin;
    const std::string req = "request " + std::to_string(b) + ": ";
    at::Tensor input = mstar::sdk::ToTorch(host, step.inputs(b).require("tokens"));
    if (n < 1 || input.dim() != 1 || input.size(0) != n) {
      throw InvalidArgument(where + req + "query_start gives " + std::to_string(n) +
                            " new tokens, its 'tokens' input has " + std::to_string(input.numel()));
    }
    if (input.scalar_type() != at::kLong) throw InvalidArgument(req + "'tokens' must be int64");
    const int64_t skip = std::min<int64_t>(std::max<int32_t>(hit[b], 0), n - 1);
    const int64_t len = ctx[b];
    if (pos[end - 1] + 1 > len || len > c.max_position_embeddings) {
      throw InvalidArgument(where + req + "context_lens " + std::to_string(len) +
                            " does not cover position " + std::to_string(pos[end - 1]) +
                            " or exceeds max_position_embeddings " +
                            std::to_string(c.max_position_embeddings));
    }
    const int64_t num = (len + batch.page_size - 1) / batch.page_size;
    if (num > table.size(1)) {
      throw InvalidArgument(where + req + "context_lens " + std::to_string(len) + " needs " +
                            std::to_string(num) + " pages, block_table has " +
                            std::to_string(table.size(1)));
    }
    for (int64_t k = 0; k < num; ++k) {
      if (tab[b][k] < 0 || tab[b][k] >= num_pages) {
        throw InvalidArgument(where + req + "block_table names a page outside [0, " +
                              std::to_string(num_pages) + ")");
      }
    }
    batch.max_pages = std::max(batch.max_pages, num);
    for (int64_t t = begin + skip; t < end; ++t) {
      if (slot[t] < 0 || slot[t] >= num_pages * batch.page_size)
        throw InvalidArgument(where + req + "slot_mapping[" + std::to_string(t) +
                              "] is outside the pool");
      rows.push_back(t);
    }
    RequestRows r;
    r.row_begin = static_cast<int64_t>(rows.size()) - (n - skip);
    r.rows = n - skip;
    r.context_len = len;
    r.num_pages = num;
    batch.requests.push_back(std::move(r));
    tokens.push_back(input.narrow(0, skip, n - skip));
  }
  std::vector<int64_t> pages(static_cast<size_t>(b_count * batch.max_pages), 0);
  for (int64_t b = 0; b < b_count; ++b) {
    for (int64_t k = 0; k < batch.requests[static_cast<size_t>(b)].num_pages; ++k)
      pages[static_cast<size_t>(b * batch.max_pages + k)] = tab[b][k];
  }
  batch.page_table = at::tensor(pages, at::kLong).view({b_count, batch.max_pages}).to(device);
  at::Tensor index = at::tensor(rows, at::kLong);
  batch.tokens = at::cat(tokens).to(device);
  batch.positions = positions.index_select(0, index).to(device);
  batch.slots = slots.index_select(0, index).to(device);
  return batch;
}

}  // namespace tiny_lm

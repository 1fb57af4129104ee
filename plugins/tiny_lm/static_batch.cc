// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "static_batch.h"

#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include "mstar/sdk/torch.hpp"

namespace tiny_lm {
namespace {

using mstar::sdk::InvalidArgument;

// The view tensor called name, checked for being on device, for dtype, rank and a first dimension
// of at least rows (-1: any); only the leading rows are returned.
at::Tensor Rows(const mstar_host_api_t* host, const mstar::sdk::TensorMapView& view,
                const std::string& label, const char* name, at::ScalarType type, int64_t ndim,
                int64_t rows, at::Device device) {
  mstar::sdk::TensorView v = view.get(name);
  if (!v.valid()) throw mstar::sdk::NotFound(What(label, name) + " is missing");
  at::Tensor t = mstar::sdk::ToTorch(host, v);
  if (std::string_view(name) != "kv_pool" && t.device().is_cpu() && !device.is_cpu()) {
    // The pool is on the device (checked first), its slot views are not: the resource was not
    // told the captured context width.
    throw InvalidArgument(What(label, name) + " is in host memory, but a captured step on " +
                          device.str() + " reads device buffers only: resource '" + label +
                          "' plans device views for capture slots once it knows the captured "
                          "context width (kv_paged: resources." +
                          label + ".config.capture_context)");
  }
  RequireViewOn(t, device, label, name);
  if (t.scalar_type() != type || t.dim() != ndim || (rows >= 0 && t.size(0) < rows)) {
    throw InvalidArgument(What(label, name) + " has dtype " + c10::toString(t.scalar_type()) +
                          " and " + std::to_string(t.dim()) + " dimensions (first " +
                          std::to_string(t.dim() > 0 ? t.size(0) : 0) +
                          "); a captured step needs " + c10::toString(type) + ", " +
                          std::to_string(ndim) + " dimensions, " + std::to_string(rows) +
                          " rows or more");
  }
  return rows >= 0 ? t.narrow(0, 0, rows) : t;
}

}  // namespace

PagedBatch ReadStaticBatch(const mstar_host_api_t* host, const mstar::sdk::Step& step,
                           const std::string& label, const LmConfig& c, at::Device device) {
  const int64_t rows = SlotRows(step);
  std::vector<at::Tensor> tokens;
  tokens.reserve(static_cast<size_t>(rows));
  for (uint32_t i = 0; i < rows; ++i) {
    mstar::sdk::TensorView input = step.inputs(i).require("tokens");
    if (input.numel() != 1) {
      throw InvalidArgument("row " + std::to_string(i) + " of a captured step has " +
                            std::to_string(input.numel()) +
                            " new tokens; captured steps take one per row (decode)");
    }
    tokens.push_back(mstar::sdk::ToTorch(host, input).reshape({1}));
  }
  const mstar::sdk::TensorMapView view = step.resource(label);
  PagedBatch batch;
  batch.kv_pool = Rows(host, view, label, "kv_pool", at::kFloat, 6, -1, device);
  CheckKvPool(batch.kv_pool, label, c);
  if (!batch.kv_pool.is_contiguous())
    throw InvalidArgument(What(label, "kv_pool") + " must be contiguous");
  if (view.get("kv_pool").read_only())  // the forward writes the step's K/V into it
    throw InvalidArgument(What(label, "kv_pool") + " is read-only");
  batch.page_size = batch.kv_pool.size(3);
  const int64_t page_size = batch.page_size;
  at::Tensor table = Rows(host, view, label, "block_table", at::kInt, 2, rows, device);
  at::Tensor lens = Rows(host, view, label, "context_lens", at::kInt, 1, rows, device);
  batch.slots = PoolRows(Rows(host, view, label, "slot_mapping", at::kLong, 1, rows, device),
                         page_size, c.num_layers);
  batch.positions = Rows(host, view, label, "positions", at::kLong, 1, rows, device);
  batch.tokens = at::cat(tokens).to(device);

  const int64_t width = table.size(1) * page_size;
  const at::TensorOptions longs = at::TensorOptions().dtype(at::kLong).device(device);
  at::Tensor k = at::arange(width, longs);  // context position
  at::Tensor pages = table.to(at::kLong).index_select(1, at::div(k, page_size, "floor"));
  at::Tensor visible = k.unsqueeze(0) < lens.to(at::kLong).unsqueeze(1);  // [rows, width]
  // Positions past a row's context read its own new token's slot (written before attention, so
  // finite) and are masked out.
  at::Tensor k_rows = at::where(
      visible,
      PoolRows(pages.clamp_min(0) * page_size + k.remainder(page_size), page_size, c.num_layers),
      batch.slots.unsqueeze(1));
  AttentionGroup g;
  g.count = rows;
  g.max_rows = 1;
  g.max_ctx = width;
  g.context_rows = at::cat({k_rows.reshape({-1}), k_rows.reshape({-1}) + page_size});
  g.bias = at::where(visible, at::zeros({}, longs.dtype(at::kFloat)),
                     at::full({}, -std::numeric_limits<float>::infinity(), longs.dtype(at::kFloat)))
               .view({rows, 1, width});
  batch.groups.push_back(std::move(g));
  batch.requests.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) batch.requests[static_cast<size_t>(r)] = {r, 1, 0};
  batch.max_ctx = width;
  batch.max_position = c.max_position_embeddings - 1;
  return batch;
}

}  // namespace tiny_lm

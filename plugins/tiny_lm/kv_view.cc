// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "kv_view.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "attention_groups.h"
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
  if (!v.valid()) throw mstar::sdk::NotFound(What(label, name) + " is missing");
  at::Tensor t = mstar::sdk::ToTorch(host, v);
  if (t.scalar_type() != type) {
    throw InvalidArgument(What(label, name) + " has dtype " + c10::toString(t.scalar_type()) +
                          ", expected " + c10::toString(type));
  }
  bool ok = t.dim() == static_cast<int64_t>(shape.size());
  for (size_t i = 0; ok && i < shape.size(); ++i) ok = shape[i] < 0 || t.size(i) == shape[i];
  if (!ok) {
    throw InvalidArgument(What(label, name) + " has shape " + ShapeString(t.sizes()) +
                          ", expected " + ShapeString(shape) + " (-1: any)");
  }
  return t;
}

// Host copy of a view tensor, read through an accessor.
at::Tensor HostViewTensor(const mstar_host_api_t* host, const mstar::sdk::TensorMapView& view,
                          const std::string& label, const char* name, at::ScalarType type,
                          const std::vector<int64_t>& shape) {
  return ViewTensor(host, view, label, name, type, shape).to(at::kCPU);
}

// Appends request b's n new tokens (its "tokens" input, or its rows of the columnar one) to out.
void AppendTokens(const mstar_host_api_t* host, const mstar::sdk::Step& step, uint32_t b, int64_t n,
                  const std::string& where, std::vector<int64_t>* out) {
  const bool columnar = step.columnar();
  mstar::sdk::TensorView input =
      columnar ? step.columnar_inputs().require("tokens") : step.inputs(b).require("tokens");
  const mstar::sdk::RowSpans spans = step.input_rows("tokens");
  const int64_t begin = columnar ? spans.begin(b) : 0;
  const int64_t count = columnar ? spans.count(b) : (input.ndim() == 1 ? input.size(0) : -1);
  const DLDevice device = input.device();
  const bool host_memory = device.device_type == kDLCPU || device.device_type == kDLCUDAHost;
  if (input.ndim() != 1 || count != n) {
    throw InvalidArgument(where + "request " + std::to_string(b) + ": query_start gives " +
                          std::to_string(n) + " new tokens, its 'tokens' input has " +
                          std::to_string(input.ndim() == 1 ? count : input.numel()));
  }
  if (!mstar::sdk::SameDType(input.dtype(), mstar::sdk::DTypeOf<int64_t>()))
    throw InvalidArgument("request " + std::to_string(b) + ": 'tokens' must be int64");
  if (host_memory && input.contiguous()) {
    const int64_t* data = input.data<int64_t>() + begin;
    out->insert(out->end(), data, data + n);
    return;
  }
  at::Tensor t = mstar::sdk::ToTorch(host, input).to(at::kCPU).contiguous();
  out->insert(out->end(), t.data_ptr<int64_t>() + begin, t.data_ptr<int64_t>() + begin + n);
}

// The vectors as int64 tensors on device: views of one buffer moved there with one copy (a copy
// from pageable memory waits for the stream: one wait, not one per vector).
std::vector<at::Tensor> LongTensors(const std::vector<const std::vector<int64_t>*>& parts,
                                    at::Device device) {
  int64_t total = 0;
  for (const std::vector<int64_t>* part : parts) total += static_cast<int64_t>(part->size());
  at::Tensor buffer = at::empty({total}, at::kLong);
  int64_t* out = buffer.data_ptr<int64_t>();
  for (const std::vector<int64_t>* part : parts) out = std::copy(part->begin(), part->end(), out);
  buffer = buffer.to(device);
  std::vector<at::Tensor> views;
  int64_t begin = 0;
  for (const std::vector<int64_t>* part : parts) {
    const auto n = static_cast<int64_t>(part->size());
    views.push_back(buffer.narrow(0, begin, n));
    begin += n;
  }
  return views;
}

// The host side of a step's padded attention layout (PagedBatch::groups): every group's index
// vectors and bias, back to back in group order.
struct HostLayout {
  std::vector<AttentionGroupPlan> plans;
  std::vector<int64_t> context_rows;  // each group's K rows, then its V rows
  std::vector<int64_t> q_rows;        // empty: one group of one row per request
  std::vector<int64_t> out_rows;      // empty: the padded rows are the packed rows in order
  std::vector<float> bias;
};

// Groups the requests (attention_groups.h) and lays each group out. row_pos and row_slot: each
// packed row's position and PoolRow; tab: the block tables.
HostLayout PlanLayout(const std::vector<RequestRows>& requests, const std::vector<int64_t>& row_pos,
                      const std::vector<int64_t>& row_slot,
                      const at::TensorAccessor<int32_t, 2>& tab, int64_t page_size,
                      int64_t layers) {
  std::vector<AttentionShape> shapes;
  for (const RequestRows& r : requests) shapes.push_back({r.rows, r.context_len});
  HostLayout layout;
  layout.plans = GroupForAttention(shapes);
  const bool q_in_place = layout.plans.size() == 1 && layout.plans[0].max_rows == 1;
  std::vector<int64_t> place(row_pos.size());  // each packed row's padded row
  const float blocked = -std::numeric_limits<float>::infinity();
  int64_t padded_before = 0;
  for (const AttentionGroupPlan& plan : layout.plans) {
    const int64_t width = plan.max_context, rows_per = plan.max_rows;
    const auto count = static_cast<int64_t>(plan.members.size());
    const size_t base = layout.context_rows.size();
    layout.context_rows.resize(base + static_cast<size_t>(2 * count * width));
    for (int64_t j = 0; j < count; ++j) {
      const int64_t b = plan.members[static_cast<size_t>(j)];
      const RequestRows& r = requests[static_cast<size_t>(b)];
      const int64_t last = r.row_begin + r.rows - 1;
      int64_t* k_rows = &layout.context_rows[base + static_cast<size_t>(j * width)];
      int64_t* v_rows = k_rows + count * width;
      for (int64_t k = 0; k < width; ++k) {
        k_rows[k] = k < r.context_len ? PoolRow(tab[b][k / page_size] * page_size + k % page_size,
                                                page_size, layers)
                                      : row_slot[static_cast<size_t>(last)];
        v_rows[k] = k_rows[k] + page_size;
      }
      for (int64_t i = 0; i < rows_per; ++i) {
        const int64_t row = r.row_begin + std::min(i, r.rows - 1);
        const int64_t visible = std::min(row_pos[static_cast<size_t>(row)] + 1, r.context_len);
        layout.bias.insert(layout.bias.end(), static_cast<size_t>(visible), 0.0f);
        layout.bias.insert(layout.bias.end(), static_cast<size_t>(width - visible), blocked);
        if (!q_in_place) layout.q_rows.push_back(row);
      }
      for (int64_t i = 0; i < r.rows; ++i)
        place[static_cast<size_t>(r.row_begin + i)] = padded_before + j * rows_per + i;
    }
    padded_before += count * rows_per;
  }
  // The padded rows are the packed rows only when there are as many and each is in its place
  // (padding after the last request's rows would pass the second test alone).
  bool in_place = padded_before == static_cast<int64_t>(place.size());
  for (size_t i = 0; in_place && i < place.size(); ++i)
    in_place = place[i] == static_cast<int64_t>(i);
  if (!in_place) layout.out_rows = std::move(place);
  return layout;
}

}  // namespace

std::string What(const std::string& label, const char* name) {
  return "resource '" + label + "' view tensor '" + name + "'";
}

void RequireViewOn(const at::Tensor& t, at::Device device, const std::string& label,
                   const char* name) {
  if (t.device() == device) return;
  throw InvalidArgument(What(label, name) + " is on " + t.device().str() +
                        " but the model runs on " + device.str() + "; place resource '" + label +
                        "' on the model's device (resources." + label + ".device)");
}

void CheckKvPool(const at::Tensor& kv_pool, const std::string& label, const LmConfig& config) {
  std::string problems;
  // "layers 3, the model's 2 (num_hidden_layers in config.json): set resources.kv.config.layers
  // = 2"
  auto mismatch = [&](const std::string& what, const std::string& has, const std::string& model,
                      const std::string& source, const std::string& config_key) {
    problems += (problems.empty() ? "" : "; ") + what + " " + has + ", the model's " + model +
                " (" + source + "): set resources." + label + ".config." + config_key + " = " +
                model;
  };
  if (kv_pool.scalar_type() != at::kFloat) {
    mismatch("dtype", c10::toString(kv_pool.scalar_type()), "\"float32\"",
             "tiny_lm computes in float32", "dtype");
  }
  if (kv_pool.dim() != 6 || kv_pool.size(2) != 2) {
    problems += std::string(problems.empty() ? "" : "; ") +
                "not a [pages, layers, 2, page_size, kv_heads, head_dim] pool (kv_paged's)";
  } else {
    auto dim = [&](int64_t i, const char* what, int64_t model, const char* source,
                   const char* config_key) {
      if (kv_pool.size(i) != model)
        mismatch(what, std::to_string(kv_pool.size(i)), std::to_string(model), source, config_key);
    };
    dim(1, "layers", config.num_layers, "num_hidden_layers in config.json", "layers");
    dim(4, "KV heads", config.num_kv_heads, "num_key_value_heads in config.json, per rank",
        "kv_heads");
    dim(5, "head_dim", config.head_dim, "head_dim in config.json", "head_dim");
  }
  if (!problems.empty()) {
    throw InvalidArgument(What(label, "kv_pool") + " has shape " + ShapeString(kv_pool.sizes()) +
                          ", which does not fit the model: " + problems);
  }
}

at::Tensor PoolRows(const at::Tensor& slots, int64_t page_size, int64_t layers) {
  return at::div(slots, page_size, "floor") * (2 * layers * page_size) + slots.remainder(page_size);
}

at::Tensor LayerRows(const at::Tensor& kv_pool, int64_t layer, int64_t page_size) {
  at::Tensor rows = kv_pool.view({-1, kv_pool.size(4) * kv_pool.size(5)});
  const int64_t first = 2 * layer * page_size;
  return rows.narrow(0, first, rows.size(0) - first);
}

PagedBatch ReadPagedBatch(const mstar_host_api_t* host, const mstar::sdk::Step& step,
                          const std::string& label, const LmConfig& c, at::Device device) {
  const mstar::sdk::TensorMapView view = step.resource(label);
  const int64_t b_count = step.size();
  PagedBatch batch;
  const mstar::sdk::TensorView pool = view.get("kv_pool");
  if (!pool.valid()) throw mstar::sdk::NotFound(What(label, "kv_pool") + " is missing");
  batch.kv_pool = mstar::sdk::ToTorch(host, pool);
  CheckKvPool(batch.kv_pool, label, c);
  RequireViewOn(batch.kv_pool, device, label, "kv_pool");
  if (!batch.kv_pool.is_contiguous())
    throw InvalidArgument(What(label, "kv_pool") + " must be contiguous");
  if (view.get("kv_pool").read_only())
    throw InvalidArgument(What(label, "kv_pool") + " is read-only");
  const int64_t num_pages = batch.kv_pool.size(0);
  batch.page_size = batch.kv_pool.size(3);
  const int64_t page_size = batch.page_size;
  // A view planned for a capture slot has padding rows after the step's (kv_paged's); a step
  // that then ran eagerly reads only its own rows.
  auto leading = [&](at::Tensor t, const char* name, int64_t rows) {
    if (t.size(0) < rows) {
      throw InvalidArgument(What(label, name) + " has " + std::to_string(t.size(0)) +
                            " rows; the step needs " + std::to_string(rows));
    }
    return t.narrow(0, 0, rows);
  };
  at::Tensor table = leading(HostViewTensor(host, view, label, "block_table", at::kInt, {-1, -1}),
                             "block_table", b_count);
  at::Tensor context = leading(HostViewTensor(host, view, label, "context_lens", at::kInt, {-1}),
                               "context_lens", b_count);
  at::Tensor qs = leading(HostViewTensor(host, view, label, "query_start", at::kInt, {-1}),
                          "query_start", b_count + 1);
  at::Tensor cached =
      leading(HostViewTensor(host, view, label, "cached", at::kInt, {-1}), "cached", b_count);
  const int64_t total = qs[b_count].item<int64_t>();
  at::Tensor slots = leading(HostViewTensor(host, view, label, "slot_mapping", at::kLong, {-1}),
                             "slot_mapping", total);
  at::Tensor positions =
      leading(HostViewTensor(host, view, label, "positions", at::kLong, {-1}), "positions", total);

  const auto q = qs.accessor<int32_t, 1>();
  const auto ctx = context.accessor<int32_t, 1>();
  const auto hit = cached.accessor<int32_t, 1>();
  const auto pos = positions.accessor<int64_t, 1>();
  const auto slot = slots.accessor<int64_t, 1>();
  const auto tab = table.accessor<int32_t, 2>();
  const std::string where = "resource '" + label + "' view: ";
  auto fail = [&](int64_t b, const std::string& message) {
    throw InvalidArgument(where + "request " +
                          std::to_string(step.request(static_cast<uint32_t>(b)).id()) + " (row " +
                          std::to_string(b) + " of the step): " + message);
  };
  std::vector<int64_t> tokens, rows;  // rows: indices into the T new tokens
  tokens.reserve(static_cast<size_t>(total));
  rows.reserve(static_cast<size_t>(total));
  if (q[0] != 0) throw InvalidArgument(where + "query_start[0] is " + std::to_string(q[0]));
  for (int64_t b = 0; b < b_count; ++b) {
    const int64_t begin = q[b], end = q[b + 1], n = end - begin;
    if (n < 1) fail(b, "query_start gives " + std::to_string(n) + " new tokens");
    const int64_t skip = std::min<int64_t>(std::max<int32_t>(hit[b], 0), n - 1);
    const int64_t len = ctx[b];
    if (len < n) {  // so every position checked below is at least 0
      fail(b, "context_lens " + std::to_string(len) + " is shorter than its " + std::to_string(n) +
                  " new tokens");
    }
    if (len > c.max_position_embeddings) {
      fail(b, "its context of " + std::to_string(len) +
                  " tokens exceeds the model's max_position_embeddings (" +
                  std::to_string(c.max_position_embeddings) + ")");
    }
    if (pos[end - 1] + 1 != len) {  // the context ends with the step's last token
      fail(b, "context_lens " + std::to_string(len) + " is not its last position + 1 (" +
                  std::to_string(pos[end - 1] + 1) + ")");
    }
    const int64_t num = (len + page_size - 1) / page_size;
    if (num > table.size(1)) {
      fail(b, "context_lens " + std::to_string(len) + " needs " + std::to_string(num) +
                  " pages, block_table has " + std::to_string(table.size(1)));
    }
    for (int64_t k = 0; k < num; ++k) {
      if (tab[b][k] < 0 || tab[b][k] >= num_pages)
        fail(b, "block_table names a page outside [0, " + std::to_string(num_pages) + ")");
    }
    for (int64_t t = begin + skip; t < end; ++t) {
      // The step's tokens are the last of its context, one position each: a skipped or repeated
      // position would leave a slot attention reads unwritten.
      if (pos[t] != len - (end - t)) {
        fail(b, "positions[" + std::to_string(t) + "] is " + std::to_string(pos[t]) + ", not " +
                    std::to_string(len - (end - t)) +
                    " (the step's tokens end its context, one position each)");
      }
      // A token's K/V go to the slot its own page holds for its position, which attention then
      // reads through block_table: any other slot writes another request's cache.
      const int64_t own = int64_t{tab[b][pos[t] / page_size]} * page_size + pos[t] % page_size;
      if (slot[t] != own) {
        fail(b, "slot_mapping[" + std::to_string(t) + "] is " + std::to_string(slot[t]) +
                    ", not the slot block_table gives position " + std::to_string(pos[t]) + " (" +
                    std::to_string(own) + ")");
      }
      rows.push_back(t);
    }
    const size_t first = tokens.size();
    AppendTokens(host, step, static_cast<uint32_t>(b), n, where, &tokens);
    tokens.erase(tokens.begin() + static_cast<std::ptrdiff_t>(first),
                 tokens.begin() + static_cast<std::ptrdiff_t>(first + static_cast<size_t>(skip)));
    RequestRows r;
    r.row_begin = static_cast<int64_t>(rows.size()) - (n - skip);
    r.rows = n - skip;
    r.context_len = len;
    batch.requests.push_back(r);
    batch.max_ctx = std::max(batch.max_ctx, len);
  }

  std::vector<int64_t> row_pos(rows.size()), row_slot(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    row_pos[i] = pos[rows[i]];
    row_slot[i] = PoolRow(slot[rows[i]], page_size, c.num_layers);
    batch.max_position = std::max(batch.max_position, row_pos[i]);
  }
  HostLayout layout = PlanLayout(batch.requests, row_pos, row_slot, tab, page_size, c.num_layers);
  std::vector<int64_t> last_rows;
  for (const RequestRows& r : batch.requests) last_rows.push_back(r.row_begin + r.rows - 1);
  const bool reorder = !layout.out_rows.empty(), last_only = rows.size() > batch.requests.size();
  std::vector<const std::vector<int64_t>*> parts{&tokens, &row_pos, &row_slot, &layout.context_rows,
                                                 &layout.q_rows};
  if (reorder) parts.push_back(&layout.out_rows);
  if (last_only) parts.push_back(&last_rows);
  std::vector<at::Tensor> moved = LongTensors(parts, device);
  batch.tokens = moved[0];
  batch.positions = moved[1];
  batch.slots = moved[2];
  if (reorder) batch.out_rows = moved[5];
  if (last_only) batch.last_rows = moved.back();
  at::Tensor bias = at::tensor(layout.bias, at::kFloat).to(device);
  int64_t context_at = 0, q_at = 0, bias_at = 0;
  for (const AttentionGroupPlan& plan : layout.plans) {
    AttentionGroup g;
    g.count = static_cast<int64_t>(plan.members.size());
    g.max_rows = plan.max_rows;
    g.max_ctx = plan.max_context;
    g.context_rows = moved[3].narrow(0, context_at, 2 * g.count * g.max_ctx);
    context_at += 2 * g.count * g.max_ctx;
    g.bias = bias.narrow(0, bias_at, g.count * g.max_rows * g.max_ctx)
                 .view({g.count, g.max_rows, g.max_ctx});
    bias_at += g.count * g.max_rows * g.max_ctx;
    if (!layout.q_rows.empty()) {
      g.q_rows = moved[4].narrow(0, q_at, g.count * g.max_rows);
      q_at += g.count * g.max_rows;
    }
    batch.groups.push_back(std::move(g));
  }
  return batch;
}

}  // namespace tiny_lm

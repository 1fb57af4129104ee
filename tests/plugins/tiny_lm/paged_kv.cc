// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "plugins/tiny_lm/paged_kv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace mstar::test {
namespace {

constexpr DLDevice kCpu{kDLCPU, 0};

template <typename T>
mstar_tensor_t* FromValues(const std::vector<T>& values, std::vector<int64_t> shape) {
  DLDataType type =
      std::is_same_v<T, int32_t> ? DLDataType{kDLInt, 32, 1} : DLDataType{kDLInt, 64, 1};
  mstar_tensor_t* t = AllocateTensor(nullptr, kCpu, type, shape).value();
  if (!values.empty()) std::memcpy(t->dl.data, values.data(), values.size() * sizeof(T));
  return t;
}

}  // namespace

PagedKv::PagedKv(int64_t layers, int64_t kv_heads, int64_t head_dim, int64_t num_pages,
                 int64_t page_size)
    : layers_(layers),
      kv_heads_(kv_heads),
      head_dim_(head_dim),
      num_pages_(num_pages),
      page_size_(page_size) {
  pool_ = AllocateTensor(nullptr, kCpu, DLDataType{kDLFloat, 32, 1},
                         {num_pages, layers, 2, page_size, kv_heads, head_dim})
              .value();
  // NaN everywhere: a read of a slot nobody wrote poisons the logits.
  auto* p = static_cast<float*>(pool_->dl.data);
  std::fill(p, p + TensorNumElements(pool_->dl), std::numeric_limits<float>::quiet_NaN());
  // Pages handed out in a scrambled order: 7 * i mod num_pages, a permutation unless 7 divides
  // num_pages.
  if (num_pages % 7 == 0)
    throw std::invalid_argument("PagedKv: num_pages must not be a multiple of 7");
  for (int64_t i = 0; i < num_pages; ++i)
    free_.push_back(static_cast<int32_t>((7 * i) % num_pages));
}

PagedKv::~PagedKv() {
  ReleaseTensor(pool_);
}

TensorMapPtr PagedKv::Plan(const std::vector<Entry>& entries) {
  const int64_t b = static_cast<int64_t>(entries.size());
  size_t max_pages = 0;
  for (const Entry& e : entries) {
    Sequence& s = sequences_[e.id];
    int64_t needed = (s.length + e.new_tokens + page_size_ - 1) / page_size_;
    while (static_cast<int64_t>(s.pages.size()) < needed) {
      if (free_.empty()) throw std::runtime_error("PagedKv: out of pages");
      s.pages.push_back(free_.front());
      free_.erase(free_.begin());
    }
    max_pages = std::max(max_pages, s.pages.size());
  }
  std::vector<int32_t> table(static_cast<size_t>(b) * max_pages, -1), lens, starts{0}, cached;
  std::vector<int64_t> slots, positions;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    const Sequence& s = sequences_[e.id];
    std::copy(s.pages.begin(), s.pages.end(), table.begin() + static_cast<int64_t>(i * max_pages));
    lens.push_back(static_cast<int32_t>(s.length + e.new_tokens));
    starts.push_back(starts.back() + static_cast<int32_t>(e.new_tokens));
    cached.push_back(static_cast<int32_t>(e.cached));
    for (int64_t pos = s.length; pos < s.length + e.new_tokens; ++pos) {
      slots.push_back(s.pages[static_cast<size_t>(pos / page_size_)] * page_size_ +
                      pos % page_size_);
      positions.push_back(pos);
    }
  }
  const int64_t t = static_cast<int64_t>(slots.size());
  TensorMapPtr view = NewTensorMap();
  EXPECT_TRUE(view->Append("kv_pool", ShareTensor(pool_).value()).ok());
  EXPECT_TRUE(
      view->Append("block_table", FromValues(table, {b, static_cast<int64_t>(max_pages)})).ok());
  EXPECT_TRUE(view->Append("context_lens", FromValues(lens, {b})).ok());
  EXPECT_TRUE(view->Append("query_start", FromValues(starts, {b + 1})).ok());
  EXPECT_TRUE(view->Append("slot_mapping", FromValues(slots, {t})).ok());
  EXPECT_TRUE(view->Append("positions", FromValues(positions, {t})).ok());
  EXPECT_TRUE(view->Append("cached", FromValues(cached, {b})).ok());
  planned_ = entries;
  return view;
}

void PagedKv::Commit() {
  for (const Entry& e : planned_) sequences_[e.id].length += e.new_tokens;
  planned_.clear();
}

void PagedKv::SharePrefix(uint64_t from, uint64_t to, int64_t tokens) {
  const Sequence& source = sequences_.at(from);
  Sequence& target = sequences_[to];
  for (int64_t p = 0; p < tokens / page_size_; ++p) target.pages.push_back(source.pages[p]);
}

int64_t PagedKv::length(uint64_t id) const {
  auto it = sequences_.find(id);
  return it == sequences_.end() ? 0 : it->second.length;
}

}  // namespace mstar::test

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// PagedKv: the test's stand-in for a paged KV cache resource. It owns a KV pool and hands out
// pages in a scrambled order (so a request's pages are never contiguous), and builds the plan
// view tiny_lm reads (plugins/tiny_lm/kv_view.h) for one step, exactly as the contract states.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "host/tensor_objects.h"

namespace mstar::test {

class PagedKv {
 public:
  PagedKv(int64_t layers, int64_t kv_heads, int64_t head_dim, int64_t num_pages, int64_t page_size);
  ~PagedKv();
  PagedKv(const PagedKv&) = delete;
  PagedKv& operator=(const PagedKv&) = delete;

  struct Entry {
    uint64_t id = 0;
    int64_t new_tokens = 0;  // tokens the step adds
    int64_t cached = 0;      // leading new tokens already in the cache
  };
  // The view of a step over entries (in order); gives each request the pages it needs. Lengths
  // advance only with Commit.
  TensorMapPtr Plan(const std::vector<Entry>& entries);
  // The step planned last succeeded: every request's length grows by its new tokens.
  void Commit();
  // Makes `to` (new, empty) start with the first full pages of `from` covering tokens tokens.
  void SharePrefix(uint64_t from, uint64_t to, int64_t tokens);

  int64_t length(uint64_t id) const;
  int64_t page_size() const { return page_size_; }

 private:
  struct Sequence {
    std::vector<int32_t> pages;
    int64_t length = 0;
  };

  int64_t layers_, kv_heads_, head_dim_, num_pages_, page_size_;
  mstar_tensor_t* pool_ = nullptr;  // owned
  std::vector<int32_t> free_;
  std::map<uint64_t, Sequence> sequences_;
  std::vector<Entry> planned_;
};

}  // namespace mstar::test

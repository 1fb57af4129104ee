// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Moving: the fixture of the tests that move kv_paged's pages to tiers and back. Fill writes
// every new token's K/V the way a model would, with values that name the request, label,
// position, layer and head; Verify reads them back through a probe step.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "kv_fixture.h"

namespace mstar::kvtest {

// layers 2, kv_heads 2, head_dim 3: a page is 2 * 2 * 4 * 2 * 3 floats.
inline constexpr const char kCfg[] =
    "page_size = 4\nnum_pages = 8\nlayers = 2\nkv_heads = 2\nhead_dim = 3\n";
inline constexpr int kLayers = 2, kPages = 8, kPs = 4, kHeads = 2, kDim = 3;
inline constexpr uint64_t kPageBytes = uint64_t{kLayers} * 2 * kPs * kHeads * kDim * sizeof(float);

// Label l of a request gets values of its own (50000 apart), so labels that swapped pages show.
inline float Value(uint64_t request, int64_t pos, int layer, int kv, int h, int d,
                   size_t label = 0) {
  return static_cast<float>(request * 100000 + label * 50000 + pos * 100 + layer * 40 + kv * 20 +
                            h * 5 + d);
}

// The pool is page-major: [pages, layers, 2, page_size, kv_heads, head_dim].
inline float* Cell(const mstar_tensor_t* pool, int layer, int kv, int64_t slot, int h, int d) {
  auto* base = static_cast<float*>(pool->dl.data);
  int64_t page = slot / kPs, off = slot % kPs;
  return base + ((((page * kLayers + layer) * 2 + kv) * kPs + off) * kHeads + h) * kDim + d;
}

class Moving : public KvTest {
 protected:
  // Runs a step for r of n tokens and writes every new token's K/V the way a model would, in
  // each label named by its view prefix ("" for the first, "uncond." ...).
  void Fill(PluginInstance* kv, FakeRequest& r, uint32_t n,
            const std::vector<std::string>& labels = {""}) {
    ASSERT_EQ(Step(kv, {&r}, {n}), (std::vector<uint32_t>{0}));
    r.written += n;
    const mstar_tensor_t* pool = Get(*last_view_, "kv_pool");
    for (size_t label = 0; label < labels.size(); ++label) {
      std::vector<int64_t> slots = I64(*last_view_, labels[label] + "slot_mapping");
      std::vector<int64_t> positions = I64(*last_view_, labels[label] + "positions");
      for (size_t i = 0; i < slots.size(); ++i)
        for (int l = 0; l < kLayers; ++l)
          for (int k = 0; k < 2; ++k)
            for (int h = 0; h < kHeads; ++h)
              for (int d = 0; d < kDim; ++d)
                *Cell(pool, l, k, slots[i], h, d) =
                    Value(r.info.request_id, positions[i], l, k, h, d, label);
    }
  }
  // Checks that r holds as many tokens in each label as Fill wrote for it (on whichever
  // instance), and each against what Fill wrote; returns the mismatches (a length that differs
  // counts one; -1 when r cannot be stepped: it is offloaded).
  int Verify(PluginInstance* kv, FakeRequest& r, const std::vector<std::string>& labels = {""}) {
    TensorMapPtr keep = std::move(last_view_);
    std::vector<uint32_t> outcome = Step(kv, {&r}, {0}, {0});
    EXPECT_EQ(outcome.at(0), MSTAR_ADMIT_READY);
    int bad = outcome.at(0) == MSTAR_ADMIT_READY ? 0 : -1;
    for (size_t label = 0; label < labels.size() && bad == 0; ++label) {
      const mstar_tensor_t* pool = Get(*last_view_, "kv_pool");
      std::vector<int32_t> pages = I32(*last_view_, labels[label] + "block_table");
      const int32_t len = I32(*last_view_, labels[label] + "context_lens").at(0);
      if (len != r.written) {
        ADD_FAILURE() << "request " << r.info.request_id << " label '" << labels[label]
                      << "' holds " << len << " tokens; " << r.written << " were written";
        ++bad;
      }
      for (int64_t pos = 0; pos < len; ++pos) {
        int64_t slot = pages[static_cast<size_t>(pos / kPs)] * kPs + pos % kPs;
        for (int l = 0; l < kLayers; ++l)
          for (int k = 0; k < 2; ++k)
            for (int h = 0; h < kHeads; ++h)
              for (int d = 0; d < kDim; ++d)
                bad += *Cell(pool, l, k, slot, h, d) !=
                       Value(r.info.request_id, pos, l, k, h, d, label);
      }
    }
    last_view_ = std::move(keep);
    return bad;
  }
  uint64_t Offload(PluginInstance* kv, mstar_request_id_t id, uint64_t max_units = 0,
                   mstar_stream_t* stream = nullptr) {
    uint64_t reclaimed = 0;
    Status s = TakeStatus(T(kv)->offload(kv->self(), id, max_units, stream, &reclaimed));
    EXPECT_TRUE(s.ok()) << s.ToString();
    return reclaimed;
  }
  Status Reload(PluginInstance* kv, mstar_request_id_t id, uint32_t* done,
                mstar_stream_t* stream = nullptr) {
    return TakeStatus(T(kv)->reload(kv->self(), id, stream, done));
  }
  // Writes over the free pages: a request (id 99) takes tokens' worth of them (per label),
  // fills them and leaves.
  void OverwriteFreePages(PluginInstance* kv, uint32_t tokens,
                          const std::vector<std::string>& labels = {""}) {
    FakeRequest scribbler(99);
    ASSERT_TRUE(Add(kv, scribbler).ok());
    Fill(kv, scribbler, tokens, labels);
    T(kv)->remove_request(kv->self(), 99);
  }
  // Reloads each request in order on stream; each must complete.
  void ReloadEach(PluginInstance* kv, std::initializer_list<mstar_request_id_t> ids,
                  mstar_stream_t* stream) {
    for (mstar_request_id_t id : ids) {
      uint32_t done = 0;
      Status s = Reload(kv, id, &done, stream);
      EXPECT_TRUE(s.ok()) << s.ToString();
      EXPECT_EQ(done, 1u) << "request " << id;
    }
  }
  // A stream on the host device for kv's copies; the caller releases it.
  mstar_stream_t* HostStream(PluginInstance* kv) {
    mstar_stream_t* stream = nullptr;
    Status s =
        TakeStatus(kv->host()->stream_create(kv->context(), DLDevice{kDLCPU, 0}, 0, &stream));
    EXPECT_TRUE(s.ok()) << s.ToString();
    return stream;
  }
  bool Offloaded(PluginInstance* kv, mstar_request_id_t id) {
    uint32_t out = 0;
    EXPECT_TRUE(TakeStatus(T(kv)->is_offloaded(kv->self(), id, &out)).ok());
    return out != 0;
  }
};

}  // namespace mstar::kvtest

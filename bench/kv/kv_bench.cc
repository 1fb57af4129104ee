// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// kv_paged's hot bookkeeping, each beside a baseline measured in the same run:
//   kv.pool.*          PagePool operations (take a page, release it; share a cached page and let
//                      it go) against a bare std::vector free list; target <= 50 ns/op, and no
//                      heap allocation per op once warm (counted by replacing operator new here)
//   kv.prefix_hash.*   ChainHasher::Next per token at page sizes 16 and 64 against one raw
//                      SHA256() over the same bytes; target <= 15 ns/token
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include <openssl/sha.h>

#include "common/bench.h"
#include "page_pool.h"
#include "prefix_key.h"

namespace {

uint64_t g_allocations = 0;

}  // namespace

void* operator new(std::size_t size) {
  ++g_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

namespace mstar::bench {
namespace {

constexpr int32_t kPages = 4096;
constexpr int kBatch = 64;  // pages taken before they are released, like one request's growth

void PoolRows() {
  kv::PagePool pool(kPages);
  std::vector<int32_t> held(kBatch);
  std::vector<int32_t> free_list;
  free_list.reserve(kPages);
  for (int32_t p = kPages; p-- > 0;) free_list.push_back(p);
  std::vector<int32_t> refcount(kPages, 0);

  auto candidate = [&] {
    for (int i = 0; i < kBatch; ++i) held[static_cast<size_t>(i)] = pool.Allocate();
    for (int i = kBatch; i-- > 0;) pool.Unref(held[static_cast<size_t>(i)]);
    DoNotOptimize(held[0]);
  };
  auto baseline = [&] {
    for (int i = 0; i < kBatch; ++i) {
      int32_t p = free_list.back();
      free_list.pop_back();
      refcount[static_cast<size_t>(p)] = 1;
      held[static_cast<size_t>(i)] = p;
    }
    for (int i = kBatch; i-- > 0;) {
      int32_t p = held[static_cast<size_t>(i)];
      if (--refcount[static_cast<size_t>(p)] == 0) free_list.push_back(p);
    }
    DoNotOptimize(held[0]);
  };
  candidate();  // warm
  // Heap allocations in steady state, counted over a plain loop (the timing harness allocates).
  constexpr int kRounds = 10000;
  uint64_t before = g_allocations;
  for (int r = 0; r < kRounds; ++r) candidate();
  uint64_t allocations = g_allocations - before;
  auto [ns, base] = SideBySide(candidate, baseline, 2 * kBatch);
  Emit({"kv.pool.take_release", ns, "ns/op", base, "<= 50 ns/op"});

  // Shared prefix pages: a cached page gains a reference (leaving the LRU list) and loses it
  // (back to the LRU list's most recent end).
  for (int i = 0; i < kBatch; ++i) {
    held[static_cast<size_t>(i)] = pool.Allocate();
    pool.SetKeyed(held[static_cast<size_t>(i)]);
  }
  for (int i = kBatch; i-- > 0;) pool.Unref(held[static_cast<size_t>(i)]);
  auto share = [&] {
    for (int i = 0; i < kBatch; ++i) pool.Ref(held[static_cast<size_t>(i)]);
    for (int i = kBatch; i-- > 0;) pool.Unref(held[static_cast<size_t>(i)]);
    DoNotOptimize(held[0]);
  };
  before = g_allocations;
  for (int r = 0; r < kRounds; ++r) share();
  allocations += g_allocations - before;
  auto [share_ns, share_base] = SideBySide(share, baseline, 2 * kBatch);
  Emit({"kv.pool.share_cached", share_ns, "ns/op", share_base, "<= 50 ns/op"});
  Emit({"kv.pool.heap_allocations", static_cast<double>(allocations) / (4.0 * kRounds * kBatch),
        "allocations/op", 0, "0 in steady state"});
}

void HashRows(int page_size) {
  std::vector<int32_t> tokens(static_cast<size_t>(page_size) * 64);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(i * 2654435761u);
  kv::ChainHasher hasher;
  kv::PrefixKey root = kv::ChainRoot({"checkpoint", "salt", "", "main"});
  const size_t pages = tokens.size() / static_cast<size_t>(page_size);
  std::vector<uint8_t> bytes(32 + 4 * static_cast<size_t>(page_size));
  auto candidate = [&] {
    kv::PrefixKey key = root;
    for (size_t p = 0; p < pages; ++p)
      key = hasher.Next(key, tokens.data() + p * static_cast<size_t>(page_size),
                        static_cast<size_t>(page_size));
    DoNotOptimize(key.bytes[0]);
  };
  auto baseline = [&] {
    kv::PrefixKey key = root;
    for (size_t p = 0; p < pages; ++p) {
      std::memcpy(bytes.data(), key.bytes.data(), 32);
      std::memcpy(bytes.data() + 32, tokens.data() + p * static_cast<size_t>(page_size),
                  4 * static_cast<size_t>(page_size));
      SHA256(bytes.data(), bytes.size(), key.bytes.data());  // OpenSSL's one-shot call
    }
    DoNotOptimize(key.bytes[0]);
  };
  auto [ns, base] = SideBySide(candidate, baseline, tokens.size());
  Emit({"kv.prefix_hash.page" + std::to_string(page_size), ns, "ns/token", base, "<= 15 ns/token"});
}

}  // namespace
}  // namespace mstar::bench

int main() {
  mstar::bench::PoolRows();
  mstar::bench::HashRows(16);
  mstar::bench::HashRows(64);
  return 0;
}

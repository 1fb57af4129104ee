// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Prefix-cache keys: a SHA-256 hash chain over full pages. A chain starts at a root key that
// hashes the extra keys (checkpoint identity, tenant salt, sequence label), so two chains share
// a page key only when every extra key and every token before and inside the page match. Each
// page's key is SHA-256(parent key || the page's tokens as little-endian int32).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace mstar::kv {

struct PrefixKey {
  std::array<uint8_t, 32> bytes{};
  bool operator==(const PrefixKey& other) const { return bytes == other.bytes; }
  bool operator!=(const PrefixKey& other) const { return bytes != other.bytes; }
};

struct PrefixKeyHash {
  size_t operator()(const PrefixKey& key) const {
    uint64_t v = 0;
    std::memcpy(&v, key.bytes.data(), sizeof(v));  // a SHA-256 digest is already uniform
    return static_cast<size_t>(v);
  }
};

// The root of a chain: SHA-256 over a domain tag and each extra key, length-prefixed.
PrefixKey ChainRoot(const std::vector<std::string_view>& extra_keys);

// Hashes pages of tokens onto a chain (no allocation per page: little-endian hosts hash the
// tokens in place, others through a scratch buffer that grows once to the page size).
class ChainHasher {
 public:
  // The key of the page holding tokens[0, count) whose parent is parent.
  PrefixKey Next(const PrefixKey& parent, const int32_t* tokens, size_t count);

 private:
  std::vector<uint8_t> scratch_;
};

// SHA-256 of arbitrary bytes (digests of state, tier keys).
PrefixKey Sha256(const void* data, size_t size);

}  // namespace mstar::kv

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "prefix_key.h"

// OpenSSL 3's one-shot SHA256() fetches the algorithm from a provider on every call, which costs
// more than hashing a page of tokens; the low-level SHA256_Init/Update/Final (deprecated, still
// shipped by OpenSSL 3) hash the same bytes with the same result at the cost of the compression
// function alone. bench/kv/kv_bench.cc measures both.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

namespace mstar::kv {

PrefixKey Sha256(const void* data, size_t size) {
  PrefixKey key;
  SHA256_CTX context;
  SHA256_Init(&context);
  SHA256_Update(&context, data, size);
  SHA256_Final(key.bytes.data(), &context);
  return key;
}

PrefixKey ChainRoot(const std::vector<std::string_view>& extra_keys) {
  static constexpr std::string_view kTag = "mstar.kv_paged.chain.v1";
  std::vector<uint8_t> buffer(kTag.begin(), kTag.end());
  for (std::string_view extra : extra_keys) {
    uint64_t size = extra.size();
    for (int i = 0; i < 8; ++i) buffer.push_back(static_cast<uint8_t>(size >> (8 * i)));
    buffer.insert(buffer.end(), extra.begin(), extra.end());
  }
  return Sha256(buffer.data(), buffer.size());
}

PrefixKey ChainHasher::Next(const PrefixKey& parent, const int32_t* tokens, size_t count) {
  size_t size = parent.bytes.size() + count * 4;
  if (scratch_.size() < size) scratch_.resize(size);
  std::memcpy(scratch_.data(), parent.bytes.data(), parent.bytes.size());
  uint8_t* out = scratch_.data() + parent.bytes.size();
  for (size_t i = 0; i < count; ++i) {
    auto v = static_cast<uint32_t>(tokens[i]);
    out[4 * i] = static_cast<uint8_t>(v);
    out[4 * i + 1] = static_cast<uint8_t>(v >> 8);
    out[4 * i + 2] = static_cast<uint8_t>(v >> 16);
    out[4 * i + 3] = static_cast<uint8_t>(v >> 24);
  }
  return Sha256(scratch_.data(), size);
}

}  // namespace mstar::kv

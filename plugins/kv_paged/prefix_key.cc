// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "prefix_key.h"

#include <bit>

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
  PrefixKey key;
  SHA256_CTX context;
  SHA256_Init(&context);
  SHA256_Update(&context, parent.bytes.data(), parent.bytes.size());
  if constexpr (std::endian::native == std::endian::little) {
    SHA256_Update(&context, tokens, count * 4);  // already little-endian int32: hash in place
  } else {
    if (scratch_.size() < count * 4) scratch_.resize(count * 4);
    for (size_t i = 0; i < count; ++i) {
      auto v = static_cast<uint32_t>(tokens[i]);
      for (int b = 0; b < 4; ++b) scratch_[4 * i + b] = static_cast<uint8_t>(v >> (8 * b));
    }
    SHA256_Update(&context, scratch_.data(), count * 4);
  }
  SHA256_Final(key.bytes.data(), &context);
  return key;
}

}  // namespace mstar::kv

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "core/sha256.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

namespace mstar {
namespace {

// SHA-256 fetched once: an implicit fetch on every digest costs more than hashing a short input.
const EVP_MD* Sha256Md() {
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
  static const EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  if (md != nullptr) return md;
#endif
  return EVP_sha256();
}

}  // namespace

Sha256Digest Sha256(const void* data, size_t size) {
  // One context per thread, reused (EVP_Digest would allocate one per call).
  thread_local std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(),
                                                                               &EVP_MD_CTX_free);
  Sha256Digest digest{};
  unsigned int length = 0;
  MSTAR_CHECK(context != nullptr && EVP_DigestInit_ex(context.get(), Sha256Md(), nullptr) == 1 &&
              EVP_DigestUpdate(context.get(), data, size) == 1 &&
              EVP_DigestFinal_ex(context.get(), digest.data(), &length) == 1);
  return digest;
}

Result<Sha256Digest> Sha256File(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read " + path + ": " + std::strerror(errno));
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(),
                                                                  &EVP_MD_CTX_free);
  MSTAR_CHECK(context != nullptr && EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) == 1);
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    std::streamsize got = in.gcount();
    if (got > 0) EVP_DigestUpdate(context.get(), buffer.data(), static_cast<size_t>(got));
  }
  if (in.bad()) return IoError("read error in " + path);
  Sha256Digest digest{};
  unsigned int length = 0;
  MSTAR_CHECK(EVP_DigestFinal_ex(context.get(), digest.data(), &length) == 1);
  return digest;
}

std::string ToHex(const uint8_t* data, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(size * 2, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 15];
  }
  return out;
}

}  // namespace mstar

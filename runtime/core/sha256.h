// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// SHA-256 over OpenSSL's libcrypto (which uses the CPU's SHA extensions where present).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace mstar {

using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest Sha256(const void* data, size_t size);
// The digest of a file's contents; kIo when it cannot be read.
Result<Sha256Digest> Sha256File(const std::string& path);
// Lower-case hexadecimal.
std::string ToHex(const uint8_t* data, size_t size);
inline std::string ToHex(const Sha256Digest& digest) {
  return ToHex(digest.data(), digest.size());
}

}  // namespace mstar

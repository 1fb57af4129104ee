// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "core/file_bytes.h"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace mstar {

Result<std::string> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read " + path + ": " + std::strerror(errno));
  std::string bytes;
  std::string block(1 << 16, '\0');
  while (in.read(block.data(), static_cast<std::streamsize>(block.size())) || in.gcount() > 0) {
    bytes.append(block.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return IoError("cannot read " + path + ": " + std::strerror(errno));
  return bytes;
}

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The symbols a shared library exports or needs, read from its dynamic symbol table (.dynsym, with the
// string table its sh_link names): what the dynamic loader can bind to, present even in a
// stripped library. Every offset and size in the file is checked against the file before it is
// read, so a damaged or hostile file gives an error, never a crash.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace mstar {

// The names of the symbols path defines and exports (global or weak binding, default or
// protected visibility, a section index other than undefined), sorted and unique.
// kInvalidArgument when the file is not a 64-bit little-endian ELF file with a readable dynamic
// symbol table; kIoError when it cannot be read.
Result<std::vector<std::string>> ExportedElfSymbols(const std::string& path);
// The names of the symbols path needs from other libraries (undefined, global binding: a weak
// reference may stay unbound), sorted and unique; errors as ExportedElfSymbols.
Result<std::vector<std::string>> RequiredElfSymbols(const std::string& path);

}  // namespace mstar

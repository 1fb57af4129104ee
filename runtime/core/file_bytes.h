// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Whole files: reading one into memory, for the small files the runtime parses itself (ELF
// headers of plugins, checkpoint indexes, WAV files), and writing one in a single step. Reads in
// large blocks, so it costs the same in sanitizer and debug builds as in optimized ones.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"

namespace mstar {

// The file's bytes. IO (naming the file and the system's reason) when it cannot be opened or a
// read fails partway; nothing is returned then.
Result<std::string> ReadFileBytes(const std::string& path);

// Writes bytes to a temporary file of its own beside path (<path>.XXXXXX.partial: two writers of
// one path never mix their bytes), syncs and closes it (a write error reported at close counts),
// gives it the mode open(2) would (0666 less the umask) and renames it over path: path holds
// the old file or the whole new one, even after a crash. IO naming the file and the call that
// failed; nothing is left behind then.
Status WriteFileBytes(const std::string& path, std::span<const uint8_t> bytes);

}  // namespace mstar

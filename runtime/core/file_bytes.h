// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Reading a whole file into memory, for the small files the runtime parses itself (ELF headers of
// plugins, checkpoint indexes, WAV files). Reads in large blocks, so it costs the same in
// sanitizer and debug builds as in optimized ones.
#pragma once

#include <string>

#include "core/status.h"

namespace mstar {

// The file's bytes. IO (naming the file and the system's reason) when it cannot be opened or a
// read fails partway; nothing is returned then.
Result<std::string> ReadFileBytes(const std::string& path);

}  // namespace mstar

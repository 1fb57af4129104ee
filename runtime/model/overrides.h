// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// --set key=value: change any value of a TOML document by its dotted key before it is read, so
// tests and operators can change a capacity without editing files.
#pragma once

#include <string>
#include <vector>

#include <toml++/toml.h>

#include "core/diagnostic.h"

namespace mstar {

// Applies each "a.b.c=value" to table, creating tables on the way. A value is read as TOML
// (42, 1.5, true, [1, 2], "text") and, failing that, as a bare string. Malformed overrides become
// diagnostics located at "--set". Returns false when any override was rejected.
bool ApplyOverrides(toml::table& table, const std::vector<std::string>& overrides,
                    Diagnostics* diagnostics);

}  // namespace mstar

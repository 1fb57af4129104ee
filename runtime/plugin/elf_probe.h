// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// A look at a library file's ELF header before dlopen, so that "not a shared library" and "built
// for another architecture" get a precise message instead of the loader's terse one.
#pragma once

#include <string>

#include "core/status.h"

namespace mstar {

// OK when path is an ELF shared object for this machine's architecture and word size.
Status ProbeSharedLibrary(const std::string& path);

// This process's architecture as ELF names it ("x86_64", "aarch64", ...).
std::string HostArchitecture();

}  // namespace mstar

// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// What the exception being handled says, for messages about client or plugin code that threw.
#pragma once

#include <exception>
#include <string>

namespace mstar {

// Call only inside a catch block. May throw std::bad_alloc (building the string).
inline std::string CurrentExceptionText() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

}  // namespace mstar

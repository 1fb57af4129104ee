// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// boost::container::small_vector, for the engine's per-step values that are usually one or two
// elements. Include this header, not Boost's: it compiles Boost.Container's own code with GCC's
// -Wstringop-overread off. From GCC 11 at -O3 (a Release build), moving a small_vector whose
// elements sit in its inline buffer makes GCC report the heap path's memmove as reading past that
// buffer, a path that is not taken for an inline vector. The pragma covers only the lines of
// Boost's headers; the warning stays on for the project's code.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
#include <boost/container/small_vector.hpp>
#pragma GCC diagnostic pop
#else
#include <boost/container/small_vector.hpp>
#endif

# Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
# Compiler settings for everything this project builds: C++20, hidden visibility, warnings
# (errors with MSTAR_WERROR) and sanitizers (MSTAR_SANITIZE).

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_C_STANDARD 11)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_CXX_VISIBILITY_PRESET hidden)
set(CMAKE_C_VISIBILITY_PRESET hidden)
set(CMAKE_VISIBILITY_INLINES_HIDDEN ON)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
endif()

find_program(MSTAR_CCACHE ccache)
if(MSTAR_CCACHE)
  # The sloppiness lets ccache cache sources compiled with a precompiled header (the LibTorch
  # plugins'): it would otherwise compile them every time.
  set(_mstar_ccache ${CMAKE_COMMAND} -E env CCACHE_SLOPPINESS=pch_defines,time_macros
      ${MSTAR_CCACHE})
  set(CMAKE_C_COMPILER_LAUNCHER ${_mstar_ccache})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${_mstar_ccache})
endif()

# Warnings for the project's own targets (not for third-party code).
add_library(mstar_warnings INTERFACE)
target_compile_options(mstar_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Woverloaded-virtual
  $<$<BOOL:${MSTAR_WERROR}>:-Werror>)

if(MSTAR_SANITIZE)
  string(REPLACE ";" "," _mstar_sanitizers "${MSTAR_SANITIZE}")
  add_compile_options(-fsanitize=${_mstar_sanitizers} -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=${_mstar_sanitizers})
endif()

# Fuzzing: coverage instrumentation everywhere (the fuzz binaries add libFuzzer's main), with
# AddressSanitizer and UndefinedBehaviorSanitizer so memory errors become crashes.
if(MSTAR_BUILD_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

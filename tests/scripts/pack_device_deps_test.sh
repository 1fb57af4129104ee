#!/usr/bin/env bash
# Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#
# scripts/pack-device-deps: with the system's copies of the packed packages hidden (a mount
# namespace), the pack alone configures the project (every find_package resolves into it) and
# compiles code that uses each packed dependency, as on a GPU machine without them. A dependency
# the build gains and the pack lacks fails here, not in the device check's minutes on a lent GPU.
# Usage: pack_device_deps_test.sh SOURCE_DIR CMAKE WORK_DIR. Exits 77 (skipped) without mount
# namespaces. WORK_DIR is reused between runs (a compiler cache then serves the compiles).
set -euo pipefail
src="$1"
cmake="$2"
work="$3"
probe="$(mktemp -d)"
if ! unshare --mount mount --bind "$probe" "$probe" 2>/dev/null; then
  rmdir "$probe"
  echo "skipped: no bind mounts in a new mount namespace here (unshare needs root)"
  exit 77
fi
rmdir "$probe"
export DEPS_DIR="$work/deps"
"$src/scripts/pack-device-deps"
# shellcheck source=/dev/null  # written by scripts/pack-device-deps
source "$DEPS_DIR/env.sh"
build="$work/build"
# Objects with no library to link first: Boost.DLL, toml++, spdlog and fmt, OpenSSL, xxHash
# (DLPack comes with each, through the ABI headers); CLI11, nlohmann-json and GoogleTest are
# header checks below.
objects=(
  runtime/CMakeFiles/mstar_runtime.dir/plugin/library.cc.o
  runtime/CMakeFiles/mstar_runtime.dir/config/toml_reader.cc.o
  runtime/CMakeFiles/mstar_runtime.dir/core/logging.cc.o
  runtime/CMakeFiles/mstar_runtime.dir/core/sha256.cc.o
  plugins/tier_disk/CMakeFiles/tier_disk.dir/block_file.cc.o
)
# shellcheck disable=SC2016  # the inner script expands its own arguments
"$src/scripts/pack-device-deps" --hidden bash -euo pipefail -c '
  cmake="$0" src="$1" build="$2" include="$3"
  shift 3
  "$cmake" -S "$src" -B "$build" -G Ninja -DMSTAR_WITH_TORCH=OFF -DMSTAR_WITH_CUDA=OFF \
    -DMSTAR_BUILD_BENCH=OFF >"$build.configure.log" 2>&1 ||
    { cat "$build.configure.log"; exit 1; }
  ninja -C "$build" "$@"
  printf "#include <CLI/CLI.hpp>\n#include <nlohmann/json.hpp>\n#include <gtest/gtest.h>\n" |
    c++ -std=c++20 -fsyntax-only -isystem "$include" -x c++ -
' "$cmake" "$src" "$build" "$DEPS_DIR/usr/include" "${objects[@]}"
# Everything the configure found came from the pack.
for package in Boost tomlplusplus fmt spdlog CLI11 nlohmann_json dlpack GTest; do
  dir="$(grep -E "^${package}_DIR:PATH=" "$build/CMakeCache.txt" | cut -d= -f2)"
  if [[ "$dir" != "$DEPS_DIR"/* ]]; then
    echo "FAIL: $package came from '$dir', not the pack"
    exit 1
  fi
done
echo "pack_device_deps_test: configured and compiled against the pack alone"

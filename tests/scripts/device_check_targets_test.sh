#!/usr/bin/env bash
# Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#
# scripts/device_check.sh builds only the targets it names (a GPU machine's minutes are few): every
# binary it runs from the build must be among them or among the configure's GPU tests
# (gpu_test_targets.txt), and every target it names that every build makes (all but the GPU
# tests, which need CUDA and NCCL) must be one of this build's targets, so a renamed target shows
# here rather than on the GPU machine. The script must parse, too (bash reads it as it runs).
# Usage: device_check_targets_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
script="$1/scripts/device_check.sh"
build="$2"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

bash -n "$script" || fail "device_check.sh does not parse"
listed="$("$script" --list-targets)"
[ -n "$listed" ] || fail "device_check.sh --list-targets printed nothing"
[ -f "$build/gpu_test_targets.txt" ] || fail "$build/gpu_test_targets.txt is missing"
known="$(printf '%s\n%s\n' "$listed" "$(cat "$build/gpu_test_targets.txt")")"

ran="$(grep -o '\$build/bin/[A-Za-z0-9_-]*' "$script" | sed 's|.*/||' | sort -u)"
[ -n "$ran" ] || fail "found no \$build/bin/ binary in $script"
for binary in $ran; do
  grep -qx "$binary" <<<"$known" || fail "device_check.sh runs $binary but does not build it"
done

targets="$(cmake --build "$build" --target help 2>/dev/null | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p')"
if [ -z "$targets" ] && [ -f "$build/build.ninja" ]; then
  targets="$(ninja -C "$build" -t targets all | sed 's/:.*//')"
fi
[ -n "$targets" ] || fail "cannot list the targets of $build"
for target in $listed; do
  case "$target" in *_gpu_test) continue ;; esac
  grep -qx "$target" <<<"$targets" || fail "device_check.sh builds $target, which is no target"
done
echo "device_check.sh: $(wc -w <<<"$ran") binaries run, all built; $(wc -w <<<"$listed") targets named"

#!/usr/bin/env bash
# Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#
# scripts/step-footprint: refuses bad arguments with a message; its report (--from a kept run)
# divides callgrind's counts by the steps, subtracts the bare loop's from the engine's, sums a
# function's lines over the files its code came from, and ranks the functions by what they add.
# The callgrind runs themselves take minutes and valgrind; they are not run here.
# Usage: step_footprint_test.sh SOURCE_DIR WORK_DIR
set -euo pipefail
script="$1/scripts/step-footprint"
work="$2"
rm -rf "$work"
mkdir -p "$work/run"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# expect_error STATUS TEXT ARGS...: the script exits with STATUS and says TEXT on stderr.
expect_error() {
  local status="$1" text="$2"
  shift 2
  local got=0
  "$script" "$@" 2>"$work/stderr" >/dev/null || got=$?
  [ "$got" -eq "$status" ] || fail "$* exited $got, expected $status"
  grep -qF -- "$text" "$work/stderr" || fail "$* said '$(cat "$work/stderr")', expected '$text'"
}

"$script" --help | grep -q "counted rather than timed" || fail "--help does not describe the script"
expect_error 2 "unknown argument '--bogus'" --bogus
expect_error 2 "'0' is not a positive whole number" --tokens 0
expect_error 2 "'x' is not a positive whole number" --concurrency x
expect_error 2 "--top needs a value" --top
expect_error 1 "has no kept run" --from "$work/run"

# A kept run of 4 steps, in callgrind_annotate's flat layout ("." is no count).
header='--------------------------------------------------------------------------------
Ir               I1mr           ILmr         D1mr           DLmr         file:function
--------------------------------------------------------------------------------'
cat >"$work/run/engine.flat" <<FLAT
Ir                 I1mr             ILmr           D1mr            DLmr
--------------------------------------------------------------------------------
4,000 (100.0%) 400 (100.0%) 8 (100.0%) 40 (100.0%) 4 (100.0%)  PROGRAM TOTALS

$header
 1,000 (25.0%) 200 (50.0%) 4 (50.0%) . . e/a.cc:mstar::Form(int) [/x/bench]
 500 (12.5%) 40 (10.0%) . . . /usr/include/vector.h:mstar::Form(int)
 800 (20.0%) 100 (25.0%) . 4 (10.0%) . plugins/kv/kv.cc:mstar::kv::Plan() [/x/libkv.so]
 100 ( 2.5%) 2 ( 0.5%) . . . e/b.cc:mstar::Tiny() [/x/bench]
FLAT
cat >"$work/run/bare.flat" <<FLAT
Ir                 I1mr             ILmr           D1mr            DLmr
--------------------------------------------------------------------------------
2,000 (100.0%) 120 (100.0%) 4 (100.0%) 20 (100.0%) 0 (100.0%)  PROGRAM TOTALS

$header
 800 (40.0%) 100 (83.3%) . 4 (20.0%) . plugins/kv/kv.cc:mstar::kv::Plan() [/x/libkv.so]
FLAT
echo 4 >"$work/run/steps"
"$script" --from "$work/run" >"$work/report"
expect_line() {
  grep -qE "$1" "$work/report" || fail "no line matching '$1' in:"$'\n'"$(cat "$work/report")"
}
expect_line '^instructions +1000\.0 +500\.0 +500\.0$'
expect_line '^L1i misses +100\.0 +30\.0 +70\.0$'
expect_line '^L2 instruction misses +2\.0 +1\.0 +1\.0$'
expect_line '^L2 data misses +1\.0 +0\.0 +1\.0$'
# Form: (200 + 40) / 4 = 60 a step, its own file's and an inlined header's lines together; Plan
# adds nothing over the bare loop's; Tiny's 0.5 a step is listed, first Form.
expect_line '^ +60\.0  mstar::Form\(int\)$'
expect_line '^ +0\.5  mstar::Tiny\(\)$'
if grep -q 'kv::Plan' "$work/report"; then fail "a function adding nothing is listed"; fi
[ "$(grep -n 'mstar::Form' "$work/report" | cut -d: -f1)" -lt \
  "$(grep -n 'mstar::Tiny' "$work/report" | cut -d: -f1)" ] || fail "not ranked by what they add"
"$script" --from "$work/run" --top 1 >"$work/report"
if grep -q 'mstar::Tiny' "$work/report"; then fail "--top 1 listed two functions"; fi
echo "ok"

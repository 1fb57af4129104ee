#!/usr/bin/env bash
# Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#
# The GPU checks, for a machine with an NVIDIA GPU, CUDA and a PyTorch install (nothing here runs
# on CPU CI). Run from anywhere; paths are relative to the repository root.
#
#   1. configure build-gpu/ against this machine's PyTorch LibTorch with CUDA on, and build what
#      the checks need (the runtime, the CLI, the tests, tiny_lm, kv_paged, the tiers, the weights)
#   2. run the GPU test subset (ctest -L gpu): replay equals eager at every bucket, no slot is
#      overwritten while its replay is in flight (held there; every slot leased meanwhile is
#      poisoned), pinned offload round trips are byte-exact, NCCL collectives over every
#      visible GPU (one GPU: a single-rank group); then the CPU capture tests in the same build
#   3. print a table: a launch-bound step eager vs replay at batch 1, 8 and 32 (from the GPU test);
#      tiny_lm's decode step time with capture on (greedy decode replays its CUDA graphs) and off
#      at batch 1, 8 and 32, whether both runs decode the same tokens and how many steps
#      replayed; tiny-speech with both nodes on the GPU (decode steps and codec windows must
#      replay); tiny-llm on the GPU under KV pressure (the engine offloads and reloads on its copy
#      stream; the text must match a run without pressure); a prompt's prefill reusing the
#      pages of the same prompt before it (64 tokens hit; ids as with the cache off); offload GB/s
#      against the measured cudaMemcpy peak, both for one copy through the device layer and for
#      kv_paged's offload and reload of 512 pages to tier_host (kv_paged_gpu_test; pages
#      scattered over the pool, the target's figure, and pages in a row), with the
#      targets (replay >= 2x faster than eager at batch 1-8, offload >= 80% of the peak)
#
# Everything is logged to $OUT/device_check.log when OUT is set (else build-gpu/device_check.log).
# Each phase has its own time limit, so a hung phase cannot stall the run; the limits add up to
# more than the 10 minutes a whole run is meant to take, so give the call its own timeout too.
#
# The build's library dependencies (Boost, toml++, spdlog, fmt, CLI11, nlohmann-json, DLPack,
# OpenSSL, xxHash, GoogleTest) come from .device-deps/ when it is there: the lent GPU machine has
# CUDA, PyTorch, CMake and ninja but not these Debian packages, and cannot fetch them.
# scripts/pack-device-deps makes .device-deps/ on a machine that has them; carry it along.
#
#   BUILD=dir   the build directory (default: build-gpu)
#   JOBS=n      build parallelism (default: the number of CPUs)
#   TORCH_PREFIX=dir  LibTorch's CMake prefix (default: python3's torch.utils.cmake_prefix_path)
#   --configure-and-build   stop after step 1, with no GPU needed (scripts/pack-device-deps
#               --check uses it to build against the pack alone)
#   --list-targets  print the targets step 1 builds besides the GPU tests, and exit
#   --rehearse-on-cpu  steps 2 and 3 on the CPU over an existing build (BUILD, default build): no
#               GPU figures, but every run, JSON field and table line of step 3 is exercised, so a
#               change to this script is tried before it spends a GPU machine's minutes
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 2
mode="${1:-check}"
build_default="build-gpu"
[[ "$mode" == "--rehearse-on-cpu" ]] && build_default=build
build="${BUILD:-$build_default}"

# The targets the checks need; every binary below runs from this list or from the configure's
# list of GPU tests (tests/scripts/device_check_targets_test.sh holds the script to that).
wanted=(mstar runtime_capture_test runtime_capture_gpu_test runtime_distributed_gpu_test kv_paged_gpu_test
  runtime_device_gpu_test make-tiny-weights tiny_lm tiny_codec kv_paged tier_host tier_disk echo
  tiny_lm_engine_test kit)
if [[ "${1:-}" == "--list-targets" ]]; then
  printf '%s\n' "${wanted[@]}"
  exit 0
fi
jobs="${JOBS:-$(nproc)}"
mkdir -p "$build"
log_dir="${OUT:-$build}"
mkdir -p "$log_dir"
log="$log_dir/device_check.log"
: >"$log"
start_s=$SECONDS
status=0

say() { echo "$*" | tee -a "$log"; }
# run LIMIT_S DESCRIPTION COMMAND...: runs a phase with a time limit, its output to the log only.
run() {
  local limit="$1" what="$2"
  shift 2
  say "== $what ($(date -u +%H:%M:%S), limit ${limit}s)"
  timeout --kill-after=10 "$limit" "$@" >>"$log" 2>&1
  local rc=$?
  [[ $rc -eq 0 ]] && return 0
  say "!! $what failed (exit $rc; see $log)"
  return "$rc"
}

build_only=0
[[ "$mode" == "--configure-and-build" ]] && build_only=1
rehearse=0
[[ "$mode" == "--rehearse-on-cpu" ]] && rehearse=1
# Where the model runs: cuda:0, or the CPU in a rehearsal.
device_type=cuda
device=cuda:0
if [[ $rehearse -eq 1 ]]; then
  device_type=cpu
  device=cpu
  say "rehearsal on the CPU over $build (no GPU figures; the runs and the table are exercised)"
  [[ -x "$build/bin/mstar" ]] || {
    say "$build/bin/mstar is not built; build first (make build)"
    exit 2
  }
fi
# missing_figures: a GPU figure did not come (a failure, but expected in a rehearsal).
missing_figures() { [[ $rehearse -eq 1 ]] || status=1; }

if [[ $build_only -eq 0 && $rehearse -eq 0 ]]; then
  if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >>"$log" 2>&1; then
    say "no NVIDIA GPU visible (nvidia-smi); nothing to check"
    exit 2
  fi
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$log"
fi

if [[ $rehearse -eq 0 ]]; then
torch_prefix="${TORCH_PREFIX:-$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>>"$log")}"
if [[ -n "$torch_prefix" ]]; then
  say "LibTorch from $torch_prefix"
elif [[ $build_only -eq 1 ]]; then
  say "LibTorch: the system's (python3 has no torch)"
else
  say "PyTorch is not importable by python3; cannot build the LibTorch plugins"
  exit 2
fi
deps="${DEPS_DIR:-$root/.device-deps}"
if [[ -f "$deps/env.sh" ]]; then
  say "dependencies from $deps (scripts/pack-device-deps)"
  # shellcheck source=/dev/null  # written by scripts/pack-device-deps
  source "$deps/env.sh"
fi

# LibTorch's CMake package otherwise compiles and runs a program to find the GPUs' architectures
# (with a CMake too old for its CUDA dialect, that fails the configure); the plugins compile no
# CUDA code of their own, so the list only has to be valid: the GPU's own, else Hopper's.
if [[ -z "${TORCH_CUDA_ARCH_LIST:-}" ]]; then
  TORCH_CUDA_ARCH_LIST="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
    head -1 | tr -d ' ')"
  export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}"
fi

generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
# LibTorch's CMake package looks for libc10 on the system paths before its own lib/: on a machine
# that also has a system LibTorch (Debian's libtorch-dev), the plugins would link both.
torch_lib=()
if [[ -n "$torch_prefix" && -e "$torch_prefix/../../lib/libc10.so" ]]; then
  torch_lib=(-Dc10_LIBRARY="$(realpath "$torch_prefix/../../lib/libc10.so")")
fi
# The NCCL that PyTorch's wheel brings (nvidia-nccl): the runtime then loads the same libnccl as
# LibTorch, where one beside the CUDA toolkit could be another version under the same soname.
nccl_root="$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)"
if [[ -n "$nccl_root" && -e "$nccl_root/include/nccl.h" ]]; then
  say "NCCL from $nccl_root"
  torch_lib+=(-DMSTAR_NCCL_ROOT="$nccl_root")
fi
run 180 "configure" cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DMSTAR_WITH_CUDA=ON -DMSTAR_WITH_TORCH=ON -DMSTAR_BUILD_BENCH=OFF \
  -DCMAKE_PREFIX_PATH="$torch_prefix" "${torch_lib[@]}" || exit 1

# Every GPU test the configure made (tests/CMakeLists.txt lists them), so that ctest -L gpu finds
# each one built, also one added after this list was written.
if [[ -f "$build/gpu_test_targets.txt" ]]; then
  while read -r target; do
    [[ -n "$target" && " ${wanted[*]} " != *" $target "* ]] && wanted+=("$target")
  done <"$build/gpu_test_targets.txt"
else
  say "!! $build/gpu_test_targets.txt is missing: only the GPU tests named in this script are built"
  status=1
fi
# A target the configure did not make (runtime_distributed_gpu_test without NCCL) is reported and
# counts as a failure, but does not keep the rest from being built and run.
if [[ -f "$build/build.ninja" ]]; then
  known="$(ninja -C "$build" -t targets all 2>/dev/null | sed 's/:.*//')"
else
  known="$(cmake --build "$build" --target help 2>/dev/null | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p')"
fi
targets=()
for target in "${wanted[@]}"; do
  if grep -qx "$target" <<<"$known"; then
    targets+=("$target")
  else
    say "!! target $target was not configured (see the configure output in $log)"
    status=1
  fi
done
build_limit=330
[[ $build_only -eq 1 ]] && build_limit=3000  # two cores, not sixteen
# Keep going past a target that fails to compile: what did build is still checked (one error in
# one plugin must not throw away the whole GPU run); only without the CLI is there nothing to do.
keep_going=()
[[ -f "$build/build.ninja" ]] && keep_going=(-- -k 0)
run "$build_limit" "build (${targets[*]})" cmake --build "$build" -j "$jobs" --target "${targets[@]}" \
  "${keep_going[@]}" || status=1
[[ -x "$build/bin/mstar" ]] || {
  say "!! $build/bin/mstar did not build; nothing to check"
  exit 1
}
if [[ $build_only -eq 1 ]]; then
  say "device_check: configured and built in $((SECONDS - start_s)) s (--configure-and-build)"
  exit 0
fi
fi  # not a rehearsal

# The GPU subset, then the CPU capture tests in the GPU build (they must pass there too).
# The GPU tests grew since the last GPU run (the block cache's, the KV layouts'), so the limit has
# room to spare; a timeout here fails the check, but the figures come from the runs below.
# The timed tests run on their own below (their figure lines are kept), so not here too.
run 150 "ctest -L gpu" ctest --test-dir "$build" -L gpu -E 'LaunchBound|PinnedOffload|KvOffloadRoundTrip|Prints' \
  --output-on-failure --timeout 60 || status=1
ctest_log="$build/Testing/Temporary/LastTest.log"
if [[ -f "$ctest_log" ]]; then
  cp "$ctest_log" "$log_dir/ctest_gpu.log"
  # Every GPU test skips itself without a device: skips for that reason mean nothing was checked.
  if [[ $rehearse -eq 0 ]] && grep -q "no CUDA device" "$ctest_log"; then
    say "!! GPU tests skipped for want of a CUDA device: the build or the tests do not see the GPU"
    status=1
  fi
fi
# In parallel (they are CPU tests; the GPU ones above ran alone so their timings stand): about
# 40 s serially on a 2-core machine.
run 90 "ctest -R capture (CPU capture tests)" ctest --test-dir "$build" -j "$jobs" -R "EngineCapture|SlotPool|Buckets|PaddedInputs|NodeCaptures|CaptureConfig|RecordingBackend|TinyLmEngine" \
  --output-on-failure --timeout 60 || status=1
gpu_lines="$log_dir/gpu_figures.txt"
# Line-buffered, so that the figures printed before a timeout kills a binary are kept.
line_buffered=()
command -v stdbuf >/dev/null 2>&1 && line_buffered=(stdbuf -oL)
timeout 90 "${line_buffered[@]}" "$build/bin/runtime_capture_gpu_test" \
  --gtest_filter='*LaunchBound*:*PinnedOffload*' >"$gpu_lines" 2>&1 || status=1
timeout 120 "${line_buffered[@]}" "$build/bin/kv_paged_gpu_test" >>"$gpu_lines" 2>&1 || status=1
timeout 60 "${line_buffered[@]}" "$build/bin/runtime_device_gpu_test" --gtest_filter='*Prints*' \
  >>"$gpu_lines" 2>&1 || status=1
cat "$gpu_lines" >>"$log"

# tiny_lm at a larger config: 8 layers, hidden 1024, 16 heads / 8 KV heads of 64, MLP 4096
# (about 0.5 GB of fp32 weights); the KV cache's layout follows it through --set.
weights="$build/weights-large"
run 120 "make-tiny-weights (8 layers, hidden 1024)" "$build/bin/make-tiny-weights" --force \
  --lm-layers 8 --lm-hidden 1024 --lm-heads 16 --lm-kv-heads 8 --lm-intermediate 4096 \
  "$weights" || status=1
runtime_on="$build/capture_on.toml"
runtime_off="$build/capture_off.toml"
printf 'format = 1\n[device]\ntype = "%s"\n[capture]\nenabled = true\n' "$device_type" >"$runtime_on"
printf 'format = 1\n[device]\ntype = "%s"\n[capture]\nenabled = false\n' "$device_type" >"$runtime_off"
runtime_nocache="$build/capture_on_nocache.toml"
printf 'format = 1\n[device]\ntype = "%s"\n[capture]\nenabled = true\n[memory]\ndevice_block_cache = false\n' \
  "$device_type" >"$runtime_nocache"
# step_ms CONFIG BATCH [TAG SET...]: mean wall time per step of tiny_lm decoding BATCH requests on
# cuda:0, with extra --set overrides SET...; the run's JSON is kept in $build/run_<TAG>_<batch>.json
# (TAG defaults to the config's name) for the token comparison.
step_ms() {
  local config="$1" batch="$2" tag="${3:-$(basename "$1" .toml)}" json
  shift 2
  if [[ $# -gt 0 ]]; then shift; fi
  local out="$build/run_${tag}_${batch}.json" sets=()
  for s in "$@"; do sets+=(--set "$s"); done
  json="$(timeout 60 "$build/bin/mstar" --config "$config" run manifests/models/tiny-llm.toml \
    --plugin-path "$build/lib/mstar/plugins" --set nodes.lm.device="$device" \
    --set nodes.lm.config.weights="$weights/tiny-lm" --set resources.kv.config.layers=8 \
    --set resources.kv.config.kv_heads=8 --set resources.kv.config.head_dim=64 \
    --set resources.kv.config.num_pages=1024 --set resources.kv.config.capture_context=128 \
    "${sets[@]}" --prompt "the quick brown fox" \
    --requests "$batch" --max-batch "$batch" --max-tokens "${TOKENS:-64}" --json --quiet 2>>"$log")" || {
    echo "mstar run ($tag, batch $batch) failed; its output: $json" >>"$log"
    echo "failed"
    return
  }
  echo "$json" >>"$log"
  echo "$json" >"$out"
  ms_per_step "$out"
}
# step_ms_delta CONFIG BATCH: ms per decode step from two runs of 64 and 16 tokens, the difference
# of their wall times over the difference of their steps, so that what a run pays once (the
# first steps' cuBLAS and kernel loading with capture off, which capture on pays at warmup
# outside the timing; the prefill) is not spread over the steps. The 64-token run's JSON is kept
# as step_ms keeps it.
step_ms_delta() {
  local config="$1" batch="$2" tag
  tag="$(basename "$1" .toml)"
  local long short
  long="$(step_ms "$config" "$batch")"
  short="$(TOKENS=16 step_ms "$config" "$batch" "${tag}_short")"
  if [[ "$long" == failed || "$short" == failed ]]; then
    echo failed
    return
  fi
  python3 -c 'import json,sys
a,b=(json.load(open(p)) for p in sys.argv[1:3])
d=a["steps"]-b["steps"]
print("%.3f" % (1e3*(a["elapsed_s"]-b["elapsed_s"])/d) if d>0 else "n/a")' \
    "$build/run_${tag}_${batch}.json" "$build/run_${tag}_short_${batch}.json" 2>>"$log" || echo failed
}
# ms_per_step JSON: the mean wall time per step, in ms, of the mstar run --json output in file JSON.
ms_per_step() {
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.3f" % (1e3*d["elapsed_s"]/max(d["steps"],1)))' \
    "$1" 2>>"$log" || echo "failed"
}
# same_tokens BATCH [TAG]: how many requests decoded the same text (their greedy tokens,
# byte-decoded) captured (run TAG, default capture_on) and eager, as "n/N". Float reductions differ between the two paths, so a near-tie may
# flip one request's argmax and the rest of that request then diverges; a real bug diverges
# everywhere.
same_tokens() {
  python3 -c 'import json,sys
a,b=(json.load(open(p)) for p in sys.argv[1:3])
t=lambda d:[(o.get("text"),o.get("tokens")) for o in d["outputs"]]
x,y=t(a),t(b)
print("%d/%d" % (sum(1 for i,j in zip(x,y) if i==j), max(len(x),len(y))))' \
    "$build/run_${2:-capture_on}_$1.json" "$build/run_capture_off_$1.json" 2>>"$log" || echo "n/a"
}

# host_us BATCH TAG: the engine's own host time per step of run TAG (outside the plugin's forward:
# mstar run --json's overhead_us_per_step), to tell the runtime's share of a step from the model's.
host_us() {
  python3 -c 'import json,sys; print("%.0f" % json.load(open(sys.argv[1]))["overhead_us_per_step"])' \
    "$build/run_${2}_$1.json" 2>>"$log" || echo "n/a"
}

# replayed BATCH [TAG]: steps of node lm that replayed a captured graph, of all its steps, in run
# TAG (default capture_on), as "n/N" (mstar run --json counts them per node).
replayed() {
  python3 -c 'import json,sys
n=json.load(open(sys.argv[1]))["nodes"]["lm"]
print("%d/%d" % (n["replayed_steps"], n["steps"]))' "$build/run_${2:-capture_on}_$1.json" \
    2>>"$log" || echo "n/a"
}

say ""
say "== Figures"
say "launch-bound step (64 device ops; GPU test LaunchBoundStepEagerVersusReplay):"
say "  batch   eager_us   replay_us   speedup   target"
while read -r _ batch _ eager replay; do
  b="${batch#batch=}"
  e="${eager#eager_us=}"
  r="${replay#replay_us=}"
  line="$(python3 -c 'import sys; b,e,r=int(sys.argv[1]),float(sys.argv[2]),float(sys.argv[3]); s=e/r if r>0 else 0; t="replay>=2x" if b<=8 else "-"; ok="" if b>8 else (" ok" if s>=2 else " MISSED"); print("  %5d %10.1f %11.1f %8.2fx   %s%s" % (b,e,r,s,t,ok))' "$b" "$e" "$r")"
  say "$line"
done < <(grep '^STEP ' "$gpu_lines")

say "tiny_lm decode, ms per step (8 layers, hidden 1024; greedy requests replay its captured"
say "decode buckets with capture on; target: replay >= 2x faster than eager at batch 1 to 8;"
say "the time of 48 more steps: a 64-token run's less a 16-token run's, over their steps):"
say "  (host us: the engine's time per step outside the forward, capture on / off)"
say "  batch   capture_on   capture_off   same text (requests)   replayed steps (capture_on)   host us"
for batch in 1 8 32; do
  on="$(step_ms_delta "$runtime_on" "$batch")"
  off="$(step_ms_delta "$runtime_off" "$batch")"
  same="$(same_tokens "$batch")"
  again="$(replayed "$batch")"
  host="$(host_us "$batch" capture_on) / $(host_us "$batch" capture_off)"
  # Fails when fewer than half the requests agree (or the comparison could not run).
  python3 -c 'import sys; n,d=map(int,sys.argv[1].split("/")); sys.exit(0 if d>0 and 2*n>=d else 1)' \
    "$same" 2>/dev/null || status=1
  say "$(printf '  %5d %12s %13s   %-22s %-29s %s' "$batch" "$on" "$off" "$same" "$again" "$host")"
done
# The device block cache in the capture-on runs (mstar run --json's device_block_caches): how many
# of the device allocations a freed block served, and the fences that made them safe to.
for batch in 1 8 32; do
  say "  block cache, capture on, batch $batch: $(python3 -c 'import json,sys
c=json.load(open(sys.argv[1])).get("device_block_caches", [])
print("; ".join("%s: %d of %d allocations reused, %d fences, %d given back, %d bytes cached" % (d["device"], d["reused"], d["reused"]+d["allocated"], d["fences"], d["given_back"], d["cached_bytes"]) for d in c) or "no device cache")' \
    "$build/run_capture_on_$batch.json" 2>>"$log" || echo "n/a")"
done
# The same decode with the cache off (every free a cudaFree, as before the cache), side by side.
for batch in 8 32; do
  nocache="$(step_ms "$runtime_nocache" "$batch" nocache)"
  with="$(ms_per_step "$build/run_capture_on_$batch.json")"
  say "  capture on, batch $batch: $with ms per step with the block cache, $nocache without"
done

say "tiny_lm decode with each layer's MLP block as a captured region (whole-forward capture off,"
say "capture_regions on; the attention runs eagerly), ms per step:"
say "  batch   regions   same text as eager (requests)"
for batch in 1 8 32; do
  regions="$(step_ms "$runtime_on" "$batch" regions nodes.lm.config.capture=false \
    nodes.lm.config.capture_regions=true)"
  same="$(same_tokens "$batch" regions)"
  python3 -c 'import sys; n,d=map(int,sys.argv[1].split("/")); sys.exit(0 if d>0 and 2*n>=d else 1)' \
    "$same" 2>/dev/null || status=1
  say "$(printf '  %5d %9s   %s' "$batch" "$regions" "$same")"
done

# tiny-speech on cuda:0 with its default (small) weights and capture on: the LM's decode steps
# and the codec's full windows replay their graphs. Fails unless both nodes replayed (on cuda).
small="$build/weights-small"
run 60 "make-tiny-weights (default sizes)" "$build/bin/make-tiny-weights" --force "$small" ||
  status=1
speech="$(timeout 90 "$build/bin/mstar" --config "$runtime_on" run manifests/models/tiny-speech.toml \
  --plugin-path "$build/lib/mstar/plugins" --set nodes.lm.device="$device" \
  --set nodes.codec.device="$device" --set nodes.lm.config.weights="$small/tiny-lm" \
  --set nodes.codec.config.weights="$small/tiny-codec" \
  --set tiers.disk.config.directory="$build/kv-disk" --prompt "streaming audio on the GPU" \
  --requests 4 --max-batch 4 --max-tokens 64 --json --quiet 2>>"$log")" || speech=""
echo "$speech" >>"$log"
say "tiny-speech on $device, capture on (decode steps and full codec windows replay):"
speech_lines="$(python3 -c 'import json,sys
d=json.loads(sys.argv[1]); bad=0; must_replay=sys.argv[2]=="cuda"
for name in ("lm","codec"):
  n=d["nodes"][name]; bad+=must_replay and n["replayed_steps"]==0
  print("  %-6s %d of %d steps replayed, %d graphs captured" % (name,n["replayed_steps"],n["steps"],n["captured_graphs"]))
ok=bad==0 and d["completed"]==d["requests"]
print("  %d/%d requests completed: %s" % (d["completed"],d["requests"],"ok" if ok else "FAILED"))
sys.exit(0 if ok else 1)' "$speech" "$device_type" 2>>"$log")" || status=1
say "${speech_lines:-  FAILED: no run output (see $log)}"

# small_llm_run SECONDS ARGS...: `mstar run --json` of tiny-llm on $device with the small weights
# and capture on ($runtime_on), with ARGS; its JSON on stdout, its log in $log.
small_llm_run() {
  local seconds="$1"
  shift
  timeout "$seconds" "$build/bin/mstar" --config "$runtime_on" run manifests/models/tiny-llm.toml \
    --plugin-path "$build/lib/mstar/plugins" --set nodes.lm.device="$device" \
    --set nodes.lm.config.weights="$small/tiny-lm" --set tiers.disk.config.directory="$build/kv-disk" \
    "$@" --json --quiet 2>>"$log"
}

# tiny-llm on cuda:0 with a KV pool too small for its 8 requests at once (16 pages of 16 tokens),
# offloading to tier_host: the engine's copy stream moves pages out and back while its exec
# stream decodes. Fails unless it evicted, every request completed, and at least half of them
# decoded the text of a run with pages to spare (batches differ under pressure, so a near-tie may
# flip one request's argmax, as in the capture comparison).
pressure_run() {
  small_llm_run 90 --set resources.kv.config.num_pages="$1" \
    --prompt "pages out and back on the GPU" --requests 8 --max-batch 8 --max-tokens 64
}
roomy="$(pressure_run 1024)" || roomy=""
tight="$(pressure_run 16)" || tight=""
echo "$roomy" >>"$log"
echo "$tight" >>"$log"
say "tiny-llm on $device under KV pressure (16 pages for 8 requests, offload to tier_host):"
pressure_line="$(python3 -c 'import json,sys
a,b=json.loads(sys.argv[1]),json.loads(sys.argv[2])
t=lambda d:[o.get("text") for o in d["outputs"]]
same=sum(1 for x,y in zip(t(a),t(b)) if x==y)
ok=b["evictions"]>0 and b["completed"]==b["requests"] and 2*same>=b["requests"]
c=b.get("counters",{})
pages="; reloads read %d pages, took %d back from the cache" % (c.get("kv_paged/kv.reload.read_pages",0),c.get("kv_paged/kv.reload.cached_pages",0))
print("  %d evictions, %d/%d requests completed, %d/%d decoded the roomy run'"'"'s text%s: %s" % (b["evictions"],b["completed"],b["requests"],same,b["requests"],pages,"ok" if ok else "FAILED"))
sys.exit(0 if ok else 1)' "$roomy" "$tight" 2>>"$log")" || status=1
say "${pressure_line:-  FAILED: no run output (see $log)}"

# tiny-llm on cuda:0, two requests of one 71-byte prompt, one after the other: the second finds
# the first's 4 full pages in kv_paged's prefix cache and computes only the rest of its prefill on
# the GPU. Fails unless it hit 64 tokens and both requests decoded the token ids of a run with the
# cache off.
prefix_prompt="the same long prompt shared by both requests, long enough to fill pages"
printf '%s\n%s\n' "$prefix_prompt" "$prefix_prompt" >"$build/prefix_prompts.txt"
prefix_run() {
  small_llm_run 60 --set resources.kv.config.prefix_cache="$1" \
    --prompts "$build/prefix_prompts.txt" --one-at-a-time --max-tokens 16
}
cached="$(prefix_run true)" || cached=""
uncached="$(prefix_run false)" || uncached=""
echo "$cached" >>"$log"
echo "$uncached" >>"$log"
say "tiny-llm on $device, a prompt's prefill reusing the pages of the same prompt before it:"
prefix_line="$(python3 -c 'import json,sys
a,b=json.loads(sys.argv[1]),json.loads(sys.argv[2])
hits=a["counters"].get("kv_paged/kv.prefix.hit_tokens",0)
ids=lambda d:[o.get("token_ids") for o in d["outputs"]]
ok=hits==64 and a["completed"]==2 and ids(a)==ids(b)
print("  %d prompt tokens reused, token ids %s the uncached run'"'"'s: %s" % (hits,"equal" if ids(a)==ids(b) else "DIFFER from","ok" if ok else "FAILED"))
sys.exit(0 if ok else 1)' "$cached" "$uncached" 2>>"$log")" || status=1
say "${prefix_line:-  FAILED: no run output (see $log)}"

# Python that reads a figure line's KEY=VALUE fields (after its tag, argv[1]) into f.
fields='import sys; f=dict(kv.split("=") for kv in sys.argv[1].split()[1:]); '
offload="$(grep '^OFFLOAD ' "$gpu_lines" | head -1)"
if [[ -n "$offload" ]]; then
  say "$(python3 -c "$fields"'o,p=float(f["offload_gbps"]),float(f["peak_gbps"]); r=o/p if p>0 else 0; print("device layer copy (device -> pinned host, one 256 MiB copy, a sanity check: the same call as the peak; the 80%% target is judged on kv_paged below): %.1f GB/s vs cudaMemcpy %.1f GB/s = %.0f%%" % (o,p,100*r))' "$offload")"
else
  say "offload: no figures (the GPU test did not run; see $log)"
  missing_figures
fi
kv_lines="$(grep '^KVOFFLOAD ' "$gpu_lines")"
if [[ -n "$kv_lines" ]]; then
  while read -r kv_offload; do
    say "$(python3 -c "$fields"'o,r,p=float(f["offload_gbps"]),float(f["reload_gbps"]),float(f["peak_gbps"]); u=float(f.get("reload_peak_gbps",p)); q=lambda x,y: 100*x/y if y>0 else 0; print("kv_paged offload to tier_host (%s pages of %s bytes, %s in the page-major pool, each copied by the tier straight from/to its page): offload %.1f GB/s = %.0f%% of one device->host copy of the same bytes (%.1f GB/s), reload %.1f GB/s = %.0f%% of one host->device copy (%.1f GB/s) (target >= 80%%: %s)" % (f["pages"],f["page_bytes"],f["layout"],o,q(o,p),p,r,q(r,u),u,"ok" if o>=0.8*p and r>=0.8*u else "MISSED"))' "$kv_offload")"
  done <<<"$kv_lines"
else
  say "kv_paged offload: no figures (kv_paged_gpu_test did not run; see $log)"
  missing_figures
fi
cache_line="$(grep '^BLOCKCACHE ' "$gpu_lines" | head -1)"
say "device block cache (runtime/device/block_cache.h): ${cache_line:-no figures (runtime_device_gpu_test did not run; see $log)}"

say ""
what=device_check
[[ $rehearse -eq 1 ]] && what="device_check rehearsal on the CPU"
say "$what: $([[ $status -eq 0 ]] && echo passed || echo FAILED) in $((SECONDS - start_s)) s; log: $log"
exit "$status"

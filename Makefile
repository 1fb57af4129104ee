# Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#
# The user-facing verbs. Each sets up what it needs on a fresh machine (Debian packages, CMake
# configure with Ninja into build/, build) before doing its job.
#
#   make run      build, make the tiny weights, run the tiny speech model (writes out.wav)
#   make test     build, then run every test
#   make bench    build, then run every benchmark and print one table (build/bench/results.json)
#   make check    what CI runs: format check, tests, sanitizer tests
#   make help     all targets

SHELL       := /bin/bash
BUILD       ?= build
BUILD_TYPE  ?= RelWithDebInfo
MSTAR_WERROR ?= OFF
JOBS        ?= $(shell nproc)
CMAKE_FLAGS ?=
CTEST_FLAGS ?=
TARGETS     ?=

SOURCES = $(shell git ls-files '*.h' '*.hpp' '*.cc' '*.c' 2>/dev/null)

.PHONY: all deps configure build run test bench format format-check tidy asan tsan release fuzz check clean help

all: build

help:
	@sed -n 's/^#   //p' Makefile
	@echo "  make deps         install missing Debian packages (apt-get)"
	@echo "  make build        configure and build into $(BUILD)/"
	@echo "  make format       clang-format the tree; make format-check fails on unformatted files"
	@echo "  make tidy         clang-tidy over the runtime"
	@echo "  make asan | tsan  build into build-asan/ or build-tsan/ and run the tests there"
	@echo "  make release      an optimized (-O3) build into build-release/ and the tests there"
	@echo "  make fuzz         build the libFuzzer targets with clang into build-fuzz/, run each FUZZ_SECONDS"
	@echo "  make clean        remove the build directories"
	@echo "Variables: BUILD, BUILD_TYPE, MSTAR_WERROR=ON, JOBS, CMAKE_FLAGS, CTEST_FLAGS,"
	@echo "  TARGETS (build only these targets; the tests of programs not built are left out)"

deps:
	@./scripts/install-deps

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DMSTAR_WERROR=$(MSTAR_WERROR) $(CMAKE_FLAGS)

configure: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DMSTAR_WERROR=$(MSTAR_WERROR) $(CMAKE_FLAGS)

build: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)$(if $(TARGETS), --target $(TARGETS))

# The main job: the tiny speech model (a byte-level LM streaming audio tokens into a codec), on
# deterministic random weights made on first use; writes out.wav.
RUN_PROMPT ?= Hello from the M* runtime
RUN_FLAGS  ?= --max-tokens 96
run: build
	@BUILD=$(BUILD) ./scripts/make-tiny-weights
	$(BUILD)/bin/mstar run manifests/models/tiny-speech.toml --prompt "$(RUN_PROMPT)" --audio out.wav $(RUN_FLAGS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

bench: build
	@mkdir -p $(BUILD)/bench
	@: > $(BUILD)/bench/rows.jsonl
	@for b in $(BUILD)/bench/bin/*; do \
	  echo "== $$b" >&2; \
	  $$b >> $(BUILD)/bench/rows.jsonl || exit 1; \
	done
	@$(BUILD)/bench/bench_report $(BUILD)/bench/rows.jsonl $(BUILD)/bench/results.json

format:
	@clang-format -i $(SOURCES)

format-check:
	@clang-format --dry-run --Werror $(SOURCES) && echo "format-check: all files formatted"

tidy: build
	@clang-tidy -p $(BUILD) --quiet $(filter runtime/%.cc,$(SOURCES))

# GCC 12's sanitizer runtime misreads dynamic TLS blocks under glibc >= 2.25 (its __tls_get_addr
# interceptor takes some malloc'd blocks for old glibc headers), so LeakSanitizer's tracer crashes
# at exit now and then, more often in processes that load OpenBLAS. Not intercepting avoids it.
asan: export ASAN_OPTIONS := intercept_tls_get_addr=0$(if $(ASAN_OPTIONS),:$(ASAN_OPTIONS))
asan:
	$(MAKE) test BUILD=build-asan BUILD_TYPE=Debug CMAKE_FLAGS="-DMSTAR_SANITIZE='address;undefined' $(CMAKE_FLAGS)"

tsan:
	$(MAKE) test BUILD=build-tsan BUILD_TYPE=Debug CMAKE_FLAGS="-DMSTAR_SANITIZE=thread $(CMAKE_FLAGS)"

# The device check's build type: GCC's warnings at -O3 are not those at -O2 (build/), and code
# whose behaviour depends on the optimizer shows here first.
release:
	$(MAKE) test BUILD=build-release BUILD_TYPE=Release CMAKE_FLAGS="$(CMAKE_FLAGS)"

# Each libFuzzer target for FUZZ_SECONDS over a scratch copy of its corpus (the committed corpus is
# only read); a crash leaves its input in build-fuzz/crashes/ and fails the target.
FUZZ_SECONDS ?= 30
FUZZ_TARGETS = plugin_manifest model_manifest runtime_config safetensors_file kv_resident_delta
fuzz: deps
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DMSTAR_BUILD_FUZZ=ON -DMSTAR_BUILD_TESTS=OFF -DMSTAR_BUILD_BENCH=OFF \
	  -DMSTAR_WITH_TORCH=OFF -DMSTAR_WITH_CUDA=OFF -DMSTAR_WERROR=$(MSTAR_WERROR) $(CMAKE_FLAGS)
	cmake --build build-fuzz -j $(JOBS) --target $(addsuffix _fuzz,$(FUZZ_TARGETS))
	@mkdir -p build-fuzz/crashes
	@for t in $(FUZZ_TARGETS); do \
	  rm -rf build-fuzz/scratch/$$t && mkdir -p build-fuzz/scratch/$$t; \
	  echo "== fuzzing $$t for $(FUZZ_SECONDS) s"; \
	  build-fuzz/bin/$${t}_fuzz -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -timeout=10 \
	    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=build-fuzz/crashes/$$t- \
	    build-fuzz/scratch/$$t tests/fuzz/corpus/$$t 2>&1 | grep -E "^(#[0-9]+ *DONE|stat::number_of_executed_units|==[0-9]+==|SUMMARY)" ; \
	  test $${PIPESTATUS[0]} -eq 0 || { echo "fuzz: $$t crashed; the input is in build-fuzz/crashes/"; exit 1; }; \
	done

check: format-check test asan

clean:
	rm -rf build build-asan build-tsan build-release build-fuzz

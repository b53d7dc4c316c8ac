# Bustle's front door. `make test` and `make run` work on a fresh Debian 12
# machine: both install missing dependencies first (tools/install-deps.sh),
# then configure and build with the CMake preset, then test or run.
PRESET ?= release
BUILD_DIR := build/$(PRESET)
ARGS ?=
# ctest runs this many tests at once (default: one per core). Tests that need
# the whole machine say so themselves (RUN_SERIAL / RESOURCE_LOCK).
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# Fuzzing (tests/fuzz, docs/testing.md): `make fuzz` runs a random campaign of
# FUZZ_SECONDS per target; `make fuzz-replay` runs every checked-in input once
# under ASan + UBSan. `make test` replays the same inputs in the release build
# (ctest fuzz-replay:*), never a random campaign. All fail on any finding.
FUZZ_SECONDS ?= 300
# Soak (tools/soak, docs/testing.md): `make soak` runs each scenario of
# SOAK_SCENARIOS (tools/soak/scenarios/NAME.toml) for SOAK_SECONDS; reports go
# to $(BUILD_DIR)/soak/NAME. `make check-all` runs the default city for 60 s.
SOAK_SECONDS ?= 3600
SOAK_SCENARIOS ?= default-city

.PHONY: all deps configure build test check-all wheel run bench bench-fanout-1m districts gateway-bench city clean format fuzz-build fuzz fuzz-replay soak image image-test container-deps schema-doc

all: build

deps:
	@bash tools/install-deps.sh

configure: deps
	@cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build --preset $(PRESET)

# Every test but those labelled slow, TEST_JOBS at a time. Deterministic: no
# random inputs, no sleeps standing in for events (docs/testing.md).
test: build
	@ctest --preset $(PRESET) --label-exclude slow -j $(TEST_JOBS)

# `make test`, then what is too slow for it: the tests labelled slow (the
# 60 s soak, ...) and the sanitized replay of every fuzz input (a Clang build).
check-all: test fuzz-replay
	@ctest --preset $(PRESET) --label-regex slow -j $(TEST_JOBS)

# The Python client as a wheel and an sdist in $(BUILD_DIR)/dist, both with
# the generated wire modules inside: `pip install FILE` needs no flatc, no
# schemas and no compiler (docs/python-client.md).
wheel: deps
	@clients/python/make-dist.sh $(BUILD_DIR)/dist

# The fuzz preset (clang, ASan + UBSan + libFuzzer) builds only the fuzz
# targets and the libraries they link, in build/fuzz.
fuzz-build: deps
	@cmake --preset fuzz >/dev/null
	@cmake --build --preset fuzz

# The campaign also mutates the SDK-frame inputs through the Python client's
# decoder (tests/fuzz/python_client_frames.py), with the generated wire code.
fuzz: fuzz-build configure
	@cmake --build --preset $(PRESET) --target bustle_python_wire
	@tests/fuzz/run.sh $(FUZZ_SECONDS)
	@PYTHONPATH=clients/python:$(BUILD_DIR)/python /usr/bin/python3 tests/fuzz/python_client_frames.py \
	  --seconds $(FUZZ_SECONDS) --work build/fuzz/fuzz-work/python_client_frames

fuzz-replay: fuzz-build
	@tests/fuzz/run.sh --replay

soak: build
	@set -e; for s in $(SOAK_SCENARIOS); do \
	  $(BUILD_DIR)/tools/soak/bustle-soak tools/soak/scenarios/$$s.toml \
	    --duration $(SOAK_SECONDS) --report-dir $(BUILD_DIR)/soak/$$s; \
	done

# Benchmarks (docs/performance.md): `make bench` runs every bench that page
# quotes at its documented size (about twenty minutes here; run it on a quiet
# machine) and rewrites the page's generated block with date, commit,
# machine, load and figures. BENCH_QUICK=1: toy sizes in seconds, a pipeline
# check only, printed instead of written to docs/performance.md (toy figures
# never belong there). BENCH_README=FILE: rewrite another file; BENCH_README= none.
BENCH_QUICK ?=
BENCH_README ?= $(if $(BENCH_QUICK),,docs/performance.md)

bench: build
	@tools/bench/run-all.sh --build $(BUILD_DIR) $(if $(BENCH_QUICK),--quick) \
	  $(if $(BENCH_README),--readme $(BENCH_README),--no-readme)

# Issue 17's streaming figure, too long for `make bench` (about 4 minutes):
# 8 clients each subscribed to its own district of 20 000 pedestrians in a
# generated city of 1 000 000, in 3 interleaved pairs of runs without and
# with the clients (docs/performance.md).
bench-fanout-1m: build
	@$(BUILD_DIR)/tools/bench/bustle-bench fanout --city-scale 1m --repeat 3 --seconds 15 \
	  --server $(BUILD_DIR)/server/app/bustle-server
	@$(BUILD_DIR)/tools/bench/bustle-bench fanout --city-scale 1m --clients 64 --repeat 3 \
	  --seconds 15 --server $(BUILD_DIR)/server/app/bustle-server

# Issue 34's district servers on this machine (docs/districts.md): the
# generated district city on 1, 2 and 4 real bustle-server processes over
# loopback in batch mode, neighbour lockstep, --sim-threads 1 each (strong
# scaling, 200 000 pedestrians, about 20 s). ARGS go to `bustle-bench
# district-servers`: make districts ARGS="--weak --agents 50000" (weak
# scaling, 1 to 4 districts), ARGS="--districts 2,4 --record" (crossings).
districts: build
	@$(BUILD_DIR)/tools/bench/bustle-bench district-servers \
	  --server $(BUILD_DIR)/server/app/bustle-server $(ARGS)

# The gateway in front of live district servers (docs/districts.md, "The
# gateway"): 200 000 pedestrians on 2 districts at 10 Hz, 0, 1, 4 and 8
# whole-city clients, 3 interleaved rounds (about 3 min). ARGS go to
# `bustle-bench gateway`: make gateway-bench ARGS="--districts 4 --agents 50000".
gateway-bench: build
	@$(BUILD_DIR)/tools/bench/bustle-bench gateway --clients 0,1,4,8 $(ARGS)

# One city on district servers behind a gateway on this machine, kept
# running (a crashed district is resumed from its recording): the generated
# city, 2 districts, 20 000 pedestrians, clients on 127.0.0.1:7777; Ctrl-C
# stops it. ARGS go to bustle-city: make city ARGS="--districts 4 --agents 100000".
city: build
	@$(BUILD_DIR)/tools/city/bustle-city $(ARGS)

# Starts the server on the embedded default city (127.0.0.1:7777, realtime).
# Extra flags: make run ARGS="--port 0 --clock fast"
run: build
	@$(BUILD_DIR)/server/app/bustle-server $(ARGS)

# Container (docs/operations.md); never part of `make test`.
# `make image` builds IMAGE with podman or docker (ENGINE=... to choose),
# making the debian:bookworm base with debootstrap when it cannot be pulled.
# `make image-test` starts it, checkpoints to its volume, stops it with
# SIGTERM, restarts it on the same volume, restores and compares digests.
IMAGE ?= bustle:latest
export IMAGE

# podman and its companions (runc, debootstrap, ...), unless docker is the
# engine here (installed, daemon answering, no podman).
container-deps:
	@if command -v podman >/dev/null 2>&1 || ! (command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1); then \
	  bash tools/install-deps.sh --container; fi

image: container-deps
	@tools/container/build-image.sh

image-test: image configure
	@cmake --build --preset $(PRESET) --target bustle_python_wire
	@PRESET=$(PRESET) tools/container/image-test.sh

clean:
	@rm -rf build

# docs/snapshot-schema.md from schema/migrations (persist_tests checks it).
schema-doc:
	@python3 tools/docgen/schema_doc.py

# clang-format-14 over every tracked C++ file (ctest's format:clang-format
# fails on what this would change).
format:
	@tools/check/format.sh --fix

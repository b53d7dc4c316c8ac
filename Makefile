# Bustle's front door. `make test` and `make run` work on a fresh Debian 12
# machine: both install missing dependencies first (tools/install-deps.sh),
# then configure and build with the CMake preset, then test or run.
PRESET ?= release
BUILD_DIR := build/$(PRESET)
ARGS ?=

.PHONY: all deps configure build test run bench clean format

all: build

deps:
	@bash tools/install-deps.sh

configure: deps
	@cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build --preset $(PRESET)

test: build
	@ctest --preset $(PRESET)

# Starts the server on the embedded default city (127.0.0.1:7777, realtime).
# Extra flags: make run ARGS="--port 0 --clock fast"
run: build
	@$(BUILD_DIR)/server/app/bustle-server $(ARGS)

clean:
	@rm -rf build

format:
	@git ls-files '*.hpp' '*.cpp' | xargs clang-format -i

# SPDX-License-Identifier: MIT
# The README's commands. Everything they need is installed by scripts/setup.sh on a fresh machine.
.PHONY: all setup build demo test test-release test-asan test-clang bench install clean format

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

all: build

setup:
	@bash scripts/setup.sh build

build: setup
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) > /dev/null
	cmake --build build -j $(JOBS)

# The main job on a built-in default: 1M random points, all pairs within r.
demo: build
	./build/nearby demo

# The whole suite: Release (gcc), Debug with AddressSanitizer + UBSan (gcc), Release (clang).
test: setup
	bash scripts/test.sh

bench: setup
	@bash scripts/setup.sh bench
	cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DNB_BUILD_BENCH=ON -DNB_BUILD_TESTS=OFF > /dev/null
	cmake --build build/bench -j $(JOBS)
	bash bench/run.sh build/bench

install: build
	cmake --install build

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cpp')

clean:
	rm -rf build

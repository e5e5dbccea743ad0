# SPDX-License-Identifier: MIT
# The README's commands. `make build`, `demo` and `install` need only cmake 3.21+, a C compiler and
# make, as any user; `make test` also needs clang, clang-format, pkg-config and the sanitizer
# runtimes; `make bench` its own. scripts/setup.sh checks for them first, installs what is missing
# as root on Debian/Ubuntu, and otherwise names it.
.PHONY: all setup setup-test build demo test bench fuzz install clean format

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
# `make install PREFIX=$$HOME/.local` installs without root; empty means CMake's default prefix.
PREFIX ?=

all: build

setup:
	@sh scripts/setup.sh build

setup-test:
	@sh scripts/setup.sh test

# Warnings are not errors here: any compiler version must build the demo. `make test` builds with
# -DNB_WERROR=ON.
build: setup
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DNB_WERROR=OFF -DNB_DEMO_BUILD=OFF $(CMAKE_FLAGS) > /dev/null
	cmake --build build -j $(JOBS)

# `nearby demo`: 20000 agents in two groups flocking for 200 frames on every structure, each
# frame's neighbours checked between the structures and against brute force, the last frame
# drawn to nearby-demo.svg. Builds only what it runs (the library and the CLI, timed from the
# configure on), so a fresh clone gets there fast: NB_DEMO_BUILD compiles what the demo times at
# -O2 with the portable SSE2 kernels, and at -O0 what it does not time (CMakeLists.txt); `make
# build` and `make test` build the rest, all at -O3 with every kernel.
demo: setup
	@start=$$(date +%s); \
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DNB_WERROR=OFF -DNB_DEMO_BUILD=ON $(CMAKE_FLAGS) > /dev/null || exit 1; \
	cmake --build build -j $(JOBS) --target nearby_cli || exit 1; \
	echo "make demo: configured and built the library and the CLI in $$(( $$(date +%s) - start )) s"
	./build/nearby demo

# The whole suite: Release (gcc), Debug with AddressSanitizer + UBSan (gcc), Release (clang).
test: setup-test
	bash scripts/test.sh

bench: setup
	@sh scripts/setup.sh bench
	cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DNB_BUILD_BENCH=ON -DNB_BUILD_TESTS=OFF > /dev/null
	cmake --build build/bench -j $(JOBS)
	bash bench/run.sh build/bench

# Long fuzzing (clang, libFuzzer): every target FUZZ_TIME seconds, or only FUZZ_TARGETS.
# `make test` replays the checked-in corpora; this looks for new inputs. scripts/fuzz.sh says more.
FUZZ_TIME ?= 60
FUZZ_TARGETS ?=
fuzz: setup-test
	bash scripts/fuzz.sh $(FUZZ_TIME) $(FUZZ_TARGETS)

install: build
	cmake --install build $(if $(PREFIX),--prefix "$(PREFIX)")

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cpp')

clean:
	rm -rf build

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make test`: the whole suite through ctest in three builds, plus a ThreadSanitizer run:
#   build/            gcc, Release (the build `make demo` uses; also runs the install test)
#   build/asan        gcc, Debug (at -O1, as the sanitizers' own docs advise: a third of -O0's
#                     test time), AddressSanitizer + UndefinedBehaviorSanitizer
#   build/clang       clang, Release, with __SSE2__ undefined: a second compiler's warnings and
#                     code generation, and the portable (non-SIMD) kernels the gcc builds skip
# Each with -DNB_WERROR=ON (`make demo` configures build/ with it OFF, for any compiler).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
run() {
  local dir=$1 t0=$SECONDS t1; shift
  echo "== $dir: $*"
  cmake -S . -B "$dir" -DNB_WERROR=ON "$@" > /dev/null
  cmake --build "$dir" -j "$jobs"
  t1=$SECONDS
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" ${NB_CTEST_EXCLUDE:+-E "$NB_CTEST_EXCLUDE"}
  echo "== $dir: built in $((t1 - t0)) s, tested in $((SECONDS - t1)) s"
}
# Layout is decided by .clang-format; a drift fails the suite.
if command -v clang-format > /dev/null 2>&1; then
  files=$(git ls-files '*.c' '*.h' '*.cpp' 2>/dev/null || true)
  if [ -n "$files" ] && ! clang-format --dry-run --Werror $files > /dev/null 2>&1; then
    echo "clang-format: these files need formatting (run 'make format'):" >&2
    for f in $files; do clang-format --dry-run --Werror "$f" > /dev/null 2>&1 || echo "  $f" >&2; done
    exit 1
  fi
  echo "== clang-format: clean"
fi
run build -DCMAKE_BUILD_TYPE=Release -DNB_DEMO_BUILD=OFF
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run build/asan -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-O1 -g" \
  -DNB_SANITIZE=address,undefined -DNB_INSTALL_TEST=OFF
# The clang build skips the CLI's MPI script (about 40 s of mpirun starts): it tests the tool's
# reading, messages and exit statuses, which the portable kernels do not change; the Release and
# sanitizer builds run it, and the library's MPI tests run in all three.
NB_CTEST_EXCLUDE='^cli_mpi_pairs$' CC=clang run build/clang -DCMAKE_BUILD_TYPE=Release \
  -DNB_INSTALL_TEST=OFF -DCMAKE_C_FLAGS=-U__SSE2__
# ThreadSanitizer on the concurrency tests only: read-only queries must not write shared state,
# and the grid on a scheduler must not race.
echo "== build/tsan: the threads and parallel tests under ThreadSanitizer"
tsan_start=$SECONDS
cmake -S . -B build/tsan -DNB_WERROR=ON -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-O1 -g" \
  -DNB_SANITIZE=thread \
  -DNB_INSTALL_TEST=OFF -DNB_BUILD_CLI=OFF > /dev/null
cmake --build build/tsan -j "$jobs" --target test_threads test_parallel test_knn_index \
  test_knn_many test_grid
TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build/tsan -R '^threads$' --output-on-failure
# the kNN index built by one of four querying threads and published to the others (by kNN and by
# far radius queries), the hashed cell table filled by the first of four readers, and the k
# nearest of many queries from four threads and on the grid's scheduler
TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/test_knn_index threads # (and threads_far_balls)
TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/test_grid hashed_lazy_table
TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/test_knn_many threads
TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/test_knn_many scheduler
# The uniform cases, and the ranked build's (its own parallel passes): the others add data
# shapes, not thread interleavings (all cases run in the other builds).
TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/test_parallel uniform
TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/test_parallel sparse_ranked
TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/test_parallel neighbor_rows
echo "== build/tsan: $((SECONDS - tsan_start)) s"
# The Python package: pip install into a fresh venv, pytest against scipy's cKDTree (skipped
# with a message when Debian's python3-numpy/scipy/pytest are missing).
bash python/run_tests.sh build/python
echo "make test: all builds passed in $SECONDS s"

#!/bin/bash
# SPDX-License-Identifier: MIT
# `make fuzz`: builds the libFuzzer targets (clang; the library instrumented, with ASan and
# UBSan) in build/fuzz and runs each for FUZZ_TIME seconds, starting from its checked-in corpus.
# New inputs go to build/fuzz/corpus/NAME (kept between runs, never committed: copy a few small,
# interesting ones into tests/fuzz/corpus/NAME by hand), crashes to build/fuzz/crashes/NAME-*.
# Exits non-zero on the first target that fails; tests/fuzz/README.md says how to shrink and read
# a crash. A unit may take up to 60 s: under libFuzzer's instrumentation a query over a world of
# 745,835 tiles takes seconds (under a second in Release).
#
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]      (default: 60 s each, every target)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(grid hash quadtree tiles periodic handle_pool csv npy neighbors)
out=build/fuzz
if ! command -v clang > /dev/null 2>&1 ||
    [ ! -f "$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a)" ]; then
    echo "fuzz.sh: needs clang with libFuzzer (Debian: apt-get install clang libclang-rt-dev)" >&2
    exit 2
fi
cmake -S . -B "$out" -DCMAKE_C_COMPILER=clang -DNB_BUILD_FUZZ=ON -DNB_BUILD_TESTS=OFF \
    -DNB_BUILD_CLI=OFF -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -g" > /dev/null
cmake --build "$out" -j "$(nproc 2> /dev/null || echo 2)"
mkdir -p "$out/crashes"
for t in "${targets[@]}"; do
    [ -x "$out/tests/fuzz/fuzz_$t" ] || { echo "fuzz.sh: no target fuzz_$t" >&2; exit 2; }
    mkdir -p "$out/corpus/$t"
    echo "== fuzz_$t: $secs s"
    rc=0
    "$out/tests/fuzz/fuzz_$t" "$out/corpus/$t" "tests/fuzz/corpus/$t" -max_len=4096 -timeout=60 \
        -max_total_time="$secs" -artifact_prefix="$out/crashes/$t-" -print_final_stats=1 \
        > "$out/fuzz_$t.log" 2>&1 || rc=$?
    grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$out/fuzz_$t.log" || true
    if [ "$rc" -ne 0 ]; then
        tail -n 40 "$out/fuzz_$t.log" >&2
        echo "fuzz.sh: fuzz_$t FAILED (exit $rc); the input is in $out/crashes/" >&2
        exit 1
    fi
done
echo "fuzz.sh: every target ran $secs s without a failure"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A regression check between two versions on one machine, in one run: builds the benchmarks of
# REV (a commit) in a temporary git worktree and of the working tree, then times build + all
# pairs on 1M uniform 2D points (r = 1.75) for both, each round also timing nanoflann with the
# same binary's data, alternating REV and HEAD so that a noisy machine hurts both alike.
#
#   bash bench/compare.sh REV [ROUNDS]     e.g. bash bench/compare.sh 10b134b 3
#
# Prints, per round, nearby's frame time (min / median over 21 frames) and its ratio to
# nanoflann's, then the median over rounds of those ratios for REV and for HEAD. Quote the ratio:
# the machines are shared, and absolute times move with the neighbours.
set -euo pipefail
[ $# -ge 1 ] || {
    echo "usage: bash bench/compare.sh REV [ROUNDS]" >&2
    exit 2
}
rev=$1 rounds=${2:-3}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/nearby-compare.XXXXXX")
trap 'git -C "$root" worktree remove --force "$work/rev" > /dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$root" worktree add --detach "$work/rev" "$rev" > /dev/null
build() { # SRC DIR
    cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DNB_BUILD_BENCH=ON -DNB_BUILD_TESTS=OFF \
        -DNB_BUILD_CLI=OFF > /dev/null
    cmake --build "$2" -j "$(nproc 2> /dev/null || echo 2)" --target bench_nearby bench_nanoflann \
        gen_data > /dev/null
}
build "$work/rev" "$work/rev-build"
build "$root" "$work/head-build"
data=$work/uniform2d-1000000.f64
"$work/head-build/bench/gen_data" uniform2d 1000000 "$data"
csv=$work/rows.csv
for round in $(seq "$rounds"); do
    for who in rev head; do
        for peer in nearby nanoflann; do
            runs=21
            [ "$peer" = nanoflann ] && runs=7
            "$work/$who-build/bench/bench_$peer" "$data" 2 1.75 pairs "$runs" uniform2d |
                awk -F, -v who="$who" -v r="$round" '$3 == "frame" {print r "," who "," $1 "," $6 "," $7}' \
                    >> "$csv"
        done
    done
done
python3 - "$csv" "$rev" << 'EOF'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))
t = {(r[0], r[1], r[2]): (int(r[3]) / 1e6, int(r[4]) / 1e6) for r in rows}
ratios = {"rev": [], "head": []}
for rnd in sorted({r[0] for r in rows}, key=int):
    for who in ("rev", "head"):
        nb, nf = t[(rnd, who, "nearby")], t[(rnd, who, "nanoflann")]
        ratios[who].append(nf[0] / nb[0])
        print(f"round {rnd} {who:4}: nearby {nb[0]:7.1f} / {nb[1]:7.1f} ms (min / median), "
              f"nanoflann {nf[0]:7.1f} / {nf[1]:7.1f} ms: {nf[0] / nb[0]:5.2f}x")
r, h = statistics.median(ratios["rev"]), statistics.median(ratios["head"])
print(f"median ratio to nanoflann: {sys.argv[2]} {r:.2f}x, HEAD {h:.2f}x; HEAD / {sys.argv[2]} = {h / r:.3f}")
EOF

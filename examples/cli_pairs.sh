#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A file of points: no code, the command-line tool. Writes N random points to a CSV file, asks
# `nearby pairs` for every pair within R (one "i,j" a line, i < j, sorted) and for their count,
# and checks both against a brute-force loop in awk (the same dx*dx + dy*dy <= r*r in double).
#
#   bash examples/cli_pairs.sh PATH/TO/nearby [N]      (ctest passes the built tool)
set -euo pipefail
nearby=${1:?usage: cli_pairs.sh PATH/TO/nearby [N]}
n=${2:-2000}
r=1.5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# N points uniform in a square with about 2.3 neighbours each within r.
awk -v n="$n" 'BEGIN { srand(7); s = sqrt(n) * 2.0
    for (i = 0; i < n; i++) printf "%.6f,%.6f\n", rand() * s, rand() * s }' > "$tmp/points.csv"

"$nearby" pairs "$tmp/points.csv" --radius "$r" > "$tmp/pairs.csv"
count=$("$nearby" pairs "$tmp/points.csv" --radius "$r" --count)

awk -F, -v r="$r" '{ x[NR - 1] = $1; y[NR - 1] = $2 }
    END { for (i = 0; i < NR; i++) for (j = i + 1; j < NR; j++) {
        dx = x[i] - x[j]; dy = y[i] - y[j]
        if (dx * dx + dy * dy <= r * r) print i "," j } }' "$tmp/points.csv" > "$tmp/brute.csv"

echo "cli_pairs: $n points, $count pairs within $r"
if ! cmp -s "$tmp/pairs.csv" "$tmp/brute.csv" || [ "$count" -ne "$(wc -l < "$tmp/brute.csv")" ]; then
    echo "cli_pairs: MISMATCH against brute force" >&2
    diff "$tmp/pairs.csv" "$tmp/brute.csv" | head >&2 || true
    exit 1
fi

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Randomized consistency: for a few hundred random points (lattice points, duplicates, exact
# 1.25 offsets, a far cluster), `nearby pairs/within/knn` must print exactly what the
# independent brute-force program brute_pairs.c computes, with every structure. Needs only bash and the two binaries.
#   consistency.sh NEARBY BRUTE_PAIRS
set -u
nearby=$1 brute=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nearby-consistency.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
radii=(0 0.25 1 1.25 2.5)
structures=(dense hash tiles) # every structure that answers pairs, within and knn
failures=0

. "$(dirname "$0")/check.sh" # check LABEL EXPECTED COMMAND...

for seed in 1 2; do
  for dim in 2 3; do
    n=$((250 + 50 * seed))
    set_name="seed $seed, ${dim}D, $n points"
    p="$tmp/s${seed}d${dim}"
    "$brute" "$seed" "$n" "$dim" "$p" "${radii[@]}" || { echo "FAIL brute_pairs"; exit 1; }
    at=$(cat "$p.at")
    for s in "${structures[@]}"; do
      st=(--structure "$s")
      for k in "${!radii[@]}"; do
        r=${radii[$k]} rk="$p.r$((k + 1))"
        check "$set_name, $s: pairs r=$r" "$rk.pairs" "$nearby" pairs "$p.csv" --radius "$r" "${st[@]}"
        # the same pairs streamed (a radius query per point) instead of collected and sorted
        check "$set_name, $s: pairs streamed r=$r" "$rk.pairs" \
          env NEARBY_PAIRS_IN_MEMORY=0 "$nearby" pairs "$p.csv" --radius "$r" "${st[@]}"
        check "$set_name, $s: within r=$r" "$rk.within" \
          "$nearby" within "$p.csv" --radius "$r" --at "$at" "${st[@]}"
      done
      check "$set_name, $s: pairs .f64 r=1.25" "$p.r4.pairs" \
        "$nearby" pairs "$p.f64" --dim "$dim" --radius 1.25 "${st[@]}"
      wc -l < "$p.r5.pairs" | tr -d ' ' > "$tmp/count"
      check "$set_name, $s: pairs --count r=2.5" "$tmp/count" \
        "$nearby" pairs "$p.csv" --radius 2.5 --count "${st[@]}"
      check "$set_name, $s: knn k=7" "$p.knn" "$nearby" knn "$p.csv" --k 7 --at "$at" "${st[@]}"
    done
  done
done
if [ $failures -ne 0 ]; then
  echo "$failures consistency checks failed"
  exit 1
fi
echo "all consistency checks passed"

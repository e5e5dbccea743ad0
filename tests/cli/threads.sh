#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `nearby pairs --threads N`: the output is byte for byte the same for every N (the grid on the
# pthreads pool gives the serial results), on inputs large enough to run in parallel, in 2D
# and 3D; bad values of --threads exit 2 with a message. Then the same of knn, within and join.
#   threads.sh NEARBY
set -u
nearby=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nearby-threads.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
failures=0
awk 'BEGIN { srand(11); for (i = 0; i < 40000; i++) printf "%.17g,%.17g\n", rand() * 200, rand() * 200 }' > "$tmp/p2.csv"
awk 'BEGIN { srand(12); for (i = 0; i < 30000; i++) printf "%.17g,%.17g,%.17g\n", int(rand() * 30), int(rand() * 30), int(rand() * 30) }' > "$tmp/p3.csv"
for input in p2:1.5 p3:1; do
  f=$tmp/${input%%:*}.csv r=${input#*:}
  "$nearby" pairs "$f" --radius "$r" --threads 1 > "$tmp/one" || { echo "FAIL $input: --threads 1"; exit 1; }
  [ -s "$tmp/one" ] || { echo "FAIL $input: no pairs at all"; exit 1; }
  for t in 2 3 8; do
    "$nearby" pairs "$f" --radius "$r" --threads "$t" > "$tmp/got" || { echo "FAIL $input: --threads $t exit"; failures=$((failures + 1)); continue; }
    cmp -s "$tmp/one" "$tmp/got" || { echo "FAIL $input: --threads $t differs from --threads 1"; failures=$((failures + 1)); }
    "$nearby" pairs "$f" --radius "$r" --threads "$t" --count > "$tmp/count"
    [ "$(cat "$tmp/count")" = "$(wc -l < "$tmp/one" | tr -d ' ')" ] || { echo "FAIL $input: --threads $t --count"; failures=$((failures + 1)); }
  done
  "$nearby" pairs "$f" --radius "$r" > "$tmp/got" && cmp -s "$tmp/one" "$tmp/got" || { echo "FAIL $input: default threads differ"; failures=$((failures + 1)); }
done
for bad in 0 -1 257 x 1.5 ""; do
  "$nearby" pairs "$tmp/p2.csv" --radius 1 --threads "$bad" > /dev/null 2> "$tmp/err"
  status=$?
  if [ $status -ne 2 ] || ! grep -q -- "--threads" "$tmp/err"; then
    echo "FAIL --threads '$bad': exit $status, message: $(cat "$tmp/err")"
    failures=$((failures + 1))
  fi
done
# knn answers batches of queries on the workers, each part of a batch formatted apart and
# written in order: the kNN graph, --queries and -o .npy must not depend on N either (the
# batches' parts end mid-file: 40000 and 30000 rows of queries are many batches).
head -n 30000 "$tmp/p2.csv" > "$tmp/q2.csv"
for run in "graph:p2.csv --k 5" "queries:p2.csv --k 3 --queries $tmp/q2.csv" "graph3:p3.csv --k 7" \
  "at:p2.csv --k 9 --at 10,10"; do
  name=${run%%:*} args=${run#*:}
  # shellcheck disable=SC2086
  (cd "$tmp" && "$nearby" knn $args --threads 1 > "$tmp/k1" && "$nearby" knn $args --threads 1 -o "$tmp/k1.npy") ||
    { echo "FAIL knn $name --threads 1"; exit 1; }
  [ "$(wc -l < "$tmp/k1")" -gt 8 ] || { echo "FAIL knn $name: too few rows"; exit 1; }
  for t in 2 3 8; do
    # shellcheck disable=SC2086
    (cd "$tmp" && "$nearby" knn $args --threads "$t" > "$tmp/kt" && "$nearby" knn $args --threads "$t" -o "$tmp/kt.npy") ||
      { echo "FAIL knn $name --threads $t: exit"; failures=$((failures + 1)); continue; }
    cmp -s "$tmp/k1" "$tmp/kt" || { echo "FAIL knn $name: --threads $t differs"; failures=$((failures + 1)); }
    cmp -s "$tmp/k1.npy" "$tmp/kt.npy" || { echo "FAIL knn $name: --threads $t .npy differs"; failures=$((failures + 1)); }
  done
done
# within --queries and join answer their queries the same way (parts of 1024 queries, the
# buffers growing as a part needs): the rows, -o .npy and join's --count must not depend on N.
for run in "within:within p2.csv --radius 2 --queries $tmp/q2.csv" "join:join $tmp/q2.csv p2.csv --radius 2" \
  "join3:join p3.csv p3.csv --radius 1.5" "at:within p2.csv --radius 30 --at 100,100"; do
  name=${run%%:*} args=${run#*:}
  # shellcheck disable=SC2086
  (cd "$tmp" && "$nearby" $args --threads 1 > "$tmp/w1" && "$nearby" $args --threads 1 -o "$tmp/w1.npy") ||
    { echo "FAIL $name --threads 1"; exit 1; }
  [ "$(wc -l < "$tmp/w1")" -gt 2000 ] || { echo "FAIL $name: too few rows"; exit 1; }
  for t in 2 3 8; do
    # shellcheck disable=SC2086
    (cd "$tmp" && "$nearby" $args --threads "$t" > "$tmp/wt" && "$nearby" $args --threads "$t" -o "$tmp/wt.npy") ||
      { echo "FAIL $name --threads $t: exit"; failures=$((failures + 1)); continue; }
    cmp -s "$tmp/w1" "$tmp/wt" || { echo "FAIL $name: --threads $t differs"; failures=$((failures + 1)); }
    cmp -s "$tmp/w1.npy" "$tmp/wt.npy" || { echo "FAIL $name: --threads $t .npy differs"; failures=$((failures + 1)); }
    if [ "${name#join}" != "$name" ]; then
      # shellcheck disable=SC2086
      (cd "$tmp" && "$nearby" $args --threads "$t" --count > "$tmp/wc")
      [ "$(cat "$tmp/wc")" = "$(wc -l < "$tmp/w1" | tr -d ' ')" ] || { echo "FAIL $name: --threads $t --count"; failures=$((failures + 1)); }
    fi
  done
done
[ $failures -eq 0 ] && echo "threads: every --threads gives the same output" || exit 1

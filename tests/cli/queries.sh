#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The commands on many queries against the independent brute force of brute_pairs.c: `within
# --queries`, `knn --queries`, the kNN graph (`knn` alone) and `join`, on random points with
# exact ties, with every structure that can serve them (the quadtree in 2D), from CSV and .f64
# inputs; then every output format of -o decoded back (by brute_pairs, and by NumPy when
# /usr/bin/python3 has it) to the same rows as the CSV. Needs only bash and the two binaries.
#   queries.sh NEARBY BRUTE_PAIRS
set -u
nearby=$1 brute=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nearby-queries.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
failures=0

. "$(dirname "$0")/check.sh" # check LABEL EXPECTED COMMAND...

for seed in 1 2; do
  for dim in 2 3; do
    n=$((200 + 50 * seed)) nq=$((60 + 20 * seed))
    p="$tmp/p$seed$dim" q="$tmp/q$seed$dim"
    "$brute" "$seed" "$n" "$dim" "$p" 1 > /dev/null || { echo "FAIL brute_pairs"; exit 1; }
    "$brute" "$((seed + 10))" "$nq" "$dim" "$q" 1 > /dev/null || { echo "FAIL brute_pairs"; exit 1; }
    for r in 0 1.25 2.5; do
      "$brute" cross "$q.f64" "$nq" "$p.f64" "$n" "$dim" "$r" > "$tmp/cross.r$r"
    done
    "$brute" knn "$q.f64" "$nq" "$p.f64" "$n" "$dim" 5 > "$tmp/knn5"
    "$brute" knn "$p.f64" "$n" "$p.f64" "$n" "$dim" 4 graph > "$tmp/graph4"
    head -c $((12 * dim * 8)) "$p.f64" > "$tmp/first12.f64"
    "$brute" knn "$tmp/first12.f64" 12 "$tmp/first12.f64" 12 "$dim" 30 graph > "$tmp/graph_all"
    structures=(dense hash tiles)
    [ "$dim" = 2 ] && structures+=(quadtree)
    for s in "${structures[@]}"; do
      set_name="seed $seed, ${dim}D, $s"
      st=(--structure "$s")
      for r in 0 1.25 2.5; do
        check "$set_name: within --queries r=$r" "$tmp/cross.r$r" \
          "$nearby" within "$p.csv" --radius "$r" --queries "$q.csv" "${st[@]}"
        check "$set_name: join r=$r" "$tmp/cross.r$r" \
          "$nearby" join "$q.csv" "$p.csv" --radius "$r" "${st[@]}"
      done
      check "$set_name: within --queries .f64" "$tmp/cross.r1.25" \
        "$nearby" within "$p.f64" --dim "$dim" --radius 1.25 --queries "$q.f64" "${st[@]}"
      check "$set_name: join .f64" "$tmp/cross.r1.25" \
        "$nearby" join "$q.f64" "$p.f64" --dim "$dim" --radius 1.25 "${st[@]}"
      wc -l < "$tmp/cross.r2.5" | tr -d ' ' > "$tmp/count"
      check "$set_name: join --count" "$tmp/count" \
        "$nearby" join "$q.csv" "$p.csv" --radius 2.5 --count "${st[@]}"
      check "$set_name: knn --queries" "$tmp/knn5" \
        "$nearby" knn "$p.csv" --k 5 --queries "$q.csv" "${st[@]}"
      check "$set_name: knn graph" "$tmp/graph4" "$nearby" knn "$p.csv" --k 4 "${st[@]}"
      check "$set_name: knn graph, k above N" "$tmp/graph_all" \
        "$nearby" knn "$tmp/first12.f64" --dim "$dim" --k 30 "${st[@]}"
    done
  done
done

# Every -o format holds the rows the CSV prints: decoded by brute_pairs (and NumPy if present).
p="$tmp/p13" q="$tmp/q13"
"$nearby" within "$p.csv" --radius 2.5 --queries "$q.csv" > "$tmp/within.csv"
"$nearby" knn "$p.csv" --k 3 > "$tmp/graph.csv"
"$nearby" knn "$p.csv" --k 3 --at 0.5,0.5,0.5 > "$tmp/at.csv"
"$nearby" pairs "$p.csv" --radius 1.25 > "$tmp/pairs.csv"
[ -s "$tmp/within.csv" ] && [ -s "$tmp/graph.csv" ] || { echo "FAIL no rows to compare"; exit 1; }
written() { # label command... : runs a command that writes -o FILE; it must print nothing
  local label=$1
  shift
  if ! "$@" > "$tmp/got" 2> "$tmp/err" || [ -s "$tmp/got" ]; then
    echo "FAIL $label: exit status or output ($(head -c 300 "$tmp/err"))"
    failures=$((failures + 1))
  fi
}
for f in csv npy f64 i64; do
  written "within -o .$f" "$nearby" within "$p.csv" --radius 2.5 --queries "$q.csv" -o "$tmp/w.$f"
  written "pairs -o .$f" env NEARBY_PAIRS_IN_MEMORY=0 \
    "$nearby" pairs "$p.csv" --radius 1.25 -o "$tmp/p.$f"
  written "pairs -o .$f, in memory" "$nearby" pairs "$p.csv" --radius 1.25 -o "$tmp/pm.$f"
  if [ "$f" = csv ]; then
    check "within -o .csv holds the text" "$tmp/within.csv" cat "$tmp/w.csv"
    check "pairs -o .csv holds the text" "$tmp/pairs.csv" cat "$tmp/p.csv"
    check "pairs -o .csv holds the text, in memory" "$tmp/pairs.csv" cat "$tmp/pm.csv"
    continue
  fi
  check "within .$f decoded" "$tmp/within.csv" "$brute" decode "$tmp/w.$f" "$f" 2 none
  check "pairs .$f decoded" "$tmp/pairs.csv" "$brute" decode "$tmp/p.$f" "$f" 2 none
  check "pairs .$f decoded, in memory" "$tmp/pairs.csv" "$brute" decode "$tmp/pm.$f" "$f" 2 none
  [ "$f" = i64 ] && continue # no distances in .i64
  written "knn graph -o .$f" "$nearby" knn "$p.csv" --k 3 -o "$tmp/g.$f"
  check "knn graph .$f decoded" "$tmp/graph.csv" "$brute" decode "$tmp/g.$f" "$f" 3 distance
  written "knn --at -o .$f" "$nearby" knn "$p.csv" --k 3 --at 0.5,0.5,0.5 -o "$tmp/a.$f"
  check "knn --at .$f decoded" "$tmp/at.csv" "$brute" decode "$tmp/a.$f" "$f" 2 distance
done
# Rows that need no index column of more than 32 bits: .npy int32 (N, 2); (N,) for --at.
written "within --at -o .npy" "$nearby" within "$p.csv" --radius 2.5 --at 0,0,0 -o "$tmp/w1.npy"
"$nearby" within "$p.csv" --radius 2.5 --at 0,0,0 > "$tmp/w1.csv"
check "within --at .npy decoded" "$tmp/w1.csv" "$brute" decode "$tmp/w1.npy" npy 1 none
if /usr/bin/python3 -c "import numpy" > /dev/null 2>&1; then
  cat > "$tmp/load.py" << 'EOF'
import sys
import numpy as np
a = np.load(sys.argv[1])
if a.dtype.names:  # structured: int32 indices, a float64 distance
    assert [a.dtype[n].str for n in a.dtype.names] == ["<i4"] * (len(a.dtype.names) - 1) + ["<f8"]
    for row in a:
        print(",".join([str(int(v)) for v in list(row)[:-1]] + [repr(float(row[-1]))]))
else:
    assert a.dtype.str == "<i4", a.dtype
    for row in a.reshape(len(a), -1):
        print(",".join(str(int(v)) for v in row))
EOF
  check "within .npy read by NumPy" "$tmp/within.csv" /usr/bin/python3 "$tmp/load.py" "$tmp/w.npy"
  check "within --at .npy read by NumPy" "$tmp/w1.csv" /usr/bin/python3 "$tmp/load.py" "$tmp/w1.npy"
  # Python's repr and the tool both print the shortest text that reads back, but lay out
  # exponents differently: compare the values.
  /usr/bin/python3 "$tmp/load.py" "$tmp/g.npy" > "$tmp/g.np.csv"
  if ! /usr/bin/python3 -c "
import sys
a = [l.split(',') for l in open(sys.argv[1])]
b = [l.split(',') for l in open(sys.argv[2])]
sys.exit(not (len(a) == len(b) and all(x[:2] == y[:2] and float(x[2]) == float(y[2]) for x, y in zip(a, b))))
" "$tmp/graph.csv" "$tmp/g.np.csv"; then
    echo "FAIL knn graph .npy read by NumPy differs"
    failures=$((failures + 1))
  fi
else
  echo "(NumPy not found: the .npy files were checked by brute_pairs only)"
fi
# The queries are answered in batches, each in the Z order of its queries, the rows written
# back in query order: with batches of a few queries (NEARBY_QUERY_BATCH; 64Ki by default)
# every batch and part boundary falls mid-file, and the rows must still be brute force's.
"$brute" cross "$q.f64" 80 "$p.f64" 250 3 1.25 > "$tmp/cross13"
"$brute" knn "$q.f64" 80 "$p.f64" 250 3 5 > "$tmp/knn13"
"$brute" knn "$p.f64" 250 "$p.f64" 250 3 4 graph > "$tmp/graph13"
for b in 1 7 64; do
  for t in 1 3; do
    run=(env NEARBY_QUERY_BATCH=$b "$nearby")
    check "batches of $b, $t threads: within --queries" "$tmp/cross13" \
      "${run[@]}" within "$p.csv" --radius 1.25 --queries "$q.csv" --threads $t
    check "batches of $b, $t threads: join" "$tmp/cross13" \
      "${run[@]}" join "$q.csv" "$p.csv" --radius 1.25 --threads $t
    check "batches of $b, $t threads: knn --queries" "$tmp/knn13" \
      "${run[@]}" knn "$p.csv" --k 5 --queries "$q.csv" --threads $t
    check "batches of $b, $t threads: knn graph" "$tmp/graph13" \
      "${run[@]}" knn "$p.csv" --k 4 --threads $t
  done
done
if [ $failures -ne 0 ]; then
  echo "$failures query checks failed"
  exit 1
fi
echo "all query checks passed"

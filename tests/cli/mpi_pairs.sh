#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# nearby-mpi against nearby: on 1 to 4 ranks, `nearby-mpi pairs --count` must print what
# `nearby pairs --count` prints, and the per-rank files of `-o DIR`, each sorted, must hold
# together exactly the lines `nearby pairs` prints, each pair in one file only; on bad input
# every rank must exit 2 and the one message must be nearby's (named nearby-mpi).
#   mpi_pairs.sh NEARBY NEARBY_MPI MPIRUN_SH BRUTE_PAIRS
# MPIRUN_SH is tests/mpi/mpirun.sh (root-safe Open MPI settings); exit 77 (skipped) when it
# finds no mpirun. Needs bash, coreutils and the programs.
set -u
nearby=$1 mpi=$2 mpirun=$3 brute=$4
# No "N processes returned a non-zero exit code" banner from mpirun: the tool's message is
# the only line on standard error.
export OMPI_MCA_orte_execute_quiet=${OMPI_MCA_orte_execute_quiet:-1}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nearby-mpi.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
  echo "FAIL $*"
  failures=$((failures + 1))
}

mpi_run() { # NP ARGS...: nearby-mpi on NP ranks, never longer than 2 minutes
  local np=$1
  shift
  timeout 120 sh "$mpirun" "$np" "$mpi" "$@"
}
mpi_run 1 --version > /dev/null 2>&1
case $? in
  0) ;;
  77) echo "mpirun not found: skipped"; exit 77 ;;
  *) echo "FAIL nearby-mpi --version on 1 rank"; sh "$mpirun" 1 "$mpi" --version; exit 1 ;;
esac

# A .npy (version 1.0, little-endian float64, C order) around the raw doubles of a .f64.
to_npy() { # F64 N DIM OUT
  local dict="{'descr': '<f8', 'fortran_order': False, 'shape': ($2, $3), }"
  local pad=$(((64 - (10 + ${#dict} + 1) % 64) % 64))
  local hl=$((${#dict} + pad + 1))
  {
    printf '\223NUMPY\001\000'
    printf "\\$(printf %03o $((hl & 255)))\\$(printf %03o $((hl >> 8)))"
    printf '%s%*s\n' "$dict" "$pad" ''
    cat "$1"
  } > "$4"
}

sort_pairs() { LC_ALL=C sort -t, -k1,1n -k2,2n "$@"; }

# compare LABEL NP INPUT ARGS...: --count and -o on NP ranks against nearby pairs.
compare() {
  local label=$1 np=$2 input=$3
  shift 3
  local dir=$tmp/out.$np want=$tmp/want got=$tmp/got
  rm -rf "$dir"
  if ! "$nearby" pairs "$input" "$@" > "$want" 2> "$tmp/want.err" ||
    ! "$nearby" pairs "$input" "$@" --count > "$want.count" 2>> "$tmp/want.err"; then
    fail "$label: nearby itself failed: $(head -c 300 "$tmp/want.err")"
    return
  fi
  mpi_run "$np" pairs "$input" "$@" --count -o "$dir" > "$got.count" 2> "$got.err"
  local status=$?
  if [ $status -ne 0 ] || [ -s "$got.err" ]; then
    fail "$label, $np ranks: exit status $status, stderr: $(head -c 300 "$got.err")"
    return
  fi
  cmp -s "$want.count" "$got.count" ||
    fail "$label, $np ranks: --count printed $(cat "$got.count"), nearby $(cat "$want.count")"
  local files
  files=$(find "$dir" -name 'pairs.*.csv' | wc -l)
  [ "$files" -eq "$np" ] || fail "$label, $np ranks: $files files in -o DIR, expected $np"
  local k
  for ((k = 0; k < np; k++)); do
    sort_pairs -c "$dir/pairs.$k.csv" 2> /dev/null ||
      fail "$label, $np ranks: pairs.$k.csv is not sorted by i then j"
  done
  cat "$dir"/pairs.*.csv > "$got"
  [ -z "$(awk -F, '!($1 < $2)' "$got")" ] || fail "$label, $np ranks: a pair with i >= j"
  [ -z "$(sort_pairs "$got" | uniq -d)" ] || fail "$label, $np ranks: a pair in two files"
  sort_pairs "$got" | cmp -s - "$want" || {
    fail "$label, $np ranks: the files' pairs differ from nearby pairs"
    sort_pairs "$got" | diff "$want" - | head -n 6
  }
}

# Brute-force's point sets (lattice points, duplicates, exact 1.25 offsets, a far cluster):
# 2D and 3D, as .f64 and as .npy.
for dim in 2 3; do
  p=$tmp/s$dim
  "$brute" 5 700 "$dim" "$p" 1 > /dev/null || { echo "FAIL brute_pairs"; exit 1; }
  to_npy "$p.f64" 700 "$dim" "$p.npy"
  # Each rank count once a dimension, the two radii on alternate counts (the wider halo on 2
  # and 4 ranks): every rank count and every radius, at half the mpirun starts of all pairs.
  for np in 1 2 3 4; do
    r=1.25
    [ $((np % 2)) -eq 0 ] && r=2.5
    compare "${dim}D .f64 r=$r" "$np" "$p.f64" --dim "$dim" --radius "$r"
  done
  for np in 1 3; do
    compare "${dim}D .npy r=1.25" "$np" "$p.npy" --radius 1.25
  done
done
# Many exact duplicates (the 2D set three times: pairs at distance 0 across the copies), and
# ranks with no points: no point, one point and two points on 4 ranks; radius 0.
cat "$tmp/s2.f64" "$tmp/s2.f64" "$tmp/s2.f64" > "$tmp/dup.f64"
compare "duplicates r=1" 4 "$tmp/dup.f64" --radius 1
compare "duplicates r=0" 3 "$tmp/dup.f64" --radius 0
: > "$tmp/empty.f64"
head -c 16 "$tmp/s2.f64" > "$tmp/one.f64"
head -c 32 "$tmp/s2.f64" > "$tmp/two.f64"
for f in empty one two; do
  compare "$f.f64" 4 "$tmp/$f.f64" --radius 1e9
done

# Bad input: every rank exits 2, and standard error holds nearby's one line (nearby-mpi's
# name in it). Each rank writes its exit status to $tmp/status/RANK.
bad() { # LABEL NP ARGS... (run by both tools; nearby without -o / --count)
  local label=$1 np=$2
  shift 2
  local args=() a skip=""
  for a in "$@"; do # nearby's arguments: the same without --count and -o DIR
    if [ -n "$skip" ]; then skip="" && continue; fi
    case $a in --count) continue ;; -o) skip=1 && continue ;; esac
    args+=("$a")
  done
  "$nearby" "${args[@]}" > /dev/null 2> "$tmp/want.err"
  sed -e 's/^nearby: /nearby-mpi: /' -e 's/(see nearby /(see nearby-mpi /' "$tmp/want.err" \
    > "$tmp/want.mpi.err"
  mpi_run "$np" "$@" > "$tmp/got.out" 2> "$tmp/got.raw.err"
  local status=$? k
  # Open MPI's event library now and then warns on its way out ("[warn] Epoll MOD(1) on fd 25
  # failed ..."): the runtime's, not nearby-mpi's (seen once, 2026-12-02).
  grep -v '^\[warn\] ' "$tmp/got.raw.err" > "$tmp/got.err" || true # none left: fine
  [ $status -eq 2 ] || fail "$label: mpirun exit status $status, expected 2"
  # Again, each rank's status recorded by a wrapper that then exits 0 (mpirun stops the other
  # ranks once one fails: their statuses would be lost).
  rm -rf "$tmp/status" && mkdir -p "$tmp/status"
  # shellcheck disable=SC2016 # expanded by the inner bash
  timeout 120 sh "$mpirun" "$np" bash -c \
    '"$@"; echo $? > "'"$tmp"'/status/${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-x}}"' \
    _ "$mpi" "$@" > /dev/null 2>&1
  for ((k = 0; k < np; k++)); do
    [ "$(cat "$tmp/status/$k" 2> /dev/null)" = 2 ] ||
      fail "$label: rank $k exit status '$(cat "$tmp/status/$k" 2> /dev/null)', expected 2"
  done
  [ -s "$tmp/got.out" ] && fail "$label: something on standard output"
  if [ "${EXPECT:-nearby}" = nearby ]; then
    cmp -s "$tmp/want.mpi.err" "$tmp/got.err" || {
      fail "$label: standard error is not nearby's message"
      diff "$tmp/want.mpi.err" "$tmp/got.err" | head -n 6
    }
  else
    [ "$(wc -l < "$tmp/got.err")" -eq 1 ] && grep -q "^nearby-mpi: .*$EXPECT" "$tmp/got.err" ||
      { fail "$label: expected one line with '$EXPECT'"; head -n 5 "$tmp/got.err"; }
  fi
}
f=$tmp/s2.f64
bad "missing --radius" 4 pairs "$f" --count
bad "negative radius" 3 pairs "$f" --radius -1 --count
bad "missing file" 4 pairs "$tmp/no_such.f64" --radius 1 --count
# 700 points on 4 ranks: rows 350..524 are rank 2's; a NaN at row 400, a y.
cp "$f" "$tmp/nan.f64"
printf '\000\000\000\000\000\000\370\177' |
  dd of="$tmp/nan.f64" bs=1 seek=$((400 * 16 + 8)) conv=notrunc status=none
bad "NaN in rank 2's rows" 4 pairs "$tmp/nan.f64" --radius 1 -o "$tmp/nan.out"
[ -e "$tmp/nan.out/pairs.0.csv" ] && fail "NaN: rank 0's file left behind after the failure"
cp "$tmp/s3.f64" "$tmp/inf3.f64"
printf '\000\000\000\000\000\000\360\377' |
  dd of="$tmp/inf3.f64" bs=1 seek=$((699 * 24 + 16)) conv=notrunc status=none
bad "-inf in the last rank's last row" 3 pairs "$tmp/inf3.f64" --dim 3 --radius 1 --count
cp "$f" "$tmp/trunc.f64" && printf 'abc' >> "$tmp/trunc.f64"
bad "truncated .f64" 2 pairs "$tmp/trunc.f64" --radius 1 --count
printf 'not a npy file\n' > "$tmp/bad.npy"
bad "not a .npy" 4 pairs "$tmp/bad.npy" --radius 1 --count
bad ".npy of the wrong --dim" 2 pairs "$tmp/s3.npy" --dim 2 --radius 1 --count
bad "unknown option" 2 pairs "$f" --radius 1 --count --bogus
EXPECT="missing --count or -o DIR" bad "neither --count nor -o" 3 pairs "$f" --radius 1
EXPECT="CSV is not read" bad "CSV input" 2 pairs "$tmp/s2.csv" --radius 1 --count
EXPECT="cannot create the directory" bad "-o in a missing directory" 2 \
  pairs "$f" --radius 1 -o "$tmp/no/such/dir"

if [ $failures -ne 0 ]; then
  echo "$failures nearby-mpi checks failed"
  exit 1
fi
echo "nearby-mpi: all checks passed"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs `nearby demo` and checks its answer, not just its shape: the exit status must be 0,
# standard error empty, the report complete, and its pair count equal to a brute-force count
# (brute_pairs.c, every pair tested) over the very points the demo generated, which it writes
# with --save-points (the last frame's positions). The dimension, radius and point count are
# read back from the report. The picture goes to a temporary file and must be well-formed XML.
#   demo_check.sh NEARBY BRUTE_PAIRS [DEMO OPTIONS...]
set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 NEARBY BRUTE_PAIRS [DEMO OPTIONS...]" >&2
  exit 2
fi
nearby=$1 brute=$2
shift 2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nearby-demo.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

"$nearby" demo "$@" --save-points "$tmp/points.f64" --svg "$tmp/demo.svg" > "$tmp/out" \
  2> "$tmp/err"
status=$?
cat "$tmp/out"
if [ $status -ne 0 ]; then
  echo "FAIL: nearby demo $*: exit status $status ($(head -c 300 "$tmp/err"))"
  exit 1
fi
if [ -s "$tmp/err" ]; then
  echo "FAIL: nearby demo $*: wrote to standard error: $(head -c 300 "$tmp/err")"
  exit 1
fi
field() { sed -n "s/^$1 *//p" "$tmp/out"; }
dim=$(sed -n 's/^nearby demo: [0-9]* agents .* (\([23]\)D, .*/\1/p' "$tmp/out")
radius=$(field 'radius:')
n=$(field 'points:')
pairs=$(field 'pairs:' | sed 's/ (in the last frame)$//')
for name in dim radius n pairs; do
  if [ -z "${!name}" ]; then
    echo "FAIL: the report has no $name"
    exit 1
  fi
done
if ! [[ $pairs =~ ^[0-9]+$ ]]; then
  echo "FAIL: pairs is not a stored count: \"$pairs\""
  exit 1
fi
for line in 'structure +ms/frame' 'dense +[0-9.]+ +\( *[0-9.]+ \+ +[0-9.]+\) +[0-9.]+ +[0-9.]+' \
  'exact: +every structure found the same neighbours in every frame' 'picture: '; do
  if ! grep -Eq "^$line" "$tmp/out"; then
    echo "FAIL: the report has no line matching \"$line\""
    exit 1
  fi
done

want=$("$brute" count "$tmp/points.f64" "$n" "$dim" "$radius") || {
  echo "FAIL: brute_pairs count failed"
  exit 1
}
if [ "$pairs" != "$want" ]; then
  echo "FAIL: the demo found $pairs pairs; brute force over its points finds $want"
  exit 1
fi
bash "$(dirname "$0")/xml_check.sh" "$tmp/demo.svg" || exit 1
echo "demo pair count $pairs matches brute force (${dim}D, $n points, radius $radius)"

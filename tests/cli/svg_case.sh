#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One SVG golden test: runs the tool with @OUT@ in its arguments replaced by a temporary file,
# and checks the exit status (0), standard error (empty), standard output (EXPECTED_STDOUT, with
# the temporary path written back as @OUT@; "none" skips it) and the SVG byte for byte against
# EXPECTED_SVG. Then the SVG must parse as XML (python3's xml.etree; without python3 that check
# says it is skipped and the test still passes).
#   svg_case.sh NEARBY EXPECTED_SVG EXPECTED_STDOUT|none ARGS...
set -u
if [ $# -lt 4 ]; then
  echo "usage: $0 NEARBY EXPECTED_SVG EXPECTED_STDOUT|none ARGS..." >&2
  exit 2
fi
nearby=$1 want_svg=$2 want_out=$3
shift 3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nearby-svg.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
args=()
for a in "$@"; do args+=("${a//@OUT@/$tmp/picture.svg}"); done

"$nearby" "${args[@]}" > "$tmp/out" 2> "$tmp/err"
status=$?
fail=0
if [ $status -ne 0 ]; then echo "--- exit status: expected 0, got $status"; fail=1; fi
if [ -s "$tmp/err" ]; then echo "--- standard error: $(head -c 300 "$tmp/err")"; fail=1; fi
if [ "$want_out" != none ]; then
  sed "s|$tmp/picture.svg|@OUT@|g" "$tmp/out" > "$tmp/out.norm"
  if ! cmp -s "$want_out" "$tmp/out.norm"; then
    echo "--- stdout differs (expected, then actual):"; cat "$want_out"; cat "$tmp/out.norm"; fail=1
  fi
fi
if [ ! -f "$tmp/picture.svg" ]; then
  echo "--- no picture written"; fail=1
elif ! cmp -s "$want_svg" "$tmp/picture.svg"; then
  echo "--- the SVG differs from $want_svg"
  if command -v diff > /dev/null 2>&1; then diff "$want_svg" "$tmp/picture.svg" | head -n 20; fi
  fail=1
fi
if [ -f "$tmp/picture.svg" ]; then
  bash "$(dirname "$0")/xml_check.sh" "$tmp/picture.svg" || fail=1
fi
if [ $fail -ne 0 ]; then
  printf 'command:'; printf ' %q' "$nearby" "${args[@]}"; echo
  exit 1
fi
exit 0

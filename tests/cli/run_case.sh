#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One CLI golden test: runs the tool and compares its stdout, stderr and exit status exactly.
#   run_case.sh NEARBY EXPECTED_STDOUT EXPECTED_STDERR EXPECTED_STATUS STDIN_FILE|none [ARGS...]
# Runs in the current directory (ctest sets it to tests/cli/data), so file names in messages
# are the short ones the expected files hold.
set -u
if [ $# -lt 5 ]; then
  echo "usage: $0 NEARBY EXPECTED_STDOUT EXPECTED_STDERR EXPECTED_STATUS STDIN_FILE|none [ARGS...]" >&2
  exit 2
fi
nearby=$1 want_out=$2 want_err=$3 want_status=$4 stdin_file=$5
shift 5
[ "$stdin_file" = none ] && stdin_file=/dev/null

got="${TMPDIR:-/tmp}/nearby-cli.$$"
trap 'rm -f "$got.out" "$got.err"' EXIT

"$nearby" "$@" < "$stdin_file" > "$got.out" 2> "$got.err"
status=$?

fail=0
show_diff() { # label expected actual
  echo "--- $1 differs (expected, then actual):"
  if command -v diff > /dev/null 2>&1; then
    diff -u "$2" "$3" | head -n 40
  else
    echo "[expected]"; head -n 20 "$2"; echo "[actual]"; head -n 20 "$3"
  fi
}
if [ "$status" != "$want_status" ]; then
  echo "--- exit status: expected $want_status, got $status"
  fail=1
fi
if ! cmp -s "$want_out" "$got.out"; then show_diff stdout "$want_out" "$got.out"; fail=1; fi
if ! cmp -s "$want_err" "$got.err"; then show_diff stderr "$want_err" "$got.err"; fail=1; fi
if [ $fail -ne 0 ]; then
  printf 'command:'; printf ' %q' "$nearby" "$@"; echo
  exit 1
fi
exit 0

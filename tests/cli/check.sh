# SPDX-License-Identifier: MIT
# Sourced by consistency.sh and queries.sh: `check LABEL EXPECTED-FILE COMMAND...` runs the
# command and counts a failure (in $failures, printing why) unless it exits 0 and prints exactly
# EXPECTED-FILE. The caller sets $tmp (a scratch directory) and failures=0.
check() {
  local label=$1 want=$2
  shift 2
  "$@" > "$tmp/got" 2> "$tmp/err"
  local status=$?
  if [ $status -ne 0 ]; then
    echo "FAIL $label: exit status $status ($(head -c 300 "$tmp/err"))"
    failures=$((failures + 1))
  elif ! cmp -s "$want" "$tmp/got"; then
    echo "FAIL $label: output differs from brute force"
    diff "$want" "$tmp/got" 2> /dev/null | head -n 10
    failures=$((failures + 1))
  fi
}

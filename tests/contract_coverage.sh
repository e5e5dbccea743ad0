#!/bin/sh
# SPDX-License-Identifier: MIT
# Every NB_API function declared in include/nearby/*.h must have a case in the contract tests,
# tests/test_contract*.c (a call in their code, or a row of a contract table; comments and string
# literals do not count),
# so that no public function is added without its contract cases. Usage: contract_coverage.sh [ROOT]
set -eu
root=${1:-$(dirname "$0")/..}
test_files=$(ls "$root"/tests/test_contract*.c 2> /dev/null) ||
  { echo "contract_coverage: no $root/tests/test_contract*.c" >&2; exit 1; }
# Declarations: from "NB_API" up to the first "(" (joined over lines), the last identifier there.
names=$(cat "$root"/include/nearby/*.h |
  awk '/^[[:space:]]*#/ { next }
       /(^|[^A-Za-z0-9_])NB_API[[:space:]]/ { decl = ""; on = 1 }
       on { decl = decl " " $0; if (index(decl, "(")) { sub(/\(.*/, "", decl); n = split(decl, w, /[^A-Za-z0-9_]+/);
            for (i = n; i > 0; i--) if (w[i] != "") { print w[i]; break }; on = 0 } }' | sort -u)
if [ -z "$names" ]; then
  echo "contract_coverage: found no NB_API functions in $root/include/nearby/*.h" >&2
  exit 1
fi
# A case, not a mention: comments and the text of string literals do not count. What counts is
# a call in the code, or a row of a contract table ({FN_..., "name", ...}).
calls=$(sed -e 's/\\"//g' -e 's/"[^"]*"/""/g' -e 's://.*$::' $test_files | awk '
  { line = $0; out = "";
    while (length(line) > 0) {
      if (inc) { i = index(line, "*/"); if (i == 0) { line = "" } else { line = substr(line, i + 2); inc = 0 } }
      else { i = index(line, "/*"); if (i == 0) { out = out line; line = "" }
             else { out = out substr(line, 1, i - 1); line = substr(line, i + 2); inc = 1 } } }
    print out }')
rows=$(cat $test_files | grep -v '^[[:space:]]*//' | grep -Eo '\{[A-Z][A-Z0-9_]*, *"nb_[a-z0-9_]+"' |
  sed 's/.*"\(nb_[a-z0-9_]*\)"/\1/')
missing=0
total=0
for name in $names; do
  total=$((total + 1))
  if ! printf '%s\n' "$calls" | grep -Eq "(^|[^A-Za-z0-9_])$name[[:space:]]*\(" &&
    ! printf '%s\n' "$rows" | grep -qx "$name"; then
    echo "contract_coverage: $name is declared NB_API but has no case in tests/test_contract*.c" >&2
    missing=$((missing + 1))
  fi
done
if [ "$missing" -ne 0 ]; then
  echo "contract_coverage: $missing of $total public functions lack contract cases" >&2
  exit 1
fi
echo "contract_coverage: all $total NB_API functions have cases in tests/test_contract*.c"

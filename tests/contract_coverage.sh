#!/bin/sh
# SPDX-License-Identifier: MIT
# Every NB_API function declared in include/nearby/*.h must be called in tests/test_contract.c,
# so that no public function is added without its contract cases. Usage: contract_coverage.sh [ROOT]
set -eu
root=${1:-$(dirname "$0")/..}
test_file="$root/tests/test_contract.c"
[ -f "$test_file" ] || { echo "contract_coverage: $test_file not found" >&2; exit 1; }
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
missing=0
total=0
for name in $names; do
  total=$((total + 1))
  if ! grep -Eq "(^|[^A-Za-z0-9_])$name[[:space:]]*\(" "$test_file"; then
    echo "contract_coverage: $name is declared NB_API but never called in tests/test_contract.c" >&2
    missing=$((missing + 1))
  fi
done
if [ "$missing" -ne 0 ]; then
  echo "contract_coverage: $missing of $total public functions lack contract cases" >&2
  exit 1
fi
echo "contract_coverage: all $total NB_API functions appear in tests/test_contract.c"

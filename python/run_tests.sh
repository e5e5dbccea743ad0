#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Python package's step of `make test`: installs ./python into a fresh venv the way
# python/README.md says (Debian's python3 with --system-site-packages, pip without build
# isolation, offline), then runs the pytest suite from outside the source tree against it.
#
#   bash python/run_tests.sh [WORK_DIR]     (default build/python)
#
# Skips (status 0, with a message) when /usr/bin/python3 lacks numpy, scipy, pytest, venv or
# its headers: scripts/setup.sh test installs them on Debian.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=${1:-$root/build/python}
py=/usr/bin/python3 # Debian's python3: numpy and scipy live here, not in a pyenv python on PATH

missing=""
[ -x "$py" ] || missing="$missing python3"
if [ -z "$missing" ]; then
  for mod in numpy scipy pytest venv setuptools; do
    "$py" -c "import $mod" > /dev/null 2>&1 || missing="$missing python3-$mod"
  done
  inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2> /dev/null || true)
  [ -f "$inc/Python.h" ] || missing="$missing python3-dev"
fi
if [ -n "$missing" ]; then
  echo "== python: SKIPPED, missing:$missing (sh scripts/setup.sh test installs them)"
  exit 0
fi

start=$(date +%s)
mkdir -p "$work"
work=$(cd "$work" && pwd)
rm -rf "$work/venv"
"$py" -m venv --system-site-packages "$work/venv"
# The README's install command (quiet; --no-index: offline, numpy comes from the system).
"$work/venv/bin/pip" install --no-build-isolation --no-index --disable-pip-version-check -q \
  "$root/python" > "$work/pip.log" 2>&1 || {
  cat "$work/pip.log" >&2
  echo "python: pip install failed" >&2
  exit 1
}
echo "== python: installed into $work/venv in $(($(date +%s) - start)) s"
# From outside the source tree, so `import nearby` can only find the installed package.
(cd "$work" && NB_PY_INSTALLED=1 "$work/venv/bin/python" -m pytest -q -p no:cacheprovider \
  --rootdir "$root/python/tests" "$root/python/tests")

# scipy's own kd-tree tests, unchanged, against nearby.cKDTree / nearby.KDTree: the file is
# copied from the installed scipy (never kept in this tree) next to the adapter, which points
# scipy.spatial's classes at nearby's and reports 4D+ data as skipped. Every 1D-3D test must
# pass; the run prints the counts.
suite_src=$("$work/venv/bin/python" -c 'import os, scipy.spatial as s
print(os.path.join(os.path.dirname(s.__file__), "tests", "test_kdtree.py"))')
if [ -f "$suite_src" ]; then
  suite=$work/scipy_suite
  rm -rf "$suite"
  mkdir -p "$suite"
  cp "$suite_src" "$suite/test_kdtree.py"
  cp "$root/python/tests/scipy_suite_conftest.py" "$suite/conftest.py"
  (cd "$suite" && "$work/venv/bin/python" -m pytest -q -p no:cacheprovider --rootdir "$suite" \
    "$suite/test_kdtree.py" | grep -v '^[.sFE]*\( *\[ *[0-9]*%\]\)\?$')
else
  echo "== python: scipy's test_kdtree.py is not installed ($suite_src): its suite is not run"
fi

# The other install: CMake with NB_PYTHON=ON (the extension against nearby_static), then
# `cmake --install --component python` into a prefix, imported from there. A Debug build: this
# checks the CMake package's build, install and import (one small query); the suites above ran
# the optimised extension, and -O0 compiles the library in a third of -O3's time.
jobs=$(nproc 2> /dev/null || echo 2)
[ "$jobs" -le 2 ] || jobs=2
cmake -S "$root" -B "$work/cmake" -DCMAKE_BUILD_TYPE=Debug -DNB_WERROR=ON -DNB_PYTHON=ON \
  -DPython3_EXECUTABLE="$py" -DNB_BUILD_TESTS=OFF -DNB_BUILD_CLI=OFF > "$work/cmake.log"
cmake --build "$work/cmake" -j "$jobs" --target nearby_python >> "$work/cmake.log" 2>&1 || {
  cat "$work/cmake.log" >&2
  echo "python: the CMake build of the extension failed" >&2
  exit 1
}
rm -rf "$work/prefix"
cmake --install "$work/cmake" --prefix "$work/prefix" --component python > /dev/null
init=$(find "$work/prefix" -path '*/nearby/__init__.py' | head -n 1)
[ -n "$init" ] || {
  echo "python: cmake --install put no nearby/__init__.py under $work/prefix" >&2
  exit 1
}
site=$(dirname "$(dirname "$init")")
got=$(cd "$work" && PYTHONPATH="$site" "$py" -c 'import nearby, numpy as np
g = nearby.Grid(np.array([[0.0, 0.0], [1.0, 0.0], [5.0, 5.0]]))
print(nearby.__file__, sorted(g.query_pairs(1.0)))')
case "$got" in
  "$site/nearby/__init__.py [(0, 1)]") ;;
  *)
    echo "python: the CMake-installed package answered: $got" >&2
    exit 1
    ;;
esac
echo "== python: cmake --install --component python: imported from ${site#"$work"/}"
echo "== python: passed in $(($(date +%s) - start)) s"

#!/bin/sh
# SPDX-License-Identifier: MIT
# Checks that what a make target needs is installed; does nothing when it is.
#   build   cmake 3.21+, a C compiler and make: all that `make build`, `make demo` and
#           `make install` need, on any Linux, as any user
#   test    build's, plus bash, clang, clang-format, pkg-config and gcc's sanitizer runtimes
#           (ASan, UBSan, TSan) for `make test`; and, where possible, chromium, which only the
#           SVG screenshot test uses (it is skipped without it), and Debian's python3-dev,
#           python3-numpy, python3-scipy, python3-pytest, python3-setuptools and python3-venv,
#           which the Python package's tests use (skipped without them), and Debian's
#           libopenmpi-dev and openmpi-bin, for nearby_mpi and its tests (skipped without them):
#           installed as root with apt-get, otherwise named, never a failure
#   bench   a C++ compiler, nanoflann, scipy, Box2D, Boost.Geometry and libspatialindex for
#           `make bench`; and, where node and npm are there, flatbush and rbush for the
#           rectangles section (npm ci in bench/rects_js): skipped with a message when npm cannot
#           install them, never a failure
# When something is missing: as root on Debian/Ubuntu it apt-get installs just that; otherwise
# it names what is missing and exits 1. It never runs sudo, and never apt-get when nothing is
# missing. POSIX sh, so that `make demo` needs no bash.
set -eu
what=${1:-build}
missing=""    # what is missing, in words
packages=""   # the Debian packages that provide it
unfixable=""  # set when something missing has no package (a $CC that is not there)

have() { command -v "$1" > /dev/null 2>&1; }
need() { # what, in words; the Debian package, or "" when no package would help
  missing="$missing
  - $1"
  case " $packages " in *" $2 "*) ;; *) packages="$packages $2" ;; esac
  [ -n "$2" ] || unfixable=1
}
# A shared library anywhere under the usual library directories.
have_lib() {
  for dir in /usr/lib /usr/lib64 /lib /lib64 /usr/local/lib; do
    [ -d "$dir" ] && [ -n "$(find "$dir" -name "$1.so*" -print 2> /dev/null | head -n 1)" ] &&
      return 0
  done
  return 1
}

check_build() {
  if have cmake; then
    # cmake_minimum_required(VERSION 3.21) in CMakeLists.txt
    v=$(cmake --version 2> /dev/null | sed -n 's/^cmake version \([0-9][0-9]*\)\.\([0-9][0-9]*\).*/\1 \2/p')
    # shellcheck disable=SC2086 # split "major minor" into $1 $2
    set -- $v
    if [ $# -eq 2 ] && { [ "$1" -lt 3 ] || { [ "$1" -eq 3 ] && [ "$2" -lt 21 ]; }; }; then
      need "cmake 3.21 or newer (found $1.$2)" cmake
    fi
  else
    need "cmake 3.21 or newer" cmake
  fi
  if [ -n "${CC:-}" ]; then
    have "${CC%% *}" || need "the C compiler \$CC names ($CC)" ""
  elif ! have cc && ! have gcc && ! have clang; then
    need "a C11 compiler (cc, gcc or clang)" gcc
  fi
  have make || need "make" make
}

check_test() {
  check_build
  have bash || need "bash (runs scripts/test.sh)" bash
  have clang || need "clang (the second compiler of the suite)" clang
  have clang-format || need "clang-format (the layout check)" clang-format
  have pkg-config || need "pkg-config (the install test)" pkg-config
  have_lib libasan || need "gcc's AddressSanitizer runtime (libasan)" libasan8
  have_lib libubsan || need "gcc's UndefinedBehaviorSanitizer runtime (libubsan)" libubsan1
  have_lib libtsan || need "gcc's ThreadSanitizer runtime (libtsan)" libtsan2
}

check_bench() {
  have c++ || need "a C++ compiler (c++)" g++
  [ -f /usr/include/nanoflann.hpp ] || need "nanoflann (/usr/include/nanoflann.hpp)" libnanoflann-dev
  /usr/bin/python3 -c 'import scipy.spatial' > /dev/null 2>&1 || need "python3 with scipy" python3-scipy
  # the Python package's section (bench/bench_python.py) builds the extension
  /usr/bin/python3 -c 'import setuptools' > /dev/null 2>&1 ||
    need "python3-setuptools (the Python section)" python3-setuptools
  [ -f "$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' \
    2> /dev/null)/Python.h" ] || need "Python's headers (the Python section)" python3-dev
  # the moving-agents section (bench/bench_agents_peers.cpp): b2DynamicTree and bgi::rtree
  if [ ! -f /usr/include/box2d/b2_dynamic_tree.h ] || ! have_lib libbox2d; then
    need "Box2D 2.4 (/usr/include/box2d/b2_dynamic_tree.h, libbox2d.so)" libbox2d-dev
  fi
  [ -f /usr/include/boost/geometry/index/rtree.hpp ] ||
    need "Boost.Geometry (/usr/include/boost/geometry/index/rtree.hpp)" libboost-dev
  # the rectangles section (bench/bench_rects_peers.cpp): libspatialindex's R*-tree
  if [ ! -f /usr/include/spatialindex/SpatialIndex.h ] || ! have_lib libspatialindex; then
    need "libspatialindex (/usr/include/spatialindex/SpatialIndex.h)" libspatialindex-dev
  fi
}

# chromium for tests/svg_screenshot.sh: optional, so a failed or impossible install is only noted.
check_optional() {
  [ "$what" = test ] || return 0
  if have chromium || have chromium-browser; then
    return 0
  fi
  if [ "$(id -u)" -ne 0 ] || ! have apt-get; then
    echo "setup.sh: optional, not installed: chromium (the SVG screenshot test is skipped" \
      "without it; e.g. apt-get install chromium)" >&2
    return 0
  fi
  echo "setup.sh: installing chromium (optional: the SVG screenshot test)" >&2
  if ! DEBIAN_FRONTEND=noninteractive apt-get update -qq ||
    ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; then
    echo "setup.sh: could not install chromium; the SVG screenshot test will be skipped" >&2
  fi
}

# Debian's python3 with numpy, scipy, pytest, venv, setuptools and headers for the Python
# package's tests (python/run_tests.sh, which skips with a message without them): optional like
# chromium, installed as root with apt-get, otherwise named.
check_python() {
  [ "$what" = test ] || return 0
  pkgs=""
  for mod in numpy scipy pytest venv setuptools; do
    /usr/bin/python3 -c "import $mod" > /dev/null 2>&1 || pkgs="$pkgs python3-$mod"
  done
  inc=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' \
    2> /dev/null || true)
  [ -n "$inc" ] && [ -f "$inc/Python.h" ] || pkgs="$pkgs python3-dev"
  [ -n "$pkgs" ] || return 0
  if [ "$(id -u)" -ne 0 ] || ! have apt-get; then
    echo "setup.sh: optional, not installed:$pkgs (the Python package's tests are skipped" \
      "without them)" >&2
    return 0
  fi
  echo "setup.sh: installing$pkgs (optional: the Python package's tests)" >&2
  if ! DEBIAN_FRONTEND=noninteractive apt-get update -qq ||
    ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $pkgs; then
    echo "setup.sh: could not install$pkgs; the Python package's tests will be skipped" >&2
  fi
}

# Open MPI (Debian's libopenmpi-dev and openmpi-bin) for nearby_mpi and its tests (tests/mpi/;
# without it CMake's NB_WITH_MPI=AUTO builds no nearby_mpi and the MPI tests are not there):
# optional like chromium, installed as root with apt-get, otherwise named.
check_mpi() {
  [ "$what" = test ] || return 0
  have mpicc && have mpirun && return 0
  if [ "$(id -u)" -ne 0 ] || ! have apt-get; then
    echo "setup.sh: optional, not installed: libopenmpi-dev openmpi-bin (nearby_mpi and its" \
      "tests are skipped without them)" >&2
    return 0
  fi
  echo "setup.sh: installing libopenmpi-dev openmpi-bin (optional: nearby_mpi and its tests)" >&2
  if ! DEBIAN_FRONTEND=noninteractive apt-get update -qq ||
    ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libopenmpi-dev openmpi-bin; then
    echo "setup.sh: could not install Open MPI; nearby_mpi and its tests will be skipped" >&2
  fi
}

# flatbush and rbush for the rectangles section (bench/rects_js/bench.mjs): npm ci from the
# committed lock file, only when they are not there. Optional: without node, npm or the network
# it only says so, and run.sh skips those two peers.
check_optional_bench() {
  [ "$what" = bench ] || return 0
  js=$(dirname "$0")/../bench/rects_js
  [ -d "$js/node_modules/flatbush" ] && [ -d "$js/node_modules/rbush" ] && return 0
  if ! have node || ! have npm; then
    echo "setup.sh: optional, not installed: node and npm (the rectangles section skips" \
      "flatbush and rbush without them)" >&2
    return 0
  fi
  echo "setup.sh: installing flatbush and rbush (npm ci in bench/rects_js)" >&2
  if ! (cd "$js" && npm ci --no-audit --no-fund --loglevel=error > /dev/null); then
    echo "setup.sh: npm could not install flatbush and rbush; the rectangles section will" \
      "skip them" >&2
  fi
}

check() {
  missing=""
  packages=""
  unfixable=""
  case "$what" in
    build) check_build ;;
    test) check_test ;;
    bench) check_bench ;;
    *)
      echo "setup.sh: unknown target '$what' (build, test or bench)" >&2
      exit 2
      ;;
  esac
}

check
check_optional
check_optional_bench
check_python
check_mpi
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! have apt-get || [ -n "$unfixable" ]; then
  echo "setup.sh: '$what' needs what is not installed here:$missing" >&2
  if [ -n "$unfixable" ]; then
    echo "Install it, or unset CC, and run make again." >&2
  elif have apt-get; then
    echo "Install it as root (e.g. apt-get install$packages) and run make again." >&2
  else
    echo "Install it with your system's package manager and run make again." >&2
  fi
  if [ "$what" = build ]; then
    echo "(make build, demo and install need only cmake 3.21+, a C compiler and make.)" >&2
  fi
  exit 1
fi

echo "setup.sh: installing$packages" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086 # one word per package
apt-get install -y -qq --no-install-recommends $packages
check
if [ -n "$missing" ]; then
  echo "setup.sh: still missing after apt-get install:$missing" >&2
  exit 1
fi

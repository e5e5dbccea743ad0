#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what the build, the tests (`build`) or the benchmarks (`bench`) need, from Debian's
# packages, when it is missing. Does nothing when everything is there.
set -euo pipefail
what=${1:-build}
need=()
have() { command -v "$1" > /dev/null 2>&1; }
case "$what" in
  build)
    have cmake || need+=(cmake)
    have cc || need+=(gcc)
    have make || need+=(make)
    have clang || need+=(clang)
    have pkg-config || need+=(pkg-config)
    have clang-format || need+=(clang-format)
    # AddressSanitizer/UBSan runtimes for gcc
    [ -n "$(find /usr/lib -name 'libasan.so*' -print -quit 2>/dev/null)" ] || need+=(libasan8)
    [ -n "$(find /usr/lib -name 'libubsan.so*' -print -quit 2>/dev/null)" ] || need+=(libubsan1)
    [ -n "$(find /usr/lib -name 'libtsan.so*' -print -quit 2>/dev/null)" ] || need+=(libtsan2)
    ;;
  bench)
    have c++ || need+=(g++)
    [ -f /usr/include/nanoflann.hpp ] || need+=(libnanoflann-dev)
    /usr/bin/python3 -c 'import scipy.spatial' > /dev/null 2>&1 || need+=(python3-scipy)
    ;;
  *) echo "setup.sh: unknown target '$what' (build or bench)" >&2; exit 2 ;;
esac
[ ${#need[@]} -eq 0 ] && exit 0
echo "setup.sh: installing ${need[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
  echo "setup.sh: need root to apt-get install ${need[*]}; install them and re-run" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}"

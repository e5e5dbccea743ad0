#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The install test's steps, one per ctest entry (see CMakeLists.txt):
#
#   run.sh install          cmake --install the build into $NB_WORK/prefix, check what landed there
#   run.sh cmake            build consumer/ with find_package(nearby) (shared library), run it
#   run.sh cmake-static     the same with -DNEARBY_USE_STATIC=ON
#   run.sh pkgconfig        cc consumer.c $(pkg-config --cflags --libs nearby), run it
#   run.sh pkgconfig-static the same with `pkg-config --static`, linking libnearby.a
#
# Every step removes its own scratch directory first, so the test can be re-run at will.
# Environment (set by CMakeLists.txt): NB_CMAKE NB_CC NB_GENERATOR NB_CONFIG NB_BUILD_DIR NB_WORK
# NB_SOURCE NB_VERSION NB_LIBDIR NB_INCLUDEDIR NB_BINDIR NB_CLI.
set -euo pipefail

step=${1:?usage: run.sh install|cmake|cmake-static|pkgconfig|pkgconfig-static}
prefix=$NB_WORK/prefix
libdir=$prefix/$NB_LIBDIR
consumer=$NB_SOURCE/tests/install/consumer

fail() { echo "install test ($step): $*" >&2; exit 1; }
case "$NB_LIBDIR$NB_INCLUDEDIR$NB_BINDIR" in /*)
    echo "install test: skipped: absolute CMAKE_INSTALL_*DIR ignore --prefix" >&2
    exit 77 ;;
esac
have() { command -v "$1" > /dev/null 2>&1; }
# Stay out of the user's environment: only our prefix may provide nearby.
unset nearby_DIR nearby_ROOT NEARBY_ROOT CMAKE_PREFIX_PATH PKG_CONFIG_PATH LD_LIBRARY_PATH || true

# needed FILE: the shared libraries FILE asks the dynamic loader for (empty without readelf).
needed() { if have readelf; then readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; fi; }

# expect_shared APP yes|no: APP does (or does not) load libnearby.so at run time.
# (No `| grep -q` here: grep -q stops reading at the first match, and under pipefail the
# writer's SIGPIPE then fails the whole pipe, now and then.)
expect_shared() {
    have readelf || return 0
    if needed "$1" | grep '^libnearby\.so' > /dev/null; then
        [ "$2" = yes ] || fail "$1 needs libnearby.so, but it should be linked statically"
    else
        [ "$2" = no ] || fail "$1 does not need libnearby.so, but it should be linked to it"
    fi
}

# run_app APP: runs the consumer and checks its report names this build's version.
run_app() {
    local out
    out=$("$@") || fail "consumer failed: $*"
    echo "$out"
    [ "$out" = "consumer: nearby $NB_VERSION ok" ] || fail "unexpected consumer output: $out"
}

case "$step" in
install)
    rm -rf "$NB_WORK"
    mkdir -p "$NB_WORK"
    config=()
    [ -n "$NB_CONFIG" ] && config=(--config "$NB_CONFIG")
    "$NB_CMAKE" --install "$NB_BUILD_DIR" --prefix "$prefix" "${config[@]}" > "$NB_WORK/install.log" ||
        { cat "$NB_WORK/install.log" >&2; fail "cmake --install failed"; }

    # Everything a user needs, and nothing private.
    for f in "$NB_INCLUDEDIR/nearby/nearby.h" "$NB_INCLUDEDIR/nearby/grid.h" \
        "$NB_INCLUDEDIR/nearby/neighbors.h" \
        "$NB_INCLUDEDIR/nearby/nb_version.h" "$NB_LIBDIR/libnearby.a" "$NB_LIBDIR/libnearby.so" \
        "$NB_LIBDIR/cmake/nearby/nearbyConfig.cmake" \
        "$NB_LIBDIR/cmake/nearby/nearbyConfigVersion.cmake" \
        "$NB_LIBDIR/cmake/nearby/nearbyTargets.cmake" "$NB_LIBDIR/pkgconfig/nearby.pc"; do
        [ -e "$prefix/$f" ] || fail "not installed: $f"
    done
    # nearby_mpi (when built): its header, library and pkg-config file; without it, no mpi.h.
    if [ "${NB_MPI:-0}" = 1 ]; then
        for f in "$NB_INCLUDEDIR/nearby/mpi.h" "$NB_LIBDIR/pkgconfig/nearby-mpi.pc" \
            "$NB_LIBDIR/cmake/nearby/nearbyMpiTargets.cmake"; do
            [ -e "$prefix/$f" ] || fail "not installed: $f"
        done
        ls "$prefix/$NB_LIBDIR"/libnearby_mpi.* > /dev/null 2>&1 || fail "not installed: libnearby_mpi"
    else
        [ ! -e "$prefix/$NB_INCLUDEDIR/nearby/mpi.h" ] || fail "mpi.h installed without nearby_mpi"
    fi
    private=$(cd "$prefix" && find . -name '*.in' -o -name 'nb_internal.h' -o -name 'cell.h' -o -name '*.c')
    [ -z "$private" ] || fail "installed files that are not API: $private"

    # The CLI (when built) links libnearby.a, so it runs from the prefix without LD_LIBRARY_PATH.
    if [ "$NB_CLI" = 1 ]; then
        cli=$prefix/$NB_BINDIR/nearby
        [ -x "$cli" ] || fail "not installed (or not executable): $NB_BINDIR/nearby"
        expect_shared "$cli" no
        out=$("$cli" --version) || fail "installed nearby --version failed"
        [ "$out" = "nearby $NB_VERSION" ] || fail "installed nearby --version printed '$out'"
        out=$(printf '0,0\n1,0\n0,1\n3,3\n' | "$cli" pairs - --radius 1) ||
            fail "installed nearby pairs failed"
        [ "$out" = "$(printf '0,1\n0,2')" ] || fail "installed nearby pairs printed '$out'"
    fi

    # Each public header compiles on its own, warning-free, in C11 (and C++ when there is one).
    for h in "$prefix/$NB_INCLUDEDIR"/nearby/*.h; do
        inc="#include <nearby/$(basename "$h")>"
        # mpi.h needs MPI's own include path (nearby-mpi.pc's Cflags give it), as a system
        # path: only our header is held to -Werror, not Open MPI's C++ bindings.
        mpi_flags=()
        if [ "$(basename "$h")" = mpi.h ]; then
            # shellcheck disable=SC2207 # the flags are meant to split
            mpi_flags=($(PKG_CONFIG_PATH=$libdir/pkgconfig PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 \
                pkg-config --cflags nearby-mpi 2> /dev/null | sed 's/-I/-isystem /g')) || true
        fi
        printf '%s\ntypedef int nb_header_check;\n' "$inc" | "$NB_CC" -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only \
            -I "$prefix/$NB_INCLUDEDIR" "${mpi_flags[@]}" -x c - || fail "$inc does not compile on its own (C)"
        if have c++; then
            printf '%s\ntypedef int nb_header_check;\n' "$inc" | c++ -std=c++11 -Wall -Wextra -Werror -fsyntax-only \
                -I "$prefix/$NB_INCLUDEDIR" "${mpi_flags[@]}" -x c++ - || fail "$inc does not compile in C++"
        fi
    done

    # The shared library is versioned and exports the API only (hidden visibility elsewhere);
    # the archive defines no global name outside nearby's nb_ / nbi_ prefixes.
    if have readelf; then
        soname=$(readelf -d "$prefix/$NB_LIBDIR/libnearby.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
        [ "$soname" = "libnearby.so.${NB_VERSION%%.*}" ] || fail "SONAME is '$soname'"
    fi
    if have nm; then
        extra=$(nm -D --defined-only "$prefix/$NB_LIBDIR/libnearby.so" |
            awk 'NF == 3 && $2 ~ /[TDBR]/ && $3 !~ /^nb_/ { print $3 }')
        [ -z "$extra" ] || fail "libnearby.so exports names outside the API: $extra"
        exported=$(nm -D --defined-only "$prefix/$NB_LIBDIR/libnearby.so")
        for fn in nb_version nb_status_str nb_grid_create nb_grid_build nb_grid_pairs; do
            grep -qw "$fn" <<< "$exported" || fail "libnearby.so does not export $fn"
        done
        extra=$(nm -g --defined-only "$prefix/$NB_LIBDIR/libnearby.a" 2> /dev/null |
            awk 'NF == 3 && $3 !~ /^nbi?_/ { print $3 }')
        [ -z "$extra" ] || fail "libnearby.a defines global names without the nb_/nbi_ prefix: $extra"
    fi
    echo "installed into $prefix"
    ;;

cmake | cmake-static)
    [ -d "$prefix" ] || fail "nothing installed at $prefix (run the 'install' test first)"
    work=$NB_WORK/$step
    rm -rf "$work"
    static=OFF
    [ "$step" = cmake-static ] && static=ON
    gen=()
    [ -n "$NB_GENERATOR" ] && gen=(-G "$NB_GENERATOR")
    # Warnings as errors: nearby's headers must stay quiet in a strict user's build.
    "$NB_CMAKE" -S "$consumer" -B "$work" "${gen[@]}" -DCMAKE_C_COMPILER="$NB_CC" \
        -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" -DNEARBY_USE_STATIC=$static \
        -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF \
        -DCMAKE_C_FLAGS="-Wall -Wextra -Wpedantic -Werror" > "$work.log" 2>&1 ||
        { cat "$work.log" >&2; fail "configuring the consumer failed"; }
    found=$(sed -n 's/^nearby_DIR:PATH=//p' "$work/CMakeCache.txt")
    [ "$(realpath "$found")" = "$(realpath "$libdir/cmake/nearby")" ] ||
        fail "find_package(nearby) found '$found', not the test prefix"
    "$NB_CMAKE" --build "$work" > "$work.log" 2>&1 ||
        { cat "$work.log" >&2; fail "building the consumer failed"; }
    app=$work/app
    if [ "$static" = ON ]; then expect_shared "$app" no; else expect_shared "$app" yes; fi
    # CMake gives the build-tree binary an RPATH to the prefix: no LD_LIBRARY_PATH needed.
    run_app "$app"

    if [ "$step" = cmake ]; then
        # The package's version file must refuse a release with another major version.
        probe=$NB_WORK/cmake-version-probe
        rm -rf "$probe"
        mkdir -p "$probe/src"
        printf '%s\n' 'cmake_minimum_required(VERSION 3.21)' 'project(probe LANGUAGES NONE)' \
            'find_package(nearby 1.0 QUIET)' \
            'if(nearby_FOUND)' '  message(FATAL_ERROR "nearby ${nearby_VERSION} accepted for 1.0")' \
            'endif()' > "$probe/src/CMakeLists.txt"
        "$NB_CMAKE" -S "$probe/src" -B "$probe/build" -DCMAKE_PREFIX_PATH="$prefix" \
            > "$probe.log" 2>&1 || { cat "$probe.log" >&2; fail "find_package(nearby 1.0) succeeded"; }
    fi
    if [ "$step" = cmake ] && [ "${NB_MPI:-0}" = 1 ]; then
        # find_package(nearby COMPONENTS mpi) gives nearby::nearby_mpi (with MPI::MPI_C).
        probe=$NB_WORK/cmake-mpi-probe
        rm -rf "$probe"
        mkdir -p "$probe/src"
        printf '%s\n' 'cmake_minimum_required(VERSION 3.21)' 'project(probe LANGUAGES C)' \
            'find_package(nearby 0.1 REQUIRED COMPONENTS mpi)' 'add_executable(p p.c)' \
            'target_link_libraries(p PRIVATE nearby::nearby_mpi)' > "$probe/src/CMakeLists.txt"
        printf '%s\n' '#include <nearby/mpi.h>' \
            'int main(void) { nbMpiStats s; return nb_mpi_stats(NULL, &s) != NB_ERR_NULL_ARG; }' \
            > "$probe/src/p.c"
        { "$NB_CMAKE" -S "$probe/src" -B "$probe/build" "${gen[@]}" -DCMAKE_C_COMPILER="$NB_CC" \
            -DCMAKE_PREFIX_PATH="$prefix" && "$NB_CMAKE" --build "$probe/build"; } > "$probe.log" 2>&1 ||
            { cat "$probe.log" >&2; fail "find_package(nearby COMPONENTS mpi) and nearby::nearby_mpi failed"; }
    fi
    ;;

pkgconfig | pkgconfig-static)
    [ -d "$prefix" ] || fail "nothing installed at $prefix (run the 'install' test first)"
    pc=pkg-config
    have pkg-config || pc=pkgconf
    if ! have "$pc"; then
        echo "install test ($step): pkg-config not found: skipped" >&2
        exit 77
    fi
    work=$NB_WORK/$step
    rm -rf "$work"
    mkdir -p "$work"
    export PKG_CONFIG_PATH=$libdir/pkgconfig
    [ "$("$pc" --modversion nearby)" = "$NB_VERSION" ] || fail "pkg-config --modversion nearby is not $NB_VERSION"
    static=()
    [ "$step" = pkgconfig-static ] && static=(--static)
    # Allowing system -I/-L paths would let a system-wide nearby hide a broken nearby.pc.
    cflags=$(PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 "$pc" --cflags nearby)
    libs=$(PKG_CONFIG_ALLOW_SYSTEM_LIBS=1 "$pc" "${static[@]}" --libs nearby)
    echo "cflags: $cflags"
    echo "libs:   $libs"
    # Every -I and -L must point into the prefix we installed to.
    real_prefix=$(realpath "$prefix")
    for flag in $cflags $libs; do
        case "$flag" in
        -I* | -L*)
            dir=$(realpath -m "${flag:2}")
            case "$dir" in "$real_prefix"/*) ;; *) fail "nearby.pc points outside the install prefix: $flag (is $dir; want under $real_prefix)" ;; esac
            ;;
        esac
    done
    if [ "$step" = pkgconfig-static ]; then
        # -lnearby would pick libnearby.so when both are there; ask for the archive by name.
        # The link then succeeds only if Libs.private lists what libnearby.a needs (libm).
        libs=$(echo " $libs " | sed 's/ -lnearby / -l:libnearby.a /')
    fi
    # shellcheck disable=SC2086 # the flags are meant to split
    "$NB_CC" -std=c11 -Wall -Wextra -Wpedantic -Werror "$consumer/consumer.c" -o "$work/app" \
        $cflags $libs || fail "compiling consumer.c with pkg-config's flags failed"
    if [ "$step" = pkgconfig-static ]; then
        expect_shared "$work/app" no
        run_app "$work/app"
    else
        expect_shared "$work/app" yes
        # The loader must find our libnearby.so, not some other copy.
        if have ldd; then
            LD_LIBRARY_PATH=$libdir ldd "$work/app" | grep "libnearby.so.* => $libdir/" > /dev/null ||
                fail "libnearby.so does not resolve into $libdir: $(LD_LIBRARY_PATH=$libdir ldd "$work/app")"
        fi
        LD_LIBRARY_PATH=$libdir run_app "$work/app"
    fi
    # nearby_mpi through nearby-mpi.pc: a program using mpi.h compiles and links (not run: that
    # needs mpirun, which tests/mpi covers).
    if [ "${NB_MPI:-0}" = 1 ] && [ "$step" = pkgconfig ]; then
        printf '%s\n' '#include <nearby/mpi.h>' \
            'int main(int argc, char **argv) { MPI_Init(&argc, &argv); nbMpiStats s;' \
            '  int ok = nb_mpi_stats(NULL, &s) == NB_ERR_NULL_ARG; MPI_Finalize(); return !ok; }' \
            > "$work/mpi_app.c"
        # shellcheck disable=SC2046 # the flags are meant to split
        "$NB_CC" -std=c11 -Wall -Wextra -Wpedantic -Werror "$work/mpi_app.c" -o "$work/mpi_app" \
            $(PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 "$pc" --cflags --libs nearby-mpi) ||
            fail "compiling a nearby_mpi program with pkg-config's nearby-mpi flags failed"
    fi
    ;;
*) fail "unknown step (install, cmake, cmake-static, pkgconfig or pkgconfig-static)" ;;
esac

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the benchmarks built in BUILD_DIR (cmake -DNB_BUILD_BENCH=ON, Release) and prints the
# comparison table; `make bench` calls it as `bash bench/run.sh build/bench`.
#
#   bash bench/run.sh BUILD_DIR              full run: the core sets (~2 minutes, written to
#                                            bench/results/$NB_BENCH_MACHINE/latest.csv), then
#                                            the sections below that the full run includes
#                                            (30 minutes or more in all on a 2-core machine)
#   bash bench/run.sh BUILD_DIR --quick      100k points, 3 runs: a smoke test, results only
#                                            in BUILD_DIR/bench/quick.csv
#   bash bench/run.sh BUILD_DIR --callgrind  instruction counts (valgrind): nearby vs the
#                                            naive grid, 200k uniform 2D points, one frame
#   bash bench/run.sh BUILD_DIR --agents     only the moving-agents section (100k agents, 100
#                                            frames; ~7 minutes): writes
#                                            bench/results/$NB_BENCH_MACHINE/agents_latest.csv
#   bash bench/run.sh BUILD_DIR --tiles      only the tile-grid section (bench_tiles: 50k agents
#                                            in 4 groups + 5k waypoints, 100 frames of move +
#                                            nearest enemy + nearest waypoint; the tile grid vs
#                                            the dense grid rebuilt per frame vs the field
#                                            report's naive tiles; ~10 minutes): writes
#                                            bench/results/$NB_BENCH_MACHINE/tiles_latest.csv
#   bash bench/run.sh BUILD_DIR --reorder    only the reordering section: a 1M-point random walk,
#                                            100 steps, arrays reordered into cell order every
#                                            10 steps (row-major or Morton) against never
#                                            (~1 minute): writes
#                                            bench/results/$NB_BENCH_MACHINE/reorder_latest.csv
#   bash bench/run.sh BUILD_DIR --neighbors  only the neighbour lists (bench_neighbors: 1M uniform
#                                            points, 2D and 3D, about 15 neighbours each: build +
#                                            rows (by index and in cell order) against build +
#                                            nb_grid_pairs, and the Verlet lists (skin 0.1 r; by
#                                            index and in cell order; exact rows, keep bits and
#                                            candidates) against rebuilding rows of the same form
#                                            over 100 MD-like steps, the upkeep alone and a whole
#                                            step with a density sum over the rows; then build +
#                                            rows of the 1M uniform 2D set at r = 1.75; ~30
#                                            minutes on a quiet machine): writes
#                                            bench/results/$NB_BENCH_MACHINE/neighbors_latest.csv
#   bash bench/run.sh BUILD_DIR --open-world only the spatial hash's moves in an open (hashed)
#                                            world (bench_open_world: 100k items over squares
#                                            of side 1e6 and 2000, 10% and all moving, steps
#                                            and teleports; ~1 minute): writes
#                                            bench/results/$NB_BENCH_MACHINE/open_world_latest.csv
#   bash bench/run.sh BUILD_DIR --python     only the Python package against scipy's cKDTree
#                                            (bench_python.py: nearby.cKDTree against cKDTree,
#                                            every method on the corpus's point sets at 100k
#                                            points, build included, 3 alternating runs;
#                                            ~8 minutes): writes
#                                            bench/results/$NB_BENCH_MACHINE/python_latest.csv
#   bash bench/run.sh BUILD_DIR --cell-size  only the cell-size sweep (1M uniform 2D points,
#                                            r = 1.75, cell / r from 0.25 to 4; ~1 minute),
#                                            plus instruction counts at a few ratios when
#                                            valgrind is there (~2 minutes): writes
#                                            bench/results/$NB_BENCH_MACHINE/cell_size*.csv
#                                            and docs/cell_size.svg
#   bash bench/run.sh BUILD_DIR --periodic   only the periodic box: 1M uniform 2D points in a
#                                            periodic box, build + all pairs within 1.75 by
#                                            the minimum image, nearby vs cKDTree(boxsize=...),
#                                            pair-for-pair agreement (bench_periodic.py; ~1
#                                            minute): writes
#                                            bench/results/$NB_BENCH_MACHINE/periodic_latest.csv
#   bash bench/run.sh BUILD_DIR --rects      only the rectangles section (~5 minutes
#                                            on a quiet machine): writes
#                                            bench/results/$NB_BENCH_MACHINE/rects_latest.csv;
#                                            `--rects --quick` at the --quick sizes (~20 s),
#                                            results only in BUILD_DIR/bench/rects_quick.csv
#   bash bench/run.sh BUILD_DIR --cli        only whole CLI processes (bench_cli.py; ~1 minute):
#                                            `nearby pairs --count` on 1M uniform 2D points
#                                            (default threads and --threads 1) against a numpy +
#                                            cKDTree script, and the cost a point at 16M
#                                            against 1M (--threads 1): writes
#                                            bench/results/$NB_BENCH_MACHINE/cli_latest.csv
#   bash bench/run.sh BUILD_DIR --corpus     only the corpus (bench/corpus.h: 12 point sets, 9
#                                            rectangle sets shaped like the data people bring,
#                                            and the scenarios at N/8 to N/20: queries far
#                                            outside the box, clumps in a periodic box, pair
#                                            counts at radii up to the extent): bench_corpus
#                                            (nearby's defaults against nanoflann, the packed
#                                            Boost rtree, its own periodic grid on uniform
#                                            points) and bench_corpus.py (the Python package
#                                            against cKDTree), alternating runs, answers checked
#                                            (~4 minutes quiet): writes
#                                            bench/results/$NB_BENCH_MACHINE/corpus_latest.csv
#   bash bench/run.sh BUILD_DIR --mpi        only the MPI section (bench_mpi through
#                                            tests/mpi/mpirun.sh): 1M uniform 2D points on 1
#                                            and 2 ranks against the single-process grid
#                                            (r = 1.75), then 4 and 8 oversubscribed ranks on
#                                            uniform and clustered (r = 1): bytes sent, halo
#                                            share, balance (~3 minutes): writes
#                                            bench/results/$NB_BENCH_MACHINE/mpi_latest.csv
#
# The full run also runs the cell-size sweep (timing only) and the periodic box before the
# agents section; the full and --quick runs run the tile-grid section (--quick: 20k agents, 2k
# waypoints, 5 frames) and end with the Python section (--python).
# The full and --quick runs end with the moving-agents section (bench_agents,
# bench_agents_peers, report_agents.py): nearby's spatial hash and dense grid against Box2D's
# b2DynamicTree, Boost.Geometry's R-trees and a naive unordered_map hash; --quick runs it on
# 20k agents for 10 frames.
# Then the rectangles section (bench_rects, bench_rects_peers, rects_js/bench.mjs on node,
# report_rects.py): nearby's quadtree against Box2D's b2DynamicTree, Boost.Geometry's packed
# and R* rtrees, libspatialindex's R*-tree, flatbush and rbush, on rects_common.h's workload;
# --quick runs it at 100k rectangles, 1k windows, 10k pairs, 10k moving x 5 frames. A runner
# that is not built (nearby's bench_rects before the quadtree lands, a peer library missing, node
# or the npm packages missing) is skipped with a message.
#
# Environment: NB_BENCH_MACHINE (default c-<nproc>core) names the results directory;
# NB_BENCH_CPU pins every runner to that CPU with taskset (default: unpinned, which does
# better than pinning on a shared box where another job may hold that CPU);
# NB_BENCH_PEERS limits the peers (default "nearby nearby_t2 naive nanoflann ckdtree
# ckdtree_set"; nearby_t2 is the grid on a pool of 2 workers, examples/nb_pthreads.h);
# NB_BENCH_AGENTS_PEERS the agents section's (default "nearby_hash nearby_grid b2tree
# rtree_packed rtree_rstar naive_hash"; an empty value skips the section); NB_BENCH_SWEEP_N
# (default 1000000) and NB_BENCH_SWEEP_RUNS (default 7) size the cell-size sweep;
# NB_BENCH_RECTS_PEERS the rectangles section's (default "nearby_quadtree rtree_packed
# rtree_rstar b2tree sidx_rstar sidx_join flatbush rbush"; an empty value skips it);
# NB_BENCH_CORPUS_N (default 200000) and NB_BENCH_CORPUS_RECTS_N (default 100000) size the
# corpus's point and rectangle sets (the scenarios take a fraction of the former).
set -euo pipefail

usage() {
    echo "usage: bash bench/run.sh BUILD_DIR [--quick | --callgrind | --agents | --cell-size |" \
        "--periodic | --reorder | --neighbors | --open-world | --tiles | --python |" \
        "--rects [--quick] | --mpi | --corpus]" >&2
    exit 2
}
[ $# -ge 1 ] || usage
build=$1
mode=${2:-full}
case "$mode" in
    full | --quick | --callgrind | --agents | --cell-size | --periodic | --reorder | --tiles | \
        --python | --rects | --mpi | --cli | --open-world | --neighbors | --corpus) ;;
    *) usage ;;
esac
rects_quick="" # `--rects --quick`: only the rectangles section, at the --quick sizes
if [ "$mode" = --rects ] && [ "${3-}" = --quick ]; then rects_quick=1; fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
bin=$build/bench
py=/usr/bin/python3 # Debian's python3-scipy lives here, not in a pyenv python earlier on PATH
machine=${NB_BENCH_MACHINE:-c-$(nproc)core}
peers=${NB_BENCH_PEERS:-nearby nearby_t2 naive nanoflann ckdtree ckdtree_set}

[ -x "$bin/gen_data" ] || {
    echo "run.sh: $bin/gen_data not found; configure with -DNB_BUILD_BENCH=ON and build" >&2
    exit 2
}
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2> /dev/null || true)
if [ "$build_type" != "Release" ]; then
    echo "run.sh: $build is a '$build_type' build; benchmark times are only quoted from Release" >&2
    exit 2
fi
if grep -q '^NB_SANITIZE:[A-Z]*=..*' "$build/CMakeCache.txt"; then
    echo "run.sh: $build is a sanitizer build; benchmark times are never quoted from one" >&2
    exit 2
fi

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 NUMEXPR_NUM_THREADS=1
pin=()
cpu=${NB_BENCH_CPU-}
if [ -n "$cpu" ] && command -v taskset > /dev/null 2>&1; then pin=(taskset -c "$cpu"); fi

data=$build/data
mkdir -p "$data"

# gen_data SET N: writes $data/SET-N.f64 unless it is there with the right size.
gen() {
    local set=$1 n=$2 dim=2 f
    [ "$set" = uniform3d ] && dim=3
    f=$data/$set-$n.f64
    if [ ! -f "$f" ] || [ "$(stat -c %s "$f")" -ne $((n * dim * 8)) ]; then
        "$bin/gen_data" "$set" "$n" "$f"
    fi
    echo "$f"
}

# ---- callgrind: instruction counts are repeatable where times are not ----
if [ "$mode" = --callgrind ]; then
    command -v valgrind > /dev/null || {
        echo "run.sh: valgrind not found (apt-get install valgrind)" >&2
        exit 2
    }
    [ -x "$bin/bench_nearby" ] || {
        echo "run.sh: $bin/bench_nearby not built" >&2
        exit 2
    }
    n=200000
    f=$(gen uniform2d $n)
    echo "callgrind: uniform2d, $n points (density 1), r = 1.75; one steady-state frame each"
    # One valgrind run per structure, so each profile holds only that structure's costs. The
    # cache simulation models a fixed 2 MiB last level (not the host's), so misses are
    # comparable between machines too.
    for who in nearby naive; do
        valgrind --tool=callgrind --callgrind-out-file="$bin/callgrind.$who.out" \
            --cache-sim=yes --LL=2097152,16,64 --collect-atstart=no --toggle-collect="nbb_cg_${who}_build" \
            --toggle-collect="nbb_cg_${who}_pairs" \
            "$bin/bench_nearby" --callgrind "$f" 2 1.75 > "$bin/callgrind.$who.log" 2>&1 || {
            cat "$bin/callgrind.$who.log" >&2
            exit 1
        }
    done
    grep '^callgrind:' "$bin/callgrind.nearby.log" || true
    # "Ir LLmiss" (inclusive) of function $2 in profile $1; LL misses = DLmr + DLmw + ILmr.
    cost() {
        callgrind_annotate --inclusive=yes --show=Ir,DLmr,DLmw,ILmr "$bin/callgrind.$1.out" \
            2> /dev/null | tr -d , | sed 's/([^)]*)//g' | awk -v fn="$2" '
                $0 ~ ("[ :]" fn "( |$)") { print $1, $2 + $3 + $4; found = 1; exit }
                END { if (!found) print 0, 0 }'
    }
    row() { echo "$1 $2 $3 $n" | awk '{printf "%-14s %14d %10.1f %12d %10.2f\n", $1, $2,
        $2 / $4, $3, $3 / $4}'; }
    printf '%-14s %14s %10s %12s %10s\n' "phase" "instructions" "per point" "LL misses" \
        "per point"
    declare -A ir ll
    for phase in nearby_build nearby_pairs naive_build naive_pairs; do
        read -r v m <<< "$(cost "${phase%%_*}" "nbb_cg_$phase")"
        row "$phase" "$v" "$m"
        ir[$phase]=$v
        ll[$phase]=$m
    done
    nb=$((ir[nearby_build] + ir[nearby_pairs]))
    nv=$((ir[naive_build] + ir[naive_pairs]))
    row "nearby_frame" "$nb" $((ll[nearby_build] + ll[nearby_pairs]))
    row "naive_frame" "$nv" $((ll[naive_build] + ll[naive_pairs]))
    if [ "$nb" -gt 0 ]; then
        echo "naive / nearby instructions: $(echo "$nv $nb" | awk '{printf "%.2f", $1 / $2}')x" \
            "(LL misses: modelled 2 MiB, 16-way, 64-byte lines)"
    fi
    echo
    echo "where nearby's instructions go (self cost per function, one steady-state frame;"
    echo "columns: instructions, LL read misses, LL write misses):"
    callgrind_annotate --show=Ir,DLmr,DLmw "$bin/callgrind.nearby.out" 2> /dev/null |
        grep -E '^ *[0-9,]+ ' | head -10
    echo "full profiles: callgrind_annotate $bin/callgrind.{nearby,naive}.out"
    echo "(configure with -DCMAKE_C_FLAGS=-g for per-line costs: callgrind_annotate --auto=yes)"
    exit 0
fi

# ---- cell-size sweep: run_cell_size [instructions] times the dense grid's build + all pairs
# against cell_size / r (cell_size_sweep.c), writes the CSV and draws docs/cell_size.svg
# (plot_cell_size.py); with "instructions" it also counts one frame's instructions under
# callgrind at a few ratios (200k points). Status 1 on a failure or a MISMATCH ----
run_cell_size() {
    local n=${NB_BENCH_SWEEP_N:-1000000} runs=${NB_BENCH_SWEEP_RUNS:-7} r=1.75 f outdir csv icsv
    local commit_s cpu t0 ratio label cg_n=200000 cf ir
    [ -x "$bin/cell_size_sweep" ] || {
        echo "run.sh: $bin/cell_size_sweep not built; skipping the cell-size sweep" >&2
        return 0
    }
    f=$(gen uniform2d "$n")
    outdir=$root/bench/results/$machine
    csv=$outdir/cell_size.csv
    icsv=$outdir/cell_size_instructions.csv
    mkdir -p "$outdir"
    commit_s=$(git -C "$root" rev-parse --short HEAD 2> /dev/null || echo unknown)
    echo "run.sh: cell-size sweep: uniform2d, $n points, r = $r, $runs frames per ratio" >&2
    t0=$(date +%s)
    "${pin[@]}" "$bin/cell_size_sweep" "$f" "$r" "$runs" "$machine" "$commit_s" > "$csv.tmp" || {
        echo "run.sh: cell_size_sweep FAILED" >&2
        rm -f "$csv.tmp"
        return 1
    }
    mv "$csv.tmp" "$csv"
    echo "run.sh: the sweep took $(($(date +%s) - t0)) s" >&2
    if [ "${1-}" = instructions ]; then
        if command -v valgrind > /dev/null; then
            # One steady-state frame per ratio; instruction counts do not depend on the
            # neighbours on a shared machine. 0.25 is left out: its hashed cells took minutes
            # under valgrind (ranked cells since 2026-12-02 would not).
            cf=$(gen uniform2d $cg_n)
            echo "ratio,label,n_points,radius,instructions,commit" > "$icsv.tmp"
            for ratio in 0.5 0.7 1 default 1.2 2 4; do
                label=""
                [ "$ratio" = default ] && label=default
                valgrind --tool=callgrind --callgrind-out-file="$bin/callgrind.sweep.out" \
                    --collect-atstart=no --toggle-collect=nbb_sweep_frame \
                    "$bin/cell_size_sweep" --callgrind "$cf" "$r" "$ratio" \
                    > "$bin/callgrind.sweep.log" 2>&1 || {
                    cat "$bin/callgrind.sweep.log" >&2
                    return 1
                }
                ir=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$bin/callgrind.sweep.out")
                echo "run.sh: callgrind: cell / r = $ratio: $ir instructions" >&2
                echo "${ratio/default/1},$label,$cg_n,$r,$ir,$commit_s" >> "$icsv.tmp"
            done
            mv "$icsv.tmp" "$icsv"
        else
            echo "run.sh: valgrind not found: no instruction counts for the sweep" >&2
        fi
    fi
    cpu=$(sed -n 's/^model name[^:]*: *//p' /proc/cpuinfo 2> /dev/null | head -1)
    cpu="${cpu:-unknown CPU}, $(getconf _NPROCESSORS_ONLN) cores" # not nproc: it obeys OMP_NUM_THREADS
    "$py" "$here/plot_cell_size.py" "$csv" --out "$root/docs/cell_size.svg" \
        --instructions "$icsv" --cpu "$cpu" --date "$(date +%Y-%m-%d)"
}
if [ "$mode" = --cell-size ]; then
    run_cell_size instructions
    exit $?
fi

# ---- the tile grid: run_tiles runs bench_tiles and keeps its CSV; status 1 on a
# failure (bench_tiles itself fails when the peers' answers differ) ----
run_tiles() {
    local out args
    if [ "$mode" = --quick ]; then
        out=$bin/tiles_quick.csv
        args=(20000 2000 5 1 10)
    else
        mkdir -p "$root/bench/results/$machine"
        out=$root/bench/results/$machine/tiles_latest.csv
        args=(50000 5000 100 3 10)
    fi
    [ -x "$bin/bench_tiles" ] || {
        echo "run.sh: $bin/bench_tiles not found; skipping the tile-grid section" >&2
        return 0
    }
    echo "run.sh: tile grid: bench_tiles ${args[*]}" >&2
    "${pin[@]}" "$bin/bench_tiles" "${args[@]}" > "$out.tmp" || {
        echo "run.sh: tile grid: bench_tiles FAILED" >&2
        rm -f "$out.tmp"
        return 1
    }
    mv "$out.tmp" "$out"
    echo "run.sh: tile grid: wrote $out" >&2
}
if [ "$mode" = --tiles ]; then
    run_tiles
    exit $?
fi

# The CSV a section writes: BUILD_DIR/bench/NAME_quick.csv in a --quick run, else NAME_latest.csv
# in this machine's results directory.
section_csv() {
    if [ "$mode" = --quick ]; then
        echo "$bin/$1_quick.csv"
    else
        mkdir -p "$root/bench/results/$machine"
        echo "$root/bench/results/$machine/$1_latest.csv"
    fi
}

# ---- reordering: a random walk with the arrays reordered into cell order (bench_reorder) ----
run_reorder() {
    [ -x "$bin/bench_reorder" ] || { echo "run.sh: bench_reorder not built; skipping" >&2; return 0; }
    local n=1000000 steps=100 out
    [ "$mode" = --quick ] && n=100000 steps=20
    out=$(section_csv reorder)
    echo "run.sh: reordering: $n points, $steps steps, reordered every 10" >&2
    "${pin[@]}" "$bin/bench_reorder" "$n" "$steps" 10 > "$out" || return 1
    column -s, -t < "$out" 2> /dev/null || cat "$out"
    # Every order must see the same walk: the same pairs at the last step.
    [ "$(cut -d, -f8 < "$out" | tail -n +2 | sort -u | wc -l)" -eq 1 ] || {
        echo "run.sh: reordering: MISMATCH: the orders disagree on the pair count" >&2
        return 1
    }
}
if [ "$mode" = --reorder ]; then
    run_reorder
    exit $?
fi

# ---- neighbour lists: rows against all pairs, the Verlet list (bench_neighbors) ----
run_neighbors() {
    [ -x "$bin/bench_neighbors" ] || { echo "run.sh: bench_neighbors not built; skipping" >&2; return 0; }
    local n=1000000 steps=100 runs=5 out f
    [ "$mode" = --quick ] && n=100000 steps=20 runs=3
    f=$(gen uniform2d 1000000)
    out=$(section_csv neighbors)
    echo "run.sh: neighbour lists: $n points, $steps Verlet steps; rows at r = 1.75 on $f" >&2
    "${pin[@]}" "$bin/bench_neighbors" "$n" "$steps" "$runs" "$f" > "$out" || return 1
    column -s, -t < "$out" 2> /dev/null || cat "$out"
}
if [ "$mode" = --neighbors ]; then
    run_neighbors
    exit $?
fi

# ---- the spatial hash in an open world: moves only (bench_open_world) ----
run_open_world() {
    [ -x "$bin/bench_open_world" ] || {
        echo "run.sh: bench_open_world not built; skipping" >&2
        return 0
    }
    local n=100000 frames=20 out
    [ "$mode" = --quick ] && n=20000 frames=5
    out=$(section_csv open_world)
    echo "run.sh: open world: $n items, $frames frames of moves" >&2
    echo "world,n,percent,step,frames,move_ms_median,move_ms_max,query_ms_median,hits" > "$out"
    local args
    for args in "1e6 10 0" "1e6 10 1" "2000 10 1" "2000 100 1"; do
        # shellcheck disable=SC2086 # the words of $args are the arguments
        "${pin[@]}" "$bin/bench_open_world" "$n" $args "$frames" >> "$out" || return 1
    done
    column -s, -t < "$out" 2> /dev/null || cat "$out"
}
if [ "$mode" = --open-world ]; then
    run_open_world
    exit $?
fi

# ---- whole CLI processes: run_cli (bench_cli.py); status 1 on a failure or a MISMATCH ----
run_cli() {
    local rounds=7 small big
    [ -x "$build/nearby" ] || {
        echo "run.sh: $build/nearby not built (NB_BUILD_CLI=OFF?); skipping the CLI section" >&2
        return 0
    }
    if ! "$py" -c 'import numpy, scipy.spatial' 2> /dev/null; then
        echo "run.sh: $py lacks numpy or scipy; skipping the CLI section" >&2
        return 0
    fi
    small=$(gen uniform2d 1000000)
    big=$(gen uniform2d 16000000)
    mkdir -p "$root/bench/results/$machine"
    echo "run.sh: CLI: whole processes, $rounds rounds" >&2
    "${pin[@]}" "$py" "$here/bench_cli.py" "$build/nearby" "$small" "$big" --rounds "$rounds" \
        --out "$root/bench/results/$machine/cli_latest.csv"
}
if [ "$mode" = --cli ]; then
    run_cli
    exit $?
fi

# ---- the Python package: run_python builds python/ (setup.py build, into BUILD_DIR) and runs
# bench_python.py in one process against cKDTree; status 1 on a failure or a MISMATCH ----
# build_python LIB: builds the Python package into LIB (absolute) as setup.py does; status 1
# (with the log) when the build fails.
build_python() {
    echo "run.sh: python: building the package into $1" >&2
    (cd "$root/python" && "$py" setup.py -q build --build-lib "$1" \
        --build-temp "$(dirname "$1")/python-tmp") > "$bin/python-build.log" 2>&1 || {
        cat "$bin/python-build.log" >&2
        echo "run.sh: python: the build FAILED" >&2
        return 1
    }
}

run_python() {
    local n=100000 runs=3 out cdir lib
    if [ "$mode" = --quick ]; then
        n=20000 runs=1
        out=$bin/python_quick.csv
    else
        mkdir -p "$root/bench/results/$machine"
        out=$root/bench/results/$machine/python_latest.csv
    fi
    if ! "$py" -c 'import numpy, scipy.spatial, setuptools' 2> /dev/null; then
        echo "run.sh: $py lacks numpy, scipy or setuptools; skipping the Python section" >&2
        return 0
    fi
    cdir=$data/corpus
    mkdir -p "$cdir"
    "$bin/gen_data" --corpus "$cdir" "$n" 1 || return 1
    lib=$(cd "$bin" && pwd)/python-lib # absolute: setup.py runs in python/
    build_python "$lib" || return 1
    echo "run.sh: python: nearby.cKDTree against cKDTree, the corpus at $n points, $runs runs" >&2
    PYTHONPATH="$lib" "${pin[@]}" "$py" "$here/bench_python.py" "$cdir/corpus-$n-1.csv" \
        --runs "$runs" --out "$out" --machine "$machine"
}
if [ "$mode" = --python ]; then
    run_python
    exit $?
fi

# ---- the corpus: run_corpus runs bench_corpus (C: nearby against nanoflann and the packed
# Boost rtree) and bench_corpus.py (Python: the package against cKDTree) on every set of
# bench/corpus.h and prints the joined table; status 1 on a failure or a MISMATCH ----
run_corpus() {
    local n=${NB_BENCH_CORPUS_N:-200000} nr=${NB_BENCH_CORPUS_RECTS_N:-100000} out cdir lib
    local st=0 t0 load commit_c py_rows=""
    out=$root/bench/results/$machine/corpus_latest.csv
    mkdir -p "$(dirname "$out")"
    cdir=$data/corpus
    mkdir -p "$cdir"
    load=$(cut -d' ' -f1-3 /proc/loadavg 2> /dev/null || echo unknown)
    echo "run.sh: corpus: $n points, $nr rectangles a set; load average $load" >&2
    if [ -x "$bin/bench_corpus" ]; then
        t0=$(date +%s)
        "${pin[@]}" "$bin/bench_corpus" --n "$n" --rects-n "$nr" > "$bin/corpus_c.csv" || {
            echo "run.sh: corpus: bench_corpus FAILED (or a MISMATCH)" >&2
            st=1
        }
        echo "run.sh: corpus: the C side took $(($(date +%s) - t0)) s" >&2
    else
        echo "run.sh: $bin/bench_corpus not built; skipping the corpus's C side" >&2
        : > "$bin/corpus_c.csv"
    fi
    if "$py" -c 'import numpy, scipy.spatial, setuptools' 2> /dev/null; then
        lib=$(cd "$bin" && pwd)/python-lib
        build_python "$lib" || return 1
        "$bin/gen_data" --corpus "$cdir" "$n" "$nr" || return 1
        t0=$(date +%s)
        PYTHONPATH="$lib" "${pin[@]}" "$py" "$here/bench_corpus.py" \
            "$cdir/corpus-$n-$nr.csv" > "$bin/corpus_py.csv" || {
            echo "run.sh: corpus: bench_corpus.py FAILED (or a MISMATCH)" >&2
            st=1
        }
        echo "run.sh: corpus: the Python side took $(($(date +%s) - t0)) s" >&2
        py_rows=$bin/corpus_py.csv
    else
        echo "run.sh: $py lacks numpy, scipy or setuptools; skipping the corpus's Python side" >&2
    fi
    load="$load -> $(cut -d' ' -f1-3 /proc/loadavg 2> /dev/null || echo unknown)"
    commit_c=$(git -C "$root" rev-parse --short HEAD 2> /dev/null || echo unknown)
    "$py" "$here/report_corpus.py" "$bin/corpus_c.csv" $py_rows --out "$out" \
        --machine "$machine" --commit "$commit_c" --load "$load" || st=1
    echo "run.sh: corpus: wrote $out" >&2
    return $st
}
if [ "$mode" = --corpus ]; then
    run_corpus
    exit $?
fi

# ---- moving agents: run_agents runs the section and prints its table; status 1 on a failure
# or a MISMATCH ----
agents_peers=${NB_BENCH_AGENTS_PEERS-nearby_hash nearby_grid b2tree rtree_packed rtree_rstar \
naive_hash}
run_agents() {
    # Box2D's tree takes ~3 s a frame here (100k queries at ~30 us: each visits ~200 nodes of a
    # tree 20 deep), so it runs 20 frames; it is checked against the others on the first 10.
    local n=100000 frames=100 frames_b2=20 runs_nearby=3 runs_peers=1 runs_cross=1 out araw st=0
    # The crossover's shares; 100 and 10 are the two variants every peer runs.
    local shares="100 50 20 10 5 1" variants="100 10" peer pct runs exe t0 fr
    local afailed=""
    if [ "$mode" = --quick ]; then
        n=20000 frames=10 frames_b2=10 runs_nearby=1
        out=$bin/agents_quick.csv
    else
        mkdir -p "$root/bench/results/$machine"
        out=$root/bench/results/$machine/agents_latest.csv
    fi
    [ -n "$agents_peers" ] || return 0
    araw=$bin/agents_raw.csv
    : > "$araw"
    echo "run.sh: moving agents: $n agents, $frames frames a run" >&2
    local start_a
    start_a=$(date +%s)
    for peer in $agents_peers; do
        case "$peer" in
            nearby_hash | nearby_grid) exe=("$bin/bench_agents" "${peer#nearby_}") ;;
            b2tree | rtree_packed | rtree_rstar | naive_hash)
                exe=("$bin/bench_agents_peers" "$peer") ;;
            *) echo "run.sh: unknown agents peer $peer" >&2; return 2 ;;
        esac
        if [ ! -x "${exe[0]}" ]; then
            echo "run.sh: ${exe[-1]} not built; skipping $peer" >&2
            continue
        fi
        for pct in $shares; do
            # every peer runs the variants; only nearby's two run the other shares
            if [ "${peer#nearby_}" != "$peer" ]; then
                runs=$runs_cross
                case " $variants " in *" $pct "*) runs=$runs_nearby ;; esac
            else
                case " $variants " in *" $pct "*) runs=$runs_peers ;; *) continue ;; esac
            fi
            fr=$frames
            [ "$peer" = b2tree ] && fr=$frames_b2
            t0=$(date +%s.%N)
            local rc=0
            "${pin[@]}" "${exe[@]}" "$pct" "$runs" "$fr" "$n" >> "$araw" || rc=$?
            if [ "$rc" -eq 3 ]; then # not built in (a peer library, or nearby's hash, missing)
                echo "run.sh: agents: $peer not built in; skipping it" >&2
                break
            elif [ "$rc" -ne 0 ]; then
                echo "run.sh: agents: $peer FAILED at $pct% moving" >&2
                afailed="$afailed $peer/$pct%"
                continue
            fi
            printf 'run.sh: agents %-12s %3d%% moving %2d x %3d frames: %s\n' "$peer" "$pct" \
                "$runs" "$fr" "$(echo "$t0 $(date +%s.%N)" | awk '{printf "%.1f s", $2 - $1}')" >&2
        done
    done
    echo "run.sh: the agents section took $(($(date +%s) - start_a)) s" >&2
    local commit_a
    commit_a=$(git -C "$root" rev-parse --short HEAD 2> /dev/null || echo unknown)
    "$py" "$here/report_agents.py" "$araw" --machine "$machine" --out "$out" \
        --commit "$commit_a" --variants "$variants" || st=1
    if [ -n "$afailed" ]; then
        echo "run.sh: agents: FAILED runs:$afailed" >&2
        st=1
    fi
    return $st
}
if [ "$mode" = --agents ]; then
    run_agents
    exit $?
fi

# ---- periodic box: run_periodic runs bench_periodic.py (nearby's dense grid with
# nbGridDesc.period against cKDTree(boxsize=...), pair for pair) and writes its CSV lines;
# status 1 on a failure or a MISMATCH ----
run_periodic() {
    local n=${NB_BENCH_PERIODIC_N:-1000000} runs=${NB_BENCH_PERIODIC_RUNS:-5} out
    [ -x "$bin/bench_periodic" ] || {
        echo "run.sh: $bin/bench_periodic not built; skipping the periodic box" >&2
        return 0
    }
    if ! "$py" -c 'import scipy.spatial' 2> /dev/null; then
        echo "run.sh: $py has no scipy (apt-get install python3-scipy); skipping the periodic box" >&2
        return 0
    fi
    out=$root/bench/results/$machine/periodic_latest.csv
    mkdir -p "$(dirname "$out")"
    echo "$NBB_RAW_HEADER_LINE" > "$out.tmp"
    echo "run.sh: periodic box: uniform 2D, $n points, r = 1.75, $runs frames each" >&2
    "${pin[@]}" "$py" "$here/bench_periodic.py" "$build" --n "$n" --runs "$runs" \
        --radius 1.75 --out "$out.tmp" || {
        echo "run.sh: periodic box FAILED" >&2
        rm -f "$out.tmp"
        return 1
    }
    mv "$out.tmp" "$out"
}
NBB_RAW_HEADER_LINE="peer,dataset,operation,n_points,runs,min_ns,median_ns,allocs_per_frame,\
bytes_held,bytes_method,pairs,checksum,compiler,flags"
if [ "$mode" = --periodic ]; then
    run_periodic
    exit $?
fi

# ---- rectangles: run_rects runs the section and prints its tables; status 1 on a
# failure or a MISMATCH ----
rects_peers=${NB_BENCH_RECTS_PEERS-nearby_quadtree rtree_packed rtree_rstar b2tree sidx_rstar \
sidx_join flatbush rbush}
run_rects() {
    local q=() out rraw rdata peer exe t0 rc st=0 rfailed="" js=$here/rects_js commit_r dumped=""
    [ -n "$rects_peers" ] || return 0
    if [ "$mode" = --quick ] || [ -n "$rects_quick" ]; then
        q=(--quick)
        out=$bin/rects_quick.csv
        rdata=$data/rects-quick
    else
        mkdir -p "$root/bench/results/$machine"
        out=$root/bench/results/$machine/rects_latest.csv
        rdata=$data/rects-full
    fi
    rraw=$bin/rects_raw.csv
    : > "$rraw"
    echo "run.sh: rectangles${q[*]:+ (--quick)}: peers $rects_peers" >&2
    local start_r
    start_r=$(date +%s)
    for peer in $rects_peers; do
        case "$peer" in
            nearby_quadtree) exe=("$bin/bench_rects" "${q[@]}") ;;
            # Box2D's tree, libspatialindex's R*-tree and rbush take seconds a frame at 100k
            # moving rectangles (measured under load: ~11, ~66 and ~13 s), so they run 5 frames
            # of the moving workload, checked against the others on moving_first5
            b2tree | sidx_rstar) exe=("$bin/bench_rects_peers" "$peer" "${q[@]}")
                [ -n "${q[*]}" ] || exe+=(--frames 5) ;;
            rtree_packed | rtree_rstar | sidx_join)
                exe=("$bin/bench_rects_peers" "$peer" "${q[@]}") ;;
            flatbush | rbush)
                if ! command -v node > /dev/null 2>&1; then
                    echo "run.sh: rects: node not found; skipping $peer" >&2
                    continue
                fi
                if [ ! -d "$js/node_modules/$peer" ]; then
                    echo "run.sh: rects: $js/node_modules/$peer missing (make bench installs it:" \
                        "cd bench/rects_js && npm ci); skipping $peer" >&2
                    continue
                fi
                if [ ! -x "$bin/bench_rects_peers" ]; then
                    echo "run.sh: rects: $bin/bench_rects_peers not built (it writes the JS" \
                        "peers' data); skipping $peer" >&2
                    continue
                fi
                if [ -z "$dumped" ]; then # once a run: 0.2 s, never stale
                    mkdir -p "$rdata"
                    "$bin/bench_rects_peers" --dump "$rdata" "${q[@]}" || {
                        echo "run.sh: rects: bench_rects_peers --dump FAILED" >&2
                        rfailed="$rfailed dump"
                        continue
                    }
                    dumped=1
                fi
                exe=(node "$js/bench.mjs" "$rdata" "$peer" "${q[@]}")
                [ -n "${q[*]}" ] || [ "$peer" = flatbush ] || exe+=(--frames 5) ;;
            *) echo "run.sh: unknown rects peer $peer" >&2; return 2 ;;
        esac
        if [ "${exe[0]}" != node ] && [ ! -x "${exe[0]}" ]; then
            echo "run.sh: ${exe[0]} not built; skipping $peer" >&2
            continue
        fi
        t0=$(date +%s.%N)
        rc=0
        "${pin[@]}" "${exe[@]}" >> "$rraw" || rc=$?
        if [ "$rc" -eq 3 ]; then # a peer library missing at configure time
            echo "run.sh: rects: $peer not built in; skipping it" >&2
            continue
        elif [ "$rc" -ne 0 ]; then
            echo "run.sh: rects: $peer FAILED" >&2
            rfailed="$rfailed $peer"
            continue
        fi
        printf 'run.sh: rects %-16s %s\n' "$peer" \
            "$(echo "$t0 $(date +%s.%N)" | awk '{printf "%.1f s", $2 - $1}')" >&2
    done
    echo "run.sh: the rectangles section took $(($(date +%s) - start_r)) s" >&2
    commit_r=$(git -C "$root" rev-parse --short HEAD 2> /dev/null || echo unknown)
    if [ -s "$rraw" ]; then
        "$py" "$here/report_rects.py" "$rraw" --machine "$machine" --out "$out" \
            --commit "$commit_r" "${q[@]}" || st=1
    else
        echo "run.sh: rects: no runner produced a row" >&2
    fi
    if [ -n "$rfailed" ]; then
        echo "run.sh: rects: FAILED runs:$rfailed" >&2
        st=1
    fi
    return $st
}
if [ "$mode" = --rects ]; then
    run_rects
    exit $?
fi

# ---- MPI: run_mpi runs bench_mpi (one CSV header and a row a peer per run) through
# tests/mpi/mpirun.sh and prints the table; status 1 on a failure or a MISMATCH ----
run_mpi() {
    local n=${NB_BENCH_MPI_N:-1000000} out raw spec set r np runs f st=0
    [ -x "$bin/bench_mpi" ] || {
        echo "run.sh: $bin/bench_mpi not built (configure found no MPI?); skipping MPI" >&2
        return 0
    }
    out=$root/bench/results/$machine/mpi_latest.csv
    mkdir -p "$(dirname "$out")"
    raw=$bin/mpi_raw.csv
    : > "$raw"
    # set radius ranks runs: time on 1 and 2 ranks (this machine has 2 cores); 4 and 8 ranks
    # share them, so their times mean little: they are there for bytes, halo and balance.
    for spec in "uniform2d 1.75 1 7" "uniform2d 1.75 2 7" "uniform2d 1.75 4 2" \
        "uniform2d 1.75 8 2" "clusters2d 1 1 2" "clusters2d 1 4 2" "clusters2d 1 8 2"; do
        read -r set r np runs <<< "$spec"
        f=$(gen "$set" "$n")
        echo "run.sh: mpi: $set, $n points, r = $r, $np ranks, $runs runs" >&2
        OMPI_MCA_orte_execute_quiet=1 sh "$root/tests/mpi/mpirun.sh" "$np" "$bin/bench_mpi" \
            "$f" 2 "$r" "$runs" "$set" >> "$raw" || {
            echo "run.sh: mpi: $set on $np ranks FAILED" >&2
            st=1
        }
    done
    { head -n 1 "$raw"; grep -v '^peer,' "$raw"; } > "$out"
    # ms a frame (median), speed-up against the grid on the same set, and the balance figures
    awk -F, 'NR == 1 { next }
        $1 == "grid" { grid[$2] = $8 }
        { row[NR] = $0 }
        END {
            printf "%-5s %-10s %5s %10s %8s %8s %10s %12s %9s\n", "peer", "dataset", "ranks",
                "median_ms", "speedup", "balance", "halo/own", "sent/rank", "B/point"
            for (k = 2; k <= NR; k++) {
                split(row[k], f, ",")
                sp = (f[2] in grid && f[8] > 0) ? sprintf("%.2f", grid[f[2]] / f[8]) : "-"
                printf "%-5s %-10s %5d %10.1f %8s %8.3f %10.4f %12.0f %9.1f\n", f[1], f[2], f[3],
                    f[8], sp, f[12], f[14], f[16], f[18]
            }
        }' "$out"
    echo "run.sh: mpi: wrote $out" >&2
    return $st
}
if [ "$mode" = --mpi ]; then
    run_mpi
    exit $?
fi

# ---- timing ----
# name  N  dim  r  mode(pairs|count)  runs(nearby naive nanoflann ckdtree). lattice2d is a
# correctness check (every pair exactly r apart), not a target.
if [ "$mode" = --quick ]; then
    sets=(
        "uniform2d 100000 2 1.75 pairs 3 3 3 3"
        "clusters2d 100000 2 1 count 3 3 3 3"
        "uniform3d 100000 3 1.34 pairs 3 3 3 3"
        "lattice2d 40000 2 1 pairs 1 1 1 1"
    )
    outdir=$bin
    results=$bin/quick.csv
else
    sets=(
        "uniform2d 1000000 2 1.75 pairs 21 7 7 7"
        "clusters2d 1000000 2 1 count 9 5 3 3"
        "uniform3d 1000000 3 1.34 pairs 21 7 7 5"
        "lattice2d 250000 2 1 pairs 3 3 3 3"
    )
    outdir=$root/bench/results/$machine
    results=$outdir/latest.csv
fi
mkdir -p "$outdir"
raw=$bin/raw.csv
: > "$raw" # the runners' CSV lines (bench_common.h: NBB_RAW_HEADER), no header

spec=""
failed=""
start=$(date +%s)
for s in "${sets[@]}"; do
    read -r name n dim r how runs_nearby runs_naive runs_nanoflann runs_ckdtree <<< "$s"
    f=$(gen "$name" "$n")
    spec="$spec $name:$n:$dim:$r:$how"
    for peer in $peers; do
        case "$peer" in
            nearby) exe=("$bin/bench_nearby") runs=$runs_nearby ;;
            nearby_t2) exe=(env NBB_THREADS=2 "$bin/bench_nearby") runs=$runs_nearby ;;
            naive) exe=("$bin/bench_naive") runs=$runs_naive ;;
            nanoflann) exe=("$bin/bench_nanoflann") runs=$runs_nanoflann ;;
            ckdtree) exe=("$py" "$here/bench_ckdtree.py") runs=$runs_ckdtree ;;
            ckdtree_set) # the default query_pairs (a Python set): slow, for reference only
                [ "$how" = pairs ] || continue
                exe=(env NBB_CKDTREE_OUTPUT=set "$py" "$here/bench_ckdtree.py")
                runs=$((runs_ckdtree < 3 ? runs_ckdtree : 3)) ;;
            *) echo "run.sh: unknown peer $peer" >&2; exit 2 ;;
        esac
        if [ "${peer#ckdtree}" = "$peer" ] && [ ! -x "${exe[-1]}" ]; then
            echo "run.sh: ${exe[-1]} not built; skipping $peer" >&2
            continue
        fi
        if [ "${peer#ckdtree}" != "$peer" ] && ! "$py" -c 'import scipy.spatial' 2> /dev/null; then
            echo "run.sh: $py has no scipy (apt-get install python3-scipy); skipping cKDTree" >&2
            continue
        fi
        t0=$(date +%s.%N)
        if ! "${pin[@]}" "${exe[@]}" "$f" "$dim" "$r" "$how" "$runs" "$name" >> "$raw"; then
            echo "run.sh: $peer FAILED on $name" >&2
            failed="$failed $peer/$name"
            continue
        fi
        printf 'run.sh: %-10s %-10s %2d runs: %s\n' "$name" "$peer" "$runs" \
            "$(echo "$t0 $(date +%s.%N)" | awk '{printf "%.1f s", $2 - $1}')" >&2
    done
done
echo "run.sh: all runs took $(($(date +%s) - start)) s" >&2

commit=$(git -C "$root" rev-parse --short HEAD 2> /dev/null || echo unknown)
if [ -n "$(git -C "$root" status --porcelain -- src include 2> /dev/null)" ]; then
    commit="$commit+dirty"
fi
base=()
[ "$mode" = full ] && [ -f "$outdir/baseline.csv" ] && base=(--baseline "$outdir/baseline.csv")
status=0
"$py" "$here/report.py" "$raw" --machine "$machine" --out "$results" --commit "$commit" \
    --sets "$spec" "${base[@]}" || status=$?
if [ -n "$failed" ]; then
    echo "run.sh: FAILED runs:$failed" >&2
    status=1
fi
[ "$mode" = full ] && { run_cell_size || status=1; }
[ "$mode" = full ] && { run_periodic || status=1; }
run_reorder || status=1
run_neighbors || status=1
run_open_world || status=1
[ "$mode" = full ] && { run_cli || status=1; }
run_tiles || status=1
run_agents || status=1
run_python || status=1
run_rects || status=1
[ "$mode" = full ] && { run_corpus || status=1; }
exit $status

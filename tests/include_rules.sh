#!/bin/sh
# SPDX-License-Identifier: MIT
# Which source file may include which header (docs/architecture.md, "Who may include what"):
#   the floor (nb_internal.h, cell, cell_table, handle_pool, view, sink, pair_kernels, simd,
#   and the walkers pairs.c / query.c) includes only the floor and <nearby/nearby.h>;
#   a structure's files (grid* and neighbors*, hash*, tiles*, quadtree*, mpi*) include the floor, their own
#   public header and their own private headers (<structure>_*.h / <structure>_internal.h),
#   and no other structure's header, public or private (MPI is a user of the grid: it may
#   include <nearby/grid.h>, never the grid's private headers);
#   tools/, python/src/ and examples/ include only public headers (<nearby/...>) and their own
#   files, never src/ (tests and benchmarks of the insides may).
# Prints every include that breaks a rule and exits 1 if there is one. Usage: include_rules.sh [ROOT]
set -eu
root=${1:-$(dirname "$0")/..}
bad=0
floor="nb_internal.h cell.h cell_table.h handle_pool.h view.h sink.h knn_heap.h knn_index.h block_arena.h pair_kernels.h simd.h"
owner() { # the structure a src/ file belongs to, or "floor"
    case $(basename "$1") in
    grid* | neighbors*) echo grid ;; hash*) echo hash ;; tiles*) echo tiles ;; quadtree*) echo quadtree ;;
    mpi*) echo mpi ;; *) echo floor ;;
    esac
}
report() {
    echo "include_rules: $1 includes $2 ($3)" >&2
    bad=1
}
for f in "$root"/src/*.c "$root"/src/*.h; do
    me=$(owner "$f")
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
        case " $floor " in *" $inc "*) continue ;; esac
        if [ "$me" = floor ]; then
            report "src/$(basename "$f")" "\"$inc\"" "the floor includes only the floor"
        elif [ "$(owner "$inc")" != "$me" ]; then
            report "src/$(basename "$f")" "\"$inc\"" "another structure's private header"
        fi
    done
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*<nearby\/\([^>]*\)>.*/\1/p' "$f"); do
        [ "$inc" = nearby.h ] && continue
        mod=${inc%.h}
        if [ "$me" = floor ]; then
            report "src/$(basename "$f")" "<nearby/$inc>" "the floor sees no structure"
        elif [ "$mod" != "$me" ] && ! { [ "$me" = mpi ] && [ "$mod" = grid ]; } &&
            ! { [ "$me" = grid ] && [ "$mod" = neighbors ]; }; then
            report "src/$(basename "$f")" "<nearby/$inc>" "another structure's header"
        fi
    done
done
private=$(cd "$root/src" && echo *.h) # every header under src/ (the floor's and the structures')
for dir in tools tools/io python/src examples; do
    [ -d "$root/$dir" ] || continue
    for f in "$root/$dir"/*.c "$root/$dir"/*.h "$root/$dir"/*.cpp; do
        [ -f "$f" ] || continue
        for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
            case $inc in
            */src/* | ../src/* | ../../src/*) report "$dir/$(basename "$f")" "\"$inc\"" "src/ is not API" ;;
            esac
            case " $private " in
            *" $inc "*) [ -f "$root/$dir/$inc" ] || report "$dir/$(basename "$f")" "\"$inc\"" "src/ is not API" ;;
            esac
        done
    done
done
[ "$bad" -eq 0 ] && echo "include_rules: every include follows the rules"
exit "$bad"

# SPDX-License-Identifier: MIT
"""The rectangles tables (the rectangles benchmark, bench/rects_common.h): reads the runners' CSV
lines `peer,figure,ms_median,runs,count,sum[,cpu_ms_median]` (bench_rects, bench_rects_peers,
rects_js; the CPU-time median is optional: on a shared machine it leaves out the time a runner
waited for a CPU, so it is printed next to the wall-clock time and its ratio too), checks
that every peer found the same rectangles, prints one markdown table per figure (median ms,
ratio to nearby_quadtree when it ran, agreement) and the targets, and writes the rows
with a header.

    python3 bench/report_rects.py RAW.csv --machine M --out OUT.csv --commit C [--quick]

Agreement: per figure, every row's (count, sum) must equal the reference: nearby_quadtree's
when it ran, else the value most peers share. moving_frame sums over all the frames a runner
ran, so it is compared among rows with the same number of frames; a row run for fewer frames
is checked through moving_first5 (the first 5 frames, which every peer runner reports).
Exit status 1 on a MISMATCH (or when no row came in)."""
import argparse
import collections
import csv
import sys

FIELDS = ("peer", "figure", "ms_median", "runs", "count", "sum", "cpu_ms_median")
NEARBY = "nearby_quadtree"
PACKED = "rtree_packed"
NAMES = {
    NEARBY: "nearby quadtree",
    "rtree_packed": "Boost.Geometry rtree, packed",
    "rtree_rstar": "Boost.Geometry rtree, R* inserts",
    "b2tree": "Box2D b2DynamicTree",
    "sidx_rstar": "libspatialindex R*-tree",
    "sidx_join": "libspatialindex R*-tree, selfJoinQuery",
    "flatbush": "flatbush (node)",
    "rbush": "rbush (node)",
}
ORDER = (NEARBY, "rtree_packed", "rtree_rstar", "b2tree", "sidx_rstar", "sidx_join", "flatbush",
         "rbush")
# How each peer does the moving workload's update.
MOVES = {
    "rtree_packed": "bulk load every frame",
    "rtree_rstar": "remove + insert",
    "b2tree": "MoveProxy (fat AABB)",
    "sidx_rstar": "deleteData + insertData",
    "flatbush": "rebuilt every frame",
    "rbush": "remove + insert",
}
FIGURES = ("build_1m", "windows_10k", "pairs_100k", "moving_frame")
TITLES = {
    False: {
        "build_1m": "build from 1M rectangles",
        "windows_10k": "10k windows against the 1M",
        "pairs_100k": "overlap pairs (i < j) of the first 100k, tree built beforehand",
        "moving_frame": "moving: 100k rectangles, ms per frame (update + one window per "
                        "rectangle)",
    },
    True: {
        "build_1m": "--quick: build from 100k rectangles",
        "windows_10k": "--quick: 1k windows against the 100k",
        "pairs_100k": "--quick: overlap pairs (i < j) of the first 10k, tree built beforehand",
        "moving_frame": "--quick: moving: 10k rectangles x 5 frames, ms per frame",
    },
}
# The targets: (figure, peer, factor): nearby's median at least `factor` times faster
# than the peer's (factor 1: no slower).
TARGETS = (
    ("windows_10k", PACKED, 2.0),
    ("windows_10k", "flatbush", 5.0),
    ("build_1m", PACKED, 1.0),
    ("pairs_100k", PACKED, 2.0),
    ("moving_frame", PACKED, 2.0),
)


def order_key(peer):
    return (ORDER.index(peer) if peer in ORDER else len(ORDER), peer)


def reference(rows):
    """The (count, sum) the rows should share: nearby's, else the most common one."""
    for r in rows:
        if r["peer"] == NEARBY:
            return (r["count"], r["sum"])
    c = collections.Counter((r["count"], r["sum"]) for r in rows)
    return c.most_common(1)[0][0] if c else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw")
    ap.add_argument("--machine", default="?")
    ap.add_argument("--out", required=True)
    ap.add_argument("--commit", default="?")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()

    rows = []
    with open(args.raw) as f:
        for line in csv.reader(f):
            if not line or line[0].startswith("#"):
                continue
            if len(line) not in (len(FIELDS) - 1, len(FIELDS)):
                print(f"report_rects: bad line: {','.join(line)}", file=sys.stderr)
                return 1
            r = dict(zip(FIELDS, line))
            r.setdefault("cpu_ms_median", "")
            r["ms"] = float(r["ms_median"])
            r["cpu"] = float(r["cpu_ms_median"]) if r["cpu_ms_median"] else None
            r["runs"] = int(r["runs"])
            rows.append(r)
    if not rows:
        print("report_rects: no results", file=sys.stderr)
        return 1
    by = {(r["peer"], r["figure"]): r for r in rows}
    status = 0
    verdict = {}  # (peer, figure) -> agreement text

    for fig in ("moving_first5",) + FIGURES:  # first5 first: moving_frame uses its verdicts
        group = [r for r in rows if r["figure"] == fig]
        if not group:
            continue
        if fig == "moving_frame":
            # Compare among rows that ran as many frames; the reference group is nearby's,
            # else the one with the most frames.
            frames = {r["runs"] for r in group}
            ref_frames = by[(NEARBY, fig)]["runs"] if (NEARBY, fig) in by else max(frames)
            for fr in sorted(frames):
                sub = [r for r in group if r["runs"] == fr]
                ref = reference(sub)
                for r in sub:
                    ok = (r["count"], r["sum"]) == ref
                    if fr != ref_frames:
                        p5 = verdict.get((r["peer"], "moving_first5"))
                        verdict[(r["peer"], fig)] = (f"{fr} frames; first 5: {p5}" if p5
                                                     else f"{fr} frames: not checked")
                        if p5 and p5 != "yes":
                            status = 1
                        continue
                    verdict[(r["peer"], fig)] = "yes" if ok else "MISMATCH"
                    if not ok:
                        status = 1
            continue
        ref = reference(group)
        for r in group:
            ok = (r["count"], r["sum"]) == ref
            verdict[(r["peer"], fig)] = "yes" if ok else "MISMATCH"
            if not ok:
                status = 1
    if status:
        print("MISMATCH: the peers found different rectangles:")
        for r in sorted(rows, key=lambda r: (r["figure"], order_key(r["peer"]))):
            print(f"  {r['figure']:14s} {r['peer']:16s} runs {r['runs']:4d} count {r['count']:>10s}"
                  f" sum {r['sum']:>22s} {verdict.get((r['peer'], r['figure']), '')}")
        print()

    print(f"rectangles ({'--quick' if args.quick else 'full'} run, one thread; ms: wall-clock "
          f"median, cpu: CPU-time median; 'x nearby' = the peer's time / nearby_quadtree's, "
          f"wall [cpu])")
    for fig in FIGURES:
        group = sorted((r for r in rows if r["figure"] == fig), key=lambda r: order_key(r["peer"]))
        if not group:
            continue
        nb = by.get((NEARBY, fig))
        print(f"\n### {TITLES[args.quick][fig]}\n")
        extra = " how |" if fig == "moving_frame" else ""
        print(f"| peer | ms (median) | cpu ms | runs |{extra} x nearby | count | agrees |")
        print("|---|---:|---:|---:|" + ("---|" if extra else "") + "---:|---:|---|")
        for r in group:
            ratio = f"{r['ms'] / nb['ms']:.2f}x" if nb and nb["ms"] > 0 else "-"
            if nb and nb["cpu"] and r["cpu"] is not None:
                ratio += f" [{r['cpu'] / nb['cpu']:.2f}x]"
            cpu = f"{r['cpu']:.2f}" if r["cpu"] is not None else "-"
            how = f" {MOVES.get(r['peer'], '')} |" if extra else ""
            agrees = verdict.get((r["peer"], fig), "?")
            if agrees == "MISMATCH":
                agrees = "**MISMATCH**"
            print(f"| {NAMES.get(r['peer'], r['peer'])} | {r['ms']:.2f} | {cpu} | {r['runs']} |"
                  f"{how} {ratio} | {int(r['count']):,} | {agrees} |")

    peers = {r["peer"] for r in rows}
    if NEARBY not in peers:
        print(f"\n(no {NEARBY} rows: bench_rects not built; the targets are not checked)")
    else:
        print("\ntargets, on medians:")
        for fig, peer, factor in TARGETS:
            nb, pr = by.get((NEARBY, fig)), by.get((peer, fig))
            if nb is None or pr is None:
                print(f"  {fig}: vs {peer}: not measured")
                continue
            x = pr["ms"] / nb["ms"] if nb["ms"] > 0 else float("inf")
            want = "no slower than" if factor == 1.0 else f">= {factor:g}x faster than"
            ok = "PASS" if x >= factor else "FAIL"
            cpu = ""
            if nb["cpu"] and pr["cpu"] is not None:
                xc = pr["cpu"] / nb["cpu"]
                cpu = f"; cpu {xc:.2f}x: {'PASS' if xc >= factor else 'FAIL'}"
            print(f"  {fig}: nearby {nb['ms']:.2f} ms vs {NAMES[peer]} {pr['ms']:.2f} ms: "
                  f"{x:.2f}x (want {want}): {ok}{cpu}")
    if status:
        print("\nMISMATCH: see above; the times of a peer that disagrees mean nothing")

    with open(args.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(list(FIELDS) + ["agrees", "mode", "machine", "commit"])
        for r in sorted(rows, key=lambda r: (r["figure"], order_key(r["peer"]))):
            w.writerow([r[k] for k in FIELDS] +
                       [verdict.get((r["peer"], r["figure"]), "?"),
                        "quick" if args.quick else "full", args.machine, args.commit])
    print(f"\nrows: {args.out}")
    return status


if __name__ == "__main__":
    sys.exit(main())

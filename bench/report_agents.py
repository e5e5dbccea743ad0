# SPDX-License-Identifier: MIT
"""The moving-agents table: reads the agents runners' CSV lines (agents_common.h:
NBA_RAW_HEADER), checks that every peer found the same neighbours frame by frame, prints the
table, the ratios and the hash/grid crossover, and writes the rows with a header.

    python3 bench/report_agents.py RAW.csv --machine M --out OUT.csv --commit C

Exit status 1 on a MISMATCH (or when no row came in)."""
import argparse
import csv
import sys

RAW_FIELDS = ("peer,percent,n_agents,frames,runs,min_ns_per_frame,median_ns_per_frame,"
              "move_median_ns_per_frame,cpu_min_ns_per_frame,cpu_median_ns_per_frame,"
              "allocs_per_frame,bytes_held,bytes_method,hits_per_frame,first_frame_hits,check,"
              "prefix_check,compiler,flags").split(",")
NAMES = {
    "nearby_hash": "nearby hash (move)",
    "nearby_grid": "nearby grid (rebuild)",
    "b2tree": "Box2D b2DynamicTree",
    "rtree_packed": "bgi::rtree packed (rebuild)",
    "rtree_rstar": "bgi::rtree rstar (rm+ins)",
    "naive_hash": "unordered_map hash",
}
TREES = ("b2tree", "rtree_packed", "rtree_rstar")
ORDER = ("nearby_hash", "nearby_grid", "b2tree", "rtree_packed", "rtree_rstar", "naive_hash")


def ms(ns):
    return float(ns) / 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw")
    ap.add_argument("--machine", default="?")
    ap.add_argument("--out", required=True)
    ap.add_argument("--commit", default="?")
    ap.add_argument("--variants", default="100 10", help="the percents every peer ran")
    args = ap.parse_args()

    with open(args.raw) as f:
        rows = [dict(zip(RAW_FIELDS, line)) for line in csv.reader(f) if line]
    if not rows:
        print("report_agents: no results", file=sys.stderr)
        return 1
    for r in rows:
        r["percent"] = int(r["percent"])
    by = {(r["peer"], r["percent"]): r for r in rows}
    status = 0

    # Agreement: per percent, every peer's first frame and fold over the first frames must be
    # equal, and among peers that ran as many frames, the hits and the fold over all frames.
    for pct in sorted({r["percent"] for r in rows}, reverse=True):
        group = [r for r in rows if r["percent"] == pct]
        keys = {(r["first_frame_hits"], r["prefix_check"]) for r in group}
        for fr in {r["frames"] for r in group}:
            keys_fr = {(r["hits_per_frame"], r["check"]) for r in group if r["frames"] == fr}
            if len(keys_fr) != 1:
                keys.add(("frames", fr))  # forces the MISMATCH below
        if len(keys) != 1:
            status = 1
            print(f"MISMATCH at {pct}% moving: the peers found different neighbours:")
            for r in group:
                print(f"  {r['peer']:14s} {r['frames']:>4s} frames: hits/frame "
                      f"{r['hits_per_frame']:>12s} first frame {r['first_frame_hits']:>9s} "
                      f"check {r['check']} prefix {r['prefix_check']}")

    n = rows[0]["n_agents"]
    frames = max((r["frames"] for r in rows), key=int)
    variants = [int(v) for v in args.variants.split()]
    fr_note = ", ".join(sorted({f"{r['peer']} {r['frames']}" for r in rows
                                if r["frames"] != frames}))
    print(f"\nmoving agents: {n} agents at density 1, r = 2, {frames} frames a run"
          + (f" ({fr_note})" if fr_note else "") +
          "; one thread; ms per frame (moves + one radius query per agent)")
    print("wall median [min] over the runs, then CPU-time median, the move part's median, "
          "allocations per frame, MB held\n")
    head = f"{'peer':28s}"
    for v in variants:
        head += f" | {str(v) + '% move':>38s}"
    print(head + " | MB held")
    print("-" * len(head) + "-+--------")
    for peer in ORDER:
        if not any((peer, v) in by for v in variants):
            continue
        line = f"{NAMES.get(peer, peer):28s}"
        mb = ""
        for v in variants:
            r = by.get((peer, v))
            if r is None:
                line += f" | {'-':>38s}"
                continue
            allocs = r["allocs_per_frame"] or "?"
            if allocs != "?":
                a = float(allocs)
                allocs = f"{a:.0f}" if a >= 10 else f"{a:.2g}"
            cell = (f"{ms(r['median_ns_per_frame']):7.1f} [{ms(r['min_ns_per_frame']):6.1f}] "
                    f"cpu {ms(r['cpu_median_ns_per_frame']):6.1f} mv "
                    f"{ms(r['move_median_ns_per_frame']):5.1f} a {allocs:<5s}")
            line += f" | {cell:>38s}"
            mb = f"{int(r['bytes_held']) / 1e6:.1f}"
        print(line + f" | {mb}")
    hits = {r["percent"]: r["hits_per_frame"] for r in rows
            if r["percent"] in variants and r["frames"] == frames}
    print("\nneighbours per frame (own agent excluded): " +
          ", ".join(f"{v}% move {float(hits[v]):,.0f}" for v in variants if v in hits) +
          " (about " + ", ".join(f"{float(hits[v]) / int(n):.2f}" for v in variants if v in hits) +
          " per agent); every peer agrees" + (" - NOT (see MISMATCH)" if status else ""))

    # Ratios, on wall-clock medians (CPU-time ratio in brackets).
    print("\nratios (wall median; CPU-time median in brackets):")
    for v in variants:
        h = by.get(("nearby_hash", v))
        if h is None:
            print(f"  {v}% move: no nearby hash row")
            continue
        trees = [by[(t, v)] for t in TREES if (t, v) in by]
        if trees:
            best = min(trees, key=lambda r: float(r["median_ns_per_frame"]))
            x = float(best["median_ns_per_frame"]) / float(h["median_ns_per_frame"])
            xc = float(best["cpu_median_ns_per_frame"]) / float(h["cpu_median_ns_per_frame"])
            verdict = "PASS" if x >= 10 else "FAIL"
            print(f"  {v:3d}% move: hash vs the fastest tree ({best['peer']}): {x:.2f}x "
                  f"[{xc:.2f}x]; target >= 10x: {verdict}")
        g = by.get(("nearby_grid", v))
        if g is not None:
            x = float(g["median_ns_per_frame"]) / float(h["median_ns_per_frame"])
            xc = float(g["cpu_median_ns_per_frame"]) / float(h["cpu_median_ns_per_frame"])
            tgt = ""
            if v == 10:
                tgt = "; target: hash faster: " + ("PASS" if x > 1 else "FAIL")
            print(f"  {v:3d}% move: hash vs grid rebuilt each frame: {x:.2f}x [{xc:.2f}x] "
                  f"(> 1 means the hash is faster){tgt}")
        nv = by.get(("naive_hash", v))
        if nv is not None:
            x = float(nv["median_ns_per_frame"]) / float(h["median_ns_per_frame"])
            print(f"  {v:3d}% move: hash vs unordered_map hash: {x:.2f}x")

    # Crossover: the share moving per frame at which the hash stops beating the grid.
    shares = sorted(p for (peer, p) in by if peer == "nearby_hash" and ("nearby_grid", p) in by)
    if shares:
        print("\ncrossover, nearby hash (moves) vs nearby grid (rebuild), ms per frame:")
        print(f"  {'moving':>7s} {'hash':>9s} {'grid':>9s} {'grid/hash':>10s} "
              f"{'cpu grid/hash':>14s}")
        wins = []
        for p in shares:
            h = by[("nearby_hash", p)]
            g = by[("nearby_grid", p)]
            x = float(g["median_ns_per_frame"]) / float(h["median_ns_per_frame"])
            xc = float(g["cpu_median_ns_per_frame"]) / float(h["cpu_median_ns_per_frame"])
            wins.append(x > 1)
            print(f"  {p:6d}% {ms(h['median_ns_per_frame']):9.1f} "
                  f"{ms(g['median_ns_per_frame']):9.1f} {x:10.2f} {xc:14.2f}")
        if all(wins):
            print(f"  crossover: above {shares[-1]}% (the hash wins at every share measured)")
        elif not any(wins):
            print(f"  crossover: below {shares[0]}% (the grid rebuild wins at every share "
                  f"measured)")
        else:
            last = max(p for p, w in zip(shares, wins) if w)
            nxt = min((p for p, w in zip(shares, wins) if not w and p > last), default=None)
            print(f"  crossover: between {last}% and {nxt}% moving per frame"
                  if nxt else f"  crossover: above {last}%")

    with open(args.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(RAW_FIELDS + ["machine", "commit"])
        for r in rows:
            w.writerow([r[k] for k in RAW_FIELDS] + [args.machine, args.commit])
    print(f"\nrows: {args.out}")
    return status


if __name__ == "__main__":
    sys.exit(main())

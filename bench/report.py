#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Turns the runners' raw CSV lines into the results CSV and the table `make bench` prints.

    report.py RAW.csv --machine NAME --out RESULTS.csv [--baseline BASELINE.csv]
              [--commit REV] [--sets 'name:N:dim:r:mode ...']

Checks that every peer found exactly the same pairs on each data set (count, and for the
pair-listing sets an order-independent checksum of the pairs), printing a loud MISMATCH
otherwise (exit status 1). Ratios and targets use medians: the bench machine is shared.
"""
import argparse
import csv
import sys

PEERS = ["nearby", "naive", "nanoflann", "ckdtree", "ckdtree_set"]
PEER_LABEL = {
    "nearby": "nearby",
    "naive": "naive grid",
    "nanoflann": "nanoflann",
    "ckdtree": "cKDTree",
    "ckdtree_set": "cKDTree (set)",
}
# Targets, on 1M uniform 2D points (build + all pairs into a buffer, 1 thread).
TARGET_SET = "uniform2d"
TARGET_VS = {"ckdtree": 25.0, "nanoflann": 10.0}
TARGET_REBUILD_NS = 15.0

OUT_FIELDS = ["peer", "dataset", "operation", "n_points", "runs", "min_ns", "median_ns",
              "min_ns_per_point", "median_ns_per_point", "allocs_per_frame", "bytes_held",
              "bytes_per_point", "bytes_method", "pairs", "checksum", "machine", "compiler",
              "flags", "commit"]


# The runners' raw lines (NBB_RAW_HEADER in bench_common.h), without a header line.
RAW_FIELDS = ["peer", "dataset", "operation", "n_points", "runs", "min_ns", "median_ns",
              "allocs_per_frame", "bytes_held", "bytes_method", "pairs", "checksum", "compiler",
              "flags"]


def read_rows(path, fields=None):
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f, fieldnames=fields)
                if r.get("peer") and r["peer"] != "peer"]


def ms(ns):
    return "%.1f" % (ns / 1e6) if ns >= 1e7 else "%.2f" % (ns / 1e6)


def fmt_ratio(x):
    return "%.1fx" % x if x >= 10 else "%.2fx" % x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw")
    ap.add_argument("--machine", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--baseline")
    ap.add_argument("--commit", default="")
    ap.add_argument("--sets", default="")
    args = ap.parse_args()

    rows = read_rows(args.raw, RAW_FIELDS)
    sets = []  # (name, n, dim, r, mode) in run order
    for spec in args.sets.split():
        name, n, dim, r, mode = spec.split(":")
        sets.append((name, int(n), int(dim), r, mode))
    if not sets:
        for r in rows:
            if r["dataset"] not in [s[0] for s in sets]:
                sets.append((r["dataset"], int(r["n_points"]), 0, "?", "?"))

    idx = {(r["peer"], r["dataset"], r["operation"]): r for r in rows}

    # ---- results CSV ----
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=OUT_FIELDS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            n = int(r["n_points"])
            out = {k: r.get(k, "") for k in OUT_FIELDS}
            out["min_ns_per_point"] = "%.3f" % (int(r["min_ns"]) / n)
            out["median_ns_per_point"] = "%.3f" % (int(r["median_ns"]) / n)
            b = int(r["bytes_held"] or 0)
            out["bytes_per_point"] = "%.2f" % (b / n) if b > 0 else ""
            if int(r["pairs"]) < 0:
                out["pairs"] = ""
                out["checksum"] = ""
            out["machine"] = args.machine
            out["commit"] = args.commit
            w.writerow(out)

    baseline = {}
    if args.baseline:
        try:
            for r in read_rows(args.baseline):
                baseline[(r["peer"], r["dataset"], r["operation"])] = r
        except OSError:
            pass

    mismatch = []
    checks = []  # (label, ok, detail)
    print()
    print("nearby benchmark on %s (single thread; times are median, with min in brackets)" %
          args.machine)
    for name, n, dim, r, mode in sets:
        work = "count" if mode == "count" else "pairs"
        what = "count all pairs" if mode == "count" else "build + all pairs into a buffer"
        if name.startswith("lattice"):
            what += " (correctness check: every pair is exactly r apart)"
        print()
        print("== %s: %d points, %dD, r = %s: %s ==" % (name, n, dim, r, what))
        hdr = ("%-13s %17s %19s %19s %12s %9s %-19s %8s %9s" %
               ("peer", "build ms", "%s ms" % work, "build+%s ms" % work, "pairs found",
                "bytes/pt", "(bytes measured by)", "allocs/", "time vs"))
        print(hdr)
        print("%-13s %17s %19s %19s %12s %9s %-19s %8s %9s" %
              ("", "", "", "", "", "", "", "frame", "nearby"))
        print("-" * len(hdr))
        ref = idx.get(("nearby", name, "frame"))
        found = {}
        sums = {}
        for peer in PEERS:
            b = idx.get((peer, name, "build"))
            q = idx.get((peer, name, work))
            fr = idx.get((peer, name, "frame"))
            if not (b and q and fr):
                if peer != "ckdtree_set" or work == "pairs":  # the set form only lists pairs
                    print("%-13s (not run)" % PEER_LABEL[peer])
                continue
            found[peer] = int(q["pairs"])
            sums[peer] = q["checksum"]
            held = int(fr["bytes_held"] or 0)
            bpp = "%.1f" % (held / n) if held > 0 else "?"
            method = {"mallinfo2": "malloc delta", "nb_grid_memory_bytes": "memory_bytes()",
                      "allocator_live": "allocator live", "none": "not measured"}.get(
                          fr["bytes_method"], fr["bytes_method"])
            allocs = fr["allocs_per_frame"]
            allocs = "%g" % float(allocs) if allocs != "" else "?"
            ratio = fmt_ratio(int(fr["median_ns"]) / int(ref["median_ns"])) if ref else "-"
            print("%-13s %8s (%6s) %9s (%7s) %9s (%7s) %12d %9s %-19s %8s %9s" % (
                PEER_LABEL[peer], ms(int(b["median_ns"])), ms(int(b["min_ns"])),
                ms(int(q["median_ns"])), ms(int(q["min_ns"])), ms(int(fr["median_ns"])),
                ms(int(fr["min_ns"])), found[peer], bpp, method, allocs, ratio))
        if found:
            counts = set(found.values())
            same_sums = mode == "count" or len(set(sums.values())) == 1
            if len(counts) == 1 and same_sums:
                print("agreement: %d peers found exactly the same %d pairs%s" % (
                    len(found), next(iter(counts)),
                    "" if mode == "count" else " (count and pair checksum)"))
            else:
                for peer in found:
                    mismatch.append("%s: %s found %d pairs (checksum %s)" % (
                        name, PEER_LABEL[peer], found[peer], sums[peer]))
                print("!!!!! MISMATCH on %s: the peers disagree !!!!!" % name)
                for peer in found:
                    print("!!!!!   %-10s %12d pairs, checksum %s" % (
                        PEER_LABEL[peer], found[peer], sums[peer]))
        nb_b = idx.get(("nearby", name, "build"))
        nb_f = idx.get(("nearby", name, "frame"))
        if nb_b:
            print("nearby full rebuild: %.2f ns/point median (%.2f min)" % (
                int(nb_b["median_ns"]) / n, int(nb_b["min_ns"]) / n))
        if nb_f and nb_f["allocs_per_frame"] != "":
            a = float(nb_f["allocs_per_frame"])
            checks.append(("%s: nearby allocations per frame after the first" % name, a == 0,
                           "%g (need 0)" % a))

    # ---- targets ----
    nb_f = idx.get(("nearby", TARGET_SET, "frame"))
    nb_b = idx.get(("nearby", TARGET_SET, "build"))
    if nb_f:
        n = int(nb_f["n_points"])
        for peer, need in TARGET_VS.items():
            pf = idx.get((peer, TARGET_SET, "frame"))
            if pf:
                x = int(pf["median_ns"]) / int(nb_f["median_ns"])
                checks.append(("%s: nearby vs %s (build+pairs)" % (TARGET_SET, PEER_LABEL[peer]),
                               x >= need, "%.1fx faster (need >= %gx)" % (x, need)))
        if nb_b:
            x = int(nb_b["median_ns"]) / n
            checks.append(("%s: nearby full rebuild" % TARGET_SET, x < TARGET_REBUILD_NS,
                           "%.2f ns/point (need < %g)" % (x, TARGET_REBUILD_NS)))
    if checks:
        print()
        print("targets (medians):")
        for label, ok, detail in checks:
            print("  %-4s %-56s %s" % ("PASS" if ok else "FAIL", label, detail))

    # ---- against the committed baseline ----
    if baseline:
        print()
        print("median now / baseline (build+pairs; peers moving together means machine noise):")
        for name, n, dim, r, mode in sets:
            line = []
            for peer in PEERS:
                now = idx.get((peer, name, "frame"))
                old = baseline.get((peer, name, "frame"))
                if now and old and int(old["median_ns"]) > 0:
                    line.append("%s %.2f" % (PEER_LABEL[peer],
                                             int(now["median_ns"]) / int(old["median_ns"])))
            if line:
                print("  %-11s %s" % (name, "   ".join(line)))

    print()
    print("results: %s" % args.out)
    if mismatch:
        print()
        print("MISMATCH: the peers disagree on the pairs; see above. Timings are not comparable.")
        for m in mismatch:
            print("MISMATCH: " + m)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

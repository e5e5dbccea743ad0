#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Draws the cell-size sweep (cell_size_sweep's CSV) as a self-contained SVG, standard library
only: frame, build and pairs median times against cell_size / r, log-log, with the ring count
of each stretch of the x axis shaded, the minimum marked, and the machine and date in the
caption. Also prints the table as Markdown.

    python3 bench/plot_cell_size.py CSV --out docs/cell_size.svg [--instructions CSV]
        [--cpu NAME] [--date YYYY-MM-DD]
"""
import argparse
import csv
import datetime
import math
import sys
import textwrap

W, H = 1000, 540
L, R, T, B = 74, 290, 46, 150  # plot margins; the caption sits in the bottom one
X_LO, X_HI = 0.2, 4.6


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def nice_ticks(lo, hi):
    """1-2-5 ticks covering [lo, hi] on a log axis."""
    ticks = []
    e = math.floor(math.log10(lo))
    while True:
        for m in (1, 2, 5):
            v = m * 10.0**e
            if v > hi * 1.0001:
                return ticks
            if v >= lo * 0.9999:
                ticks.append(v)
        e += 1


def fmt_ms(v):
    return f"{v:.0f}" if v >= 10 else f"{v:.1f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--out", required=True)
    ap.add_argument("--instructions", help="ratio,label,n_points,instructions CSV (callgrind)")
    ap.add_argument("--cpu", default="")
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    a = ap.parse_args()

    with open(a.csv, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit("plot_cell_size: no rows in " + a.csv)
    pts = []
    for r in rows:
        pts.append(
            {
                "x": float(r["ratio"]),
                "label": r.get("label", ""),
                "build": int(r["build_median_ns"]) / 1e6,
                "pairs": int(r["pairs_median_ns"]) / 1e6,
                "frame": int(r["frame_median_ns"]) / 1e6,
                "frame_min": int(r["frame_min_ns"]) / 1e6,
                "rings": int(r["rings"]),
                "hashed": r["hashed"] == "1",
            }
        )
    pts.sort(key=lambda p: p["x"])
    first = rows[0]
    n, radius, runs = int(first["n_points"]), float(first["radius"]), int(first["runs"])
    npairs = int(first["pairs"])
    instr = {}
    instr_n = 0
    if a.instructions:
        try:
            with open(a.instructions, newline="") as f:
                for r in csv.DictReader(f):
                    instr[r["label"] or r["ratio"]] = int(r["instructions"])
                    instr_n = int(r["n_points"])
        except FileNotFoundError:
            pass

    ys = [p[k] for p in pts for k in ("build", "pairs", "frame")]
    y_lo = 10.0 ** math.floor(math.log10(min(ys)))
    y_hi = 10.0 ** math.ceil(math.log10(max(ys)))
    pw, ph = W - L - R, H - T - B

    def sx(x):
        return L + pw * (math.log(x) - math.log(X_LO)) / (math.log(X_HI) - math.log(X_LO))

    def sy(y):
        return T + ph * (1 - (math.log(y) - math.log(y_lo)) / (math.log(y_hi) - math.log(y_lo)))

    o = []
    o.append(
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        f'viewBox="0 0 {W} {H}" font-family="DejaVu Sans, Arial, sans-serif" font-size="12">'
    )
    o.append(f'<rect width="{W}" height="{H}" fill="white"/>')
    o.append(
        f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">'
        "nearby dense grid: one frame (build + all pairs) against the cell size</text>"
    )
    # Ring bands: a cell in (r/(k+1), r/k] walks k + 1 rings... precisely, k rings for
    # cell / r in [1/k, 1/(k-1)) up to the rounding margin; cell = r/k exactly walks k + 1.
    bands = [(X_LO, 0.25, 5), (0.25, 1 / 3, 4), (1 / 3, 0.5, 3), (0.5, 1.0, 2), (1.0, X_HI, 1)]
    for i, (lo, hi, k) in enumerate(bands):
        x0, x1 = sx(lo), sx(hi)
        fill = "#f2f2f2" if i % 2 == 0 else "#ffffff"
        o.append(f'<rect x="{x0:.1f}" y="{T}" width="{x1 - x0:.1f}" height="{ph}" fill="{fill}"/>')
        o.append(
            f'<text x="{(x0 + x1) / 2:.1f}" y="{T + 14}" text-anchor="middle" fill="#777" '
            f'font-size="11">k = {k}</text>'
        )
        if x1 - x0 > 60:
            o.append(
                f'<text x="{(x0 + x1) / 2:.1f}" y="{T + 27}" text-anchor="middle" fill="#777" '
                f'font-size="10">{(2 * k + 1)}\u00d7{(2 * k + 1)} cells</text>'
            )
    # Instruction counts on a right-hand log axis with as many decades as the left one.
    if instr:
        iv = {k: v / instr_n for k, v in instr.items()}
        i_lo = 10.0 ** math.floor(math.log10(min(iv.values())))
        i_hi = i_lo * (y_hi / y_lo)

        def si(v):
            return T + ph * (1 - (math.log(v) - math.log(i_lo)) / (math.log(i_hi) - math.log(i_lo)))

        e = i_lo
        while e <= i_hi * 1.0001:
            o.append(f'<line x1="{L + pw}" y1="{si(e):.1f}" x2="{L + pw + 5}" y2="{si(e):.1f}" stroke="#000"/>')
            o.append(f'<text x="{L + pw + 8}" y="{si(e) + 4:.1f}" fill="#555">{e:g}</text>')
            e *= 10
        o.append(
            f'<text transform="translate({L + pw + 52} {T + ph / 2}) rotate(90)" '
            'text-anchor="middle" font-size="12" fill="#555">instructions per point '
            f'(callgrind, {instr_n // 1000}k points)</text>'
        )
        ipts = sorted(
            ((1.0 + 1e-12 if k == "default" else float(k)), v) for k, v in iv.items()
        )
        path = " ".join(
            f'{"M" if i == 0 else "L"}{sx(x):.1f},{si(v):.1f}' for i, (x, v) in enumerate(ipts)
        )
        instr_layer = [
            f'<path d="{path}" fill="none" stroke="#555" stroke-width="1.4" stroke-dasharray="5 3"/>'
        ]
        for x, v in ipts:
            instr_layer.append(
                f'<rect x="{sx(x) - 2.5:.1f}" y="{si(v) - 2.5:.1f}" width="5" height="5" fill="#555"/>'
            )
    else:
        instr_layer = []
    # Grid lines and ticks.
    for y in nice_ticks(y_lo, y_hi):
        yy = sy(y)
        o.append(f'<line x1="{L}" y1="{yy:.1f}" x2="{L + pw}" y2="{yy:.1f}" stroke="#ddd"/>')
        o.append(f'<line x1="{L - 5}" y1="{yy:.1f}" x2="{L}" y2="{yy:.1f}" stroke="#000"/>')
        o.append(
            f'<text x="{L - 8}" y="{yy + 4:.1f}" text-anchor="end">{y:g}</text>'
        )
    for x in (0.25, 0.35, 0.5, 0.7, 1, 1.5, 2, 3, 4):
        xx = sx(x)
        o.append(f'<line x1="{xx:.1f}" y1="{T}" x2="{xx:.1f}" y2="{T + ph}" stroke="#e4e4e4"/>')
        o.append(f'<line x1="{xx:.1f}" y1="{T + ph}" x2="{xx:.1f}" y2="{T + ph + 5}" stroke="#000"/>')
        o.append(f'<text x="{xx:.1f}" y="{T + ph + 18}" text-anchor="middle">{x:g}</text>')
    xr = sx(1.0)
    o.append(
        f'<line x1="{xr:.1f}" y1="{T}" x2="{xr:.1f}" y2="{T + ph}" stroke="#999" '
        'stroke-dasharray="4 3"/>'
    )
    o.append(f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="#000"/>')
    o.append(
        f'<text x="{L + pw / 2}" y="{T + ph + 38}" text-anchor="middle" font-size="13">'
        "cell size / r (nbGridDesc.cell_size = ratio \u00d7 r; log scale)</text>"
    )
    o.append(
        f'<text transform="translate(18 {T + ph / 2}) rotate(-90)" text-anchor="middle" '
        f'font-size="13">ms per frame, median of {runs} (log scale)</text>'
    )
    o.extend(instr_layer)
    # The curves.
    series = [
        ("frame", "build + pairs", "#c0392b", 2.4),
        ("pairs", "all pairs", "#2e6fb7", 1.6),
        ("build", "build", "#27944a", 1.6),
    ]
    for key, _name, color, wdt in series:
        path = " ".join(
            f'{"M" if i == 0 else "L"}{sx(p["x"]):.1f},{sy(p[key]):.1f}' for i, p in enumerate(pts)
        )
        o.append(f'<path d="{path}" fill="none" stroke="{color}" stroke-width="{wdt}"/>')
        for p in pts:
            cx, cy = sx(p["x"]), sy(p[key])
            if p["label"] == "default":
                o.append(
                    f'<rect x="{cx - 4:.1f}" y="{cy - 4:.1f}" width="8" height="8" fill="white" '
                    f'stroke="{color}" stroke-width="1.6" transform="rotate(45 {cx:.1f} {cy:.1f})"/>'
                )
            else:
                o.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3" fill="{color}"/>')
    # Minimum of the frame curve.
    best = min(pts, key=lambda p: p["frame"])
    bx, by = sx(best["x"]), sy(best["frame"])
    o.append(f'<circle cx="{bx:.1f}" cy="{by:.1f}" r="9" fill="none" stroke="#000" stroke-width="1.5"/>')
    what = "default cell (r + margin)" if best["label"] == "default" else f"cell = {best['x']:g} r"
    o.append(
        f'<text x="{bx + 14:.1f}" y="{by + 34:.1f}" font-weight="bold">minimum: '
        f'{fmt_ms(best["frame"])} ms, {esc(what)}</text>'
    )
    # Notes on the special points.
    for p in pts:
        if p["hashed"]:
            o.append(
                f'<text x="{sx(p["x"]) + 6:.1f}" y="{sy(p["frame"]) + 20:.1f}" font-size="11">'
                "only occupied cells</text>"
            )
    one = [p for p in pts if p["label"] == "" and abs(p["x"] - 1.0) < 1e-9]
    if one:
        p = one[0]
        o.append(
            f'<text x="{sx(1.0) - 6:.1f}" y="{sy(p["frame"]) - 34:.1f}" text-anchor="end" '
            f'font-size="11">cell = r exactly: 2 rings, {fmt_ms(p["frame"])} ms</text>'
        )
    # Legend.
    lx, ly = L + pw + 72, T + 40
    o.append(f'<rect x="{lx}" y="{ly}" width="150" height="{100 if instr else 68}" fill="white" stroke="#bbb"/>')
    for i, (_key, name, color, wdt) in enumerate(series):
        yy = ly + 16 + 16 * i
        o.append(f'<line x1="{lx + 8}" y1="{yy}" x2="{lx + 34}" y2="{yy}" stroke="{color}" stroke-width="{wdt}"/>')
        o.append(f'<text x="{lx + 40}" y="{yy + 4}">{name}</text>')
    yy = ly + 16 + 48
    o.append(
        f'<rect x="{lx + 17}" y="{yy - 4}" width="8" height="8" fill="white" stroke="#555" '
        f'transform="rotate(45 {lx + 21} {yy})"/>'
    )
    o.append(f'<text x="{lx + 40}" y="{yy + 4}">default cell_size (0)</text>')
    if instr:
        yy += 16
        o.append(
            f'<line x1="{lx + 8}" y1="{yy}" x2="{lx + 34}" y2="{yy}" stroke="#555" '
            'stroke-width="1.4" stroke-dasharray="5 3"/>'
        )
        o.append(f'<text x="{lx + 40}" y="{yy + 4}">instructions / point</text>')
        o.append(f'<text x="{lx + 40}" y="{yy + 17}">(right axis)</text>')
    o.append(
        f'<text x="{lx}" y="{yy + 44}" font-size="11" fill="#555">k: rings of cells a</text>'
    )
    o.append(f'<text x="{lx}" y="{yy + 58}" font-size="11" fill="#555">query walks,')
    o.append(f'<tspan x="{lx}" dy="14">ceil(r / cell) +</tspan>')
    o.append(f'<tspan x="{lx}" dy="14">a rounding margin</tspan></text>')
    # Caption, wrapped to the figure's width.
    commit = first.get("commit", "")
    cap = [
        f"uniform2d: {n:,} points uniform in a {math.sqrt(n):.0f} \u00d7 {math.sqrt(n):.0f} square, "
        f"r = {radius:g}, {npairs:,} pairs (the same at every ratio); nb_grid_build + nb_grid_pairs",
        f"into a buffer, one thread; median of {runs} frames per ratio, taken round-robin over the "
        "ratios. Exact r/k cells walk k+1 rings (the reach has a rounding margin).",
        f"Machine: {first.get('machine', '?')} ({esc(a.cpu) or 'shared VM'}), "
        f"{esc(first.get('compiler', '').split(' (')[0])} {esc(first.get('flags', ''))}, "
        f"commit {esc(commit)}, {esc(a.date)}. Shared and noisy: compare shapes, not single points.",
    ]
    if instr:
        parts = []
        for key in sorted(instr, key=lambda k: float(k) if k != "default" else 1.0000001):
            parts.append(f"{key}: {instr[key] / instr_n:.0f}")
        cap.append(
            f"Instructions per point (callgrind, {instr_n:,} points, one frame): " + ", ".join(parts)
        )
    lines = textwrap.wrap(" ".join(cap), 160)
    for i, line in enumerate(lines):
        o.append(f'<text x="{L - 50}" y="{T + ph + 62 + 15 * i}" font-size="11">{line}</text>')
    o.append("</svg>")
    with open(a.out, "w") as f:
        f.write("\n".join(o) + "\n")

    # The table, for the docs.
    print("| cell / r | rings | cells | build ms | pairs ms | frame ms (median) | frame ms (min) |")
    print("|---|---|---|---|---|---|---|")
    for p, r in zip(pts, sorted(rows, key=lambda r: float(r["ratio"]))):
        name = "default (r + margin)" if p["label"] == "default" else f"{p['x']:g}"
        cells = "occupied only" if p["hashed"] else "dense"
        print(
            f"| {name} | {p['rings']} | {cells} | {p['build']:.1f} | {p['pairs']:.1f} | "
            f"{p['frame']:.1f} | {p['frame_min']:.1f} |"
        )


if __name__ == "__main__":
    main()

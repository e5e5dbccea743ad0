#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the CLI golden tests: input fixtures (data/), expected outputs (expected/) and the
list of cases (cases.cmake, included by CMakeLists.txt).

Expected results are computed here by brute force in plain Python (every pair, every distance,
dx*dx + dy*dy (+ dz*dz) <= r*r in double, exactly the library's contract), never copied from
the tool's output. Error messages are the CLI's contract, written out by hand.

Run it after changing a case:  python3 tests/cli/make_expected.py
It needs only the standard library (no NumPy: .npy files are written by hand below), and is
not needed at test time: its outputs are committed.
"""
import decimal
import math
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
EXPECTED = os.path.join(HERE, "expected")

# ------------------------------------------------------------------------------------------
# Point sets

# 2D: negative coordinates, pairs exactly 1.25 apart (0.75^2 + 1^2 = 1.25^2 exactly in
# binary), one point a single ulp beyond 1.25 from the origin, duplicates, a far pair.
P2 = [
    (0.0, 0.0),
    (1.25, 0.0),  # exactly r from 0
    (0.75, 1.0),  # exactly r from 0
    (-1.5, -2.0),
    (-0.75, -1.0),  # exactly r from 3
    (0.0, 0.0),  # duplicate of 0
    (3.0, 3.0),
    (3.0, 3.0),  # duplicates of 6
    (3.0, 3.0),
    (-4.5, 2.25),
    (-4.5, 3.5),  # exactly r above 9
    (10.0, -10.0),
    (10.5, -10.5),
    (-0.5, 0.5),
    (1.2500000000000002, 0.0),  # one ulp beyond r from 0 and 5; 1 ulp from 1
    (2.0, 3.75),
    (-1000000.5, 250.125),
    (-1000000.0, 250.0),
]
P2_TEXT = [
    "0,0", "1.25,0", "0.75,1", "-1.5,-2", "-0.75,-1", "0,0", "3,3", "3.0,3e0", "+3,3.",
    "-4.5,2.25", "-4.5,3.5", "10,-10", "10.5,-10.5", "-.5,.5", "1.2500000000000002,0",
    "2,3.75", "-1000000.5,250.125", "-1e6,250",
]

# 3D: (0.5, 1, 1) is exactly 1.5 from the origin; duplicates; negatives.
P3 = [
    (0.0, 0.0, 0.0),
    (0.5, 1.0, 1.0),  # exactly 1.5 from 0
    (-0.5, -1.0, -1.0),  # exactly 1.5 from 0, 3 from 1
    (0.0, 0.0, 0.0),  # duplicate
    (2.0, 2.0, 2.0),
    (2.0, 2.0, 3.5),  # exactly 1.5 above 4
    (-3.0, 1.0, 0.25),
    (-3.0, 1.0, 0.25),
    (1.5, 0.0, 0.0),  # exactly 1.5 from 0 along x
    (1.5000000000000002, 0.0, 0.0),
    (7.0, -7.0, 7.0),
    (0.1, 0.2, 0.3),
]

# Float32-exact points for the '<f4' .npy (3D) and a 2D set for other binary fixtures.
P3F = [(0.0, 0.0, 0.0), (0.5, 1.0, 1.0), (1.0, 2.0, 2.0), (-0.25, 0.0, 0.0), (1.0, 2.0, 2.0),
       (4.0, 4.0, 4.0), (4.0, 4.0, 5.5)]


def dist2(p, q):
    s = 0.0
    for a, b in zip(p, q):
        d = a - b
        s = s + d * d  # left to right, as in C: (dx*dx + dy*dy) + dz*dz
    return s


def brute_pairs(points, r):
    rr = r * r
    return [(i, j) for i in range(len(points)) for j in range(i + 1, len(points))
            if dist2(points[i], points[j]) <= rr]


def brute_within(points, c, r):
    return [i for i, p in enumerate(points) if dist2(p, c) <= r * r]


def brute_knn(points, c, k):
    order = sorted(range(len(points)), key=lambda i: (dist2(points[i], c), i))
    return [(i, math.sqrt(dist2(points[i], c))) for i in order[:k]]


# Periodic boxes (--period): the minimum image per axis, a = |x - y|, d = min(a, P - a) (P = 0:
# d = a), squared and summed left to right, exactly grid.h's definition.
def wrap_dist2(p, q, period):
    s = 0.0
    for a, b, per in zip(p, q, period):
        t = abs(a - b)
        d = per - t if per > 0.0 and per - t < t else t
        s = s + d * d
    return s


def wrap_pairs(points, r, period):
    rr = r * r
    return [(i, j) for i in range(len(points)) for j in range(i + 1, len(points))
            if wrap_dist2(points[i], points[j], period) <= rr]


def wrap_within(points, c, r, period):
    return [i for i, p in enumerate(points) if wrap_dist2(p, c, period) <= r * r]


def wrap_knn(points, c, k, period):
    order = sorted(range(len(points)), key=lambda i: (wrap_dist2(points[i], c, period), i))
    return [(i, math.sqrt(wrap_dist2(points[i], c, period))) for i in order[:k]]


# A periodic box [0, 10) x [0, 8): points on the faces (0 and the largest double below P),
# pairs exactly 1.25 apart across a face, duplicates.
TOP10, TOP8 = math.nextafter(10.0, 0.0), math.nextafter(8.0, 0.0)
PP2 = [
    (0.0, 0.0),
    (8.75, 0.0),  # exactly 1.25 from 0 across x = 0
    (0.0, 6.75),  # exactly 1.25 from 0 across y = 0
    (9.75, 7.25),  # across the corner
    (5.0, 4.0),
    (5.0, 4.0),  # duplicate
    (1.25, 0.0),  # exactly 1.25 from 0
    (TOP10, 3.0),
    (0.0, 3.0),  # a hair from the one above, across x = 0
    (2.5, TOP8),
    (2.5, 1.0),
    (9.0, 4.0),
    (1.0, 4.0),  # 2 from the one above across x = 0
]
PP3 = [
    (0.0, 0.0, 0.0),
    (5.5, 0.0, 0.0),  # 2.5 from 0 across x = 0 (P = 8)
    (0.0, 5.0, 3.5),
    (3.0, 2.5, 0.0),
    (3.0, 2.5, 3.5),  # exactly P/2 = 3.5 across z
    (math.nextafter(8.0, 0.0), math.nextafter(8.0, 0.0), math.nextafter(7.0, 0.0)),
    (1.0, 1.0, 1.0),
]


def pairs_text(pairs):
    return "".join("%d,%d\n" % p for p in pairs)


def within_text(idx):
    return "".join("%d\n" % i for i in idx)


def g(v):
    """A distance as the tool prints it: the shortest decimal that reads back to v (Python's
    repr finds the same digits, the nearest of the shortest), laid out as printf's "%.17g"
    lays out its digits: fixed point for decimal exponents -4 to 16, else d.ddde+XX."""
    if v == 0.0:
        return "-0" if math.copysign(1.0, v) < 0 else "0"
    sign, digits, exp = decimal.Decimal(repr(abs(v))).as_tuple()
    d = "".join(map(str, digits)).rstrip("0") or "0"
    exp += len(digits) - len(d)  # the stripped zeros
    x = len(d) - 1 + exp  # v = d[0].d[1:] * 10^x
    neg = "-" if v < 0 else ""
    if x < -4 or x >= 17:
        return "%s%s%s%se%s%02d" % (neg, d[0], "." if len(d) > 1 else "", d[1:],
                                    "-" if x < 0 else "+", abs(x))
    if x < 0:
        return neg + "0." + "0" * (-x - 1) + d
    if len(d) <= x + 1:
        return neg + d + "0" * (x + 1 - len(d))
    return neg + d[:x + 1] + "." + d[x + 1:]


def knn_text(res):
    return "".join("%d,%s\n" % (i, g(d)) for i, d in res)


# ------------------------------------------------------------------------------------------
# Binary writers

def f64_bytes(points):
    return b"".join(struct.pack("<%dd" % len(p), *p) for p in points)


def npy_bytes(points, descr="<f8", shape=None, fortran=False, version=(1, 0), extra_header="",
              data=None, header=None):
    """A .npy file as numpy.save writes it: header padded with spaces to a multiple of 64."""
    if shape is None:
        shape = (len(points), len(points[0]) if points else 2)
    if header is None:
        shape_s = "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
        header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, %s}" % (
            descr, "True" if fortran else "False", shape_s, extra_header)
    size_len = 2 if version[0] == 1 else 4
    pre = 6 + 2 + size_len
    total = pre + len(header) + 1
    pad = (64 - total % 64) % 64
    text = (header + " " * pad + "\n").encode("latin1")
    out = b"\x93NUMPY" + bytes(version)
    out += struct.pack("<H" if size_len == 2 else "<I", len(text)) + text
    if data is None:
        fmt = {"<f8": "<d", ">f8": ">d", "<f4": "<f", ">f4": ">f"}.get(descr, "<d")
        data = b"".join(struct.pack(fmt, v) for p in points for v in p)
    return out + data


# ------------------------------------------------------------------------------------------
# Cases

# Rectangles (minx, miny, maxx, maxy): edges and corners that touch exactly, zero-width,
# zero-height and zero-size ones, duplicates, one inside another, negatives, a long thin one
# across the others, and a pair far away.
RECTS = [
    (0.0, 0.0, 1.0, 1.0),
    (1.0, 0.0, 2.0, 1.0),  # shares an edge with 0
    (2.0, 1.0, 3.0, 2.0),  # shares a corner with 1
    (0.25, 0.25, 0.5, 0.5),  # inside 0
    (0.5, 0.5, 0.5, 0.5),  # a point, on 3's corner
    (-3.0, 0.5, 5.0, 0.5),  # zero height, across 0, 1, 3, 4
    (4.0, -2.0, 4.0, 3.0),  # zero width, crosses 5
    (0.0, 0.0, 1.0, 1.0),  # duplicate of 0
    (-2.5, -2.5, -1.5, -1.5),
    (-1.5, -1.5, -0.5, -0.5),  # corner on 8
    (1.0000000000000002, 2.0, 1.5, 2.5),
    (1e6, 1e6, 1e6 + 1.0, 1e6 + 1.0),
    (1e6 + 1.0, 1e6 + 1.0, 1e6 + 2.0, 1e6 + 2.0),  # corner on 11
    (-1e3, 10.0, 1e3, 20.0),  # wide, alone
]
QUERIES = [
    (0.0, 0.0, 0.0, 0.0),  # a point on corners
    (0.5, 0.5, 0.5, 0.5),
    (-10.0, -10.0, 10.0, 10.0),
    (1.0, 1.0, 2.0, 2.0),
    (100.0, 100.0, 101.0, 101.0),  # nothing
    (1e6 + 1.0, 1e6 + 1.0, 1e6 + 1.0, 1e6 + 1.0),
    (-5.0, 15.0, -4.0, 25.0),
    (1.0, 2.0, 1.0, 3.0),  # one ulp left of 10
]


def touch(a, b):
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


def brute_boxes(rects, queries):
    return [(q, i) for q in range(len(queries)) for i in range(len(rects))
            if touch(queries[q], rects[i])]


def brute_overlaps(rects):
    return [(i, j) for i in range(len(rects)) for j in range(i + 1, len(rects))
            if touch(rects[i], rects[j])]


CASES = []


def case(name, args, out="", err="", code=0, stdin=None):
    assert all(c["name"] != name for c in CASES), name
    if code != 0:
        assert out == "" and err.count("\n") == 1 and err.startswith("nearby: "), name
    CASES.append(dict(name=name, args=args, out=out, err=err, code=code, stdin=stdin))


FILES = {}


def data_file(name, content):
    if isinstance(content, str):
        content = content.encode("latin1")
    FILES[name] = content
    return name


def csv_text(lines, eol="\n"):
    return "".join(l + eol for l in lines)


def main():
    # ---- inputs ----
    data_file("pts2d.csv", csv_text(P2_TEXT))
    data_file("pts2d_header.csv", csv_text(["x,y"] + P2_TEXT))
    # CRLF, a BOM, blank and whitespace-only lines, spaces and tabs around fields, no final EOL.
    messy = []
    for k, t in enumerate(P2_TEXT):
        x, y = t.split(",")
        messy.append(" %s ,\t%s" % (x, y) if k % 3 == 0 else t)
        if k % 5 == 2:
            messy.append("")
        if k % 7 == 3:
            messy.append(" \t ")
    data_file("pts2d_crlf.csv", "\ufeff".encode("utf-8").decode("latin1")
              + "\r\n".join(messy))
    data_file("pts3d.csv", csv_text(["%r,%r,%r" % p for p in P3]))
    data_file("pts2d.f64", f64_bytes(P2))
    data_file("pts3d.f64", f64_bytes(P3))
    data_file("pts2d_f64.dat", f64_bytes(P2))  # for --format f64
    data_file("pts2d.npy", npy_bytes(P2))
    data_file("pts3d_f4.npy", npy_bytes(P3F, descr="<f4"))
    data_file("pts2d_v2_be.npy", npy_bytes(P2, descr=">f8", version=(2, 0)))
    data_file("pts2d_v3.npy", npy_bytes(P2, version=(3, 0)))
    data_file("empty.csv", "")
    data_file("blank.csv", "\n \n\t\n")
    data_file("header_only.csv", "x,y,z\n")
    data_file("empty.f64", "")
    data_file("empty3d.npy", npy_bytes([], shape=(0, 3)))
    data_file("periodic2d.csv", csv_text(["%r,%r" % p for p in PP2]))
    data_file("periodic3d.csv", csv_text(["%r,%r,%r" % p for p in PP3]))

    r2, r3 = 1.25, 1.5
    p2 = pairs_text(brute_pairs(P2, r2))
    p3 = pairs_text(brute_pairs(P3, r3))

    # ---- pairs ----
    case("pairs_2d", ["pairs", "pts2d.csv", "--radius", "1.25"], p2)
    case("pairs_2d_count", ["pairs", "pts2d.csv", "--radius", "1.25", "--count"],
         "%d\n" % len(brute_pairs(P2, r2)))
    case("pairs_2d_header", ["pairs", "pts2d_header.csv", "--radius=1.25"], p2)
    case("pairs_2d_crlf", ["pairs", "pts2d_crlf.csv", "--radius", "1.25"], p2)
    case("pairs_2d_stdin", ["pairs", "-", "--radius", "1.25"], p2, stdin="pts2d.csv")
    case("pairs_2d_options_first", ["pairs", "--structure", "dense", "--dim", "2", "--radius",
                                    "1.25", "--", "pts2d.csv"], p2)
    case("pairs_2d_radius0", ["pairs", "pts2d.csv", "--radius", "0"],
         pairs_text(brute_pairs(P2, 0.0)))
    case("pairs_2d_radius_large", ["pairs", "pts2d.csv", "--radius", "1e7", "--count"],
         "%d\n" % len(brute_pairs(P2, 1e7)))
    case("pairs_2d_radius_tiny", ["pairs", "pts2d.csv", "--radius", "1e-300"],
         pairs_text(brute_pairs(P2, 1e-300)))
    for r in (0.5, 3.0, 5.0):
        case("pairs_2d_r%g" % r, ["pairs", "pts2d.csv", "--radius", "%g" % r],
             pairs_text(brute_pairs(P2, r)))
    case("pairs_3d", ["pairs", "pts3d.csv", "--radius", "1.5"], p3)
    case("pairs_3d_count", ["pairs", "pts3d.csv", "--radius", "1.5", "--count", "--dim", "3"],
         "%d\n" % len(brute_pairs(P3, r3)))
    case("pairs_f64_2d", ["pairs", "pts2d.f64", "--radius", "1.25"], p2)
    case("pairs_f64_3d", ["pairs", "pts3d.f64", "--radius", "1.5", "--dim", "3"], p3)
    case("pairs_f64_format", ["pairs", "pts2d_f64.dat", "--format", "f64", "--radius", "1.25"],
         p2)
    case("pairs_f64_stdin", ["pairs", "-", "--format=f64", "--radius", "1.25"], p2,
         stdin="pts2d.f64")
    case("pairs_npy_f8", ["pairs", "pts2d.npy", "--radius", "1.25"], p2)
    case("pairs_npy_f4_3d", ["pairs", "pts3d_f4.npy", "--radius", "1.5"],
         pairs_text(brute_pairs(P3F, 1.5)))
    case("pairs_npy_v2_big_endian", ["pairs", "pts2d_v2_be.npy", "--radius", "1.25"], p2)
    case("pairs_npy_v3", ["pairs", "pts2d_v3.npy", "--radius", "1.25"], p2)
    case("pairs_empty", ["pairs", "empty.csv", "--radius", "1"], "")
    case("pairs_empty_count", ["pairs", "empty.csv", "--radius", "1", "--count"], "0\n")
    case("pairs_blank_lines_only", ["pairs", "blank.csv", "--radius", "1", "--count"], "0\n")
    case("pairs_header_only", ["pairs", "header_only.csv", "--radius", "1"], "")
    case("pairs_empty_f64", ["pairs", "empty.f64", "--radius", "1", "--count"], "0\n")
    case("pairs_empty_npy", ["pairs", "empty3d.npy", "--radius", "1", "--count"], "0\n")
    case("pairs_help", ["pairs", "--help"], PAIRS_HELP)

    # ---- within ----
    c2 = (0.25, 0.25)
    case("within_2d", ["within", "pts2d.csv", "--radius", "1.25", "--at", "0.25,0.25"],
         within_text(brute_within(P2, c2, 1.25)))
    case("within_2d_exact", ["within", "pts2d.csv", "--radius", "1.25", "--at", "0,0"],
         within_text(brute_within(P2, (0.0, 0.0), 1.25)))
    case("within_2d_none", ["within", "pts2d.csv", "--radius", "0.1", "--at=100,100"], "")
    case("within_2d_npy", ["within", "pts2d.npy", "--radius", "4", "--at", "3, 3"],
         within_text(brute_within(P2, (3.0, 3.0), 4.0)))
    case("within_3d", ["within", "pts3d.csv", "--radius", "1.5", "--at", "0,0,0"],
         within_text(brute_within(P3, (0.0, 0.0, 0.0), 1.5)))
    case("within_empty", ["within", "empty.csv", "--radius", "1", "--at", "0,0,0"], "")

    # ---- knn ----
    # Points 1, 2 and 4 are all exactly 1.25 from the origin: k = 5 keeps 1 and 2.
    case("knn_2d_ties", ["knn", "pts2d.csv", "--k", "5", "--at", "0,0"],
         knn_text(brute_knn(P2, (0.0, 0.0), 5)))
    case("knn_2d", ["knn", "pts2d.csv", "--k", "5", "--at", "2.6,2.9"],
         knn_text(brute_knn(P2, (2.6, 2.9), 5)))
    case("knn_2d_all", ["knn", "pts2d.csv", "--k", "1000", "--at", "-3,0.1"],
         knn_text(brute_knn(P2, (-3.0, 0.1), 1000)))
    case("knn_2d_zero", ["knn", "pts2d.csv", "--k", "0", "--at", "0,0"], "")
    case("knn_3d", ["knn", "pts3d.csv", "--k", "4", "--at", "0.1,0.1,0.1"],
         knn_text(brute_knn(P3, (0.1, 0.1, 0.1), 4)))
    case("knn_3d_f64", ["knn", "pts3d.f64", "--dim", "3", "--k", "3", "--at", "2,2,2.5"],
         knn_text(brute_knn(P3, (2.0, 2.0, 2.5), 3)))
    case("knn_empty", ["knn", "empty.csv", "--k", "3", "--at", "0,0"], "")

    # ---- bad CSV input: exit 2, one line on stderr, nothing on stdout ----
    def bad_csv(name, lines, err, extra=(), eol="\n"):
        f = data_file("bad_%s.csv" % name, csv_text(lines, eol) if isinstance(lines, list)
                      else lines)
        case("bad_csv_%s" % name, ["pairs", f, "--radius", "1"] + list(extra),
             err="nearby: %s%s\n" % (f, err), code=2)

    bad_csv("number", ["1,2", "3,4", "5,1.2.3"], ':3: y is not a number: "1.2.3"')
    bad_csv("junk", ["1,2", "1.5abc,4"], ':2: x is not a number: "1.5abc"')
    bad_csv("hex", ["0x1p3,2"], ':1: x is not a number: "0x1p3"')
    bad_csv("exponent", ["1,2", "1e,2"], ':2: x is not a number: "1e"')
    bad_csv("inner_space", ["1 2,3"], ':1: x is not a number: "1 2"')
    bad_csv("quoted", ['"1","2"'], ':1: x is not a number: "\\"1\\""')
    bad_csv("extra_column", ["1,2", "3,4", "5,6,7"], ":3: expected 2 columns, found 3")
    bad_csv("missing_column", ["1,2,3", "4,5"], ":2: expected 3 columns, found 2")
    bad_csv("one_column", ["1", "2"], ":1: expected 2 or 3 columns, found 1")
    bad_csv("four_columns", ["1,2,3,4"], ":1: expected 2 or 3 columns, found 4")
    bad_csv("empty_field", ["1,2", " ,2"], ":2: x is empty")
    bad_csv("trailing_comma", ["1,2,"], ":1: z is empty")
    bad_csv("nan", ["1,2", "3,4", "5,6", "7,NaN"], ":4: NB_ERR_NOT_FINITE: y is NaN")
    bad_csv("nan_payload", ["-nan(0x1),2"], ":1: NB_ERR_NOT_FINITE: x is NaN")
    bad_csv("inf", ["inf,2"], ":1: NB_ERR_NOT_FINITE: x is infinite")
    bad_csv("infinity", ["1,2,3", "1,2,-Infinity"], ":2: NB_ERR_NOT_FINITE: z is infinite")
    bad_csv("overflow", ["1,1e400"], ':1: NB_ERR_NOT_FINITE: y overflows a double: "1e400"')
    bad_csv("not_header", ["x,1", "2,3"], ':1: x is not a number: "x"')
    bad_csv("late_header", ["1,2", "x,y"], ':2: x is not a number: "x"')
    bad_csv("header_columns", ["x,y,z", "1,2"], ":2: expected 3 columns, found 2")
    bad_csv("dim_mismatch", ["1,2"], ":1: expected 3 columns (--dim 3), found 2",
            extra=["--dim", "3"])
    bad_csv("stray_cr", "1,2\r3,4\n",
            ":1: carriage return inside a line (only LF or CRLF line ends are accepted)")
    bad_csv("binary", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR".decode("latin1"),
            ":1: expected 2 or 3 columns, found 1")
    bad_csv("nul", "1,2\n3,\x004\n", ':2: y is not a number: "\\x004"')
    case("bad_csv_stdin", ["pairs", "-", "--radius", "1"],
         err="nearby: <stdin>:2: NB_ERR_NOT_FINITE: y is NaN\n", code=2,
         stdin=data_file("bad_stdin.csv", "1,2\n3,nan\n"))

    # ---- bad files ----
    case("bad_missing_file", ["pairs", "no_such_file.csv", "--radius", "1"],
         err="nearby: no_such_file.csv: cannot open: No such file or directory\n", code=2)
    case("bad_directory", ["pairs", ".", "--radius", "1"],
         err="nearby: .: cannot read: Is a directory\n", code=2)
    data_file("bad_truncated.f64", f64_bytes(P2)[:20])
    case("bad_f64_truncated", ["pairs", "bad_truncated.f64", "--radius", "1"],
         err="nearby: bad_truncated.f64: truncated: 20 bytes is not a whole number of 2D points "
             "(16 bytes each)\n", code=2)
    data_file("bad_truncated3d.f64", f64_bytes([(1.0, 2.0, 3.0), (4.0, 5.0)]))
    case("bad_f64_truncated_3d", ["pairs", "bad_truncated3d.f64", "--radius", "1", "--dim", "3"],
         err="nearby: bad_truncated3d.f64: truncated: 40 bytes is not a whole number of 3D "
             "points (24 bytes each)\n", code=2)
    data_file("bad_nan.f64", f64_bytes([(1.0, 2.0), (3.0, float("nan"))]))
    case("bad_f64_nan", ["pairs", "bad_nan.f64", "--radius", "1"],
         err="nearby: bad_nan.f64: point 1: NB_ERR_NOT_FINITE: y is NaN\n", code=2)
    data_file("bad_inf.f64", f64_bytes([(1.0, 2.0, 3.0), (-float("inf"), 2.0, 3.0)]))
    case("bad_f64_inf", ["pairs", "bad_inf.f64", "--dim", "3", "--radius", "1"],
         err="nearby: bad_inf.f64: point 1: NB_ERR_NOT_FINITE: x is infinite\n", code=2)

    def bad_npy(name, content, err, extra=()):
        f = data_file("bad_%s.npy" % name, content)
        case("bad_npy_%s" % name, ["pairs", f, "--radius", "1"] + list(extra),
             err="nearby: %s: %s\n" % (f, err), code=2)

    bad_npy("magic", b"PK\x03\x04 this is a zip file, not an array",
            "not a NumPy .npy file (no \\x93NUMPY magic)")
    bad_npy("version", npy_bytes(P2, version=(4, 0)),
            "unsupported .npy version 4.0 (1.0, 2.0 and 3.0 are read)")
    bad_npy("dtype_int", npy_bytes(P2, descr="<i4", data=b"\0" * (4 * 2 * len(P2))),
            "unsupported dtype \"<i4\" (expected '<f8' or '<f4'; '>f8' and '>f4' also work)")
    bad_npy("dtype_pipe", npy_bytes(P2, descr="|f8"),
            "unsupported dtype \"|f8\" (expected '<f8' or '<f4'; '>f8' and '>f4' also work)")
    bad_npy("fortran", npy_bytes(P2, fortran=True),
            "fortran_order True is not supported (save a C-ordered array)")
    bad_npy("shape_1d", npy_bytes([], shape=(6,), data=b"\0" * 48),
            "shape (6,) is not (N, 2) or (N, 3)")
    bad_npy("shape_4", npy_bytes([], shape=(2, 4), data=b"\0" * 64),
            "shape (2, 4) is not (N, 2) or (N, 3)")
    bad_npy("dim_mismatch", npy_bytes(P3F, descr="<f4"),
            "shape (%d, 3) does not match --dim 2" % len(P3F), extra=["--dim", "2"])
    bad_npy("truncated", npy_bytes(P2)[:-8],
            "truncated: expected %d data bytes, found %d" % (16 * len(P2), 16 * len(P2) - 8))
    bad_npy("trailing", npy_bytes(P2) + b"\0" * 5, "5 unexpected bytes after the data")
    bad_npy("too_many", npy_bytes([], shape=(3000000000, 2), data=b""),
            "too many points: 3000000000 (at most 2147483647)")
    bad_npy("header_junk", npy_bytes([], header="{'descr': '<f8', 'shape': (1, 2)"),
            "malformed .npy header: expected ',' or '}'")
    bad_npy("header_missing", npy_bytes([], header="{'descr': '<f8', 'shape': (0, 2)}"),
            "malformed .npy header: no 'fortran_order'")
    bad_npy("header_short", b"\x93NUMPY\x01\x00\xff\x00{'descr'",
            "malformed .npy header: truncated")
    bad_npy("nan_f4", npy_bytes([(1.0, 2.0, 3.0), (4.0, float("nan"), 6.0)], descr="<f4"),
            "point 1: NB_ERR_NOT_FINITE: y is NaN")

    # ---- periodic boxes (--period) ----
    box2, box3 = (10.0, 8.0), (8.0, 8.0, 7.0)
    for r in (1.25, 2.0, 4.0):
        case("pairs_periodic_2d_r%g" % r, ["pairs", "periodic2d.csv", "--radius", "%g" % r,
                                            "--period", "10,8"],
             pairs_text(wrap_pairs(PP2, r, box2)))
    case("pairs_periodic_2d_count", ["pairs", "periodic2d.csv", "--radius", "1.25", "--count",
                                     "--period", "10,8"],
         "%d\n" % len(wrap_pairs(PP2, 1.25, box2)))
    case("pairs_periodic_x_only", ["pairs", "periodic2d.csv", "--radius", "1.25",
                                   "--period", "10,0"],
         pairs_text(wrap_pairs(PP2, 1.25, (10.0, 0.0))))
    case("pairs_periodic_3d", ["pairs", "periodic3d.csv", "--radius", "3.5", "--period",
                               "8,8,7"],
         pairs_text(wrap_pairs(PP3, 3.5, box3)))
    case("within_periodic_2d", ["within", "periodic2d.csv", "--radius", "1.5", "--at",
                                "9.5,7.5", "--period", "10,8"],
         within_text(wrap_within(PP2, (9.5, 7.5), 1.5, box2)))
    case("knn_periodic_2d", ["knn", "periodic2d.csv", "--k", "4", "--at", "9.9,0.1",
                             "--period", "10,8"],
         knn_text(wrap_knn(PP2, (9.9, 0.1), 4, box2)))
    case("knn_periodic_3d", ["knn", "periodic3d.csv", "--k", "7", "--at", "0,0,6.5",
                             "--period", "8,8,7"],
         knn_text(wrap_knn(PP3, (0.0, 0.0, 6.5), 7, box3)))

    # ---- bad options ----
    def bad_opt(name, args, err, stdin=None):
        case("bad_opt_%s" % name, args, err="nearby: %s\n" % err, code=2, stdin=stdin)

    bad_opt("period_count", ["pairs", "periodic2d.csv", "--radius", "1", "--period", "10,8,8"],
            "pairs: --period: expected 2 values (the points in periodic2d.csv are 2D), found 3")
    bad_opt("period_one_value", ["pairs", "periodic2d.csv", "--radius", "1", "--period", "10"],
            "pairs: --period: expected PX,PY or PX,PY,PZ (2 or 3 values), found 1")
    bad_opt("period_nan", ["pairs", "periodic2d.csv", "--radius", "1", "--period", "10,nan"],
            "pairs: --period: NB_ERR_NOT_FINITE: y period is NaN")
    bad_opt("period_inf", ["within", "periodic2d.csv", "--radius", "1", "--at", "1,1",
                           "--period", "inf,8"],
            'within: --period: NB_ERR_NOT_FINITE: x period is infinite: "inf"')
    bad_opt("period_negative", ["knn", "periodic2d.csv", "--k", "1", "--at", "1,1",
                                "--period", "10,-8"],
            'knn: --period: NB_ERR_OUT_OF_RANGE: the y period is negative: "-8"')
    bad_opt("period_text", ["pairs", "periodic2d.csv", "--radius", "1", "--period", "ten,8"],
            'pairs: --period: x period is not a number: "ten"')
    bad_opt("period_radius", ["pairs", "periodic2d.csv", "--radius", "4.5", "--period", "10,8"],
            "pairs: --radius 4.5: NB_ERR_OUT_OF_RANGE: more than half the y period 8: the "
            "minimum image answers radii up to P / 2")
    bad_opt("period_point_outside", ["pairs", "periodic2d.csv", "--radius", "1", "--period",
                                     "9,8"],
            "periodic2d.csv: point 3: NB_ERR_OUT_OF_RANGE: x = 9.75 is outside the periodic "
            "box [0, 9)")
    bad_opt("period_point_negative", ["within", "pts2d.csv", "--radius", "1", "--at", "1,1",
                                      "--period", "100,100"],
            "pts2d.csv: point 3: NB_ERR_OUT_OF_RANGE: x = -1.5 is outside the periodic box "
            "[0, 100)")
    bad_opt("period_hash", ["pairs", "periodic2d.csv", "--radius", "1", "--period", "10,8",
                            "--structure", "hash"],
            "pairs: structure hash does not support --period")

    bad_opt("radius_negative", ["pairs", "pts2d.csv", "--radius", "-1"],
            'pairs: --radius: NB_ERR_OUT_OF_RANGE: radius is negative: "-1"')
    bad_opt("radius_nan", ["pairs", "pts2d.csv", "--radius", "nan"],
            "pairs: --radius: NB_ERR_NOT_FINITE: radius is NaN")
    bad_opt("radius_inf", ["pairs", "pts2d.csv", "--radius", "inf"],
            'pairs: --radius: NB_ERR_NOT_FINITE: radius is infinite: "inf"')
    bad_opt("radius_text", ["pairs", "pts2d.csv", "--radius", "one"],
            'pairs: --radius: radius is not a number: "one"')
    bad_opt("radius_empty", ["pairs", "pts2d.csv", "--radius="],
            "pairs: --radius: radius is empty")
    bad_opt("radius_no_value", ["pairs", "pts2d.csv", "--radius"], "pairs: --radius needs a value")
    bad_opt("radius_missing", ["pairs", "pts2d.csv"],
            "pairs: missing --radius (see nearby pairs --help)")
    bad_opt("radius_twice", ["pairs", "pts2d.csv", "--radius", "1", "--radius", "2"],
            "pairs: --radius given twice")
    bad_opt("radius_before_bad_file", ["pairs", "no_such_file.csv", "--radius", "-2"],
            'pairs: --radius: NB_ERR_OUT_OF_RANGE: radius is negative: "-2"')
    bad_opt("unknown_option", ["pairs", "pts2d.csv", "--radius", "1", "--fast"],
            'pairs: unknown option "--fast" (see nearby pairs --help)')
    bad_opt("option_of_other_command", ["pairs", "pts2d.csv", "--radius", "1", "--k", "3"],
            'pairs: unknown option "--k" (see nearby pairs --help)')
    bad_opt("count_value", ["pairs", "pts2d.csv", "--radius", "1", "--count=yes"],
            "pairs: --count takes no value")
    bad_opt("missing_input", ["pairs", "--radius", "1"],
            "pairs: missing INPUT (see nearby pairs --help)")
    bad_opt("extra_input", ["pairs", "pts2d.csv", "pts3d.csv", "--radius", "1"],
            'pairs: unexpected argument "pts3d.csv" (see nearby pairs --help)')
    bad_opt("structure", ["pairs", "pts2d.csv", "--radius", "1", "--structure", "kdtree"],
            'pairs: unknown structure "kdtree" (see nearby pairs --help)')
    bad_opt("format", ["pairs", "pts2d.csv", "--radius", "1", "--format", "json"],
            'pairs: --format must be csv, f64 or npy, got "json"')
    bad_opt("dim", ["pairs", "pts2d.csv", "--radius", "1", "--dim", "4"],
            'pairs: --dim must be 2 or 3, got "4"')
    bad_opt("unknown_command", ["pair", "pts2d.csv"],
            'unknown command "pair" (see nearby --help)')
    bad_opt("no_command", [], "missing COMMAND (see nearby --help)")
    bad_opt("at_missing", ["within", "pts2d.csv", "--radius", "1"],
            "within: missing --at X,Y[,Z] or --queries Q (see nearby within --help)")
    bad_opt("at_count", ["within", "pts2d.csv", "--radius", "1", "--at", "1,2,3"],
            "within: --at: expected 2 values (the points in pts2d.csv are 2D), found 3")
    bad_opt("at_count_3d", ["knn", "pts3d.csv", "--k", "1", "--at", "1,2"],
            "knn: --at: expected 3 values (the points in pts3d.csv are 3D), found 2")
    bad_opt("at_one_value", ["within", "pts2d.csv", "--radius", "1", "--at", "1"],
            "within: --at: expected X,Y or X,Y,Z (2 or 3 values), found 1")
    bad_opt("at_nan", ["within", "pts2d.csv", "--radius", "1", "--at", "1,NAN"],
            "within: --at: NB_ERR_NOT_FINITE: y is NaN")
    bad_opt("at_text", ["knn", "pts2d.csv", "--k", "1", "--at", "1,two"],
            'knn: --at: y is not a number: "two"')
    bad_opt("at_empty", ["knn", "pts2d.csv", "--k", "1", "--at", ",2"],
            "knn: --at: x is empty")
    bad_opt("within_radius_negative", ["within", "pts2d.csv", "--radius", "-0.5", "--at", "1,2"],
            'within: --radius: NB_ERR_OUT_OF_RANGE: radius is negative: "-0.5"')
    bad_opt("k_missing", ["knn", "pts2d.csv", "--at", "1,2"],
            "knn: missing --k (see nearby knn --help)")
    bad_opt("k_negative", ["knn", "pts2d.csv", "--k", "-1", "--at", "1,2"],
            'knn: --k: NB_ERR_OUT_OF_RANGE: k is negative: "-1"')
    bad_opt("k_fraction", ["knn", "pts2d.csv", "--k", "1.5", "--at", "1,2"],
            'knn: --k: not a whole number: "1.5"')
    bad_opt("k_huge", ["knn", "pts2d.csv", "--k", "99999999999", "--at", "1,2"],
            'knn: --k: NB_ERR_OUT_OF_RANGE: too large: "99999999999" (at most 2147483647)')
    bad_opt("demo_n", ["demo", "--n", "lots"], 'demo: --n: not a whole number: "lots"')
    bad_opt("demo_input", ["demo", "pts2d.csv"],
            'demo: unexpected argument "pts2d.csv" (see nearby demo --help)')
    bad_opt("help_unknown", ["help", "sort"],
            'help: unknown command "sort" (commands: pairs, within, knn, join, demo, render, '
            'boxes, overlaps)')

    rect_cases()
    query_cases()
    write_all()


def rect_cases():
    # ---- rectangles: boxes and overlaps (the quadtree) ----
    data_file("rects.csv", csv_text(["minx,miny,maxx,maxy"] + ["%r,%r,%r,%r" % r for r in RECTS]))
    data_file("rects.f64", f64_bytes(RECTS))
    data_file("rects.npy", npy_bytes(RECTS))
    data_file("queries.csv", csv_text(["%r,%r,%r,%r" % r for r in QUERIES]))
    data_file("queries.npy", npy_bytes(QUERIES))
    boxes = pairs_text(brute_boxes(RECTS, QUERIES))
    nboxes = "%d\n" % len(brute_boxes(RECTS, QUERIES))
    over = pairs_text(brute_overlaps(RECTS))
    case("boxes_csv", ["boxes", "rects.csv", "--query", "queries.csv"], boxes)
    case("boxes_count", ["boxes", "rects.csv", "--query", "queries.csv", "--count"], nboxes)
    case("boxes_f64_npy", ["boxes", "rects.f64", "--query=queries.npy"], boxes)
    case("boxes_npy_structure", ["boxes", "--structure", "quadtree", "rects.npy", "--query",
                                 "queries.csv"], boxes)
    case("boxes_stdin", ["boxes", "-", "--query", "queries.csv"], boxes, stdin="rects.csv")
    case("boxes_empty", ["boxes", "empty.csv", "--query", "queries.csv"], "")
    case("boxes_no_queries", ["boxes", "rects.csv", "--query", "empty.csv"], "")
    case("overlaps_csv", ["overlaps", "rects.csv"], over)
    case("overlaps_count", ["overlaps", "rects.csv", "--count"],
         "%d\n" % len(brute_overlaps(RECTS)))
    case("overlaps_f64", ["overlaps", "rects.f64"], over)
    case("overlaps_npy", ["overlaps", "rects.npy", "--structure=quadtree"], over)
    case("overlaps_empty", ["overlaps", "empty.csv"], "")

    def bad_rect(name, fname, content, err, cmd="overlaps"):
        data_file(fname, content)
        args = [cmd, fname] + (["--query", "queries.csv"] if cmd == "boxes" else [])
        case("bad_rect_%s" % name, args, err="nearby: %s%s\n" % (fname, err), code=2)

    bad_rect("inverted_x", "bad_rect_inverted_x.csv", csv_text(["0,0,1,1", "2,0,1,1"]),
             ":2: NB_ERR_OUT_OF_RANGE: minx > maxx")
    bad_rect("inverted_y", "bad_rect_inverted_y.csv", csv_text(["x0,y0,x1,y1", "0,3,1,2.5"]),
             ":2: NB_ERR_OUT_OF_RANGE: miny > maxy", cmd="boxes")
    bad_rect("columns", "bad_rect_columns.csv", csv_text(["0,0,1,1", "0,0,1"]),
             ":2: expected 4 columns (minx,miny,maxx,maxy), found 3")
    bad_rect("points", "bad_rect_points.csv", csv_text(["0,0", "1,1"]),
             ":1: expected 4 columns (minx,miny,maxx,maxy), found 2")
    bad_rect("nan", "bad_rect_nan.csv", csv_text(["0,0,1,1", "0,0,nan,1"]),
             ":2: NB_ERR_NOT_FINITE: maxx is NaN")
    bad_rect("inf", "bad_rect_inf.csv", csv_text(["0,-inf,1,1"]),
             ":1: NB_ERR_NOT_FINITE: miny is infinite")
    bad_rect("number", "bad_rect_number.csv", csv_text(["0,0,1,1x"]),
             ':1: maxy is not a number: "1x"')
    bad_rect("truncated_f64", "bad_rect_truncated.f64", f64_bytes(RECTS)[:40],
             ": truncated: 40 bytes is not a whole number of rectangles (32 bytes each)")
    bad_rect("inverted_f64", "bad_rect_inverted.f64",
             f64_bytes([(0.0, 0.0, 1.0, 1.0), (0.0, 0.0, 1.0, 1.0), (5.0, 0.0, 4.0, 1.0)]),
             ": rectangle 2: NB_ERR_OUT_OF_RANGE: minx > maxx")
    bad_rect("nan_f64", "bad_rect_nan.f64", f64_bytes([(0.0, 0.0, 1.0, float("nan"))]),
             ": rectangle 0: NB_ERR_NOT_FINITE: maxy is NaN")
    bad_rect("shape_npy", "bad_rect_shape.npy", npy_bytes(P2),
             ": shape (18, 2) is not (N, 4) (minx, miny, maxx, maxy)")
    data_file("bad_rect_query.csv", csv_text(["0,0,1"]))
    case("bad_rect_query", ["boxes", "rects.csv", "--query", "bad_rect_query.csv"],
         err="nearby: bad_rect_query.csv:1: expected 4 columns (minx,miny,maxx,maxy), found 3\n",
         code=2)
    case("bad_rect_missing_query", ["boxes", "rects.csv"],
         err="nearby: boxes: missing --query QUERIES (see nearby boxes --help)\n", code=2)
    case("bad_rect_no_query_file", ["boxes", "rects.csv", "--query", "nothing.csv"],
         err="nearby: nothing.csv: cannot open: No such file or directory\n", code=2)
    case("bad_rect_structure", ["overlaps", "rects.csv", "--structure", "dense"],
         err="nearby: overlaps: structure dense does not support overlapping rectangles\n",
         code=2)

    # ---- the quadtree on points gives the dense grid's output ----
    r2 = 1.25
    case("pairs_2d_quadtree", ["pairs", "pts2d.csv", "--radius", "1.25", "--structure",
                               "quadtree"], pairs_text(brute_pairs(P2, r2)))
    case("pairs_2d_quadtree_count", ["pairs", "pts2d.csv", "--radius", "3", "--count",
                                     "--structure", "quadtree"],
         "%d\n" % len(brute_pairs(P2, 3.0)))
    case("within_2d_quadtree", ["within", "pts2d.csv", "--radius", "1.25", "--at", "0,0",
                                "--structure", "quadtree"],
         within_text(brute_within(P2, (0.0, 0.0), r2)))
    case("knn_2d_ties_quadtree", ["knn", "pts2d.csv", "--k", "5", "--at", "0,0", "--structure",
                                  "quadtree"], knn_text(brute_knn(P2, (0.0, 0.0), 5)))
    case("knn_2d_all_quadtree", ["knn", "pts2d.f64", "--k", "1000", "--at", "-3,0.1",
                                 "--structure", "quadtree"],
         knn_text(brute_knn(P2, (-3.0, 0.1), 1000)))


# Query points for --queries and join's second file: on points, between them, far away.
Q2 = [(0.0, 0.0), (0.75, 1.0), (3.0, 3.0), (-4.5, 2.875), (100.0, 100.0), (-1000000.25, 250.0)]
Q3 = [(0.0, 0.0, 0.0), (2.0, 2.0, 2.75), (-3.0, 1.0, 0.25)]


def cross_text(queries, points, r):
    return "".join("%d,%d\n" % (q, i) for q, c in enumerate(queries)
                   for i in brute_within(points, c, r))


def knn_rows_text(queries, points, k, graph=False):
    out = []
    for q, c in enumerate(queries):
        order = sorted((i for i in range(len(points)) if not (graph and i == q)),
                       key=lambda i: (dist2(points[i], c), i))
        out += ["%d,%d,%s\n" % (q, i, g(math.sqrt(dist2(points[i], c))))
                for i in order[:k]]
    return "".join(out)


def query_cases():
    data_file("qpts2d.csv", csv_text(["qx,qy"] + ["%r,%r" % q for q in Q2]))
    data_file("qpts2d.f64", f64_bytes(Q2))
    data_file("qpts2d.npy", npy_bytes(Q2))
    data_file("qpts3d.csv", csv_text(["%r,%r,%r" % q for q in Q3]))
    # within --queries: q,i sorted by q then i, for CSV, .f64 and .npy queries
    for fname in ("qpts2d.csv", "qpts2d.f64", "qpts2d.npy"):
        case("within_queries_%s" % fname.split(".")[1],
             ["within", "pts2d.csv", "--radius", "1.25", "--queries", fname],
             cross_text(Q2, P2, 1.25))
    case("within_queries_3d", ["within", "pts3d.csv", "--radius", "1.5", "--queries",
                               "qpts3d.csv"], cross_text(Q3, P3, 1.5))
    case("within_queries_empty", ["within", "pts2d.csv", "--radius", "1", "--queries",
                                  "empty.csv"], "")
    case("within_queries_no_points", ["within", "empty.csv", "--radius", "1", "--queries",
                                      "qpts2d.csv"], "")
    # knn --queries, and the graph (the k nearest of every point among the others)
    case("knn_queries", ["knn", "pts2d.csv", "--k", "3", "--queries", "qpts2d.csv"],
         knn_rows_text(Q2, P2, 3))
    case("knn_queries_3d", ["knn", "pts3d.csv", "--k", "4", "--queries", "qpts3d.csv"],
         knn_rows_text(Q3, P3, 4))
    case("knn_graph", ["knn", "pts2d.csv", "--k", "3"], knn_rows_text(P2, P2, 3, graph=True))
    case("knn_graph_3d", ["knn", "pts3d.f64", "--dim", "3", "--k", "2"],
         knn_rows_text(P3, P3, 2, graph=True))
    case("knn_graph_all", ["knn", "pts3d.csv", "--k", "100"],
         knn_rows_text(P3, P3, 100, graph=True))
    case("knn_graph_k0", ["knn", "pts2d.csv", "--k", "0"], "")
    # join A B: a,b sorted; --count
    case("join_2d", ["join", "qpts2d.csv", "pts2d.csv", "--radius", "1.25"],
         cross_text(Q2, P2, 1.25))
    case("join_2d_npy_f64", ["join", "qpts2d.npy", "pts2d.f64", "--radius", "4"],
         cross_text(Q2, P2, 4.0))
    case("join_self", ["join", "pts3d.csv", "pts3d.csv", "--radius", "1.5"],
         cross_text(P3, P3, 1.5))
    case("join_count", ["join", "pts2d.csv", "qpts2d.csv", "--radius", "2.5", "--count"],
         "%d\n" % len(cross_text(P2, Q2, 2.5).splitlines()))
    case("join_empty", ["join", "empty.csv", "pts2d.csv", "--radius", "1"], "")

    def bad(name, args, err):
        case("bad_%s" % name, args, err="nearby: %s\n" % err, code=2)

    bad("queries_dim", ["within", "pts2d.csv", "--radius", "1", "--queries", "qpts3d.csv"],
        "within: --queries qpts3d.csv: the points there are 3D but those in pts2d.csv are 2D")
    bad("queries_dim_knn", ["knn", "pts3d.csv", "--k", "1", "--queries", "qpts2d.npy"],
        "knn: --queries qpts2d.npy: the points there are 2D but those in pts3d.csv are 3D")
    bad("queries_path_empty", ["within", "pts2d.csv", "--radius", "1", "--queries="],
        "within: --queries: the path is empty")
    bad("queries_no_value", ["knn", "pts2d.csv", "--k", "1", "--queries"],
        "knn: --queries needs a value")
    bad("queries_missing_file", ["within", "pts2d.csv", "--radius", "1", "--queries",
                                 "nothing.csv"],
        "nothing.csv: cannot open: No such file or directory")
    bad("queries_bad_value", ["knn", "pts2d.csv", "--k", "1", "--queries", "bad_nan.csv"],
        "bad_nan.csv:4: NB_ERR_NOT_FINITE: y is NaN")
    bad("queries_and_at", ["within", "pts2d.csv", "--radius", "1", "--at", "0,0", "--queries",
                           "qpts2d.csv"],
        "within: --at and --queries: give one of them, not both")
    bad("join_missing_b", ["join", "pts2d.csv", "--radius", "1"],
        "join: missing B (see nearby join --help)")
    bad("join_missing_both", ["join", "--radius", "1"],
        "join: missing A and B (see nearby join --help)")
    bad("join_dim", ["join", "pts2d.csv", "pts3d.csv", "--radius", "1"],
        "join: B pts3d.csv: the points there are 3D but those in pts2d.csv are 2D")
    bad("join_three_inputs", ["join", "pts2d.csv", "pts2d.csv", "pts2d.csv", "--radius", "1"],
        'join: unexpected argument "pts2d.csv" (see nearby join --help)')
    bad("quadtree_3d", ["pairs", "pts3d.csv", "--radius", "1", "--structure", "quadtree"],
        "pairs: structure quadtree holds 2D points only; the points in pts3d.csv are 3D")
    bad("quadtree_3d_knn", ["knn", "pts3d.csv", "--k", "2", "--structure", "quadtree"],
        "knn: structure quadtree holds 2D points only; the points in pts3d.csv are 3D")
    bad("quadtree_3d_join", ["join", "pts3d.csv", "pts3d.csv", "--radius", "1", "--structure",
                             "quadtree"],
        "join: structure quadtree holds 2D points only; the points in pts3d.csv are 3D")
    bad("output_extension", ["within", "pts2d.csv", "--radius", "1", "--queries", "qpts2d.csv",
                             "-o", "out.txt"],
        "within: -o out.txt: the extension names no format (use .csv, .npy, .f64 or .i64)")
    bad("output_i64_distance", ["knn", "pts2d.csv", "--k", "2", "-o", "out.i64"],
        "knn: -o out.i64: the rows hold a distance, which .i64 cannot (use .csv, .npy or .f64)")
    bad("output_no_dir", ["join", "pts2d.csv", "pts2d.csv", "--radius", "1", "-o",
                          "no_such_dir/out.npy"],
        "join: -o no_such_dir/out.npy: cannot create: No such file or directory")
    bad("output_and_count", ["pairs", "pts2d.csv", "--radius", "1", "--count", "-o", "n.csv"],
        "pairs: --count prints one number on standard output; -o FILE is for rows")
    # A 19-digit axis once overflowed the shape parser (signed overflow): it must saturate.
    bad("npy_shape_19_digits", ["pairs", data_file("bad_shape_19_digits.npy", npy_bytes(
        [], shape=(9999999999999999999, 2), data=b"")), "--radius", "1"],
        "bad_shape_19_digits.npy: too many points: >= 4611686018427387904 (at most 2147483647)")
    bad("npy_shape_30_digits", ["within", "pts2d.csv", "--radius", "1", "--queries", data_file(
        "bad_shape_30_digits.npy", npy_bytes([], shape=(10 ** 30, 2), data=b""))],
        "bad_shape_30_digits.npy: too many points: >= 4611686018427387904 (at most 2147483647)")


PAIRS_HELP = """\
usage: nearby pairs INPUT --radius R [--count] [--dim 2|3] [--structure NAME]
                    [--format csv|f64|npy] [--threads N] [--period PX,PY[,PZ]]

Prints every pair of points at distance <= R, one "i,j" a line (0-based input
order, i < j, each pair once), sorted by i then j.

  --radius R        the distance, finite and >= 0 (required)
  --count           print only the number of pairs
  -o FILE           write the rows to FILE instead of standard output, in the
                    format its extension names: .csv (the same text), .npy
                    (int32 indices; with a distance, a structured array with a
                    float64 field), .f64 (every value a little-endian double) or
                    .i64 (every value an int64; no distances)
  --dim 2|3         the dimension: must match a CSV or .npy input; for .f64 it
                    says how to read the file (default 2)
  --structure NAME  the index to use; the output is the same for every one
  --format FMT      csv, f64 or npy; default: from the extension (else CSV)
  --threads N       workers for building the index and answering, 1 to 256
                    (default: one per core); the output is the same for every N
  --period PX,PY[,PZ]
                    a periodic box [0, P) per axis (0: that axis does not wrap):
                    distances by the minimum image; every point must lie in the
                    box, and a radius be at most P / 2 (structure dense only)

structures:
  dense      uniform grid rebuilt with a counting sort (nb_grid_*) (default)
  hash       spatial hash of occupied cells, items moved by handle (nb_hash_*)
  tiles      tile grid over the input's extent, entities by handle (nb_tiles_*)
  quadtree   quadtree of rectangles; points as zero-size ones, 2D (nb_quadtree_*)
"""


def cmake_quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'


def write_all():
    os.makedirs(DATA, exist_ok=True)
    os.makedirs(EXPECTED, exist_ok=True)
    for name, content in FILES.items():
        with open(os.path.join(DATA, name), "wb") as f:
            f.write(content)
    lines = ["# SPDX-License-Identifier: MIT",
             "# Generated by make_expected.py: one golden test per line. Do not edit by hand."]
    for c in CASES:
        with open(os.path.join(EXPECTED, c["name"] + ".out"), "w", newline="") as f:
            f.write(c["out"])
        with open(os.path.join(EXPECTED, c["name"] + ".err"), "w", newline="") as f:
            f.write(c["err"])
        args = " ".join(cmake_quote(a) for a in c["args"])
        lines.append("nb_cli_case(NAME %s CODE %d STDIN %s ARGS %s)" % (
            c["name"], c["code"], c["stdin"] or "none", args))
    with open(os.path.join(HERE, "cases.cmake"), "w", newline="") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %d data files and %d cases" % (len(FILES), len(CASES)))


if __name__ == "__main__":
    main()

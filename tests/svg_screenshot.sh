#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Renders an SVG in headless Chromium and checks that the picture is not blank.
#   usage: svg_screenshot.sh SVG_FILE [WIDTHxHEIGHT]   (window size, default 800x600)
# The screenshot must have at least NB_SVG_MIN_INK (default 300) pixels that differ from the
# background (its most common colour) and at least NB_SVG_MIN_COLOURS (default 3) colours, the
# background among them, each covering NB_SVG_MIN_AREA (default 20) pixels or more, so that
# antialiasing alone does not count. The PNG is decoded by python3's standard library (zlib,
# struct) below; no imaging package is needed. NB_SVG_KEEP=PATH keeps the screenshot;
# NB_SVG_TIMEOUT (default 60) bounds Chromium's run, in seconds.
# Without chromium or python3 it prints SKIPPED and exits 77 (the test's SKIP_RETURN_CODE).
# Chromium never outlives the script: it runs under timeout, in its own process group, which is
# killed when the script ends, as is any process naming the script's temporary directory (its
# crash handlers start groups of their own); that directory, Chromium's profile, HOME and
# caches, is removed.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: svg_screenshot.sh SVG_FILE [WIDTHxHEIGHT]" >&2
  exit 2
fi
svg=$1
size=${2:-800x600}
if ! [[ $size =~ ^([1-9][0-9]{0,4})x([1-9][0-9]{0,4})$ ]]; then
  echo "svg_screenshot.sh: bad window size '$size' (WIDTHxHEIGHT)" >&2
  exit 2
fi
width=${BASH_REMATCH[1]}
height=${BASH_REMATCH[2]}
skip=77

browser=${CHROMIUM:-}
if [ -z "$browser" ]; then
  for b in chromium chromium-browser; do
    if command -v "$b" > /dev/null 2>&1; then
      browser=$b
      break
    fi
  done
fi
if [ -z "$browser" ] || ! command -v "$browser" > /dev/null 2>&1; then
  echo "SKIPPED: chromium not found (apt-get install chromium)"
  exit $skip
fi
if ! command -v python3 > /dev/null 2>&1; then
  echo "SKIPPED: python3 not found (apt-get install python3)"
  exit $skip
fi
if ! command -v timeout > /dev/null 2>&1; then
  echo "SKIPPED: timeout not found (coreutils)"
  exit $skip
fi

if [ ! -f "$svg" ]; then
  echo "svg_screenshot.sh: no such file: $svg" >&2
  exit 1
fi
svg=$(cd "$(dirname "$svg")" && pwd)/$(basename "$svg")

# Chromium shows an XML error page, in several colours, for a broken file: check it first.
python3 - "$svg" << 'EOF'
import sys
import xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except ET.ParseError as e:
    sys.exit("svg_screenshot.sh: not well-formed XML: %s: %s" % (sys.argv[1], e))
if root.tag != "{http://www.w3.org/2000/svg}svg":
    sys.exit("svg_screenshot.sh: the root element is %s, not an SVG <svg>" % root.tag)
EOF

work=$(mktemp -d "${TMPDIR:-/tmp}/nb_svg_shot.XXXXXX")
pgid=""
# Ends chromium: timeout puts itself and chromium's processes in one group, whose id is
# timeout's pid; the crash handlers, which leave it, name $work in their arguments.
stop_chromium() {
  if [ -n "$pgid" ]; then
    kill -KILL -- "-$pgid" 2> /dev/null || true
    pgid=""
  fi
  local f pid args
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}
    pid=${pid%/cmdline}
    args=$({ tr '\0' ' ' < "$f"; } 2> /dev/null) || continue
    case $args in *"$work/"*) kill -KILL "$pid" 2> /dev/null || true ;; esac
  done
}
cleanup() {
  stop_chromium
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

png=$work/shot.png
limit=${NB_SVG_TIMEOUT:-60}
# As root Chromium refuses to start without --no-sandbox, and in containers its sandbox often
# cannot start as any user; the page is a local file of our own. The rest keep it from reaching
# the network (which is closed here) and from keeping state between runs, or outside $work.
HOME=$work XDG_CONFIG_HOME=$work/config XDG_CACHE_HOME=$work/cache \
  timeout -k 5 "$limit" "$browser" --headless --no-sandbox --disable-gpu --disable-quic \
  --no-first-run --disable-background-networking --disable-component-update --disable-sync \
  --disable-extensions --disable-crash-reporter --hide-scrollbars \
  --user-data-dir="$work/profile" --window-size="$width,$height" --screenshot="$png" "file://$svg" \
  > "$work/chromium.log" 2>&1 < /dev/null &
pgid=$!
status=0
wait "$pgid" || status=$?
stop_chromium
if [ "$status" -ne 0 ] || [ ! -s "$png" ]; then
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "svg_screenshot.sh: chromium timed out after $limit s" >&2
  else
    echo "svg_screenshot.sh: chromium exited $status without a screenshot" >&2
  fi
  tail -n 20 "$work/chromium.log" >&2
  exit 1
fi
if [ -n "${NB_SVG_KEEP:-}" ]; then
  cp "$png" "$NB_SVG_KEEP"
fi

python3 - "$png" "$width" "$height" "${NB_SVG_MIN_INK:-300}" "${NB_SVG_MIN_COLOURS:-3}" \
  "${NB_SVG_MIN_AREA:-20}" "$svg" << 'EOF'
import struct
import sys
import zlib
from collections import Counter

path, want_w, want_h, min_ink, min_colours, min_area, svg = sys.argv[1:]
want_w, want_h, min_ink, min_colours, min_area = map(
    int, (want_w, want_h, min_ink, min_colours, min_area))


def fail(msg):
    sys.exit("svg_screenshot.sh: %s: %s" % (svg, msg))


def read_png(path):
    """Returns (width, height, rows of RGBA tuples) for an 8-bit, non-interlaced PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("the screenshot is not a PNG")
    pos, ihdr, palette, idat = 8, None, None, []
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            palette = [tuple(body[i:i + 3]) + (255,) for i in range(0, len(body) - 2, 3)]
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    if ihdr is None:
        fail("the screenshot has no IHDR")
    w, h, depth, ctype, _, _, interlace = ihdr
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(ctype)
    if depth != 8 or channels is None or interlace != 0:
        fail("unsupported PNG: depth %d, colour type %d, interlace %d" % (depth, ctype, interlace))
    raw = zlib.decompress(b"".join(idat))
    bpp = channels
    stride = w * bpp
    if len(raw) != h * (stride + 1):
        fail("PNG data is %d bytes, expected %d" % (len(raw), h * (stride + 1)))
    prev = bytearray(stride)
    rows = []
    for y in range(h):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if ftype == 1:  # Sub
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif ftype == 2:  # Up
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev))
        elif ftype == 3:  # Average
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif ftype == 4:  # Paeth
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        elif ftype != 0:
            fail("bad PNG filter type %d in row %d" % (ftype, y))
        rows.append(line)
        prev = line
    pixels = []
    for line in rows:
        if ctype == 6:
            pixels.extend(zip(line[0::4], line[1::4], line[2::4], line[3::4]))
        elif ctype == 2:
            pixels.extend((r, g, b, 255) for r, g, b in zip(line[0::3], line[1::3], line[2::3]))
        elif ctype == 0:
            pixels.extend((v, v, v, 255) for v in line)
        elif ctype == 4:
            pixels.extend((v, v, v, a) for v, a in zip(line[0::2], line[1::2]))
        else:
            if palette is None:
                fail("palette PNG without PLTE")
            pixels.extend(palette[i] for i in line)
    return w, h, pixels


w, h, pixels = read_png(path)
if (w, h) != (want_w, want_h):
    fail("the screenshot is %dx%d, the window %dx%d" % (w, h, want_w, want_h))
counts = Counter(pixels)
background, _ = counts.most_common(1)[0]
ink = len(pixels) - counts[background]
colours = sum(1 for n in counts.values() if n >= min_area)
summary = "%dx%d, background #%02x%02x%02x, %d pixels differ from it, %d colours of %d+ pixels" % (
    w, h, background[0], background[1], background[2], ink, colours, min_area)
if ink < min_ink:
    fail("blank picture: " + summary + " (need %d+ differing pixels)" % min_ink)
if colours < min_colours:
    fail("too few colours: " + summary + " (need %d+ colours)" % min_colours)
print("svg_screenshot: ok: " + summary)
EOF

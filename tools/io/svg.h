// SPDX-License-Identifier: MIT
// A small SVG writer for the tool's pictures: a canvas mapping a world rectangle to pixels
// (y up, as in the data), circles, lines, paths of many segments, rectangles, text and a
// legend. Everything goes through one buffered nbioWriter, numbers are printed with at most
// two decimals of a pixel (so a picture of 100,000 elements stays small), and text and
// attribute values are escaped, so the file is well-formed XML whatever the caller passes.
#ifndef NEARBY_TOOLS_IO_SVG_H
#define NEARBY_TOOLS_IO_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "io/writer.h"

/// How the world maps to the picture. The world rectangle [x0, x1] x [y0, y1] (y up) is drawn
/// into a plot of `width` pixels (its height follows the aspect ratio), with `margin` pixels
/// around it and `footer` more pixels below it for text and the legend.
typedef struct nbioSvgView {
    double x0, y0, x1, y1; ///< the world rectangle; an empty or non-finite one becomes [0,1]^2
    double width;          ///< plot width in pixels; <= 0 means 800
    double margin;         ///< pixels around the plot
    double footer;         ///< pixels below the plot
} nbioSvgView;

/// An SVG being written. Open elements (groups, a path) are tracked so nbio_svg_end always
/// closes them.
typedef struct nbioSvg {
    nbioWriter w;
    char buf[1 << 16];
    double x0, y0, scale;       ///< world -> pixel: px = margin + (x - x0) * scale
    double margin, plot_h;      ///< pixels
    double width_px, height_px; ///< the whole canvas
    int groups;                 ///< <g> elements open
    bool in_path;               ///< a path's d="..." is open
} nbioSvg;

/// One legend entry: a swatch of `color` drawn as a dot, a line or a box, and its label.
typedef enum nbioSvgSwatch { NBIO_SVG_DOT, NBIO_SVG_LINE, NBIO_SVG_BOX } nbioSvgSwatch;
typedef struct nbioSvgLegendItem {
    const char *color;
    nbioSvgSwatch swatch;
    const char *label;
} nbioSvgLegendItem;

/// Starts a picture on `stream` (not closed here): the XML header, the <svg> element and a
/// white background.
void nbio_svg_begin(nbioSvg *s, FILE *stream, const nbioSvgView *view);

/// Closes what is open and the <svg> element, then flushes. False if any write failed.
bool nbio_svg_end(nbioSvg *s);

/// World to pixel coordinates.
double nbio_svg_px(const nbioSvg *s, double x);
double nbio_svg_py(const nbioSvg *s, double y);

/// The plot's bottom edge in pixels (where the footer starts).
double nbio_svg_plot_bottom(const nbioSvg *s);

/// Opens a group whose children inherit `fill`, `stroke` (NULL: not set), `stroke_width`
/// (pixels; <= 0: not set) and `opacity` (>= 1: not set).
void nbio_svg_group_begin(nbioSvg *s, const char *fill, const char *stroke, double stroke_width,
                          double opacity);
void nbio_svg_group_end(nbioSvg *s);

/// A circle at world (x, y) of `r_px` pixels; `fill` NULL inherits the group's.
void nbio_svg_circle(nbioSvg *s, double x, double y, double r_px, const char *fill);

/// A segment between two world points, drawn with the group's stroke.
void nbio_svg_line(nbioSvg *s, double xa, double ya, double xb, double yb);

/// A world rectangle (corners in any order) with `fill` and `opacity` (>= 1: opaque); a NULL
/// stroke draws no outline.
void nbio_svg_rect(nbioSvg *s, double xa, double ya, double xb, double yb, const char *fill,
                   double opacity, const char *stroke);

/// Many segments as one path (a few bytes each instead of a <line> each): begin, segments,
/// end. The path is stroked with `stroke` at `width` pixels and `opacity`.
void nbio_svg_path_begin(nbioSvg *s, const char *stroke, double width, double opacity);
void nbio_svg_path_segment(nbioSvg *s, double xa, double ya, double xb, double yb);
void nbio_svg_path_end(nbioSvg *s);

/// Text at pixel (x, y) (the baseline's start), `size` pixels high, escaped.
void nbio_svg_text_px(nbioSvg *s, double x, double y, double size, const char *text);

/// A legend of `count` entries, one per line, from pixel (x, y) downwards; returns the pixel
/// y below it.
double nbio_svg_legend(nbioSvg *s, double x, double y, const nbioSvgLegendItem *items,
                       size_t count);

/// Writes `v` compactly: rounded to 0.01, without trailing zeros ("12.5", "3", "-0.25");
/// a non-finite value is written as 0 so the file stays valid.
void nbio_svg_number(nbioWriter *w, double v);

/// Writes `text` escaped for XML content or a quoted attribute: & < > " ' as entities,
/// control bytes and invalid UTF-8 as '?'.
void nbio_svg_escape(nbioWriter *w, const char *text);

#endif

// SPDX-License-Identifier: MIT
// The SVG writer (svg.h). Well-formedness is kept by construction: every element is written
// whole by one call, except groups and the path, whose nesting is counted so nbio_svg_end
// can close them; every caller string goes through nbio_svg_escape.
#include "io/svg.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

void nbio_svg_number(nbioWriter *w, double v)
{
    // Hundredths of a pixel as an integer: exact, locale-free and short.
    if (!isfinite(v) || fabs(v) > 1e15) v = 0.0;
    int64_t h = (int64_t)llround(v * 100.0);
    if (h < 0) {
        nbio_write_char(w, '-');
        h = -h;
    }
    nbio_write_i64(w, h / 100);
    int64_t frac = h % 100;
    if (frac != 0) {
        nbio_write_char(w, '.');
        nbio_write_char(w, (char)('0' + frac / 10));
        if (frac % 10 != 0) nbio_write_char(w, (char)('0' + frac % 10));
    }
}

// The length of the valid UTF-8 sequence at p (1 to 4), or 0 if it is not one. Overlong
// forms, surrogates and code points past U+10FFFF are invalid.
static size_t utf8_length(const unsigned char *p)
{
    const unsigned c = p[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        cp = c & 0x1fu;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        cp = c & 0x0fu;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        cp = c & 0x07u;
    } else {
        return 0;
    }
    for (size_t k = 1; k < len; k++) {
        if ((p[k] & 0xc0u) != 0x80u) return 0; // also stops at the terminating 0
        cp = (cp << 6) | (p[k] & 0x3fu);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff))) return 0;
    if (cp >= 0xd800 && cp <= 0xdfff) return 0;
    if (cp == 0xfffe || cp == 0xffff) return 0; // not XML characters
    return len;
}

void nbio_svg_escape(nbioWriter *w, const char *text)
{
    const unsigned char *p = (const unsigned char *)(text != NULL ? text : "");
    while (*p != 0) {
        const unsigned char c = *p;
        switch (c) {
        case '&': nbio_write_str(w, "&amp;"); break;
        case '<': nbio_write_str(w, "&lt;"); break;
        case '>': nbio_write_str(w, "&gt;"); break;
        case '"': nbio_write_str(w, "&quot;"); break;
        case '\'': nbio_write_str(w, "&apos;"); break;
        default:
            if (c < 0x20 || c == 0x7f) { // XML 1.0 allows only tab, LF, CR: show '?'
                nbio_write_char(w, '?');
            } else if (c >= 0x80) {
                const size_t len = utf8_length(p);
                if (len == 0) {
                    nbio_write_char(w, '?');
                } else {
                    nbio_write_bytes(w, (const char *)p, len);
                    p += len - 1;
                }
            } else {
                nbio_write_char(w, (char)c);
            }
        }
        p++;
    }
}

// ` name="value"` with the value escaped.
static void attr_str(nbioSvg *s, const char *name, const char *value)
{
    nbio_write_char(&s->w, ' ');
    nbio_write_str(&s->w, name);
    nbio_write_str(&s->w, "=\"");
    nbio_svg_escape(&s->w, value);
    nbio_write_char(&s->w, '"');
}

// ` name="number"`.
static void attr_num(nbioSvg *s, const char *name, double value)
{
    nbio_write_char(&s->w, ' ');
    nbio_write_str(&s->w, name);
    nbio_write_str(&s->w, "=\"");
    nbio_svg_number(&s->w, value);
    nbio_write_char(&s->w, '"');
}

double nbio_svg_px(const nbioSvg *s, double x)
{
    return s->margin + (x - s->x0) * s->scale;
}

double nbio_svg_py(const nbioSvg *s, double y)
{
    return s->margin + s->plot_h - (y - s->y0) * s->scale; // y up
}

double nbio_svg_plot_bottom(const nbioSvg *s)
{
    return s->margin + s->plot_h;
}

void nbio_svg_begin(nbioSvg *s, FILE *stream, const nbioSvgView *view)
{
    nbio_writer_init(&s->w, stream, s->buf, sizeof s->buf);
    double x0 = view->x0, y0 = view->y0, x1 = view->x1, y1 = view->y1;
    if (!(isfinite(x0) && isfinite(x1) && isfinite(y0) && isfinite(y1) && x1 - x0 > 0.0 &&
          y1 - y0 > 0.0 && isfinite(x1 - x0) && isfinite(y1 - y0))) {
        // Degenerate (one point, or a line) or overflowing: a unit square around its corner.
        x0 = isfinite(x0) ? x0 - 0.5 : -0.5;
        y0 = isfinite(y0) ? y0 - 0.5 : -0.5;
        x1 = x0 + 1.0;
        y1 = y0 + 1.0;
    }
    const double width = view->width > 0.0 ? view->width : 800.0;
    s->x0 = x0;
    s->y0 = y0;
    s->scale = width / (x1 - x0);
    s->plot_h = (y1 - y0) * s->scale;
    if (s->plot_h > 4.0 * width) { // a tall world: fit its height instead
        s->scale = 4.0 * width / (y1 - y0);
        s->plot_h = 4.0 * width;
    }
    if (s->plot_h < 1.0) s->plot_h = 1.0;
    s->margin = view->margin > 0.0 ? view->margin : 0.0;
    s->width_px = (x1 - x0) * s->scale + 2.0 * s->margin;
    s->height_px = s->plot_h + 2.0 * s->margin + (view->footer > 0.0 ? view->footer : 0.0);
    s->groups = 0;
    s->in_path = false;
    nbio_write_str(&s->w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                          "<svg xmlns=\"http://www.w3.org/2000/svg\"");
    attr_num(s, "width", ceil(s->width_px));
    attr_num(s, "height", ceil(s->height_px));
    nbio_write_str(&s->w, " viewBox=\"0 0 ");
    nbio_svg_number(&s->w, ceil(s->width_px));
    nbio_write_char(&s->w, ' ');
    nbio_svg_number(&s->w, ceil(s->height_px));
    nbio_write_str(&s->w, "\" font-family=\"sans-serif\">\n");
    nbio_write_str(&s->w, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
}

bool nbio_svg_end(nbioSvg *s)
{
    if (s->in_path) nbio_svg_path_end(s);
    while (s->groups > 0) nbio_svg_group_end(s);
    nbio_write_str(&s->w, "</svg>\n");
    return nbio_writer_finish(&s->w);
}

void nbio_svg_group_begin(nbioSvg *s, const char *fill, const char *stroke, double stroke_width,
                          double opacity)
{
    if (s->in_path) nbio_svg_path_end(s);
    nbio_write_str(&s->w, "<g");
    if (fill != NULL) attr_str(s, "fill", fill);
    if (stroke != NULL) attr_str(s, "stroke", stroke);
    if (stroke_width > 0.0) attr_num(s, "stroke-width", stroke_width);
    if (opacity < 1.0) attr_num(s, "opacity", opacity > 0.0 ? opacity : 0.0);
    nbio_write_str(&s->w, ">\n");
    s->groups++;
}

void nbio_svg_group_end(nbioSvg *s)
{
    if (s->in_path) nbio_svg_path_end(s);
    if (s->groups == 0) return;
    nbio_write_str(&s->w, "</g>\n");
    s->groups--;
}

void nbio_svg_circle(nbioSvg *s, double x, double y, double r_px, const char *fill)
{
    if (s->in_path) nbio_svg_path_end(s);
    nbio_write_str(&s->w, "<circle");
    attr_num(s, "cx", nbio_svg_px(s, x));
    attr_num(s, "cy", nbio_svg_py(s, y));
    attr_num(s, "r", r_px);
    if (fill != NULL) attr_str(s, "fill", fill);
    nbio_write_str(&s->w, "/>\n");
}

void nbio_svg_line(nbioSvg *s, double xa, double ya, double xb, double yb)
{
    if (s->in_path) nbio_svg_path_end(s);
    nbio_write_str(&s->w, "<line");
    attr_num(s, "x1", nbio_svg_px(s, xa));
    attr_num(s, "y1", nbio_svg_py(s, ya));
    attr_num(s, "x2", nbio_svg_px(s, xb));
    attr_num(s, "y2", nbio_svg_py(s, yb));
    nbio_write_str(&s->w, "/>\n");
}

void nbio_svg_rect(nbioSvg *s, double xa, double ya, double xb, double yb, const char *fill,
                   double opacity, const char *stroke)
{
    if (s->in_path) nbio_svg_path_end(s);
    const double px0 = nbio_svg_px(s, fmin(xa, xb)), px1 = nbio_svg_px(s, fmax(xa, xb));
    const double py0 = nbio_svg_py(s, fmax(ya, yb)), py1 = nbio_svg_py(s, fmin(ya, yb));
    nbio_write_str(&s->w, "<rect");
    attr_num(s, "x", px0);
    attr_num(s, "y", py0);
    attr_num(s, "width", px1 - px0);
    attr_num(s, "height", py1 - py0);
    if (fill != NULL) attr_str(s, "fill", fill);
    if (opacity < 1.0) attr_num(s, "fill-opacity", opacity > 0.0 ? opacity : 0.0);
    if (stroke != NULL) attr_str(s, "stroke", stroke);
    nbio_write_str(&s->w, "/>\n");
}

void nbio_svg_path_begin(nbioSvg *s, const char *stroke, double width, double opacity)
{
    if (s->in_path) nbio_svg_path_end(s);
    nbio_write_str(&s->w, "<path fill=\"none\"");
    attr_str(s, "stroke", stroke != NULL ? stroke : "black");
    if (width > 0.0) attr_num(s, "stroke-width", width);
    if (opacity < 1.0) attr_num(s, "stroke-opacity", opacity > 0.0 ? opacity : 0.0);
    nbio_write_str(&s->w, " d=\"");
    s->in_path = true;
}

void nbio_svg_path_segment(nbioSvg *s, double xa, double ya, double xb, double yb)
{
    if (!s->in_path) nbio_svg_path_begin(s, NULL, 0.0, 1.0);
    nbio_write_char(&s->w, 'M');
    nbio_svg_number(&s->w, nbio_svg_px(s, xa));
    nbio_write_char(&s->w, ' ');
    nbio_svg_number(&s->w, nbio_svg_py(s, ya));
    nbio_write_char(&s->w, 'L');
    nbio_svg_number(&s->w, nbio_svg_px(s, xb));
    nbio_write_char(&s->w, ' ');
    nbio_svg_number(&s->w, nbio_svg_py(s, yb));
    nbio_write_char(&s->w, '\n');
}

void nbio_svg_path_end(nbioSvg *s)
{
    if (!s->in_path) return;
    nbio_write_str(&s->w, "\"/>\n");
    s->in_path = false;
}

void nbio_svg_text_px(nbioSvg *s, double x, double y, double size, const char *text)
{
    if (s->in_path) nbio_svg_path_end(s);
    nbio_write_str(&s->w, "<text");
    attr_num(s, "x", x);
    attr_num(s, "y", y);
    attr_num(s, "font-size", size);
    nbio_write_str(&s->w, " fill=\"black\">");
    nbio_svg_escape(&s->w, text);
    nbio_write_str(&s->w, "</text>\n");
}

double nbio_svg_legend(nbioSvg *s, double x, double y, const nbioSvgLegendItem *items, size_t count)
{
    enum { LINE = 16 };
    for (size_t k = 0; k < count; k++) {
        const double cy = y + LINE * (double)k + LINE / 2.0;
        const char *color = items[k].color != NULL ? items[k].color : "black";
        nbio_write_str(&s->w, items[k].swatch == NBIO_SVG_DOT    ? "<circle"
                              : items[k].swatch == NBIO_SVG_LINE ? "<line"
                                                                 : "<rect");
        if (items[k].swatch == NBIO_SVG_DOT) {
            attr_num(s, "cx", x + 6.0);
            attr_num(s, "cy", cy);
            attr_num(s, "r", 4.0);
            attr_str(s, "fill", color);
        } else if (items[k].swatch == NBIO_SVG_LINE) {
            attr_num(s, "x1", x);
            attr_num(s, "y1", cy);
            attr_num(s, "x2", x + 12.0);
            attr_num(s, "y2", cy);
            attr_str(s, "stroke", color);
            attr_num(s, "stroke-width", 2.0);
        } else {
            attr_num(s, "x", x);
            attr_num(s, "y", cy - 6.0);
            attr_num(s, "width", 12.0);
            attr_num(s, "height", 12.0);
            attr_str(s, "fill", color);
        }
        nbio_write_str(&s->w, "/>\n");
        nbio_svg_text_px(s, x + 18.0, cy + 4.0, 12.0, items[k].label);
    }
    return y + LINE * (double)count;
}

// SPDX-License-Identifier: MIT
// `nearby render INPUT --radius R -o picture.svg`: a point file drawn with its cells (edge R,
// shaded by occupancy) and its pairs within R, and optionally a radius or window query.
// `nearby render RECTS -o picture.svg [--query X0,Y0,X1,Y1]` (no --radius): a file of
// rectangles drawn as outlines over the quadtree's leaf cells (nb_quadtree_visit_nodes), and
// optionally a window and the rectangles the quadtree finds touching it.
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <nearby/grid.h>
#include <nearby/quadtree.h>

#include "cli.h"
#include "options.h"
#include "picture.h"
#include "structures.h"

static int run(int argc, char **argv);
static void help(void);

const cliCommand cli_cmd_render = {
    .name = "render",
    .brief = "INPUT --radius R -o PICTURE.svg",
    .summary = "draw points (cells, pairs) or rectangles to SVG",
    .options = CLI_OPT_INPUT | CLI_OPT_RADIUS | CLI_OPT_OUTPUT | CLI_OPT_QUERY | CLI_OPT_DIM |
               CLI_OPT_FORMAT,
    .needs = 0,
    .run = run,
    .help = help,
};

static void help(void)
{
    cli_print_usage(&cli_cmd_render, "INPUT --radius R -o PICTURE.svg [--query Q]");
    fputs("Draws the points of INPUT to an SVG picture with the dense grid's cells (edge R,\n"
          "shaded by how many points each holds) and every pair within R as a segment.\n"
          "3D points are drawn projected on x,y (their pairs are still within R in 3D).\n"
          "More than 40000 points or pairs are drawn as a fixed sample, and the picture\n"
          "says so. Prints what it drew.\n"
          "\n",
          stdout);
    cli_print_option_help(CLI_OPT_RADIUS);
    fputs("  -o PICTURE.svg    where to write the picture (required)\n"
          "  --query X,Y       mark a point and the points within R of it (X,Y,Z in 3D)\n"
          "  --query X0,Y0,X1,Y1\n"
          "                    mark a window and the points in it, bounds included\n"
          "                    (X0,Y0,Z0,X1,Y1,Z1 in 3D)\n",
          stdout);
    cli_print_option_help(CLI_OPT_DIM | CLI_OPT_FORMAT);
    fputs("\nWithout --radius, INPUT holds rectangles (minx,miny,maxx,maxy a record, as for\n"
          "boxes): they are drawn as outlines over the cells of the quadtree's leaves (the\n"
          "tree built with its default settings), and --query X0,Y0,X1,Y1 marks a window\n"
          "and fills the rectangles the quadtree finds touching it.\n",
          stdout);
}

// Every pair within `radius` into a fresh buffer (free() it), growing once to the total.
static nbStatus all_pairs(const nbGrid *grid, double radius, nbPair **out, int64_t *count)
{
    int64_t cap = (int64_t)nb_grid_count(grid) * 4 + 64;
    *out = NULL;
    *count = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        nbPair *buf = malloc((size_t)cap * sizeof *buf);
        if (buf == NULL) return NB_ERR_OUT_OF_MEMORY;
        int64_t found = 0;
        const nbStatus st = nb_grid_pairs(grid, radius, buf, cap, &found);
        if (st == NB_OK) {
            *out = buf;
            *count = found;
            return NB_OK;
        }
        free(buf);
        if (st != NB_ERR_BUFFER_TOO_SMALL) return st;
        if ((uint64_t)found > SIZE_MAX / sizeof(nbPair)) return NB_ERR_OUT_OF_MEMORY;
        cap = found;
    }
    return NB_ERR_INTERNAL;
}

// The query's hits (indices) into a fresh buffer, growing once to the total.
static nbStatus query_hits(const nbGrid *grid, const cliOptions *o, int32_t dim, double radius,
                           int32_t **out, int32_t *count)
{
    int32_t cap = 256;
    *out = NULL;
    *count = 0;
    nbBox box = {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}};
    if (o->query_count == 2 * dim) {
        memcpy(box.min, o->query, (size_t)dim * sizeof(double));
        memcpy(box.max, o->query + dim, (size_t)dim * sizeof(double));
    }
    for (int attempt = 0; attempt < 3; attempt++) {
        int32_t *buf = malloc((size_t)cap * sizeof *buf);
        if (buf == NULL) return NB_ERR_OUT_OF_MEMORY;
        int32_t found = 0;
        const nbStatus st =
            o->query_count == dim
                ? nb_grid_query_radius(grid, o->query, radius, NB_FILTER_ALL, buf, cap, &found)
                : nb_grid_query_box(grid, &box, NB_FILTER_ALL, buf, cap, &found);
        if (st == NB_OK) {
            *out = buf;
            *count = found;
            return NB_OK;
        }
        free(buf);
        if (st != NB_ERR_BUFFER_TOO_SMALL) return st;
        cap = found;
    }
    return NB_ERR_INTERNAL;
}

// Opens the picture's file, naming it in messages as `name`; NULL after reporting.
static FILE *create_picture(const char *path, char *name, size_t cap)
{
    cli_display_name(name, cap, path);
    FILE *f = fopen(path, "wb");
    if (f == NULL) cli_fail("render: %s: cannot create: %s", name, strerror(errno));
    return f;
}

// Writes the footer lines and closes the picture; CLI_EXIT_OK or the output error reported.
static int finish_picture(nbioSvg *svg, FILE *f, const char *name, char lines[][700], int count)
{
    const double y = nbio_svg_plot_bottom(svg) + 22.0;
    for (int k = 0; k < count; k++)
        if (lines[k][0] != 0) nbio_svg_text_px(svg, 10.0, y + 17.0 * k, 12.0, lines[k]);
    const bool ok = nbio_svg_end(svg);
    const bool closed = fclose(f) == 0;
    if (ok && closed) return CLI_EXIT_OK;
    cli_fail("render: %s: error writing the picture", name);
    return CLI_EXIT_RUNTIME;
}

// The window's hits by user value (= the rectangle's index); ids holds every rectangle.
typedef struct WindowHits {
    int32_t *ids;
    int32_t count;
} WindowHits;

static bool on_window_hit(nbHit hit, void *user)
{
    WindowHits *h = user;
    h->ids[h->count++] = (int32_t)hit.user;
    return true;
}

// The tree's shape: nodes per depth (deeper ones counted in the last), nodes, leaves, depth.
enum { NODE_DEPTHS = 128 };
typedef struct NodeCount {
    int64_t at_depth[NODE_DEPTHS];
    int64_t nodes, leaves;
    int32_t depth;
} NodeCount;

static bool count_node(const nbQuadtreeNode *node, void *user)
{
    NodeCount *c = user;
    c->at_depth[node->depth < NODE_DEPTHS ? node->depth : NODE_DEPTHS - 1]++;
    c->nodes++;
    c->leaves += node->leaf;
    if (node->depth > c->depth) c->depth = node->depth;
    return true;
}

// Draws the cells of the leaves down to `depth`, and of every node at `depth`, clipped to the
// view (a root fitted with room to spare reaches past the rectangles).
typedef struct NodeDraw {
    nbioSvg *svg;
    double view[4];
    int32_t depth;
    int64_t drawn;
} NodeDraw;

static bool draw_node(const nbQuadtreeNode *node, void *user)
{
    NodeDraw *d = user;
    if (node->depth > d->depth || (!node->leaf && node->depth < d->depth)) return true;
    const double x0 = fmax(node->cell.min[0], d->view[0]), y0 = fmax(node->cell.min[1], d->view[1]);
    const double x1 = fmin(node->cell.max[0], d->view[2]), y1 = fmin(node->cell.max[1], d->view[3]);
    if (x0 > x1 || y0 > y1) return true;
    nbio_svg_rect(d->svg, x0, y0, x1, y1, NULL, 1.0, NULL);
    d->drawn++;
    return true;
}

// `render RECTS -o PICTURE.svg [--query X0,Y0,X1,Y1]`: the rectangles as outlines (a fixed
// sample beyond CLI_PICTURE_MAX_POINTS), the window and the rectangles touching it filled.
static int render_rects(const cliOptions *o)
{
    if (o->given & CLI_OPT_DIM) {
        cli_fail("render: --dim is for points (with --radius R); rectangles are 2D");
        return CLI_EXIT_BAD_INPUT;
    }
    if (o->query_count != 0 && o->query_count != 4) {
        cli_fail("render: --query: expected X0,Y0,X1,Y1 (a window) for rectangles, found %d "
                 "values",
                 (int)o->query_count);
        return CLI_EXIT_BAD_INPUT;
    }
    if (o->query_count == 4 && nbio_rect_inverted(o->query) >= 0) {
        const int a = nbio_rect_inverted(o->query);
        cli_fail("render: --query: the window's lower corner is above its upper corner in %c "
                 "(%g > %g)",
                 "xy"[a], o -> query[a], o -> query[2 + a]);
        return CLI_EXIT_BAD_INPUT;
    }
    char in_name[256], name[256];
    nbioPoints rects;
    // A file of points without --radius is most likely a forgotten --radius: say so (standard
    // input cannot be read twice, and a .f64 does not say how many values a record holds, so
    // those are taken as rectangles).
    nbioError err;
    const nbioFormat format =
        o->format != NBIO_FORMAT_AUTO ? o->format : nbio_format_for_path(o->input);
    if (strcmp(o->input, "-") != 0 && format != NBIO_FORMAT_F64 &&
        nbio_read(o->input, o->format, 0, &rects, &err) == NBIO_OK && rects.dim != 0) {
        cli_display_name(in_name, sizeof in_name, o->input);
        cli_fail("render: missing --radius R: %s holds %dD points (without --radius, INPUT is "
                 "read as rectangles)",
                 in_name, (int)rects.dim);
        nbio_points_free(&rects);
        return CLI_EXIT_BAD_INPUT;
    }
    int r = cli_load_rects(o->input, o->format, in_name, sizeof in_name, &rects);
    if (r != CLI_EXIT_OK) return r;
    const int32_t n = rects.count;
    // The quadtree as the tool builds it for rectangles (the default desc, nb_quadtree_build,
    // rectangle i's user value i): the window's hits, and its nodes for the picture.
    nbQuadtree *tree = NULL;
    WindowHits found = {NULL, 0};
    const nbQuadtreeDesc desc = {0};
    nbStatus st = nb_quadtree_create(&desc, &tree);
    if (st == NB_OK)
        st = nb_quadtree_build(tree, (const nbRect *)(const void *)rects.coords, n, NULL, NULL,
                               NULL);
    if (st == NB_OK && o->query_count == 4) {
        const nbBox w = {{o->query[0], o->query[1], 0.0}, {o->query[2], o->query[3], 0.0}};
        found.ids = malloc(((size_t)n + 1) * sizeof(int32_t));
        st = found.ids == NULL
                 ? NB_ERR_OUT_OF_MEMORY
                 : nb_quadtree_visit_box(tree, &w, NB_FILTER_ALL, on_window_hit, &found);
    }
    NodeCount nodes = {{0}, 0, 0, 0};
    if (st == NB_OK) st = nb_quadtree_visit_nodes(tree, count_node, &nodes);
    int32_t *hits = found.ids, hit_count = found.count;
    if (st != NB_OK) {
        nb_quadtree_destroy(tree);
        nbio_points_free(&rects);
        free(hits);
        return st == NB_ERR_OUT_OF_MEMORY ? cli_out_of_memory(in_name, "querying")
                                          : cli_fail_status(in_name, st, "querying");
    }
    cli_sort_indices(hits, hit_count);
    // The view: the rectangles' bounds and the window's, with a margin of 2%.
    double lo[2] = {(double)INFINITY, (double)INFINITY},
           hi[2] = {-(double)INFINITY, -(double)INFINITY};
    for (int32_t i = 0; i <= n; i++) {
        const double *b = i < n ? rects.coords + 4 * (size_t)i : o->query;
        if (i == n && o->query_count == 0) break;
        for (int d = 0; d < 2; d++) lo[d] = fmin(lo[d], b[d]), hi[d] = fmax(hi[d], b[2 + d]);
    }
    if (!(lo[0] <= hi[0])) lo[0] = lo[1] = 0.0, hi[0] = hi[1] = 1.0;
    const double pad = fmax(0.02 * fmax(hi[0] - lo[0], hi[1] - lo[1]), 1e-9);
    nbioSvgView v = {lo[0] - pad, lo[1] - pad, hi[0] + pad, hi[1] + pad, 800.0, 10.0, 70.0};
    FILE *f = create_picture(o->output, name, sizeof name);
    if (f == NULL) {
        nbio_points_free(&rects);
        free(hits);
        return CLI_EXIT_BAD_INPUT;
    }
    static nbioSvg svg;
    nbio_svg_begin(&svg, f, &v);
    // The nodes under the rectangles: each leaf's cell (the cells tile the root's), down to the
    // deepest level whose nodes, and all above, fit the picture's budget; at that level every
    // node's cell, so the tiling stays whole.
    int32_t depth_drawn = 0;
    for (int64_t sum = 0; depth_drawn < NODE_DEPTHS; depth_drawn++) {
        sum += nodes.at_depth[depth_drawn];
        if (sum > CLI_PICTURE_MAX_POINTS) break;
    }
    depth_drawn = depth_drawn > 0 ? depth_drawn - 1 : 0;
    NodeDraw nd = {&svg, {v.x0, v.y0, v.x1, v.y1}, depth_drawn, 0};
    nbio_svg_group_begin(&svg, "none", "#74c0fc", 0.8, 1.0);
    nb_quadtree_visit_nodes(tree, draw_node, &nd);
    nbio_svg_group_end(&svg);
    nb_quadtree_destroy(tree);
    int64_t drawn = 0;
    nbio_svg_group_begin(&svg, "none", "#495057", 1.0, 1.0);
    for (int32_t i = 0; i < n; i++) {
        if (!cli_sample_keep((uint64_t)i, n, CLI_PICTURE_MAX_POINTS)) continue;
        const double *b = rects.coords + 4 * (size_t)i;
        nbio_svg_rect(&svg, b[0], b[1], b[2], b[3], NULL, 1.0, NULL);
        drawn++;
    }
    nbio_svg_group_end(&svg);
    if (o->query_count == 4) {
        for (int32_t k = 0; k < hit_count && k < CLI_PICTURE_MAX_POINTS; k++) {
            const double *b = rects.coords + 4 * (size_t)hits[k];
            nbio_svg_rect(&svg, b[0], b[1], b[2], b[3], "#e8590c", 0.35, "#d9480f");
        }
        nbio_svg_rect(&svg, o->query[0], o->query[1], o->query[2], o->query[3], "#f59f00", 0.15,
                      "#e67700");
    }
    char lines[3][700];
    snprintf(lines[0], sizeof lines[0], "nearby render %s: %d rectangles; drawn: %lld%s", in_name,
             (int)n, (long long)drawn,
             drawn < n ? " (a fixed sample, to keep the file small)" : "");
    snprintf(lines[1], sizeof lines[1],
             "quadtree (default settings): %lld nodes, %lld leaves, depth %d; blue: its leaves' "
             "cells%s",
             (long long)nodes.nodes, (long long)nodes.leaves, (int)nodes.depth,
             depth_drawn < nodes.depth ? ", to the depth that fits" : "");
    if (o->query_count == 4)
        snprintf(lines[2], sizeof lines[2], "window query (quadtree): %d rectangles touch it",
                 (int)hit_count);
    else
        lines[2][0] = 0;
    nbio_points_free(&rects);
    free(hits);
    if ((r = finish_picture(&svg, f, name, lines, 3)) != CLI_EXIT_OK) return r;
    printf("%s: %lld of %d rectangles", name, (long long)drawn, (int)n);
    if (o->query_count == 4) printf(", %d touching the window", (int)hit_count);
    printf("; quadtree: %lld nodes, %lld leaves, depth %d\n", (long long)nodes.nodes,
           (long long)nodes.leaves, (int)nodes.depth);
    return CLI_EXIT_OK;
}

static int run(int argc, char **argv)
{
    const cliCommand *cmd = &cli_cmd_render;
    cliOptions o = {0};
    cliInput in;
    int r = cli_parse_options(cmd, argc, argv, &o);
    if (r >= 0) return r;
    if ((r = cli_require(cmd, &o, CLI_OPT_OUTPUT)) != CLI_EXIT_OK) return r;
    if (!(o.given & CLI_OPT_RADIUS)) return render_rects(&o);
    if ((r = cli_load_input(cmd->name, &o, &in)) != CLI_EXIT_OK) return r;
    const int32_t dim = in.points.dim, n = in.points.count;
    const double *coords = in.points.coords;
    if (o.query_count != 0 && o.query_count != dim && o.query_count != 2 * dim) {
        cli_fail("render: --query: expected %d values (a point) or %d (a window) for the %dD "
                 "points in %s, found %d",
                 (int)dim, (int)(2 * dim), (int)dim, in.name, (int)o.query_count);
        nbio_points_free(&in.points);
        return CLI_EXIT_BAD_INPUT;
    }
    const bool window = o.query_count == 2 * dim;
    for (int32_t d = 0; window && d < dim; d++)
        if (o.query[d] > o.query[dim + d]) {
            cli_fail("render: --query: the window's lower corner is above its upper corner in "
                     "%c (%g > %g)",
                     "xyz"[d], o.query[d], o.query[dim + d]);
            nbio_points_free(&in.points);
            return CLI_EXIT_BAD_INPUT;
        }

    nbGridDesc desc = {0};
    desc.dim = dim;
    desc.capacity_hint = n;
    nbGrid *grid = NULL;
    nbPoints view = {0};
    view.data = coords;
    view.count = n;
    view.dim = dim;
    nbStatus st = nb_grid_create(&desc, &grid);
    if (st == NB_OK) st = nb_grid_build(grid, &view, o.radius);
    nbPair *pairs = NULL;
    int64_t pair_count = 0;
    int32_t *hits = NULL;
    int32_t hit_count = 0;
    if (st == NB_OK) st = all_pairs(grid, o.radius, &pairs, &pair_count);
    if (st == NB_OK && o.query_count != 0)
        st = query_hits(grid, &o, dim, o.radius, &hits, &hit_count);
    nb_grid_destroy(grid);
    if (st != NB_OK) {
        nbio_points_free(&in.points);
        free(pairs);
        free(hits);
        if (st == NB_ERR_OUT_OF_MEMORY) return cli_out_of_memory(in.name, "finding pairs");
        return cli_fail_status(in.name, st, "finding pairs");
    }

    // The view: the points' x,y bounds (and the query's), plus a margin of R.
    double lo[2] = {(double)INFINITY, (double)INFINITY},
           hi[2] = {-(double)INFINITY, -(double)INFINITY};
    for (int32_t i = 0; i < n; i++)
        for (int d = 0; d < 2; d++) {
            lo[d] = fmin(lo[d], coords[(size_t)i * (size_t)dim + (size_t)d]);
            hi[d] = fmax(hi[d], coords[(size_t)i * (size_t)dim + (size_t)d]);
        }
    for (int d = 0; d < 2 && o.query_count != 0; d++) {
        const double a = o.query[d], b = window ? o.query[dim + d] : o.query[d];
        const double pad = window ? 0.0 : o.radius;
        lo[d] = fmin(lo[d], a - pad);
        hi[d] = fmax(hi[d], b + pad);
    }
    if (n == 0 && o.query_count == 0) lo[0] = lo[1] = 0.0, hi[0] = hi[1] = 1.0;
    const double pad = fmax(o.radius, 1e-9 * fmax(hi[0] - lo[0], hi[1] - lo[1]));
    nbioSvgView v = {lo[0] - pad, lo[1] - pad, hi[0] + pad, hi[1] + pad, 800.0, 10.0, 100.0};

    char name[256];
    FILE *f = create_picture(o.output, name, sizeof name);
    if (f == NULL) {
        nbio_points_free(&in.points);
        free(pairs);
        free(hits);
        return CLI_EXIT_BAD_INPUT;
    }
    static nbioSvg svg;
    nbio_svg_begin(&svg, f, &v);
    cliCells cells;
    st = cli_picture_cells(&svg, coords, n, dim, o.radius, &cells);
    int64_t links = 0;
    if (st == NB_OK)
        st = cli_picture_pairs(&svg, coords, dim, pairs, pair_count, "#495057", &links);
    const int64_t dots = cli_picture_points(&svg, coords, n, dim, NULL, 0, n,
                                            CLI_PICTURE_MAX_POINTS, 2.0, "#212529");
    if (o.query_count != 0) {
        if (window)
            nbio_svg_rect(&svg, o.query[0], o.query[1], o.query[dim], o.query[dim + 1], "#f59f00",
                          0.15, "#e67700");
        nbio_svg_group_begin(&svg, "#e8590c", NULL, 0.0, 1.0);
        for (int32_t k = 0; k < hit_count && k < CLI_PICTURE_MAX_POINTS; k++) {
            const double *p = coords + (size_t)hits[k] * (size_t)dim;
            nbio_svg_circle(&svg, p[0], p[1], 3.0, NULL);
        }
        nbio_svg_group_end(&svg);
        if (!window) {
            // The query's circle, as a world-sized ring (radius in pixels from the scale).
            const double r_px =
                nbio_svg_px(&svg, o.query[0] + o.radius) - nbio_svg_px(&svg, o.query[0]);
            nbio_svg_group_begin(&svg, "none", "#e67700", 1.5, 1.0);
            nbio_svg_circle(&svg, o.query[0], o.query[1], r_px, NULL);
            nbio_svg_circle(&svg, o.query[0], o.query[1], 3.5, "#e67700");
            nbio_svg_group_end(&svg);
        }
    }
    char line[4][700];
    snprintf(line[0], sizeof line[0], "nearby render %s: %d %dD points%s, radius %s", in.name,
             (int)n, (int)dim, dim == 3 ? " (drawn projected on x,y; pairs within R in 3D)" : "",
             o.radius_text);
    snprintf(line[1], sizeof line[1], "points drawn: %lld of %d; pairs drawn: %lld of %lld%s",
             (long long)dots, (int)n, (long long)links, (long long)pair_count,
             dots < n || links < pair_count ? " (a fixed sample, to keep the file small)" : "");
    if (cells.drawn)
        snprintf(line[2], sizeof line[2], "cells: %lld occupied, edge %g%s; at most %lld points",
                 (long long)cells.occupied, o.radius * (double)cells.factor,
                 cells.factor > 1 ? " (coarsened to keep the file small)" : " (= radius)",
                 (long long)cells.max_occupancy);
    else
        snprintf(line[2], sizeof line[2], "cells: not drawn (radius 0, or too many)");
    if (o.query_count == 0)
        line[3][0] = 0;
    else if (window)
        snprintf(line[3], sizeof line[3], "window query: %d points in it", (int)hit_count);
    else
        snprintf(line[3], sizeof line[3], "radius query: %d points within %s of the mark",
                 (int)hit_count, o.radius_text);
    r = finish_picture(&svg, f, name, line, 4);
    nbio_points_free(&in.points);
    free(pairs);
    free(hits);
    if (st == NB_ERR_OUT_OF_MEMORY) return cli_out_of_memory("render", "drawing the picture");
    if (r != CLI_EXIT_OK) return r;
    printf("%s: %lld of %d points, %lld of %lld pairs within %s", name, (long long)dots, (int)n,
           (long long)links, (long long)pair_count, o.radius_text);
    if (o.query_count != 0)
        printf(", %d points in the %s", (int)hit_count, window ? "window" : "query circle");
    printf("\n");
    return CLI_EXIT_OK;
}

// SPDX-License-Identifier: MIT
// libFuzzer target for the neighbour lists (include/nearby/neighbors.h). The input is a small
// scene: byte 0 picks the dimension, the radius and the skin; then up to 48 points, each
// coordinate one byte on a coarse lattice (so points coincide and pairs lie exactly r apart);
// the rest are Verlet steps, each moving one point by a byte's worth. Checked for every input,
// against brute force (d2 <= r*r in double):
//   - nb_grid_neighbor_rows: every row in both directions, ascending, the point itself left
//     out; a buffer one entry short gives NB_ERR_BUFFER_TOO_SMALL with the full count;
//   - nbNeighborList (with distances): the same rows, each entry's squared distance exact;
//   - nbVerlet: after every update the rows are the brute-force rows at r, whether or not it
//     rebuilt.
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <nearby/neighbors.h>

#include "nb_fuzz.h"

enum { NBF_NMAX = 48 };

static double nbf_d2(const double *a, const double *b, int dim)
{
    double s = 0.0;
    for (int d = 0; d < dim; d++) s += (a[d] - b[d]) * (a[d] - b[d]);
    return s;
}

// Rows (offsets, neighbours, optional dist2) against brute force over the n points.
static void nbf_check_rows(const char *what, const double *p, int32_t n, int dim, double r,
                           const int32_t *off, const int32_t *nb, const double *dist2)
{
    NBF_CHECK(off[0] == 0, "%s: offsets[0] = %d", what, (int)off[0]);
    for (int32_t i = 0; i < n; i++) {
        int32_t at = off[i];
        for (int32_t j = 0; j < n; j++) {
            if (j == i || !(nbf_d2(p + (size_t)i * dim, p + (size_t)j * dim, dim) <= r * r))
                continue;
            NBF_CHECK(at < off[i + 1], "%s: row %d lacks %d", what, (int)i, (int)j);
            NBF_CHECK(nb[at] == j, "%s: row %d has %d where %d belongs", what, (int)i, (int)nb[at],
                      (int)j);
            if (dist2 != NULL)
                NBF_CHECK(dist2[at] == nbf_d2(p + (size_t)i * dim, p + (size_t)j * dim, dim),
                          "%s: row %d entry %d distance %g", what, (int)i, (int)j, dist2[at]);
            at++;
        }
        NBF_CHECK(at == off[i + 1], "%s: row %d has %d extra entries", what, (int)i,
                  (int)(off[i + 1] - at));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nbf_begin_input();
    if (size < 2) return 0;
    const int dim = (data[0] & 1) ? 3 : 2;
    const double r = 0.25 * (double)((data[0] >> 1) & 7);     // 0 .. 1.75
    const double skin = 0.125 * (double)((data[0] >> 4) & 7); // 0 .. 0.875
    size_t at = 1;
    int32_t n = (int32_t)((size - 1) / (size_t)dim);
    if (n > NBF_NMAX) n = NBF_NMAX;
    double p[NBF_NMAX * 3];
    for (int32_t i = 0; i < n * dim; i++) p[i] = 0.25 * (double)(int8_t)data[at++];

    nbGridDesc gd = {.dim = dim};
    nbGrid *g = NULL;
    NBF_CHECK(nb_grid_create(&gd, &g) == NB_OK, "grid create");
    const nbPoints pts = {.data = p, .count = n, .dim = dim};
    NBF_CHECK(nb_grid_build(g, &pts, r) == NB_OK, "grid build");

    // The caller's buffers: count first, then exactly, then one short.
    int32_t off[NBF_NMAX + 1];
    int64_t found = -1;
    nbStatus st = nb_grid_neighbor_rows(g, r, off, NULL, 0, &found);
    NBF_CHECK(st == NB_OK || st == NB_ERR_BUFFER_TOO_SMALL, "rows count: %s", nb_status_str(st));
    NBF_CHECK(found >= 0 && found <= (int64_t)n * (n - 1), "rows found %lld", (long long)found);
    int32_t *nb = malloc(((size_t)found + 1) * sizeof *nb);
    if (nb == NULL) return 0;
    st = nb_grid_neighbor_rows(g, r, off, nb, found, &found);
    NBF_CHECK(st == NB_OK, "rows: %s", nb_status_str(st));
    nbf_check_rows("grid rows", p, n, dim, r, off, nb, NULL);
    if (found > 0) {
        const int64_t full = found;
        st = nb_grid_neighbor_rows(g, r, off, nb, full - 1, &found);
        NBF_CHECK(st == NB_ERR_BUFFER_TOO_SMALL && found == full, "one short: %s, %lld",
                  nb_status_str(st), (long long)found);
    }
    free(nb);

    // The growable list, with distances.
    const nbNeighborListDesc ld = {.distances = true};
    nbNeighborList *l = NULL;
    NBF_CHECK(nb_neighbor_list_create(&ld, &l) == NB_OK, "list create");
    NBF_CHECK(nb_neighbor_list_build(l, g, r) == NB_OK, "list build");
    nbNeighborRows rows;
    NBF_CHECK(nb_neighbor_list_rows(l, &rows) == NB_OK, "list rows");
    NBF_CHECK(rows.rows == n, "list rows %d of %d", (int)rows.rows, (int)n);
    nbf_check_rows("list", p, n, dim, r, rows.offsets, rows.neighbors, rows.dist2);
    nb_neighbor_list_destroy(l);
    nb_grid_destroy(g);

    // The Verlet list over the remaining bytes as moves.
    const nbVerletDesc vd = {.radius = r, .skin = skin, .dim = dim, .distances = true};
    nbVerlet *v = NULL;
    NBF_CHECK(nb_verlet_create(&vd, &v) == NB_OK, "verlet create");
    bool rebuilt = false;
    for (int step = 0; n > 0; step++) {
        NBF_CHECK(nb_verlet_update(v, &pts, &rebuilt) == NB_OK, "verlet update %d", step);
        NBF_CHECK(step > 0 || rebuilt, "the first update did not build");
        NBF_CHECK(nb_verlet_rows(v, &rows) == NB_OK, "verlet rows");
        NBF_CHECK(rows.rows == n, "verlet rows %d of %d", (int)rows.rows, (int)n);
        nbf_check_rows("verlet", p, n, dim, r, rows.offsets, rows.neighbors, rows.dist2);
        if (at + 2 > size) break;
        const int32_t i = (int32_t)(data[at++] % (uint8_t)n);
        const int8_t by = (int8_t)data[at++];
        p[(size_t)i * dim + (size_t)(step % dim)] += 0.0625 * by;
    }
    nb_verlet_destroy(v);
    return 0;
}

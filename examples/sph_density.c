// SPDX-License-Identifier: MIT
// sph_density: the density sum of smoothed-particle hydrodynamics over a 2D dam-break block of
// fluid particles in a tank of boundary particles, from neighbour lists (<nearby/neighbors.h>):
//
//   rho_i = sum over fluid j within 2h of m W(|x_i - x_j|, h)   (j = i included)
//         + sum over boundary b within 2h of m W(|x_i - x_b|, h)
//
// The fluid's neighbours come from a Verlet list in the form MD codes use (nbVerletDesc
// .candidates: the rows are every pair within 2h + skin at the last rebuild, rebuilt only when a
// particle has moved more than skin / 2, and the loop tests each candidate at 2h from the
// positions, as it computes the distance for the kernel anyway), the boundary's from a list of
// the fluid grid against the boundary grid, with squared distances. Every step's densities are
// checked against the same sums by brute force.
//
// Then the same flow again the way SPH codes that keep their particles sorted by cell run it:
// every step, after the grid's build, the particle arrays are reordered into the grid's cell
// order (nb_gather with the order the rows hand out), and the rows come in that order
// (nbNeighborListDesc.cell_order: the fast form), so a particle's index is its position in
// the rows and its neighbours lie near it in memory. Checked against brute force too.
//
//   sph_density [N] [STEPS]   about N fluid particles (default 4000), STEPS steps (default 40)
#include <nearby/neighbors.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const double DX = 0.01;     // particle spacing (m)
static const double RHO0 = 1000.0; // rest density (kg/m^3)
static const double PI = 3.14159265358979323846;

// The Wendland C2 kernel in 2D, support 2h.
static double wendland(double r, double h)
{
    const double q = r / h;
    if (q >= 2.0) return 0.0;
    const double t = 1.0 - 0.5 * q;
    return 7.0 / (4.0 * PI * h * h) * t * t * t * t * (1.0 + 2.0 * q);
}

static void check(nbStatus st, const char *what)
{
    if (st != NB_OK) {
        fprintf(stderr, "sph_density: %s: %s\n", what, nb_status_str(st));
        exit(1);
    }
}

static double *grow(double *p, int32_t n)
{
    double *q = realloc(p, (size_t)n * 2 * sizeof(double));
    if (q == NULL) {
        fprintf(stderr, "sph_density: out of memory\n");
        exit(1);
    }
    return q;
}

// The density of each fluid particle p (fluid and wall in the arrays given) by brute force,
// against rho[p]: the largest difference, relative to the rest density, into *worst.
static void brute_force(const double *fluid, int32_t nf, const double *wall, int32_t nb,
                        const double *rho, double h, double mass, double *worst)
{
    const double support = 2.0 * h;
    for (int32_t i = 0; i < nf; i++) {
        double sum = mass * wendland(0.0, h);
        const double *p = fluid + 2 * i;
        for (int32_t j = 0; j < nf; j++) {
            const double dx = p[0] - fluid[2 * j], dy = p[1] - fluid[2 * j + 1];
            const double d2 = dx * dx + dy * dy;
            if (j != i && d2 <= support * support) sum += mass * wendland(sqrt(d2), h);
        }
        for (int32_t b = 0; b < nb; b++) {
            const double dx = p[0] - wall[2 * b], dy = p[1] - wall[2 * b + 1];
            const double d2 = dx * dx + dy * dy;
            if (d2 <= support * support) sum += mass * wendland(sqrt(d2), h);
        }
        const double err = fabs(rho[i] - sum) / RHO0;
        *worst = err > *worst ? err : *worst;
    }
}

// The prescribed flow of the block: it slumps right and down, faster higher up.
static void flow(double *fluid, int32_t nf, int32_t rows)
{
    for (int32_t i = 0; i < nf; i++) {
        const double y = fluid[2 * i + 1];
        fluid[2 * i] += 0.02 * DX * (y / (rows * DX));
        fluid[2 * i + 1] += -0.01 * DX * (y / (rows * DX));
    }
}

// The same flow with the particles kept in cell order. Each step: move, build the fluid grid,
// the rows in cell order (the fluid against itself, and against the wall's grid gb), then
// reorder the particle arrays by the rows' order: particle p is then row p, and each entry q
// of a fluid row is particle q. A code with more arrays (velocities, pressures, ids) gathers
// each of them the same way; here the positions and the ids.
static void sorted_flow(const double *wall, int32_t nb, const nbGrid *gb, int32_t nf, int32_t cols,
                        int32_t rows, int steps, double *worst)
{
    const double h = 1.3 * DX, support = 2.0 * h, mass = RHO0 * DX * DX;
    // Each array twice (double buffering): xs[c], ids[c] are the current ones.
    double *xs[2] = {grow(NULL, nf), grow(NULL, nf)}, *rho = grow(NULL, nf);
    int32_t *ids[2] = {malloc((size_t)nf * sizeof(int32_t)), malloc((size_t)nf * sizeof(int32_t))};
    if (ids[0] == NULL || ids[1] == NULL) exit(1);
    int c = 0;
    for (int32_t k = 0; k < nf; k++) { // the block as at the start
        xs[c][2 * k] = (k % cols + 0.5) * DX;
        xs[c][2 * k + 1] = (k / cols + 0.5) * DX;
        ids[c][k] = k;
    }
    nbGridDesc gd = {.dim = 2};
    nbGrid *gf = NULL;
    check(nb_grid_create(&gd, &gf), "grid");
    const nbNeighborListDesc ld = {.distances = true, .cell_order = true};
    nbNeighborList *ff = NULL, *fb = NULL;
    check(nb_neighbor_list_create(&ld, &ff), "list");
    check(nb_neighbor_list_create(&ld, &fb), "list");
    *worst = 0.0;
    for (int s = 0; s < steps; s++) {
        flow(xs[c], nf, rows);
        const nbPoints pts = {.data = xs[c], .count = nf, .dim = 2};
        check(nb_grid_build(gf, &pts, support), "fluid grid");
        check(nb_neighbor_list_build(ff, gf, support), "fluid rows");
        check(nb_neighbor_list_build_cross(fb, gf, gb, support), "wall rows");
        nbNeighborRows rf, rb;
        check(nb_neighbor_list_rows(ff, &rf), "rows");
        check(nb_neighbor_list_rows(fb, &rb), "rows");
        // Particle arrays into the grid's order (double-buffered): position p = particle p.
        check(nb_gather(rf.order, nf, xs[c], 0, xs[!c], 0, 2 * sizeof(double)), "gather");
        check(nb_gather(rf.order, nf, ids[c], 0, ids[!c], 0, sizeof(int32_t)), "gather");
        c = !c;
        for (int32_t p = 0; p < nf; p++) { // each row read in memory order
            double sum = mass * wendland(0.0, h);
            for (int32_t t = rf.offsets[p]; t < rf.offsets[p + 1]; t++)
                sum += mass * wendland(sqrt(rf.dist2[t]), h);
            for (int32_t t = rb.offsets[p]; t < rb.offsets[p + 1]; t++)
                sum += mass * wendland(sqrt(rb.dist2[t]), h);
            rho[p] = sum;
        }
        brute_force(xs[c], nf, wall, nb, rho, h, mass, worst);
    }
    int32_t *seen = ids[!c]; // the ids are still a permutation
    for (int32_t k = 0; k < nf; k++) seen[k] = 0;
    for (int32_t k = 0; k < nf; k++) seen[ids[c][k]]++;
    for (int32_t k = 0; k < nf; k++)
        if (seen[k] != 1) *worst = 1.0;
    nb_neighbor_list_destroy(ff);
    nb_neighbor_list_destroy(fb);
    nb_grid_destroy(gf);
    for (int k = 0; k < 2; k++) {
        free(xs[k]);
        free(ids[k]);
    }
    free(rho);
}

int main(int argc, char **argv)
{
    const int32_t want = argc > 1 ? atoi(argv[1]) : 4000;
    const int steps = argc > 2 ? atoi(argv[2]) : 40;
    if (want < 4 || steps < 1) {
        fprintf(stderr, "usage: sph_density [N >= 4] [STEPS >= 1]\n");
        return 2;
    }
    // The block: a columns x rows lattice, twice as tall as wide, in the tank's bottom-left
    // corner; the tank is 4 block widths wide, walled by three layers of boundary particles.
    const int32_t cols = (int32_t)sqrt(want / 2.0) > 1 ? (int32_t)sqrt(want / 2.0) : 2;
    const int32_t rows = 2 * cols, nf = cols * rows;
    const double width = 4.0 * cols * DX, height = 1.5 * rows * DX;
    double *fluid = grow(NULL, nf), *wall = NULL;
    for (int32_t k = 0; k < nf; k++) {
        fluid[2 * k] = (k % cols + 0.5) * DX;
        fluid[2 * k + 1] = (k / cols + 0.5) * DX;
    }
    int32_t nb = 0, cap = 0;
    for (int layer = 1; layer <= 3; layer++) {
        const double off = (layer - 0.5) * DX;
        for (double x = -off; x <= width + off + 1e-12; x += DX) { // the floor
            if (nb == cap) wall = grow(wall, cap = 2 * cap + 64);
            wall[2 * nb] = x;
            wall[2 * nb++ + 1] = -off;
        }
        for (double y = 0.5 * DX; y <= height; y += DX) // the two side walls
            for (int side = 0; side < 2; side++) {
                if (nb == cap) wall = grow(wall, cap = 2 * cap + 64);
                wall[2 * nb] = side == 0 ? -off : width + off;
                wall[2 * nb++ + 1] = y;
            }
    }
    const double h = 1.3 * DX, support = 2.0 * h, mass = RHO0 * DX * DX;

    // The boundary is still: one grid, built once. The fluid's grid is rebuilt every step for
    // the list against the boundary; its own neighbours come from the Verlet list.
    nbGridDesc gd = {.dim = 2};
    nbGrid *gf = NULL, *gb = NULL;
    check(nb_grid_create(&gd, &gf), "grid");
    check(nb_grid_create(&gd, &gb), "grid");
    const nbPoints wall_pts = {.data = wall, .count = nb, .dim = 2};
    check(nb_grid_build(gb, &wall_pts, support), "boundary grid");
    nbVerletDesc vd = {.radius = support, .skin = 0.2 * h, .dim = 2, .candidates = true};
    nbVerlet *fl = NULL;
    check(nb_verlet_create(&vd, &fl), "verlet");
    const nbNeighborListDesc ld = {.distances = true};
    nbNeighborList *bl = NULL;
    check(nb_neighbor_list_create(&ld, &bl), "list");

    double *rho = malloc((size_t)nf * sizeof(double));
    if (rho == NULL) return 1;
    const nbPoints fluid_pts = {.data = fluid, .count = nf, .dim = 2};
    int rebuilds = 0;
    int64_t within = 0; // the last step's fluid neighbours
    double worst = 0.0, rho_mean = 0.0;
    for (int s = 0; s < steps; s++) {
        flow(fluid, nf, rows); // the dam breaks (a prescribed flow, not a solver)
        bool rebuilt = false;
        check(nb_verlet_update(fl, &fluid_pts, &rebuilt), "verlet update");
        rebuilds += rebuilt;
        check(nb_grid_build(gf, &fluid_pts, support), "fluid grid");
        check(nb_neighbor_list_build_cross(bl, gf, gb, support), "boundary list");
        nbNeighborRows ff, fb;
        check(nb_verlet_rows(fl, &ff), "rows");
        check(nb_neighbor_list_rows(bl, &fb), "rows");
        // The density sum: each particle's own row, in both directions, nothing to scatter.
        // The fluid rows are candidates: each is tested at the support (d2 <= support^2, the
        // distance the kernel needs anyway); every fluid neighbour is among them.
        within = 0;
        for (int32_t i = 0; i < nf; i++) {
            double sum = mass * wendland(0.0, h); // itself
            const double *p = fluid + 2 * i;
            for (int32_t t = ff.offsets[i]; t < ff.offsets[i + 1]; t++) {
                const double *q = fluid + 2 * ff.neighbors[t];
                const double dx = p[0] - q[0], dy = p[1] - q[1], d2 = dx * dx + dy * dy;
                if (d2 > support * support) continue; // a candidate only
                sum += mass * wendland(sqrt(d2), h);
                within++;
            }
            for (int32_t t = fb.offsets[i]; t < fb.offsets[i + 1]; t++)
                sum += mass * wendland(sqrt(fb.dist2[t]), h);
            rho[i] = sum;
        }
        // Brute force, for every particle: the same sums in the same order (rows ascending).
        brute_force(fluid, nf, wall, nb, rho, h, mass, &worst);
    }
    for (int32_t i = 0; i < nf; i++) rho_mean += rho[i] / nf;
    const double worst_unsorted = worst;
    sorted_flow(wall, nb, gb, nf, cols, rows, steps, &worst);
    nbNeighborRows ff;
    check(nb_verlet_rows(fl, &ff), "rows");
    printf("sph_density: %d fluid + %d boundary particles, %d steps, %d Verlet rebuilds\n", nf, nb,
           steps, rebuilds);
    printf("  %.1f fluid neighbours a particle (of %.1f candidates); mean density %.1f kg/m^3 "
           "(rest %.0f)\n",
           (double)within / nf, (double)ff.entries / nf, rho_mean, RHO0);
    printf("  largest difference from brute force: %.3g of the rest density\n", worst_unsorted);
    nb_neighbor_list_destroy(bl);
    nb_verlet_destroy(fl);
    nb_grid_destroy(gf);
    nb_grid_destroy(gb);
    free(fluid);
    free(wall);
    free(rho);
    printf("  particles kept in cell order (rows in cell order): largest difference %.3g\n", worst);
    if (worst > 1e-12 || worst_unsorted > 1e-12 || rebuilds < 1 || rebuilds >= steps) {
        fprintf(stderr, "sph_density: FAILED\n");
        return 1;
    }
    return 0;
}

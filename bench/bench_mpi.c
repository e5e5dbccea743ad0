// SPDX-License-Identifier: MIT
// The distributed layer (include/nearby/mpi.h) on P ranks against the single-process grid.
//
//   mpirun -np P bench_mpi FILE.f64 DIM R RUNS DATASET
//
// Each rank reads its own rows of FILE (rows [N * rank / P, N * (rank + 1) / P), the split
// nearby-mpi uses) and times RUNS frames of nb_mpi_create + nb_mpi_count_pairs, from a barrier
// to the last rank's end (the slowest rank's time: MPI_MAX). A frame is the whole distributed
// job from points spread over ranks by row: sample, bisection, migration, halo, local grids,
// count. On 1 rank it also times the single-process dense grid on all the points (nb_grid_build
// + nb_grid_count_pairs, the same work without the decomposition) as peer "grid", and checks
// both counts agree. Rank 0 prints one CSV line per peer (header below): min and median ms a
// frame, the pairs, and nb_mpi_stats of the last frame over ranks: owned points (max, mean:
// balance = max / mean), halo points received (sum; halo share = halo / owned, all ranks),
// bytes sent by a rank in create (max, mean; the halo phase's part alone too).
// Exit status 1 on a failure or a MISMATCH between the counts.
#define _POSIX_C_SOURCE 200809L // pread, clock_gettime
#include <nearby/grid.h>
#include <nearby/mpi.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BENCH_MPI_HEADER                                                                           \
    "peer,dataset,ranks,n_points,radius,runs,min_ms,median_ms,pairs,owned_max,owned_mean,"         \
    "balance,halo_total,halo_share,bytes_sent_max,bytes_sent_mean,halo_bytes_sent_mean,"           \
    "bytes_per_point"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int die(const char *what)
{
    fprintf(stderr, "bench_mpi: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

// Rows [first, first + *n) of the file, this rank's share.
static double *read_rows(const char *path, int dim, int rank, int size, int64_t *first, size_t *n,
                         int64_t *total)
{
    const int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) return NULL;
    const int64_t rows = (int64_t)st.st_size / (8 * dim);
    *total = rows;
    *first = rows * rank / size;
    *n = (size_t)(rows * (rank + 1) / size - *first);
    const size_t bytes = *n * (size_t)dim * 8;
    double *xyz = malloc(bytes > 0 ? bytes : 8);
    size_t done = 0;
    while (xyz != NULL && done < bytes) {
        const ssize_t got = pread(fd, (char *)xyz + done, bytes - done,
                                  (off_t)((uint64_t)*first * (uint64_t)dim * 8 + done));
        if (got <= 0) {
            free(xyz);
            xyz = NULL;
        } else {
            done += (size_t)got;
        }
    }
    close(fd);
    return xyz; // little-endian host assumed, as gen_data writes
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 6) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np P bench_mpi FILE DIM R RUNS DATASET\n");
        MPI_Finalize();
        return 2;
    }
    const char *path = argv[1], *dataset = argv[5];
    const int dim = atoi(argv[2]);
    const double radius = strtod(argv[3], NULL);
    const int runs = atoi(argv[4]);
    if ((dim != 2 && dim != 3) || runs < 1 || runs > 1000) return die("bad arguments");
    int64_t first = 0, total = 0;
    size_t n = 0;
    double *xyz = read_rows(path, dim, rank, size, &first, &n, &total);
    int ok = xyz != NULL, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) return die("cannot read the input");
    int64_t *ids = malloc((n > 0 ? n : 1) * sizeof *ids);
    double *times = malloc((size_t)runs * sizeof *times);
    if (ids == NULL || times == NULL) return die("out of memory");
    for (size_t k = 0; k < n; k++) ids[k] = first + (int64_t)k;

    nbMpiDesc desc;
    memset(&desc, 0, sizeof desc);
    desc.comm = MPI_COMM_WORLD;
    desc.dim = dim;
    desc.radius = radius;
    uint64_t global = 0;
    nbMpiStats stats;
    memset(&stats, 0, sizeof stats);
    for (int run = 0; run < runs; run++) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = now_ms();
        nbMpi *m = NULL;
        if (nb_mpi_create(&desc, xyz, ids, n, &m) != NB_OK) return die("nb_mpi_create failed");
        if (nb_mpi_count_pairs(m, NULL, &global) != NB_OK) return die("count_pairs failed");
        double t = now_ms() - t0, slowest = 0.0;
        MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        times[run] = slowest;
        if (nb_mpi_stats(m, &stats) != NB_OK) return die("nb_mpi_stats failed");
        nb_mpi_destroy(m);
    }

    // The last frame's figures over ranks.
    double owned = (double)stats.owned, halo = (double)stats.halo;
    double sent = (double)stats.bytes_sent, halo_sent = (double)stats.halo_bytes_sent;
    double owned_max = 0, owned_sum = 0, halo_sum = 0, sent_max = 0, sent_sum = 0,
           halo_sent_sum = 0;
    MPI_Reduce(&owned, &owned_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&owned, &owned_sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&halo, &halo_sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&sent, &sent_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&sent, &sent_sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&halo_sent, &halo_sent_sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    double best = times[0];
    for (int k = 0; k < runs; k++) best = times[k] < best ? times[k] : best;
    const double mpi_median = median(times, runs);

    int status = 0;
    if (rank == 0) {
        const double mean = owned_sum / size;
        printf("%s\n", BENCH_MPI_HEADER);
        printf("mpi,%s,%d,%lld,%g,%d,%.3f,%.3f,%llu,%.0f,%.1f,%.4f,%.0f,%.5f,%.0f,%.0f,%.0f,%.2f\n",
               dataset, size, (long long)total, radius, runs, best, mpi_median,
               (unsigned long long)global, owned_max, mean, mean > 0 ? owned_max / mean : 0.0,
               halo_sum, owned_sum > 0 ? halo_sum / owned_sum : 0.0, sent_max, sent_sum / size,
               halo_sent_sum / size, owned_sum > 0 ? sent_sum / owned_sum : 0.0);
    }
    if (size == 1) {
        // The single-process grid on the same points: build + count, cell = r.
        nbGridDesc gd;
        memset(&gd, 0, sizeof gd);
        gd.dim = dim;
        nbGrid *grid = NULL;
        if (nb_grid_create(&gd, &grid) != NB_OK) return die("nb_grid_create failed");
        const nbPoints pts = {.data = xyz, .count = (int32_t)n, .dim = dim, .stride = 0};
        int64_t count = 0;
        for (int run = 0; run < runs; run++) {
            const double t0 = now_ms();
            if (nb_grid_build(grid, &pts, radius) != NB_OK) return die("nb_grid_build failed");
            if (nb_grid_count_pairs(grid, radius, &count) != NB_OK) return die("grid count failed");
            times[run] = now_ms() - t0;
        }
        nb_grid_destroy(grid);
        double gbest = times[0];
        for (int k = 0; k < runs; k++) gbest = times[k] < gbest ? times[k] : gbest;
        printf("grid,%s,1,%lld,%g,%d,%.3f,%.3f,%lld,%zu,%zu,1,0,0,0,0,0,0\n", dataset,
               (long long)total, radius, runs, gbest, median(times, runs), (long long)count, n, n);
        if ((uint64_t)count != global) {
            fprintf(stderr, "bench_mpi: MISMATCH: grid %lld pairs, mpi %llu\n", (long long)count,
                    (unsigned long long)global);
            status = 1;
        }
    }
    free(xyz);
    free(ids);
    free(times);
    MPI_Finalize();
    return status;
}

// SPDX-License-Identifier: MIT
// Replay driver for the fuzz targets when they are not linked with libFuzzer: each argument
// is a file or a directory; every regular file (directories in name order, not recursive) is
// read and passed once to LLVMFuzzerTestOneInput. A target reports a failure by abort(), so
// the exit status is 0 only if every input passed. Used by ctest on any compiler.

#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/// Reads and runs one file; returns 0 on success, 1 if it could not be read.
static int nbf_run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "fuzz replay: cannot open %s\n", path);
        return 1;
    }
    size_t cap = 4096;
    size_t len = 0;
    uint8_t *buf = malloc(cap);
    while (buf != NULL) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap) break;
        uint8_t *grown = realloc(buf, cap * 2);
        if (grown == NULL) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    int bad = ferror(f) || buf == NULL;
    fclose(f);
    if (bad) {
        fprintf(stderr, "fuzz replay: cannot read %s\n", path);
        free(buf);
        return 1;
    }
    // An exact-size copy, so a read past the input's end is caught by AddressSanitizer.
    uint8_t *exact = malloc(len ? len : 1);
    if (exact == NULL) {
        free(buf);
        return 1;
    }
    memcpy(exact, buf, len);
    free(buf);
    fprintf(stderr, "fuzz replay: %s (%zu bytes)\n", path, len);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

static int nbf_by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/// Runs every regular file in `dir` in name order; returns the number of failures to read and
/// stores the number of inputs run in *ran.
static int nbf_run_dir(const char *dir, int *ran)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "fuzz replay: cannot open directory %s\n", dir);
        return 1;
    }
    char **names = NULL;
    size_t count = 0;
    size_t cap = 0;
    int failures = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        size_t need = strlen(dir) + strlen(e->d_name) + 2;
        char *path = malloc(need);
        if (path == NULL) break;
        snprintf(path, need, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            free(path);
            continue;
        }
        if (count == cap) {
            cap = cap ? cap * 2 : 64;
            char **grown = realloc(names, cap * sizeof *names);
            if (grown == NULL) {
                free(path);
                break;
            }
            names = grown;
        }
        names[count++] = path;
    }
    closedir(d);
    if (count > 0) qsort(names, count, sizeof *names, nbf_by_name);
    for (size_t i = 0; i < count; i++) {
        failures += nbf_run_file(names[i]);
        (*ran)++;
        free(names[i]);
    }
    free(names);
    return failures;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    int failures = 0;
    int ran = 0;
    for (int a = 1; a < argc; a++) {
        struct stat st;
        if (stat(argv[a], &st) == 0 && S_ISDIR(st.st_mode)) {
            failures += nbf_run_dir(argv[a], &ran);
        } else {
            failures += nbf_run_file(argv[a]);
            ran++;
        }
    }
    fprintf(stderr, "fuzz replay: %d inputs, %d unreadable\n", ran, failures);
    if (ran == 0) return 1; // an empty corpus means a broken setup, not a pass
    return failures ? 1 : 0;
}

// SPDX-License-Identifier: MIT
// The tool's number reader (tools/io/reader.c, nbio_parse_number) against strtod: random
// decimals of 1 to 22 digits, with and without a point, leading and trailing zeros, signs, and
// exponents from -30 to 30 (the reader's fast path takes those whose digits fit 2^53 and whose
// scale is within 10^22; strtod the rest), plus fixed cases at the fast path's edges. Every
// value must be strtod's, bit for bit (the sign of zero included). NB_SEED=... reproduces a run.
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/reader.h"

static uint64_t state;

static uint64_t next(void)
{
    uint64_t z = (state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static int failures;

static void check(const char *text)
{
    double got = 0.0;
    const nbioNumber r = nbio_parse_number(text, strlen(text), &got);
    const double want = strtod(text, NULL);
    if (r != NBIO_NUMBER_OK || memcmp(&got, &want, sizeof got) != 0) {
        if (failures++ < 10)
            fprintf(stderr, "FAIL \"%s\": read %.17g (status %d), strtod %.17g\n", text, got,
                    (int)r, want);
    }
}

int main(void)
{
    const char *seed = getenv("NB_SEED");
    state = seed != NULL ? strtoull(seed, NULL, 0) : 0x7061727365u;
    printf("seed: NB_SEED=0x%" PRIx64 "\n", state);
    static const char *fixed[] = {
        "0",
        "-0",
        "-0.0",
        "+0e5",
        "1",
        "9007199254740992", // 2^53: the largest integer the fast path takes
        "9007199254740993", // 2^53 + 1: strtod
        "9007199254740992e22",
        "9007199254740992e-22",
        "1e22",
        "1e23", // beyond the exact powers: strtod
        "1e-22",
        "1e-23",
        "0.1",
        "0.30000000000000004",
        "123456789012345678",
        "1234567890123456789",
        "12345678901234567890", // 20 digits: strtod
        "0.000000000000000000001",
        "4.9406564584124654e-324",
        "2.2250738585072014e-308",
        "1.7976931348623157e308",
        "3.14159",
        "-2.5e-3",
        "100000000000000000000000",
        " 7.25 ",
    };
    for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++) check(fixed[k]);
    for (int t = 0; t < 200000; t++) {
        char text[96];
        size_t n = 0;
        const uint64_t r = next();
        if (r & 1) text[n++] = (r & 2) ? '-' : '+';
        const int digits = 1 + (int)(next() % 22);
        const int point = (int)(next() % (uint64_t)(digits + 2)) - 1; // -1: no point
        for (int d = 0; d < digits; d++) {
            if (d == point) text[n++] = '.';
            const uint64_t c = next() % 16; // a few more zeros than other digits
            text[n++] = (char)('0' + (c >= 10 ? 0 : c));
        }
        if (point == digits) text[n++] = '.';
        if (next() % 3 == 0) n += (size_t)sprintf(text + n, "e%d", (int)(next() % 61) - 30);
        text[n] = 0;
        check(text);
    }
    if (failures > 0) {
        fprintf(stderr, "parse_check: %d failures\n", failures);
        return 1;
    }
    printf("parse_check: 200000 random decimals and %zu fixed ones read as strtod reads them\n",
           sizeof fixed / sizeof fixed[0]);
    return 0;
}

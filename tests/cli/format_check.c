// SPDX-License-Identifier: MIT
// The tool's numbers both ways. Writing: the formatter (tools/io/writer.c, nbio_format_double)
// against printf and strtod:
// every text must read back to the same double (bit for bit, the sign of zero included), hold
// no more significant digits than the first precision at which "%.*e" reads back, and be
// laid out as "%.17g" lays out its digits (exponent form exactly when the decimal exponent is
// below -4 or above 16). Fixed cases first, then random doubles of every kind: any bits, values
// near powers of two and of ten (where the gap below a double is half the gap above), integers,
// short decimals and distances. NB_SEED=... reproduces a run; NB_FORMAT_COUNT sets how many.
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/reader.h"
#include "io/writer.h"

static uint64_t state;

static uint64_t next(void)
{
    uint64_t z = (state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

// The fewest significant digits whose correctly rounded "%.*e" reads back to v.
static int fewest_digits(double v)
{
    char t[64];
    for (int p = 1; p < 17; p++) {
        snprintf(t, sizeof t, "%.*e", p - 1, v);
        if (strtod(t, NULL) == v) return p;
    }
    return 17;
}

// Significant digits of a text (leading zeros and trailing zeros of the digits left out), and
// its decimal exponent (of the first significant digit).
static void digits_of_text(const char *s, int *count, int *exponent)
{
    int first = -1, last = -1, pos = 0, point = -1;
    const char *c = s;
    for (; *c != 0 && *c != 'e'; c++) {
        if (*c == '.') {
            point = pos;
        } else if (*c >= '0' && *c <= '9') {
            if (*c != '0' && first < 0) first = pos;
            if (*c != '0') last = pos;
            pos++;
        }
    }
    if (point < 0) point = pos;
    *count = first < 0 ? 1 : last - first + 1;
    *exponent = (first < 0 ? 0 : point - first - 1) + (*c == 'e' ? atoi(c + 1) : 0);
}

static int failures;

// Whether two texts hold the same significant digits in the same order (zeros at either end,
// the sign, the point and the exponent left out).
static bool same_digits(const char *a, const char *b)
{
    char da[40], db[40];
    const char *texts[2] = {a, b};
    char *outs[2] = {da, db};
    for (int t = 0; t < 2; t++) {
        int n = 0;
        for (const char *c = texts[t]; *c != 0 && *c != 'e' && n < 39; c++)
            if (*c >= '0' && *c <= '9' && (n > 0 || *c != '0')) outs[t][n++] = *c;
        while (n > 0 && outs[t][n - 1] == '0') n--;
        outs[t][n] = 0;
    }
    return strcmp(da, db) == 0;
}

static void check(double v, const char *want)
{
    char text[NBIO_DOUBLE_MAX + 1];
    const size_t n = nbio_format_double(text, v);
    text[n < NBIO_DOUBLE_MAX ? n : NBIO_DOUBLE_MAX] = 0;
    bool ok = n > 0 && n <= 24;
    if (want != NULL) ok = ok && strcmp(text, want) == 0;
    const double back = strtod(text, NULL);
    ok = ok && memcmp(&back, &v, sizeof v) == 0;
    int count = 0, exponent = 0;
    digits_of_text(text, &count, &exponent);
    // No longer than printf's shortest; it can be shorter only just above a power of two, where
    // the nearest decimal of that length lies in the wider gap above and printf's, below, not.
    const int fewest = fewest_digits(v);
    ok = ok && count <= fewest;
    // Of the decimals of that length, the nearest to v: printf's correctly rounded "%.*e" at
    // that precision, the same digits and exponent (ties to even as printf breaks them).
    if (ok && count == fewest && v != 0.0) {
        char ref[64];
        snprintf(ref, sizeof ref, "%.*e", fewest - 1, v);
        int ref_count = 0, ref_exponent = 0;
        digits_of_text(ref, &ref_count, &ref_exponent);
        ok = ref_exponent == exponent && same_digits(text, ref);
    }
    if (v != 0.0) ok = ok && (strchr(text, 'e') != NULL) == (exponent < -4 || exponent > 16);
    if (!ok && failures++ < 20)
        fprintf(stderr, "format_check: %.17g (%a) printed as \"%s\"%s%s\n", v, v, text,
                want != NULL ? ", expected " : "", want != NULL ? want : "");
}

// Reading: nbio_parse_number (tools/io/reader.c) against strtod, bit for bit (the sign of zero
// included): random decimals of 1 to 22 digits, with and without a point, leading and trailing
// zeros, signs, and exponents from -30 to 30 (the reader's fast path takes those whose digits
// fit 2^53 and whose scale is within 10^22; strtod the rest), and fixed cases at the fast
// path's edges.
static void check_read(const char *text)
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

static size_t check_reading(void)
{
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
    for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++) check_read(fixed[k]);
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
        check_read(text);
    }
    return sizeof fixed / sizeof fixed[0];
}

int main(void)
{
    const char *seed = getenv("NB_SEED");
    state = seed != NULL ? strtoull(seed, NULL, 0) : 0x666f726d6174u;
    const char *count_text = getenv("NB_FORMAT_COUNT");
    const long count = count_text != NULL ? atol(count_text) : 60000;
    printf("seed: NB_SEED=0x%" PRIx64 "\n", state);
    static const struct {
        double v;
        const char *text;
    } fixed[] = {
        {0.0, "0"},
        {-0.0, "-0"},
        {0.1, "0.1"},
        {0.3, "0.3"},
        {2.0 / 3.0, "0.6666666666666666"},
        {1.0, "1"},
        {1.25, "1.25"},
        {-2.5, "-2.5"},
        {100.0, "100"},
        {123456.789, "123456.789"},
        {0.0001, "0.0001"},
        {0.00012, "0.00012"},
        {1e-5, "1e-05"},
        {5e-5, "5e-05"},
        {9.999999999999999e-06, "9.999999999999999e-06"},
        {1.5e-7, "1.5e-07"},
        {1e16, "10000000000000000"},
        {12345678901234568.0, "12345678901234568"},
        {36028797018963968.0, "36028797018963970"}, // 2^55: gaps of 8, the shortest ends in 0
        {1e17, "1e+17"},
        {1e23, "1e+23"},
        {1.2345678901234568e+17, "1.2345678901234568e+17"},
        {DBL_MAX, "1.7976931348623157e+308"},
        {DBL_MIN, "2.2250738585072014e-308"},
        {4.9406564584124654e-324, "5e-324"},
        {1.4142135623730951, "1.4142135623730951"},
        {6371.0, "6371"},
    };
    for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++) check(fixed[k].v, fixed[k].text);
    for (long i = 0; i < count; i++) {
        const uint64_t b = next();
        double v;
        switch (i % 9) {
        case 0: // any finite double
            memcpy(&v, &b, sizeof v);
            if (!isfinite(v)) continue;
            break;
        case 1: // near a power of two: below, at, above
            v = nextafter(ldexp(1.0, (int)(b % 2100) - 1074),
                          (b >> 20 & 1) ? 0.0 : (double)INFINITY);
            if ((b >> 21 & 3) == 0) v = ldexp(1.0, (int)(b % 2000) - 1000);
            break;
        case 2: // near a power of ten
            v = nextafter(pow(10.0, (double)((int)(b % 60) - 30)),
                          (b >> 20 & 1) ? 0.0 : (double)INFINITY);
            break;
        case 3: v = (double)(int64_t)(b >> (b % 50)); break;        // integers
        case 4: v = (double)(int64_t)(b % 2000000) / 1000.0; break; // short decimals
        case 5: v = sqrt((double)(b % 100000000) * 1e-4); break;    // distances
        case 6: v = (double)(b >> 11) * 0x1p-53 * pow(10.0, (double)((int)(b % 40) - 20)); break;
        case 7: // subnormal: any significand, the exponent field 0
            v = ldexp((double)(b >> 12), -1074);
            break;
        default: // any significand at a binary exponent of the exact fast path (1e-6 to 2^56)
            v = ldexp(1.0 + (double)(b >> 12) * 0x1p-52, (int)(b % 77) - 20);
            break;
        }
        check(v, NULL);
    }
    const size_t read_fixed = check_reading();
    if (failures > 0) {
        fprintf(stderr, "format_check: %d failures\n", failures);
        return 1;
    }
    printf("format_check: %ld random doubles and %zu fixed ones print the shortest text that reads "
           "back; 200000 random decimals and %zu fixed ones read as strtod reads them\n",
           count, sizeof fixed / sizeof fixed[0], read_fixed);
    return 0;
}

// SPDX-License-Identifier: MIT
#include "io/writer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void nbio_writer_init(nbioWriter *w, FILE *stream, char *buf, size_t cap)
{
    w->stream = stream;
    w->buf = buf;
    w->used = 0;
    w->cap = cap;
    w->failed = false;
    w->grows = false;
}

void nbio_writer_drain(nbioWriter *w)
{
    if (w->stream == NULL && w->grows && !w->failed) { // room, not a write
        char *more = w->cap <= SIZE_MAX / 2 ? realloc(w->buf, 2 * w->cap) : NULL;
        if (more != NULL) {
            w->buf = more;
            w->cap *= 2;
            return;
        }
        w->failed = true; // out of memory: the part is lost, and says so
    }
    if (w->used > 0 && w->stream == NULL) w->failed = true; // a buffer alone: it is full
    if (w->used > 0 && !w->failed && fwrite(w->buf, 1, w->used, w->stream) != w->used)
        w->failed = true;
    w->used = 0;
}

bool nbio_writer_finish(nbioWriter *w)
{
    nbio_writer_drain(w);
    if (fflush(w->stream) != 0 || ferror(w->stream)) w->failed = true;
    return !w->failed;
}

void nbio_write_bytes(nbioWriter *w, const char *s, size_t len)
{
    while (len > 0) {
        if (w->used == w->cap) nbio_writer_drain(w);
        size_t n = w->cap - w->used < len ? w->cap - w->used : len;
        memcpy(w->buf + w->used, s, n);
        w->used += n;
        s += n;
        len -= n;
    }
}

void nbio_write_str(nbioWriter *w, const char *s)
{
    nbio_write_bytes(w, s, strlen(s));
}

// ---- the shortest decimal that reads back to the same double ----
//
// v = m * 2^e (m an integer below 2^53). Every real strictly between the midpoints to v's
// neighbours, (v - ulp_below / 2, v + ulp / 2), rounds back to v (the midpoints themselves do
// when m is even: strtod breaks ties to even). Scaled by 10^s, where 10^(16 - s) is the largest
// power of ten not above 2^floor(log2 v), v * 10^s lies in [10^16, 2 * 10^17) and that interval
// is at least 1.1 wide, and exact in 128-bit integers: over the common denominator 2^(2 - e),
// its ends and v are (4m -+ 2) * 10^s, 4m * 10^s (the lower end (4m - 1) * 10^s when
// m = 2^52, where the gap below v is half the gap above). The integers it holds are the
// decimals of 17 or 18 digits that read back to v. Dropping the last digit of both ends
// (rounding the lower one up) while some integer remains between them leaves the shortest such
// decimals; of those, the one nearest v (an even last digit on a tie). This is exact where the
// products fit: s from 0 to 21 (v from about 1e-5 to 2^55) and e <= 2. Elsewhere (and without
// 128-bit integers) the shortest precision is found with printf, checked by strtod.

const char nbio_digit_pairs[201] = "00010203040506070809101112131415161718192021222324"
                                   "25262728293031323334353637383940414243444546474849"
                                   "50515253545556575859606162636465666768697071727374"
                                   "75767778798081828384858687888990919293949596979899";

static const uint64_t nbio_pow10[20] = {1u,
                                        10u,
                                        100u,
                                        1000u,
                                        10000u,
                                        100000u,
                                        1000000u,
                                        10000000u,
                                        100000000u,
                                        1000000000u,
                                        10000000000u,
                                        100000000000u,
                                        1000000000000u,
                                        10000000000000u,
                                        100000000000000u,
                                        1000000000000000u,
                                        10000000000000000u,
                                        100000000000000000u,
                                        1000000000000000000u,
                                        10000000000000000000u};

// Digits d[0, n) (1 <= n <= 17, d[0] not '0', d[n - 1] not '0', and '0' after them to
// d[24]) times 10^(x - n + 1) into dst, as printf's "%g" lays out 17 significant digits:
// fixed for -5 < x < 17, else d.ddde+XX; returns the length. Fixed-size copies (no byte loops
// in the fixed layouts), all within dst's NBIO_DOUBLE_MAX bytes.
static size_t layout(char *dst, bool negative, const char *d, int n, int x)
{
    char *p = dst;
    if (negative) *p++ = '-';
    if (x >= 0 && x < 17) {
        if (n <= x + 1) { // a whole number: the digits, then zeros (d's padding)
            memcpy(p, d, 24);
            return (size_t)(p - dst) + (size_t)x + 1;
        }
        memcpy(p, d, 16); // the integer digits (x <= 15 here), '.', the rest
        p[x + 1] = '.';
        if (x <= 13) {
            memcpy(p + x + 2, d + x + 1, 16);
        } else { // at most two digits after the point
            memcpy(p + x + 2, d + x + 1, 2);
        }
        return (size_t)(p - dst) + (size_t)n + 1;
    }
    if (x < 0 && x >= -4) { // "0." and -x - 1 zeros, then the digits
        memcpy(p, "0.000", 5);
        memcpy(p + 1 - x, d, 24);
        return (size_t)(p - dst) + (size_t)(1 - x + n);
    }
    *p++ = d[0];
    if (n > 1) {
        *p = '.';
        memcpy(p + 1, d + 1, 16);
        p += n;
    }
    *p++ = 'e';
    *p++ = x < 0 ? '-' : '+';
    const int a = x < 0 ? -x : x;
    if (a >= 100) *p++ = (char)('0' + a / 100);
    *p++ = (char)('0' + a / 10 % 10);
    *p++ = (char)('0' + a % 10);
    return (size_t)(p - dst);
}

// The shortest precision of "%.*e" that reads back to v (at most 17, which always does),
// laid out as the fast path would.
static size_t format_slow(char *dst, double v)
{
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
        if (prec < 17 && strtod(tmp, NULL) != v) continue;
        // tmp is [-]d[.ddd]e[+-]xx: gather the digits and the exponent.
        char d[48];
        memset(d, '0', sizeof d);
        int n = 0;
        const char *c = tmp + (tmp[0] == '-');
        for (; *c != 'e'; c++)
            if (*c != '.') d[n++] = *c;
        const int x = (int)strtol(c + 1, NULL, 10);
        while (n > 1 && d[n - 1] == '0') n--;
        return layout(dst, v < 0.0, d, n, x);
    }
    return 0; // not reached: 17 digits always read back
}

#if defined(__SIZEOF_INT128__)
__extension__ typedef unsigned __int128 nbioU128;

// The 8 digits of v < 10^8, leading zeros included, at dst: the two halves of 4 digits side by
// side in one 64-bit word, each split into two pairs, then each pair into two digits (x / 100
// as x * 5243 >> 19 for x < 10^4, x / 10 as x * 103 >> 10 for x < 100), stored in one go.
static inline void eight_digits(char *dst, uint32_t v)
{
    const uint64_t halves = (uint64_t)(v / 10000u) | (uint64_t)(v % 10000u) << 32;
    const uint64_t hundreds = (halves * 5243u >> 19) & UINT64_C(0x0000007f0000007f);
    const uint64_t pairs = hundreds | (halves - 100u * hundreds) << 16;
    const uint64_t tens = (pairs * 103u >> 10) & UINT64_C(0x000f000f000f000f);
    const uint64_t text = (tens | (pairs - 10u * tens) << 8) + UINT64_C(0x3030303030303030);
    unsigned char b[8]; // the first digit in the lowest byte, whatever the host's byte order
    for (int k = 0; k < 8; k++) b[k] = (unsigned char)(text >> (8 * k));
    memcpy(dst, b, 8);
}

// The fast path for v > 0 normal; 0 when v is outside its range.
static size_t format_fast(char *dst, double v, bool negative)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    const uint64_t frac = bits & ((UINT64_C(1) << 52) - 1);
    const int be = (int)((bits >> 52) & 0x7ff);
    if (be == 0 || be == 0x7ff) return 0; // subnormal or zero; inf or NaN
    const int e = be - 1075;
    if (e > 2) return 0;
    // v lies in [2^x2, 2^(x2 + 1)); 10^k is the largest power of ten not above 2^x2, k =
    // floor(x2 log10 2) = (x2 * 78913) >> 18 for |x2| < 2^11 (written as a division that rounds
    // down for negative x2 too). Then v * 10^(16 - k) lies in [10^16, 2 * 10^17).
    const int x2 = e + 52;
    const int k10 = x2 >= 0 ? (x2 * 78913) >> 18 : -((-x2 * 78913 + (1 << 18) - 1) >> 18);
    const int s = 16 - k10;
    if (s < 0 || s > 21) return 0; // and so e >= -70: the shift below is below 128
    const uint64_t m = frac | (UINT64_C(1) << 52);
    const int sh = 2 - e; // the common denominator 2^sh
    const nbioU128 pw =
        s <= 19 ? (nbioU128)nbio_pow10[s] : (nbioU128)nbio_pow10[19] * nbio_pow10[s - 19];
    const nbioU128 mid = (nbioU128)(4 * m) * pw;
    const nbioU128 mask = ((nbioU128)1 << sh) - 1;
    const bool inclusive = (m & 1) == 0;
    const nbioU128 low = frac == 0 && be > 1 ? mid - pw : mid - 2 * pw;
    const nbioU128 high = mid + 2 * pw;
    uint64_t ql = (uint64_t)(low >> sh);
    if ((low & mask) != 0 || !inclusive) ql++;
    uint64_t qh = (uint64_t)(high >> sh);
    if ((high & mask) == 0 && !inclusive) qh--;
    // The most trailing digits that can go: while a multiple of 10^(j + 1) lies in [ql, qh].
    // `whole` (v's integer part, mid / 2^sh) goes down by the same digits: q = v / 10^j
    // rounded down (divisions by a constant, not by 10^j).
    const uint64_t whole = (uint64_t)(mid >> sh);
    uint64_t q = whole;
    int j = 0;
    for (;;) {
        const uint64_t nl = (ql + 9) / 10, nh = qh / 10;
        if (nl > nh) break;
        ql = nl;
        qh = nh;
        q /= 10;
        j++;
    }
    // Of the multiples of 10^j in the interval, the nearest to v: q or q + 1, on a tie the
    // even one. v / 10^j - q is ((whole - q 10^j) 2^sh + (mid mod 2^sh)) / (10^j 2^sh).
    const nbioU128 rest = mid & mask; // v is above `whole` by rest / 2^sh
    bool up;
    if (j == 0) { // the fraction against one half, 2^(sh - 1) (no fraction when sh = 0)
        const nbioU128 half = mask / 2 + 1;
        up = rest != 0 && (rest > half || (rest == half && (q & 1) != 0));
    } else {
        const uint64_t p = nbio_pow10[j];
        const uint64_t r = whole - q * p;
        up = 2 * r > p || (2 * r == p && (rest != 0 || (q & 1) != 0));
    }
    q += up;
    q = q < ql ? ql : q > qh ? qh : q;
    // q * 10^(j - s): strip trailing zeros, then lay out.
    while (q % 10 == 0) {
        q /= 10;
        j++;
    }
    // The 17 digits of q (below 10^17: leading zeros included) and '0' padding; its digits are
    // the last n of the 17.
    char buf[48];
    memset(buf + 17, '0', sizeof buf - 17);
    const uint64_t top = q / 100000000u; // below 10^9
    buf[0] = (char)('0' + top / 100000000u);
    eight_digits(buf + 1, (uint32_t)(top % 100000000u));
    eight_digits(buf + 9, (uint32_t)(q % 100000000u));
    const int width = 64 - __builtin_clzll(q); // q >= 1
    const int t = (width * 1233) >> 12;        // floor(width * log10(2)): t or t + 1 digits
    const int n = t + 1 - (q < nbio_pow10[t]);
    return layout(dst, negative, buf + 17 - n, n, n - 1 + j - s);
}
#endif

size_t nbio_format_double(char *dst, double v)
{
    if (v == 0.0) { // "0", and "-0" for negative zero, as printf
        size_t n = 0;
        if (signbit(v)) dst[n++] = '-';
        dst[n++] = '0';
        return n;
    }
    if (!isfinite(v)) {
        int n = snprintf(dst, NBIO_DOUBLE_MAX, "%.17g", v);
        return n > 0 ? (size_t)n : 0;
    }
#if defined(__SIZEOF_INT128__)
    const size_t n = format_fast(dst, fabs(v), v < 0.0);
    if (n > 0) return n;
#endif
    return format_slow(dst, v);
}

void nbio_write_double(nbioWriter *w, double v)
{
    if (w->cap - w->used < NBIO_DOUBLE_MAX) nbio_writer_drain(w);
    if (w->cap - w->used < NBIO_DOUBLE_MAX) { // a writer smaller than one number: bounce
        char tmp[NBIO_DOUBLE_MAX];
        nbio_write_bytes(w, tmp, nbio_format_double(tmp, v));
        return;
    }
    w->used += nbio_format_double(w->buf + w->used, v);
}

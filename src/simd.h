// SPDX-License-Identifier: MIT
// The wider SIMD copies, chosen at run time. The library is built for plain x86-64 (SSE2); on
// x86-64 with GCC or clang, the hottest loops (pair kernels, radius queries, the dense builds'
// cell passes) have extra copies compiled for AVX2 or AVX-512 (F and VL) with target
// attributes, and each call picks the widest the CPU reports. Every copy computes the same
// values as the SSE2 one, in the same order (-ffp-contract=off forbids fusing; the cell pass
// proves its reciprocal exact or divides, see grid.c), so answers never depend on the
// CPU. The `_off` switches let the tests run the narrower copies on a machine that has the
// wider ones and compare them. Never installed.
#ifndef NEARBY_SIMD_H
#define NEARBY_SIMD_H

#include <stdbool.h>

#if defined(__SSE2__) && defined(__x86_64__) && defined(__GNUC__) && !defined(NBI_NO_AVX2)
#define NBI_AVX2 1
#include <immintrin.h>
#define NBI_TARGET_AVX2 __attribute__((target("avx2")))

extern int nbi_avx2_off; // nonzero: the SSE2 copies even where AVX2 runs (tests only)

static inline bool nbi_use_avx2(void)
{
    return !nbi_avx2_off && __builtin_cpu_supports("avx2");
}

#if !defined(NBI_NO_AVX512)
#define NBI_AVX512 1
#define NBI_TARGET_AVX512 __attribute__((target("avx2,avx512f,avx512vl,popcnt")))

extern int nbi_avx512_off; // nonzero: at most the AVX2 copies (tests only)

static inline bool nbi_use_avx512(void)
{
    return !nbi_avx512_off && !nbi_avx2_off && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512vl");
}

// Eight packed points' coordinates, one vector per axis: 2D points from a (points 0-3) and b
// (4-7), lane k's x being double 2k of the sixteen and y double 2k + 1; 3D points from a, b and
// c (24 doubles: lanes 0-5 come from a and b, lanes 6-7 from c). c is not read in 2D.
NBI_TARGET_AVX512 static inline void nbi_split8(int dim, __m512d a, __m512d b, __m512d c,
                                                __m512d v[3])
{
    if (dim == 2) {
        v[0] = _mm512_permutex2var_pd(a, _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0), b);
        v[1] = _mm512_permutex2var_pd(a, _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1), b);
        return;
    }
    const __m512i ix = _mm512_set_epi64(0, 0, 15, 12, 9, 6, 3, 0),
                  jx = _mm512_set_epi64(13, 10, 5, 4, 3, 2, 1, 0);
    const __m512i iy = _mm512_set_epi64(0, 0, 0, 13, 10, 7, 4, 1),
                  jy = _mm512_set_epi64(14, 11, 8, 4, 3, 2, 1, 0);
    const __m512i iz = _mm512_set_epi64(0, 0, 0, 14, 11, 8, 5, 2),
                  jz = _mm512_set_epi64(15, 12, 9, 4, 3, 2, 1, 0);
    v[0] = _mm512_permutex2var_pd(_mm512_permutex2var_pd(a, ix, b), jx, c);
    v[1] = _mm512_permutex2var_pd(_mm512_permutex2var_pd(a, iy, b), jy, c);
    v[2] = _mm512_permutex2var_pd(_mm512_permutex2var_pd(a, iz, b), jz, c);
}
#endif
#endif

#endif

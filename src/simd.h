// SPDX-License-Identifier: MIT
// The wider SIMD copies, chosen at run time. The library is built for plain x86-64 (SSE2); on
// x86-64 with GCC or clang, the hottest loops (pair kernels, radius queries, a rebuild's cell
// pass) have extra copies compiled for AVX2 or AVX-512 (F and VL) with target attributes, and
// each call picks the widest the CPU reports. Every copy computes the same values in the same
// order as the SSE2 one (-ffp-contract=off forbids fusing), so answers never depend on the
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
#endif
#endif

#endif

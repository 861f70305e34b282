/* ASCII runs 16 bytes at a time for the pretokenizer's fast path (_pretok.pxi).
 *
 * tokend_run_range(p, avail, lo, hi, fold): how many bytes from p, at most avail, lie in
 * [lo, hi] (after OR-ing 0x20 into each byte when fold is set: [a-z] then also takes [A-Z]).
 * The SSE2 path (every x86-64) checks 16 bytes per step while 16 remain; the scalar path
 * does the same one byte at a time and serves aarch64 and builds with TOKEND_NO_SIMD. Both
 * are always compiled (the scalar one as tokend_run_range_scalar) so that tests can check
 * that they agree. Only bytes below avail are read.
 */
#ifndef TOKEND_ASCII_SCAN_H
#define TOKEND_ASCII_SCAN_H

#include <stddef.h>

#if defined(__SSE2__) && !defined(TOKEND_NO_SIMD)
#include <emmintrin.h>
#define TOKEND_SIMD 1
#else
#define TOKEND_SIMD 0
#endif

static inline ptrdiff_t tokend_run_range_scalar(const unsigned char *p, ptrdiff_t avail,
                                                unsigned char lo, unsigned char hi, int fold) {
    unsigned char span = (unsigned char)(hi - lo), or_mask = fold ? 0x20 : 0;
    ptrdiff_t i = 0;
    while (i < avail && (unsigned char)((p[i] | or_mask) - lo) <= span)
        i++;
    return i;
}

#if TOKEND_SIMD
static inline ptrdiff_t tokend_run_range(const unsigned char *p, ptrdiff_t avail,
                                         unsigned char lo, unsigned char hi, int fold) {
    /* x in [lo, hi]  <=>  (x - lo) mod 256 <= hi - lo  <=>  min(x - lo, span) == x - lo */
    const __m128i vlo = _mm_set1_epi8((char)lo);
    const __m128i vspan = _mm_set1_epi8((char)(hi - lo));
    const __m128i vor = _mm_set1_epi8(fold ? 0x20 : 0);
    ptrdiff_t i = 0;
    while (avail - i >= 16) {
        __m128i x = _mm_sub_epi8(_mm_or_si128(_mm_loadu_si128((const __m128i *)(p + i)), vor), vlo);
        unsigned int out = (unsigned int)_mm_movemask_epi8(
                               _mm_cmpeq_epi8(_mm_min_epu8(x, vspan), x)) ^ 0xffffu;
        if (out)
            return i + __builtin_ctz(out);
        i += 16;
    }
    return i + tokend_run_range_scalar(p + i, avail - i, lo, hi, fold);
}
#else
#define tokend_run_range tokend_run_range_scalar
#endif

#endif

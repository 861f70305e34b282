/* Small speed helpers for _compiled.pyx, each with a portable fallback. */
#ifndef TOKEND_FAST_H
#define TOKEND_FAST_H

#if defined(__GNUC__) || defined(__clang__)
/* Ask for the cache line at p ahead of its use (read, keep in all cache levels). */
#define tokend_prefetch(p) __builtin_prefetch((const void *)(p), 0, 3)
#else
#define tokend_prefetch(p) ((void)(p))
#endif

#endif

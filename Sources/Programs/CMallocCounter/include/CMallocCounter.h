#ifndef ORDERSYNC_MALLOC_COUNTER_H
#define ORDERSYNC_MALLOC_COUNTER_H
#include <stdint.h>

/// Allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign) since the last
/// reset, and the bytes they asked for. Linked into `ordersync-microbench` only: it defines the
/// allocator's entry points and forwards them to glibc's.
uint64_t ordersync_malloc_count(void);
uint64_t ordersync_malloc_bytes(void);
void ordersync_malloc_reset(void);

#endif

/* chase.h - the ring a pointer chase walks (both backends build it the same way): one node per
 * 64-byte line of the working set, linked in a random order into a single cycle, so that each
 * load's address comes from the load before it (no two loads overlap) and no prefetcher can
 * guess the next line. Walking it, `p = ring[p]` from p = 0, measures the latency of one load
 * from wherever the working set fits. Plain C11 that also compiles as C++.
 */
#ifndef GD_CHASE_H
#define GD_CHASE_H

#include <stdint.h>
#include <stdlib.h>

#define GD_CHASE_LINE ((int64_t)64)                     /* bytes per node: one cache line */
#define GD_CHASE_STRIDE (GD_CHASE_LINE / (int64_t)sizeof(uint64_t)) /* ring elements per node */

/* splitmix64: a fixed seed gives the same ring everywhere. */
static inline uint64_t gd_chase_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ring (nodes * GD_CHASE_STRIDE elements): node k's first element holds the element index of
 * the next node in one random cycle through all `nodes` (>= 2) nodes. The order is shuffled in
 * a compact scratch array (Fisher-Yates) and linked afterwards, so the shuffle's random
 * accesses stay in a small array. -1 when the scratch cannot be allocated, else 0. */
static inline int gd_chase_ring(uint64_t *ring, int64_t nodes)
{
    uint32_t *order = (uint32_t *)malloc((size_t)nodes * sizeof(uint32_t));
    if (!order) return -1;
    uint64_t state = 0x5eed;
    for (int64_t i = 0; i < nodes; ++i) order[i] = (uint32_t)i;
    for (int64_t i = nodes - 1; i > 0; --i) {
        int64_t j = (int64_t)(gd_chase_random(&state) % (uint64_t)(i + 1));
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int64_t k = 0; k < nodes; ++k)
        ring[(int64_t)order[k] * GD_CHASE_STRIDE] = (uint64_t)order[(k + 1) % nodes] * GD_CHASE_STRIDE;
    free(order);
    return 0;
}

#endif

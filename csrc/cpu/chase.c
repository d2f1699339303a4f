/* chase.c - the CPU backend's pointer chase: the latency of one load from each cache level and
 * from main memory, measured by walking a random cycle of cache lines (csrc/chase.h) with one
 * thread, timed with the monotonic clock. Python cannot do this itself: its interpreter spends
 * tens of nanoseconds per step, more than an L2 hit takes.
 */
#include "chase.h"
#include "cpu.h"
#include "port.h" /* aligned allocation, the clock */

/* The walk the compiler may not drop or reorder: each load needs the previous one's value. */
static uint64_t chase_walk(const uint64_t *ring, uint64_t p, int64_t steps)
{
    for (int64_t i = 0; i < steps; ++i) p = ((const volatile uint64_t *)ring)[p];
    return p;
}

int gd_cpu_pointer_chase(double *ns_per_load, int repeats, int64_t working_set_bytes, int64_t steps, int device,
                         gd_error *err)
{
    (void)device;
    int64_t nodes = working_set_bytes / GD_CHASE_LINE;
    uint64_t *ring = gd_port_aligned_alloc((size_t)(nodes * GD_CHASE_LINE), (size_t)GD_CHASE_LINE);
    if (!ring || gd_chase_ring(ring, nodes) < 0) {
        gd_port_aligned_free(ring);
        return gd_set_error(err, GD_ERR_HOST_OOM, "pointer_chase: could not allocate a %lld-byte working set",
                            (long long)working_set_bytes);
    }
    /* the warm-up brings a working set that fits a cache into it, and the pages into the TLB */
    uint64_t p = chase_walk(ring, 0, nodes < steps ? nodes : steps);
    for (int r = 0; r < repeats; ++r) {
        int64_t t0 = gd_port_now_ns();
        p = chase_walk(ring, p, steps);
        ns_per_load[r] = (double)(gd_port_now_ns() - t0) / (double)steps;
    }
    (void)p;
    gd_port_aligned_free(ring);
    return GD_OK;
}

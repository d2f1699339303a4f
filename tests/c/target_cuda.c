/* target_cuda.c - the CUDA backend (csrc/cuda) as the conformance test's target, for a real
 * GPU or, built with GDT_EMULATED defined, for the CPU emulation in tools/cuda_emu. Its own
 * check: device indices the machine does not have are refused with a clear status.
 */
#include "conformance.h"

#include <stdio.h>
#include <string.h>

/* Defined in csrc/cuda/backend_cuda.cu with C linkage (its header is C++ only). */
const gd_backend *gd_cuda_backend(void);

#ifdef GDT_EMULATED
#define EMULATED 1
#else
#define EMULATED 0
#endif

/* Allocating on, or synchronizing, a GPU that is not there: GD_ERR_DEVICE_UNAVAILABLE with
 * a message naming it. */
static void check_missing_devices(void)
{
    const int missing[] = {gdt_be->device_count(), 999, -1};
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "cuda:%d", missing[i]);
        gd_error err;
        memset(&err, 0, sizeof err);
        void *p = NULL;
        int rc = gdt_be->alloc(&p, missing[i], 16, &err);
        CHECK(rc == GD_ERR_DEVICE_UNAVAILABLE && strstr(err.message, name), "alloc on %s: status %d, message '%s'",
              name, rc, err.message);
        memset(&err, 0, sizeof err);
        rc = gdt_be->synchronize(missing[i], &err);
        CHECK(rc == GD_ERR_DEVICE_UNAVAILABLE && strstr(err.message, name),
              "synchronize on %s: status %d, message '%s'", name, rc, err.message);
    }
}

static const gdt_section cuda_sections[] = {
    {"cuda: missing devices", check_missing_devices},
};

const gdt_target gdt_target_under_test = {
    .backend = gd_cuda_backend,
    .emulated = EMULATED,
    .sections = cuda_sections,
    .num_sections = sizeof cuda_sections / sizeof cuda_sections[0],
    .bench = NULL,
};

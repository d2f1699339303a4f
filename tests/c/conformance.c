/* conformance.c - the backend conformance test: every entry of a backend's gd_backend table
 * (csrc/gpudev.h) checked against plain host loops, on one device, through the table alone.
 * The same program checks the CPU backend natively, the CUDA backend through the CPU
 * emulation in tools/cuda_emu, and the CUDA backend on a real GPU; which one is decided by the
 * target file it is linked with (target_cpu.c or target_cuda.c).
 *
 *   conformance [--device N] [--only SECTION]...  the checks (of the sections named, where
 *                                               --only is given, once per section); exit 0 when
 *                                               all pass (or when the backend has no device
 *                                               here: "skipped")
 *   conformance --bench [tiny]                  timings of the backend, no checks
 *   conformance --self-test                     shows that the device-service checks fail on
 *                                               tables that break their contract
 *
 * Adding an operation: give it a row in the case table of its entry - unops[] / binops[] in
 * conformance_elementwise.c (with its float64 and int64 reference functions and tolerance),
 * the value rows in conformance_values.c for its special cases, redops[] in
 * conformance_reduce.c - and every shape, dtype, layout and aliasing case runs it. A new
 * shape is a row in the shape table of the entry. A new vtable entry gets a section: a
 * function in a conformance_*.c file, listed in sections[] below.
 *
 * Tolerances live beside the tables: exact where the result is exactly defined (copies,
 * integer arithmetic, correctly rounded IEEE operations, philox.h's uniforms), a few units in
 * the last place where the backend may use its own math library (exp, log, tanh, pow), and
 * summation error bounds for reductions and matrix products.
 */
#include "conformance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Order matters for the first: it sees the device before anything has used it. */
static const gdt_section sections[] = {
    {"fresh device", gdt_check_fresh_device},
    {"table", gdt_check_table},
    {"memory", gdt_check_memory},
    {"copies", gdt_check_copies},
    {"elementwise", gdt_check_elementwise},
    {"elementwise values", gdt_check_elementwise_values},
    {"astype", gdt_check_astype},
    {"reduce", gdt_check_reduce},
    {"gemm", gdt_check_gemm},
    {"permute", gdt_check_permute},
    {"arange", gdt_check_arange},
    {"random", gdt_check_random},
    {"philox.h", gdt_check_philox},
    {"refusals", gdt_check_refusals},
    {"device services", gdt_check_services},
    {"gather and nonzero", gdt_check_gather},
    {"selection", gdt_check_select},
    {"axpby", gdt_check_axpby},
    {"sliding windows", gdt_check_window},
};

/* Sections that run only when --only names them: samples of a section above, for slow runs. */
static const gdt_section on_request[] = {
    {"elementwise sample", gdt_check_elementwise_sample},
};

/* The sections named by --only (none: every section). */
enum { MAX_ONLY = 32 };
static const char *only[MAX_ONLY];
static int num_only;

static int selected(const char *name)
{
    for (int i = 0; i < num_only; i++)
        if (strcmp(only[i], name) == 0) return 1;
    return num_only == 0;
}

/* A section named by --only that neither table has: a typo would otherwise run nothing of it. */
static int unknown_section(const gdt_target *target)
{
    for (int i = 0; i < num_only; i++) {
        int found = 0;
        for (size_t j = 0; j < sizeof sections / sizeof sections[0]; j++) found |= !strcmp(only[i], sections[j].name);
        for (size_t j = 0; j < sizeof on_request / sizeof on_request[0]; j++)
            found |= !strcmp(only[i], on_request[j].name);
        for (int j = 0; j < target->num_sections; j++) found |= !strcmp(only[i], target->sections[j].name);
        if (!found) {
            fprintf(stderr, "--only '%s': no such section\n", only[i]);
            return 1;
        }
    }
    return 0;
}

static void run_section(const gdt_section *s)
{
    if (!selected(s->name)) return;
    long checks = gdt_checks, failures = gdt_failures;
    double t = gdt_now();
    s->run();
    printf("%-20s %-6s %6ld checks  %6.2f s\n", s->name, gdt_failures == failures ? "ok" : "FAILED",
           gdt_checks - checks, gdt_now() - t);
    fflush(stdout);
}

/* No device of this backend here (a CUDA build on a machine without a GPU or driver). */
static int skip_without_device(void)
{
    void *p = NULL;
    gd_error err = {0};
    int rc = gdt_be->alloc(&p, 0, 16, &err);
    printf("%s backend: no device found\n", gdt_be->name);
    if (rc != GD_ERR_DEVICE_UNAVAILABLE) {
        printf("FAIL: device_count() is 0 but alloc on device 0 returned %d, not GD_ERR_DEVICE_UNAVAILABLE\n", rc);
        return 1;
    }
    printf("skipped: no %s device (alloc says: %s)\n", gdt_be->name, err.message);
    return 0;
}

static int usage(const char *prog)
{
    fprintf(stderr, "usage: %s [--device N] [--only SECTION]... | [--device N] --bench [tiny] | --self-test\nsections:",
            prog);
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) fprintf(stderr, " '%s'", sections[i].name);
    for (int i = 0; i < gdt_target_under_test.num_sections; i++)
        fprintf(stderr, " '%s'", gdt_target_under_test.sections[i].name);
    fprintf(stderr, "\nonly with --only:");
    for (size_t i = 0; i < sizeof on_request / sizeof on_request[0]; i++) fprintf(stderr, " '%s'", on_request[i].name);
    fputc('\n', stderr);
    return 2;
}

int main(int argc, char **argv)
{
    const gdt_target *target = &gdt_target_under_test;
    int bench = 0, tiny = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--self-test") == 0) return gdt_self_test() ? 1 : 0;
        if (strcmp(argv[i], "--bench") == 0)
            bench = 1;
        else if (bench && strcmp(argv[i], "tiny") == 0)
            tiny = 1;
        else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
            gdt_dev = atoi(argv[++i]);
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc && num_only < MAX_ONLY)
            only[num_only++] = argv[++i];
        else
            return usage(argv[0]);
    }

    if (unknown_section(target)) return usage(argv[0]);
    gdt_be = target->backend();
    if (gdt_be->abi_version != GD_BACKEND_ABI_VERSION) {
        printf("FAIL: the %s table has ABI version %d, this test expects %d\n", gdt_be->name, gdt_be->abi_version,
               GD_BACKEND_ABI_VERSION);
        return 1;
    }
    int count = gdt_be->device_count();
    if (count == 0) return skip_without_device();
    if (gdt_dev < 0 || gdt_dev >= count) {
        fprintf(stderr, "--device %d: the %s backend has devices 0..%d\n", gdt_dev, gdt_be->name, count - 1);
        return 2;
    }
    if (bench) {
        if (target->emulated) {
            printf("--bench: this build emulates the device on the CPU; its timings mean nothing\n");
            return 2;
        }
        gdt_bench(tiny);
        if (!tiny && target->bench) target->bench();
        return gdt_failures ? 1 : 0;
    }

    printf("conformance of the %s backend on device %d of %d%s\n", gdt_be->name, gdt_dev, count,
           target->emulated ? " (emulated on the CPU)" : "");
    double t0 = gdt_now();
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) run_section(&sections[i]);
    for (int i = 0; i < target->num_sections; i++) run_section(&target->sections[i]);
    for (size_t i = 0; i < sizeof on_request / sizeof on_request[0]; i++)
        if (num_only) run_section(&on_request[i]);
    printf("%s backend: %ld checks (%ld of them results compared with a reference), %ld failed (%.1f s)\n",
           gdt_be->name, gdt_checks, gdt_compared, gdt_failures, gdt_now() - t0);
    if (gdt_checks == 0) {
        printf("FAIL: no checks ran%s\n", num_only ? " in the sections named by --only" : "");
        return 1;
    }
    return gdt_failures ? 1 : 0;
}

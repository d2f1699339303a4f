/* conformance_memory.c - the table itself, memory and copies: the entries every backend must
 * fill, alloc (0 bytes gives a usable non-NULL pointer, live blocks never overlap, an
 * impossible request fails with an out-of-memory status and a message and the allocator goes
 * on working), free (NULL is a no-op; stream-ordered on GPUs), and every copy entry with its
 * byte counts, pitches and devices.
 */
#include "conformance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *random_bytes(size_t n)
{
    unsigned char *p = gdt_host_bytes(n);
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)gdt_rand_u64();
    return p;
}

/* ------------------------------------------------------------------------------------------
 * the table
 * ---------------------------------------------------------------------------------------- */

void gdt_check_table(void)
{
    CHECK(gdt_be->abi_version == GD_BACKEND_ABI_VERSION, "abi_version %d", gdt_be->abi_version);
    CHECK(gdt_be->name && gdt_be->name[0], "the table has no name");
    int count = gdt_be->device_count();
    CHECK(count >= 1 && count == gdt_be->device_count(), "device_count %d, then %d", count, gdt_be->device_count());
    static const char *const names[] = {"alloc", "free", "copy_from_host", "copy_to_host", "copy_device",
                                        "copy_2d", "unary", "binary", "astype", "reduce", "gemm", "permute",
                                        "arange", "random", "gather_rows", "scatter_rows",
                                        "scatter_add_rows", "count_nonzero", "nonzero", "where", "argreduce",
                                        "axpby", "im2col", "col2im", "pool2d", "pool2d_backward"};
    const int present[] = {gdt_be->alloc != NULL, gdt_be->free != NULL, gdt_be->copy_from_host != NULL,
                           gdt_be->copy_to_host != NULL, gdt_be->copy_device != NULL, gdt_be->copy_2d != NULL,
                           gdt_be->unary != NULL, gdt_be->binary != NULL, gdt_be->astype != NULL,
                           gdt_be->reduce != NULL, gdt_be->gemm != NULL, gdt_be->permute != NULL,
                           gdt_be->arange != NULL, gdt_be->random != NULL, gdt_be->gather_rows != NULL,
                           gdt_be->scatter_rows != NULL, gdt_be->scatter_add_rows != NULL,
                           gdt_be->count_nonzero != NULL, gdt_be->nonzero != NULL, gdt_be->where != NULL,
                           gdt_be->argreduce != NULL, gdt_be->axpby != NULL, gdt_be->im2col != NULL,
                           gdt_be->col2im != NULL, gdt_be->pool2d != NULL, gdt_be->pool2d_backward != NULL};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        CHECK(present[i], "required entry %s is NULL", names[i]);
    if (gdt_be->synchronize) OK(gdt_be->synchronize(gdt_dev, &gdt_err)); /* optional */
}

/* ------------------------------------------------------------------------------------------
 * memory
 * ---------------------------------------------------------------------------------------- */

/* Blocks of these sizes are live at once; each holds its own bytes (no two overlap). */
static void check_live_blocks(void)
{
    static const size_t sizes[] = {1, 7, 64, 1000, (size_t)4 << 20, ((size_t)4 << 20) + 3, ((size_t)9 << 20) + 5};
    enum { N = sizeof sizes / sizeof sizes[0] };
    void *dev[N];
    unsigned char *host[N];
    for (int i = 0; i < N; i++) {
        dev[i] = gdt_alloc(sizes[i]);
        host[i] = random_bytes(sizes[i]);
        gdt_upload(dev[i], host[i], sizes[i]);
    }
    for (int i = 0; i < N; i++) {
        unsigned char *back = gdt_host_bytes(sizes[i]);
        gdt_download(back, dev[i], sizes[i]);
        CHECK(memcmp(back, host[i], sizes[i]) == 0, "block %d of %zu bytes does not hold what was copied in", i,
              sizes[i]);
        free(back);
        free(host[i]);
        gdt_free(dev[i], sizes[i]);
    }
}

/* A request no machine can meet: a status and a message naming the size; the process and
 * the allocator go on. */
static void check_out_of_memory(void)
{
    const size_t huge = (size_t)1 << 50; /* more than any device or host address space holds */
    void *p = NULL;
    gd_error err;
    memset(&err, 0, sizeof err);
    int rc = gdt_be->alloc(&p, gdt_dev, huge, &err);
    CHECK(rc == GD_ERR_HOST_OOM || rc == GD_ERR_DEVICE_OOM, "alloc of 1 PiB returned %d: %s", rc, err.message);
    CHECK(err.code == (gd_status)rc && strstr(err.message, "1.0 PiB") && strstr(err.message, "memory"),
          "alloc of 1 PiB: err.code %d, message '%s' (it should say out of memory and name the 1.0 PiB asked for)",
          (int)err.code, err.message);
    if (rc == GD_OK) gdt_be->free(p, gdt_dev, huge);
    else printf("  out of memory reported as: %s\n", err.message);

    unsigned char *host = random_bytes(1 << 20), *back = gdt_host_bytes(1 << 20);
    void *d = gdt_upload_new(host, 1 << 20);
    gdt_download(back, d, 1 << 20);
    CHECK(memcmp(host, back, 1 << 20) == 0, "a 1 MiB block after the failed alloc does not round-trip");
    gdt_free(d, 1 << 20);
    free(host);
    free(back);
}

/* free is stream-ordered on GPUs: memory that queued work still reads is not handed out (and
 * overwritten) before that work is done. On a synchronous backend this holds trivially. */
static void check_free_while_in_use(void)
{
    const int64_t n = 50 * 1000 * 1000;
    void *a = gdt_alloc((size_t)n * 4), *sum = gdt_alloc(8);
    gd_ewise ew = {.ndim = 1, .contiguous = 1, .size = n, .shape = {n}};
    gd_operand one, seven;
    memset(&one, 0, sizeof one);
    memset(&seven, 0, sizeof seven);
    one.scalar.f = 1.0;
    seven.scalar.f = 7.0;
    OK(gdt_be->unary(a, GD_COPY, GD_FLOAT32, &ew, &one, gdt_dev, &gdt_err));
    OK(gdt_be->reduce(sum, GD_FLOAT64, GD_RED_SUM, a, GD_FLOAT32, 1, n, 1, gdt_dev, &gdt_err));
    gdt_free(a, (size_t)n * 4);
    void *b = gdt_alloc((size_t)n * 4);
    OK(gdt_be->unary(b, GD_COPY, GD_FLOAT32, &ew, &seven, gdt_dev, &gdt_err));
    double s = 0;
    gdt_download(&s, sum, 8);
    CHECK(s == (double)n, "a sum whose input was freed and refilled behind it gave %.17g, not %lld", s, (long long)n);
    gdt_free(b, (size_t)n * 4);
    gdt_free(sum, 8);
    gdt_sync();
}

void gdt_check_memory(void)
{
    void *z = NULL;
    if (OK(gdt_be->alloc(&z, gdt_dev, 0, &gdt_err))) {
        CHECK(z != NULL, "alloc of 0 bytes gave NULL");
        gdt_be->free(z, gdt_dev, 0);
    }
    gdt_be->free(NULL, gdt_dev, 0);
    gdt_be->free(NULL, gdt_dev, 64);
    check_live_blocks();
    check_out_of_memory();
    check_free_while_in_use();
}

/* ------------------------------------------------------------------------------------------
 * copies
 * ---------------------------------------------------------------------------------------- */

typedef struct copy_2d_case {
    size_t dst_pitch, src_pitch, width, height;
} copy_2d_case;

static const copy_2d_case copy_2d_cases[] = {
    {17, 29, 13, 7},     /* both pitched, different pitches */
    {40, 40, 40, 20},    /* contiguous on both sides */
    {1200, 3000, 1000, 300},
    {13, 29, 13, 9},     /* contiguous destination, pitched source */
    {29, 13, 13, 9},     /* pitched destination, contiguous source */
    {64, 64, 33, 1},     /* one row */
    {17, 29, 0, 7},      /* nothing to copy */
    {17, 29, 13, 0},
};

static void check_copy_2d(void)
{
    for (size_t c = 0; c < sizeof copy_2d_cases / sizeof copy_2d_cases[0]; c++) {
        const copy_2d_case *k = &copy_2d_cases[c];
        size_t rows = k->height ? k->height : 1;
        size_t src_bytes = rows * k->src_pitch, dst_bytes = rows * k->dst_pitch;
        unsigned char *src = random_bytes(src_bytes), *dst = random_bytes(dst_bytes), *want = gdt_host_bytes(dst_bytes);
        unsigned char *got = gdt_host_bytes(dst_bytes);
        memcpy(want, dst, dst_bytes); /* bytes outside the rows keep what was there */
        for (size_t r = 0; r < k->height; r++) memcpy(want + r * k->dst_pitch, src + r * k->src_pitch, k->width);
        void *dsrc = gdt_upload_new(src, src_bytes), *ddst = gdt_upload_new(dst, dst_bytes);
        if (OK(gdt_be->copy_2d(ddst, k->dst_pitch, dsrc, k->src_pitch, k->width, k->height, gdt_dev, &gdt_err))) {
            gdt_download(got, ddst, dst_bytes);
            size_t bad = 0;
            while (bad < dst_bytes && got[bad] == want[bad]) bad++;
            CHECK(bad == dst_bytes, "copy_2d of %zu rows of %zu bytes, pitches %zu <- %zu: byte %zu is %d, expected %d",
                  k->height, k->width, k->dst_pitch, k->src_pitch, bad, bad < dst_bytes ? got[bad] : 0,
                  bad < dst_bytes ? want[bad] : 0);
        }
        gdt_free(dsrc, src_bytes);
        gdt_free(ddst, dst_bytes);
        free(src), free(dst), free(want), free(got);
    }
}

/* With a second device: device -> other device -> device. */
static void check_peer_copies(const unsigned char *host, size_t n, void *d1)
{
    int count = gdt_be->device_count();
    if (count < 2) {
        printf("  one device: copies between devices not checked\n");
        return;
    }
    int other = (gdt_dev + 1) % count;
    void *q = NULL;
    unsigned char *back = gdt_host_bytes(n);
    if (OK(gdt_be->alloc(&q, other, n, &gdt_err))) {
        void *d2 = gdt_alloc(n);
        OK(gdt_be->copy_device(q, other, d1, gdt_dev, n, &gdt_err));
        OK(gdt_be->copy_device(d2, gdt_dev, q, other, n, &gdt_err));
        gdt_download(back, d2, n);
        CHECK(memcmp(back, host, n) == 0, "device %d -> device %d -> device %d round trip differs", gdt_dev, other,
              gdt_dev);
        OK(gdt_be->copy_to_host(back, q, other, n, &gdt_err));
        CHECK(memcmp(back, host, n) == 0, "copy_to_host from device %d differs", other);
        gdt_be->free(q, other, n);
        gdt_free(d2, n);
    }
    free(back);
}

void gdt_check_copies(void)
{
    const size_t n = 1000003;
    unsigned char *host = random_bytes(n), *back = gdt_host_bytes(n);
    void *d1 = gdt_upload_new(host, n), *d2 = gdt_alloc(n);
    OK(gdt_be->copy_device(d2, gdt_dev, d1, gdt_dev, n, &gdt_err));
    gdt_download(back, d2, n);
    CHECK(memcmp(host, back, n) == 0, "host -> device -> device -> host round trip differs");

    /* zero bytes: nothing moves, nothing fails */
    OK(gdt_be->copy_from_host(d1, gdt_dev, back, 0, &gdt_err));
    OK(gdt_be->copy_to_host(back, d1, gdt_dev, 0, &gdt_err));
    OK(gdt_be->copy_device(d2, gdt_dev, d1, gdt_dev, 0, &gdt_err));
    gdt_download(back, d1, n);
    CHECK(memcmp(host, back, n) == 0, "a copy of 0 bytes changed the buffer");

    /* part of a buffer, at an odd offset */
    OK(gdt_be->copy_device((char *)d2 + 3, gdt_dev, (char *)d1 + 1001, gdt_dev, 777, &gdt_err));
    gdt_download(back, d2, n);
    CHECK(memcmp(back + 3, host + 1001, 777) == 0 && memcmp(back, host, 3) == 0 && back[780] == host[780],
          "copy_device of 777 bytes at offsets 1001 -> 3");

    check_copy_2d();
    check_peer_copies(host, n, d1);
    gdt_free(d1, n);
    gdt_free(d2, n);
    free(host);
    free(back);
}

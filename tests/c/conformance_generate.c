/* conformance_generate.c - the entries that make values: astype (every dtype pair, C casts
 * with float -> integer truncating toward zero, int64 -> int32 keeping the low bits), arange (computed in double, then rounded;
 * int64 wrapping), random (element by element against csrc/philox.h itself), and philox.h
 * against Random123's published vectors and an independent implementation.
 */
#include "conformance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "philox.h"

/* ------------------------------------------------------------------------------------------
 * astype: exact. float -> int64 (int32) of NaN, infinities and values outside the integer's
 * range is undefined in C; both backends give INT64_MIN (INT32_MIN) there, what NumPy gives on
 * x86-64.
 * ---------------------------------------------------------------------------------------- */

static int64_t to_int64(double v) { return v >= -0x1p63 && v < 0x1p63 ? (int64_t)v : INT64_MIN; }
static int64_t to_int32(double v) { return v >= -0x1p31 && v < 0x1p31 ? (int64_t)v : INT32_MIN; }

static void check_astype_pair(gd_dtype from, gd_dtype to, int64_t n)
{
    void *in = gdt_host(n, from), *want = gdt_ref_new(n, to);
    gdt_fill_edge(in, from, n);
    for (int64_t i = 0; i < n; i++) {
        if (to == GD_BOOL) /* nonzero (NaN too) is true */
            ((double *)want)[i] = gdt_is_int(from) ? gdt_geti(in, from, i) != 0 : gdt_getf(in, from, i) != 0.0;
        else if (gdt_is_int(to) && (gdt_is_int(from) || from == GD_BOOL))
            ((int64_t *)want)[i] = gdt_wrap(to, gdt_geti(in, from, i));
        else if (gdt_is_int(to))
            ((int64_t *)want)[i] = to == GD_INT32 ? to_int32(gdt_getf(in, from, i)) : to_int64(gdt_getf(in, from, i));
        else if (gdt_is_int(from)) /* one rounding, straight from the integer */
            ((double *)want)[i] = to == GD_FLOAT32 ? (double)(float)gdt_geti(in, from, i) : (double)gdt_geti(in, from, i);
        else
            ((double *)want)[i] = to == GD_FLOAT32 ? (double)(float)gdt_getf(in, from, i) : gdt_getf(in, from, i);
    }
    void *din = gdt_upload_new(in, (size_t)n * gd_dtype_size(from)), *dout = gdt_alloc((size_t)n * gd_dtype_size(to));
    if (OK(gdt_be->astype(dout, to, din, from, n, gdt_dev, &gdt_err)))
        EXPECT(dout, to, n, want, GDT_EXACT, "astype %s -> %s, n %lld", gdt_dtype_name(from), gdt_dtype_name(to),
               (long long)n);
    gdt_free(din, (size_t)n * gd_dtype_size(from));
    gdt_free(dout, (size_t)n * gd_dtype_size(to));
    free(in);
    free(want);
}

/* Bool bytes other than 0 and 1 (memory shared with NumPy or DLPack may hold them) read as
 * true, as NumPy reads them, in casts, ~, comparisons and & | ^. */
static void check_bool_bytes(void)
{
    enum { N = 1000 };
    static const uint8_t cycle[8] = {0, 1, 2, 255, 128, 127, 64, 3};
    uint8_t raw[N], canon[N], got[N], want[N];
    for (int i = 0; i < N; i++) {
        raw[i] = cycle[i % 8];
        canon[i] = (uint8_t)((i / 8) % 2);
    }
    void *draw = gdt_upload_new(raw, N), *dcanon = gdt_upload_new(canon, N), *dout = gdt_alloc(N * 8);
    for (int to = 0; to < GD_NUM_DTYPES; to++) {
        if (to == GD_BOOL) continue;
        if (!OK(gdt_be->astype(dout, (gd_dtype)to, draw, GD_BOOL, N, gdt_dev, &gdt_err))) continue;
        static char host[N * 8];
        int bad = -1;
        gdt_download(host, dout, N * gd_dtype_size((gd_dtype)to));
        for (int i = 0; i < N && bad < 0; i++)
            if (gdt_getf(host, (gd_dtype)to, i) != (raw[i] != 0)) bad = i;
        CHECK(bad < 0, "astype bool byte %d -> %s is not %d", bad < 0 ? 0 : raw[bad], gdt_dtype_name((gd_dtype)to),
              bad < 0 ? 0 : raw[bad] != 0);
    }
    gd_ewise ew = {.ndim = 1, .contiguous = 1, .size = N, .shape = {N}, .out_strides = {1}};
    gd_operand a, b, one;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    memset(&one, 0, sizeof one);
    a.data = draw;
    a.strides[0] = 1;
    b.data = dcanon;
    b.strides[0] = 1;
    one.scalar.i = 1;
    if (OK(gdt_be->unary(dout, GD_INVERT, GD_BOOL, &ew, &a, gdt_dev, &gdt_err))) {
        gdt_download(got, dout, N);
        int bad = -1;
        for (int i = 0; i < N && bad < 0; i++)
            if (got[i] != (raw[i] == 0)) bad = i;
        CHECK(bad < 0, "~ of bool byte %d gave %d", bad < 0 ? 0 : raw[bad], bad < 0 ? 0 : got[bad]);
    }
    static const gd_binop ops[] = {GD_EQ, GD_NE, GD_LT, GD_GT, GD_AND, GD_OR, GD_XOR};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        for (int scalar = 0; scalar < 2; scalar++) {
            if (!OK(gdt_be->binary(dout, ops[k], GD_BOOL, &ew, &a, scalar ? &one : &b, gdt_dev, &gdt_err))) continue;
            gdt_download(got, dout, N);
            int bad = -1;
            for (int i = 0; i < N && bad < 0; i++) {
                const int x = raw[i] != 0, y = scalar ? 1 : canon[i];
                switch (ops[k]) {
                case GD_EQ: want[i] = (uint8_t)(x == y); break;
                case GD_NE: want[i] = (uint8_t)(x != y); break;
                case GD_LT: want[i] = (uint8_t)(x < y); break;
                case GD_GT: want[i] = (uint8_t)(x > y); break;
                case GD_AND: want[i] = (uint8_t)(x & y); break;
                case GD_OR: want[i] = (uint8_t)(x | y); break;
                default: want[i] = (uint8_t)(x ^ y); break;
                }
                if (got[i] != want[i]) bad = i;
            }
            CHECK(bad < 0, "%s of bool byte %d and %s gave %d, not %d", gd_binop_table[ops[k]].name,
                  bad < 0 ? 0 : raw[bad], scalar ? "the scalar True" : "a bool", bad < 0 ? 0 : got[bad],
                  bad < 0 ? 0 : want[bad]);
        }
    gdt_free(draw, N);
    gdt_free(dcanon, N);
    gdt_free(dout, N * 8);
}

void gdt_check_astype(void)
{
    check_bool_bytes();
    static const int64_t sizes[] = {0, 1, 7, 300001};
    for (int from = 0; from < GD_NUM_DTYPES; from++)
        for (int to = 0; to < GD_NUM_DTYPES; to++)
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
                check_astype_pair((gd_dtype)from, (gd_dtype)to, sizes[s]);

    /* truncation toward zero and the out-of-range convention, written out */
    static const double in[8] = {NAN, INFINITY, -INFINITY, 1e19, -9.7, 2.7, -0.5, -0x1p63};
    static const int64_t want[8] = {INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN, -9, 2, 0, INT64_MIN};
    float in32[8];
    for (int i = 0; i < 8; i++) in32[i] = (float)in[i];
    void *d64 = gdt_upload_new(in, sizeof in), *d32 = gdt_upload_new(in32, sizeof in32), *out = gdt_alloc(64);
    if (OK(gdt_be->astype(out, GD_INT64, d64, GD_FLOAT64, 8, gdt_dev, &gdt_err)))
        EXPECT(out, GD_INT64, 8, want, GDT_EXACT, "float64 -> int64 of NaN, inf, -inf, 1e19, -9.7, 2.7, -0.5, -2^63");
    if (OK(gdt_be->astype(out, GD_INT64, d32, GD_FLOAT32, 8, gdt_dev, &gdt_err)))
        EXPECT(out, GD_INT64, 8, want, GDT_EXACT, "float32 -> int64 of NaN, inf, -inf, 1e19, -9.7, 2.7, -0.5, -2^63");
    gdt_free(d64, sizeof in);
    gdt_free(d32, sizeof in32);
    gdt_free(out, 64);
}

/* ------------------------------------------------------------------------------------------
 * arange: exact. out[i] = start + i * step, float dtypes in double then rounded once (a
 * float32 accumulation, or a fused multiply-add, would differ); int64 wraps (int32 values are
 * in range: the core checks them).
 * ---------------------------------------------------------------------------------------- */

typedef struct arange_row {
    gd_dtype dtype;
    double start, step; /* float dtypes */
    int64_t istart, istep; /* integers */
    int64_t n;
} arange_row;

static const arange_row arange_rows[] = {
    {GD_FLOAT32, -3.25, 0.1, 0, 0, 200001}, {GD_FLOAT64, -3.25, 0.1, 0, 0, 200001},
    {GD_FLOAT32, 0.1, 0.1, 0, 0, 100003},   {GD_FLOAT64, 1e15, 0.3, 0, 0, 1001},
    {GD_FLOAT32, 5, -0.25, 0, 0, 7},        {GD_FLOAT64, 0, 1, 0, 0, 1},
    {GD_FLOAT32, 1, 1, 0, 0, 0},            {GD_INT64, 0, 0, INT64_MAX - 5, 3, 200001},
    {GD_INT64, 0, 0, -5, 3, 100003},        {GD_INT64, 0, 0, 7, -2, 7},
    {GD_INT64, 0, 0, 0, 0, 5},              {GD_INT32, 0, 0, -5, 3, 100003},
    {GD_INT32, 0, 0, INT32_MAX - 20, 3, 7},  {GD_INT32, 0, 0, INT32_MIN + 12, -2, 7},
};

void gdt_check_arange(void)
{
    for (size_t r = 0; r < sizeof arange_rows / sizeof arange_rows[0]; r++) {
        const arange_row *a = &arange_rows[r];
        gd_dtype t = a->dtype;
        void *want = gdt_ref_new(a->n, t);
        for (int64_t i = 0; i < a->n; i++) {
            if (gdt_is_int(t))
                ((int64_t *)want)[i] = (int64_t)((uint64_t)a->istart + (uint64_t)i * (uint64_t)a->istep);
            else
                ((double *)want)[i] = a->start + (double)i * a->step;
        }
        gd_scalar start, step;
        if (gdt_is_int(t))
            start.i = a->istart, step.i = a->istep;
        else
            start.f = a->start, step.f = a->step;
        void *out = gdt_alloc((size_t)a->n * gd_dtype_size(t));
        if (OK(gdt_be->arange(out, t, start, step, a->n, gdt_dev, &gdt_err)))
            EXPECT(out, t, a->n, want, GDT_EXACT, "arange %s row %zu, n %lld", gdt_dtype_name(t), r, (long long)a->n);
        gdt_free(out, (size_t)a->n * gd_dtype_size(t));
        free(want);
    }
}

/* ------------------------------------------------------------------------------------------
 * random: uniforms exact; normals within what a device's own double log/cos/sin may change
 * (CUDA: 1-2 ulp each). Box-Muller results are below 8.6 in magnitude, so 1e-14 absolute
 * covers a few float64 ulps of them; float32 normals may round the other way (1 ulp).
 * ---------------------------------------------------------------------------------------- */

static void check_random_case(gd_dtype t, int normal, int64_t n, uint64_t seed, uint64_t offset)
{
    const int64_t per = GD_PHILOX_PER_BLOCK(t == GD_FLOAT32);
    double *want = gdt_ref_new(n, t);
    for (int64_t b = 0; b * per < n; b++) {
        float f[4];
        double d[2];
        if (t == GD_FLOAT32)
            gd_philox_block_f32(f, normal, offset + (uint64_t)b, seed);
        else
            gd_philox_block_f64(d, normal, offset + (uint64_t)b, seed);
        for (int64_t j = 0; j < per && b * per + j < n; j++) want[b * per + j] = t == GD_FLOAT32 ? f[j] : d[j];
    }
    void *out = gdt_alloc((size_t)n * gd_dtype_size(t));
    if (OK(gdt_be->random(out, t, normal ? GD_RAND_NORMAL : GD_RAND_UNIFORM, seed, offset, n, gdt_dev, &gdt_err))) {
        gdt_tol tol = {!normal ? 0 : t == GD_FLOAT32 ? 1 : 0, normal && t == GD_FLOAT64 ? 1e-14 : 0, NULL};
        EXPECT(out, t, n, want, tol, "random %s %s n %lld seed %#llx offset %#llx", gdt_dtype_name(t),
               normal ? "normal" : "uniform", (long long)n, (unsigned long long)seed, (unsigned long long)offset);
        if (n > 100000) { /* and the numbers look like what they claim to be */
            double *got = gdt_host(n, GD_FLOAT64), sum = 0, sumsq = 0, lo = INFINITY, hi = -INFINITY;
            float *g32 = (float *)got;
            gdt_download(got, out, (size_t)n * gd_dtype_size(t));
            for (int64_t i = 0; i < n; i++) {
                double v = t == GD_FLOAT32 ? g32[i] : got[i];
                sum += v, sumsq += v * v;
                lo = v < lo ? v : lo, hi = v > hi ? v : hi;
            }
            double mean = sum / (double)n, var = sumsq / (double)n - mean * mean;
            if (normal)
                CHECK(fabs(mean) < 0.01 && fabs(var - 1) < 0.01, "normal %s: mean %g var %g", gdt_dtype_name(t), mean,
                      var);
            else
                CHECK(fabs(mean - 0.5) < 0.01 && fabs(var - 1.0 / 12) < 0.01 && lo >= 0 && hi < 1,
                      "uniform %s: mean %g var %g range [%g, %g]", gdt_dtype_name(t), mean, var, lo, hi);
            free(got);
        }
    }
    gdt_free(out, (size_t)n * gd_dtype_size(t));
    free(want);
}

void gdt_check_random(void)
{
    static const int64_t sizes[] = {0, 1, 3, 5, 7, 1001, 1000003};
    for (int dt = GD_FLOAT32; dt <= GD_FLOAT64; dt++)
        for (int normal = 0; normal < 2; normal++) {
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
                check_random_case((gd_dtype)dt, normal, sizes[s], 0x1234567890abcdefull + s, 1000 + s);
            /* the counter's low word carries into the high one, and the counter wraps */
            check_random_case((gd_dtype)dt, normal, 4099, 42, 0xfffffffdull);
            check_random_case((gd_dtype)dt, normal, 17, 7, UINT64_MAX - 1);
        }
}

/* ------------------------------------------------------------------------------------------
 * philox.h itself (host only)
 * ---------------------------------------------------------------------------------------- */

/* Philox4x32-R written from the paper's description with a full 4-word counter: key schedule
 * bumped before rounds 2..R, unlike philox.h's bump after every round. */
static void ref_philox4x32(uint32_t out[4], const uint32_t ctr_in[4], const uint32_t key_in[2], int rounds)
{
    uint32_t c[4] = {ctr_in[0], ctr_in[1], ctr_in[2], ctr_in[3]}, k[2] = {key_in[0], key_in[1]};
    for (int r = 0; r < rounds; r++) {
        if (r > 0) {
            k[0] += 0x9E3779B9u;
            k[1] += 0xBB67AE85u;
        }
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t nx[4] = {(uint32_t)(p1 >> 32) ^ c[1] ^ k[0], (uint32_t)p1, (uint32_t)(p0 >> 32) ^ c[3] ^ k[1],
                          (uint32_t)p0};
        memcpy(c, nx, sizeof c);
    }
    memcpy(out, c, sizeof c);
}

void gdt_check_philox(void)
{
    /* Random123 kat_vectors, "philox4x32 10": counter[4] key[2] -> output[4] */
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e,
         0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb,
         0x5001e420, 0x24126ea1},
    };
    for (int v = 0; v < 3; v++) {
        uint32_t out[4];
        ref_philox4x32(out, kat[v], kat[v] + 4, 10);
        CHECK(memcmp(out, kat[v] + 6, sizeof out) == 0, "reference Philox misses Random123 vector %d", v);
    }
    /* philox.h's counter is (lo, hi, 0, 0): the first vector applies directly */
    uint32_t w[4];
    gd_philox4x32_10(w, 0, 0);
    CHECK(w[0] == 0x6627e8d5u && w[1] == 0xe169c58du && w[2] == 0xbc57ac4cu && w[3] == 0x9b00dbd8u,
          "philox(0, 0) = %08x %08x %08x %08x", w[0], w[1], w[2], w[3]);
    int mismatches = 0;
    for (int t = 0; t < 10000; t++) {
        uint64_t counter = t < 5000 ? gdt_rand_u64() : (uint64_t)t, seed = t % 3 == 0 ? (uint64_t)t : gdt_rand_u64();
        uint32_t ctr[4] = {(uint32_t)counter, (uint32_t)(counter >> 32), 0, 0};
        uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)}, ref[4];
        ref_philox4x32(ref, ctr, key, 10);
        gd_philox4x32_10(w, counter, seed);
        mismatches += memcmp(ref, w, sizeof w) != 0;
    }
    CHECK(mismatches == 0, "philox.h differs from the reference on %d of 10000 (counter, seed) pairs", mismatches);
}

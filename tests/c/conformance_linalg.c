/* conformance_linalg.c - the gemm and permute entries. gemm: batched row-major products in
 * float32, float64 and int64 with odd sizes, k = 0, empty products, broadcast batches (stride
 * 0), padded batch strides, transposed operands and leading dimensions longer than a row, and
 * results that must overwrite whatever the output held. permute: every permutation of every
 * rank from 0 to 5, odd and empty shapes, and all 16 axes.
 */
#include "conformance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------
 * gemm
 *
 * Tolerance: for any order of summation, with or without fused multiply-adds, a dot product
 * of length k is within (k + 1) u sum |a_il b_lj| of the exact one (u = 2^-24 for float32,
 * 2^-53 for float64); the reference is computed in long double. int64 products are exact,
 * wrapping as NumPy's do, over edge values (INT64_MIN, INT64_MAX, ...).
 * ---------------------------------------------------------------------------------------- */

typedef struct gemm_case {
    int64_t batch, m, n, k;
    int broadcast; /* 1: a is one matrix for every batch (stride 0), 2: b is, 3: both */
    int padded;    /* batch strides larger than a matrix: the gaps must stay untouched */
    int trans;     /* 1: a is stored transposed, 2: b is, 3: both */
    int ld_pad;    /* stored rows this many elements longer than the matrix needs */
} gemm_case;

static const gemm_case gemm_cases[] = {
    {1, 1, 1, 1, 0, 0, 0, 0},      {1, 7, 5, 3, 0, 0, 0, 0},      {1, 33, 17, 65, 0, 0, 0, 0},
    {1, 37, 45, 19, 0, 0, 0, 0},   {1, 72, 73, 74, 0, 0, 0, 0},   {1, 257, 129, 300, 0, 0, 0, 0},
    {1, 1, 300, 1, 0, 0, 0, 0},    {1, 300, 1, 7, 0, 0, 0, 0},    {1, 1, 1, 1000, 0, 0, 0, 0},
    {5, 4, 6, 3, 0, 0, 0, 0},      {2, 65, 33, 129, 0, 0, 0, 0},  {7, 9, 11, 13, 1, 0, 0, 0},
    {6, 9, 11, 13, 2, 0, 0, 0},    {3, 37, 45, 19, 1, 0, 0, 0},   {4, 8, 1, 300, 2, 0, 0, 0},
    {5, 6, 7, 8, 3, 0, 0, 0},      {300, 5, 7, 9, 0, 0, 0, 0},    {8, 130, 120, 110, 0, 0, 0, 0},
    {9, 70, 75, 80, 1, 0, 0, 0},   {4, 5, 6, 7, 0, 1, 0, 0},      {3, 5, 7, 0, 0, 0, 0, 0},
    {2, 5, 6, 0, 0, 1, 0, 0},      {1, 0, 5, 3, 0, 0, 0, 0},      {2, 5, 0, 3, 0, 0, 0, 0},
    {0, 5, 6, 7, 0, 0, 0, 0},
    /* transposed operands (a @ a.T), leading dimensions of sliced views (a[:, :k]) */
    {1, 37, 45, 19, 0, 0, 1, 0},   {1, 37, 45, 19, 0, 0, 2, 0},   {1, 37, 45, 19, 0, 0, 3, 0},
    {1, 72, 73, 74, 0, 0, 2, 3},   {1, 1, 300, 7, 0, 0, 3, 0},    {1, 300, 1, 7, 0, 0, 1, 2},
    {5, 9, 11, 13, 0, 0, 1, 1},    {4, 8, 6, 5, 2, 1, 2, 2},      {6, 9, 11, 13, 1, 0, 3, 5},
    {1, 33, 17, 65, 0, 0, 0, 4},   {3, 5, 7, 0, 0, 0, 3, 1},
    /* above the CPU's size for splitting a product (threads.h): panels of rows (m >= n) and of
     * columns, edges off the panel alignment, every transpose, padded rows, a few in a batch */
    {1, 300, 70, 130, 0, 0, 0, 0}, {1, 300, 70, 130, 0, 0, 3, 2}, {1, 45, 601, 100, 0, 0, 1, 0},
    {1, 45, 601, 100, 0, 0, 2, 3}, {2, 299, 71, 120, 0, 1, 1, 1}, {3, 40, 530, 128, 2, 0, 3, 0},
};

/* One stored operand: rows x cols per matrix (the transpose of the matrix when stored
 * transposed), ld elements per stored row, `stride` elements per matrix of the batch. */
typedef struct stored {
    int trans;
    int64_t rows, cols, ld, stride, n;
} stored;

static stored store_of(int trans, int64_t r, int64_t c, int ld_pad, int bcast, int padded, int64_t batch)
{
    stored x = {trans, trans ? c : r, trans ? r : c, 0, 0, 0};
    x.ld = (x.cols > 1 ? x.cols : 1) + ld_pad;
    x.stride = bcast ? 0 : x.rows * x.ld + (padded ? 3 : 0);
    x.n = batch > 0 && x.rows > 0 ? (batch - 1) * x.stride + (x.rows - 1) * x.ld + x.cols : 0;
    return x;
}

/* element (i, j) of matrix p */
static int64_t at(const stored *x, int64_t p, int64_t i, int64_t j)
{
    return p * x->stride + (x->trans ? j * x->ld + i : i * x->ld + j);
}

static void gemm_reference(const gemm_case *g, gd_dtype t, const void *a, const stored *sa, const void *b,
                           const stored *sb, void *want, double *slack, int64_t sc)
{
    const double u = t == GD_FLOAT32 ? 0x1p-24 : 0x1p-53;
    for (int64_t p = 0; p < g->batch; p++)
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++) {
                long double s = 0, mag = 0;
                uint64_t is = 0;
                for (int64_t l = 0; l < g->k; l++) {
                    if (gdt_is_int(t)) {
                        is += (uint64_t)gdt_geti(a, t, at(sa, p, i, l)) * (uint64_t)gdt_geti(b, t, at(sb, p, l, j));
                        continue;
                    }
                    long double x = (long double)gdt_getf(a, t, at(sa, p, i, l)) * gdt_getf(b, t, at(sb, p, l, j));
                    s += x;
                    mag += fabsl(x);
                }
                /* int32 products wrap at 32 bits: the low bits of the int64 sum */
                if (gdt_is_int(t)) ((int64_t *)want)[p * sc + i * g->n + j] = gdt_wrap(t, (int64_t)is);
                else ((double *)want)[p * sc + i * g->n + j] = (double)s;
                slack[p * sc + i * g->n + j] = (double)(g->k + 1) * u * (double)mag;
            }
}

static void check_gemm_case(const gemm_case *g, gd_dtype t)
{
    const size_t es = gd_dtype_size(t);
    const stored sa = store_of(g->trans & 1, g->m, g->k, g->ld_pad, g->broadcast & 1, g->padded, g->batch);
    const stored sb = store_of((g->trans & 2) != 0, g->k, g->n, g->ld_pad, g->broadcast & 2, g->padded, g->batch);
    const int64_t sc = g->m * g->n + (g->padded ? 3 : 0);
    /* 4 elements past the last product: they, too, must stay untouched */
    const int64_t nc = (g->batch > 0 ? (g->batch - 1) * sc + g->m * g->n : 0) + 4;
    void *a = gdt_host(sa.n, t), *b = gdt_host(sb.n, t), *c = gdt_host(nc, t);
    if (gdt_is_int(t)) {
        gdt_fill_edge(a, t, sa.n);
        gdt_fill_edge(b, t, sb.n);
    } else {
        gdt_fill_normal(a, t, sa.n, 1.0);
        gdt_fill_normal(b, t, sb.n, 1.0);
    }
    memset(c, 0xff, (size_t)nc * es); /* NaN (-1 in int64): the products must replace it, the rest keep it */
    void *want = gdt_ref_new(nc, t);
    double *slack = calloc((size_t)nc, sizeof(double));
    for (int64_t i = 0; i < nc; i++) { /* gaps keep their value */
        if (gdt_is_int(t)) ((int64_t *)want)[i] = -1;
        else ((double *)want)[i] = gdt_getf(c, t, i);
    }
    gemm_reference(g, t, a, &sa, b, &sb, want, slack, sc);
    void *da = gdt_upload_new(a, (size_t)sa.n * es), *db = gdt_upload_new(b, (size_t)sb.n * es);
    void *dc = gdt_upload_new(c, (size_t)nc * es);
    gd_matrix ma = {da, sa.trans, sa.ld, sa.stride}, mb = {db, sb.trans, sb.ld, sb.stride};
    if (OK(gdt_be->gemm(dc, t, &ma, &mb, g->batch, g->m, g->n, g->k, sc, gdt_dev, &gdt_err))) {
        gdt_tol tol = {0, 0, slack};
        EXPECT(dc, t, nc, want, tol,
               "gemm %s batch %lld (%lld, %lld) @ (%lld, %lld), trans %d, ld %lld %lld, strides %lld %lld %lld",
               gdt_dtype_name(t), (long long)g->batch, (long long)g->m, (long long)g->k, (long long)g->k,
               (long long)g->n, g->trans, (long long)sa.ld, (long long)sb.ld, (long long)sa.stride,
               (long long)sb.stride, (long long)sc);
    }
    gdt_free(da, (size_t)sa.n * es);
    gdt_free(db, (size_t)sb.n * es);
    gdt_free(dc, (size_t)nc * es);
    free(a), free(b), free(c), free(want), free(slack);
}

void gdt_check_gemm(void)
{
    for (int dt = 0; dt < GD_NUM_DTYPES; dt++) {
        if (dt == GD_BOOL) continue;
        for (size_t i = 0; i < sizeof gemm_cases / sizeof gemm_cases[0]; i++)
            check_gemm_case(&gemm_cases[i], (gd_dtype)dt);
    }
}

/* ------------------------------------------------------------------------------------------
 * permute: exact (only bits move)
 * ---------------------------------------------------------------------------------------- */

typedef struct permute_case {
    int ndim;
    int64_t shape[GD_MAX_NDIM];
    int perm[GD_MAX_NDIM];
} permute_case;

/* odd and large shapes, beside the exhaustive small ones below */
static const permute_case permute_cases[] = {
    {2, {37, 53}, {1, 0}},
    {2, {1, 9}, {1, 0}},
    {2, {1, 1}, {1, 0}},
    {2, {67, 131}, {1, 0}},
    {2, {700, 450}, {1, 0}},
    {3, {4, 33, 65}, {0, 2, 1}},
    {3, {2, 1, 3}, {2, 1, 0}},
    {3, {0, 4, 5}, {2, 1, 0}},
    {3, {4, 300, 201}, {0, 2, 1}},
    {3, {300, 4, 201}, {1, 0, 2}},
    {3, {72, 73, 74}, {2, 0, 1}},
    {3, {72, 73, 74}, {1, 2, 0}},
    {3, {72, 73, 74}, {2, 1, 0}},
    {4, {3, 1, 4, 5}, {3, 2, 1, 0}},
    {4, {2, 3, 4, 5}, {0, 2, 3, 1}},
    {4, {6, 5, 4, 3}, {2, 3, 0, 1}},
    {4, {3, 4, 5, 6}, {2, 0, 3, 1}},
    {8, {2, 1, 3, 1, 2, 2, 1, 3}, {7, 6, 5, 4, 3, 2, 1, 0}},
    {16, {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, {3, 15, 0, 7, 12, 1, 9, 4, 14, 2, 11, 6, 8, 13, 5, 10}},
};

static void check_permutation(gd_dtype t, int nd, const int64_t *shape, const int *perm)
{
    int64_t n = 1, stride[GD_MAX_NDIM], oshape[GD_MAX_NDIM];
    for (int k = nd - 1; k >= 0; k--) stride[k] = n, n *= shape[k];
    for (int k = 0; k < nd; k++) oshape[k] = shape[perm[k]];
    void *in = gdt_host(n, t), *want = gdt_ref_new(n, t);
    gdt_fill_edge(in, t, n);
    for (int64_t i = 0; i < n; i++) {
        int64_t rest = i, off = 0;
        for (int k = nd - 1; k >= 0; k--) {
            off += (rest % oshape[k]) * stride[perm[k]];
            rest /= oshape[k];
        }
        if (gdt_is_int(t))
            ((int64_t *)want)[i] = gdt_geti(in, t, off);
        else
            ((double *)want)[i] = gdt_getf(in, t, off);
    }
    size_t bytes = (size_t)n * gd_dtype_size(t);
    void *din = gdt_upload_new(in, bytes), *dout = gdt_alloc(bytes);
    if (OK(gdt_be->permute(dout, t, din, nd, shape, perm, gdt_dev, &gdt_err))) {
        char desc[160];
        int len = snprintf(desc, sizeof desc, "permute %s, %d axes", gdt_dtype_name(t), nd);
        for (int k = 0; k < nd && len < (int)sizeof desc - 8; k++)
            len += snprintf(desc + len, sizeof desc - (size_t)len, "%s%lld", k ? "," : " shape ", (long long)shape[k]);
        for (int k = 0; k < nd && len < (int)sizeof desc - 8; k++)
            len += snprintf(desc + len, sizeof desc - (size_t)len, "%s%d", k ? "," : " perm ", perm[k]);
        EXPECT(dout, t, n, want, GDT_EXACT, "%s", desc);
    }
    gdt_free(din, bytes);
    gdt_free(dout, bytes);
    free(in);
    free(want);
}

/* Every permutation of 0..nd-1, in lexicographic order, with the shape (5, 7, 9, 4, 3). */
static void check_all_permutations(gd_dtype t, int nd)
{
    static const int64_t shape[5] = {5, 7, 9, 4, 3};
    int perm[5];
    for (int k = 0; k < nd; k++) perm[k] = k;
    for (;;) {
        check_permutation(t, nd, shape, perm);
        int i = nd - 2;
        while (i >= 0 && perm[i] > perm[i + 1]) i--;
        if (i < 0) return;
        int j = nd - 1;
        while (perm[j] < perm[i]) j--;
        int s = perm[i];
        perm[i] = perm[j], perm[j] = s;
        for (int l = i + 1, r = nd - 1; l < r; l++, r--) s = perm[l], perm[l] = perm[r], perm[r] = s;
    }
}

void gdt_check_permute(void)
{
    for (int dt = 0; dt < GD_NUM_DTYPES; dt++) {
        if (gd_dtype_size((gd_dtype)dt) != 4 && gd_dtype_size((gd_dtype)dt) != 8) continue; /* the contract */
        for (int nd = 0; nd <= 5; nd++) check_all_permutations((gd_dtype)dt, nd);
        for (size_t i = 0; i < sizeof permute_cases / sizeof permute_cases[0]; i++)
            check_permutation((gd_dtype)dt, permute_cases[i].ndim, permute_cases[i].shape, permute_cases[i].perm);
    }
}

/* cuda_smoke.cpp - calls every entry of the CUDA backend's table on GPU 0 and checks each
 * result against a plain host loop (random numbers against philox.h itself), then, with
 * --bench, times the operations the performance targets are about. It needs no Python, so a
 * fault in a kernel shows up here with its file and line rather than inside an interpreter.
 *
 * Build and run from the repository root (any -gencode that matches the GPU):
 *   nvcc -std=c++17 -O2 -I csrc -gencode arch=compute_90,code=sm_90 -o cuda_smoke tests/cuda_smoke.cpp \
 *        csrc/cuda/backend_cuda.cu csrc/cuda/elementwise.cu csrc/cuda/kernels.cu csrc/cuda/reduce.cu \
 *        csrc/cuda/gemm.cu -lcublas
 *   ./cuda_smoke            # checks; exit 0 all passed (or no GPU: skipped), 1 a check failed
 *   ./cuda_smoke --bench    # checks, then timings
 */
#include "gpudev.h"
#include "philox.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

extern "C" const gd_backend *gd_cuda_backend(void);

static const gd_backend *B;
static int g_failures, g_checks;

/* ------------------------------------------------------------------------------------------
 * checking
 * ---------------------------------------------------------------------------------------- */

static void fail(const std::string &what)
{
    g_failures++;
    if (g_failures <= 60) printf("FAIL %s\n", what.c_str());
}

static bool ok(int rc, const gd_error &err, const std::string &what)
{
    g_checks++;
    if (rc == GD_OK) return true;
    fail(what + ": status " + std::to_string(rc) + ": " + err.message);
    return false;
}

static bool close_enough(double got, double want, double rtol, double atol)
{
    if (std::isnan(want)) return std::isnan(got);
    if (std::isinf(want)) return got == want;
    return std::fabs(got - want) <= atol + rtol * std::fabs(want);
}

/* atol < 0: rtol / 1000 */
template <class T>
static void compare(const std::vector<T> &got, const std::vector<T> &want, double rtol, const std::string &what,
                    double atol = -1)
{
    if (atol < 0) atol = rtol * 1e-3;
    g_checks++;
    if (got.size() != want.size()) return fail(what + ": size mismatch");
    for (size_t i = 0; i < got.size(); i++) {
        bool same;
        if constexpr (std::is_same<T, int64_t>::value) same = got[i] == want[i];
        else same = close_enough((double)got[i], (double)want[i], rtol, atol);
        if (!same) {
            char buf[256];
            snprintf(buf, sizeof buf, ": element %zu is %.17g, expected %.17g", i, (double)got[i], (double)want[i]);
            return fail(what + buf);
        }
    }
}

template <class T> static gd_dtype dtype_of();
template <> gd_dtype dtype_of<float>() { return GD_FLOAT32; }
template <> gd_dtype dtype_of<double>() { return GD_FLOAT64; }
template <> gd_dtype dtype_of<int64_t>() { return GD_INT64; }
template <class T> static const char *name_of() { return dtype_of<T>() == GD_FLOAT32 ? "f32" : dtype_of<T>() == GD_FLOAT64 ? "f64" : "i64"; }
template <class T> static double tol_of() { return dtype_of<T>() == GD_FLOAT32 ? 2e-6 : dtype_of<T>() == GD_FLOAT64 ? 1e-13 : 0; }

/* ------------------------------------------------------------------------------------------
 * device buffers through the table
 * ---------------------------------------------------------------------------------------- */

struct Buf {
    void *p = nullptr;
    size_t bytes = 0;
    Buf() = default;
    explicit Buf(size_t n)
    {
        gd_error err;
        if (ok(B->alloc(&p, 0, n, &err), err, "alloc " + std::to_string(n))) bytes = n;
    }
    Buf(const Buf &) = delete;
    Buf &operator=(const Buf &) = delete;
    ~Buf() { B->free(p, 0, bytes); }
};

template <class T> static void upload(Buf &b, const std::vector<T> &v)
{
    gd_error err;
    ok(B->copy_from_host(b.p, 0, v.data(), v.size() * sizeof(T), &err), err, "copy_from_host");
}

template <class T> static std::vector<T> download(const Buf &b, size_t n)
{
    std::vector<T> v(n);
    gd_error err;
    ok(B->copy_to_host(v.data(), b.p, 0, n * sizeof(T), &err), err, "copy_to_host");
    return v;
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_u64()
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}
static double next_unit() { return (double)(next_u64() >> 11) * (1.0 / 9007199254740992.0); }

/* values in [-4, 4), a few special ones first for float types; ints in [-50, 50) and a couple
 * near the int64 limits so wrapping is exercised */
template <class T> static std::vector<T> sample(size_t n, bool specials = true)
{
    std::vector<T> v(n);
    for (size_t i = 0; i < n; i++) {
        if constexpr (std::is_same<T, int64_t>::value) v[i] = (int64_t)(next_u64() % 100) - 50;
        else v[i] = (T)(8.0 * next_unit() - 4.0);
    }
    if (specials && n >= 4) {
        if constexpr (std::is_same<T, int64_t>::value) {
            v[0] = INT64_MAX;
            v[1] = INT64_MIN;
        } else {
            v[0] = std::numeric_limits<T>::quiet_NaN();
            v[1] = -0.0;
            v[2] = std::numeric_limits<T>::infinity();
        }
    }
    return v;
}

/* ------------------------------------------------------------------------------------------
 * host references (the CPU backend's semantics)
 * ---------------------------------------------------------------------------------------- */

template <class T> static T h_unop(gd_unop op, T x)
{
    if constexpr (std::is_same<T, int64_t>::value) {
        switch (op) {
        case GD_COPY: return x;
        case GD_NEG: return (int64_t)(0 - (uint64_t)x);
        case GD_ABS: return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
        case GD_RELU: return x > 0 ? x : 0;
        case GD_SQUARE: return (int64_t)((uint64_t)x * (uint64_t)x);
        default: return 0;
        }
    } else {
        switch (op) {
        case GD_COPY: return x;
        case GD_NEG: return -x;
        case GD_ABS: return std::fabs(x);
        case GD_RELU: return (x > 0 || x != x) ? x : T(0);
        case GD_SQUARE: return x * x;
        case GD_EXP: return std::exp(x);
        case GD_LOG: return std::log(x);
        case GD_SQRT: return std::sqrt(x);
        case GD_TANH: return std::tanh(x);
        default: return 0;
        }
    }
}

template <class T> static T h_binop(gd_binop op, T a, T b)
{
    if constexpr (std::is_same<T, int64_t>::value) {
        switch (op) {
        case GD_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
        case GD_SUB: return (int64_t)((uint64_t)a - (uint64_t)b);
        case GD_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
        case GD_POW: {
            uint64_t r = 1, base = (uint64_t)a;
            for (int64_t e = b; e > 0; e >>= 1) {
                if (e & 1) r *= base;
                base *= base;
            }
            return (int64_t)r;
        }
        case GD_MAXIMUM: return a > b ? a : b;
        case GD_MINIMUM: return a < b ? a : b;
        default: return 0;
        }
    } else {
        switch (op) {
        case GD_ADD: return a + b;
        case GD_SUB: return a - b;
        case GD_MUL: return a * b;
        case GD_DIV: return a / b;
        case GD_POW: return std::pow(a, b);
        case GD_MAXIMUM: return (a > b || a != a) ? a : b;
        case GD_MINIMUM: return (a < b || a != a) ? a : b;
        default: return 0;
        }
    }
}

/* ------------------------------------------------------------------------------------------
 * elementwise
 * ---------------------------------------------------------------------------------------- */

static gd_ewise make_ewise(std::vector<int64_t> shape, int contiguous)
{
    gd_ewise ew;
    memset(&ew, 0, sizeof ew);
    ew.ndim = (int)shape.size();
    ew.contiguous = contiguous;
    ew.size = 1;
    for (size_t k = 0; k < shape.size(); k++) {
        ew.shape[k] = shape[k];
        ew.size *= shape[k];
    }
    return ew;
}

static gd_operand make_operand(const void *data, std::vector<int64_t> strides, gd_scalar s = gd_scalar{0.0})
{
    gd_operand op;
    memset(&op, 0, sizeof op);
    op.data = data;
    op.scalar = s;
    for (size_t k = 0; k < strides.size(); k++) op.strides[k] = strides[k];
    return op;
}

template <class T> static gd_scalar scalar_of(T v)
{
    gd_scalar s;
    if constexpr (std::is_same<T, int64_t>::value) s.i = v;
    else s.f = (double)v;
    return s;
}

/* host element of an operand for output index i */
template <class T>
static T h_elem(const std::vector<T> &host, const gd_operand &op, T scalar, const gd_ewise &ew, int64_t i)
{
    if (!op.data) return scalar;
    int64_t rem = i, off = 0;
    for (int k = ew.ndim - 1; k >= 0; k--) {
        off += (rem % ew.shape[k]) * op.strides[k];
        rem /= ew.shape[k];
    }
    return host[off];
}

struct Layout {
    const char *name;
    std::vector<int64_t> out_shape;
    std::vector<int64_t> a_shape, a_strides; /* a_shape empty: scalar */
    std::vector<int64_t> b_shape, b_strides;
    int contiguous;
};

static int64_t count(const std::vector<int64_t> &s)
{
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return s.empty() ? 1 : n;
}

static const std::vector<Layout> layouts = {
    {"contiguous 1000003", {1000003}, {1000003}, {1}, {1000003}, {1}, 1},
    {"contiguous 7", {7}, {7}, {1}, {7}, {1}, 1},
    {"scalar a", {33}, {}, {0}, {33}, {1}, 1},
    {"scalar b", {33}, {33}, {1}, {}, {0}, 1},
    {"broadcast (7,1)x(1,5)", {7, 5}, {7, 1}, {1, 0}, {1, 5}, {0, 1}, 0},
    {"broadcast 3-D", {3, 5, 4}, {3, 1, 4}, {4, 0, 1}, {1, 5, 1}, {0, 1, 0}, 0},
    {"transposed a", {7, 5}, {5, 7}, {1, 7}, {7, 5}, {5, 1}, 0},
    {"strided + scalar", {72, 73}, {72, 1}, {1, 0}, {}, {0, 0}, 0},
};

template <class T> static void test_unary()
{
    const gd_unop ops_f[] = {GD_COPY, GD_NEG, GD_ABS, GD_RELU, GD_SQUARE, GD_EXP, GD_LOG, GD_SQRT, GD_TANH};
    const gd_unop ops_i[] = {GD_COPY, GD_NEG, GD_ABS, GD_RELU, GD_SQUARE};
    const bool is_i = std::is_same<T, int64_t>::value;
    const int nops = is_i ? 5 : 9;
    for (const Layout &L : layouts) {
        gd_ewise ew = make_ewise(L.out_shape, L.contiguous);
        std::vector<T> ha = sample<T>((size_t)count(L.a_shape));
        Buf a(ha.size() * sizeof(T)), out(ew.size * sizeof(T));
        upload(a, ha);
        const T sa = (T)3;
        gd_operand oa = make_operand(L.a_shape.empty() ? nullptr : a.p, L.a_strides, scalar_of(sa));
        for (int k = 0; k < nops; k++) {
            gd_unop op = is_i ? ops_i[k] : ops_f[k];
            gd_error err;
            std::string what = std::string("unary ") + std::to_string(op) + " " + name_of<T>() + " " + L.name;
            if (!ok(B->unary(out.p, op, dtype_of<T>(), &ew, &oa, 0, &err), err, what)) continue;
            std::vector<T> want(ew.size);
            for (int64_t i = 0; i < ew.size; i++) want[i] = h_unop(op, h_elem(ha, oa, sa, ew, i));
            compare(download<T>(out, ew.size), want, tol_of<T>(), what);
        }
    }
    /* in place: out aliases a */
    std::vector<T> h = sample<T>(1001);
    Buf a(h.size() * sizeof(T));
    upload(a, h);
    gd_ewise ew = make_ewise({1001}, 1);
    gd_operand oa = make_operand(a.p, {1});
    gd_error err;
    ok(B->unary(a.p, GD_NEG, dtype_of<T>(), &ew, &oa, 0, &err), err, "unary in place");
    for (T &x : h) x = h_unop(GD_NEG, x);
    compare(download<T>(a, h.size()), h, 0, std::string("unary in place ") + name_of<T>());
}

template <class T> static void test_binary()
{
    const gd_binop ops[] = {GD_ADD, GD_SUB, GD_MUL, GD_DIV, GD_POW, GD_MAXIMUM, GD_MINIMUM};
    const bool is_i = std::is_same<T, int64_t>::value;
    for (const Layout &L : layouts) {
        gd_ewise ew = make_ewise(L.out_shape, L.contiguous);
        std::vector<T> ha = sample<T>((size_t)count(L.a_shape)), hb = sample<T>((size_t)count(L.b_shape), false);
        std::vector<T> hexp((size_t)count(L.b_shape)); /* small non-negative exponents for pow */
        for (size_t i = 0; i < hexp.size(); i++) hexp[i] = (T)(i % 6);
        Buf a(ha.size() * sizeof(T)), b(hb.size() * sizeof(T)), e(hexp.size() * sizeof(T)), out(ew.size * sizeof(T));
        upload(a, ha);
        upload(b, hb);
        upload(e, hexp);
        const T sa = (T)3, sb = (T)2;
        for (gd_binop op : ops) {
            if (is_i && op == GD_DIV) continue;
            const bool pw = op == GD_POW;
            const std::vector<T> &hb_op = pw ? hexp : hb;
            gd_operand oa = make_operand(L.a_shape.empty() ? nullptr : a.p, L.a_strides, scalar_of(sa));
            gd_operand ob = make_operand(L.b_shape.empty() ? nullptr : (pw ? e.p : b.p), L.b_strides, scalar_of(sb));
            gd_error err;
            std::string what = std::string("binary ") + std::to_string(op) + " " + name_of<T>() + " " + L.name;
            if (!ok(B->binary(out.p, op, dtype_of<T>(), &ew, &oa, &ob, 0, &err), err, what)) continue;
            std::vector<T> want(ew.size);
            for (int64_t i = 0; i < ew.size; i++)
                want[i] = h_binop(op, h_elem(ha, oa, sa, ew, i), h_elem(hb_op, ob, sb, ew, i));
            compare(download<T>(out, ew.size), want, tol_of<T>() * (pw ? 4 : 1), what);
        }
    }
}

/* ------------------------------------------------------------------------------------------
 * astype, arange, random, permute
 * ---------------------------------------------------------------------------------------- */

template <class To, class From> static To h_convert(From x)
{
    if constexpr (std::is_same<To, int64_t>::value && !std::is_same<From, int64_t>::value) {
        return (x >= (From)-9223372036854775808.0 && x < (From)9223372036854775808.0) ? (int64_t)x : INT64_MIN;
    } else {
        return (To)x;
    }
}

template <class To, class From> static void test_astype_pair()
{
    std::vector<From> h = sample<From>(10007);
    if constexpr (!std::is_same<From, int64_t>::value) {
        h[3] = (From)2.7;
        h[4] = (From)-2.7;
        h[5] = (From)1e19;
        h[6] = (From)-1e19;
        h[7] = -std::numeric_limits<From>::infinity();
    }
    Buf in(h.size() * sizeof(From)), out(h.size() * sizeof(To));
    upload(in, h);
    gd_error err;
    std::string what = std::string("astype ") + name_of<From>() + " -> " + name_of<To>();
    if (!ok(B->astype(out.p, dtype_of<To>(), in.p, dtype_of<From>(), (int64_t)h.size(), 0, &err), err, what)) return;
    std::vector<To> want(h.size());
    for (size_t i = 0; i < h.size(); i++) want[i] = h_convert<To>(h[i]);
    compare(download<To>(out, h.size()), want, 0, what);
}

template <class To> static void test_astype_to()
{
    test_astype_pair<To, float>();
    test_astype_pair<To, double>();
    test_astype_pair<To, int64_t>();
}

template <class T> static void test_arange()
{
    const int64_t n = 100003;
    gd_scalar start = scalar_of<T>((T)-5), step;
    if constexpr (std::is_same<T, int64_t>::value) step.i = 3;
    else step.f = 0.25;
    Buf out(n * sizeof(T));
    gd_error err;
    std::string what = std::string("arange ") + name_of<T>();
    if (!ok(B->arange(out.p, dtype_of<T>(), start, step, n, 0, &err), err, what)) return;
    std::vector<T> want(n);
    for (int64_t i = 0; i < n; i++) {
        if constexpr (std::is_same<T, int64_t>::value) want[i] = start.i + i * step.i;
        else want[i] = (T)(start.f + (double)i * step.f);
    }
    compare(download<T>(out, n), want, 0, what);
}

template <class T> static void test_random(gd_random_kind kind)
{
    const int64_t n = 1001;
    const uint64_t seed = 42, offset = 7;
    Buf out(n * sizeof(T));
    gd_error err;
    std::string what = std::string("random ") + name_of<T>() + (kind == GD_RAND_NORMAL ? " normal" : " uniform");
    if (!ok(B->random(out.p, dtype_of<T>(), kind, seed, offset, n, 0, &err), err, what)) return;
    const int per = GD_PHILOX_PER_BLOCK(dtype_of<T>() == GD_FLOAT32);
    std::vector<T> want(n);
    for (int64_t blk = 0; blk * per < n; blk++) {
        T v[4];
        if constexpr (std::is_same<T, float>::value) gd_philox_block_f32(v, kind == GD_RAND_NORMAL, offset + blk, seed);
        else gd_philox_block_f64(v, kind == GD_RAND_NORMAL, offset + blk, seed);
        for (int j = 0; j < per && blk * per + j < n; j++) want[blk * per + j] = v[j];
    }
    /* uniforms are exact; normals go through the device's log/cos/sin */
    compare(download<T>(out, n), want, kind == GD_RAND_NORMAL ? tol_of<T>() : 0, what);
}

template <class T> static void test_permute(std::vector<int64_t> shape, std::vector<int> perm)
{
    const int nd = (int)shape.size();
    const int64_t n = count(shape);
    std::vector<T> h = sample<T>((size_t)n, false);
    Buf in(n * sizeof(T)), out(n * sizeof(T));
    upload(in, h);
    std::string what = std::string("permute ") + name_of<T>() + " shape";
    for (int64_t d : shape) what += " " + std::to_string(d);
    what += " perm";
    for (int p : perm) what += " " + std::to_string(p);
    gd_error err;
    if (!ok(B->permute(out.p, dtype_of<T>(), in.p, nd, shape.data(), perm.data(), 0, &err), err, what)) return;
    std::vector<int64_t> in_strides(nd), out_shape(nd);
    int64_t s = 1;
    for (int k = nd - 1; k >= 0; k--) {
        in_strides[k] = s;
        s *= shape[k];
    }
    for (int k = 0; k < nd; k++) out_shape[k] = shape[perm[k]];
    std::vector<T> want(n);
    for (int64_t i = 0; i < n; i++) {
        int64_t rem = i, off = 0;
        for (int k = nd - 1; k >= 0; k--) {
            off += (rem % out_shape[k]) * in_strides[perm[k]];
            rem /= out_shape[k];
        }
        want[i] = h[off];
    }
    compare(download<T>(out, n), want, 0, what);
}

/* ------------------------------------------------------------------------------------------
 * reductions
 * ---------------------------------------------------------------------------------------- */

template <class T, class Out> static void test_reduce_shape(gd_redop op, int64_t outer, int64_t len, int64_t inner)
{
    if (len == 0 && (op == GD_RED_MAX || op == GD_RED_MIN)) return;
    const int64_t n = outer * len * inner;
    std::vector<T> h = sample<T>((size_t)(n > 0 ? n : 0), false);
    if (n > 10 && op == GD_RED_MAX && !std::is_same<T, int64_t>::value) h[n / 2] = std::numeric_limits<T>::quiet_NaN();
    Buf in((size_t)(n > 0 ? n : 1) * sizeof(T)), out((size_t)(outer * inner) * sizeof(Out));
    if (n > 0) upload(in, h);
    char what[160];
    snprintf(what, sizeof what, "reduce op %d %s -> %s (%" PRId64 ", %" PRId64 ", %" PRId64 ")", (int)op, name_of<T>(),
             name_of<Out>(), outer, len, inner);
    gd_error err;
    if (!ok(B->reduce(out.p, dtype_of<Out>(), op, in.p, dtype_of<T>(), outer, len, inner, 0, &err), err, what)) return;
    std::vector<Out> want((size_t)(outer * inner));
    const bool int_sum = std::is_same<T, int64_t>::value && std::is_same<Out, int64_t>::value;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            long double acc = 0;
            uint64_t iacc = 0;
            T best = h.empty() ? T(0) : h[(size_t)((o * len) * inner + i)];
            for (int64_t r = 0; r < len; r++) {
                T x = h[(size_t)((o * len + r) * inner + i)];
                if (op == GD_RED_SUM) acc += (long double)x, iacc += (uint64_t)x;
                if (op == GD_RED_SUMSQ) acc += (long double)x * (long double)x, iacc += (uint64_t)x * (uint64_t)x;
                if (op == GD_RED_MAX) best = (x > best || x != x || best != best) ? (best != best ? best : x) : best;
                if (op == GD_RED_MIN) best = (x < best || x != x || best != best) ? (best != best ? best : x) : best;
            }
            Out v;
            if (op == GD_RED_MAX || op == GD_RED_MIN) v = (Out)best;
            else if (int_sum) v = (Out)(int64_t)iacc;
            else v = (Out)acc;
            want[(size_t)(o * inner + i)] = v;
        }
    /* float64 accumulation: float32 results are the correctly rounded sum; float64 ones are
     * off by the accumulation's rounding, about len * 1e-16 relative */
    double rtol = std::is_same<Out, float>::value ? 1e-6 : std::is_same<Out, double>::value ? 1e-12 : 0;
    compare(download<Out>(out, (size_t)(outer * inner)), want, rtol, what);
}

template <class T, class Out> static void test_reduce()
{
    const int64_t shapes[][3] = {{1, 0, 1},     {3, 0, 4},       {1, 1, 1},      {1, 16, 1},     {5, 17, 1},
                                 {1000, 13, 1}, {3, 1000, 1},    {2, 5000, 1},   {1, 3000001, 1}, {40000, 3, 1},
                                 {1, 1, 7},     {7, 5, 33},      {2, 100000, 3}, {1, 10000, 100}, {3, 7, 1000},
                                 {1, 200000, 1}, {1, 500000, 2}, {4, 3, 70000}};
    const gd_redop ops[] = {GD_RED_SUM, GD_RED_SUMSQ, GD_RED_MAX, GD_RED_MIN};
    for (gd_redop op : ops)
        for (const auto &s : shapes) test_reduce_shape<T, Out>(op, s[0], s[1], s[2]);
}

/* ------------------------------------------------------------------------------------------
 * matmul
 * ---------------------------------------------------------------------------------------- */

template <class T>
static void test_gemm(int64_t batch, int64_t m, int64_t n, int64_t k, bool broadcast_a, bool broadcast_b)
{
    const int64_t sa = broadcast_a ? 0 : m * k, sb = broadcast_b ? 0 : k * n, sc = m * n;
    std::vector<T> ha = sample<T>((size_t)((broadcast_a ? 1 : batch) * m * k + 1), false);
    std::vector<T> hb = sample<T>((size_t)((broadcast_b ? 1 : batch) * k * n + 1), false);
    std::vector<T> hc((size_t)(batch * sc), (T)123); /* garbage the product must overwrite */
    Buf a(ha.size() * sizeof(T)), b(hb.size() * sizeof(T)), c(hc.size() * sizeof(T));
    upload(a, ha);
    upload(b, hb);
    upload(c, hc);
    char what[160];
    snprintf(what, sizeof what, "gemm %s batch %" PRId64 " (%" PRId64 ", %" PRId64 ", %" PRId64 ")%s%s", name_of<T>(),
             batch, m, n, k, broadcast_a ? " a broadcast" : "", broadcast_b ? " b broadcast" : "");
    gd_error err;
    if (!ok(B->gemm(c.p, dtype_of<T>(), a.p, b.p, batch, m, n, k, sa, sb, sc, 0, &err), err, what)) return;
    std::vector<T> want(hc.size());
    for (int64_t p = 0; p < batch; p++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double acc = 0;
                for (int64_t q = 0; q < k; q++) acc += (double)ha[p * sa + i * k + q] * (double)hb[p * sb + q * n + j];
                want[p * sc + i * n + j] = (T)acc;
            }
    /* |a|, |b| < 4: rounding errors scale with k * 16, not with the (possibly tiny) result */
    const double eps = std::is_same<T, float>::value ? 1e-6 : 1e-14;
    compare(download<T>(c, want.size()), want, 10 * eps, what, eps * 16.0 * (double)(k > 0 ? k : 1));
}

/* ------------------------------------------------------------------------------------------
 * memory, copies, errors, ordering
 * ---------------------------------------------------------------------------------------- */

static void test_memory_and_copies()
{
    gd_error err;
    void *p = nullptr;
    if (ok(B->alloc(&p, 0, 0, &err), err, "alloc 0 bytes")) {
        g_checks++;
        if (!p) fail("alloc of 0 bytes returned NULL");
        B->free(p, 0, 0);
    }
    B->free(nullptr, 0, 0);

    std::vector<uint8_t> h(1000003);
    for (auto &x : h) x = (uint8_t)next_u64();
    Buf a(h.size()), b(h.size());
    upload(a, h);
    compare(download<uint8_t>(a, h.size()), h, 0, "host -> device -> host");
    ok(B->copy_device(b.p, 0, a.p, 0, h.size(), &err), err, "copy_device same GPU");
    compare(download<uint8_t>(b, h.size()), h, 0, "copy_device same GPU");

    /* 2-D: 300 rows of 1000 bytes out of rows 3000 apart into rows 1200 apart */
    Buf src(3000 * 300), dst(1200 * 300);
    std::vector<uint8_t> hs(3000 * 300);
    for (auto &x : hs) x = (uint8_t)next_u64();
    upload(src, hs);
    std::vector<uint8_t> zeros(1200 * 300, 0);
    upload(dst, zeros);
    ok(B->copy_2d(dst.p, 1200, src.p, 3000, 1000, 300, 0, &err), err, "copy_2d");
    std::vector<uint8_t> want = zeros;
    for (int r = 0; r < 300; r++) memcpy(&want[r * 1200], &hs[r * 3000], 1000);
    compare(download<uint8_t>(dst, want.size()), want, 0, "copy_2d");

    if (B->device_count() >= 2) {
        gd_error e2;
        void *q = nullptr;
        if (ok(B->alloc(&q, 1, h.size(), &e2), e2, "alloc on cuda:1")) {
            ok(B->copy_device(q, 1, a.p, 0, h.size(), &e2), e2, "copy_device cuda:0 -> cuda:1");
            ok(B->copy_device(b.p, 0, q, 1, h.size(), &e2), e2, "copy_device cuda:1 -> cuda:0");
            compare(download<uint8_t>(b, h.size()), h, 0, "peer round trip");
            B->free(q, 1, h.size());
        }
    } else {
        printf("note: one GPU, peer copies not tested\n");
    }

    /* out of memory: a clear status and message, and the allocator still works afterwards */
    void *huge = nullptr;
    int rc = B->alloc(&huge, 0, (size_t)1 << 50, &err);
    g_checks++;
    if (rc != GD_ERR_DEVICE_OOM) fail("alloc of 1 PiB did not report GD_ERR_DEVICE_OOM (" + std::to_string(rc) + ")");
    else printf("ok: %s\n", err.message);
    if (rc == GD_OK) B->free(huge, 0, (size_t)1 << 50);
    Buf after(1 << 20);
    g_checks++;
    if (!after.p) fail("allocation after out-of-memory failed");

    /* defensive checks that need no CUDA call */
    rc = B->gemm(a.p, GD_FLOAT32, a.p, a.p, 1, (int64_t)1 << 32, 1, 1, 0, 0, 0, 0, &err);
    g_checks++;
    if (rc != GD_ERR_VALUE) fail("gemm with m > INT_MAX did not report GD_ERR_VALUE");
    rc = B->alloc(&p, 999, 16, &err);
    g_checks++;
    if (rc != GD_ERR_DEVICE_UNAVAILABLE) fail("alloc on cuda:999 did not report GD_ERR_DEVICE_UNAVAILABLE");
    else printf("ok: %s\n", err.message);
}

/* Freeing memory that queued work still reads is safe: the free is ordered after it on the
 * stream, so the memory is not handed out (and overwritten) before the sum has read it. */
static void test_free_while_in_use()
{
    const int64_t n = 50 * 1000 * 1000;
    gd_error err;
    void *a = nullptr, *out = nullptr;
    if (!ok(B->alloc(&a, 0, n * sizeof(float), &err), err, "alloc") ||
        !ok(B->alloc(&out, 0, sizeof(double), &err), err, "alloc"))
        return;
    gd_ewise ew = make_ewise({n}, 1);
    gd_operand one = make_operand(nullptr, {0}, gd_scalar{1.0});
    ok(B->unary(a, GD_COPY, GD_FLOAT32, &ew, &one, 0, &err), err, "fill ones");
    ok(B->reduce(out, GD_FLOAT64, GD_RED_SUM, a, GD_FLOAT32, 1, n, 1, 0, &err), err, "sum");
    B->free(a, 0, n * sizeof(float));
    void *b = nullptr;
    if (ok(B->alloc(&b, 0, n * sizeof(float), &err), err, "alloc again")) {
        gd_operand seven = make_operand(nullptr, {0}, gd_scalar{7.0});
        ok(B->unary(b, GD_COPY, GD_FLOAT32, &ew, &seven, 0, &err), err, "fill sevens");
        double s = 0;
        ok(B->copy_to_host(&s, out, 0, sizeof s, &err), err, "copy_to_host");
        g_checks++;
        if (s != (double)n) fail("sum read memory freed and refilled behind it: " + std::to_string(s));
        B->free(b, 0, n * sizeof(float));
    }
    B->free(out, 0, sizeof(double));
    ok(B->synchronize(0, &err), err, "synchronize");
}

/* ------------------------------------------------------------------------------------------
 * timings (--bench)
 * ---------------------------------------------------------------------------------------- */

static double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

/* median seconds per call of fn (which queues work) over `reps` timed runs of `inner` calls,
 * synchronizing before and after each run */
template <class F> static double time_op(F fn, int reps, int inner)
{
    gd_error err;
    fn();
    B->synchronize(0, &err);
    std::vector<double> t;
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        for (int i = 0; i < inner; i++) fn();
        B->synchronize(0, &err);
        t.push_back((now_s() - t0) / inner);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

static void bench()
{
    gd_error err;
    const int64_t n = 1000 * 1000 * 1000; /* 1e9 float32: 4 GB */
    Buf a(n * 4), b(n * 4), out(8);
    if (!a.p || !b.p) return;
    B->random(a.p, GD_FLOAT32, GD_RAND_NORMAL, 1, 0, n, 0, &err);
    double t_copy = time_op([&] { B->copy_device(b.p, 0, a.p, 0, n * 4, &err); }, 5, 3);
    printf("bench: d2d copy of 4 GB        %8.3f ms  %7.0f GB/s (read+write)\n", t_copy * 1e3, 2.0 * n * 4 / t_copy / 1e9);
    double t_sum = time_op([&] { B->reduce(out.p, GD_FLOAT32, GD_RED_SUM, a.p, GD_FLOAT32, 1, n, 1, 0, &err); }, 5, 3);
    printf("bench: sum of 1e9 float32      %8.3f ms  %7.0f GB/s (%.0f%% of copy)\n", t_sum * 1e3, n * 4 / t_sum / 1e9,
           100.0 * (n * 4 / t_sum) / (2.0 * n * 4 / t_copy));
    double t_cols = time_op([&] { B->reduce(b.p, GD_FLOAT32, GD_RED_SUM, a.p, GD_FLOAT32, 1, 10000, 100000, 0, &err); }, 5, 3);
    printf("bench: sum axis 0 (1e4, 1e5)   %8.3f ms  %7.0f GB/s\n", t_cols * 1e3, n * 4 / t_cols / 1e9);
    double t_rows = time_op([&] { B->reduce(b.p, GD_FLOAT32, GD_RED_SUM, a.p, GD_FLOAT32, 100000, 10000, 1, 0, &err); }, 5, 3);
    printf("bench: sum axis 1 (1e5, 1e4)   %8.3f ms  %7.0f GB/s\n", t_rows * 1e3, n * 4 / t_rows / 1e9);
    double t_tall = time_op([&] { B->reduce(b.p, GD_FLOAT32, GD_RED_SUM, a.p, GD_FLOAT32, 1, n / 4, 4, 0, &err); }, 5, 3);
    printf("bench: sum axis 0 (2.5e8, 4)   %8.3f ms  %7.0f GB/s\n", t_tall * 1e3, n * 4 / t_tall / 1e9);
    gd_ewise ew = make_ewise({n / 2}, 1);
    gd_operand oa = make_operand(a.p, {1}), ob = make_operand((char *)a.p + n * 2, {1});
    double t_add = time_op([&] { B->binary(b.p, GD_ADD, GD_FLOAT32, &ew, &oa, &ob, 0, &err); }, 5, 3);
    printf("bench: add of 5e8 float32      %8.3f ms  %7.0f GB/s (read+write)\n", t_add * 1e3, 3.0 * n * 2 / t_add / 1e9);
    gd_ewise ewb = make_ewise({10000, 10000}, 0);
    gd_operand row = make_operand(a.p, {0, 1}), col = make_operand(b.p, {1, 0});
    double t_bc = time_op([&] { B->binary((char *)b.p + n * 2, GD_ADD, GD_FLOAT32, &ewb, &row, &col, 0, &err); }, 5, 3);
    printf("bench: broadcast add 1e4x1e4   %8.3f ms  %7.0f GB/s (written)\n", t_bc * 1e3, 4e8 / t_bc / 1e9);
    int64_t tshape[2] = {20000, 20000};
    int tperm[2] = {1, 0};
    double t_tr = time_op([&] { B->permute(b.p, GD_FLOAT32, a.p, 2, tshape, tperm, 0, &err); }, 5, 3);
    printf("bench: transpose 2e4x2e4       %8.3f ms  %7.0f GB/s (read+write)\n", t_tr * 1e3, 2.0 * 1.6e9 / t_tr / 1e9);
    double t_rng = time_op([&] { B->random(b.p, GD_FLOAT32, GD_RAND_NORMAL, 3, 0, n, 0, &err); }, 5, 3);
    printf("bench: randn 1e9 float32       %8.3f ms  %7.0f GB/s (written)\n", t_rng * 1e3, n * 4 / t_rng / 1e9);

    const int64_t g = 8192;
    double t_gemm = time_op([&] { B->gemm(b.p, GD_FLOAT32, a.p, (char *)a.p + g * g * 4, 1, g, g, g, 0, 0, 0, 0, &err); }, 5, 3);
    printf("bench: sgemm n=8192            %8.3f ms  %7.1f TFLOP/s\n", t_gemm * 1e3, 2.0 * g * g * g / t_gemm / 1e12);
    double t_batched = time_op([&] { B->gemm(b.p, GD_FLOAT32, a.p, (char *)a.p + 40000000, 1000, 100, 100, 100, 10000, 10000, 10000, 0, &err); }, 5, 3);
    printf("bench: 1000 x (100x100 @)      %8.3f ms\n", t_batched * 1e3);

    /* tiny operations: host time per call, the launch path is what is measured */
    gd_ewise ew16 = make_ewise({16}, 1);
    gd_operand o16 = make_operand(b.p, {1});
    double t_tiny = time_op([&] { B->binary(b.p, GD_ADD, GD_FLOAT32, &ew16, &o16, &o16, 0, &err); }, 7, 10000);
    printf("bench: b += b on 4x4           %8.2f us per op\n", t_tiny * 1e6);
    float item = 0;
    double t_item = time_op([&] {
        B->reduce(out.p, GD_FLOAT32, GD_RED_SUM, b.p, GD_FLOAT32, 1, 16, 1, 0, &err);
        B->copy_to_host(&item, out.p, 0, 4, &err);
    }, 7, 2000);
    printf("bench: a.sum().item() on 4x4   %8.2f us per op\n", t_item * 1e6);

    std::vector<float> host((size_t)64 << 20);
    for (size_t i = 0; i < host.size(); i += 1024) host[i] = (float)i;
    double t_h2d = time_op([&] { B->copy_from_host(b.p, 0, host.data(), host.size() * 4, &err); }, 5, 2);
    printf("bench: host -> device 256 MiB  %8.3f ms  %7.1f GB/s (pageable)\n", t_h2d * 1e3, host.size() * 4 / t_h2d / 1e9);
    double t_d2h = time_op([&] { B->copy_to_host(host.data(), b.p, 0, host.size() * 4, &err); }, 5, 2);
    printf("bench: device -> host 256 MiB  %8.3f ms  %7.1f GB/s (pageable)\n", t_d2h * 1e3, host.size() * 4 / t_d2h / 1e9);
    if (err.code != GD_OK && err.message[0]) printf("bench: last error: %s\n", err.message);
}

int main(int argc, char **argv)
{
    B = gd_cuda_backend();
    if (B->abi_version != GD_BACKEND_ABI_VERSION || strcmp(B->name, "cuda") != 0) {
        printf("FAIL table: abi %d name %s\n", B->abi_version, B->name);
        return 1;
    }
    int count = B->device_count();
    printf("CUDA GPUs: %d\n", count);
    if (count == 0) {
        gd_error err;
        int rc = B->alloc(nullptr, 0, 16, &err);
        printf("skipped: no GPU (alloc says %d: %s)\n", rc, err.message);
        return rc == GD_ERR_DEVICE_UNAVAILABLE ? 0 : 1;
    }

    test_memory_and_copies();
    test_unary<float>();
    test_unary<double>();
    test_unary<int64_t>();
    test_binary<float>();
    test_binary<double>();
    test_binary<int64_t>();
    test_astype_to<float>();
    test_astype_to<double>();
    test_astype_to<int64_t>();
    test_arange<float>();
    test_arange<double>();
    test_arange<int64_t>();
    test_random<float>(GD_RAND_UNIFORM);
    test_random<float>(GD_RAND_NORMAL);
    test_random<double>(GD_RAND_UNIFORM);
    test_random<double>(GD_RAND_NORMAL);
    test_permute<float>({67, 131}, {1, 0});
    test_permute<double>({4, 33, 65}, {0, 2, 1});
    test_permute<int64_t>({3, 4, 5, 6}, {2, 0, 3, 1});
    test_permute<float>({2, 1, 3}, {2, 1, 0});
    test_permute<float>({2, 3, 4, 5}, {0, 2, 3, 1});
    test_permute<float>({5, 6, 7}, {0, 1, 2});
    test_permute<double>({1, 1}, {1, 0});
    test_permute<float>({}, {});
    test_reduce<float, float>();
    test_reduce<float, double>();
    test_reduce<double, double>();
    test_reduce<int64_t, int64_t>();
    test_reduce<int64_t, double>();
    test_gemm<float>(1, 37, 45, 19, false, false);
    test_gemm<float>(3, 37, 45, 19, true, false);
    test_gemm<float>(4, 8, 1, 300, false, true);
    test_gemm<double>(2, 65, 33, 129, false, false);
    test_gemm<double>(1, 1, 1, 1, false, false);
    test_gemm<float>(2, 5, 6, 0, false, false);
    test_free_while_in_use();

    gd_error err;
    ok(B->synchronize(0, &err), err, "final synchronize");
    printf("%d checks, %d failed\n", g_checks, g_failures);
    if (argc > 1 && strcmp(argv[1], "--bench") == 0) bench();
    return g_failures ? 1 : 0;
}

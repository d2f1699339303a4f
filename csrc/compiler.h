/* compiler.h - the one place where the C core spells something its compiler offers beyond ISO
 * C11: attributes, builtins, GCC's vector extensions, function clones, inline assembly and
 * MSVC's intrinsics and __declspec. Everything else in csrc's headers, csrc/core and csrc/cpu is
 * the subset of C11 that MSVC compiles too (tests/test_port.py greps for these spellings
 * elsewhere). What differs between operating systems is csrc/cpu/port.h's, not this file's.
 *
 * Two branches:
 *   GNU (GCC, Clang: __GNUC__)  attributes, builtins, vector extensions, target_clones: the
 *                               Linux build's code, as fast as ever.
 *   portable (MSVC, or forced   plain C, MSVC's intrinsics where plain C has no spelling, and
 *   with -DGD_COMPILER_PORTABLE) the callers' plain-C loops in place of vector extensions.
 * The portable branch is checked here by GCC with it forced and -std=c11 -pedantic-errors
 * -Werror=vla (`make check-posix`, `make check-windows`); MSVC itself is not run.
 *
 * Here rather than in port.h: gpudev.h (which the CUDA backend and csrc/core include, not
 * port.h) needs GD_PRINTF, and compilers are not systems (mingw-w64 is GNU on Windows).
 * Plain C11 that also compiles as C++ (gpudev.h includes it).
 */
#ifndef GPUDEV_COMPILER_H
#define GPUDEV_COMPILER_H

#include <stdint.h>

#if defined(__GNUC__) && !defined(GD_COMPILER_PORTABLE)
#define GD_COMPILER_GNU 1
#else
#define GD_COMPILER_GNU 0
#endif

/* ---- the architecture, as each compiler names it ----------------------------------------- */
#if defined(__x86_64__) || defined(_M_X64)
#define GD_ARCH_X86_64 1
#else
#define GD_ARCH_X86_64 0
#endif
#if GD_ARCH_X86_64 || defined(__i386__) || defined(_M_IX86)
#define GD_ARCH_X86 1
#else
#define GD_ARCH_X86 0
#endif
#if defined(__aarch64__) || defined(_M_ARM64)
#define GD_ARCH_ARM64 1
#else
#define GD_ARCH_ARM64 0
#endif
#if GD_ARCH_ARM64 || defined(__arm__) || defined(_M_ARM)
#define GD_ARCH_ARM 1
#else
#define GD_ARCH_ARM 0
#endif

/* mingw-w64, GCC on Windows with its own C runtime (port_win32.c resets that runtime's x87
 * precision in each new thread), in either branch. */
#if defined(__MINGW32__)
#define GD_MINGW 1
#else
#define GD_MINGW 0
#endif

/* ---- attributes ---------------------------------------------------------------------------- */
/* printf-style checking of gd_set_error's callers. mingw-w64: C99 formats (%zu, %lld), as its
 * own stdio and the UCRT take them. */
#if GD_COMPILER_GNU && defined(__MINGW32__)
#define GD_PRINTF(fmt, args) __attribute__((format(gnu_printf, fmt, args)))
#elif GD_COMPILER_GNU
#define GD_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define GD_PRINTF(fmt, args)
#endif

/* A branch that is almost never taken (the compiler lays the likely path out straight). */
#if GD_COMPILER_GNU
#define GD_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define GD_UNLIKELY(x) (x)
#endif

/* A function kept out of line (its callers stay small enough to inline themselves). */
#if GD_COMPILER_GNU
#define GD_NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define GD_NOINLINE __declspec(noinline)
#else
#define GD_NOINLINE
#endif

/* One build runs everywhere: hot loops get AVX-512 and AVX2 clones picked at load time.
 * The pick is an ifunc, which only ELF systems have (not Windows' PE nor macOS's Mach-O). */
#if GD_COMPILER_GNU && GD_ARCH_X86_64 && defined(__ELF__)
#define GD_SIMD __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GD_SIMD
#endif

/* ---- GCC's vector extensions --------------------------------------------------------------- */
/* GD_HAS_VECTORS: whether kernels may use them (csrc/cpu/cpu.h, argreduce.c); where not, they
 * take their plain-C loops. GD_VECTOR_TYPEDEF(name, T, bytes) declares `name`, a vector of
 * `bytes` bytes of T, with +, <, ?-less blends (cpu.h's GD_VSEL) and [] on lanes. */
#if GD_COMPILER_GNU
#define GD_HAS_VECTORS 1
#define GD_VECTOR_TYPEDEF(name, T, bytes) typedef T name __attribute__((vector_size(bytes)))
#else
#define GD_HAS_VECTORS 0
#endif

/* ---- the spin-wait hint (port.h's gd_port_relax) ------------------------------------------- */
#if GD_COMPILER_GNU && GD_ARCH_X86
#define GD_SPIN_PAUSE() __builtin_ia32_pause()
#elif GD_COMPILER_GNU && GD_ARCH_ARM
#define GD_SPIN_PAUSE() __asm__ __volatile__("yield")
#elif GD_ARCH_X86
#include <emmintrin.h> /* SSE2's _mm_pause: MSVC's and GCC's alike */
#define GD_SPIN_PAUSE() _mm_pause()
#elif defined(_MSC_VER) && GD_ARCH_ARM
#include <intrin.h>
#define GD_SPIN_PAUSE() __yield()
#else
#define GD_SPIN_PAUSE() ((void)0)
#endif

/* ---- CPU features (port_cpu.c) ------------------------------------------------------------- */
/* GD_CPU_SUPPORTS("avx2") where the compiler can ask the CPU itself (GCC's and Clang's
 * builtins on x86-64); elsewhere port_cpu.c asks the system. */
#if GD_COMPILER_GNU && GD_ARCH_X86_64
#define GD_HAS_CPU_SUPPORTS 1
#define GD_CPU_INIT() __builtin_cpu_init()
#define GD_CPU_SUPPORTS(feature) __builtin_cpu_supports(feature)
#else
#define GD_HAS_CPU_SUPPORTS 0
#endif

/* ---- int64 arithmetic that reports overflow ------------------------------------------------ */
/* *out = x * y; returns 1 instead (leaving *out alone) when the product overflows. Strides and
 * offsets go through it wherever a product may not fit. */
static inline int gd_mul_overflows(int64_t *out, int64_t x, int64_t y)
{
#if GD_COMPILER_GNU
    int64_t r;
    if (__builtin_mul_overflow(x, y, &r)) return 1;
    *out = r;
    return 0;
#else /* the overflow tests of CERT C's INT32-C */
    if (x > 0 ? (y > 0 ? x > INT64_MAX / y : y < INT64_MIN / x)
              : (y > 0 ? x < INT64_MIN / y : (x != 0 && y < INT64_MAX / x)))
        return 1;
    *out = x * y;
    return 0;
#endif
}

/* *out = x + y; returns 1 instead (leaving *out alone) when the sum overflows. */
static inline int gd_add_overflows(int64_t *out, int64_t x, int64_t y)
{
#if GD_COMPILER_GNU
    int64_t r;
    if (__builtin_add_overflow(x, y, &r)) return 1;
    *out = r;
    return 0;
#else
    if (y > 0 ? x > INT64_MAX - y : x < INT64_MIN - y) return 1;
    *out = x + y;
    return 0;
#endif
}

#endif /* GPUDEV_COMPILER_H */

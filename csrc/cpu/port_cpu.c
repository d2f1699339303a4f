/* port_cpu.c - port.h's CPU feature detection, one file for every system: it depends on the
 * compiler and the architecture, not on the operating system.
 */
#include "port.h"

#if defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86))
#define WIN32_LEAN_AND_MEAN
#include <windows.h> /* IsProcessorFeaturePresent */
#endif

const char *gd_port_simd_level(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return "avx512f";
    if (__builtin_cpu_supports("avx2")) return "avx2";
    return "baseline";
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86))
    if (IsProcessorFeaturePresent(PF_AVX512F_INSTRUCTIONS_AVAILABLE)) return "avx512f";
    if (IsProcessorFeaturePresent(PF_AVX2_INSTRUCTIONS_AVAILABLE)) return "avx2";
    return "baseline";
#elif defined(__aarch64__) || defined(_M_ARM64)
    return "neon";
#else
    return "baseline";
#endif
}

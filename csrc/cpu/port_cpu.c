/* port_cpu.c - port.h's CPU feature detection, one file for every system: where the compiler
 * can ask the CPU (compiler.h's GD_CPU_SUPPORTS: GCC and Clang on x86-64) it does; elsewhere
 * on Windows the system answers, and other systems report the architecture's baseline.
 */
#include "port.h"

#if !GD_HAS_CPU_SUPPORTS && GD_PORT_WIN32 && GD_ARCH_X86
#define WIN32_LEAN_AND_MEAN
#include <windows.h> /* IsProcessorFeaturePresent */
#endif

const char *gd_port_simd_level(void)
{
#if GD_HAS_CPU_SUPPORTS
    GD_CPU_INIT();
    if (GD_CPU_SUPPORTS("avx512f")) return "avx512f";
    if (GD_CPU_SUPPORTS("avx2")) return "avx2";
    return "baseline";
#elif GD_PORT_WIN32 && GD_ARCH_X86
    if (IsProcessorFeaturePresent(PF_AVX512F_INSTRUCTIONS_AVAILABLE)) return "avx512f";
    if (IsProcessorFeaturePresent(PF_AVX2_INSTRUCTIONS_AVAILABLE)) return "avx2";
    return "baseline";
#elif GD_ARCH_ARM64
    return "neon";
#else
    return "baseline";
#endif
}

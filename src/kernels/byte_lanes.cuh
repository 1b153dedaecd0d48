// Bytewise minimum and maximum of four u8 lanes in a 32-bit word, the fastest way each
// architecture has: the morphology, median, threshold and min/max reduction kernels compare
// four pixels at once with them. Device code only.
#pragma once

#include <cuda_runtime.h>

namespace devmat::detail {

/// Bytewise minimum / maximum of the four u8 lanes of two words: __vminu4 / __vmaxu4's results.
/// From sm_90 by two 16-bit-lane compares (VIMNMX.U16x2) and a byte permute: the high byte of
/// the min (max) of two 16-bit lanes is the min (max) of their high bytes, whatever the low
/// bytes, so the words as they are give bytes 1 and 3, and the words shifted left by 8 bits
/// bytes 0 and 2. Three ALU instructions and two shifts (IMAD.SHL, on the FMA pipe) where
/// __vminu4 takes five ALU instructions and one IMAD (cuobjdump, sm_90); a chain or a sorting
/// network that meets one word twice shifts it once. Earlier architectures: __vminu4.
template <bool kMax>
__device__ __forceinline__ unsigned minmax_u8x4(unsigned a, unsigned b) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  const auto lanes = [](unsigned x, unsigned y) { return kMax ? __vmaxu2(x, y) : __vminu2(x, y); };
  return __byte_perm(lanes(a << 8, b << 8), lanes(a, b), 0x7351);
#else
  return kMax ? __vmaxu4(a, b) : __vminu4(a, b);
#endif
}
__device__ __forceinline__ unsigned vmin_u8x4(unsigned a, unsigned b) { return minmax_u8x4<false>(a, b); }
__device__ __forceinline__ unsigned vmax_u8x4(unsigned a, unsigned b) { return minmax_u8x4<true>(a, b); }

}  // namespace devmat::detail

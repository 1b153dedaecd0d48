// Border index maps shared by the image kernels: a position outside a line of n pixels mapped
// to the pixel it reads. Device code only, no shared memory (the CPU emulation of the kernels,
// test/expr_emu, includes it).
#pragma once

#include "kernels/common.cuh"

namespace devmat::detail {

/// BORDER_REPLICATE: the nearest pixel inside.
__device__ __forceinline__ Index clamp_index(Index i, Index n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

/// OpenCV's BORDER_REFLECT_101 (its default border): ... 2 1 | 0 1 2 ... n-2 n-1 | n-2 ...,
/// repeated for windows wider than the line (as cv::borderInterpolate).
__device__ __forceinline__ Index reflect101(Index i, Index n) {
  if (n == 1) return 0;
  while (i < 0 || i >= n) {
    if (i < 0) i = -i;
    if (i >= n) i = 2 * n - 2 - i;
  }
  return i;
}

}  // namespace devmat::detail

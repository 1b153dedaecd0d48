// Border index maps shared by the image kernels: a position outside a line of n pixels mapped
// to the pixel it reads. Device code only, no shared memory (the CPU emulation of the kernels,
// test/expr_emu, includes it).
#pragma once

#include "kernels/common.cuh"

#include <cstdint>

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

// ------------------------------------------------------------------ u8 neighbourhoods, 4 pixels a word
// The small u8 box and morphology kernels (image_neigh.cuh, image_morph.cuh) run blocks of
// (32, 8) threads, each thread the 4 pixels x .. x + 3 (one word) of R consecutive rows: a
// block's tile is 128 x 8 R pixels. Rows and columns are fused: the thread reads the KR + R - 1
// rows of its window, reduces each along the row in registers, then each output over KR rows.
constexpr int kNbrThreadsX = 32, kNbrThreadsY = 8;
constexpr int kNbrTileW = 4 * kNbrThreadsX;  // 128 pixels
template <int R>
inline constexpr int kNbrTileH = kNbrThreadsY * R;

/// Reads pixels x - 4 .. x + 7 of image row y (which may lie outside the image) as three words
/// l, c, r (byte 0 of l is pixel x - 4). kReflect: positions outside read OpenCV's
/// BORDER_REFLECT_101 in both directions; else they read `fill`'s byte (a row outside: fill).
template <bool kReflect>
__device__ __forceinline__ void load_row_words(const std::uint8_t* __restrict__ img, Index ld, Index rows, Index cols,
                                               Index y, Index x, unsigned fill, unsigned& l, unsigned& c, unsigned& r) {
  if (!kReflect && (y < 0 || y >= rows)) {
    l = c = r = fill;
    return;
  }
  const std::uint8_t* row = img + (kReflect ? reflect101(y, rows) : y) * ld;
  if (x >= 4 && x + 8 <= cols && (reinterpret_cast<std::uintptr_t>(row + x) & 3) == 0) {
    l = __ldg(reinterpret_cast<const unsigned*>(row + x - 4));
    c = __ldg(reinterpret_cast<const unsigned*>(row + x));
    r = __ldg(reinterpret_cast<const unsigned*>(row + x + 4));
    return;
  }
  unsigned w[3];
#pragma unroll
  for (int k = 0; k < 3; ++k) {
    w[k] = 0;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const Index px = x - 4 + 4 * k + b;
      unsigned v;
      if (px >= 0 && px < cols) v = __ldg(row + px);
      else v = kReflect ? __ldg(row + reflect101(px, cols)) : (fill & 255u);
      w[k] |= v << (8 * b);
    }
  }
  l = w[0];
  c = w[1];
  r = w[2];
}

/// Stores the word v as pixels x .. x + 3 of a row (those inside cols).
__device__ __forceinline__ void store_word(std::uint8_t* row, Index x, Index cols, unsigned v) {
  if (x + 4 <= cols && (reinterpret_cast<std::uintptr_t>(row + x) & 3) == 0) {
    *reinterpret_cast<unsigned*>(row + x) = v;
  } else {
#pragma unroll
    for (int b = 0; b < 4; ++b)
      if (x + b < cols) row[x + b] = static_cast<std::uint8_t>(v >> (8 * b));
  }
}

}  // namespace devmat::detail

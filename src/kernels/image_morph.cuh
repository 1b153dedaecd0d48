// Erosion and dilation by a rectangular element, one separable pass at a time (rows, then
// columns), by van Herk / Gil-Werman: the window's line is cut into blocks of k, each block's
// prefix minima (g) and suffix minima (h) are computed once, and the minimum of the window that
// starts at i is min(h[i], g[i + k - 1]): about three comparisons per pixel whatever k is.
// Pixels outside the image are ignored (they read the operation's identity: the type's maximum
// for erosion, its minimum for dilation: OpenCV's default border for erode/dilate). Elements with
// both sides 3 or 5 take one fused pass instead (morph_u8_small_kernel and morph_f32_small_kernel,
// at the end). Device code only; dispatch/image_morph.cuh sizes the grids and launches.
#pragma once

#include "border.cuh"
#include "common.cuh"

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace devmat::detail {

constexpr int kMorphThreads = 256;
constexpr int kMorphAlong = 128;  // outputs of a tile along the pass
constexpr int kMorphAcross = 32;  // lines (rows for the row pass, columns for the column pass) of a tile
// Tiles in shared memory up to this side of the element (2 x 32 x 384 words, 96 KiB); past it
// morph_pass_direct_kernel, whose cost grows with the side.
constexpr int kMorphMaxTiledSide = 257;

/// The shared-memory word of a pixel: 32 bits, so that one line's neighbours and the threads of
/// a warp fall in distinct banks. For u8 a word holds one pixel (row pass) or four adjacent
/// pixels of a row (column pass: four columns at once).
template <class T>
using MorphWord = std::conditional_t<std::is_same_v<T, std::uint8_t>, unsigned, T>;

/// Pixels per shared-memory word: four u8 columns in the column pass, else one.
template <class T, bool kRows>
inline constexpr int kMorphPack = std::is_same_v<T, std::uint8_t> && !kRows ? 4 : 1;

/// min (erosion) or max (dilation), and the value that leaves the other operand unchanged. u8
/// words are compared bytewise (__vminu4 / __vmaxu4), so one word may hold one pixel or four.
template <class T, bool kErode>
struct MorphOp {
  using W = MorphWord<T>;
  __device__ __forceinline__ static W apply(W a, W b) {
    if constexpr (std::is_same_v<T, std::uint8_t>) return kErode ? __vminu4(a, b) : __vmaxu4(a, b);
    else if constexpr (kErode) return b < a ? b : a;
    else return a < b ? b : a;
  }
  __device__ __forceinline__ static W identity() {
    if constexpr (std::is_same_v<T, std::uint8_t>) return kErode ? 0xffffffffu : 0u;
    else return kErode ? __int_as_float(0x7f800000) : __int_as_float(static_cast<int>(0xff800000u));
  }
};

/// One pass of the separable erosion (kErode) or dilation: along rows (kRows) out(y, x) =
/// op over in(y, x - a .. x - a + k - 1), along columns over in(y - a .. y - a + k - 1, x), with
/// a = k / 2 (OpenCV's anchor). Block 256 threads; grid (tiles along x, tiles along y up to the
/// grid's limit, the rest looped over); a tile is kMorphAlong outputs along the pass times
/// kMorphAcross lines (of kMorphPack columns each: u8 columns go four to a word). Dynamic shared
/// memory: two (kMorphAcross, kMorphAlong + k - 1) arrays of
/// words, the input (overwritten by h) and g.
template <class T, bool kErode, bool kRows>
__global__ void __launch_bounds__(kMorphThreads)
morph_pass_kernel(const T* __restrict__ in, Index ld_in, T* __restrict__ out, Index ld_out, Index rows, Index cols,
                  int k, unsigned tiles_y) {
  using Op = MorphOp<T, kErode>;
  using W = MorphWord<T>;
  constexpr int kPack = kMorphPack<T, kRows>;
  DEVMAT_DYNAMIC_SHARED(unsigned char, morph_smem_raw);
  W* const smem = reinterpret_cast<W*>(morph_smem_raw);
  const int len_in = kMorphAlong + k - 1;                 // inputs along one line of the tile
  const int pitch = kRows ? (len_in | 1) : kMorphAcross;  // odd line pitch: no bank conflicts
  const int n_words = kRows ? kMorphAcross * pitch : len_in * kMorphAcross;
  W* const h_smem = smem;            // the input, then the suffix minima h
  W* const g_smem = smem + n_words;  // the prefix minima g
  // Word of (line, position along the line).
  const auto at = [&](int line, int pos) { return kRows ? line * pitch + pos : pos * kMorphAcross + line; };
  const int anchor = k / 2;
  const int n_blocks = (len_in + k - 1) / k;
  const int tid = threadIdx.x;

  const unsigned tile_w = kRows ? kMorphAlong : kMorphAcross * kPack;
  const unsigned tile_h = kRows ? kMorphAcross : kMorphAlong;
  const Index x0 = static_cast<Index>(blockIdx.x) * tile_w;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * tile_h;
    __syncthreads();  // the previous tile is no longer read
    // Load: the contiguous dimension fastest, so a warp reads consecutive pixels.
    for (int e = tid; e < kMorphAcross * len_in; e += kMorphThreads) {
      const int line = kRows ? e / len_in : e % kMorphAcross;
      const int pos = kRows ? e % len_in : e / kMorphAcross;
      const Index y = kRows ? y0 + line : y0 - anchor + pos;
      const Index x = kRows ? x0 - anchor + pos : x0 + line * kPack;
      W word = Op::identity();
      if constexpr (kPack == 1) {
        if (y >= 0 && y < rows && x >= 0 && x < cols) word = static_cast<W>(in[y * ld_in + x]);
      } else if (y >= 0 && y < rows) {  // four columns x .. x + 3; those past the image stay identity
#pragma unroll
        for (int b = 0; b < kPack; ++b)
          if (x + b < cols) word = (word & ~(0xffu << (8 * b))) | (static_cast<unsigned>(in[y * ld_in + x + b]) << (8 * b));
      }
      h_smem[at(line, pos)] = word;
    }
    __syncthreads();
    // Prefix and suffix minima of each block of k along each line; a warp takes one block of 32
    // lines (row pass: an odd pitch apart; column pass: adjacent words).
    for (int task = tid; task < kMorphAcross * n_blocks; task += kMorphThreads) {
      const int line = task % kMorphAcross;
      const int first = (task / kMorphAcross) * k;
      const int last = ::min(first + k, len_in) - 1;
      W acc = h_smem[at(line, first)];
      g_smem[at(line, first)] = acc;
      for (int pos = first + 1; pos <= last; ++pos) {
        acc = Op::apply(acc, h_smem[at(line, pos)]);
        g_smem[at(line, pos)] = acc;
      }
      acc = h_smem[at(line, last)];
      for (int pos = last - 1; pos >= first; --pos) {
        acc = Op::apply(acc, h_smem[at(line, pos)]);
        h_smem[at(line, pos)] = acc;
      }
    }
    __syncthreads();
    // The window that starts at i (output i): min(h[i], g[i + k - 1]).
    for (int e = tid; e < kMorphAcross * kMorphAlong; e += kMorphThreads) {
      const int line = kRows ? e / kMorphAlong : e % kMorphAcross;
      const int i = kRows ? e % kMorphAlong : e / kMorphAcross;
      const Index y = kRows ? y0 + line : y0 + i;
      const Index x = kRows ? x0 + i : x0 + line * kPack;
      if (y >= rows || x >= cols) continue;
      const W v = Op::apply(h_smem[at(line, i)], g_smem[at(line, i + k - 1)]);
      if constexpr (kPack == 1) {
        out[y * ld_out + x] = static_cast<T>(v);
      } else {
        T* dst = out + y * ld_out + x;
        if (x + kPack <= cols && (reinterpret_cast<std::uintptr_t>(dst) & (sizeof(W) - 1)) == 0) {
          *reinterpret_cast<W*>(dst) = v;
        } else {
#pragma unroll
          for (int b = 0; b < kPack; ++b)
            if (x + b < cols) dst[b] = static_cast<T>(v >> (8 * b));
        }
      }
    }
  }
}

/// The same pass for elements past kMorphMaxTiledSide: one output per thread, grid-stride, k
/// reads each (through the read-only cache).
template <class T, bool kErode, bool kRows>
__global__ void __launch_bounds__(kMorphThreads)
morph_pass_direct_kernel(const T* __restrict__ in, Index ld_in, T* __restrict__ out, Index ld_out, Index rows,
                         Index cols, int k) {
  using Op = MorphOp<T, kErode>;
  const Index n = rows * cols;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index e = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += stride) {
    const Index y = e / cols, x = e - y * cols;
    const Index len = kRows ? cols : rows;
    const Index pos = kRows ? x : y;
    const Index lo = pos - k / 2 < 0 ? 0 : pos - k / 2;
    const Index hi = pos - k / 2 + k > len ? len : pos - k / 2 + k;  // one past the window's last pixel in the image
    auto acc = Op::identity();
    for (Index j = lo; j < hi; ++j)
      acc = Op::apply(acc, static_cast<MorphWord<T>>(kRows ? __ldg(in + y * ld_in + j) : __ldg(in + j * ld_in + x)));
    out[y * ld_out + x] = static_cast<T>(acc);
  }
}

/// The KR x KC erosion (kErode) or dilation of u8 `img`, rows and columns fused in one pass, 4
/// pixels a word (__vminu4 / __vmaxu4), R output rows a thread (border.cuh's u8 neighbourhood
/// tile; grid (tiles along x, tiles along y up to the grid's limit, the rest looped over)).
/// Pixels outside the image are ignored, as morph_pass_kernel. KR, KC odd, 3..7 (the funnel
/// shifts stay under 32 bits).
template <int KR, int KC, bool kErode, int R>
__global__ void __launch_bounds__(kNbrThreadsX * kNbrThreadsY)
morph_u8_small_kernel(const std::uint8_t* __restrict__ img, Index ld, std::uint8_t* __restrict__ out, Index ld_out,
                      Index rows, Index cols, unsigned tiles_y) {
  static_assert(KR % 2 == 1 && KC % 2 == 1 && KR >= 3 && KC >= 3 && KR <= 7 && KC <= 7,
                "morph_u8_small_kernel: odd sides from 3 to 7");
  constexpr int kAR = KR / 2, kAC = KC / 2;
  const unsigned fill = kErode ? 0xffffffffu : 0u;
  const auto op = [](unsigned a, unsigned b) { return kErode ? __vminu4(a, b) : __vmaxu4(a, b); };
  const Index x = (static_cast<Index>(blockIdx.x) * kNbrThreadsX + threadIdx.x) * 4;
  if (x >= cols) return;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kNbrTileH<R> + threadIdx.y * R;
    if (y0 >= rows) continue;
    unsigned h[R + KR - 1];  // the rows y0 - kAR .. reduced along the row
#pragma unroll
    for (int i = 0; i < R + KR - 1; ++i) {
      unsigned l, c, r;
      load_row_words<false>(img, ld, rows, cols, y0 - kAR + i, x, fill, l, c, r);
      unsigned v = c;
#pragma unroll
      for (int s = 1; s <= kAC; ++s) v = op(v, op(__funnelshift_r(l, c, 8 * (4 - s)), __funnelshift_r(c, r, 8 * s)));
      h[i] = v;
    }
#pragma unroll
    for (int j = 0; j < R; ++j) {
      if (y0 + j >= rows) break;
      unsigned v = h[j];
#pragma unroll
      for (int i = 1; i < KR; ++i) v = op(v, h[j + i]);
      store_word(out + (y0 + j) * ld_out, x, cols, v);
    }
  }
}

/// Reads pixels x - 4 .. x + 7 of float image row y into w[0 .. 11] (w[4] is pixel x): three
/// aligned 16-byte loads where the row is inside and the pixels x - 4 .. x + 7 lie in it on a
/// 16-byte boundary, else one by one; pixels outside the image (and rows outside) read `fill`.
__device__ __forceinline__ void morph_load_row_f32(const float* __restrict__ img, Index ld, Index rows, Index cols,
                                                   Index y, Index x, float fill, float (&w)[12]) {
  if (y < 0 || y >= rows) {
#pragma unroll
    for (int k = 0; k < 12; ++k) w[k] = fill;
    return;
  }
  const float* row = img + y * ld;
  if (x >= 4 && x + 8 <= cols && (reinterpret_cast<std::uintptr_t>(row + x) & 15) == 0) {
#pragma unroll
    for (int q = 0; q < 3; ++q) {
      const float4 v = __ldg(reinterpret_cast<const float4*>(row + x - 4) + q);
      w[4 * q] = v.x, w[4 * q + 1] = v.y, w[4 * q + 2] = v.z, w[4 * q + 3] = v.w;
    }
    return;
  }
#pragma unroll
  for (int k = 0; k < 12; ++k) {
    const Index px = x - 4 + k;
    w[k] = px >= 0 && px < cols ? __ldg(row + px) : fill;
  }
}

/// The KR x KC erosion (kErode) or dilation of float `img` in one pass: a thread takes four
/// adjacent pixels of R output rows, reduces each of the R + KR - 1 rows it reads along the row
/// in registers, then each output over KR of them (the u8 kernel's tiling, kNbrTileW x
/// kNbrTileH<R> pixels a block). Pixels outside the image are ignored, as morph_pass_kernel. The
/// two-pass kernels read and wrote a workspace and ran at 0.78 TB/s for a 3x3 element at 4096^2.
template <int KR, int KC, bool kErode, int R>
__global__ void __launch_bounds__(kNbrThreadsX * kNbrThreadsY)
morph_f32_small_kernel(const float* __restrict__ img, Index ld, float* __restrict__ out, Index ld_out, Index rows,
                       Index cols, unsigned tiles_y) {
  static_assert(KR % 2 == 1 && KC % 2 == 1 && KR >= 3 && KC >= 3 && KR <= 9 && KC <= 9,
                "morph_f32_small_kernel: odd sides from 3 to 9");
  using Op = MorphOp<float, kErode>;
  constexpr int kAR = KR / 2, kAC = KC / 2;
  const Index x = (static_cast<Index>(blockIdx.x) * kNbrThreadsX + threadIdx.x) * 4;
  if (x >= cols) return;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kNbrTileH<R> + threadIdx.y * R;
    if (y0 >= rows) continue;
    float h[R + KR - 1][4];  // the rows y0 - kAR .. reduced along the row
#pragma unroll
    for (int i = 0; i < R + KR - 1; ++i) {
      float w[12];
      morph_load_row_f32(img, ld, rows, cols, y0 - kAR + i, x, Op::identity(), w);
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        float v = w[4 + c];
#pragma unroll
        for (int d = 1; d <= kAC; ++d) v = Op::apply(v, Op::apply(w[4 + c - d], w[4 + c + d]));
        h[i][c] = v;
      }
    }
#pragma unroll
    for (int j = 0; j < R; ++j) {
      if (y0 + j >= rows) break;
      float v[4];
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        v[c] = h[j][c];
#pragma unroll
        for (int i = 1; i < KR; ++i) v[c] = Op::apply(v[c], h[j + i][c]);
      }
      float* dst = out + (y0 + j) * ld_out + x;
      if (x + 4 <= cols && (reinterpret_cast<std::uintptr_t>(dst) & 15) == 0) {
        *reinterpret_cast<float4*>(dst) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int c = 0; c < 4; ++c)
          if (x + c < cols) dst[c] = v[c];
      }
    }
  }
}

}  // namespace devmat::detail

// Candidate kernels for the small-kernel image operations that lose to NPP at 4096x4096
// (issue 14): u8 box 3x3/5x5, u8 erode/dilate 3x3, f32 filter2d 5x5, u8 threshold, u8
// rgb_to_gray. They are NOT dispatched by the public functions yet: bench/bench_image_next.cu
// times them beside "ours" and NPP, test/gpu/test_image_next.cu checks them against the
// current kernels. What they change:
//  - u8 pixels move 4 (one 32-bit word) or 16 (one 128-bit vector) at a time, never a byte per
//    thread; min/max work on four pixels at once (__vminu4 / __vmaxu4).
//  - 3x3 / 5x5 neighbourhoods run in ONE kernel (rows and columns fused, each thread a 4-pixel
//    wide column of R outputs with its vertical window in registers), instead of two passes
//    that write and re-read a full intermediate image.
//  - filter2d 5x5: each thread 4 x 8 outputs from a shared-memory tile filled with float4 loads,
//    read back as float4 (conflict-free), the 25 weights a kernel parameter (constant bank
//    operands of the FMAs, per launch, so concurrent launches cannot overwrite each other's).
// Device code only; dispatch/image_next.cuh launches.
#pragma once

#include "kernels/border.cuh"
#include "kernels/common.cuh"
#include "kernels/image_intensity.cuh"  // ThresholdKind

#include <cuda_runtime.h>

#include <cstdint>

namespace devmat::detail {

// ------------------------------------------------------------------ streaming u8 maps
constexpr int kStreamThreads = 256;

/// OpenCV's threshold of 4 u8 pixels at once (t is already floored and clamped to -1..255,
/// maxval saturated). kind: ThresholdKind (image_intensity.cuh's order; otsu is not here).
struct ThresholdWord {
  unsigned t4;    // t (0..255) in every byte; t < 0 gives 0
  unsigned max4;  // maxval in every byte
  int t;
  int kind;
  __device__ __forceinline__ unsigned operator()(const unsigned (&p)[1]) const {
    // Bytes above t: 0xff; with t = -1 every byte is above.
    const unsigned above = t < 0 ? 0xffffffffu : __vcmpgtu4(p[0], t4);
    switch (kind) {
      case kThBinary: return above & max4;
      case kThBinaryInv: return ~above & max4;
      case kThTrunc: return __vminu4(p[0], t4);  // t < 0: t4 = 0, every pixel 0
      case kThToZero: return above & p[0];
      default: return ~above & p[0];  // kThToZeroInv
    }
  }
};

/// cvtColor RGB2GRAY of 4 u8 pixels from three planes, OpenCV's 14-bit fixed point.
struct GrayWord {
  __device__ __forceinline__ unsigned operator()(const unsigned (&p)[3]) const {
    unsigned out = 0;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const unsigned r = (p[0] >> (8 * b)) & 255u, g = (p[1] >> (8 * b)) & 255u, bl = (p[2] >> (8 * b)) & 255u;
      const unsigned y = (r * 4899u + g * 9617u + bl * 1868u + (1u << 13)) >> 14;  // <= 255
      out |= y << (8 * b);
    }
    return out;
  }
};

/// The input planes of stream_u8_kernel.
template <int N>
struct StreamArgs {
  const std::uint8_t* in[N];
  Index ld[N];
};

/// out(y, x) = f(in_0(y, x), .., in_{N-1}(y, x)) for u8 planes, 16 pixels a thread. Each output
/// row is cut into 16-byte chunks aligned on the OUTPUT's address (the first and last may be
/// partial), so a dense output of any width stores whole chunks with one uint4; a chunk also
/// loads with one uint4 per plane where the planes' rows share that alignment (dense planes of
/// the output's width do), else byte by byte (pixel b of a chunk goes through f as byte 0 of a
/// word). A row has ceil(cols / 16) + 1 chunk slots (one is empty on an aligned row);
/// consecutive threads take consecutive chunks, grid-stride over rows x slots.
template <int N, class F>
__global__ void __launch_bounds__(kStreamThreads)
stream_u8_kernel(const __grid_constant__ StreamArgs<N> a, std::uint8_t* __restrict__ out, Index ld_out, Index rows,
                 Index cols, F f) {
  const Index chunks = (cols + 15) / 16 + 1;
  const Index n = rows * chunks;
  const Index stride = static_cast<Index>(gridDim.x) * kStreamThreads;
  for (Index e = static_cast<Index>(blockIdx.x) * kStreamThreads + threadIdx.x; e < n; e += stride) {
    const Index y = e / chunks;
    std::uint8_t* const out_row = out + y * ld_out;
    const Index x = (e - y * chunks) * 16 - static_cast<Index>(reinterpret_cast<std::uintptr_t>(out_row) & 15);
    const Index lo = x < 0 ? 0 : x, hi = x + 16 < cols ? x + 16 : cols;  // the chunk's pixels in the row
    if (lo >= hi) continue;
    bool vec = x >= 0 && x + 16 <= cols;  // then out_row + x is 16-byte aligned
#pragma unroll
    for (int k = 0; k < N; ++k) vec = vec && (reinterpret_cast<std::uintptr_t>(a.in[k] + y * a.ld[k] + x) & 15) == 0;
    if (vec) {
      uint4 v[N];
#pragma unroll
      for (int k = 0; k < N; ++k) v[k] = __ldg(reinterpret_cast<const uint4*>(a.in[k] + y * a.ld[k] + x));
      uint4 o;
      unsigned w[N];
#pragma unroll
      for (int k = 0; k < N; ++k) w[k] = v[k].x;
      o.x = f(w);
#pragma unroll
      for (int k = 0; k < N; ++k) w[k] = v[k].y;
      o.y = f(w);
#pragma unroll
      for (int k = 0; k < N; ++k) w[k] = v[k].z;
      o.z = f(w);
#pragma unroll
      for (int k = 0; k < N; ++k) w[k] = v[k].w;
      o.w = f(w);
      *reinterpret_cast<uint4*>(out_row + x) = o;
    } else {
      for (Index px = lo; px < hi; ++px) {
        unsigned w[N];
#pragma unroll
        for (int k = 0; k < N; ++k) w[k] = __ldg(a.in[k] + y * a.ld[k] + px);
        out_row[px] = static_cast<std::uint8_t>(f(w) & 255u);
      }
    }
  }
}

// ------------------------------------------------------------------ fused u8 3x3 / 5x5 neighbourhoods
// Block (32, 8); each thread the 4 pixels x .. x + 3 (one word) of R rows, so a block's tile is
// 128 x 8R pixels. The thread reads the K + R - 1 rows of its window, each as three words
// (pixels x - 4 .. x + 7), reduces each row horizontally in registers, then each output over K
// reduced rows. Vertical neighbours are re-read by the thread above/below (through L1/L2). R
// trades the re-read halo ((K - 1) / R) against registers (occupancy): 4, 8 (the default) or
// 16, all three benchmarked.
constexpr int kNbrThreadsX = 32, kNbrThreadsY = 8;
constexpr int kNbrRows = 8;                                 // R: output rows of a thread, default
constexpr int kNbrTileW = 4 * kNbrThreadsX;                 // 128 pixels
template <int R>
inline constexpr int kNbrTileH = kNbrThreadsY * R;          // 64 rows for R = 8

/// Morphology's border: a pixel outside the image reads `fill` (the operation's identity).
/// Box's border (kReflect): OpenCV's BORDER_REFLECT_101 in both directions.
/// Reads pixels x - 4 .. x + 7 of image row y (which may lie outside the image) as three words
/// l, c, r (byte 0 of l is pixel x - 4).
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

/// The K x K erosion (kErode) or dilation of u8 `img`, pixels outside the image ignored
/// (OpenCV's default morphology border), fused rows + columns, 4 pixels a word. K odd, 3..7.
template <int K, bool kErode, int R = kNbrRows>
__global__ void __launch_bounds__(kNbrThreadsX * kNbrThreadsY)
morph_u8_fused_kernel(const std::uint8_t* __restrict__ img, Index ld, std::uint8_t* __restrict__ out, Index ld_out,
                      Index rows, Index cols, unsigned tiles_y) {
  static_assert(K % 2 == 1 && K >= 3 && K <= 7, "morph_u8_fused_kernel: K odd, 3..7 (shifts stay under 32 bits)");
  constexpr int kA = K / 2;
  const unsigned fill = kErode ? 0xffffffffu : 0u;
  const auto op = [](unsigned a, unsigned b) { return kErode ? __vminu4(a, b) : __vmaxu4(a, b); };
  const Index x = (static_cast<Index>(blockIdx.x) * kNbrThreadsX + threadIdx.x) * 4;
  if (x >= cols) return;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kNbrTileH<R> + threadIdx.y * R;
    if (y0 >= rows) continue;
    unsigned h[R + K - 1];  // horizontal reductions of rows y0 - kA ..
#pragma unroll
    for (int i = 0; i < R + K - 1; ++i) {
      unsigned l, c, r;
      load_row_words<false>(img, ld, rows, cols, y0 - kA + i, x, fill, l, c, r);
      unsigned v = c;
#pragma unroll
      for (int s = 1; s <= kA; ++s) v = op(v, op(__funnelshift_r(l, c, 8 * (4 - s)), __funnelshift_r(c, r, 8 * s)));
      h[i] = v;
    }
#pragma unroll
    for (int j = 0; j < R; ++j) {
      if (y0 + j >= rows) break;
      unsigned v = h[j];
#pragma unroll
      for (int i = 1; i < K; ++i) v = op(v, h[j + i]);
      store_word(out + (y0 + j) * ld_out, x, cols, v);
    }
  }
}

/// The normalised K x K box filter of u8 `img`, borders reflected (101), fused rows + columns:
/// each output is (2 sum + K^2) / (2 K^2), the exact int sum rounded half up, as box_store.
template <int K, int R = kNbrRows>
__global__ void __launch_bounds__(kNbrThreadsX * kNbrThreadsY)
box_u8_fused_kernel(const std::uint8_t* __restrict__ img, Index ld, std::uint8_t* __restrict__ out, Index ld_out,
                    Index rows, Index cols, unsigned tiles_y) {
  static_assert(K % 2 == 1 && K >= 3 && K <= 7, "box_u8_fused_kernel: K odd, 3..7 (shifts stay under 32 bits)");
  constexpr int kA = K / 2;
  constexpr unsigned kArea = K * K;
  const Index x = (static_cast<Index>(blockIdx.x) * kNbrThreadsX + threadIdx.x) * 4;
  if (x >= cols) return;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kNbrTileH<R> + threadIdx.y * R;
    if (y0 >= rows) continue;
    // Horizontal sums of rows y0 - kA .., two pixels to a word in 16-bit lanes: h[i][0] holds
    // pixels x and x + 2, h[i][1] pixels x + 1 and x + 3. A lane's sum is at most K^2 255
    // (K <= 7: 12495), so whole-word adds never carry into the other lane.
    unsigned h[R + K - 1][2];
#pragma unroll
    for (int i = 0; i < R + K - 1; ++i) {
      unsigned l, c, r;
      load_row_words<true>(img, ld, rows, cols, y0 - kA + i, x, 0u, l, c, r);
      unsigned even = 0, odd = 0;
#pragma unroll
      for (int d = -kA; d <= kA; ++d) {
        // Pixels x + d .. x + d + 3.
        const unsigned w = d < 0 ? __funnelshift_r(l, c, 8 * (4 + d)) : (d == 0 ? c : __funnelshift_r(c, r, 8 * d));
        even += w & 0x00ff00ffu;
        odd += (w >> 8) & 0x00ff00ffu;
      }
      h[i][0] = even;
      h[i][1] = odd;
    }
    const auto round_mean = [](unsigned sum) { return (2 * sum + kArea) / (2 * kArea); };  // <= 255
#pragma unroll
    for (int j = 0; j < R; ++j) {
      if (y0 + j >= rows) break;
      unsigned even = 0, odd = 0;
#pragma unroll
      for (int i = 0; i < K; ++i) {
        even += h[j + i][0];
        odd += h[j + i][1];
      }
      const unsigned v = round_mean(even & 0xffffu) | round_mean(odd & 0xffffu) << 8 | round_mean(even >> 16) << 16 |
                         round_mean(odd >> 16) << 24;
      store_word(out + (y0 + j) * ld_out, x, cols, v);
    }
  }
}

// ------------------------------------------------------------------ filter2d 5x5, register-blocked
constexpr int kF5ThreadsX = 32, kF5ThreadsY = 8;
constexpr int kF5Cols = 4;                                  // outputs of a thread along x
constexpr int kF5Rows = 8;                                  // and along y
constexpr int kF5TileW = kF5ThreadsX * kF5Cols;             // 128
constexpr int kF5TileH = kF5ThreadsY * kF5Rows;             // 64
constexpr int kF5SmemW = kF5TileW + 8;                      // pixels x0 - 4 .. x0 + 131 (16-byte aligned)
constexpr int kF5SmemH = kF5TileH + 4;                      // rows y0 - 2 .. y0 + 65

/// The 25 weights, row-major, by value (a kernel parameter: one launch's own).
struct Taps5x5 {
  float w[25];
};

/// out = img correlated with the 5x5 `taps`, borders replicated (as filter2d_kernel). Block
/// (32, 8), grid (tiles along x, tiles along y up to kMaxGridY). The (68, 136) input tile is
/// filled with float4 loads where the whole tile lies inside the image on 16-byte aligned rows,
/// else with clamped scalar loads; each thread reads each of its 12 input rows as three float4.
__global__ void __launch_bounds__(kF5ThreadsX * kF5ThreadsY)
filter2d_5x5_kernel(const float* __restrict__ img, Index ld, float* __restrict__ out, Index ld_out, Index rows,
                    Index cols, const __grid_constant__ Taps5x5 taps, unsigned tiles_y) {
  __shared__ __align__(16) float in_smem[kF5SmemH][kF5SmemW];  // (68, 136)
  const int tid = threadIdx.y * kF5ThreadsX + threadIdx.x;
  const Index x0 = static_cast<Index>(blockIdx.x) * kF5TileW;
  const bool aligned_rows = (reinterpret_cast<std::uintptr_t>(img) & 15) == 0 && ld % 4 == 0;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kF5TileH;
    __syncthreads();  // the previous tile is no longer read
    const bool inside = aligned_rows && x0 >= 4 && x0 - 4 + kF5SmemW <= cols && y0 >= 2 && y0 - 2 + kF5SmemH <= rows;
    if (inside) {
      constexpr int kVecW = kF5SmemW / 4;  // 34 float4 a row
      for (int e = tid; e < kF5SmemH * kVecW; e += kF5ThreadsX * kF5ThreadsY) {
        const int i = e / kVecW, j = e - i * kVecW;
        const float4 v = __ldg(reinterpret_cast<const float4*>(img + (y0 - 2 + i) * ld + x0 - 4) + j);
        *reinterpret_cast<float4*>(&in_smem[i][4 * j]) = v;
      }
    } else {
      for (int e = tid; e < kF5SmemH * kF5SmemW; e += kF5ThreadsX * kF5ThreadsY) {
        const int i = e / kF5SmemW, j = e - i * kF5SmemW;
        in_smem[i][j] = __ldg(img + clamp_index(y0 - 2 + i, rows) * ld + clamp_index(x0 - 4 + j, cols));
      }
    }
    __syncthreads();

    float acc[kF5Rows][kF5Cols] = {};
    const int lx = kF5Cols * threadIdx.x;  // smem column of pixel x - 4
    const int ly = kF5Rows * threadIdx.y;  // smem row of pixel row y - 2
#pragma unroll
    for (int i = 0; i < kF5Rows + 4; ++i) {
      float p[12];  // pixels x - 4 .. x + 7 of input row y - 2 + i
#pragma unroll
      for (int q = 0; q < 3; ++q) {
        const float4 v = *reinterpret_cast<const float4*>(&in_smem[ly + i][lx + 4 * q]);
        p[4 * q] = v.x;
        p[4 * q + 1] = v.y;
        p[4 * q + 2] = v.z;
        p[4 * q + 3] = v.w;
      }
#pragma unroll
      for (int r = 0; r < kF5Rows; ++r) {
        const int ky = i - r;
        if (ky < 0 || ky >= 5) continue;  // resolved at compile time
#pragma unroll
        for (int c = 0; c < kF5Cols; ++c)
#pragma unroll
          for (int kx = 0; kx < 5; ++kx) acc[r][c] = fmaf(p[c + kx + 2], taps.w[ky * 5 + kx], acc[r][c]);
      }
    }

    const Index x = x0 + lx;
#pragma unroll
    for (int r = 0; r < kF5Rows; ++r) {
      const Index y = y0 + ly + r;
      if (y >= rows) break;
      float* dst = out + y * ld_out + x;
      if (x + 4 <= cols && (reinterpret_cast<std::uintptr_t>(dst) & 15) == 0) {
        *reinterpret_cast<float4*>(dst) = make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
      } else {
#pragma unroll
        for (int c = 0; c < kF5Cols; ++c)
          if (x + c < cols) dst[c] = acc[r][c];
      }
    }
  }
}

}  // namespace devmat::detail

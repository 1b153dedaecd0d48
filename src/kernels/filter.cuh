// Image filters: 2D correlation, the two passes of a separable Gaussian, and Sobel. Each block
// loads its output tile plus the halo into shared memory with the border replicated (indices
// clamped while loading), so the inner loops read shared memory only and have no branches.
// Weights are copied into shared memory by each block (never __constant__ memory, which
// concurrent launches on different streams would overwrite). Device code only; dispatch/filter.cuh
// sizes the grids and launches.
#pragma once

#include "border.cuh"
#include "common.cuh"

#include <cuda_runtime.h>

#include <cstdint>

namespace devmat::detail {

// Every filter kernel runs 32 x 8 threads: a warp spans one row of the tile, so shared-memory
// reads of a row are conflict-free and global loads and stores are coalesced.
constexpr int kFilterThreadsX = 32;
constexpr int kFilterThreadsY = 8;
constexpr int kFilterThreads = kFilterThreadsX * kFilterThreadsY;

constexpr int kMaxFilterSide = 31;  // filter2d kernels: odd sides up to 31

// filter2d: a 32 x 128 output tile, each thread 16 vertically adjacent outputs of one column, so
// one shared-memory read feeds up to 16 multiply-adds (a register sliding window), and each
// kernel column's weights are read once for 16 outputs.
constexpr int kF2dRowsPerThread = 16;
constexpr int kF2dTileW = kFilterThreadsX;                       // 32
constexpr int kF2dTileH = kFilterThreadsY * kF2dRowsPerThread;   // 128

// Gaussian passes in shared memory up to this radius (sigma <= 21.3); beyond, the global-memory
// kernels below.
constexpr int kMaxTiledGaussRadius = 64;
constexpr int kMaxTiledGaussTaps = 2 * kMaxTiledGaussRadius + 1;
// Row pass: an 8 x 128 tile, each thread 4 outputs 32 columns apart.
constexpr int kRowPassPerThread = 4;
constexpr int kRowTileW = kFilterThreadsX * kRowPassPerThread;  // 128
constexpr int kRowTileH = kFilterThreadsY;                      // 8
// Column pass: a 64 x 32 tile, each thread 8 outputs 8 rows apart.
constexpr int kColPassPerThread = 8;
constexpr int kColTileW = kFilterThreadsX;                      // 32
constexpr int kColTileH = kFilterThreadsY * kColPassPerThread;  // 64

// Sobel: a 32 x 32 tile, each thread 4 outputs 8 rows apart.
constexpr int kSobelPerThread = 4;
constexpr int kSobelTileW = kFilterThreadsX;                    // 32
constexpr int kSobelTileH = kFilterThreadsY * kSobelPerThread;  // 32

/// Gaussian weights passed by value: kernel parameters belong to one launch, so concurrent
/// launches with different sigmas cannot see each other's weights. Kernels take it as
/// `const __grid_constant__`, so reading it through a pointer makes no per-thread copy.
struct GaussTaps {
  float w[kMaxTiledGaussTaps];
};

__device__ __forceinline__ int thread_rank() { return threadIdx.y * kFilterThreadsX + threadIdx.x; }

/// Loads the h x w window of `src` (rows x cols, row-major) whose top-left element is (y0, x0)
/// into `dst` (row pitch `pitch`), replicating the border: a position outside the image reads
/// the nearest element inside it. The block's threads stride the window, a warp per row.
__device__ __forceinline__ void load_tile_replicate(float* dst, int pitch, int h, int w,
                                                    const float* __restrict__ src, Index ld, Index rows,
                                                    Index cols, Index y0, Index x0) {
  for (int i = threadIdx.y; i < h; i += kFilterThreadsY) {
    const float* src_row = src + clamp_index(y0 + i, rows) * ld;
    for (int j = threadIdx.x; j < w; j += kFilterThreadsX) dst[i * pitch + j] = __ldg(src_row + clamp_index(x0 + j, cols));
  }
}

/// Copies n weights into shared memory.
__device__ __forceinline__ void load_weights(float* w_smem, const float* w, int n) {
  for (int i = thread_rank(); i < n; i += kFilterThreads) w_smem[i] = w[i];
}

// ------------------------------------------------------------------ filter2d
/// One thread's R vertically adjacent outputs: `in_smem` points at the thread's first input
/// (its column, first row of its window), `w_smem` at the (KH, kw) weights. For each kernel
/// column the KH weights sit in registers and each of the R + KH - 1 inputs is read once.
template <int KH, int R>
__device__ __forceinline__ void correlate_column(const float* in_smem, int pitch, const float* w_smem, int kw,
                                                 float (&acc)[R]) {
  for (int kx = 0; kx < kw; ++kx) {
    float w[KH];
#pragma unroll
    for (int ky = 0; ky < KH; ++ky) w[ky] = w_smem[ky * kw + kx];
#pragma unroll
    for (int y = 0; y < R + KH - 1; ++y) {
      const float p = in_smem[y * pitch + kx];
#pragma unroll
      for (int r = 0; r < R; ++r)
        if (y - r >= 0 && y - r < KH) acc[r] = fmaf(p, w[y - r], acc[r]);  // resolved at compile time
    }
  }
}

/// out = img correlated with the (KH, kw) `weights`, borders replicated. Block (32, 8), grid
/// (tiles along x, tiles along y up to kMaxGridY); dynamic shared memory holds the weights and
/// the (kF2dTileH + KH - 1, kF2dTileW + kw - 1) input tile.
template <int KH>
__global__ void __launch_bounds__(kFilterThreads)
filter2d_kernel(const float* __restrict__ img, Index ld, float* __restrict__ out, Index rows, Index cols,
                const float* __restrict__ weights, int kw, unsigned tiles_y) {
  static_assert(KH % 2 == 1 && KH >= 1 && KH <= kMaxFilterSide, "filter2d_kernel: KH must be odd, 1..31");
  DEVMAT_DYNAMIC_SHARED(float, smem);
  float* w_smem = smem;              // (KH, kw)
  float* in_smem = smem + KH * kw;   // (kF2dTileH + KH - 1, pitch)
  const int pitch = kF2dTileW + kw - 1;
  load_weights(w_smem, weights, KH * kw);

  const Index x0 = static_cast<Index>(blockIdx.x) * kF2dTileW;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kF2dTileH;
    __syncthreads();  // weights are in; the previous tile is no longer read
    load_tile_replicate(in_smem, pitch, kF2dTileH + KH - 1, pitch, img, ld, rows, cols, y0 - KH / 2, x0 - kw / 2);
    __syncthreads();

    float acc[kF2dRowsPerThread] = {};
    const int ty0 = threadIdx.y * kF2dRowsPerThread;
    correlate_column<KH>(in_smem + ty0 * pitch + threadIdx.x, pitch, w_smem, kw, acc);

    const Index x = x0 + threadIdx.x;
#pragma unroll
    for (int r = 0; r < kF2dRowsPerThread; ++r) {
      const Index y = y0 + ty0 + r;
      if (y < rows && x < cols) out[y * cols + x] = acc[r];
    }
  }
}

// ------------------------------------------------------------------ filter2d, small square kernels
// K x K kernels, K = 3, 5, 7: each thread 4 x 8 outputs (4 along x, 8 along y) from a
// shared-memory tile filled with float4 loads and read back as float4 (conflict-free), the K^2
// weights in registers (read once a thread from the weights' device copy, the same address for
// every thread: one transaction a warp).
constexpr int kF2sCols = 4;                                   // outputs of a thread along x
constexpr int kF2sRows = 8;                                   // and along y
constexpr int kF2sTileW = kFilterThreadsX * kF2sCols;         // 128
constexpr int kF2sTileH = kFilterThreadsY * kF2sRows;         // 64
constexpr int kF2sSmemW = kF2sTileW + 8;                      // pixels x0 - 4 .. x0 + 131 (16-byte aligned rows)
constexpr int kF2sMaxSide = 7;                                // K / 2 <= 4: the halo fits the 4 pixels each side

/// out (ld_out) = img correlated with the K x K `weights` (row-major, device), borders replicated,
/// as filter2d_kernel. Block (32, 8), grid (tiles along x, tiles along y up to kMaxGridY). The
/// (64 + K - 1, 136) input tile is filled with float4 loads where the whole tile lies inside the
/// image on 16-byte aligned rows, else with clamped scalar loads; each thread reads each of its
/// 8 + K - 1 input rows as three float4 (pixels x - 4 .. x + 7).
template <int K>
__global__ void __launch_bounds__(kFilterThreads)
filter2d_small_kernel(const float* __restrict__ img, Index ld, float* __restrict__ out, Index ld_out, Index rows,
                      Index cols, const float* __restrict__ weights, unsigned tiles_y) {
  static_assert(K % 2 == 1 && K >= 3 && K <= kF2sMaxSide, "filter2d_small_kernel: K odd, 3..7");
  constexpr int kA = K / 2;
  constexpr int kSmemH = kF2sTileH + K - 1;
  __shared__ __align__(16) float in_smem[kSmemH][kF2sSmemW];  // (64 + K - 1, 136)
  float w[K * K];
#pragma unroll
  for (int i = 0; i < K * K; ++i) w[i] = __ldg(weights + i);
  const int tid = thread_rank();
  const Index x0 = static_cast<Index>(blockIdx.x) * kF2sTileW;
  const bool aligned_rows = (reinterpret_cast<std::uintptr_t>(img) & 15) == 0 && ld % 4 == 0;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kF2sTileH;
    __syncthreads();  // the previous tile is no longer read
    const bool inside = aligned_rows && x0 >= 4 && x0 - 4 + kF2sSmemW <= cols && y0 >= kA && y0 - kA + kSmemH <= rows;
    if (inside) {
      constexpr int kVecW = kF2sSmemW / 4;  // 34 float4 a row
      for (int e = tid; e < kSmemH * kVecW; e += kFilterThreads) {
        const int i = e / kVecW, j = e - i * kVecW;
        const float4 v = __ldg(reinterpret_cast<const float4*>(img + (y0 - kA + i) * ld + x0 - 4) + j);
        *reinterpret_cast<float4*>(&in_smem[i][4 * j]) = v;
      }
    } else {
      for (int e = tid; e < kSmemH * kF2sSmemW; e += kFilterThreads) {
        const int i = e / kF2sSmemW, j = e - i * kF2sSmemW;
        in_smem[i][j] = __ldg(img + clamp_index(y0 - kA + i, rows) * ld + clamp_index(x0 - 4 + j, cols));
      }
    }
    __syncthreads();

    float acc[kF2sRows][kF2sCols] = {};
    const int lx = kF2sCols * threadIdx.x;  // smem column of pixel x - 4
    const int ly = kF2sRows * threadIdx.y;  // smem row of pixel row y - kA
#pragma unroll
    for (int i = 0; i < kF2sRows + K - 1; ++i) {
      float p[12];  // pixels x - 4 .. x + 7 of input row y - kA + i
#pragma unroll
      for (int q = 0; q < 3; ++q) {
        const float4 v = *reinterpret_cast<const float4*>(&in_smem[ly + i][lx + 4 * q]);
        p[4 * q] = v.x;
        p[4 * q + 1] = v.y;
        p[4 * q + 2] = v.z;
        p[4 * q + 3] = v.w;
      }
#pragma unroll
      for (int r = 0; r < kF2sRows; ++r) {
        const int ky = i - r;
        if (ky < 0 || ky >= K) continue;  // resolved at compile time
#pragma unroll
        for (int c = 0; c < kF2sCols; ++c)
#pragma unroll
          for (int kx = 0; kx < K; ++kx) acc[r][c] = fmaf(p[c + kx + 4 - kA], w[ky * K + kx], acc[r][c]);
      }
    }

    const Index x = x0 + lx;
#pragma unroll
    for (int r = 0; r < kF2sRows; ++r) {
      const Index y = y0 + ly + r;
      if (y >= rows) break;
      float* dst = out + y * ld_out + x;
      if (x + kF2sCols <= cols && (reinterpret_cast<std::uintptr_t>(dst) & 15) == 0) {
        *reinterpret_cast<float4*>(dst) = make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
      } else {
#pragma unroll
        for (int c = 0; c < kF2sCols; ++c)
          if (x + c < cols) dst[c] = acc[r][c];
      }
    }
  }
}

// ------------------------------------------------------------------ filter2d 3x3 / 5x5, no shared memory
// Each thread 4 x R outputs (4 along x, R along y) read straight from global memory (L1): per
// input row one float4 (pixels x .. x + 3) and K / 2 scalars each side, used by the up to K output
// rows it feeds while it is in registers; no tile, no barrier. Block (32, 8): a 128 x 8 R tile.
constexpr int kF2dDirectCols = 4;
constexpr int kF2dDirectTileW = kFilterThreadsX * kF2dDirectCols;  // 128
template <int R>
inline constexpr int kF2dDirectTileH = kFilterThreadsY * R;

/// out (ld_out) = img correlated with the K x K `weights` (row-major, device), borders replicated,
/// as filter2d_small_kernel; grid (tiles along x, tiles along y up to kMaxGridY, the rest looped
/// over). The float4 is read where the thread's 4 pixels lie inside on a 16-byte aligned address,
/// else 4 clamped scalars; the neighbours left and right are clamped scalars.
template <int K, int R>
__global__ void __launch_bounds__(kFilterThreads)
filter2d_direct_kernel(const float* __restrict__ img, Index ld, float* __restrict__ out, Index ld_out, Index rows,
                       Index cols, const float* __restrict__ weights, unsigned tiles_y) {
  static_assert((K == 3 || K == 5) && R >= 1, "filter2d_direct_kernel: K 3 or 5");
  constexpr int kA = K / 2;
  constexpr int kC = kF2dDirectCols;
  float w[K * K];
#pragma unroll
  for (int i = 0; i < K * K; ++i) w[i] = __ldg(weights + i);
  const Index x = (static_cast<Index>(blockIdx.x) * kFilterThreadsX + threadIdx.x) * kC;
  if (x >= cols) return;
  const bool whole = x + kC <= cols;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kF2dDirectTileH<R> + threadIdx.y * R;
    if (y0 >= rows) continue;
    float acc[R][kC] = {};
#pragma unroll
    for (int i = 0; i < R + K - 1; ++i) {
      if (i - (K - 1) >= rows - y0) break;  // feeds no output row inside the image
      const float* row = img + clamp_index(y0 - kA + i, rows) * ld;
      float p[kC + 2 * kA];  // pixels x - kA .. x + kC - 1 + kA
#pragma unroll
      for (int j = 0; j < kA; ++j) {
        p[j] = __ldg(row + clamp_index(x - kA + j, cols));
        p[kA + kC + j] = __ldg(row + clamp_index(x + kC + j, cols));
      }
      if (whole && (reinterpret_cast<std::uintptr_t>(row + x) & 15) == 0) {
        const float4 v = __ldg(reinterpret_cast<const float4*>(row + x));
        p[kA] = v.x;
        p[kA + 1] = v.y;
        p[kA + 2] = v.z;
        p[kA + 3] = v.w;
      } else {
#pragma unroll
        for (int c = 0; c < kC; ++c) p[kA + c] = __ldg(row + clamp_index(x + c, cols));
      }
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int ky = i - r;
        if (ky < 0 || ky >= K) continue;  // resolved at compile time
#pragma unroll
        for (int c = 0; c < kC; ++c)
#pragma unroll
          for (int kx = 0; kx < K; ++kx) acc[r][c] = fmaf(p[c + kx], w[ky * K + kx], acc[r][c]);
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const Index y = y0 + r;
      if (y >= rows) break;
      float* dst = out + y * ld_out + x;
      if (whole && (reinterpret_cast<std::uintptr_t>(dst) & 15) == 0) {
        *reinterpret_cast<float4*>(dst) = make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
      } else {
#pragma unroll
        for (int c = 0; c < kC; ++c)
          if (x + c < cols) dst[c] = acc[r][c];
      }
    }
  }
}

// ------------------------------------------------------------------ separable Gaussian
/// The tile of one pass of the separable Gaussian. Row pass (kRows): an 8 x 128 tile, each
/// thread 4 outputs 32 columns apart, taps along x. Column pass: a 64 x 32 tile, each thread 8
/// outputs 8 rows apart, taps along y.
template <bool kRows>
struct GaussPass {
  static constexpr int kTileW = kRows ? kRowTileW : kColTileW;
  static constexpr int kTileH = kRows ? kRowTileH : kColTileH;
  static constexpr int kPerThread = kRows ? kRowPassPerThread : kColPassPerThread;
  static constexpr int kStepX = kRows ? kFilterThreadsX : 0;  // between a thread's outputs
  static constexpr int kStepY = kRows ? 0 : kFilterThreadsY;
};

/// One pass: out(y, x) = sum_k w[k] in(y, clamp(x + k - radius)) along rows (kRows), or
/// sum_k w[k] in(clamp(y + k - radius), x) along columns. Block (32, 8), grid (tiles along x,
/// tiles along y up to kMaxGridY); dynamic shared memory: 2 radius + 1 weights, then the tile
/// with its halo of `radius` on both sides along the pass.
template <bool kRows>
__global__ void __launch_bounds__(kFilterThreads)
gauss_pass_kernel(const float* __restrict__ in, Index ld, float* __restrict__ out, Index rows, Index cols,
                  const __grid_constant__ GaussTaps taps, int radius, unsigned tiles_y) {
  using P = GaussPass<kRows>;
  DEVMAT_DYNAMIC_SHARED(float, smem);
  const int n_taps = 2 * radius + 1;
  const int halo_x = kRows ? 2 * radius : 0, halo_y = kRows ? 0 : 2 * radius;
  const int pitch = P::kTileW + halo_x;
  const int tap_step = kRows ? 1 : pitch;                              // shared-memory step of one tap
  const int out_step = P::kStepY * pitch + P::kStepX;                  // and of one output
  float* w_smem = smem;            // (n_taps)
  float* in_smem = smem + n_taps;  // (kTileH + halo_y, pitch)
  load_weights(w_smem, taps.w, n_taps);

  const Index x0 = static_cast<Index>(blockIdx.x) * P::kTileW;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * P::kTileH;
    __syncthreads();  // weights are in; the previous tile is no longer read
    load_tile_replicate(in_smem, pitch, P::kTileH + halo_y, pitch, in, ld, rows, cols, y0 - halo_y / 2,
                        x0 - halo_x / 2);
    __syncthreads();

    float acc[P::kPerThread] = {};
    const float* first_smem = in_smem + threadIdx.y * pitch + threadIdx.x;
    for (int k = 0; k < n_taps; ++k) {
      const float w = w_smem[k];
#pragma unroll
      for (int j = 0; j < P::kPerThread; ++j) acc[j] = fmaf(first_smem[k * tap_step + j * out_step], w, acc[j]);
    }
#pragma unroll
    for (int j = 0; j < P::kPerThread; ++j) {
      const Index y = y0 + threadIdx.y + j * P::kStepY, x = x0 + threadIdx.x + j * P::kStepX;
      if (y < rows && x < cols) out[y * cols + x] = acc[j];
    }
  }
}

/// Either pass for radii past kMaxTiledGaussRadius (sigma > 21.3): one thread per output,
/// grid-stride, inputs and weights read through the read-only cache. `along_rows` picks the
/// row pass.
__global__ void __launch_bounds__(kFilterThreads)
gauss_pass_global_kernel(const float* __restrict__ in, Index ld, float* __restrict__ out, Index rows, Index cols,
                         const float* __restrict__ weights, int radius, bool along_rows) {
  const Index n = rows * cols;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index e = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += stride) {
    const Index y = e / cols, x = e - y * cols;
    float acc = 0.f;
    if (along_rows) {
      const float* row = in + y * ld;
      for (int k = 0; k <= 2 * radius; ++k)
        acc = fmaf(__ldg(row + clamp_index(x + k - radius, cols)), __ldg(weights + k), acc);
    } else {
      for (int k = 0; k <= 2 * radius; ++k)
        acc = fmaf(__ldg(in + clamp_index(y + k - radius, rows) * ld + x), __ldg(weights + k), acc);
    }
    out[e] = acc;
  }
}

// ------------------------------------------------------------------ Sobel
/// out = sqrt(gx^2 + gy^2) with the 3x3 Sobel derivatives, borders replicated. Block (32, 8).
__global__ void __launch_bounds__(kFilterThreads)
sobel_kernel(const float* __restrict__ in, Index ld, float* __restrict__ out, Index rows, Index cols, unsigned tiles_y) {
  __shared__ float in_smem[kSobelTileH + 2][kSobelTileW + 2];  // (34, 34)
  const Index x0 = static_cast<Index>(blockIdx.x) * kSobelTileW;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kSobelTileH;
    __syncthreads();
    load_tile_replicate(&in_smem[0][0], kSobelTileW + 2, kSobelTileH + 2, kSobelTileW + 2, in, ld, rows, cols, y0 - 1,
                        x0 - 1);
    __syncthreads();
    const int lx = threadIdx.x;
#pragma unroll
    for (int j = 0; j < kSobelPerThread; ++j) {
      const int ly = threadIdx.y + j * kFilterThreadsY;
      const float a = in_smem[ly][lx], b = in_smem[ly][lx + 1], c = in_smem[ly][lx + 2];
      const float d = in_smem[ly + 1][lx], f = in_smem[ly + 1][lx + 2];
      const float g = in_smem[ly + 2][lx], h = in_smem[ly + 2][lx + 1], i = in_smem[ly + 2][lx + 2];
      const float gx = (c + 2.f * f + i) - (a + 2.f * d + g);
      const float gy = (g + 2.f * h + i) - (a + 2.f * b + c);
      const Index y = y0 + ly, x = x0 + lx;
      if (y < rows && x < cols) out[y * cols + x] = sqrtf(gx * gx + gy * gy);
    }
  }
}

}  // namespace devmat::detail

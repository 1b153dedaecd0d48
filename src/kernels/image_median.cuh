// Median filter over a k x k window (k = 3, 5, 7), borders replicated (OpenCV's medianBlur). The
// median is found by forgetful selection: of the first k^2 / 2 + 2 window values, the minimum
// and the maximum cannot be the median; both are dropped and the next value taken, until three
// are left, whose median it is. Unrolled into registers (about k^4 / 2 min/max pairs), and for
// u8 four horizontally adjacent pixels at once in one 32-bit word (__vminu4 / __vmaxu4).
// Device code only; dispatch/image_median.cuh launches.
#pragma once

#include "common.cuh"

#include <cuda_runtime.h>

#include <cstdint>

namespace devmat::detail {

constexpr int kMedianThreadsX = 32;
constexpr int kMedianThreadsY = 8;
constexpr int kMedianThreads = kMedianThreadsX * kMedianThreadsY;
constexpr int kMedianRowsPerThread = 4;                                    // outputs 8 rows apart
constexpr int kMedianTileH = kMedianThreadsY * kMedianRowsPerThread;      // 32
constexpr int kMedianPixelsPerThreadU8 = 4;                               // one word of 4 bytes
constexpr int kMedianTileWU8 = kMedianThreadsX * kMedianPixelsPerThreadU8;  // 128
constexpr int kMedianTileWF32 = kMedianThreadsX;                          // 32

/// Four u8 lanes in a word.
struct MedianU8x4 {
  __device__ __forceinline__ static unsigned lo(unsigned a, unsigned b) { return __vminu4(a, b); }
  __device__ __forceinline__ static unsigned hi(unsigned a, unsigned b) { return __vmaxu4(a, b); }
};
struct MedianF32 {
  __device__ __forceinline__ static float lo(float a, float b) { return b < a ? b : a; }
  __device__ __forceinline__ static float hi(float a, float b) { return a < b ? b : a; }
};

/// The median of the N (odd) values fetch(0..N-1), by forgetful selection, fully unrolled.
template <int N, class Op, class W, class Fetch>
__device__ __forceinline__ W forgetful_median(const Fetch& fetch) {
  static_assert(N % 2 == 1 && N >= 3, "forgetful_median: N odd, at least 3");
  constexpr int kR = N / 2 + 2;  // values held: ceil(N / 2) + 1
  W w[kR];
#pragma unroll
  for (int i = 0; i < kR; ++i) w[i] = fetch(i);
#pragma unroll
  for (int s = kR; s > 3; --s) {  // w[0..s) held; N' = 2 s - 3 values left in all
#pragma unroll
    for (int i = 1; i < s; ++i) {  // the minimum to w[0]
      const W a = w[0], b = w[i];
      w[0] = Op::lo(a, b);
      w[i] = Op::hi(a, b);
    }
#pragma unroll
    for (int i = 1; i < s - 1; ++i) {  // the maximum to w[s - 1]
      const W a = w[i], b = w[s - 1];
      w[i] = Op::lo(a, b);
      w[s - 1] = Op::hi(a, b);
    }
    w[0] = fetch(N - s + 3);  // both dropped; the next value in w[0]; w[0..s - 1) held
  }
  return Op::hi(Op::lo(w[0], w[1]), Op::lo(Op::hi(w[0], w[1]), w[2]));
}

__device__ __forceinline__ Index median_clamp(Index i, Index n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

/// u8 median, k x k. Block (32, 8); a 32 x 128 tile, each thread 4 adjacent pixels (one word) in
/// each of 4 rows 8 apart. Shared memory: the (32 + k - 1, 128 + k - 1) tile, replicated at the
/// borders, row pitch a multiple of 4 bytes plus a spare word for the last funnel shift.
template <int K>
__global__ void __launch_bounds__(kMedianThreads)
median_u8_kernel(const std::uint8_t* __restrict__ in, Index ld, std::uint8_t* __restrict__ out, Index ld_out,
                 Index rows, Index cols, unsigned tiles_y) {
  constexpr int kRad = K / 2;
  constexpr int kInH = kMedianTileH + K - 1;
  constexpr int kInW = kMedianTileWU8 + K - 1;
  constexpr int kPitchWords = (kInW + 3) / 4 + 1;
  __shared__ unsigned in_smem[kInH][kPitchWords];
  const int tid = threadIdx.y * kMedianThreadsX + threadIdx.x;
  const Index x0 = static_cast<Index>(blockIdx.x) * kMedianTileWU8;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kMedianTileH;
    __syncthreads();
    // One word (4 bytes along the row) per step; positions past kInW are never used.
    for (int e = tid; e < kInH * kPitchWords; e += kMedianThreads) {
      const int i = e / kPitchWords, wj = e % kPitchWords;
      const std::uint8_t* src_row = in + median_clamp(y0 - kRad + i, rows) * ld;
      unsigned word = 0;
#pragma unroll
      for (int b = 0; b < 4; ++b) word |= static_cast<unsigned>(src_row[median_clamp(x0 - kRad + 4 * wj + b, cols)]) << (8 * b);
      in_smem[i][wj] = word;
    }
    __syncthreads();
    const int lx = threadIdx.x * kMedianPixelsPerThreadU8;  // first byte of this thread's outputs in the tile
#pragma unroll 1
    for (int r = 0; r < kMedianRowsPerThread; ++r) {
      const int ly = threadIdx.y + r * kMedianThreadsY;
      // Value i of the window of all four pixels: bytes lx + dx .. lx + dx + 3 of row ly + dy.
      const auto fetch = [&](int i) {
        const int dy = i / K, dx = i % K;
        const int byte = lx + dx;
        const unsigned* row = in_smem[ly + dy];
        return __funnelshift_r(row[byte / 4], row[byte / 4 + 1], 8 * (byte % 4));
      };
      const unsigned med = forgetful_median<K * K, MedianU8x4, unsigned>(fetch);
      const Index y = y0 + ly, x = x0 + lx;
      if (y < rows) {
        std::uint8_t* dst = out + y * ld_out + x;
        if (x + 3 < cols && (reinterpret_cast<std::uintptr_t>(dst) & 3) == 0) {
          *reinterpret_cast<unsigned*>(dst) = med;
        } else {
#pragma unroll
          for (int b = 0; b < 4; ++b)
            if (x + b < cols) dst[b] = static_cast<std::uint8_t>(med >> (8 * b));
        }
      }
    }
  }
}

/// f32 median, k x k. Block (32, 8); a 32 x 32 tile, each thread 4 outputs 8 rows apart.
template <int K>
__global__ void __launch_bounds__(kMedianThreads)
median_f32_kernel(const float* __restrict__ in, Index ld, float* __restrict__ out, Index ld_out, Index rows, Index cols,
                  unsigned tiles_y) {
  constexpr int kRad = K / 2;
  constexpr int kInH = kMedianTileH + K - 1;
  constexpr int kInW = kMedianTileWF32 + K - 1;
  __shared__ float in_smem[kInH][kInW];
  const int tid = threadIdx.y * kMedianThreadsX + threadIdx.x;
  const Index x0 = static_cast<Index>(blockIdx.x) * kMedianTileWF32;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kMedianTileH;
    __syncthreads();
    for (int e = tid; e < kInH * kInW; e += kMedianThreads) {
      const int i = e / kInW, j = e % kInW;
      in_smem[i][j] = in[median_clamp(y0 - kRad + i, rows) * ld + median_clamp(x0 - kRad + j, cols)];
    }
    __syncthreads();
    const int lx = threadIdx.x;
#pragma unroll 1
    for (int r = 0; r < kMedianRowsPerThread; ++r) {
      const int ly = threadIdx.y + r * kMedianThreadsY;
      const auto fetch = [&](int i) { return in_smem[ly + i / K][lx + i % K]; };
      const float med = forgetful_median<K * K, MedianF32, float>(fetch);
      const Index y = y0 + ly, x = x0 + lx;
      if (y < rows && x < cols) out[y * ld_out + x] = med;
    }
  }
}

}  // namespace devmat::detail

// Median filter over a k x k window (k = 3, 5, 7), borders replicated (OpenCV's medianBlur). The
// median is found by forgetful selection: of the first k^2 / 2 + 2 window values, the minimum
// and the maximum cannot be the median; both are dropped and the next value taken, until three
// are left, whose median it is. Unrolled into registers (about k^4 / 2 min/max pairs), and for
// u8 four horizontally adjacent pixels at once in one 32-bit word (vmin_u8x4 / vmax_u8x4). The
// pair variant (kPair) takes two vertically adjacent outputs a thread, the k (k - 1) values
// their windows share once (k 5: 120 + 2 x 45 min/max pairs for two outputs, not 2 x 165).
// Device code only; dispatch/image_median.cuh launches.
#pragma once

#include "byte_lanes.cuh"
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
  __device__ __forceinline__ static unsigned lo(unsigned a, unsigned b) { return vmin_u8x4(a, b); }
  __device__ __forceinline__ static unsigned hi(unsigned a, unsigned b) { return vmax_u8x4(a, b); }
};
/// Floats by fminf / fmaxf: one FMNMX each, where a compare and a select (`b < a ? b : a`) are
/// two instructions (FSETP, FSEL), as in the morphology kernels. A NaN that meets a number is
/// passed over (the pair keeps the number twice).
struct MedianF32 {
  __device__ __forceinline__ static float lo(float a, float b) { return fminf(a, b); }
  __device__ __forceinline__ static float hi(float a, float b) { return fmaxf(a, b); }
};

/// Forgetful selection in stages, fully unrolled: forgetful_start takes values 0..kHeld-1,
/// forgetful_take values I0..I1-1, forgetful_result the median once all N are in. Each stage ends
/// with the drop of the held minimum and maximum that the next value needs, so the state after a
/// prefix of the values depends on that prefix alone: outputs whose windows share values take
/// those first, once, and go on from copies of the state.
template <int N>
inline constexpr int kForgetfulHeld = N / 2 + 2;  // ceil(N / 2) + 1

/// Before value I (I >= kHeld) N + 3 - I values are held in w[0..s): the minimum to w[0], the
/// maximum to w[s - 1]; both are dropped (w[0] is overwritten next, w[s - 1] no longer held).
template <int N, int I, class Op, class W>
__device__ __forceinline__ void forgetful_drop(W (&w)[kForgetfulHeld<N>]) {
  constexpr int s = N + 3 - I;
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
}

template <int N, class Op, class W, int I, int I1, class Fetch>
__device__ __forceinline__ void forgetful_take_from(W (&w)[kForgetfulHeld<N>], const Fetch& fetch, int offset) {
  if constexpr (I < I1) {
    w[0] = fetch(I - offset);
    if constexpr (I + 1 < N) forgetful_drop<N, I + 1, Op>(w);
    forgetful_take_from<N, Op, W, I + 1, I1>(w, fetch, offset);
  }
}

/// Values 0..kHeld-1: fetch(0..kHeld-1).
template <int N, class Op, class W, class Fetch>
__device__ __forceinline__ void forgetful_start(W (&w)[kForgetfulHeld<N>], const Fetch& fetch) {
  static_assert(N % 2 == 1 && N >= 3, "forgetful selection: N odd, at least 3");
#pragma unroll
  for (int i = 0; i < kForgetfulHeld<N>; ++i) w[i] = fetch(i);
  if constexpr (kForgetfulHeld<N> < N) forgetful_drop<N, kForgetfulHeld<N>, Op>(w);
}

/// Values I0..I1-1 (kHeld <= I0 <= I1 <= N): fetch(0..I1-I0-1).
template <int N, int I0, int I1, class Op, class W, class Fetch>
__device__ __forceinline__ void forgetful_take(W (&w)[kForgetfulHeld<N>], const Fetch& fetch) {
  static_assert(kForgetfulHeld<N> <= I0 && I0 <= I1 && I1 <= N, "forgetful_take: values kHeld..N-1");
  forgetful_take_from<N, Op, W, I0, I1>(w, fetch, I0);
}

/// The median, all N values taken: that of the three held.
template <int N, class Op, class W>
__device__ __forceinline__ W forgetful_result(const W (&w)[kForgetfulHeld<N>]) {
  return Op::hi(Op::lo(w[0], w[1]), Op::lo(Op::hi(w[0], w[1]), w[2]));
}

/// The median of the N (odd) values fetch(0..N-1).
template <int N, class Op, class W, class Fetch>
__device__ __forceinline__ W forgetful_median(const Fetch& fetch) {
  W w[kForgetfulHeld<N>];
  forgetful_start<N, Op>(w, fetch);
  forgetful_take<N, kForgetfulHeld<N>, N, Op>(w, [&](int i) { return fetch(kForgetfulHeld<N> + i); });
  return forgetful_result<N, Op>(w);
}

/// The medians of two vertically adjacent K x K windows, rows 0..K-1 and 1..K of at(dy, dx)
/// (dy 0..K, dx 0..K-1), which share K (K - 1) values: those first, once, then each window's
/// own row from a copy of the state.
template <int K, class Op, class W, class FetchRow>
__device__ __forceinline__ void forgetful_median_pair(const FetchRow& at, W& top, W& bottom) {
  constexpr int N = K * K, kShared = K * (K - 1);
  static_assert(kShared >= kForgetfulHeld<N>, "the pair shares at least the values held at the start");
  const auto shared = [&](int i) { return at(1 + i / K, i % K); };
  W w[kForgetfulHeld<N>];
  forgetful_start<N, Op>(w, shared);
  forgetful_take<N, kForgetfulHeld<N>, kShared, Op>(w, [&](int i) { return shared(kForgetfulHeld<N> + i); });
  W v[kForgetfulHeld<N>];
#pragma unroll
  for (int i = 0; i < kForgetfulHeld<N>; ++i) v[i] = w[i];
  forgetful_take<N, kShared, N, Op>(w, [&](int i) { return at(0, i); });
  forgetful_take<N, kShared, N, Op>(v, [&](int i) { return at(K, i); });
  top = forgetful_result<N, Op>(w);
  bottom = forgetful_result<N, Op>(v);
}

__device__ __forceinline__ Index median_clamp(Index i, Index n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

/// A thread's outputs of one tile, kMedianRowsPerThread rows of it 8 apart (rows ty + 8 r), or
/// (kPair) as many in pairs of adjacent rows (2 p, 2 p + 1 for p = ty + 8 r), whose windows share
/// all rows but one (forgetful_median_pair). at(ly, dy, dx): value (dy, dx) of the window of the
/// output in tile row ly; store(ly, median).
template <int K, bool kPair, class Op, class W, class At, class Store>
__device__ __forceinline__ void median_tile_rows(const At& at, const Store& store) {
  if constexpr (kPair) {
#pragma unroll 1
    for (int r = 0; r < kMedianRowsPerThread / 2; ++r) {
      const int ly = 2 * (threadIdx.y + r * kMedianThreadsY);  // rows ly and ly + 1
      W top, bottom;
      forgetful_median_pair<K, Op>([&](int dy, int dx) { return at(ly, dy, dx); }, top, bottom);
      store(ly, top);
      store(ly + 1, bottom);
    }
  } else {
#pragma unroll 1
    for (int r = 0; r < kMedianRowsPerThread; ++r) {
      const int ly = threadIdx.y + r * kMedianThreadsY;
      store(ly, forgetful_median<K * K, Op, W>([&](int i) { return at(ly, i / K, i % K); }));
    }
  }
}

/// The f32 kernels' input tile: rows y0 - kRad .. of columns x0 - kRad .., kInH x kInW, borders
/// replicated, one element a step for the block's threads.
template <int kRad, int kInH, int kInW>
__device__ __forceinline__ void median_load_f32_tile(float (&tile)[kInH][kInW], const float* __restrict__ in, Index ld,
                                                     Index rows, Index cols, Index y0, Index x0, int tid) {
  for (int e = tid; e < kInH * kInW; e += kMedianThreads) {
    const int i = e / kInW, j = e % kInW;
    tile[i][j] = in[median_clamp(y0 - kRad + i, rows) * ld + median_clamp(x0 - kRad + j, cols)];
  }
}

/// u8 median, k x k. Block (32, 8); a 32 x 128 tile, each thread 4 adjacent pixels (one word) in
/// each of 4 rows 8 apart, or (kPair) in 2 pairs of adjacent rows (rows 2p, 2p + 1 for p = ty,
/// ty + 8), whose windows share all rows but one (forgetful_median_pair). Shared memory: the (32 + k - 1, 128 + k - 1) tile, replicated at the
/// borders, row pitch a multiple of 4 bytes plus a spare word for the last funnel shift.
template <int K, bool kPair = false>
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
    const auto store = [&](int ly, unsigned med) {
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
    };
    // Value (dy, dx) of the window of all four pixels: bytes lx + dx .. lx + dx + 3 of row ly + dy.
    const auto at = [&](int ly, int dy, int dx) {
      const int byte = lx + dx;
      const unsigned* row = in_smem[ly + dy];
      return __funnelshift_r(row[byte / 4], row[byte / 4 + 1], 8 * (byte % 4));
    };
    median_tile_rows<K, kPair, MedianU8x4, unsigned>(at, store);
  }
}

/// f32 median, k x k. Block (32, 8); a 32 x 32 tile, each thread 4 outputs 8 rows apart, or
/// (kPair) 2 pairs of adjacent rows as the u8 kernel.
template <int K, bool kPair = false>
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
    median_load_f32_tile<kRad>(in_smem, in, ld, rows, cols, y0, x0, tid);
    __syncthreads();
    const int lx = threadIdx.x;
    const auto store = [&](int ly, float med) {
      const Index y = y0 + ly, x = x0 + lx;
      if (y < rows && x < cols) out[y * ld_out + x] = med;
    };
    median_tile_rows<K, kPair, MedianF32, float>([&](int ly, int dy, int dx) { return in_smem[ly + dy][lx + dx]; },
                                                 store);
  }
}

/// f32 median 5x5, four outputs a thread: a 2 x 2 block, whose windows share a 4 x 4 core (16
/// values), each row of the block its window's fifth row (4 more) and each output its own column
/// (5): 48 + 2 x 72 + 4 x 45 min/max pairs for four outputs, not 4 x 165. Block (32, 8); a 32 x 64
/// tile: thread (tx, ty) has columns 2 tx, 2 tx + 1 of rows 2 p, 2 p + 1 for p = ty, ty + 8.
constexpr int kMedianQuadTileW = 2 * kMedianThreadsX;  // 64

template <int K>
__global__ void __launch_bounds__(kMedianThreads)
median_f32_quad_kernel(const float* __restrict__ in, Index ld, float* __restrict__ out, Index ld_out, Index rows, Index cols,
                       unsigned tiles_y) {
  static_assert(K == 5, "the 2 x 2 block's shared core fills the held values for 5 x 5 only");
  constexpr int N = K * K, kHeld = kForgetfulHeld<N>;
  constexpr int kRad = K / 2;
  constexpr int kInH = kMedianTileH + K - 1;
  constexpr int kInW = kMedianQuadTileW + K - 1;
  __shared__ float in_smem[kInH][kInW];  // (TILE_H + 4, 64 + 4)
  const int tid = threadIdx.y * kMedianThreadsX + threadIdx.x;
  const Index x0 = static_cast<Index>(blockIdx.x) * kMedianQuadTileW;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kMedianTileH;
    __syncthreads();
    median_load_f32_tile<kRad>(in_smem, in, ld, rows, cols, y0, x0, tid);
    __syncthreads();
    const int lx = 2 * threadIdx.x;
#pragma unroll 1
    for (int r = 0; r < kMedianRowsPerThread / 2; ++r) {
      const int ly = 2 * (threadIdx.y + r * kMedianThreadsY);
      float v[K + 1][K + 1];  // the block's (K + 1) x (K + 1) input: window (a, b) is v[a..a+K)[b..b+K)
#pragma unroll
      for (int i = 0; i <= K; ++i)
#pragma unroll
        for (int j = 0; j <= K; ++j) v[i][j] = in_smem[ly + i][lx + j];
      const auto core = [&](int i) { return v[1 + i / (K - 1)][1 + i % (K - 1)]; };
      float w[kHeld];
      forgetful_start<N, MedianF32>(w, core);
      forgetful_take<N, kHeld, (K - 1) * (K - 1), MedianF32>(w, [&](int i) { return core(kHeld + i); });
#pragma unroll
      for (int a = 0; a < 2; ++a) {
        float wa[kHeld];
#pragma unroll
        for (int i = 0; i < kHeld; ++i) wa[i] = w[i];
        forgetful_take<N, (K - 1) * (K - 1), K * (K - 1), MedianF32>(wa, [&](int i) { return v[a ? K : 0][1 + i]; });
#pragma unroll
        for (int b = 0; b < 2; ++b) {
          float wb[kHeld];
#pragma unroll
          for (int i = 0; i < kHeld; ++i) wb[i] = wa[i];
          forgetful_take<N, K * (K - 1), N, MedianF32>(wb, [&](int i) { return v[a + i][b ? K : 0]; });
          const Index y = y0 + ly + a, x = x0 + lx + b;
          if (y < rows && x < cols) out[y * ld_out + x] = forgetful_result<N, MedianF32>(wb);
        }
      }
    }
  }
}


}  // namespace devmat::detail

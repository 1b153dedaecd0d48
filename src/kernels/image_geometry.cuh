// Geometry kernels: resize (nearest, linear, area), warp_affine, flip, rotate90, on one-channel
// u8 and f32 images. Device code only. Where OpenCV's result depends on how a coordinate is
// rounded, the arithmetic is OpenCV 4's (imgproc/src/resize.cpp, imgwarp.cpp), with the rounding
// spelled out (__dmul_rn, __dadd_rn: no fused multiply-add that the CPU does not do).
#pragma once

#include "kernels/common.cuh"

#include <cstdint>
#include <type_traits>

namespace devmat::detail {

constexpr int kGeomThreadsX = 32, kGeomThreadsY = 8;  // block of the per-pixel kernels
constexpr int kGeomVec = 4;                            // output pixels per thread, along a row
constexpr int kRotTile = 32;                           // rotate90's square tile

/// OpenCV's cvRound / saturate_cast<int>(float or double): nearest, ties to even.
__device__ __forceinline__ int round_even(float v) { return __float2int_rn(v); }
__device__ __forceinline__ int round_even(double v) { return __double2int_rn(v); }

template <class T>
__device__ __forceinline__ T saturate_from_float(float v) {
  if constexpr (std::is_same_v<T, std::uint8_t>) return static_cast<T>(::min(::max(round_even(v), 0), 255));
  else return v;
}

// ---------------------------------------------------------------- the per-pixel driver
/// out (rows x cols, dense) = f(y, x) for every pixel; each thread writes kGeomVec consecutive
/// pixels of a row, as one vector store where `vec_ok` (cols a multiple of kGeomVec). grid.x
/// covers ::ceil(cols / kGeomVec) / kGeomThreadsX, grid.y strides over the rows.
template <class T, class F>
__global__ void __launch_bounds__(kGeomThreadsX* kGeomThreadsY)
    geom_map_kernel(T* __restrict__ out, Index rows, Index cols, bool vec_ok, F f) {
  const Index x0 = (static_cast<Index>(blockIdx.x) * kGeomThreadsX + threadIdx.x) * kGeomVec;
  if (x0 >= cols) return;
  for (Index y = static_cast<Index>(blockIdx.y) * kGeomThreadsY + threadIdx.y; y < rows;
       y += static_cast<Index>(gridDim.y) * kGeomThreadsY) {
    T* row = out + y * cols;
    if (vec_ok) {  // x0 + kGeomVec <= cols: cols is a multiple of kGeomVec
      Pack<T, kGeomVec> p;
#pragma unroll
      for (int k = 0; k < kGeomVec; ++k) p.v[k] = f(y, x0 + k);
      *reinterpret_cast<Pack<T, kGeomVec>*>(row + x0) = p;
    } else {
#pragma unroll
      for (int k = 0; k < kGeomVec; ++k)
        if (x0 + k < cols) row[x0 + k] = f(y, x0 + k);
    }
  }
}

// ---------------------------------------------------------------- resize
/// INTER_NEAREST: source index min(floor(d * inv), n - 1), inv = 1 / (dst / src) in double.
struct NearestIndex {
  double inv;
  Index n;
  __device__ __forceinline__ Index operator()(Index d) const {
    const Index s = static_cast<Index>(::floor(__dmul_rn(static_cast<double>(d), inv)));
    return s < n - 1 ? s : n - 1;
  }
};

template <class T>
struct ResizeNearest {
  const T* src;
  Index ld;
  NearestIndex ix, iy;
  __device__ __forceinline__ T operator()(Index y, Index x) const { return __ldg(src + iy(y) * ld + ix(x)); }
};

/// One axis of a linear (or INTER_AREA upscale) resize: the two taps s0, s1 and the weight of s1.
struct LinearTap {
  Index s0, s1;
  float f;
};

/// OpenCV's coefficients for output index d: linear fx = (d + 0.5) scale - 0.5; area-mode
/// (INTER_AREA enlarging) sx = floor(d scale), fx = (d + 1) - (sx + 1) / scale, snapped to 0 when
/// <= 0. Taps past an edge collapse onto it with weight 0.
template <bool kArea>
__device__ __forceinline__ LinearTap linear_tap(Index d, double scale, double inv_scale, Index n) {
  Index s;
  float f;
  if constexpr (!kArea) {
    f = static_cast<float>(__dadd_rn(__dmul_rn(static_cast<double>(d) + 0.5, scale), -0.5));
    s = static_cast<Index>(::floorf(f));
    f -= static_cast<float>(s);
  } else {
    s = static_cast<Index>(::floor(__dmul_rn(static_cast<double>(d), scale)));
    f = static_cast<float>(__dadd_rn(static_cast<double>(d + 1), -__dmul_rn(static_cast<double>(s + 1), inv_scale)));
    f = f <= 0.f ? 0.f : f - ::floorf(f);
  }
  if (s < 0) {
    s = 0;
    f = 0.f;
  }
  if (s >= n - 1) {
    s = n - 1;
    f = 0.f;
  }
  return {s, s + 1 < n ? s + 1 : s, f};
}

/// Bilinear resize. u8 in OpenCV's fixed point: weights round(w * 2048) as shorts, the row pass
/// in int, the column pass rounded by 22 bits; f32 in float as OpenCV.
template <class T, bool kArea>
struct ResizeLinear {
  const T* src;
  Index ld, src_rows, src_cols;
  double scale_x, inv_x, scale_y, inv_y;
  __device__ __forceinline__ T operator()(Index y, Index x) const {
    const LinearTap ty = linear_tap<kArea>(y, scale_y, inv_y, src_rows);
    const LinearTap tx = linear_tap<kArea>(x, scale_x, inv_x, src_cols);
    const T* r0 = src + ty.s0 * ld;
    const T* r1 = src + ty.s1 * ld;
    if constexpr (std::is_same_v<T, std::uint8_t>) {
      const int a0 = round_even((1.f - tx.f) * 2048.f), a1 = round_even(tx.f * 2048.f);
      const int b0 = round_even((1.f - ty.f) * 2048.f), b1 = round_even(ty.f * 2048.f);
      const int h0 = __ldg(r0 + tx.s0) * a0 + __ldg(r0 + tx.s1) * a1;
      const int h1 = __ldg(r1 + tx.s0) * a0 + __ldg(r1 + tx.s1) * a1;
      const long long v = static_cast<long long>(b0) * h0 + static_cast<long long>(b1) * h1;
      return static_cast<T>(::min(::max(static_cast<int>((v + (1 << 21)) >> 22), 0), 255));
    } else {
      const float a0 = 1.f - tx.f, b0 = 1.f - ty.f;
      const float h0 = __fadd_rn(__fmul_rn(__ldg(r0 + tx.s0), a0), __fmul_rn(__ldg(r0 + tx.s1), tx.f));
      const float h1 = __fadd_rn(__fmul_rn(__ldg(r1 + tx.s0), a0), __fmul_rn(__ldg(r1 + tx.s1), tx.f));
      return __fadd_rn(__fmul_rn(h0, b0), __fmul_rn(h1, ty.f));
    }
  }
};

/// INTER_AREA shrinking (both scales >= 1): the mean over the footprint [d scale, (d + 1) scale)
/// of each output pixel, partial pixels weighted by their overlap (OpenCV's area table, with
/// its 1e-3 cut-off), clipped to the image; the sum in float, rounded to u8 as saturate_cast.
template <class T>
struct ResizeArea {
  const T* src;
  Index ld, src_rows, src_cols;
  double scale_x, scale_y;

  /// The footprint of output index d along an axis of n source pixels: first and last source
  /// index, the weights of the partial ends (0 if none) and 1 / cell width.
  struct Span {
    Index s1, s2;  // whole pixels s1 .. s2 - 1
    float w_lo, w_hi, inv_cell;
  };
  __device__ __forceinline__ static Span span(Index d, double scale, Index n) {
    const double f1 = __dmul_rn(static_cast<double>(d), scale), f2 = __dadd_rn(f1, scale);
    const double cell = ::fmin(scale, __dadd_rn(static_cast<double>(n), -f1));
    Index s2 = static_cast<Index>(::floor(f2));
    Index s1 = static_cast<Index>(::ceil(f1));
    s2 = s2 < n - 1 ? s2 : n - 1;
    s1 = s1 < s2 ? s1 : s2;
    Span sp;
    sp.s1 = s1;
    sp.s2 = s2;
    sp.inv_cell = static_cast<float>(1.0 / cell);
    const double lo = static_cast<double>(s1) - f1;
    sp.w_lo = lo > 1e-3 ? static_cast<float>(lo / cell) : 0.f;
    const double hi = ::fmin(::fmin(f2 - static_cast<double>(s2), 1.0), cell);
    sp.w_hi = hi > 1e-3 ? static_cast<float>(hi / cell) : 0.f;
    return sp;
  }

  __device__ __forceinline__ float row_sum(const T* r, const Span& sx) const {
    float acc = 0.f;
    if (sx.w_lo > 0.f) acc += sx.w_lo * static_cast<float>(__ldg(r + sx.s1 - 1));
    for (Index j = sx.s1; j < sx.s2; ++j) acc += sx.inv_cell * static_cast<float>(__ldg(r + j));
    if (sx.w_hi > 0.f) acc += sx.w_hi * static_cast<float>(__ldg(r + sx.s2));
    return acc;
  }

  /// The output pixel whose footprints are sy (rows) and sx (columns).
  __device__ __forceinline__ T at(const Span& sy, const Span& sx) const {
    float acc = 0.f;
    if (sy.w_lo > 0.f) acc += sy.w_lo * row_sum(src + (sy.s1 - 1) * ld, sx);
    for (Index i = sy.s1; i < sy.s2; ++i) acc += sy.inv_cell * row_sum(src + i * ld, sx);
    if (sy.w_hi > 0.f) acc += sy.w_hi * row_sum(src + sy.s2 * ld, sx);
    return saturate_from_float<T>(acc);
  }

  __device__ __forceinline__ T operator()(Index y, Index x) const {
    return at(span(y, scale_y, src_rows), span(x, scale_x, src_cols));
  }
};

/// Spans of n output indices in shared memory, one array a field (ResizeArea::Span's), so that
/// a warp reading 32 consecutive entries meets no bank conflict.
template <int N>
struct SpanTab {
  Index s1[N], s2[N];
  float w_lo[N], w_hi[N], inv_cell[N];
  template <class Span>
  __device__ __forceinline__ void put(int i, const Span& sp) {
    s1[i] = sp.s1;
    s2[i] = sp.s2;
    w_lo[i] = sp.w_lo;
    w_hi[i] = sp.w_hi;
    inv_cell[i] = sp.inv_cell;
  }
  template <class Span>
  __device__ __forceinline__ Span get(int i) const {
    return Span{s1[i], s2[i], w_lo[i], w_hi[i], inv_cell[i]};
  }
};

/// INTER_AREA shrinking as geom_map_kernel<T, ResizeArea<T>> (same block, grid and outputs a
/// thread, the same arithmetic: identical results), with each footprint computed once a block
/// instead of twice a pixel (a span is three double divisions): the block's kGeomThreadsX
/// kGeomVec column spans once, its kGeomThreadsY row spans once a tile row, in shared memory.
/// Column x0 + k of thread tx (x0 = block start + kGeomVec tx) sits at k kGeomThreadsX + tx.
/// The loop over tile rows is uniform over the block (the barriers); threads past the image skip
/// the pixels, never a barrier.
template <class T>
__global__ void __launch_bounds__(kGeomThreadsX* kGeomThreadsY)
    resize_area_tab_kernel(T* __restrict__ out, Index rows, Index cols, bool vec_ok, ResizeArea<T> f) {
  using Span = typename ResizeArea<T>::Span;
  constexpr int kThreads = kGeomThreadsX * kGeomThreadsY;
  constexpr int kTileW = kGeomThreadsX * kGeomVec;
  static_assert(kTileW + kGeomThreadsY <= kThreads, "resize_area_tab_kernel: one span a thread at most");
  __shared__ SpanTab<kTileW> sx_smem;         // (kGeomVec, kGeomThreadsX) column footprints of the block
  __shared__ SpanTab<kGeomThreadsY> sy_smem;  // (kGeomThreadsY) row footprints of the tile row
  const int tid = threadIdx.y * kGeomThreadsX + threadIdx.x;
  const Index xb = static_cast<Index>(blockIdx.x) * kTileW;
  if (tid < kTileW) {
    const int k = tid / kGeomThreadsX, tx = tid % kGeomThreadsX;  // slot tid = k kGeomThreadsX + tx
    const Index x = xb + tx * kGeomVec + k;
    if (x < cols) sx_smem.put(tid, ResizeArea<T>::span(x, f.scale_x, f.src_cols));
  }
  const Index x0 = xb + threadIdx.x * kGeomVec;
  for (Index yb = static_cast<Index>(blockIdx.y) * kGeomThreadsY; yb < rows;
       yb += static_cast<Index>(gridDim.y) * kGeomThreadsY) {
    __syncthreads();  // the previous tile row's spans are read (the first time: sx_smem written)
    const int i = tid - kTileW;  // row spans by the threads after the column spans'
    if (i >= 0 && i < kGeomThreadsY && yb + i < rows) sy_smem.put(i, ResizeArea<T>::span(yb + i, f.scale_y, f.src_rows));
    __syncthreads();
    const Index y = yb + threadIdx.y;
    if (y >= rows || x0 >= cols) continue;
    const Span sy = sy_smem.template get<Span>(threadIdx.y);
    T* row = out + y * cols;
    if (vec_ok) {  // x0 + kGeomVec <= cols: cols is a multiple of kGeomVec
      Pack<T, kGeomVec> p;
#pragma unroll
      for (int k = 0; k < kGeomVec; ++k) p.v[k] = f.at(sy, sx_smem.template get<Span>(k * kGeomThreadsX + threadIdx.x));
      *reinterpret_cast<Pack<T, kGeomVec>*>(row + x0) = p;
    } else {
#pragma unroll
      for (int k = 0; k < kGeomVec; ++k)
        if (x0 + k < cols) row[x0 + k] = f.at(sy, sx_smem.template get<Span>(k * kGeomThreadsX + threadIdx.x));
    }
  }
}

// ---------------------------------------------------------------- halving (2x2 means)
/// Output pixels a thread of resize_half_kernel makes: 8 bytes of u8 (16 source bytes a row),
/// 4 f32 (32 source bytes a row).
template <class T>
inline constexpr int kHalfVec = std::is_same_v<T, std::uint8_t> ? 8 : 4;

/// The mean of a 2x2 block as OpenCV's fast area path makes it (which cv::resize also takes for
/// INTER_LINEAR at exactly half size): u8 (a + b + c + d + 2) >> 2 (ResizeAreaFastVec's
/// rounding: half up), f32 ((a + b) + (c + d)) * 0.25 (ResizeAreaFastVec_SIMD_32f's order; the
/// same bits as the bilinear weights 0.5 and the area weights 1/2 give, products by powers of two
/// being exact).
__device__ __forceinline__ std::uint8_t half_mean(unsigned a, unsigned b, unsigned c, unsigned d) {
  return static_cast<std::uint8_t>((a + b + c + d + 2u) >> 2);
}
__device__ __forceinline__ float half_mean(float a, float b, float c, float d) {
  return __fmul_rn(__fadd_rn(__fadd_rn(a, b), __fadd_rn(c, d)), 0.25f);
}

/// Four u8 means of 2x2 blocks from one word of each source row (bytes 2j, 2j + 1 of r0 and r1
/// make output j of 2), as two bytes in the low half of the result: the pair sums in 16-bit
/// lanes (at most 4 * 255 + 2: no carry between lanes).
__device__ __forceinline__ unsigned half_mean_word(unsigned r0, unsigned r1) {
  const unsigned s = (r0 & 0x00ff00ffu) + ((r0 >> 8) & 0x00ff00ffu) + (r1 & 0x00ff00ffu) + ((r1 >> 8) & 0x00ff00ffu) +
                     0x00020002u;
  const unsigned m = (s >> 2) & 0x00ff00ffu;
  return (m & 0xffu) | (m >> 8);  // bytes 0 and 2 -> bytes 0 and 1
}

/// out (rows x cols, dense) = the 2x2 means of src (2 rows x 2 cols, row stride ld): INTER_AREA
/// (and INTER_LINEAR) at exactly half size. Block (kGeomThreadsX, kGeomThreadsY); each thread
/// makes kHalfVec<T> consecutive outputs of a row: one 16-byte load a source row (f32: two) and
/// one store where the source rows and the output are aligned for it and the chunk is whole,
/// else pixel by pixel (a view at an odd offset, an odd width, the row's last chunk). grid.x
/// covers ceil(cols / kHalfVec) / kGeomThreadsX, grid.y strides over the rows. kStreamLoads: the
/// vector loads of the source are cache-streaming (ld.global.cs: evict-first in L1 and L2), so
/// that a source larger than L2 (f32 4096^2: 64 MiB) passes through without evicting the output
/// or other data that will be read again.
template <class T, bool kStreamLoads = false>
__global__ void __launch_bounds__(kGeomThreadsX* kGeomThreadsY)
    resize_half_kernel(const T* __restrict__ src, Index ld, T* __restrict__ out, Index rows, Index cols) {
  const auto load = [](const auto* p) { return kStreamLoads ? __ldcs(p) : __ldg(p); };
  constexpr int V = kHalfVec<T>;
  const Index x0 = (static_cast<Index>(blockIdx.x) * kGeomThreadsX + threadIdx.x) * V;
  if (x0 >= cols) return;
  for (Index y = static_cast<Index>(blockIdx.y) * kGeomThreadsY + threadIdx.y; y < rows;
       y += static_cast<Index>(gridDim.y) * kGeomThreadsY) {
    const T* s0 = src + 2 * y * ld + 2 * x0;  // (1, 2V) of source row 2y
    const T* s1 = s0 + ld;                    // (1, 2V) of source row 2y + 1
    T* o = out + y * cols + x0;               // (1, V)
    const bool vec = x0 + V <= cols && ((reinterpret_cast<std::uintptr_t>(s0) | reinterpret_cast<std::uintptr_t>(s1)) & 15) == 0 &&
                     (reinterpret_cast<std::uintptr_t>(o) & (V * sizeof(T) - 1)) == 0;
    if (vec) {
      if constexpr (std::is_same_v<T, std::uint8_t>) {
        const uint4 a = load(reinterpret_cast<const uint4*>(s0)), b = load(reinterpret_cast<const uint4*>(s1));
        uint2 r;
        r.x = half_mean_word(a.x, b.x) | (half_mean_word(a.y, b.y) << 16);
        r.y = half_mean_word(a.z, b.z) | (half_mean_word(a.w, b.w) << 16);
        *reinterpret_cast<uint2*>(o) = r;
      } else {
        const float4 a0 = load(reinterpret_cast<const float4*>(s0)), a1 = load(reinterpret_cast<const float4*>(s0) + 1);
        const float4 b0 = load(reinterpret_cast<const float4*>(s1)), b1 = load(reinterpret_cast<const float4*>(s1) + 1);
        float4 r;
        r.x = half_mean(a0.x, a0.y, b0.x, b0.y);
        r.y = half_mean(a0.z, a0.w, b0.z, b0.w);
        r.z = half_mean(a1.x, a1.y, b1.x, b1.y);
        r.w = half_mean(a1.z, a1.w, b1.z, b1.w);
        *reinterpret_cast<float4*>(o) = r;
      }
    } else {
      using W = std::conditional_t<std::is_same_v<T, std::uint8_t>, unsigned, float>;
      const int n = cols - x0 < V ? static_cast<int>(cols - x0) : V;
      for (int j = 0; j < n; ++j)
        o[j] = half_mean(static_cast<W>(__ldg(s0 + 2 * j)), static_cast<W>(__ldg(s0 + 2 * j + 1)),
                         static_cast<W>(__ldg(s1 + 2 * j)), static_cast<W>(__ldg(s1 + 2 * j + 1)));
    }
  }
}

// ---------------------------------------------------------------- warp_affine
constexpr int kInterBits = 5, kInterTab = 1 << kInterBits;  // 1/32-pixel coordinates
constexpr int kAbBits = 10;                                  // the affine map's fixed point
constexpr double kAbScale = 1 << kAbBits;

/// warpAffine with `m` the inverse map (output -> source), OpenCV's fixed-point coordinates:
/// X = round(m0 x 1024) + round((m1 y + m2) 1024) + delta, then 1/32-pixel steps. In 64 bits:
/// OpenCV's ints (and its source coordinates saturated to 16 bits, the short maps of
/// cv::remap) hold only sources under 32767 pixels a side and terms under 2^21 pixels, which it
/// asserts or leaves undefined; within them the 64-bit sums are the same numbers, and past them
/// (a 50000 x 50000 source, a 1 x 2200000 output whose map cancels) they stay exact where 32 bits
/// clamped the source to its first 32767 rows and columns or wrapped.
template <class T, bool kLinear, bool kReplicate>
struct WarpAffine {
  const T* src;
  Index ld, src_rows, src_cols;
  double m0, m1, m2, m3, m4, m5;
  T cval;
  __device__ __forceinline__ T at(Index sy, Index sx) const {
    if constexpr (kReplicate) {
      sy = sy < 0 ? 0 : (sy >= src_rows ? src_rows - 1 : sy);
      sx = sx < 0 ? 0 : (sx >= src_cols ? src_cols - 1 : sx);
      return __ldg(src + sy * ld + sx);
    } else {
      return sy >= 0 && sy < src_rows && sx >= 0 && sx < src_cols ? __ldg(src + sy * ld + sx) : cval;
    }
  }
  __device__ __forceinline__ T operator()(Index y, Index x) const {
    constexpr long long delta = kLinear ? kInterTab / 2 : static_cast<long long>(kAbScale) / 2;
    const double yd = static_cast<double>(y), xd = static_cast<double>(x);
    const long long x_row = __double2ll_rn(__dmul_rn(__dadd_rn(__dmul_rn(m1, yd), m2), kAbScale)) + delta;
    const long long y_row = __double2ll_rn(__dmul_rn(__dadd_rn(__dmul_rn(m4, yd), m5), kAbScale)) + delta;
    const long long xx = x_row + __double2ll_rn(__dmul_rn(__dmul_rn(m0, xd), kAbScale));
    const long long yy = y_row + __double2ll_rn(__dmul_rn(__dmul_rn(m3, xd), kAbScale));
    if constexpr (!kLinear) {
      return at(yy >> kAbBits, xx >> kAbBits);
    } else {
      const long long X = xx >> (kAbBits - kInterBits), Y = yy >> (kAbBits - kInterBits);
      const Index sx = X >> kInterBits, sy = Y >> kInterBits;
      const int ax = static_cast<int>(X & (kInterTab - 1)), ay = static_cast<int>(Y & (kInterTab - 1));
      if (!kReplicate && (sx >= src_cols || sx + 1 < 0 || sy >= src_rows || sy + 1 < 0)) return cval;
      const T v0 = at(sy, sx), v1 = at(sy, sx + 1), v2 = at(sy + 1, sx), v3 = at(sy + 1, sx + 1);
      if constexpr (std::is_same_v<T, std::uint8_t>) {
        // OpenCV's table: w = (1 - ay/32)(1 - ax/32) 2^15 ..., exact in integers.
        const int w0 = (kInterTab - ay) * (kInterTab - ax) * 32, w1 = (kInterTab - ay) * ax * 32;
        const int w2 = ay * (kInterTab - ax) * 32, w3 = ay * ax * 32;
        const int v = v0 * w0 + v1 * w1 + v2 * w2 + v3 * w3;
        return static_cast<T>(::min(::max((v + (1 << 14)) >> 15, 0), 255));
      } else {
        const float fx = ax * (1.f / kInterTab), fy = ay * (1.f / kInterTab);
        const float w0 = __fmul_rn(1.f - fy, 1.f - fx), w1 = __fmul_rn(1.f - fy, fx);
        const float w2 = __fmul_rn(fy, 1.f - fx), w3 = __fmul_rn(fy, fx);
        return __fadd_rn(__fadd_rn(__fadd_rn(__fmul_rn(v0, w0), __fmul_rn(v1, w1)), __fmul_rn(v2, w2)),
                         __fmul_rn(v3, w3));
      }
    }
  }
};

// ---------------------------------------------------------------- flip
template <class T>
struct Flip {
  const T* src;
  Index ld, rows, cols;
  bool flip_rows, flip_cols;
  __device__ __forceinline__ T operator()(Index y, Index x) const {
    return __ldg(src + (flip_rows ? rows - 1 - y : y) * ld + (flip_cols ? cols - 1 - x : x));
  }
};

// ---------------------------------------------------------------- rotate90
/// A quarter turn (kCcw: counter-clockwise, out(i, j) = in(j, C - 1 - i); else clockwise,
/// out(i, j) = in(R - 1 - j, i)) of an R x C image into a C x R one, through a shared tile so
/// that reads and writes are both along rows. Block (kRotTile, kGeomThreadsY); grid.x over the
/// output's columns, grid.y over its rows, tiles_y of them (grid.y may be capped).
template <class T, bool kCcw>
__global__ void __launch_bounds__(kRotTile* kGeomThreadsY)
    rotate90_kernel(const T* __restrict__ in, Index ld, T* __restrict__ out, Index rows, Index cols,
                    unsigned tiles_y) {
  __shared__ T tile[kRotTile][kRotTile + 1];  // (input rows, input cols) of the tile
  const Index out_rows = cols, out_cols = rows;
  const Index oj0 = static_cast<Index>(blockIdx.x) * kRotTile;
  for (unsigned by = blockIdx.y; by < tiles_y; by += gridDim.y) {
    const Index oi0 = static_cast<Index>(by) * kRotTile;
    // The input window: rows r0 .., cols c0 .. (kRotTile each; may start before 0).
    const Index r0 = kCcw ? oj0 : rows - oj0 - kRotTile;
    const Index c0 = kCcw ? cols - oi0 - kRotTile : oi0;
    for (int ty = threadIdx.y; ty < kRotTile; ty += kGeomThreadsY) {
      const Index r = r0 + ty, c = c0 + threadIdx.x;
      if (r >= 0 && r < rows && c >= 0 && c < cols) tile[ty][threadIdx.x] = __ldg(in + r * ld + c);
    }
    __syncthreads();
    for (int ty = threadIdx.y; ty < kRotTile; ty += kGeomThreadsY) {
      const Index i = oi0 + ty, j = oj0 + threadIdx.x;
      if (i < out_rows && j < out_cols)
        out[i * out_cols + j] = kCcw ? tile[threadIdx.x][kRotTile - 1 - ty] : tile[kRotTile - 1 - threadIdx.x][ty];
    }
    __syncthreads();
  }
}


// ------------------------------------------------------------------ streaming u8 maps
constexpr int kStreamThreads = 256;

/// The input planes of stream_u8_kernel.
template <int N>
struct StreamArgs {
  const std::uint8_t* in[N];
  Index ld[N];
};

/// Slot e of stream_u8_kernel: the e-th 16-byte chunk slot of the output (row e / chunks).
template <int N, class F>
__device__ __forceinline__ void stream_u8_chunk(const StreamArgs<N>& a, std::uint8_t* __restrict__ out, Index ld_out,
                                                Index cols, Index chunks, bool small, Index e, const F& f) {
  const Index y = small ? static_cast<Index>(static_cast<unsigned>(e) / static_cast<unsigned>(chunks)) : e / chunks;
  std::uint8_t* const out_row = out + y * ld_out;
  const Index x = (e - y * chunks) * 16 - static_cast<Index>(reinterpret_cast<std::uintptr_t>(out_row) & 15);
  const Index lo = x < 0 ? 0 : x, hi = x + 16 < cols ? x + 16 : cols;  // the chunk's pixels in the row
  if (lo >= hi) return;
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

/// out(y, x) = f(in_0(y, x), .., in_{N-1}(y, x)) for u8 planes, 16 pixels a chunk, C chunks a
/// thread (kStreamThreads apart, so each of the C steps is coalesced; unrolled, so their loads
/// are in flight together); f maps 4 pixels a word (byte b of word k is pixel b of plane k),
/// after `f.bind()` (once a thread: a functor that reads a parameter from the device reads it
/// there). Each output row is cut into 16-byte chunks aligned on the OUTPUT's address (the first
/// and last may be partial), so a dense output of any width stores whole chunks with one uint4;
/// a chunk also loads with one uint4 per plane where the planes' rows share that alignment
/// (dense planes of the output's width do), else byte by byte (pixel b of a chunk goes through f
/// as byte 0 of a word). A row has ceil(cols / 16) + 1 chunk slots (one is empty on an aligned
/// row); grid-stride over rows x slots.
template <int N, int C, class F>
__global__ void __launch_bounds__(kStreamThreads)
stream_u8_kernel(const __grid_constant__ StreamArgs<N> a, std::uint8_t* __restrict__ out, Index ld_out, Index rows,
                 Index cols, const F f_unbound) {
  const F f = f_unbound.bind();
  const Index chunks = (cols + 15) / 16 + 1;
  const Index n = rows * chunks;
  const bool small = n <= 0xffffffffll;  // then the row of a slot takes a 32-bit division
  const Index stride = static_cast<Index>(gridDim.x) * kStreamThreads * C;
  for (Index base = static_cast<Index>(blockIdx.x) * kStreamThreads * C + threadIdx.x; base < n; base += stride) {
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const Index e = base + static_cast<Index>(c) * kStreamThreads;
      if (e < n) stream_u8_chunk<N>(a, out, ld_out, cols, chunks, small, e, f);
    }
  }
}


/// One element of T as the word a stream functor maps: a u8 pixel in byte 0 (the other bytes 0;
/// the functor works per byte, so they map to bytes the caller drops), an f32 pixel's bits.
template <class T>
__device__ __forceinline__ unsigned stream_word(const T* p) {
  static_assert(sizeof(T) == 1 || std::is_same_v<T, float>, "stream maps move u8 or f32 pixels");
  if constexpr (sizeof(T) == 1) return __ldg(reinterpret_cast<const unsigned char*>(p));
  else return __ldg(reinterpret_cast<const unsigned*>(p));
}

/// out[i] = f(in_0[i], .., in_{N-1}[i]) for i < n elements of T, the image seen as one row:
/// every plane and the output are dense (row stride = cols, or one row) and start 16-byte
/// aligned (the launcher checks), so the body moves whole uint4s with no row arithmetic at all.
/// A block owns kStreamThreads * U consecutive uint4s (thread t takes t, t + kStreamThreads, ..:
/// each of the U steps is coalesced; all U loads are issued before the first store); blocks
/// stride by the grid over the rest. f maps one 32-bit word (4 u8 pixels, or one f32 pixel)
/// after f.bind(), as stream_u8_kernel's functors. The last n mod (16 / sizeof(T)) elements go
/// one a thread, by the last block.
template <class T, int N, int U, class F>
__global__ void __launch_bounds__(kStreamThreads)
    stream_flat_kernel(const __grid_constant__ StreamArgs<N> a, T* __restrict__ out, Index n, const F f_unbound) {
  static_assert(U >= 1 && U <= 16, "uint4s a thread");
  const F f = f_unbound.bind();
  constexpr Index kPerVec = 16 / static_cast<Index>(sizeof(T));
  const Index n_vec = n / kPerVec;
  constexpr Index kPerBlock = static_cast<Index>(kStreamThreads) * U;
  for (Index b0 = static_cast<Index>(blockIdx.x) * kPerBlock; b0 < n_vec; b0 += static_cast<Index>(gridDim.x) * kPerBlock) {
    uint4 v[U][N];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const Index i = b0 + u * kStreamThreads + threadIdx.x;
      if (i < n_vec) {
#pragma unroll
        for (int k = 0; k < N; ++k) v[u][k] = __ldg(reinterpret_cast<const uint4*>(a.in[k]) + i);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const Index i = b0 + u * kStreamThreads + threadIdx.x;
      if (i < n_vec) {
        unsigned w[N];
        uint4 o;
#pragma unroll
        for (int k = 0; k < N; ++k) w[k] = v[u][k].x;
        o.x = f(w);
#pragma unroll
        for (int k = 0; k < N; ++k) w[k] = v[u][k].y;
        o.y = f(w);
#pragma unroll
        for (int k = 0; k < N; ++k) w[k] = v[u][k].z;
        o.z = f(w);
#pragma unroll
        for (int k = 0; k < N; ++k) w[k] = v[u][k].w;
        o.w = f(w);
        reinterpret_cast<uint4*>(out)[i] = o;
      }
    }
  }
  if (blockIdx.x == gridDim.x - 1) {  // the tail: fewer than kPerVec elements
    const Index i = n_vec * kPerVec + threadIdx.x;
    if (i < n) {
      unsigned w[N];
#pragma unroll
      for (int k = 0; k < N; ++k) w[k] = stream_word(reinterpret_cast<const T*>(a.in[k]) + i);
      const unsigned o = f(w);
      if constexpr (sizeof(T) == 1) out[i] = static_cast<T>(o & 255u);
      else out[i] = __uint_as_float(o);  // T is float (stream_word's static_assert)
    }
  }
}

}  // namespace devmat::detail

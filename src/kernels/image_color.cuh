// Colour kernels: one per-pixel kernel that reads NI channels (planes or interleaved), maps them
// with a functor and writes NO channels (planes or interleaved). The conversions follow OpenCV
// 4's cvtColor (imgproc/src/color_*.simd.hpp): u8 in its fixed point (14 bits for luma and
// YCrCb, 12 bits and its division tables for HSV), f32 in float. Device code only.
#pragma once

#include "kernels/common.cuh"

#include <cstdint>
#include <type_traits>

namespace devmat::detail {

constexpr int kColorThreadsX = 128, kColorThreadsY = 2;

// ---------------------------------------------------------------- channel layouts
/// N planes, each with its own row stride.
template <class T, int N>
struct PlanesIn {
  const T* p[N];
  Index ld[N];
  __device__ __forceinline__ T operator()(Index y, Index x, int k) const { return __ldg(p[k] + y * ld[k] + x); }
};
/// One interleaved matrix of rows x (cols * N), row stride ld.
template <class T, int N>
struct InterleavedIn {
  const T* p;
  Index ld;
  __device__ __forceinline__ T operator()(Index y, Index x, int k) const { return __ldg(p + y * ld + x * N + k); }
};
/// N dense planes of rows x cols.
template <class T, int N>
struct PlanesOut {
  T* p[N];
  Index cols;
  __device__ __forceinline__ void operator()(Index y, Index x, int k, T v) const { p[k][y * cols + x] = v; }
};
/// One dense interleaved matrix of rows x (cols * N).
template <class T, int N>
struct InterleavedOut {
  T* p;
  Index cols;
  __device__ __forceinline__ void operator()(Index y, Index x, int k, T v) const { p[(y * cols + x) * N + k] = v; }
};

/// out(y, x, :) = f(in(y, x, :)) for every pixel; grid.x covers the columns, grid.y strides
/// over the rows.
template <class T, int NI, int NO, class In, class Out, class F>
__global__ void __launch_bounds__(kColorThreadsX* kColorThreadsY)
    color_kernel(In in, Out out, Index rows, Index cols, F f) {
  const Index x = static_cast<Index>(blockIdx.x) * kColorThreadsX + threadIdx.x;
  if (x >= cols) return;
  for (Index y = static_cast<Index>(blockIdx.y) * kColorThreadsY + threadIdx.y; y < rows;
       y += static_cast<Index>(gridDim.y) * kColorThreadsY) {
    T a[NI], b[NO];
#pragma unroll
    for (int k = 0; k < NI; ++k) a[k] = in(y, x, k);
    f(a, b);
#pragma unroll
    for (int k = 0; k < NO; ++k) out(y, x, k, b[k]);
  }
}

// ---------------------------------------------------------------- conversions
__device__ __forceinline__ std::uint8_t sat_u8(int v) { return static_cast<std::uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v)); }
__device__ __forceinline__ std::uint8_t sat_u8(float v) { return sat_u8(__float2int_rn(v)); }

constexpr int kYuvShift = 14;
constexpr int kR2Y = 4899, kG2Y = 9617, kB2Y = 1868, kCrCoef = 11682, kCbCoef = 9241;  // 0.299, 0.587, 0.114, 0.713, 0.564
constexpr int kCr2R = 22987, kCr2G = -11698, kCb2G = -5636, kCb2B = 29049;               // 1.403, -0.714, -0.344, 1.773
__device__ __forceinline__ int descale(int v) { return (v + (1 << (kYuvShift - 1))) >> kYuvShift; }

template <class T, int N>
struct CopyChannels {
  __device__ __forceinline__ void operator()(const T (&a)[N], T (&b)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) b[k] = a[k];
  }
};

template <class T>
struct GrayToRgb {
  __device__ __forceinline__ void operator()(const T (&a)[1], T (&b)[3]) const { b[0] = b[1] = b[2] = a[0]; }
};

/// u8: GrayWord (below), 4 pixels at once.
template <class T>
struct RgbToGray;
template <>
struct RgbToGray<float> {
  __device__ __forceinline__ void operator()(const float (&a)[3], float (&b)[1]) const {
    b[0] = __fadd_rn(__fadd_rn(__fmul_rn(a[0], 0.299f), __fmul_rn(a[1], 0.587f)), __fmul_rn(a[2], 0.114f));
  }
};

/// cvtColor RGB2GRAY of 4 u8 pixels from three planes (stream_u8_kernel's functor), OpenCV's
/// 14-bit fixed point (RgbToGray's u8 counterpart).
struct GrayWord {
  __device__ __forceinline__ GrayWord bind() const { return *this; }
  __device__ __forceinline__ unsigned operator()(const unsigned (&p)[3]) const {
    unsigned out = 0;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const int r = (p[0] >> (8 * b)) & 255u, g = (p[1] >> (8 * b)) & 255u, bl = (p[2] >> (8 * b)) & 255u;
      out |= static_cast<unsigned>(descale(r * kR2Y + g * kG2Y + bl * kB2Y)) << (8 * b);  // <= 255
    }
    return out;
  }
};

template <class T>
struct RgbToYCrCb;
template <>
struct RgbToYCrCb<std::uint8_t> {
  __device__ __forceinline__ void operator()(const std::uint8_t (&a)[3], std::uint8_t (&b)[3]) const {
    const int y = descale(a[0] * kR2Y + a[1] * kG2Y + a[2] * kB2Y);
    const int delta = 128 << kYuvShift;
    b[0] = sat_u8(y);
    b[1] = sat_u8(descale((a[0] - y) * kCrCoef + delta));
    b[2] = sat_u8(descale((a[2] - y) * kCbCoef + delta));
  }
};
template <>
struct RgbToYCrCb<float> {
  __device__ __forceinline__ void operator()(const float (&a)[3], float (&b)[3]) const {
    const float y = __fadd_rn(__fadd_rn(__fmul_rn(a[0], 0.299f), __fmul_rn(a[1], 0.587f)), __fmul_rn(a[2], 0.114f));
    b[0] = y;
    b[1] = __fadd_rn(__fmul_rn(a[0] - y, 0.713f), 0.5f);
    b[2] = __fadd_rn(__fmul_rn(a[2] - y, 0.564f), 0.5f);
  }
};

template <class T>
struct YCrCbToRgb;
template <>
struct YCrCbToRgb<std::uint8_t> {
  __device__ __forceinline__ void operator()(const std::uint8_t (&a)[3], std::uint8_t (&b)[3]) const {
    const int y = a[0], cr = a[1] - 128, cb = a[2] - 128;
    b[0] = sat_u8(y + descale(cr * kCr2R));
    b[1] = sat_u8(y + descale(cb * kCb2G + cr * kCr2G));
    b[2] = sat_u8(y + descale(cb * kCb2B));
  }
};
template <>
struct YCrCbToRgb<float> {
  __device__ __forceinline__ void operator()(const float (&a)[3], float (&b)[3]) const {
    const float y = a[0], cr = a[1] - 0.5f, cb = a[2] - 0.5f;
    b[0] = __fadd_rn(y, __fmul_rn(cr, 1.403f));
    b[1] = __fadd_rn(__fadd_rn(y, __fmul_rn(cb, -0.344f)), __fmul_rn(cr, -0.714f));
    b[2] = __fadd_rn(y, __fmul_rn(cb, 1.773f));
  }
};

template <class T>
struct RgbToHsv;
/// RGB2HSV_b: 12-bit fixed point with OpenCV's tables sdiv[v] = round(255 2^12 / v) and
/// hdiv[d] = round(180 2^12 / (6 d)), computed here with the same double divisions.
template <>
struct RgbToHsv<std::uint8_t> {
  __device__ __forceinline__ void operator()(const std::uint8_t (&a)[3], std::uint8_t (&o)[3]) const {
    constexpr int kShift = 12;
    const int r = a[0], g = a[1], b = a[2];
    const int v = ::max(::max(r, g), b), vmin = ::min(::min(r, g), b);
    const int diff = v - vmin;
    const int vr = v == r ? -1 : 0, vg = v == g ? -1 : 0;
    const int sdiv = v == 0 ? 0 : __double2int_rn(static_cast<double>(255 << kShift) / static_cast<double>(v));
    const int hdiv = diff == 0 ? 0 : __double2int_rn(static_cast<double>(180 << kShift) / (6.0 * diff));
    const int s = (diff * sdiv + (1 << (kShift - 1))) >> kShift;
    int h = (vr & (g - b)) + (~vr & ((vg & (b - r + 2 * diff)) + ((~vg) & (r - g + 4 * diff))));
    h = (h * hdiv + (1 << (kShift - 1))) >> kShift;
    h += h < 0 ? 180 : 0;
    o[0] = sat_u8(h);
    o[1] = sat_u8(s);
    o[2] = sat_u8(v);
  }
};
/// RGB2HSV_f: H in degrees.
template <>
struct RgbToHsv<float> {
  __device__ __forceinline__ void operator()(const float (&a)[3], float (&o)[3]) const {
    constexpr float kEps = 1.1920929e-07f;  // FLT_EPSILON
    const float r = a[0], g = a[1], b = a[2];
    float v = r, vmin = r;
    if (v < g) v = g;
    if (v < b) v = b;
    if (vmin > g) vmin = g;
    if (vmin > b) vmin = b;
    float diff = v - vmin;
    const float s = __fdiv_rn(diff, ::fabsf(v) + kEps);
    diff = static_cast<float>(60.0 / static_cast<double>(diff + kEps));
    float h;
    if (v == r) h = __fmul_rn(g - b, diff);
    else if (v == g) h = __fadd_rn(__fmul_rn(b - r, diff), 120.f);
    else h = __fadd_rn(__fmul_rn(r - g, diff), 240.f);
    if (h < 0) h += 360.f;
    o[0] = h;
    o[1] = s;
    o[2] = v;
  }
};

/// HSV2RGB_native: h in sixths of the circle (h * hscale), sector table as OpenCV's.
__device__ __forceinline__ void hsv_to_rgb_float(float h, float s, float v, float hscale, float& r, float& g, float& b) {
  if (s == 0.f) {
    r = g = b = v;
    return;
  }
  h = __fmul_rn(h, hscale);
  if (h < 0) {
    do h += 6; while (h < 0);
  } else {
    while (h >= 6) h -= 6;
  }
  int sector = static_cast<int>(::floorf(h));
  h -= static_cast<float>(sector);
  if (static_cast<unsigned>(sector) >= 6u) {
    sector = 0;
    h = 0.f;
  }
  const float tab[4] = {v, __fmul_rn(v, 1.f - s), __fmul_rn(v, 1.f - __fmul_rn(s, h)),
                        __fmul_rn(v, 1.f - __fmul_rn(s, 1.f - h))};
  // OpenCV's sector_data gives (b, g, r) indices.
  const int kSector[6][3] = {{1, 3, 0}, {1, 0, 2}, {3, 0, 1}, {0, 2, 1}, {0, 1, 3}, {2, 1, 0}};
  b = tab[kSector[sector][0]];
  g = tab[kSector[sector][1]];
  r = tab[kSector[sector][2]];
}

template <class T>
struct HsvToRgb;
template <>
struct HsvToRgb<std::uint8_t> {
  __device__ __forceinline__ void operator()(const std::uint8_t (&a)[3], std::uint8_t (&o)[3]) const {
    float r, g, b;
    hsv_to_rgb_float(static_cast<float>(a[0]), a[1] * (1.f / 255.f), a[2] * (1.f / 255.f), 6.f / 180.f, r, g, b);
    o[0] = sat_u8(r * 255.f);
    o[1] = sat_u8(g * 255.f);
    o[2] = sat_u8(b * 255.f);
  }
};
template <>
struct HsvToRgb<float> {
  __device__ __forceinline__ void operator()(const float (&a)[3], float (&o)[3]) const {
    hsv_to_rgb_float(a[0], a[1], a[2], 6.f / 360.f, o[0], o[1], o[2]);
  }
};

}  // namespace devmat::detail

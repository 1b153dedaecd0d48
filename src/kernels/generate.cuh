// Generated matrices: the identity's diagonal, and uniform and normal random values from cuRAND's
// Philox4_32_10, a counter-based generator, so element i is a function of (seed, i) alone: no
// state is carried between elements, threads or launches. Device code only;
// dispatch/generate.cuh sizes the grid and launches.
//
// Bitwise the same on every GPU: the conversions below use only integer arithmetic and IEEE
// rounded operations (fma.rn, mul.rn, sqrt.rn, and CUDA's logf, sincospif and sincospi, which are
// sequences of them), and src/generate.cu is compiled with -fmad=false so that no multiply and
// add is left for ptxas to fuse differently on another architecture. One exception: CUDA's
// double log starts a division from rcp.approx.ftz.f64, a hardware estimate that it refines with
// fma, so the last bit of a double normal value rests on that estimate (the same on every GPU of
// one architecture). cuRAND's own curand_uniform and curand_normal are not used: the first maps
// onto (0, 1], the second uses the __sincosf approximation, whose last bits are the hardware's.
#pragma once

#include "common.cuh"

#include <cuda_runtime.h>
#include <curand_kernel.h>

#include <cstdint>

namespace devmat::detail {

constexpr int kGenerateThreads = 256;

// ---------------------------------------------------------------- identity
/// out[i * (n + 1)] = 1 for i < n: the diagonal of an n x n matrix already set to zero.
template <class T>
__global__ void __launch_bounds__(kGenerateThreads) identity_diagonal_kernel(Index n, T* out) {
  const Index step = static_cast<Index>(gridDim.x) * kGenerateThreads;
  for (Index i = static_cast<Index>(blockIdx.x) * kGenerateThreads + threadIdx.x; i < n; i += step)
    out[i * (n + 1)] = T(1);
}

// ---------------------------------------------------------------- random values
/// The four 32-bit words of Philox4_32_10 at counter (lane, 0, group) under key `seed`.
/// `lane` keeps the distributions (and float and double) apart: with the same seed they read
/// disjoint counters, so they are independent.
__device__ __forceinline__ uint4 philox_words(std::uint64_t seed, std::uint64_t group, unsigned lane) {
  curandStatePhilox4_32_10_t state;
  curand_init(seed, group, 4ull * lane, &state);  // subsequence = group (counter words 2, 3), offset = 4 lane (word 0)
  return curand4(&state);
}

/// The top 24 bits of w as a float in [0, 1): a multiple of 2^-24, exact.
__device__ __forceinline__ float unit_float(unsigned w) { return __fmul_rn(static_cast<float>(w >> 8), 0x1p-24f); }

/// The top 53 bits of (hi, lo) as a double in [0, 1): a multiple of 2^-53, exact.
__device__ __forceinline__ double unit_double(unsigned hi, unsigned lo) {
  const std::uint64_t bits = (static_cast<std::uint64_t>(hi) << 32 | lo) >> 11;
  return __dmul_rn(static_cast<double>(bits), 0x1p-53);
}

/// lo (1 - u) + hi u for u in [0, 1), kept in [lo, hi): no overflow for any finite bounds
/// (a convex combination), lo exactly at u = 0, and a result that rounds up to hi (or past it)
/// replaced by the largest value below hi. lo == hi gives lo.
__device__ __forceinline__ float uniform_in(float u, float lo, float hi) {
  if (!(lo < hi)) return lo;
  const float v = __fmaf_rn(u, hi, __fmaf_rn(-u, lo, lo));
  return v < hi ? fmaxf(v, lo) : nextafterf(hi, lo);
}
__device__ __forceinline__ double uniform_in(double u, double lo, double hi) {
  if (!(lo < hi)) return lo;
  const double v = __fma_rn(u, hi, __fma_rn(-u, lo, lo));
  return v < hi ? fmax(v, lo) : nextafter(hi, lo);
}

/// Values of one Philox block (kValues of them, from its four words) for each distribution.
template <class T> struct Uniform;
template <class T> struct Normal;

template <>
struct Uniform<float> {
  static constexpr int kValues = 4;  // 24 bits a value
  static constexpr unsigned kLane = 0;
  float lo, hi;
  __device__ Pack<float, 4> operator()(uint4 w) const {
    return {{uniform_in(unit_float(w.x), lo, hi), uniform_in(unit_float(w.y), lo, hi),
             uniform_in(unit_float(w.z), lo, hi), uniform_in(unit_float(w.w), lo, hi)}};
  }
};

template <>
struct Uniform<double> {
  static constexpr int kValues = 2;  // 53 bits a value, from two words
  static constexpr unsigned kLane = 1;
  double lo, hi;
  __device__ Pack<double, 2> operator()(uint4 w) const {
    return {{uniform_in(unit_double(w.x, w.y), lo, hi), uniform_in(unit_double(w.z, w.w), lo, hi)}};
  }
};

/// Box-Muller: two independent N(0, 1) values from a radius word and an angle word. The radius
/// uses all 32 bits, u1 = w 2^-32 + 2^-33 (w rounded to a float) in [2^-33, 1], so the values
/// reach 6.77 standard deviations.
__device__ __forceinline__ float2 box_muller(unsigned w_radius, unsigned w_angle) {
  const float u1 = __fmaf_rn(static_cast<float>(w_radius), 0x1p-32f, 0x1p-33f);
  const float r = sqrtf(__fmul_rn(-2.f, logf(u1)));
  float s, c;
  sincospif(__fmul_rn(2.f, unit_float(w_angle)), &s, &c);  // angle 2 pi u2, u2 in [0, 1)
  return {__fmul_rn(r, c), __fmul_rn(r, s)};
}

/// The same with 53-bit uniforms: u1 = (k + 1) 2^-53 in [2^-53, 1], so the values reach 8.58
/// standard deviations.
__device__ __forceinline__ double2 box_muller(double u1_minus, double u2) {
  const double u1 = __dadd_rn(u1_minus, 0x1p-53);  // exact: u1_minus is a multiple of 2^-53 below 1
  const double r = ::sqrt(__dmul_rn(-2.0, ::log(u1)));
  double s, c;
  sincospi(__dmul_rn(2.0, u2), &s, &c);
  return {__dmul_rn(r, c), __dmul_rn(r, s)};
}

template <>
struct Normal<float> {
  static constexpr int kValues = 4;
  static constexpr unsigned kLane = 2;
  float mean, stddev;
  __device__ Pack<float, 4> operator()(uint4 w) const {
    const float2 a = box_muller(w.x, w.y), b = box_muller(w.z, w.w);
    return {{__fmaf_rn(stddev, a.x, mean), __fmaf_rn(stddev, a.y, mean), __fmaf_rn(stddev, b.x, mean),
             __fmaf_rn(stddev, b.y, mean)}};
  }
};

template <>
struct Normal<double> {
  static constexpr int kValues = 2;
  static constexpr unsigned kLane = 3;
  double mean, stddev;
  __device__ Pack<double, 2> operator()(uint4 w) const {
    const double2 z = box_muller(unit_double(w.x, w.y), unit_double(w.z, w.w));
    return {{__fma_rn(stddev, z.x, mean), __fma_rn(stddev, z.y, mean)}};
  }
};

/// out[i] for i < n, where element i is value i % kValues of Philox block i / kValues (whose
/// words depend only on seed, i / kValues and the distribution's lane). The grid strides over
/// the blocks; a full block is stored as one vector when kVector (out 16-byte aligned).
template <bool kVector, class T, class Dist>
__global__ void __launch_bounds__(kGenerateThreads) random_kernel(Index n, T* out, std::uint64_t seed, Dist dist) {
  constexpr int G = Dist::kValues;
  static_assert(G * sizeof(T) == 16, "random_kernel: a Philox block fills one 16-byte vector");
  const Index groups = (n + G - 1) / G;
  const Index step = static_cast<Index>(gridDim.x) * kGenerateThreads;
  for (Index g = static_cast<Index>(blockIdx.x) * kGenerateThreads + threadIdx.x; g < groups; g += step) {
    const Pack<T, G> v = dist(philox_words(seed, static_cast<std::uint64_t>(g), Dist::kLane));
    const Index first = g * G;
    if (kVector && first + G <= n) {
      reinterpret_cast<Pack<T, G>*>(out)[g] = v;
    } else {
#pragma unroll
      for (int k = 0; k < G; ++k)
        if (first + k < n) out[first + k] = v.v[k];
    }
  }
}

}  // namespace devmat::detail

// Intensity kernels: the 256-bin histogram (per-warp shared copies, 16-byte loads where the
// bytes allow), equalize_hist's lookup table and Otsu's threshold from a histogram (one thread,
// OpenCV 4's double arithmetic, unfused), and the per-pixel maps (lookup, threshold). Device
// code only.
#pragma once

#include "kernels/byte_lanes.cuh"
#include "kernels/common.cuh"

#include <cstdint>
#include <type_traits>

namespace devmat::detail {

constexpr int kHistBins = 256;
constexpr int kHistThreads = 256;
constexpr int kHistCopies = kHistThreads / 32;  // one shared histogram per warp
/// Pixels of a row one block of histogram_kernel counts at a time in a strided image (so that a
/// block's int counts hold them).
constexpr unsigned long long kHistSegment = 1ull << 24;

__device__ __forceinline__ void hist_add4(int* h, unsigned w) {
  atomicAdd(h + (w & 255u), 1);
  atomicAdd(h + ((w >> 8) & 255u), 1);
  atomicAdd(h + ((w >> 16) & 255u), 1);
  atomicAdd(h + (w >> 24), 1);
}

/// Counts bytes p[0 .. n) into `h`, split over `nthreads` threads of which this is `tid`:
/// a scalar head up to 16-byte alignment, 16-byte loads, a scalar tail.
__device__ __forceinline__ void hist_span(const std::uint8_t* p, Index n, int* h, Index tid, Index nthreads) {
  const Index head = static_cast<Index>((16 - (reinterpret_cast<std::uintptr_t>(p) & 15)) & 15);
  const Index n_head = head < n ? head : n;
  if (tid < n_head) atomicAdd(h + __ldg(p + tid), 1);
  const uint4* body = reinterpret_cast<const uint4*>(p + n_head);
  const Index n_vec = (n - n_head) / 16;
  for (Index i = tid; i < n_vec; i += nthreads) {
    const uint4 v = __ldg(body + i);
    hist_add4(h, v.x);
    hist_add4(h, v.y);
    hist_add4(h, v.z);
    hist_add4(h, v.w);
  }
  const Index tail0 = n_head + n_vec * 16;
  if (tail0 + tid < n) atomicAdd(h + __ldg(p + tail0 + tid), 1);  // at most 15 bytes
}

/// hist (256 counts, zeroed before) += the histogram of a rows x cols image with row stride ld.
/// A contiguous image is one span over all threads of the grid; otherwise blocks take pieces of
/// rows of at most `seg` pixels (the launcher's kHistSegment; whole rows where they fit).
/// C: int (histogram's int32 output) or unsigned long long (equalize_hist's and Otsu's, any
/// pixel count); a block's shared counts are ints, so what one block counts stays under 2^31 (the
/// launcher's at most 1056 blocks, and the pieces: a block that took a whole row of 2^31 pixels
/// wrapped them).
template <class C>
__global__ void __launch_bounds__(kHistThreads)
    histogram_kernel(const std::uint8_t* __restrict__ img, Index ld, Index rows, Index cols, bool contiguous,
                     Index seg, C* __restrict__ hist) {
  __shared__ int h_smem[kHistCopies][kHistBins];
  for (int i = threadIdx.x; i < kHistCopies * kHistBins; i += kHistThreads) (&h_smem[0][0])[i] = 0;
  __syncthreads();
  int* h = h_smem[threadIdx.x / 32];
  if (contiguous) {
    hist_span(img, rows * cols, h, static_cast<Index>(blockIdx.x) * kHistThreads + threadIdx.x,
              static_cast<Index>(gridDim.x) * kHistThreads);
  } else if (cols <= seg) {
    for (Index r = blockIdx.x; r < rows; r += gridDim.x) hist_span(img + r * ld, cols, h, threadIdx.x, kHistThreads);
  } else {
    const Index segs = (cols + seg - 1) / seg;
    for (Index it = blockIdx.x; it < rows * segs; it += gridDim.x) {
      const Index r = it / segs, c0 = (it - r * segs) * seg;
      hist_span(img + r * ld + c0, cols - c0 < seg ? cols - c0 : seg, h, threadIdx.x, kHistThreads);
    }
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kHistBins; b += kHistThreads) {
    int sum = 0;
#pragma unroll
    for (int c = 0; c < kHistCopies; ++c) sum += h_smem[c][b];
    if (sum) atomicAdd(hist + b, static_cast<C>(sum));
  }
}

/// cv::equalizeHist's table from the histogram of `total` pixels (one thread): levels below the
/// first used one are never read; a one-level image maps to that level. OpenCV's int sums, in
/// 64 bits (the same floats below 2^31 pixels, where OpenCV stops).
template <class C>
__global__ void equalize_lut_kernel(const C* __restrict__ hist, long long total, std::uint8_t* __restrict__ lut) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  int i = 0;
  while (i < kHistBins - 1 && hist[i] == 0) ++i;
  if (static_cast<long long>(hist[i]) == total) {
    for (int k = 0; k < kHistBins; ++k) lut[k] = static_cast<std::uint8_t>(i);
    return;
  }
  const float scale = __fdiv_rn(255.f, static_cast<float>(total - static_cast<long long>(hist[i])));
  for (int k = 0; k <= i; ++k) lut[k] = 0;
  long long sum = 0;
  for (++i; i < kHistBins; ++i) {
    sum += hist[i];
    const int v = __float2int_rn(__fmul_rn(static_cast<float>(sum), scale));
    lut[i] = static_cast<std::uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
  }
}

/// Otsu's threshold from the histogram of `total` pixels, OpenCV 4's loop step by step with
/// no fused multiply-add (one thread); writes the level to *t.
template <class C>
__global__ void otsu_kernel(const C* __restrict__ hist, long long total, int* __restrict__ t) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  constexpr double kFltEps = 1.1920928955078125e-07;
  const double scale = 1.0 / static_cast<double>(total);
  double mu = 0;
  for (int i = 0; i < kHistBins; ++i) mu = __dadd_rn(mu, __dmul_rn(static_cast<double>(i), static_cast<double>(hist[i])));
  mu = __dmul_rn(mu, scale);
  double mu1 = 0, q1 = 0, max_sigma = 0;
  int max_val = 0;
  for (int i = 0; i < kHistBins; ++i) {
    const double p_i = __dmul_rn(static_cast<double>(hist[i]), scale);
    mu1 = __dmul_rn(mu1, q1);
    q1 = __dadd_rn(q1, p_i);
    const double q2 = __dadd_rn(1.0, -q1);
    if (::fmin(q1, q2) < kFltEps || ::fmax(q1, q2) > __dadd_rn(1.0, -kFltEps)) continue;
    mu1 = __ddiv_rn(__dadd_rn(mu1, __dmul_rn(static_cast<double>(i), p_i)), q1);
    const double mu2 = __ddiv_rn(__dadd_rn(mu, -__dmul_rn(q1, mu1)), q2);
    const double d = __dadd_rn(mu1, -mu2);
    const double sigma = __dmul_rn(__dmul_rn(__dmul_rn(q1, q2), d), d);
    if (sigma > max_sigma) {
      max_sigma = sigma;
      max_val = i;
    }
  }
  *t = max_val;
}

/// out = lut[img] (the per-pixel map of geom_map_kernel).
struct LookupU8 {
  const std::uint8_t* img;
  Index ld;
  const std::uint8_t* lut;
  __device__ __forceinline__ std::uint8_t operator()(Index y, Index x) const { return __ldg(lut + __ldg(img + y * ld + x)); }
};

/// OpenCV's threshold types, in Threshold's order (otsu runs as binary).
enum ThresholdKind : int { kThBinary = 0, kThBinaryInv, kThTrunc, kThToZero, kThToZeroInv };

/// cv::threshold of one f32 pixel.
struct ThresholdF32 {
  const float* img;
  Index ld;
  float thresh, maxval;
  int kind;
  __device__ __forceinline__ float operator()(Index y, Index x) const {
    const float p = __ldg(img + y * ld + x);
    const bool above = p > thresh;
    switch (kind) {
      case kThBinary: return above ? maxval : 0.f;
      case kThBinaryInv: return above ? 0.f : maxval;
      case kThTrunc: return above ? thresh : p;
      case kThToZero: return above ? p : 0.f;
      default: return above ? 0.f : p;
    }
  }
};

/// cv::threshold of one f32 pixel given as its bits (stream_flat_kernel's functor; the same
/// comparisons as ThresholdF32, so NaN is never above the threshold).
struct ThresholdF32Word {
  float thresh, maxval;
  int kind;
  __device__ __forceinline__ ThresholdF32Word bind() const { return *this; }
  __device__ __forceinline__ unsigned operator()(const unsigned (&w)[1]) const {
    const float p = __uint_as_float(w[0]);
    const bool above = p > thresh;
    float r;
    switch (kind) {
      case kThBinary: r = above ? maxval : 0.f; break;
      case kThBinaryInv: r = above ? 0.f : maxval; break;
      case kThTrunc: r = above ? thresh : p; break;
      case kThToZero: r = above ? p : 0.f; break;
      default: r = above ? 0.f : p;
    }
    return __float_as_uint(r);
  }
};

/// OpenCV's threshold of 4 u8 pixels at once (stream_u8_kernel's functor), for kind binary ..
/// to_zero_inv. The threshold t is floored and clamped to -1..255 (t < 0: every pixel is above),
/// or read from the device (*d_thresh, Otsu's, 0..255) by bind() where d_thresh is set; maxval
/// saturated.
struct ThresholdWord {
  int t;
  unsigned max4;  // maxval in every byte
  int kind;
  const int* d_thresh;
  unsigned t4;    // max(t, 0) in every byte: set by bind()
  __device__ __forceinline__ ThresholdWord bind() const {
    ThresholdWord b = *this;
    if (d_thresh) b.t = *d_thresh;
    b.t4 = static_cast<unsigned>(b.t < 0 ? 0 : b.t) * 0x01010101u;
    return b;
  }
  __device__ __forceinline__ unsigned operator()(const unsigned (&p)[1]) const {
    // Bytes above t: 0xff; with t = -1 every byte is above.
    const unsigned above = t < 0 ? 0xffffffffu : __vcmpgtu4(p[0], t4);
    switch (kind) {
      case kThBinary: return above & max4;
      case kThBinaryInv: return ~above & max4;
      case kThTrunc: return vmin_u8x4(p[0], t4);  // t < 0: t4 = 0, every pixel 0
      case kThToZero: return above & p[0];
      default: return ~above & p[0];  // kThToZeroInv
    }
  }
};

}  // namespace devmat::detail

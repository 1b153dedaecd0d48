// Matrix-vector products for the m == 1 and n == 1 GEMMs, which are memory-bound: every
// element of the matrix is read once, with 16-byte loads where the layout allows, and the k
// range is split over blockIdx.y to put enough loads in flight. Device code only.
#pragma once

#include "gemm_common.cuh"

namespace devmat::detail {

constexpr int kGemvThreads = 256;

/// Where a GEMV result goes: with one k slice, y[i] = alpha*acc + beta*y[i] (y read only when
/// read_c); with several, slice z writes its partial sum to ws[z*len + i] for
/// gemm_finalize_kernel.
template <class T>
struct GemvOut {
  T* y;
  T* ws;
  long long len;
  T alpha, beta;
  bool read_c, split;

  __device__ __forceinline__ void write(long long i, int z, T acc) const {
    if (split) ws[z * len + i] = acc;
    else y[i] = read_c ? alpha * acc + beta * y[i] : alpha * acc;
  }
};

/// y[r] = sum_k mat[r*ld + k] * x[k] for r < rows: one warp per row, lanes along k.
/// kVec: mat, ld, x and k_chunk allow V-wide loads (V = 16 / sizeof(T)).
template <class T, bool kVec>
__global__ void __launch_bounds__(kGemvThreads)
gemv_rows_kernel(const T* __restrict__ mat, long long ld, int rows, int k, const T* __restrict__ x, int k_chunk,
                 GemvOut<T> out) {
  constexpr int V = kVec ? 16 / static_cast<int>(sizeof(T)) : 1;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int row = static_cast<int>(blockIdx.x) * (kGemvThreads / 32) + static_cast<int>(threadIdx.x) / 32;
  if (row >= rows) return;  // a whole warp leaves; no barrier follows
  const int k_begin = static_cast<int>(blockIdx.y) * k_chunk;
  const int k_end = static_cast<int>(::min(static_cast<long long>(k), static_cast<long long>(k_begin) + k_chunk));
  const T* r = mat + row * ld;

  T acc = T(0);
  int k_scalar = k_begin;
  if constexpr (kVec) {
    using Vec = Pack<T, V>;
    const int k_vec_end = k_begin + (k_end - k_begin) / V * V;
#pragma unroll 4
    for (int kk = k_begin + lane * V; kk < k_vec_end; kk += 32 * V) {
      const Vec a = *reinterpret_cast<const Vec*>(r + kk);
      const Vec b = *reinterpret_cast<const Vec*>(x + kk);
#pragma unroll
      for (int e = 0; e < V; ++e) acc += a.v[e] * b.v[e];
    }
    k_scalar = k_vec_end;
  }
  for (int kk = k_scalar + lane; kk < k_end; kk += 32) acc += r[kk] * x[kk];
#pragma unroll
  for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if (lane == 0) out.write(row, static_cast<int>(blockIdx.y), acc);
}

/// y[j] = sum_k x[k] * mat[k*ld + j] for j < cols: a block covers 32*V columns (V per lane)
/// and kThreads/32 rows at a time, then reduces its row groups through shared memory.
/// kVec: mat and ld allow V-wide loads. k slices (blockIdx.y) are added through out.ws and
/// gemm_finalize_kernel (out.split); with kThreads = 1024 and 32-column blocks one slice puts
/// enough loads in flight.
template <class T, bool kVec, int kThreads = kGemvThreads>
__global__ void __launch_bounds__(kThreads)
gemv_cols_kernel(const T* __restrict__ mat, long long ld, int cols, int k, const T* __restrict__ x, int k_chunk,
                 GemvOut<T> out) {
  constexpr int V = kVec ? 16 / static_cast<int>(sizeof(T)) : 1;
  constexpr int kRows = kThreads / 32;
  using Vec = Pack<T, V>;
  __shared__ T partial[kRows][32 * V];

  const int lane = static_cast<int>(threadIdx.x) % 32, ky = static_cast<int>(threadIdx.x) / 32;
  const int j0 = static_cast<int>(blockIdx.x) * 32 * V;
  const int j = j0 + lane * V;
  const int k_begin = static_cast<int>(blockIdx.y) * k_chunk;
  const int k_end = static_cast<int>(::min(static_cast<long long>(k), static_cast<long long>(k_begin) + k_chunk));

  T acc[V];
#pragma unroll
  for (int e = 0; e < V; ++e) acc[e] = T(0);
  if (j + V <= cols) {
#pragma unroll 16
    for (int kk = k_begin + ky; kk < k_end; kk += kRows) {
      const T xv = x[kk];
      const Vec a = *reinterpret_cast<const Vec*>(mat + kk * ld + j);
#pragma unroll
      for (int e = 0; e < V; ++e) acc[e] += xv * a.v[e];
    }
  } else if (j < cols) {
    for (int kk = k_begin + ky; kk < k_end; kk += kRows) {
      const T xv = x[kk];
#pragma unroll
      for (int e = 0; e < V; ++e)
        if (j + e < cols) acc[e] += xv * mat[kk * ld + j + e];
    }
  }
#pragma unroll
  for (int e = 0; e < V; ++e) partial[ky][lane * V + e] = acc[e];
  __syncthreads();
  for (int c = static_cast<int>(threadIdx.x); c < 32 * V; c += kThreads) {
    if (j0 + c >= cols) break;
    T sum = partial[0][c];
#pragma unroll
    for (int r = 1; r < kRows; ++r) sum += partial[r][c];
    out.write(j0 + c, static_cast<int>(blockIdx.y), sum);
  }
}

}  // namespace devmat::detail

// Element-wise transform: out[i] = f(a[i], b[i]) with 16-byte vector loads and stores.
// Device code only; dispatch/transform.cuh picks the vector width and launches it.
#pragma once

#include "common.cuh"

#include <type_traits>

namespace devmat::detail {

/// Stands in for an absent input (fill has none, unary operations one).
struct None {};

template <class F, class A, class B>
__device__ __forceinline__ auto apply(const F& f, const A& a, const B& b) {
  if constexpr (std::is_same_v<A, None>) return f();
  else if constexpr (std::is_same_v<B, None>) return f(a);
  else return f(a, b);
}

constexpr int kTransformThreads = 256;
// Vectors per thread, all loaded before any is used: 64 bytes in flight per input and thread,
// halved for 1- and 2-byte types, whose 8 or 16 values per vector need registers to unpack.
template <int V> constexpr int transform_unroll() { return V <= 4 ? 4 : 2; }

/// Each thread handles kUnroll vectors of V elements, spaced a block apart so a warp's
/// accesses stay contiguous; all loads are issued before the first store. Block 0 also
/// handles the n % V scalar tail.
template <int V, class F, class Out, class A, class B>
// At least 3 blocks per SM: caps registers at 80, so one-byte types (16 values per vector,
// unpacked for arithmetic) keep enough warps in flight to saturate memory.
__global__ void __launch_bounds__(kTransformThreads, 3)
transform_kernel(Index n, Out* out, const A* __restrict__ a, const B* __restrict__ b, F f) {
  constexpr int U = transform_unroll<V>();
  const Index n_vec = n / V;
  const Index first = static_cast<Index>(blockIdx.x) * (kTransformThreads * U) + threadIdx.x;

  Pack<A, V> a_reg[U];
  Pack<B, V> b_reg[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const Index i = first + u * kTransformThreads;
    if (i < n_vec) {
      if constexpr (!std::is_same_v<A, None>) a_reg[u] = reinterpret_cast<const Pack<A, V>*>(a)[i];
      if constexpr (!std::is_same_v<B, None>) b_reg[u] = reinterpret_cast<const Pack<B, V>*>(b)[i];
    }
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const Index i = first + u * kTransformThreads;
    if (i < n_vec) {
      Pack<Out, V> r;
#pragma unroll
      for (int k = 0; k < V; ++k) r.v[k] = static_cast<Out>(apply(f, a_reg[u].v[k], b_reg[u].v[k]));
      reinterpret_cast<Pack<Out, V>*>(out)[i] = r;
    }
  }
  if (blockIdx.x == 0) {
    for (Index e = n_vec * V + threadIdx.x; e < n; e += kTransformThreads) {
      A ae{};
      B be{};
      if constexpr (!std::is_same_v<A, None>) ae = a[e];
      if constexpr (!std::is_same_v<B, None>) be = b[e];
      out[e] = static_cast<Out>(apply(f, ae, be));
    }
  }
}

/// The same transform over a rows x cols window of strided operands (row strides ld_*, in
/// elements): each row is cut into cols / V vectors and cols % V single elements, and the grid
/// strides over all rows' units, so any shape (a single column, a single row) keeps every
/// thread busy. V > 1 only where every operand's row starts are 16-byte aligned.
template <int V, class F, class Out, class A, class B>
__global__ void __launch_bounds__(kTransformThreads)
transform2d_kernel(Index rows, Index cols, Out* out, Index ld_out, const A* __restrict__ a, Index ld_a,
                   const B* __restrict__ b, Index ld_b, F f) {
  const Index n_vec = cols / V;
  const Index units = n_vec + (cols - n_vec * V);  // per row: vectors, then the tail elements
  const Index total = rows * units;
  const Index step = static_cast<Index>(gridDim.x) * kTransformThreads;
  for (Index idx = static_cast<Index>(blockIdx.x) * kTransformThreads + threadIdx.x; idx < total; idx += step) {
    const Index r = idx / units, u = idx - r * units;
    Out* o_row = out + r * ld_out;
    if (u < n_vec) {
      Pack<A, V> a_reg;
      Pack<B, V> b_reg;
      if constexpr (!std::is_same_v<A, None>) a_reg = reinterpret_cast<const Pack<A, V>*>(a + r * ld_a)[u];
      if constexpr (!std::is_same_v<B, None>) b_reg = reinterpret_cast<const Pack<B, V>*>(b + r * ld_b)[u];
      Pack<Out, V> res;
#pragma unroll
      for (int k = 0; k < V; ++k) res.v[k] = static_cast<Out>(apply(f, a_reg.v[k], b_reg.v[k]));
      reinterpret_cast<Pack<Out, V>*>(o_row)[u] = res;
    } else {
      const Index c = n_vec * V + (u - n_vec);
      A ae{};
      B be{};
      if constexpr (!std::is_same_v<A, None>) ae = a[r * ld_a + c];
      if constexpr (!std::is_same_v<B, None>) be = b[r * ld_b + c];
      o_row[c] = static_cast<Out>(apply(f, ae, be));
    }
  }
}

}  // namespace devmat::detail

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

}  // namespace devmat::detail

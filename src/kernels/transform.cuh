// Element-wise transform: out[i] = f(a[i], b[i]) with 16-byte vector loads and stores.
// Device code only.
#pragma once

#include "../detail/runtime.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace devmat::detail {

/// Stands in for an absent input (fill has none, unary operations one).
struct None {};

/// V elements of T moved as one aligned vector (16 bytes for the widest type involved).
template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

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

template <class T>
constexpr std::size_t size_or_1() {
  if constexpr (std::is_same_v<T, None>) return 1;
  else return sizeof(T);
}

inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

/// Launches out[i] = f(a[i], b[i]) for i < n on `stream` (a, b may be `const None*` nullptr).
/// out may alias a or b (each element is read and written by the same thread).
template <class Out, class A, class B, class F>
void launch_transform(cudaStream_t stream, Index n, Out* out, const A* a, const B* b, F f) {
  if (n <= 0) return;
  constexpr std::size_t widest = std::max({sizeof(Out), size_or_1<A>(), size_or_1<B>()});
  constexpr int V = static_cast<int>(16 / widest);
  const bool vec = aligned16(out) && aligned16(a) && aligned16(b);
  if (vec) {
    constexpr unsigned per_block = kTransformThreads * transform_unroll<V>();
    const auto blocks = ceil_div(static_cast<unsigned long long>(n / V), per_block);
    transform_kernel<V><<<static_cast<unsigned>(blocks ? blocks : 1), kTransformThreads, 0, stream>>>(
        n, out, a, b, f);
  } else {
    constexpr unsigned per_block = kTransformThreads * transform_unroll<1>();
    const auto blocks = ceil_div(static_cast<unsigned long long>(n), per_block);
    transform_kernel<1><<<static_cast<unsigned>(blocks), kTransformThreads, 0, stream>>>(n, out, a, b, f);
  }
  DEVMAT_CUDA_TRY(cudaGetLastError());
}

}  // namespace devmat::detail

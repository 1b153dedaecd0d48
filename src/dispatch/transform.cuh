// Launcher of the element-wise transform (kernels/transform.cuh): picks the vector width from
// the widest type involved and the pointers' alignment, sizes the grid, launches.
#pragma once

#include "dispatch/common.hpp"
#include "dispatch/launch.cuh"
#include "kernels/transform.cuh"

#include <algorithm>
#include <cstddef>
#include <type_traits>

namespace devmat::detail {

template <class T>
constexpr std::size_t size_or_1() {
  if constexpr (std::is_same_v<T, None>) return 1;
  else return sizeof(T);
}

/// Launches out[i] = f(a[i], b[i]) for i < n on `stream` (a, b may be `const None*` nullptr).
/// out may alias a or b (each element is read and written by the same thread).
template <class Out, class A, class B, class F>
void launch_transform(cudaStream_t stream, Index n, Out* out, const A* a, const B* b, F f) {
  if (n <= 0) return;
  constexpr std::size_t widest = std::max({sizeof(Out), size_or_1<A>(), size_or_1<B>()});
  constexpr int V = static_cast<int>(16 / widest);
  const bool vec = is_aligned(out, 16) && is_aligned(a, 16) && is_aligned(b, 16);
  if (vec) {
    constexpr unsigned per_block = kTransformThreads * transform_unroll<V>();
    const auto blocks = ceil_div(static_cast<unsigned long long>(n / V), per_block);
    launch(&transform_kernel<V, F, Out, A, B>, static_cast<unsigned>(blocks ? blocks : 1), kTransformThreads, 0,
           stream, n, out, a, b, f);
  } else {
    constexpr unsigned per_block = kTransformThreads * transform_unroll<1>();
    const auto blocks = ceil_div(static_cast<unsigned long long>(n), per_block);
    launch(&transform_kernel<1, F, Out, A, B>, static_cast<unsigned>(blocks), kTransformThreads, 0, stream, n, out,
           a, b, f);
  }
}

}  // namespace devmat::detail

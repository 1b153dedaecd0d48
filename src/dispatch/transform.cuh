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

/// out(r, c) = f(a(r, c), b(r, c)) over a rows x cols window whose operands have row strides
/// ld_out, ld_a, ld_b (a, b may be `const None*` nullptr, with any stride). Dense operands take
/// the flat kernel above; out may alias a or b element for element (the same window).
template <class Out, class A, class B, class F>
void launch_transform_2d(cudaStream_t stream, Index rows, Index cols, Out* out, Index ld_out, const A* a, Index ld_a,
                         const B* b, Index ld_b, F f) {
  if (rows <= 0 || cols <= 0) return;
  const auto dense = [&](Index ld) { return rows == 1 || ld == cols; };
  if (dense(ld_out) && (std::is_same_v<A, None> || dense(ld_a)) && (std::is_same_v<B, None> || dense(ld_b)))
    return launch_transform(stream, rows * cols, out, a, b, f);
  constexpr std::size_t widest = std::max({sizeof(Out), size_or_1<A>(), size_or_1<B>()});
  constexpr int V = static_cast<int>(16 / widest);
  const auto rows_aligned = [&](const void* p, Index ld, std::size_t elem) {
    return p == nullptr || (is_aligned(p, 16) && (static_cast<std::size_t>(ld) * elem) % 16 == 0);
  };
  const bool vec = V > 1 && cols >= V && rows_aligned(out, ld_out, sizeof(Out)) &&
                   rows_aligned(a, ld_a, size_or_1<A>()) && rows_aligned(b, ld_b, size_or_1<B>());
  const auto grid = [&](Index units) {
    return static_cast<unsigned>(std::min<Index>(ceil_div(rows * units, Index(kTransformThreads)), Index(1) << 20));
  };
  if (vec)
    launch(&transform2d_kernel<V, F, Out, A, B>, grid(cols / V + cols % V), kTransformThreads, 0, stream, rows, cols,
           out, ld_out, a, ld_a, b, ld_b, f);
  else
    launch(&transform2d_kernel<1, F, Out, A, B>, grid(cols), kTransformThreads, 0, stream, rows, cols, out, ld_out, a,
           ld_a, b, ld_b, f);
}

}  // namespace devmat::detail

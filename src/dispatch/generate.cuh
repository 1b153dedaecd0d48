// Launchers of the generators (kernels/generate.cuh): size the grid, launch. The grid only
// decides which thread computes an element, never its value.
#pragma once

#include "dispatch/common.hpp"
#include "dispatch/launch.cuh"
#include "kernels/generate.cuh"

#include <algorithm>
#include <cstdint>

namespace devmat::detail {

/// At most this many blocks: the grid strides over the rest.
constexpr Index kGenerateMaxBlocks = Index(1) << 16;

inline unsigned generate_blocks(Index work) {
  return static_cast<unsigned>(std::clamp<Index>(ceil_div(work, Index(kGenerateThreads)), 1, kGenerateMaxBlocks));
}

/// Sets the diagonal of the n x n matrix `out` (already zero) to 1, on `stream`.
template <class T>
void launch_identity_diagonal(Index n, T* out, cudaStream_t stream) {
  if (n <= 0) return;
  launch(&identity_diagonal_kernel<T>, generate_blocks(n), kGenerateThreads, 0, stream, n, out);
}

/// Fills the n dense elements at `out` with `dist`'s values for `seed`, on `stream`.
template <class T, class Dist>
void launch_random(Index n, T* out, std::uint64_t seed, Dist dist, cudaStream_t stream) {
  if (n <= 0) return;
  const unsigned blocks = generate_blocks(ceil_div(n, Index(Dist::kValues)));
  if (is_aligned(out, 16))
    launch(&random_kernel<true, T, Dist>, blocks, kGenerateThreads, 0, stream, n, out, seed, dist);
  else
    launch(&random_kernel<false, T, Dist>, blocks, kGenerateThreads, 0, stream, n, out, seed, dist);
}

}  // namespace devmat::detail

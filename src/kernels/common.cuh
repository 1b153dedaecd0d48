// What every kernel shares: the index type and the aligned vector of V elements that loads and
// stores move at once. Device code only: nothing here knows about streams, buffers or matrices.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace devmat {

using Index = std::ptrdiff_t;  // the same alias as <devmat/error.hpp>'s (a redeclaration)

namespace detail {

/// V elements of T moved as one aligned vector (at most 16 bytes: one LDG.128 / STG.128).
template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

/// Blocks along grid.y that the tiled image kernels launch at most; they loop over the tiles past it.
inline constexpr unsigned kMaxGridY = 65535;

/// Elements of T in one 16-byte vector.
template <class T> inline constexpr int kVec16 = static_cast<int>(16 / sizeof(T));

}  // namespace detail
}  // namespace devmat

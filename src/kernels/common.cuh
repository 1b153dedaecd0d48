// What every kernel shares: the index type and the aligned vector of V elements that loads and
// stores move at once. Device code only: nothing here knows about streams, buffers or matrices.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

/// Declares the kernel's dynamic shared array `name` of `type` (16-byte aligned). The CPU
/// emulation of the kernels (test/expr_emu) defines it first, as a static array of its own.
#ifndef DEVMAT_DYNAMIC_SHARED
#define DEVMAT_DYNAMIC_SHARED(type, name) extern __shared__ __align__(16) type name[]
#endif

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

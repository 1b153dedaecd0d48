// Launcher of the transpose (kernels/transpose.cuh): picks the tile whose words fit the shape and
// the pointers, sizes the grid, launches.
#pragma once

#include "dispatch/common.hpp"
#include "dispatch/device.hpp"
#include "dispatch/launch.cuh"
#include "kernels/transpose.cuh"

#include <devmat/error.hpp>

#include <cstdint>

namespace devmat::detail {

template <class T, class Tile>
void launch_transpose_tile(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  constexpr Index kTile = Tile::kTile;
  constexpr int kSmemBytes = static_cast<int>(kTile * Tile::kTW * Tile::kW * sizeof(T));
  static_assert(kSmemBytes <= 200 * 1024, "launch_transpose_tile: tile exceeds shared memory");
  const auto kernel = &transpose_kernel<T, Tile::kW, Tile::kTW, Tile::kBY>;
  if constexpr (kSmemBytes > 48 * 1024)  // opts in to more than 48 KiB (once per device)
    blocks_per_sm(reinterpret_cast<const void*>(kernel), 32 * Tile::kBY, kSmemBytes);
  const Index tiles_c = ceil_div(cols, kTile);
  const Index tiles = ceil_div(rows, kTile) * tiles_c;
  launch(kernel, static_cast<unsigned>(tiles), dim3(32, Tile::kBY), kSmemBytes, stream, in, ld, out, rows, cols, tiles_c);
}

/// The tile that moves T fastest (the bench compares the others), and the one used when rows
/// or cols is not a multiple of its word (words of one element, always aligned).
template <class T> struct DefaultTranspose;
template <> struct DefaultTranspose<std::uint8_t> {
  using Tile = TransposeTile<4, 32, 8>;      // 128 x 128 bytes, 4-byte words
  using Fallback = TransposeTile<1, 64, 8>;  // 64 x 64 bytes
};
template <class T> struct DefaultTranspose {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "DefaultTranspose: 1-, 4- or 8-byte elements");
  using Tile = TransposeTile<1, 64, 8>;      // 64 x 64 elements, one element a word
  using Fallback = TransposeTile<1, 64, 8>;  // used if Tile's words do not fit the shape
};

/// out (dense, cols x rows) = transpose of in (rows x cols, ld elements between row starts),
/// on `stream`. A single row is already its own transpose in memory, and so is a single
/// column once its elements are gathered: a (strided) copy.
template <class T, class Tile = typename DefaultTranspose<T>::Tile,
          class Fallback = typename DefaultTranspose<T>::Fallback>
void launch_transpose(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (rows == 1 || cols == 1) {
    DEVMAT_CUDA_TRY(cudaMemcpy2DAsync(out, static_cast<std::size_t>(cols) * sizeof(T), in,
                                      static_cast<std::size_t>(ld) * sizeof(T),
                                      static_cast<std::size_t>(cols) * sizeof(T), static_cast<std::size_t>(rows),
                                      cudaMemcpyDeviceToDevice, stream));
    return;
  }
  static_assert(Fallback::kW == 1, "launch_transpose: the fallback tile moves single elements");
  constexpr int W = Tile::kW;
  constexpr std::uintptr_t kWordBytes = W * sizeof(T);
  const bool whole_words = rows % W == 0 && cols % W == 0 && ld % W == 0 && is_aligned(in, kWordBytes) &&
                           is_aligned(out, kWordBytes);
  if (whole_words) launch_transpose_tile<T, Tile>(in, ld, out, rows, cols, stream);
  else launch_transpose_tile<T, Fallback>(in, ld, out, rows, cols, stream);
}

}  // namespace devmat::detail

// The host side of the TMA transpose (kernels/transpose_tma.cuh): where it can run, and the
// launch (its maps: transpose_tma_maps.hpp).
#pragma once

#include "dispatch/common.hpp"
#include "dispatch/device.hpp"
#include "dispatch/launch.cuh"
#include "dispatch/transpose_tma_maps.hpp"
#include "kernels/transpose_tma.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>

namespace devmat::detail {

/// Whether transpose_tma_kernel on Tile runs here for a rows x cols matrix: the current device
/// runs its sm_90 code (sm_90 on, and the library built for it: the kernel's PTX version, read
/// again whenever the calling thread's device changes), and the tile coordinates fit the TMA's
/// 32-bit ones.
template <class Tile>
bool transpose_tma_runs(Index rows, Index cols) {
  constexpr Index kMax = INT_MAX - 2 * Tile::kRows;
  if (rows > kMax || cols > kMax) return false;
  const DeviceProps& dev = current_device_props();
  if (dev.arch() < 90) return false;
  thread_local int cached_device = -1;
  thread_local bool cached_runs = false;
  if (cached_device != dev.device) {
    cudaFuncAttributes attr{};
    cached_runs = cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(&transpose_tma_kernel<Tile>)) == cudaSuccess &&
                  attr.ptxVersion >= 90;
    cached_device = dev.device;
  }
  return cached_runs;
}

/// transpose_tma_kernel on Tile (where transpose_tma_runs): a grid of the blocks the device
/// holds at once (at most one a tile), each walking its tiles.
template <class T, class Tile>
void launch_transpose_tma(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  static_assert(sizeof(T) == Tile::kSize, "launch_transpose_tma: the tile's element size");
  const auto kernel = &transpose_tma_kernel<Tile>;
  const TmaTransposeMaps<Tile::kSize> maps = transpose_tma_maps<Tile>(in, ld, out, rows, cols);
  const Index tiles_r = ceil_div(rows, static_cast<Index>(Tile::kRows));
  const Index tiles = tiles_r * ceil_div(cols, static_cast<Index>(Tile::kCols));
  const long long resident = static_cast<long long>(current_device_props().sm_count) *
                             blocks_per_sm(reinterpret_cast<const void*>(kernel), Tile::kThreads, Tile::kSmemBytes, true);
  const auto grid = static_cast<unsigned>(std::min<long long>(tiles, std::max<long long>(resident, 1)));
  launch(kernel, grid, Tile::kThreads, Tile::kSmemBytes, stream, maps, static_cast<unsigned>(tiles_r),
         static_cast<unsigned>(tiles));
}

/// The TMA tile a type takes by default.
template <class T>
using DefaultTmaTile = TmaTransposeTile<static_cast<int>(sizeof(T)), sizeof(T) == 1 ? 1 : static_cast<int>(sizeof(T)), 4>;

}  // namespace devmat::detail

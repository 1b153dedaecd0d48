// The host side of the TMA transpose (kernels/transpose_tma.cuh): each side's phase maps, where
// it can run, and the launch.
#pragma once

#include "detail/tensor_map.hpp"
#include "dispatch/common.hpp"
#include "dispatch/device.hpp"
#include "dispatch/launch.cuh"
#include "kernels/transpose_tma.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>

namespace devmat::detail {

/// One phase of one side of the transpose: rows p, p + v, ... (v = 16 / size elements a chunk)
/// of a matrix of `rows` rows of `row_elems` elements of `size` bytes, `ld` elements apart, from
/// `ptr`. Its map's base is row p's start rounded down to 16 bytes, `shift` elements before it;
/// its rows are row_elems + shift elements long from there (the first shift never addressed)
/// and 16 ld bytes apart. None where the matrix has at most p rows.
struct TmaPhase {
  bool valid;
  std::uintptr_t base;
  Index dim0, dim1;  // elements a row from the base, rows of the phase
  Index stride;      // bytes between its rows
  int shift;
};
inline TmaPhase tma_phase(std::uintptr_t ptr, Index ld, Index row_elems, Index rows, int size, int p) {
  const int v = 16 / size;
  if (rows <= p) return {false, 0, 0, 0, 0, 0};
  const std::uintptr_t a = ptr + static_cast<std::uintptr_t>(p) * static_cast<std::uintptr_t>(ld) * size;
  const std::uintptr_t b = a & ~std::uintptr_t(15);
  const int shift = static_cast<int>((a - b) / static_cast<std::uintptr_t>(size));
  return {true, b, row_elems + shift, (rows - p + v - 1) / v, static_cast<Index>(v) * ld * size, shift};
}

/// The tensor maps of transpose_tma_kernel on Tile: in (rows x cols, ld apart) phase p as boxes
/// of Tile::kCols x 8 kM, the dense cols x rows out phase q as boxes of 8 kV x 8, both with the
/// 128-byte swizzle.
template <class Tile>
TmaTransposeMaps<Tile::kSize> transpose_tma_maps(const void* in, Index ld, void* out, Index rows, Index cols) {
  constexpr int kSize = Tile::kSize;
  constexpr CUtensorMapDataType kType = kSize == 1   ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                        : kSize == 2 ? CU_TENSOR_MAP_DATA_TYPE_UINT16
                                        : kSize == 4 ? CU_TENSOR_MAP_DATA_TYPE_UINT32
                                                     : CU_TENSOR_MAP_DATA_TYPE_UINT64;
  TmaTransposeMaps<kSize> m{};
  const auto encode = [&](CUtensorMap* map, const TmaPhase& ph, cuuint32_t box_rows, CUtensorMapL2promotion l2) {
    encode_tensor_map_2d(map, kType, reinterpret_cast<const void*>(ph.base), static_cast<cuuint64_t>(ph.dim0),
                         static_cast<cuuint64_t>(ph.dim1), static_cast<cuuint64_t>(ph.stride), Tile::kCols, box_rows,
                         CU_TENSOR_MAP_SWIZZLE_128B, l2, "transpose");
  };
  for (int p = 0; p < Tile::kV; ++p) {
    const TmaPhase i = tma_phase(reinterpret_cast<std::uintptr_t>(in), ld, cols, rows, kSize, p);
    if (i.valid) {
      encode(&m.in[p], i, 8 * Tile::kM, CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
      m.in_shift[p] = i.shift;
      m.in_mask |= 1u << p;
    }
    const TmaPhase o = tma_phase(reinterpret_cast<std::uintptr_t>(out), rows, rows, cols, kSize, p);
    if (o.valid) {
      encode(&m.out[p], o, 8, CU_TENSOR_MAP_L2_PROMOTION_NONE);
      m.out_shift[p] = o.shift;
      m.out_mask |= 1u << p;
    }
  }
  return m;
}

/// Whether transpose_tma_kernel on Tile runs here for a rows x cols matrix: the current device
/// runs its sm_90 code (sm_90 on, and the library built for it: the kernel's PTX version, read
/// once per thread and device), and the tile coordinates fit the TMA's 32-bit ones.
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

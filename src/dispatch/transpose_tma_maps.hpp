// The tensor maps of the TMA transpose (kernels/transpose_tma.cuh): each side's phases. Host
// code that the launch and the CPU emulation share (the emulation's encoder records what the
// driver's would encode).
#pragma once

#include "detail/tensor_map.hpp"
#include "kernels/transpose_tma.cuh"

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

}  // namespace devmat::detail

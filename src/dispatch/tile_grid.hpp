// The grids of the tiled image kernels (filters, morphology, neighbourhoods): a tile per block,
// grid.x along columns, grid.y along rows capped at kMaxGridY (the kernels loop over the rest).
// Host code.
#pragma once

#include "dispatch/common.hpp"
#include "kernels/common.cuh"

#include <devmat/error.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace devmat::detail {

/// Throws shape_error when `cols` needs more than INT_MAX tiles of `tile_w` along grid.x.
inline void check_grid_x(const char* op, Index rows, Index cols, int tile_w) {
  if (ceil_div(static_cast<unsigned long long>(cols), tile_w) > static_cast<unsigned long long>(INT_MAX))
    throw shape_error(std::string("devmat: ") + op + ": image " + shape_string(rows, cols) + " is too wide");
}

/// (tiles along x, tiles along y capped at kMaxGridY; the kernels loop over the rest). The
/// kernels count tile rows in 32 bits (unsigned t = blockIdx.y .. tiles_y, step gridDim.y):
/// shape_error where that count would wrap (past 2^32 - kMaxGridY tile rows: a u8 box filter's
/// 16-row tiles on an image of 6.9e10 rows).
inline dim3 tile_grid(Index rows, Index cols, int tile_w, int tile_h, unsigned* tiles_y) {
  const auto ty = ceil_div(static_cast<unsigned long long>(rows), tile_h);
  if (ty > static_cast<unsigned long long>(UINT_MAX - kMaxGridY))
    throw shape_error("devmat: image " + shape_string(rows, cols) + " has more rows than the tiled kernels count (" +
                      std::to_string(ty) + " tiles of " + std::to_string(tile_h) + " rows)");
  *tiles_y = static_cast<unsigned>(ty);
  return dim3(static_cast<unsigned>(ceil_div(static_cast<unsigned long long>(cols), tile_w)),
              static_cast<unsigned>(std::min<unsigned long long>(ty, kMaxGridY)));
}

/// Calls l(std::integral_constant<int, R>{}) for r = R among 4, 8, 16: the output rows a thread
/// of the fused u8 neighbourhood kernels (box, morphology).
template <class L>
void with_rows_per_thread(int r, L&& l) {
  switch (r) {
    case 4: l(std::integral_constant<int, 4>{}); break;
    case 8: l(std::integral_constant<int, 8>{}); break;
    case 16: l(std::integral_constant<int, 16>{}); break;
    default: throw std::logic_error("devmat: fused u8 neighbourhood kernels: rows a thread must be 4, 8 or 16");
  }
}

/// Calls l(std::integral_constant<int, KR>{}, std::integral_constant<int, KC>{}) for sides kr, kc
/// of 3 or 5 (the fused u8 neighbourhood kernels').
template <class L>
void with_small_sides(int kr, int kc, L&& l) {
  const auto with_cols = [&](auto r) {
    if (kc == 3) l(r, std::integral_constant<int, 3>{});
    else if (kc == 5) l(r, std::integral_constant<int, 5>{});
    else throw std::logic_error("devmat: fused u8 neighbourhood kernels: sides must be 3 or 5");
  };
  if (kr == 3) with_cols(std::integral_constant<int, 3>{});
  else if (kr == 5) with_cols(std::integral_constant<int, 5>{});
  else throw std::logic_error("devmat: fused u8 neighbourhood kernels: sides must be 3 or 5");
}

}  // namespace devmat::detail

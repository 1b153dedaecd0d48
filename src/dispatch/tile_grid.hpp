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
#include <string>

namespace devmat::detail {

/// Throws shape_error when `cols` needs more than INT_MAX tiles of `tile_w` along grid.x.
inline void check_grid_x(const char* op, Index rows, Index cols, int tile_w) {
  if (ceil_div(static_cast<unsigned long long>(cols), tile_w) > static_cast<unsigned long long>(INT_MAX))
    throw shape_error(std::string("devmat: ") + op + ": image " + shape_string(rows, cols) + " is too wide");
}

/// (tiles along x, tiles along y capped at kMaxGridY; the kernels loop over the rest).
inline dim3 tile_grid(Index rows, Index cols, int tile_w, int tile_h, unsigned* tiles_y) {
  const auto ty = ceil_div(static_cast<unsigned long long>(rows), tile_h);
  *tiles_y = static_cast<unsigned>(ty);
  return dim3(static_cast<unsigned>(ceil_div(static_cast<unsigned long long>(cols), tile_w)),
              static_cast<unsigned>(std::min<unsigned long long>(ty, kMaxGridY)));
}

}  // namespace devmat::detail

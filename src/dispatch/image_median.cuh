// Launchers of the median filters (kernels/image_median.cuh): one instantiation per side and
// per rows a thread (pair: two adjacent rows sharing their windows' common values; the public
// function's default is false until a device run says otherwise).
#pragma once

#include "dispatch/launch.cuh"
#include "dispatch/tile_grid.hpp"
#include "kernels/image_median.cuh"

namespace devmat::detail {

template <int K>
void launch_median(cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index rows, Index cols,
                   bool pair = false) {
  if (rows == 0 || cols == 0) return;
  unsigned tiles_y = 0;
  const dim3 grid = tile_grid(rows, cols, kMedianTileWU8, kMedianTileH, &tiles_y);
  launch(pair ? &median_u8_kernel<K, true> : &median_u8_kernel<K, false>, grid, dim3(kMedianThreadsX, kMedianThreadsY), 0, s,
         in, ld, out, cols, rows, cols, tiles_y);
}

template <int K>
void launch_median(cudaStream_t s, const float* in, Index ld, float* out, Index rows, Index cols, bool pair = false) {
  if (rows == 0 || cols == 0) return;
  unsigned tiles_y = 0;
  const dim3 grid = tile_grid(rows, cols, kMedianTileWF32, kMedianTileH, &tiles_y);
  launch(pair ? &median_f32_kernel<K, true> : &median_f32_kernel<K, false>, grid, dim3(kMedianThreadsX, kMedianThreadsY), 0,
         s, in, ld, out, cols, rows, cols, tiles_y);
}

/// f32 5x5 by the four-outputs-a-thread kernel (kernels/image_median.cuh).
inline void launch_median_f32_quad(cudaStream_t s, const float* in, Index ld, float* out, Index rows, Index cols) {
  if (rows == 0 || cols == 0) return;
  unsigned tiles_y = 0;
  const dim3 grid = tile_grid(rows, cols, kMedianQuadTileW, kMedianTileH, &tiles_y);
  launch(&median_f32_quad_kernel<5>, grid, dim3(kMedianThreadsX, kMedianThreadsY), 0, s, in, ld, out, cols, rows, cols,
         tiles_y);
}

}  // namespace devmat::detail

// Launcher of Canny (kernels/image_canny.cuh): suppression, then hysteresis rounds until four
// in a row raise nothing (the host reads a flag after every four: Canny waits for its stream), then weak
// pixels cleared. A round works only on the tiles that a neighbour's change (or the first round)
// marked, so the rounds that follow the first cost little more than their launch.
#pragma once

#include "dispatch/common.hpp"
#include "dispatch/launch.cuh"
#include "dispatch/tile_grid.hpp"
#include "dispatch/workspace.hpp"
#include "kernels/image_canny.cuh"

#include <devmat/error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace devmat::detail {

constexpr int kCannyRoundsPerCheck = 4;

/// rounds_per_check: hysteresis rounds queued between two reads of the flag (each read waits
/// for the stream); kCannyRoundsPerCheck in canny(), others from bench_image_small.
inline void launch_canny(const Stream& stream, const std::uint8_t* in, Index ld, std::uint8_t* out, Index rows, Index cols,
                         int low, int high, int rounds_per_check = kCannyRoundsPerCheck) {
  const cudaStream_t s = stream.native();
  unsigned tiles_y = 0;
  const dim3 grid = tile_grid(rows, cols, kCannyTile, kCannyTile, &tiles_y);
  const dim3 block(kCannyThreadsX, kCannyThreadsY);
  launch(&canny_nms_kernel, grid, block, 0, s, in, ld, out, rows, cols, low, high, tiles_y);
  // The changed flag, then two tile-mark buffers (a round reads one and marks the other): the
  // first round takes every tile.
  const std::size_t n_tiles = static_cast<std::size_t>(grid.x) * tiles_y;
  const auto ws = Workspace::of<std::uint8_t>(sizeof(int) + 2 * n_tiles, stream);
  int* changed = ws.as<int>();
  std::uint8_t* dirty[2] = {ws.as<std::uint8_t>() + sizeof(int), ws.as<std::uint8_t>() + sizeof(int) + n_tiles};
  DEVMAT_CUDA_TRY(cudaMemsetAsync(dirty[0], 1, n_tiles, s));
  DEVMAT_CUDA_TRY(cudaMemsetAsync(dirty[1], 0, n_tiles, s));
  int parity = 0;
  for (int h_changed = 1; h_changed;) {
    DEVMAT_CUDA_TRY(cudaMemsetAsync(changed, 0, sizeof(int), s));
    for (int round = 0; round < rounds_per_check; ++round, parity ^= 1)  // several rounds per wait
      launch(&canny_hysteresis_kernel, grid, block, 0, s, out, rows, cols, tiles_y, changed, dirty[parity],
             dirty[parity ^ 1]);
    DEVMAT_CUDA_TRY(cudaMemcpyAsync(&h_changed, changed, sizeof(int), cudaMemcpyDeviceToHost, s));
    DEVMAT_CUDA_TRY(cudaStreamSynchronize(s));
  }
  const unsigned long long n = static_cast<unsigned long long>(rows) * static_cast<unsigned long long>(cols);
  const unsigned blocks = static_cast<unsigned>(std::min<unsigned long long>(ceil_div(n, kCannyThreads), 1u << 20));
  launch(&canny_finish_kernel, dim3(blocks), dim3(kCannyThreads), 0, s, out, static_cast<Index>(n));
}

}  // namespace devmat::detail

// Launcher of Canny (kernels/image_canny.cuh). The default hysteresis is by connected components:
// four kernels (suppression with the tiles' own components, the joins across tile borders, the
// roots, the edges) on the stream, no wait, whatever the edges' shapes. The tile-rounds design
// (suppression, then hysteresis rounds until four in a row raise nothing, the host reading a flag
// after every four, then weak pixels cleared) stays for images of 2^32 pixels or more (the
// components' labels are 32-bit) and as a configuration the tests and benchmarks force.
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

/// How canny's hysteresis runs: by connected components (a fixed number of kernels, no wait), or
/// in tile rounds, `rounds_per_check` queued between two reads of the flag (each read waits for
/// the stream).
struct CannyConfig {
  enum class Hysteresis { components, tile_rounds };
  // Tile rounds by default: on the H200 (final run of 2026-12-01, 4096^2, NPP = 1) the components
  // ran canny_5_15 at 0.140 against 0.49-0.51 for the tile rounds, though they bound the cost of
  // an image whose weak chains cross many tiles (canny_snake_20_100: 0.311), where the rounds
  // take one launch per tile crossed. A hybrid is the next step.
  Hysteresis hysteresis = Hysteresis::tile_rounds;
  int rounds_per_check = kCannyRoundsPerCheck;
};

/// Whether the components' 32-bit labels can index every pixel.
inline bool canny_components_fit(Index rows, Index cols) {
  return static_cast<unsigned long long>(rows) * static_cast<unsigned long long>(cols) <= 0xffffffffull;
}

/// Blocks of kCannyStreamThreads for `items` items a thread covers 4 of (grid-stride beyond).
inline unsigned canny_stream_blocks(unsigned long long items, int per_thread) {
  return static_cast<unsigned>(
      std::max<unsigned long long>(1, std::min<unsigned long long>(ceil_div(items, kCannyStreamThreads * per_thread), 1u << 20)));
}

inline void launch_canny_components(const Stream& stream, const std::uint8_t* in, Index ld, std::uint8_t* out, Index rows,
                                    Index cols, int low, int high) {
  const cudaStream_t s = stream.native();
  unsigned tiles_y = 0;
  const dim3 grid = tile_grid(rows, cols, kCannyTile, kCannyTile, &tiles_y);
  const unsigned long long n = static_cast<unsigned long long>(rows) * static_cast<unsigned long long>(cols);
  const auto lab = Workspace::of<unsigned>(static_cast<std::size_t>(n), stream);
  unsigned* d_lab = lab.as<unsigned>();
  launch(&canny_label_kernel, grid, dim3(kCannyThreadsX, kCannyThreadsY), 0, s, in, ld, out, d_lab, rows, cols, low, high,
         tiles_y);
  const Index tiles_x = grid.x;
  const unsigned long long border = static_cast<unsigned long long>(tiles_x - 1) * rows +
                                    static_cast<unsigned long long>(tiles_y - 1) * cols;
  if (border > 0)
    launch(&canny_merge_kernel, dim3(canny_stream_blocks(border, 1)), dim3(kCannyStreamThreads), 0, s,
           static_cast<const std::uint8_t*>(out), d_lab, rows, cols, tiles_x, static_cast<Index>(tiles_y));
  const dim3 pixels_grid(canny_stream_blocks(n, 4));
  launch(&canny_flatten_kernel, pixels_grid, dim3(kCannyStreamThreads), 0, s, out, d_lab, static_cast<Index>(n));
  launch(&canny_edges_kernel, pixels_grid, dim3(kCannyStreamThreads), 0, s, out, static_cast<const unsigned*>(d_lab),
         static_cast<Index>(n));
}  // lab is freed stream-ordered, after the kernels

inline void launch_canny_tile_rounds(const Stream& stream, const std::uint8_t* in, Index ld, std::uint8_t* out, Index rows,
                                     Index cols, int low, int high, int rounds_per_check) {
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

/// Canny of the rows x cols image at `in` (row stride ld) into the dense `out` (4-byte aligned, as
/// every pool allocation: the per-pixel kernels move words of 4 pixels), thresholds already
/// floor()ed; rows, cols > 0. The config's hysteresis (tile rounds by default); the components
/// only for images of fewer than 2^32 pixels.
inline void launch_canny(const Stream& stream, const std::uint8_t* in, Index ld, std::uint8_t* out, Index rows, Index cols,
                         int low, int high, const CannyConfig& config = {}) {
  if (config.hysteresis == CannyConfig::Hysteresis::components && canny_components_fit(rows, cols))
    launch_canny_components(stream, in, ld, out, rows, cols, low, high);
  else
    launch_canny_tile_rounds(stream, in, ld, out, rows, cols, low, high, config.rounds_per_check);
}

}  // namespace devmat::detail

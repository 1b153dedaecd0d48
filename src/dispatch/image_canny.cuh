// Launcher of Canny (kernels/image_canny.cuh). The default hysteresis is by tile rounds: the
// suppression, then rounds over the tiles a change marked (each tile filled on its own by a warp
// on bit masks) until a batch of rounds raises nothing (the host reads a flag after every batch),
// then weak pixels cleared. The connected components (four kernels, no wait, a cost bound whatever
// the edges' shapes) are a configuration the tests and benchmarks force, for images of fewer than
// 2^32 pixels (the labels are 32-bit).
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
constexpr int kCannyWalkTiles = 2;
/// THE SWITCH between canny's defaults: false, the byte-map tile rounds (the pixel components past
/// 64 rounds); true, the rounds on bit planes (Hysteresis::bits) finishing past
/// kCannyPlanesMaxRounds by the ring pieces' components (ring_union): bench_image_small's
/// "ours-planes-ring-m8" rows. Flip it once the H200 shows those rows above "ours".
// Run U2a (H200, 4096^2, of NPP): canny_5_15 1.39 (byte map 0.81), the snake 0.85 with 4 rounds
// before the ring components (8: 0.76, 16: 0.62; the byte map 0.12).
constexpr bool kCannyPlanes = true;
constexpr int kCannyPlanesMaxRounds = 4;  // the default's max_rounds under kCannyPlanes ("-ring-m<N>")
/// Whether canny's default queues its kCannyPlanesMaxRounds rounds and then the ring pieces'
/// components without reading the changed flag in between (CannyConfig::ring_unchecked):
/// bench_image_small's "ours-planes-ring-u<N>" rows (N rounds, 0 .. 4). Off: the snake's 0.85 of
/// NPP (run U2a) paid a host wait for the flag after its 4 rounds, and fewer rounds ran faster
/// (m16 0.62, m8 0.76, m4 0.85); an image that converges within them pays the components then.
constexpr bool kCannyRingUnchecked = false;

/// How canny's hysteresis runs: by connected components (a fixed number of kernels, no wait), or
/// in tile rounds, `rounds_per_check` queued between two reads of the flag (each read waits for
/// the stream).
struct CannyConfig {
  /// bits: the tile rounds on bit planes (canny_nms_bits_kernel suppresses and fills each tile,
  /// the rounds read and write 32-bit row words, canny_bits_expand_kernel writes the bytes once);
  /// rounds_per_check and max_rounds as for tile_rounds, fill and nms unused.
  enum class Hysteresis { components, tile_rounds, bits };
  // Tile rounds by default: on the H200 (final run of 2026-12-01, 4096^2, NPP = 1) the components
  // ran canny_5_15 at 0.140 against 0.49-0.51 for the tile rounds, though they bound the cost of
  // an image whose weak chains cross many tiles (canny_snake_20_100: 0.311), where the rounds
  // take one launch per tile crossed. A hybrid is the next step: the bit planes with the ring
  // pieces' components past a few rounds (kCannyPlanes).
  Hysteresis hysteresis = kCannyPlanes ? Hysteresis::bits : Hysteresis::tile_rounds;
  int rounds_per_check = kCannyRoundsPerCheck;
  /// Hysteresis::bits: tiles a warp of canny_nms_bits_kernel walks down (1, 2 or 4: fewer re-read
  /// rows against fewer warps).
  int walk_tiles = kCannyWalkTiles;
  /// Hysteresis::bits: past max_rounds, finish on the bit planes by the components of the tiles'
  /// ring pieces (canny_ring_*_kernel: four kernels, no wait) instead of the pixel components
  /// from the image again.
  bool ring_union = kCannyPlanes;
  /// Hysteresis::bits with ring_union: queue max_rounds rounds (0: none) and then the ring
  /// pieces' components, never reading the changed flag (no host wait at all).
  bool ring_unchecked = kCannyRingUnchecked;
  /// How a tile round fills a tile: a warp on bit masks (canny_hysteresis_bits_kernel, a weak run
  /// in one step), or a block sweeping shared memory (canny_hysteresis_kernel, a pixel a sweep,
  /// the fill measured in the runs up to S3).
  enum class TileFill { bits, sweeps };
  TileFill fill = TileFill::bits;
  /// Tile rounds queued before the hysteresis gives up on them and runs the components instead
  /// (from the image again; where they fit), 0 for no limit. The rounds take a launch per tile a
  /// weak chain crosses: a serpentine through every tile row of a 4096^2 image takes ~10^5
  /// rounds, where the components cost a bounded ~1 ms. Counted in whole batches.
  int max_rounds = kCannyPlanes ? kCannyPlanesMaxRounds : 64;
  /// How the tile rounds' suppression runs: a 32 x 32 tile a block in shared memory
  /// (canny_nms_kernel), or a warp walking down a strip in registers (canny_nms_strip_kernel, the
  /// same map; bench_image_small's "ours-strip" rows time it before it becomes the default).
  enum class Nms { tile, strip };
  Nms nms = Nms::tile;
};

/// Whether the components' 32-bit labels can index every pixel.
inline bool canny_components_fit(Index rows, Index cols) {
  return static_cast<unsigned long long>(rows) * static_cast<unsigned long long>(cols) <= 0xffffffffull;
}

/// Whether the ring nodes (128 a tile of 32 x 32) have 32-bit indices.
inline bool canny_ring_nodes_fit(Index rows, Index cols) {
  const unsigned long long tiles = static_cast<unsigned long long>(ceil_div(rows, Index(kCannyTile))) *
                                   static_cast<unsigned long long>(ceil_div(cols, Index(kCannyTile)));
  return tiles <= 0xffffffffull / kCannyRingSlots;
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

/// The tile rounds; false when max_rounds (0: no limit) were queued and the last batch still
/// raised pixels: out is then unfinished (the caller runs another design over it).
inline bool launch_canny_tile_rounds(const Stream& stream, const std::uint8_t* in, Index ld, std::uint8_t* out, Index rows,
                                     Index cols, int low, int high, int rounds_per_check, CannyConfig::TileFill fill,
                                     int max_rounds, CannyConfig::Nms nms = CannyConfig::Nms::tile) {
  const cudaStream_t s = stream.native();
  unsigned tiles_y = 0;
  const dim3 grid = tile_grid(rows, cols, kCannyTile, kCannyTile, &tiles_y);
  const dim3 block(kCannyThreadsX, kCannyThreadsY);
  if (nms == CannyConfig::Nms::strip) {
    unsigned strips_y = 0;
    const dim3 strips = tile_grid(rows, cols, kCannyStripW, kCannyStripRows, &strips_y);
    launch(&canny_nms_strip_kernel, strips, block, 0, s, in, ld, out, rows, cols, low, high, strips_y);
  } else {
    launch(&canny_nms_kernel, grid, block, 0, s, in, ld, out, rows, cols, low, high, tiles_y);
  }
  // The changed flag, then two tile-mark buffers (a round reads one and marks the other): the
  // first round takes every tile.
  const std::size_t n_tiles = static_cast<std::size_t>(grid.x) * tiles_y;
  const auto ws = Workspace::of<std::uint8_t>(sizeof(int) + 2 * n_tiles, stream);
  int* changed = ws.as<int>();
  std::uint8_t* dirty[2] = {ws.as<std::uint8_t>() + sizeof(int), ws.as<std::uint8_t>() + sizeof(int) + n_tiles};
  DEVMAT_CUDA_TRY(cudaMemsetAsync(dirty[0], 1, n_tiles, s));
  DEVMAT_CUDA_TRY(cudaMemsetAsync(dirty[1], 0, n_tiles, s));
  const dim3 bits_grid(static_cast<unsigned>(std::min<std::size_t>(ceil_div(n_tiles, std::size_t(kCannyBitWarps)), 1u << 20)));
  int parity = 0, rounds_done = 0;
  // The flag says whether the batch's last round raised (sweeps) or marked (bits) anything: when
  // not, no tile is marked for a next round, and every tile is settled.
  for (int h_changed = 1; h_changed;) {
    if (max_rounds > 0 && rounds_done >= max_rounds) return false;
    rounds_done += rounds_per_check;
    for (int round = 0; round < rounds_per_check; ++round, parity ^= 1) {  // several rounds per wait
      if (round == rounds_per_check - 1) DEVMAT_CUDA_TRY(cudaMemsetAsync(changed, 0, sizeof(int), s));
      if (fill == CannyConfig::TileFill::bits)
        launch(&canny_hysteresis_bits_kernel, bits_grid, dim3(32 * kCannyBitWarps), 0, s, out, rows, cols,
               static_cast<Index>(grid.x), static_cast<Index>(n_tiles), changed, dirty[parity], dirty[parity ^ 1]);
      else
        launch(&canny_hysteresis_kernel, grid, block, 0, s, out, rows, cols, tiles_y, changed, dirty[parity],
               dirty[parity ^ 1]);
    }
    DEVMAT_CUDA_TRY(cudaMemcpyAsync(&h_changed, changed, sizeof(int), cudaMemcpyDeviceToHost, s));
    DEVMAT_CUDA_TRY(cudaStreamSynchronize(s));
  }
  const unsigned long long n = static_cast<unsigned long long>(rows) * static_cast<unsigned long long>(cols);
  const unsigned long long words = std::max(n / 4, 1ull);  // canny_finish_kernel: a word of 4 pixels a thread
  const unsigned blocks = static_cast<unsigned>(std::min<unsigned long long>(ceil_div(words, kCannyThreads), 1u << 20));
  launch(&canny_finish_kernel, dim3(blocks), dim3(kCannyThreads), 0, s, out, static_cast<Index>(n));
  return true;
}

/// The bit-plane design (CannyConfig::Hysteresis::bits), canny_nms_bits_kernel's warps walking
/// down walk_tiles (1, 2 or 4) tiles; false, as launch_canny_tile_rounds, when max_rounds (0: no
/// limit) rounds were queued and the last batch still marked tiles: out is then not written.
/// With ring_union the ring pieces' components finish the hysteresis there instead (true; the
/// caller makes sure tiles * 128 nodes fit 32-bit indices); with ring_unchecked too, after exactly
/// max_rounds rounds (0: none), the flag never read.
inline bool launch_canny_bits(const Stream& stream, const std::uint8_t* in, Index ld, std::uint8_t* out, Index rows, Index cols,
                              int low, int high, int rounds_per_check, int max_rounds, int walk_tiles = kCannyWalkTiles,
                              bool ring_union = false, bool ring_unchecked = false) {
  const cudaStream_t s = stream.native();
  const Index tiles_x = ceil_div(cols, Index(kCannyTile)), tiles_y = ceil_div(rows, Index(kCannyTile));
  const std::size_t n_tiles = static_cast<std::size_t>(tiles_x) * static_cast<std::size_t>(tiles_y);
  const std::size_t n_words = n_tiles * kCannyTile;
  // The two planes, the changed flag, then two tile-mark buffers (a round reads one and marks the
  // other; canny_nms_bits_kernel writes both).
  const auto ws = Workspace::of<unsigned>(2 * n_words + 1 + ceil_div(2 * n_tiles, sizeof(unsigned)), stream);
  unsigned* const edge = ws.as<unsigned>();
  unsigned* const weak = edge + n_words;
  int* const changed = reinterpret_cast<int*>(weak + n_words);
  std::uint8_t* dirty[2] = {reinterpret_cast<std::uint8_t*>(changed + 1), reinterpret_cast<std::uint8_t*>(changed + 1) + n_tiles};
  const auto nms = [&](auto kernel, int walk) {
    const std::size_t warps = static_cast<std::size_t>(tiles_x) * ceil_div(static_cast<std::size_t>(tiles_y), std::size_t(walk));
    launch(kernel, dim3(static_cast<unsigned>(ceil_div(warps, std::size_t(kCannyNmsBitsWarps)))), dim3(32 * kCannyNmsBitsWarps),
           0, s, in, ld, rows, cols, low, high, tiles_x, tiles_y, edge, weak, dirty[0], dirty[1]);
  };
  if (walk_tiles == 1) nms(&canny_nms_bits_kernel<1>, 1);
  else if (walk_tiles == 4) nms(&canny_nms_bits_kernel<4>, 4);
  else nms(&canny_nms_bits_kernel<2>, 2);
  const dim3 bits_grid(static_cast<unsigned>(std::min<std::size_t>(ceil_div(n_tiles, std::size_t(kCannyBitWarps)), 1u << 20)));
  int parity = 0, rounds_done = 0;
  const auto round = [&] {
    launch(&canny_bits_round_kernel, bits_grid, dim3(32 * kCannyBitWarps), 0, s, edge, static_cast<const unsigned*>(weak),
           tiles_x, tiles_y, changed, dirty[parity], dirty[parity ^ 1]);
    parity ^= 1;
  };
  // The ring pieces' components on the planes as they are (raised pixels are edges; each tile
  // is filled on its own by the suppression and by every round, all the ring union needs).
  const auto ring_components = [&] {
    const std::size_t n_nodes = n_tiles * kCannyRingSlots;
    const auto uf = Workspace::of<unsigned>(n_nodes + ceil_div(n_nodes, sizeof(unsigned)), stream);
    unsigned* const parent = uf.as<unsigned>();
    std::uint8_t* const strong = reinterpret_cast<std::uint8_t*>(parent + n_nodes);
    launch(&canny_ring_pieces_kernel, bits_grid, dim3(32 * kCannyBitWarps), 0, s, static_cast<const unsigned*>(edge),
           static_cast<const unsigned*>(weak), static_cast<Index>(n_tiles), parent, strong);
    const unsigned long long border = static_cast<unsigned long long>(tiles_x - 1) * rows +
                                      static_cast<unsigned long long>(tiles_y - 1) * cols;
    if (border > 0)
      launch(&canny_ring_merge_kernel, dim3(canny_stream_blocks(border, 1)), dim3(kCannyStreamThreads), 0, s,
             static_cast<const unsigned*>(edge), static_cast<const unsigned*>(weak), parent, rows, cols, tiles_x, tiles_y);
    launch(&canny_ring_strong_kernel, dim3(canny_stream_blocks(n_nodes, 1)), dim3(kCannyStreamThreads), 0, s, parent, strong,
           static_cast<Index>(n_nodes));
    launch(&canny_ring_apply_kernel, bits_grid, dim3(32 * kCannyBitWarps), 0, s, edge, static_cast<const unsigned*>(weak),
           static_cast<Index>(n_tiles), static_cast<const unsigned*>(parent), static_cast<const std::uint8_t*>(strong));
  };
  if (ring_union && ring_unchecked) {
    for (int r = 0; r < max_rounds; ++r) round();  // the flag is set, never read
    ring_components();
  } else {
    for (int h_changed = 1; h_changed;) {  // as launch_canny_tile_rounds
      if (max_rounds > 0 && rounds_done >= max_rounds) {
        if (!ring_union) return false;
        ring_components();
        break;
      }
      rounds_done += rounds_per_check;
      for (int r = 0; r < rounds_per_check; ++r) {
        if (r == rounds_per_check - 1) DEVMAT_CUDA_TRY(cudaMemsetAsync(changed, 0, sizeof(int), s));
        round();
      }
      DEVMAT_CUDA_TRY(cudaMemcpyAsync(&h_changed, changed, sizeof(int), cudaMemcpyDeviceToHost, s));
      DEVMAT_CUDA_TRY(cudaStreamSynchronize(s));
    }
  }
  const bool vec = cols % 16 == 0 && reinterpret_cast<std::uintptr_t>(out) % 16 == 0;
  launch(&canny_bits_expand_kernel, dim3(static_cast<unsigned>(std::min<std::size_t>(ceil_div(n_words, std::size_t(kCannyExpandThreads)), 1u << 20))),
         dim3(kCannyExpandThreads), 0, s, static_cast<const unsigned*>(edge), out, rows, cols, tiles_x,
         static_cast<Index>(n_words), vec);
  return true;
}

/// Canny of the rows x cols image at `in` (row stride ld) into the dense `out` (4-byte aligned, as
/// every pool allocation: the per-pixel kernels move words of 4 pixels), thresholds already
/// floor()ed. The config's hysteresis (tile rounds by default, the components after max_rounds
/// rounds); the components only for images of fewer than 2^32 pixels. An empty image launches
/// nothing (a grid of no blocks is an invalid launch).
inline void launch_canny(const Stream& stream, const std::uint8_t* in, Index ld, std::uint8_t* out, Index rows, Index cols,
                         int low, int high, const CannyConfig& config = {}) {
  if (rows == 0 || cols == 0) return;
  const bool fit = canny_components_fit(rows, cols);
  if (config.hysteresis == CannyConfig::Hysteresis::components && fit) {
    launch_canny_components(stream, in, ld, out, rows, cols, low, high);
    return;
  }
  if (config.hysteresis == CannyConfig::Hysteresis::bits) {
    if (!launch_canny_bits(stream, in, ld, out, rows, cols, low, high, config.rounds_per_check, fit ? config.max_rounds : 0,
                           config.walk_tiles, config.ring_union && canny_ring_nodes_fit(rows, cols), config.ring_unchecked))
      launch_canny_components(stream, in, ld, out, rows, cols, low, high);  // writes every pixel of out
    return;
  }
  if (!launch_canny_tile_rounds(stream, in, ld, out, rows, cols, low, high, config.rounds_per_check, config.fill,
                                fit ? config.max_rounds : 0, config.nms))
    launch_canny_components(stream, in, ld, out, rows, cols, low, high);  // rewrites every pixel of out
}

}  // namespace devmat::detail

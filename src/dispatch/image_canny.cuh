// Launcher of Canny (kernels/image_canny.cuh), on bit planes: the suppression (each tile filled on
// its own), then kCannyMaxRounds rounds over the tiles a change marked, then, where chains still
// cross tiles (the last round's flag, read on the device), the components of the tiles' ring
// pieces (four kernels, a cost bound whatever the edges' shapes), then the edge plane expanded to
// bytes. No host wait by default; CannyConfig's checked form has the host read the flag after
// every batch of rounds instead.
#pragma once

#include "dispatch/common.hpp"
#include "dispatch/launch.cuh"
#include "dispatch/workspace.hpp"
#include "kernels/image_canny.cuh"

#include <devmat/error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace devmat::detail {

constexpr int kCannyRoundsPerCheck = 4;
/// Tiles a warp of canny_nms_bits_kernel walks down (1 or 2: fewer re-read rows against fewer
/// warps). 1: H200, 4096^2, canny_5_15 9.74e4 Mpix/s against 9.52e4 for 2 (run V1; U2a 9.66e4
/// against 9.48e4), the snake the same within 0.6%; bench_image_small's "ours-walk2" rows.
constexpr int kCannyWalkTiles = 1;
/// Rounds before the ring pieces' components finish the hysteresis ("-ring-m<N>" in the runs:
/// H200, 4096^2, canny_snake_20_100 m1 6.63e4 Mpix/s, m2 6.46e4, m4 6.30e4, m8 5.61e4, m16
/// 4.65e4, but canny_5_15 m1 3.47e4, m2 3.43e4, m4 9.45e4, m8 9.49e4, m16 9.50e4: run V1).
constexpr int kCannyMaxRounds = 4;
/// Whether canny's default queues its kCannyMaxRounds rounds and then the ring pieces' components
/// without the host reading the changed flag in between (CannyConfig::ring_unchecked): the
/// components' kernels read the last round's flag on the device and return at once where the
/// rounds settled every tile, so an image that converges within the rounds (canny_5_15) skips
/// them as the host's check did, and one that does not (the snake) waits for no host round trip.
/// bench_image_small's "ours-planes-ring-u<N>" rows (N rounds, 0 .. 4) and "ours-planes-ring-m4"
/// (the host's check). Before the flag gated them (run V1): with 0 rounds the snake ran 0.228 ms
/// against 0.266 for the host's check, 4 rounds 0.254; canny_5_15 0.461 ms against 0.177.
constexpr bool kCannyRingUnchecked = true;

/// How canny's hysteresis runs. Checked (ring_unchecked false): `rounds_per_check` rounds queued
/// between two reads of the flag by the host (each read waits for the stream), up to max_rounds
/// (0: until nothing changes), then the ring pieces' components. Unchecked (the default): exactly
/// max_rounds rounds, then the components behind the last round's flag; rounds_per_check unused.
struct CannyConfig {
  int rounds_per_check = kCannyRoundsPerCheck;
  /// Tiles a warp of canny_nms_bits_kernel walks down: 1 or 2.
  int walk_tiles = kCannyWalkTiles;
  /// Rounds before the ring pieces' components finish the hysteresis (checked: counted in whole
  /// batches, 0 for no limit: rounds until nothing changes; unchecked: exactly these, 0 for none,
  /// the components then always running). Rounds alone take a launch per tile a weak chain
  /// crosses: a serpentine through every tile row of a 4096^2 image takes ~10^5 rounds.
  int max_rounds = kCannyMaxRounds;
  /// Queue max_rounds rounds (0: none) and then the ring pieces' components, which run only where
  /// the last round set the changed flag (with no rounds, always); the host never waits. The
  /// components' workspace (640 bytes a tile, from the pool) is taken and their four launches
  /// queued either way.
  bool ring_unchecked = kCannyRingUnchecked;
};

/// Whether the ring nodes (128 a tile of 32 x 32) have 32-bit indices.
inline bool canny_ring_nodes_fit(Index rows, Index cols) {
  const unsigned long long tiles = static_cast<unsigned long long>(ceil_div(rows, Index(kCannyTile))) *
                                   static_cast<unsigned long long>(ceil_div(cols, Index(kCannyTile)));
  return tiles <= 0xffffffffull / kCannyRingSlots;
}

/// Blocks of kCannyStreamThreads for `items` items, one a thread (grid-stride beyond).
inline unsigned canny_stream_blocks(unsigned long long items) {
  return static_cast<unsigned>(
      std::max<unsigned long long>(1, std::min<unsigned long long>(ceil_div(items, kCannyStreamThreads), 1u << 20)));
}

/// Canny of the rows x cols image at `in` (row stride ld) into the dense `out`, thresholds already
/// floor()ed: the suppression into bit planes (canny_nms_bits_kernel's warps walking down
/// config.walk_tiles tiles), the rounds, then (past config.max_rounds, where the ring nodes have
/// 32-bit indices; else rounds to the end) the ring pieces' components; with ring_unchecked exactly
/// max_rounds rounds then the components behind the last round's flag, read on the device only.
/// An empty image launches nothing
/// (a grid of no blocks is an invalid launch).
inline void launch_canny(const Stream& stream, const std::uint8_t* in, Index ld, std::uint8_t* out, Index rows, Index cols,
                         int low, int high, const CannyConfig& config = {}) {
  if (rows == 0 || cols == 0) return;
  const cudaStream_t s = stream.native();
  const bool ring = canny_ring_nodes_fit(rows, cols);
  const int max_rounds = ring ? config.max_rounds : 0;
  const int rounds_per_check = std::max(config.rounds_per_check, 1);
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
  if (config.walk_tiles == 2) nms(&canny_nms_bits_kernel<2>, 2);
  else nms(&canny_nms_bits_kernel<1>, 1);
  const dim3 bits_grid(static_cast<unsigned>(std::min<std::size_t>(ceil_div(n_tiles, std::size_t(kCannyBitWarps)), 1u << 20)));
  int parity = 0;
  const auto round = [&] {
    launch(&canny_bits_round_kernel, bits_grid, dim3(32 * kCannyBitWarps), 0, s, edge, static_cast<const unsigned*>(weak),
           tiles_x, tiles_y, changed, dirty[parity], dirty[parity ^ 1]);
    parity ^= 1;
  };
  // The ring pieces' components on the planes as they are (raised pixels are edges; each tile
  // is filled on its own by the suppression and by every round, all the ring union needs).
  const auto ring_components = [&](const int* gate) {
    const std::size_t n_nodes = n_tiles * kCannyRingSlots;
    const auto uf = Workspace::of<unsigned>(n_nodes + ceil_div(n_nodes, sizeof(unsigned)), stream);
    unsigned* const parent = uf.as<unsigned>();
    std::uint8_t* const strong = reinterpret_cast<std::uint8_t*>(parent + n_nodes);
    launch(&canny_ring_pieces_kernel, bits_grid, dim3(32 * kCannyBitWarps), 0, s, static_cast<const unsigned*>(edge),
           static_cast<const unsigned*>(weak), static_cast<Index>(n_tiles), parent, strong, gate);
    const unsigned long long border = static_cast<unsigned long long>(tiles_x - 1) * rows +
                                      static_cast<unsigned long long>(tiles_y - 1) * cols;
    if (border > 0)
      launch(&canny_ring_merge_kernel, dim3(canny_stream_blocks(border)), dim3(kCannyStreamThreads), 0, s,
             static_cast<const unsigned*>(edge), static_cast<const unsigned*>(weak), parent, rows, cols, tiles_x, tiles_y, gate);
    launch(&canny_ring_strong_kernel, dim3(canny_stream_blocks(n_nodes)), dim3(kCannyStreamThreads), 0, s, parent, strong,
           static_cast<Index>(n_nodes), gate);
    launch(&canny_ring_apply_kernel, bits_grid, dim3(32 * kCannyBitWarps), 0, s, edge, static_cast<const unsigned*>(weak),
           static_cast<Index>(n_tiles), static_cast<const unsigned*>(parent), static_cast<const std::uint8_t*>(strong), gate);
  };  // uf is freed stream-ordered, after the kernels
  if (ring && config.ring_unchecked) {
    // max_rounds rounds, the flag cleared before the last; the components then run on the device
    // only where that round raised a ring pixel (the flag set), never waiting for the host.
    for (int r = 0; r < max_rounds; ++r) {
      if (r == max_rounds - 1) DEVMAT_CUDA_TRY(cudaMemsetAsync(changed, 0, sizeof(int), s));
      round();
    }
    ring_components(max_rounds > 0 ? changed : nullptr);
  } else {
    // The flag says whether the batch's last round marked anything: when not, no tile is marked
    // for a next round, and every tile is settled.
    int rounds_done = 0;
    for (int h_changed = 1; h_changed;) {
      if (max_rounds > 0 && rounds_done >= max_rounds) {
        ring_components(nullptr);
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
  launch(&canny_bits_expand_kernel, dim3(static_cast<unsigned>(std::min<std::size_t>(ceil_div(2 * n_words, std::size_t(kCannyExpandThreads)), 1u << 20))),
         dim3(kCannyExpandThreads), 0, s, static_cast<const unsigned*>(edge), out, rows, cols, tiles_x,
         static_cast<Index>(n_words), vec);
}

}  // namespace devmat::detail

// Canny's kernels (kernels/image_canny.cuh) run on the CPU through the CUDA emulation (expr_emu/:
// a block's threads are host threads, so the shared-memory union-find's atomics and barriers
// race as on the GPU; blocks run one after another) against canny_reference
// (support/canny_ref.hpp): both hysteresis designs, the connected components' four kernels and
// the tile rounds, exact. Small grids on purpose (grid.y 1 or 2, few blocks for the per-pixel
// kernels) so the loops past the grid run too. Noise, smoothed noise, serpentines and spirals
// of weak edges that cross many tiles, 1xN, Nx1, primes, tile-1/tile/tile+1, inputs at an odd
// offset with an odd stride.
#include <math.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "support/canny_ref.hpp"
#include "support/catch.hpp"

#include "emu_cuda.hpp"

// What the kernels use beyond the emulation's intrinsics: real atomics (a block's threads are
// real threads), an L2 load, a block-wide or.
template <class T>
T atomicMin(T* p, T v) {
  T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
  return old;
}
inline unsigned atomicOr(unsigned* p, unsigned v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
inline int atomicExch(int* p, int v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
inline unsigned __ldcg(const unsigned* p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
inline int __syncthreads_or(int pred) {
  static std::atomic<int> any{0};
  __syncthreads();  // every thread past the previous call's reads
  if (pred) any.store(1);
  __syncthreads();
  const int r = any.load();
  __syncthreads();
  if (emu::linear_thread() == 0) any.store(0);
  return r;
}

// The bit fill's warp votes and bit reversal.
inline unsigned __ballot_sync(unsigned /*mask*/, int pred) {
  const int p = pred != 0;
  const auto& slot = emu::exchange(p);
  const int t = emu::linear_thread(), base = t - t % 32, n = emu::warp_size_of(t);
  unsigned bits = 0;
  for (int k = 0; k < n; ++k) {
    int q;
    std::memcpy(&q, slot[base + k], sizeof(q));
    bits |= static_cast<unsigned>(q != 0) << k;
  }
  return bits;
}
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int b = 0; b < 32; ++b) r |= ((x >> b) & 1u) << (31 - b);
  return r;
}

inline int __ffs(int x) { return __builtin_ffs(x); }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }

#include "kernels/image_canny.cuh"

using devmat::Index;
namespace d = devmat::detail;

namespace {
using U8 = std::uint8_t;

std::mt19937& gen() {
  static std::mt19937 g(std::random_device{}());
  return g;
}

std::vector<U8> noise(Index r, Index c) {
  std::uniform_int_distribution<int> dist(0, 255);
  std::vector<U8> v(static_cast<std::size_t>(r * c));
  for (U8& x : v) x = static_cast<U8>(dist(gen()));
  return v;
}

/// Noise under a box of side `blur` (clipped at the borders): long edges.
std::vector<U8> smooth(Index r, Index c, int blur) {
  const std::vector<U8> n = noise(r, c);
  std::vector<U8> out(n.size());
  for (Index y = 0; y < r; ++y)
    for (Index x = 0; x < c; ++x) {
      int s = 0, k = 0;
      for (Index i = std::max<Index>(0, y - blur / 2); i <= std::min(r - 1, y + blur / 2); ++i)
        for (Index j = std::max<Index>(0, x - blur / 2); j <= std::min(c - 1, x + blur / 2); ++j) s += n[i * c + j], ++k;
      out[y * c + x] = static_cast<U8>(s / k);
    }
  return out;
}

enum class Design { components, sweeps, bits, planes, rings };

/// Canny of the dense r x c image by the emulated kernels: components (grid.y of the label kernel
/// cut to grid_y, `blocks` blocks for the per-pixel kernels and the bit fill's warps) or tile
/// rounds, each tile filled by shared-memory sweeps or on bit masks.
std::vector<U8> emulated_canny(const std::vector<U8>& dense, Index r, Index c, double low_t, double high_t, Design design,
                               unsigned grid_y, unsigned blocks) {
  const bool components = design == Design::components;
  // The input at row 1, column 3 of an (r + 3) x (c + 7) buffer: an odd offset and stride.
  const Index ld = c + 7;
  std::vector<U8> buf(static_cast<std::size_t>((r + 3) * ld), 77);
  for (Index y = 0; y < r; ++y)
    for (Index x = 0; x < c; ++x) buf[(y + 1) * ld + x + 3] = dense[y * c + x];
  const U8* in = buf.data() + ld + 3;
  const int low = static_cast<int>(std::floor(low_t)), high = static_cast<int>(std::floor(high_t));
  const Index n = r * c;
  std::vector<U8> out(static_cast<std::size_t>(n) + 3, 0xA5);  // 3 past the end: must stay
  const unsigned tiles_x = static_cast<unsigned>((c + d::kCannyTile - 1) / d::kCannyTile);
  const unsigned tiles_y = static_cast<unsigned>((r + d::kCannyTile - 1) / d::kCannyTile);
  const dim3 grid(tiles_x, std::min(grid_y, tiles_y)), block(d::kCannyThreadsX, d::kCannyThreadsY);
  if (design == Design::planes || design == Design::rings) {
    // The bit-plane design, canny_nms_bits_kernel's warps walking down 1, 2 or 4 tiles (by the
    // shape, so every walk runs), then as launch_canny_bits.
    const int walk = 1 << static_cast<int>((r + c) % 3);
    const std::size_t n_tiles = static_cast<std::size_t>(tiles_x) * tiles_y, n_words = n_tiles * d::kCannyTile;
    std::vector<unsigned> edge(n_words, 0xDEADBEEFu), weak(n_words, 0xDEADBEEFu);
    std::vector<U8> dirty[2] = {std::vector<U8>(n_tiles, 0xA5), std::vector<U8>(n_tiles, 0xA5)};
    const std::size_t warps = tiles_x * ((tiles_y + walk - 1) / walk);
    const dim3 nms_grid(static_cast<unsigned>((warps + d::kCannyNmsBitsWarps - 1) / d::kCannyNmsBitsWarps));
    const auto nms = [&](auto kernel) {
      emu::launch(nms_grid, dim3(32 * d::kCannyNmsBitsWarps), [&] {
        kernel(in, ld, r, c, low, high, tiles_x, tiles_y, edge.data(), weak.data(), dirty[0].data(), dirty[1].data());
      });
    };
    if (walk == 1) nms(d::canny_nms_bits_kernel<1>);
    else if (walk == 2) nms(d::canny_nms_bits_kernel<2>);
    else nms(d::canny_nms_bits_kernel<4>);
    for (std::size_t t = 0; t < n_tiles; ++t) CHECK((dirty[0][t] <= 1 && dirty[1][t] == 0));  // every tile's marks written
    int parity = 0;
    // rings: the ring pieces' components after 0 or 1 rounds (by the shape), as launch_canny_bits
    // past max_rounds.
    const int rounds = design == Design::rings ? static_cast<int>((r * 3 + c) % 2) : 1 << 30;
    int changed = 1;
    for (int round = 0; changed && round < rounds; ++round, parity ^= 1) {
      changed = 0;
      emu::launch(dim3(blocks), dim3(32 * d::kCannyBitWarps), [&] {
        d::canny_bits_round_kernel(edge.data(), weak.data(), tiles_x, tiles_y, &changed, dirty[parity].data(),
                                   dirty[parity ^ 1].data());
      });
    }
    if (design == Design::rings) {
      const std::size_t n_nodes = n_tiles * d::kCannyRingSlots;
      std::vector<unsigned> parent(n_nodes, 0xDEADBEEFu);
      std::vector<U8> strong(n_nodes, 0xA5);
      emu::launch(dim3(blocks), dim3(32 * d::kCannyBitWarps),
                  [&] { d::canny_ring_pieces_kernel(edge.data(), weak.data(), static_cast<Index>(n_tiles), parent.data(), strong.data()); });
      for (std::size_t k = 0; k < n_nodes; ++k) CHECK((parent[k] <= k && strong[k] <= 1));  // every node written
      if (tiles_x > 1 || tiles_y > 1)
        emu::launch(dim3(blocks), dim3(d::kCannyStreamThreads),
                    [&] { d::canny_ring_merge_kernel(edge.data(), weak.data(), parent.data(), r, c, tiles_x, tiles_y); });
      emu::launch(dim3(blocks), dim3(d::kCannyStreamThreads),
                  [&] { d::canny_ring_strong_kernel(parent.data(), strong.data(), static_cast<Index>(n_nodes)); });
      emu::launch(dim3(blocks), dim3(32 * d::kCannyBitWarps),
                  [&] { d::canny_ring_apply_kernel(edge.data(), weak.data(), static_cast<Index>(n_tiles), parent.data(), strong.data()); });
    }
    const bool vec = c % 16 == 0 && reinterpret_cast<std::uintptr_t>(out.data()) % 16 == 0;
    emu::launch(dim3(blocks), dim3(d::kCannyExpandThreads), [&] {
      d::canny_bits_expand_kernel(edge.data(), out.data(), r, c, tiles_x, static_cast<Index>(n_words), vec);
    });
  } else if (components) {
    std::vector<unsigned> lab(static_cast<std::size_t>(n), 0xDEADBEEFu);
    emu::launch(grid, block, [&] { d::canny_label_kernel(in, ld, out.data(), lab.data(), r, c, low, high, tiles_y); });
    if (tiles_x > 1 || tiles_y > 1)
      emu::launch(dim3(blocks), dim3(d::kCannyStreamThreads),
                  [&] { d::canny_merge_kernel(out.data(), lab.data(), r, c, tiles_x, tiles_y); });
    emu::launch(dim3(blocks), dim3(d::kCannyStreamThreads), [&] { d::canny_flatten_kernel(out.data(), lab.data(), n); });
    emu::launch(dim3(blocks), dim3(d::kCannyStreamThreads), [&] { d::canny_edges_kernel(out.data(), lab.data(), n); });
  } else {
    emu::launch(grid, block, [&] { d::canny_nms_kernel(in, ld, out.data(), r, c, low, high, tiles_y); });
    const std::size_t n_tiles = static_cast<std::size_t>(tiles_x) * tiles_y;
    std::vector<U8> dirty[2] = {std::vector<U8>(n_tiles, 1), std::vector<U8>(n_tiles, 0)};
    int parity = 0;
    for (int changed = 1; changed; parity ^= 1) {
      changed = 0;
      if (design == Design::bits)
        emu::launch(dim3(blocks), dim3(32 * d::kCannyBitWarps), [&] {
          d::canny_hysteresis_bits_kernel(out.data(), r, c, tiles_x, static_cast<Index>(n_tiles), &changed,
                                          dirty[parity].data(), dirty[parity ^ 1].data());
        });
      else
        emu::launch(grid, block, [&] {
          d::canny_hysteresis_kernel(out.data(), r, c, tiles_y, &changed, dirty[parity].data(), dirty[parity ^ 1].data());
        });
    }
    emu::launch(dim3(blocks), dim3(d::kCannyThreads), [&] { d::canny_finish_kernel(out.data(), n); });
  }
  for (int k = 0; k < 3; ++k) CHECK(out[n + k] == 0xA5);
  out.resize(static_cast<std::size_t>(n));
  return out;
}

/// Every design (the sweeps' tile rounds only where `rounds` is true: they cost many emulated
/// launches).
void check(const std::vector<U8>& img, Index r, Index c, double lo, double hi, unsigned grid_y, unsigned blocks,
           bool rounds = true) {
  const std::vector<U8> want = devmat::test::canny_reference(img.data(), r, c, c, lo, hi);
  for (Design design : {Design::components, Design::bits, Design::sweeps, Design::planes, Design::rings}) {
    if (design == Design::sweeps && !rounds) continue;
    CAPTURE(r, c, lo, hi, static_cast<int>(design), grid_y, blocks);
    const std::vector<U8> got = emulated_canny(img, r, c, lo, hi, design, grid_y, blocks);
    Index bad = 0;
    for (Index e = 0; e < r * c; ++e) bad += got[e] != want[e];
    CHECK(bad == 0);
  }
}

const std::vector<std::pair<Index, Index>> kShapes = {{1, 1},  {1, 2},   {2, 1},   {2, 3},   {3, 2},   {1, 97},
                                                      {97, 1}, {31, 31}, {32, 32}, {33, 33}, {31, 65}, {65, 31},
                                                      {13, 17}, {64, 96}, {67, 131}, {131, 67}, {35, 48}, {40, 16}};
}  // namespace

TEST_CASE("emulated canny kernels (components and tile rounds) equal the reference on noise and smooth images",
          "[image][canny][emulation]") {
  for (const auto& [r, c] : kShapes) {
    const std::vector<U8> n = noise(r, c), s = smooth(r, c, 5);
    for (const auto& [lo, hi] : std::vector<std::pair<double, double>>{{50, 150}, {10, 30}, {0, 0}, {20.7, 80.2}}) {
      const bool rounds = lo == 10;
      check(n, r, c, lo, hi, 1, 2, rounds);
      check(s, r, c, lo, hi, 2, 3, rounds);
    }
  }
}

TEST_CASE("emulated canny kernels: serpentines and spirals of weak edges across many tiles", "[image][canny][emulation]") {
  for (const auto& [r, c] : std::vector<std::pair<Index, Index>>{{97, 161}, {160, 96}, {129, 129}, {9, 301}, {301, 9}}) {
    for (int spacing : {3, 7})
      for (bool spiral : {false, true}) {
        const std::vector<U8> img = devmat::test::snake_image(r, c, spacing, spiral);
        const std::vector<U8> want = devmat::test::canny_reference(img.data(), r, c, c, 20, 100);
        Index edges = 0;
        for (U8 v : want) edges += v != 0;
        CAPTURE(r, c, spacing, spiral);
        if (std::min(r, c) > 64) CHECK(edges > std::max(r, c));  // the path joined to the strong patch: not a trivial map
        check(img, r, c, 20, 100, 2, 3, r == 97);
      }
  }
  // Serpentines of columns (transposed snakes): the bit fill's slow direction.
  for (const auto& [r, c] : std::vector<std::pair<Index, Index>>{{96, 64}, {70, 33}, {161, 40}}) {
    for (int spacing : {2, 3})
      for (bool spiral : {false, true}) {
        const std::vector<U8> t = devmat::test::snake_image(c, r, spacing, spiral);  // c x r
        std::vector<U8> img(t.size());
        for (Index y = 0; y < r; ++y)
          for (Index x = 0; x < c; ++x) img[y * c + x] = t[x * r + y];
        CAPTURE(r, c, spacing, spiral);
        check(img, r, c, 20, 100, 2, 3, r == 96);
      }
  }
}

namespace {
/// The suppression maps of canny_nms_kernel and canny_nms_strip_kernel (grid.y cut to grid_y)
/// of the dense r x c image read at an odd offset and stride; the pixels where they differ, and
/// whether the strip kernel wrote past the map.
std::pair<Index, bool> nms_strip_mismatches(const std::vector<U8>& dense, Index r, Index c, int low, int high,
                                            unsigned grid_y) {
  const Index ld = c + 5;
  std::vector<U8> buf(static_cast<std::size_t>((r + 3) * ld), 77);
  for (Index y = 0; y < r; ++y)
    for (Index x = 0; x < c; ++x) buf[(y + 2) * ld + x + 1] = dense[y * c + x];
  const U8* in = buf.data() + 2 * ld + 1;
  const Index n = r * c;
  std::vector<U8> tile(static_cast<std::size_t>(n), 0xA5), strip(static_cast<std::size_t>(n) + 3, 0xA5);
  const unsigned tiles_y = static_cast<unsigned>((r + d::kCannyTile - 1) / d::kCannyTile);
  const dim3 block(d::kCannyThreadsX, d::kCannyThreadsY);
  emu::launch(dim3(static_cast<unsigned>((c + d::kCannyTile - 1) / d::kCannyTile), std::min(grid_y, tiles_y)), block,
              [&] { d::canny_nms_kernel(in, ld, tile.data(), r, c, low, high, tiles_y); });
  const unsigned strips_y = static_cast<unsigned>((r + d::kCannyStripRows - 1) / d::kCannyStripRows);
  emu::launch(dim3(static_cast<unsigned>((c + d::kCannyStripW - 1) / d::kCannyStripW), std::min(grid_y, strips_y)), block,
              [&] { d::canny_nms_strip_kernel(in, ld, strip.data(), r, c, low, high, strips_y); });
  Index bad = 0;
  for (Index e = 0; e < n; ++e) bad += tile[e] != strip[e];
  return {bad, strip[n] != 0xA5 || strip[n + 1] != 0xA5 || strip[n + 2] != 0xA5};
}
}  // namespace

TEST_CASE("emulated canny: the strip suppression (canny_nms_strip_kernel) writes the tile suppression's map",
          "[image][canny][emulation]") {
  // Shapes across the strip's 28 columns a warp, 224 a block and 32 rows (-1, 0, +1), thin ones,
  // primes; noise (every sector and tie) and smoothed noise (long edges), thresholds low and high.
  std::vector<std::pair<Index, Index>> shapes = kShapes;
  for (std::pair<Index, Index> s : {std::pair<Index, Index>{27, 28}, {29, 29}, {63, 223}, {65, 225}, {33, 449}, {5, 500},
                                    {100, 3}, {71, 257}})
    shapes.push_back(s);
  Index checked = 0;
  for (const auto& [r, c] : shapes)
    for (int blur : {1, 3, 7}) {
      const std::vector<U8> img = blur == 1 ? noise(r, c) : smooth(r, c, blur);
      for (const auto& [lo, hi] : std::vector<std::pair<int, int>>{{50, 150}, {10, 30}, {0, 0}, {200, 1000}}) {
        if (blur != 1 && (lo == 0 || lo == 200)) continue;  // every case on noise; fewer emulated launches
        CAPTURE(r, c, blur, lo, hi);
        const auto [bad, past_end] = nms_strip_mismatches(img, r, c, lo, hi, blur == 3 ? 1u : 2u);
        CHECK(bad == 0);
        CHECK(!past_end);
        ++checked;
      }
    }
  CHECK(checked > 0);
}

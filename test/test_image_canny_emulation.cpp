// Canny's kernels (kernels/image_canny.cuh) run on the CPU through the CUDA emulation (expr_emu/:
// a block's threads are host threads, so the union-find's atomics race as on the GPU; blocks run
// one after another) against canny_reference (support/canny_ref.hpp): the suppression into bit
// planes (each walk), the rounds to the end, and the ring pieces' components after 0 or 1
// rounds, or behind the flag of 1 or 2 rounds (skipped where those settled every tile), exact.
// Small grids on purpose (few blocks for the per-tile and per-item kernels) so the loops past
// the grid run too. Noise, smoothed noise, serpentines and spirals of weak edges that cross many
// tiles, 1xN, Nx1, primes, tile-1/tile/tile+1, inputs at an odd offset with an odd stride.
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
// real threads), an L2 load.
template <class T>
T atomicMin(T* p, T v) {
  T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
  return old;
}
inline int atomicExch(int* p, int v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
inline unsigned __ldcg(const unsigned* p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }

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

/// planes: the rounds to the end; rings: the ring pieces' components after 0 or 1 rounds; gated:
/// after 1 or 2 rounds, behind the last round's flag.
enum class Design { planes, rings, gated };

/// Canny of the dense r x c image by the emulated kernels as launch_canny runs them, `blocks`
/// blocks for the per-tile and per-item kernels.
std::vector<U8> emulated_canny(const std::vector<U8>& dense, Index r, Index c, double low_t, double high_t, Design design,
                               unsigned blocks) {
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
  {
    // canny_nms_bits_kernel's warps walking down 1 or 2 tiles (by the shape, so both walks run),
    // then as launch_canny.
    const int walk = 1 + static_cast<int>((r + c) % 2);
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
    else nms(d::canny_nms_bits_kernel<2>);
    for (std::size_t t = 0; t < n_tiles; ++t) CHECK((dirty[0][t] <= 1 && dirty[1][t] == 0));  // every tile's marks written
    int parity = 0;
    // rings: the ring pieces' components after 0 or 1 rounds (by the shape), as launch_canny past
    // max_rounds.
    // gated: 1 or 2 rounds, then the components behind the flag of the last (launch_canny's
    // ring_unchecked): skipped where the rounds settled every tile, run where they did not.
    const int rounds = design == Design::rings   ? static_cast<int>((r * 3 + c) % 2)
                       : design == Design::gated ? 1 + static_cast<int>((r + c) % 2)
                                                 : 1 << 30;
    int changed = 1;
    for (int round = 0; changed && round < rounds; ++round, parity ^= 1) {
      changed = 0;
      emu::launch(dim3(blocks), dim3(32 * d::kCannyBitWarps), [&] {
        d::canny_bits_round_kernel(edge.data(), weak.data(), tiles_x, tiles_y, &changed, dirty[parity].data(),
                                   dirty[parity ^ 1].data());
      });
    }
    if (design != Design::planes) {
      const int* const gate = design == Design::gated ? &changed : nullptr;
      const std::size_t n_nodes = n_tiles * d::kCannyRingSlots;
      std::vector<unsigned> parent(n_nodes, 0xDEADBEEFu);
      std::vector<U8> strong(n_nodes, 0xA5);
      emu::launch(dim3(blocks), dim3(32 * d::kCannyBitWarps),
                  [&] { d::canny_ring_pieces_kernel(edge.data(), weak.data(), static_cast<Index>(n_tiles), parent.data(), strong.data(), gate); });
      if (!gate || changed)
        for (std::size_t k = 0; k < n_nodes; ++k) CHECK((parent[k] <= k && strong[k] <= 1));  // every node written
      if (tiles_x > 1 || tiles_y > 1)
        emu::launch(dim3(blocks), dim3(d::kCannyStreamThreads),
                    [&] { d::canny_ring_merge_kernel(edge.data(), weak.data(), parent.data(), r, c, tiles_x, tiles_y, gate); });
      emu::launch(dim3(blocks), dim3(d::kCannyStreamThreads),
                  [&] { d::canny_ring_strong_kernel(parent.data(), strong.data(), static_cast<Index>(n_nodes), gate); });
      emu::launch(dim3(blocks), dim3(32 * d::kCannyBitWarps),
                  [&] { d::canny_ring_apply_kernel(edge.data(), weak.data(), static_cast<Index>(n_tiles), parent.data(), strong.data(), gate); });
    }
    const bool vec = c % 16 == 0 && reinterpret_cast<std::uintptr_t>(out.data()) % 16 == 0;
    emu::launch(dim3(blocks), dim3(d::kCannyExpandThreads), [&] {
      d::canny_bits_expand_kernel(edge.data(), out.data(), r, c, tiles_x, static_cast<Index>(n_words), vec);
    });
  }
  for (int k = 0; k < 3; ++k) CHECK(out[n + k] == 0xA5);
  out.resize(static_cast<std::size_t>(n));
  return out;
}

/// Every design.
void check(const std::vector<U8>& img, Index r, Index c, double lo, double hi, unsigned blocks) {
  const std::vector<U8> want = devmat::test::canny_reference(img.data(), r, c, c, lo, hi);
  for (Design design : {Design::planes, Design::rings, Design::gated}) {
    CAPTURE(r, c, lo, hi, static_cast<int>(design), blocks);
    const std::vector<U8> got = emulated_canny(img, r, c, lo, hi, design, blocks);
    Index bad = 0;
    for (Index e = 0; e < r * c; ++e) bad += got[e] != want[e];
    CHECK(bad == 0);
  }
}

const std::vector<std::pair<Index, Index>> kShapes = {{1, 1},  {1, 2},   {2, 1},   {2, 3},   {3, 2},   {1, 97},
                                                      {97, 1}, {31, 31}, {32, 32}, {33, 33}, {31, 65}, {65, 31},
                                                      {13, 17}, {64, 96}, {67, 131}, {131, 67}, {35, 48}, {40, 16}};
}  // namespace

TEST_CASE("emulated canny kernels equal the reference on noise and smooth images",
          "[image][canny][emulation]") {
  for (const auto& [r, c] : kShapes) {
    const std::vector<U8> n = noise(r, c), s = smooth(r, c, 5);
    for (const auto& [lo, hi] : std::vector<std::pair<double, double>>{{50, 150}, {10, 30}, {0, 0}, {20.7, 80.2}}) {
      check(n, r, c, lo, hi, 2);
      check(s, r, c, lo, hi, 3);
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
        check(img, r, c, 20, 100, 3);
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
        check(img, r, c, 20, 100, 3);
      }
  }
}

// transpose_shift_kernel (kernels/transpose.cuh: the word tile at any alignment, the default for
// bytes whose rows are not whole 4-byte words where the vector tile does not run) run on the CPU
// through the CUDA emulation (expr_emu/), exact against the plain transpose: u8 with 4-byte
// words, both tile orders. Sides around the tile (32 W rows, 31 W columns), 1, primes, inputs
// at every offset into a word with odd strides, each matrix ending 16 to 19 elements before an
// inaccessible page at every offset into a word over the shapes, its loads held to its bytes
// (emu::ExactReads: a word read past its last byte aborts even where a page guard could not see
// it), outputs at every offset into a word inside a poisoned buffer whose guards must stay
// poisoned. Misaligned word loads abort (emu_cuda.hpp).

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <type_traits>
#include <vector>

#include "support/catch.hpp"

#include "emu_cuda.hpp"
#include "emu_image.hpp"
#include "emu_guarded.hpp"

// Intrinsics the transpose kernels use past those of emu_cuda.hpp.
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
  return static_cast<unsigned>((((static_cast<unsigned long long>(hi) << 32) | lo) << (shift & 31)) >> 32);
}
inline void __syncwarp(unsigned = 0xffffffffu) { emu::g_block.warp[emu::linear_thread() / 32].wait(); }

#include "kernels/transpose.cuh"

using devmat::Index;
namespace d = devmat::detail;

namespace {
using emu::GuardedBytes;

/// A transpose case for the tile kernels' emulations: the rows x cols window at column `c0` of
/// a matrix of ld >= c0 + cols random elements whose last element (that of the window's last
/// row) is the last a kernel may read (emu::ExactReads), ending 16 to 19 elements before an
/// inaccessible page at every offset into a 16-byte vector over the shapes, its first element
/// c0 elements past a 16-byte boundary; the output at element `at` past a 16-byte boundary (a
/// device allocation plus an offset) of a poisoned buffer whose `guard` elements after it, and
/// those before it, must stay poisoned.
template <class T>
class GuardedTranspose {
 public:
  GuardedTranspose(Index rows, Index cols, Index ld, Index c0, Index at, Index guard)
      : rows_(rows), cols_(cols), ld_(ld), at_(at), elems_((rows - 1) * ld + c0 + cols),
        buf_(static_cast<std::size_t>(elems_ + 16 + (rows + cols + c0) % 4) * sizeof(T)),
        exact_(buf_, static_cast<std::size_t>(elems_) * sizeof(T)),
        out_buf_(static_cast<std::size_t>(at + rows * cols + guard + 16 / sizeof(T)), poison()) {
    T* base = reinterpret_cast<T*>(buf_.data());
    std::uniform_int_distribution<int> dist(0, 250);
    for (Index e = 0; e < elems_; ++e) base[e] = static_cast<T>(dist(emu::rng()));
    in_ = base + c0;
    T* aligned = reinterpret_cast<T*>((reinterpret_cast<std::uintptr_t>(out_buf_.data()) + 15) & ~std::uintptr_t(15));
    lead_out_ = aligned - out_buf_.data();
    out_ = aligned + at;
  }
  const T* in() const { return in_; }
  T* out() const { return out_; }
  /// Every output element equals its input element, and every guard is still poisoned.
  void check() const {
    Index bad = 0, guards = 0;
    const T p = poison();
    for (Index e = 0; e < static_cast<Index>(out_buf_.size()); ++e) {
      const Index o = e - lead_out_ - at_;  // element of the output
      const T got = out_buf_[static_cast<std::size_t>(e)];
      if (o < 0 || o >= rows_ * cols_) {
        guards += std::memcmp(&got, &p, sizeof(T)) != 0;
      } else {
        const Index c = o / rows_, r = o % rows_;  // out is cols x rows
        bad += got != in_[r * ld_ + c];
      }
    }
    CHECK(bad == 0);
    CHECK(guards == 0);
  }

 private:
  static T poison() { return static_cast<T>(std::is_same_v<T, std::uint8_t> ? 253 : -7); }
  Index rows_, cols_, ld_, at_, elems_;
  GuardedBytes buf_;
  emu::ExactReads exact_;
  std::vector<T> out_buf_;
  const T* in_ = nullptr;
  T* out_ = nullptr;
  Index lead_out_ = 0;
};

/// transpose_shift_kernel on a GuardedTranspose case.
template <class T, int W, int BY>
void check_shift(Index rows, Index cols, Index ld, Index c0, Index at, bool down) {
  CAPTURE(sizeof(T), W, BY, rows, cols, ld, c0, at, down);
  using Tile = d::ShiftTile<W, BY>;
  const GuardedTranspose<T> g(rows, cols, ld, c0, at, 24);
  const T* in = g.in();
  T* out = g.out();

  const Index tiles_r = (rows + Tile::kRows - 1) / Tile::kRows, tiles_c = (cols + Tile::kCols - 1) / Tile::kCols;
  emu::launch(dim3(static_cast<unsigned>(tiles_r * tiles_c)), dim3(32, BY),
              [&] { d::transpose_shift_kernel<T, W, BY>(in, ld, out, rows, cols, tiles_r, tiles_c, down); });
  g.check();
}

template <class T, int W, int BY>
void check_shapes(const std::vector<Index>& row_sides, const std::vector<Index>& col_sides) {
  constexpr int kB = W * static_cast<int>(sizeof(T));
  int n = 0;
  for (Index r : row_sides)
    for (Index c : col_sides) {
      // A dense matrix (ld == cols), and windows of odd stride at every offset into a word.
      check_shift<T, W, BY>(r, c, c, 0, n % (kB / sizeof(T)), n % 2 == 0);
      const Index lead = (n + 1) % (kB / static_cast<Index>(sizeof(T)));
      check_shift<T, W, BY>(r, c, c + 2 * lead + 3, lead, (n + 2) % (kB / sizeof(T)), n % 2 == 1);
      ++n;
    }
}
}  // namespace

TEST_CASE("emulated transpose_shift_kernel on bytes, 4-byte words, equals the transpose", "[transpose][emulation]") {
  // The tile: 128 rows x 124 columns.
  check_shapes<std::uint8_t, 4, 8>({1, 17, 127, 128, 129, 257}, {1, 3, 123, 124, 125, 249});
  check_shapes<std::uint8_t, 4, 16>({131}, {125, 253});
}

// transpose_vec_kernel (aligned 16-byte vectors both ways, misalignment handled in shared
// memory, tiles owning whole output vectors, kHalo input rows loaded above each tile): the same
// guarded inputs and poisoned outputs. Sides around the tile (VecTile<u8, 8, 128>: 128 rows +
// 16 halo, 128 columns; <u8, 2, 256>: 32 rows, 256 columns; <f32, 8, 64>: 32 rows, 16 columns;
// <f64, 16, 256>: 32 rows, 32 columns), 1, primes, every input offset into a vector (lead) and
// every output offset (at), odd strides.
namespace {
template <class T, int kNV, int kColBytes, int kThreads = 256>
void check_vec(Index rows, Index cols, Index ld, Index c0, Index at, d::TransposeVecLanes lanes = {0, 0},
               unsigned band = 0, unsigned pipe_blocks = 0) {
  using Tile = d::VecTile<T, kNV, kColBytes, kThreads>;
  // The launcher's lanes (transpose_vec_lanes) unless the caller names others.
  if (lanes.d == 0)
    lanes = d::transpose_vec_lanes<Tile>(rows * static_cast<Index>(sizeof(T)), ld * static_cast<Index>(sizeof(T)));
  CAPTURE(sizeof(T), kNV, kColBytes, kThreads, rows, cols, ld, c0, at, lanes.d, lanes.rot, band, pipe_blocks);
  const GuardedTranspose<T> g(rows, cols, ld, c0, at, 40);
  const T* in = g.in();
  T* out = g.out();

  const Index tiles_r = d::transpose_vec_tile_rows<Tile>(rows, out);
  const d::TransposeVecGrid grid = d::transpose_vec_grid<Tile>(tiles_r, cols, band);  // the launcher's, or bands of `band`
  constexpr bool kPipeFits = d::kTransposeVecPipeStages * d::transpose_vec_pipe_stage_bytes<Tile>() <= 227 * 1024;
  if (pipe_blocks > 0) {  // transpose_vec_pipe_kernel on that many persistent blocks
    REQUIRE(kPipeFits);
    if constexpr (kPipeFits)
      emu::launch(dim3(pipe_blocks), dim3(Tile::kThreads), [&] {
        if (lanes.rot != 0)
          d::transpose_vec_pipe_kernel<T, Tile, true>(in, ld, out, rows, cols, tiles_r, grid.tiles_c, grid.band, lanes);
        else d::transpose_vec_pipe_kernel<T, Tile>(in, ld, out, rows, cols, tiles_r, grid.tiles_c, grid.band, lanes);
      });
  } else {
    emu::launch(dim3(grid.band, grid.tiles_c, grid.bands()), dim3(Tile::kThreads), [&] {
      if (lanes.rot != 0) d::transpose_vec_kernel<T, Tile, true>(in, ld, out, rows, cols, tiles_r, lanes);
      else d::transpose_vec_kernel<T, Tile>(in, ld, out, rows, cols, tiles_r, lanes);
    });
  }
  g.check();
}

template <class T, int kNV, int kColBytes, int kThreads = 256>
void check_vec_shapes(const std::vector<Index>& row_sides, const std::vector<Index>& col_sides) {
  constexpr Index kV = 16 / sizeof(T);
  int n = 0;
  for (Index r : row_sides)
    for (Index c : col_sides) {
      check_vec<T, kNV, kColBytes, kThreads>(r, c, c, 0, n % kV);  // dense
      const Index lead = (n + 1) % kV;
      check_vec<T, kNV, kColBytes, kThreads>(r, c, c + 2 * lead + 3, lead, (n + 2) % kV);  // a window, odd stride
      ++n;
    }
}
}  // namespace

TEST_CASE("emulated transpose_vec_kernel on bytes equals the transpose", "[transpose][emulation]") {
  check_vec_shapes<std::uint8_t, 8, 128>({1, 2, 15, 16, 17, 111, 112, 127, 128, 129, 145, 257}, {1, 3, 127, 128, 129, 257});
  check_vec_shapes<std::uint8_t, 2, 256>({1, 16, 17, 31, 33, 97}, {5, 255, 256, 259});
  check_vec_shapes<std::uint8_t, 1, 256>({2, 3, 8, 15, 16, 17, 33}, {5, 255, 256, 259});
  check_vec_shapes<std::uint8_t, 16, 16>({2, 255, 256, 257, 273, 600}, {2, 5, 15, 16, 17});
  check_vec_shapes<std::uint8_t, 8, 80>({131}, {67, 79, 80, 81});
  check_vec_shapes<std::uint8_t, 16, 80>({255, 256, 257, 273}, {67, 81});
  // The launcher's tile past kVecNarrowCols columns until session 41 (256 rows + 16 halo, 128
  // columns); since, VecTile<16, 256, 512> (the 256- and 512-byte columns' case below).
  check_vec_shapes<std::uint8_t, 16, 128>({1, 129, 255, 256, 257, 273, 529}, {1, 127, 128, 129, 257});
}

TEST_CASE("emulated transpose_vec_kernel on floats and doubles equals the transpose", "[transpose][emulation]") {
  check_vec_shapes<float, 8, 64>({1, 3, 4, 5, 31, 32, 33, 35, 36, 37, 67}, {1, 7, 15, 16, 17, 33});
  check_vec_shapes<float, 8, 256>({29, 65}, {63, 64, 65});
  check_vec_shapes<float, 16, 144>({63, 64, 65, 69}, {35, 36, 37, 73});
  check_vec_shapes<float, 4, 256>({2, 3, 8, 15, 16, 17, 21}, {5, 63, 64, 65, 130});
  check_vec_shapes<double, 16, 256>({1, 2, 3, 31, 32, 33, 35, 65}, {1, 3, 31, 32, 33, 65});
}

TEST_CASE("emulated transpose_vec_kernel on 32-vector tiles of 512 threads equals the transpose", "[transpose][emulation]") {
  // One output row a warp, shared row groups on 8 bytes (VecTile::kSkew 24): u8 512 rows + 16
  // halo by 128 or 80 columns; f32 128 rows + 4 halo by 64 or 36 columns.
  check_vec_shapes<std::uint8_t, 32, 128, 512>({1, 17, 511, 512, 513, 529, 1100}, {1, 31, 127, 128, 129, 257});
  check_vec_shapes<std::uint8_t, 32, 80, 512>({513}, {67, 81});
  check_vec_shapes<float, 32, 256, 512>({1, 5, 127, 128, 129, 133, 300}, {1, 7, 63, 64, 65, 131});
  check_vec_shapes<float, 32, 144, 512>({129}, {35, 37, 73});
  for (Index at = 0; at < 4; ++at) check_vec<float, 32, 256, 512>(131, 67, 67 + at, at % 3, at);
}

TEST_CASE("emulated transpose_vec_kernel on 256- and 512-byte tile columns equals the transpose", "[transpose][emulation]") {
  // A row's run reads one vector past its 16 or 32: u8 256 rows (16 vectors, 512 threads) or 512
  // (32 vectors, 1024 threads) + 16 halo by 256 columns; f32 64 or 128 rows + 4 halo by 128.
  check_vec_shapes<std::uint8_t, 16, 256, 512>({1, 17, 255, 256, 257, 273, 600}, {1, 31, 255, 256, 257, 300});
  check_vec_shapes<std::uint8_t, 32, 256, 1024>({1, 511, 512, 513, 529}, {1, 255, 256, 257});
  check_vec_shapes<float, 16, 512, 512>({1, 5, 63, 64, 65, 69, 200}, {1, 7, 127, 128, 129, 131});
  check_vec_shapes<float, 32, 512, 1024>({1, 127, 128, 129, 133}, {1, 127, 128, 129});
  for (Index at = 0; at < 16; ++at) check_vec<std::uint8_t, 16, 256, 512>(259, 263, 266 + at % 5, at % 3, at);
  for (Index at = 0; at < 4; ++at) check_vec<float, 16, 512, 512>(67, 131, 131 + at, at % 3, at);
}

TEST_CASE("emulated transpose_vec_kernel at every output offset into a vector", "[transpose][emulation]") {
  for (Index at = 0; at < 16; ++at) {
    check_vec<std::uint8_t, 8, 128>(259, 35, 259 + (at % 3), at % 7, at);
    check_vec<std::uint8_t, 4, 128>(131, 19, 131, 0, at);
  }
  for (Index at = 0; at < 4; ++at) check_vec<float, 8, 128>(67, 33, 67 + at, at % 3, at);
}

TEST_CASE("emulated transpose_vec_kernel with every lane plan equals the transpose", "[transpose][emulation]") {
  // Every d (a power of two dividing kSets) and every turn of the loads (kRotate), not only
  // those transpose_vec_lanes picks: a plan that broke the transpose would show on any shape.
  // The shapes run three of the launcher's cases of s (odd, 4 mod 8, 0 mod 8); the fourth
  // (2 mod 4) is checked below by the plan it picks.
  for (int dd : {1, 2, 4, 8})
    for (int rot : {0, 4, 8, 12}) {
      check_vec<std::uint8_t, 8, 128>(259, 150, 150, 0, 3, {dd, rot});      // s = 1 - 3 * 6 = odd
      check_vec<std::uint8_t, 8, 128>(145, 131, 133, 1, 0, {dd, rot});      // s = 1 - 1 * 5 = 12: 4 mod 8
      check_vec<std::uint8_t, 16, 80>(273, 81, 81, 0, 5, {dd, rot});  // s = 1 - 1 * 1 = 0
      check_vec<std::uint8_t, 16, 128>(259, 150, 150, 0, 3, {dd, rot});  // 2 groups of 16 vectors a warp
      check_vec<std::uint8_t, 16, 128>(273, 131, 133, 1, 0, {dd, rot});
    }
  // Floats and doubles keep consecutive rows by default; any plan still transposes them.
  for (int dd : {1, 2, 4, 8})
    for (int rot : {0, 1, 2, 3}) check_vec<float, 8, 128>(131, 67, 69, 2, 1, {dd, rot});
  for (int rot : {0, 1}) check_vec<double, 16, 256>(67, 35, 37, 1, 1, {2, rot});
  CHECK(d::transpose_vec_lanes<d::VecTile<float, 16, 256>>(16383 * 4, 16385 * 4).d == 1);
  // And the plans picked for each case of x, with the turned loads where they are picked.
  CHECK(d::transpose_vec_lanes<d::VecTile<std::uint8_t, 8, 128>>(259, 150).d == 4);   // s odd
  CHECK(d::transpose_vec_lanes<d::VecTile<std::uint8_t, 8, 128>>(16385, 16383).d == 2);  // s = 2
  CHECK(d::transpose_vec_lanes<d::VecTile<std::uint8_t, 8, 128>>(10007, 30011).d == 1);  // s = 4
  const d::TransposeVecLanes turned = d::transpose_vec_lanes<d::VecTile<std::uint8_t, 8, 128>>(4097, 65537);
  CHECK((turned.d == 1 && turned.rot == 4));  // s = 0
  check_vec<std::uint8_t, 8, 128>(4097 % 512 + 512, 65537 % 128 + 128, 65537 % 128 + 128, 0, 0);
}

TEST_CASE("emulated transpose_vec_kernel on many tiles equals the transpose", "[transpose][emulation]") {
  // Several tile rows (VecTile<u8, 8, 128>: 128 rows a tile, 600 rows: 5 tile rows, the last
  // partial; f32 <16, 256>: 64 rows, 200: 4) and tile columns; dense and a window off its vector.
  check_vec<std::uint8_t, 8, 128>(600, 300, 300, 0, 0);
  check_vec<std::uint8_t, 8, 128>(601, 259, 263, 3, 5);
  check_vec<float, 16, 256>(200, 131, 133, 1, 1);
  // The same in bands of 1 to 3 tile rows (transpose_vec_grid's order on tall matrices), the
  // last band partial.
  check_vec<std::uint8_t, 16, 128>(1201, 259, 263, 3, 5);  // the launcher's u8 tile: 256 rows a tile, 5 tile rows
  for (unsigned band : {1u, 2u, 3u}) {
    check_vec<std::uint8_t, 8, 128>(601, 259, 263, 3, 5, {0, 0}, band);
    check_vec<std::uint8_t, 16, 128>(1201, 259, 263, 3, 5, {0, 0}, band);
    check_vec<float, 16, 256>(200, 131, 133, 1, 1, {0, 0}, band);
    // DefaultTranspose's VecTall: 32 vectors of 512 threads, u8 80 and f32 36 columns a tile.
    check_vec<std::uint8_t, 32, 80, 512>(2 * 512 * band + 37, 171, 173, 1, 3, {0, 0}, band);
    check_vec<float, 32, 144, 512>(2 * 128 * band + 5, 79, 81, 2, 1, {0, 0}, band);
  }
}

TEST_CASE("emulated transpose_vec_pipe_kernel equals the transpose", "[transpose][emulation][vecp]") {
  // The persistent, two-stage kernel on the tiles of its trials ("ours-vecp-*") and on the 8-byte
  // skew (u8 16 vectors) and 16-byte (u8 8 vectors, f32) row groups: grids of 1 block (every
  // tile in turn, both stages reused), 2, 3 and 7 (tiles shared unevenly, some blocks with one
  // tile or none), and as many blocks as tiles; bands of 1 to 3 tile rows with a short last band
  // (empty blocks skipped); windows off their vectors, every output offset, lane plans turned.
  for (unsigned blocks : {1u, 2u, 3u, 7u, 64u}) {
    check_vec<std::uint8_t, 16, 128>(601, 259, 263, 3, 5, {0, 0}, 0, blocks);
    check_vec<std::uint8_t, 8, 128>(601, 300, 300, 0, blocks % 16, {0, 0}, 0, blocks);
    check_vec<float, 16, 256>(200, 131, 133, 1, 1, {0, 0}, 0, blocks);
  }
  for (unsigned band : {1u, 2u, 3u})
    for (unsigned blocks : {1u, 3u, 5u}) {
      check_vec<std::uint8_t, 16, 128>(1201, 259, 263, 3, 5, {0, 0}, band, blocks);
      check_vec<float, 32, 256, 512>(2 * 128 * band + 5, 79, 81, 2, 1, {0, 0}, band, blocks);
      // VecTall's tiles, as the "-b16" trials run them (bands of N tile rows).
      check_vec<std::uint8_t, 32, 80, 512>(2 * 512 * band + 37, 171, 173, 1, 3, {0, 0}, band, blocks);
      check_vec<float, 32, 144, 512>(2 * 128 * band + 5, 79, 81, 2, 1, {0, 0}, band, blocks);
    }
  // The trials' tiles on tile edges (dense and odd-stride windows), each on 2 blocks.
  for (Index r : {1, 255, 256, 257, 273, 529})
    for (Index c : {1, 127, 128, 129, 257}) {
      check_vec<std::uint8_t, 16, 128>(r, c, c, 0, (r + c) % 16, {0, 0}, 0, 2);
      check_vec<std::uint8_t, 16, 128>(r, c, c + 7, 2, (r + c + 1) % 16, {0, 0}, 0, 2);
    }
  for (Index r : {1, 17, 255, 256, 257, 600})
    for (Index c : {1, 31, 255, 256, 257, 300}) check_vec<std::uint8_t, 16, 256, 512>(r, c, c + r % 3, r % 3, c % 16, {0, 0}, 0, 2);
  for (Index r : {1, 5, 127, 128, 129, 133, 300})
    for (Index c : {1, 7, 63, 64, 65, 131}) {
      check_vec<float, 32, 256, 512>(r, c, c, 0, (r + c) % 4, {0, 0}, 0, 2);
      check_vec<float, 16, 256>(r, c, c + 3, 1, (r + c + 1) % 4, {0, 0}, 0, 2);
    }
  for (int rot : {0, 4, 8, 12}) check_vec<std::uint8_t, 16, 128>(273, 131, 133, 1, 0, {2, rot}, 0, 3);
  for (Index at = 0; at < 16; ++at) check_vec<std::uint8_t, 8, 128>(259, 35, 259 + (at % 3), at % 7, at, {0, 0}, 0, 2);
}

TEST_CASE("transpose_vec_grid's order takes every tile once", "[transpose][emulation]") {
  // TransposeVecGrid::tile over every block (x, y, z), for grids with a short last band or none:
  // each tile once, and no more empty blocks than the bands where transpose_vec_grid made it.
  for (unsigned tr : {1u, 2u, 5u, 7u, 64u, 65u})
    for (unsigned tc : {1u, 2u, 3u, 33u})
      for (unsigned band : {1u, 2u, 3u, 4u, 8u, 64u, 65u}) {
        if (band > tr) continue;
        const d::TransposeVecGrid grid{tr, tc, band};
        std::vector<int> seen(static_cast<std::size_t>(tr) * tc, 0);
        bool inside = true;
        for (unsigned z = 0; z < grid.bands(); ++z)
          for (unsigned y = 0; y < tc; ++y)
            for (unsigned x = 0; x < band; ++x) {
              const auto at = grid.tile(x, y, z);
              if (at.r >= tr) continue;  // an empty block of a short last band
              if (at.c >= tc) inside = false;
              else ++seen[static_cast<std::size_t>(at.r) * tc + at.c];
            }
        CAPTURE(tr, tc, band);
        CHECK(inside);
        CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<std::ptrdiff_t>(seen.size()));
      }
  // The launcher's: one band up to twice kTransposeVecBandBytes a tile column or with one tile
  // column, else the fewest even bands of at most `fit` tile rows (kTransposeVecBandBytes over a
  // tile's bytes read): u8 VecTile<8, 128>, 144 rows x 144 bytes a tile, 809 tile rows a band;
  // VecTile<16, 128> (DefaultTranspose<u8>::Vec until session 41), 272 x 144 bytes, 428.
  const auto check_bands = [](auto tile, unsigned fit) {
    using Tile = decltype(tile);
    CAPTURE(Tile::kNV, fit);
    CHECK(d::transpose_vec_grid<Tile>(2 * fit, 4100).band == 2 * fit);
    CHECK(d::transpose_vec_grid<Tile>(5 * fit, 100).band == 5 * fit);
    for (unsigned tr : {2 * fit + 1, 2 * fit + 430, 10 * fit + 1}) {
      const d::TransposeVecGrid g = d::transpose_vec_grid<Tile>(tr, 4100);
      CAPTURE(tr, g.band);
      CHECK(g.tiles_c == 33);
      CHECK(g.band <= fit);
      CHECK(g.bands() == (tr + fit - 1) / fit);
      CHECK(g.bands() * g.band - tr < g.bands());
    }
  };
  check_bands(d::VecTile<std::uint8_t, 8, 128, 256>{}, 809);
  check_bands(d::VecTile<std::uint8_t, 16, 128, 256>{}, 428);
  // Bands asked for (transpose_vec_tall's 16 tile rows): that many where fewer than the tile rows,
  // else the launcher's; never more than 65535 bands (grid z).
  using Narrow = d::VecTile<std::uint8_t, 16, 80, 256>;
  CHECK(d::transpose_vec_grid<Narrow>(1025, 4101, 16).band == 16);
  CHECK(d::transpose_vec_grid<Narrow>(1025, 4101, 16).bands() == 65);
  CHECK(d::transpose_vec_grid<Narrow>(12, 131, 16).band == 12);
  const d::TransposeVecGrid many = d::transpose_vec_grid<Narrow>(16 * 70000 + 1, 161, 16);
  CHECK(many.bands() <= 65535);
  CHECK(std::uint64_t(many.bands()) * many.band >= 16 * 70000 + 1);
}

// transpose_few_cols_span_kernel (few columns at most 16 elements apart, de-interleaved as one
// span of aligned 16-byte vectors at any alignment of in): windows of cols <= ld columns at
// column c0 of a matrix ld elements wide whose window's last byte is the last before an
// inaccessible page (a read past it faults), its first element at every offset into a vector
// (`pre` elements of the buffer before the matrix), rows around a warp's 512 bytes and a
// block's 4 warps, outputs at every offset into a vector inside a poisoned buffer whose guards
// must stay poisoned. Bytes, floats and doubles.
namespace {
template <class T, int kL = 2>
void launch_span_emu(const T* in, Index ld, T* out, Index rows, Index cols) {
  if constexpr (kL <= 16) {
    if (ld != kL) return launch_span_emu<T, kL + 1>(in, ld, out, rows, cols);
    const Index per_block = 512 / static_cast<Index>(sizeof(T)) * d::kFewBytesWarps;
    emu::launch(dim3(static_cast<unsigned>((rows + per_block - 1) / per_block)), dim3(32 * d::kFewBytesWarps),
                [&] { d::transpose_few_cols_span_kernel<T, kL>(in, out, rows, static_cast<int>(cols)); });
  } else {
    FAIL("launch_span_emu: ld past 16");
  }
}

/// `launch` (in, ld, out, rows, cols) on the rows x cols window at column c0 of a matrix of
/// stride ld whose last element is the last before an inaccessible page (with `exact`, the last
/// it may read, 16 to 19 elements before that page), `pre` elements past
/// the buffer's start, into a poisoned buffer at element offset `at` from a 16-byte boundary:
/// exact against the transpose, the guards untouched; with `exact`, no load past the window's
/// last element even inside its word (emu::ExactReads; the buffer's last bytes unread).
template <class T, class Launch>
void check_launch(Launch launch, Index rows, Index cols, Index ld, Index c0, Index pre, Index at, bool exact = false) {
  CAPTURE(sizeof(T), rows, cols, ld, c0, pre, at);
  const Index elems = (rows - 1) * ld + c0 + cols;  // from the matrix's start to the window's last element
  const std::size_t bytes = static_cast<std::size_t>(pre + elems) * sizeof(T);
  // exact: the matrix ends 16 to 19 elements' bytes before the guard page, at every offset into a word.
  GuardedBytes buf(bytes + (exact ? (16 + (static_cast<std::size_t>(at) % 4)) * sizeof(T) : 0));
  std::optional<emu::ExactReads> exact_reads;
  if (exact) exact_reads.emplace(buf, bytes);
  T* base = reinterpret_cast<T*>(buf.data()) + pre;
  std::uniform_int_distribution<int> dist(0, 250);
  for (Index e = 0; e < elems; ++e) base[e] = static_cast<T>(dist(emu::rng()));
  const T* in = base + c0;

  constexpr Index kGuard = 40;
  const T poison = static_cast<T>(std::is_same_v<T, std::uint8_t> ? 253 : -7);
  std::vector<T> out_buf(static_cast<std::size_t>(at + rows * cols + kGuard + 16), poison);
  T* aligned = reinterpret_cast<T*>((reinterpret_cast<std::uintptr_t>(out_buf.data()) + 15) & ~std::uintptr_t(15));
  const Index lead_out = aligned - out_buf.data();
  launch(in, ld, aligned + at, rows, cols);

  Index bad = 0, guards = 0;
  for (Index e = 0; e < static_cast<Index>(out_buf.size()); ++e) {
    const Index o = e - lead_out - at;
    const T got = out_buf[static_cast<std::size_t>(e)];
    if (o < 0 || o >= rows * cols) guards += std::memcmp(&got, &poison, sizeof(T)) != 0;
    else bad += got != in[(o % rows) * ld + o / rows];
  }
  CHECK(bad == 0);
  CHECK(guards == 0);
}

template <class T>
void check_span(Index rows, Index cols, Index ld, Index c0, Index pre, Index at) {
  check_launch<T>(&launch_span_emu<T>, rows, cols, ld, c0, pre, at, true);
}

template <class T>
void check_span_shapes(const std::vector<Index>& row_sides) {
  constexpr Index kV = 16 / sizeof(T);
  int n = 0;
  for (Index ld : {2, 3, 5, 6, 7, 8, 13, 14, 16})  // odd and even strides (stage_slot's two layouts)
    for (Index cols : {Index(1), ld / 2 + 1, ld - 1, ld}) {
      if (cols < 1 || (cols == ld - 1 && ld / 2 + 1 == ld - 1)) continue;
      for (Index rows : row_sides) {
        check_span<T>(rows, cols, ld, ld - cols, n % kV, (n * 7) % kV);  // the window's right edge
        check_span<T>(rows, cols, ld, 0, (n + 5) % kV, (n + 3) % kV);    // its left edge
        ++n;
      }
    }
}
}  // namespace

TEST_CASE("emulated transpose_few_cols_span_kernel equals the transpose", "[transpose][emulation]") {
  // Warps of 512 / 128 / 64 rows, blocks of 4 warps.
  check_span_shapes<std::uint8_t>({1, 2, 15, 16, 17, 511, 512, 513, 2047, 2048, 2049, 4100});
  check_span_shapes<float>({1, 3, 4, 5, 127, 128, 129, 511, 512, 513, 1030});
  check_span_shapes<double>({1, 2, 3, 63, 64, 65, 255, 256, 257, 515});
}

TEST_CASE("emulated transpose_few_cols_span_kernel at every input and output offset into a vector",
          "[transpose][emulation]") {
  for (Index pre = 0; pre < 16; ++pre)
    for (Index at : {Index(0), Index(1), Index(15), pre}) {
      check_span<std::uint8_t>(1030, 5, 7, 1, pre, at);
      check_span<std::uint8_t>(2051, 16, 16, 0, pre, at);  // dense, 16 columns
      check_span<std::uint8_t>(600, 3, 3, 0, pre, at);     // dense, 3 columns
      check_span<float>(517, 3, 5, 1, pre % 4, at % 4);
      check_span<float>(300, 16, 16, 0, pre % 4, at % 4);
      check_span<double>(259, 7, 7, 0, pre % 2, at % 2);
    }
}

// transpose_few_rows_bytes_kernel (kN rows of bytes at any alignment of in and ld, out on 16
// bytes) and transpose_few_cols_bytes_kernel (kN dense columns, in on 16 bytes), which stage a
// warp's vectors in shared memory (stage_slot): every kN from 2 to 16, lines around a warp's
// 496 or 512 and a block's 4 warps, the input's last byte the last before an inaccessible page.
namespace {
template <int kN = 2>
void launch_bytes_emu(const std::uint8_t* in, Index ld, std::uint8_t* out, Index rows, Index cols) {
  if constexpr (kN <= 16) {
    if (rows != kN && cols != kN) return launch_bytes_emu<kN + 1>(in, ld, out, rows, cols);
    const dim3 block(32 * d::kFewBytesWarps);
    if (rows == kN) {
      REQUIRE(reinterpret_cast<std::uintptr_t>(out) % 16 == 0);
      emu::launch(dim3(static_cast<unsigned>((cols + 496 * d::kFewBytesWarps - 1) / (496 * d::kFewBytesWarps))), block,
                  [&] { d::transpose_few_rows_bytes_kernel<kN>(in, ld, out, cols); });
    } else {
      REQUIRE((ld == kN && reinterpret_cast<std::uintptr_t>(in) % 16 == 0));
      emu::launch(dim3(static_cast<unsigned>((rows + 512 * d::kFewBytesWarps - 1) / (512 * d::kFewBytesWarps))), block,
                  [&] { d::transpose_few_cols_bytes_kernel<kN>(in, out, rows); });
    }
  } else {
    FAIL("launch_bytes_emu: no side of 2 to 16");
  }
}
}  // namespace

TEST_CASE("emulated transpose_few_rows_bytes_kernel and transpose_few_cols_bytes_kernel equal the transpose",
          "[transpose][emulation][bytes]") {
  int n = 0;
  for (Index k = 2; k <= 16; ++k) {
    // Few rows: in at any offset (pre), strides dense and wider, out on 16 bytes.
    for (Index cols : {Index(17), Index(495), Index(497), Index(1984), Index(1985), Index(4000)})
      for (Index ld : {cols, cols + 3}) {
        check_launch<std::uint8_t>(&launch_bytes_emu<>, k, cols, ld, 0, n % 16, 0);
        ++n;
      }
    // Few dense columns: the matrix (and so its first row) on 16 bytes: rows * k a multiple of 16.
    const Index unit = 16 / std::gcd(k, Index(16));
    for (Index rows : {Index(512), Index(2048), Index(2064), Index(4096) + unit, Index(16) * 337})
      if (rows % unit == 0 && rows != k) check_launch<std::uint8_t>(&launch_bytes_emu<>, rows, k, k, 0, 0, n++ % 16);
  }
}

// transpose_few_rows_regs_kernel (2 to 16 rows of bytes in registers, at any alignment of in
// and ld, out on 16 bytes), with and without the pair trade: windows ending on the last byte
// before an inaccessible page, their first element at every offset into a vector (`pre`),
// strides dense and odd, columns around a thread's 16, a warp's 512 and a block's columns, into
// a poisoned output whose guards must stay poisoned.
namespace {
template <bool kLaneExt = false, int kN = 2>
void launch_rows_regs_emu(bool pairs, const std::uint8_t* in, Index ld, std::uint8_t* out, Index rows, Index cols) {
  if constexpr (kN <= 16) {
    if (rows != kN) return launch_rows_regs_emu<kLaneExt, kN + 1>(pairs, in, ld, out, rows, cols);
    constexpr Index kThreads = 32 * d::kFewRowsRegsWarps;
    const dim3 grid(static_cast<unsigned>((cols + 16 * kThreads - 1) / (16 * kThreads)));
    if (pairs && kN % 2 == 0)
      emu::launch(grid, dim3(kThreads),
                  [&] { d::transpose_few_rows_regs_kernel<kN, kN % 2 == 0, kLaneExt>(in, ld, out, cols); });
    else
      emu::launch(grid, dim3(kThreads), [&] { d::transpose_few_rows_regs_kernel<kN, false, kLaneExt>(in, ld, out, cols); });
  } else {
    FAIL("launch_rows_regs_emu: more than 16 rows");
  }
}

template <bool kStage = false, int kN = 2>
void launch_rows_half_emu(const std::uint8_t* in, Index ld, std::uint8_t* out, Index rows, Index cols) {
  if constexpr (kN <= 16) {
    if (rows != kN) return launch_rows_half_emu<kStage, kN + 1>(in, ld, out, rows, cols);
    constexpr Index kThreads = 32 * d::kFewRowsHalfWarps;
    const dim3 grid(static_cast<unsigned>((cols + 8 * kThreads - 1) / (8 * kThreads)));
    emu::launch(grid, dim3(kThreads), [&] { d::transpose_few_rows_half_kernel<kN, kStage>(in, ld, out, cols); });
  } else {
    FAIL("launch_rows_half_emu: more than 16 rows");
  }
}

/// The few-rows register kernel `launch` (in, ld, out, rows, cols) on the rows x cols window at
/// column c0 of a matrix of stride ld whose last byte is the last the kernel may read
/// (emu::ExactReads, a few bytes before an inaccessible page), `pre` bytes past a vector, into a
/// poisoned output on a vector.
template <class Launch>
void check_rows_kernel(Launch launch, Index rows, Index cols, Index ld, Index c0, Index pre) {
  CAPTURE(rows, cols, ld, c0, pre);
  const Index elems = (rows - 1) * ld + c0 + cols;
  // The matrix ends 16 to 19 bytes before the guard page, its loads held to its bytes.
  GuardedBytes buf(static_cast<std::size_t>(pre + elems + 16 + (rows + cols + c0) % 4));
  const emu::ExactReads exact(buf, static_cast<std::size_t>(pre + elems));
  std::uint8_t* base = buf.data() + pre;
  std::uniform_int_distribution<int> dist(0, 250);
  for (Index e = 0; e < elems; ++e) base[e] = static_cast<std::uint8_t>(dist(emu::rng()));
  const std::uint8_t* in = base + c0;

  constexpr Index kGuard = 40;
  constexpr std::uint8_t kPoison = 253;
  std::vector<std::uint8_t> out_buf(static_cast<std::size_t>(rows * cols + kGuard + 16), kPoison);
  std::uint8_t* out =
      reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(out_buf.data()) + 15) & ~std::uintptr_t(15));
  const Index lead_out = out - out_buf.data();
  launch(in, ld, out, rows, cols);

  Index bad = 0, guards = 0;
  for (Index e = 0; e < static_cast<Index>(out_buf.size()); ++e) {
    const Index o = e - lead_out;
    const std::uint8_t got = out_buf[static_cast<std::size_t>(e)];
    if (o < 0 || o >= rows * cols) guards += got != kPoison;
    else bad += got != in[(o % rows) * ld + o / rows];
  }
  CHECK(bad == 0);
  CHECK(guards == 0);
}

void check_rows_regs(bool pairs, Index rows, Index cols, Index ld, Index c0, Index pre) {
  CAPTURE(pairs);
  check_rows_kernel([&](const std::uint8_t* in, Index l, std::uint8_t* out, Index r,
                        Index c) { launch_rows_regs_emu(pairs, in, l, out, r, c); },
                    rows, cols, ld, c0, pre);
}

/// The kLaneExt variant ("ours-rows16e"): pairs where kN is even.
void check_rows_regs_lane_ext(Index rows, Index cols, Index ld, Index c0, Index pre) {
  check_rows_kernel([&](const std::uint8_t* in, Index l, std::uint8_t* out, Index r,
                        Index c) { launch_rows_regs_emu<true>(true, in, l, out, r, c); },
                    rows, cols, ld, c0, pre);
}

void check_rows_half(Index rows, Index cols, Index ld, Index c0, Index pre) {
  check_rows_kernel(&launch_rows_half_emu<false>, rows, cols, ld, c0, pre);
  check_rows_kernel(&launch_rows_half_emu<true>, rows, cols, ld, c0, pre);  // "ours-rows16hs"
}
}  // namespace

TEST_CASE("emulated transpose_few_rows_regs_kernel equals the transpose", "[transpose][emulation][rows16]") {
  int n = 0;
  for (bool pairs : {true, false})
    for (Index rows : {2, 3, 4, 5, 7, 8, 12, 15, 16})
      for (Index cols : {1, 15, 16, 17, 511, 512, 513, 1023, 1025, 1031, 2063}) {
        check_rows_regs(pairs, rows, cols, cols, 0, n % 16);                      // dense
        check_rows_regs(pairs, rows, cols, cols + 2 * (n % 7) + 3, n % 5, 0);  // a window, odd stride
        ++n;
      }
}

TEST_CASE("emulated transpose_few_rows_regs_kernel at every input offset into a vector",
          "[transpose][emulation][rows16]") {
  for (Index pre = 0; pre < 16; ++pre)
    for (bool pairs : {true, false}) {
      check_rows_regs(pairs, 16, 1100, 1100, 0, pre);  // dense, rows of whole vectors when pre is 0
      check_rows_regs(pairs, 5, 1033, 1033, 0, pre);
      check_rows_regs(pairs, 8, 700, 709, 3, pre);
    }
}

// The kLaneExt variant (lane i loads row i's 33rd vector for lane 31): every row count, columns
// around a lane's 16 and a warp's 512, odd counts, at every input offset into a vector.
TEST_CASE("emulated transpose_few_rows_regs_kernel with lane-loaded 33rd vectors equals the transpose",
          "[transpose][emulation][rows16e]") {
  int n = 0;
  for (Index rows = 2; rows <= 16; ++rows)
    for (Index cols : {1, 15, 17, 511, 513, 1031, 2063}) {
      check_rows_regs_lane_ext(rows, cols, cols, 0, n % 16);
      check_rows_regs_lane_ext(rows, cols, cols + 2 * (n % 7) + 3, n % 5, 0);
      ++n;
    }
  for (Index pre = 0; pre < 16; ++pre)
    for (Index rows = 9; rows <= 16; ++rows) {
      check_rows_regs_lane_ext(rows, 1100, 1100, 0, pre);
      check_rows_regs_lane_ext(rows, 1033, 1033 + 2 * rows + 1, 3, pre);
    }
}

// transpose_few_rows_half_kernel (8 columns a thread, lane pairs storing whole vectors, or with
// kStage the warp's run through shared memory; lane i loading the warp's 33rd word of row i for
// lane 31), both forms: every row count, odd ones (the odd lane's
// bytes half a vector into the pair's run) included, columns around a lane's 8, a pair's 16, a
// warp's 256 and a block's 1024 (odd counts: a partial last word, pair and vector), dense and
// through odd strides, the first element at every offset into a vector.
TEST_CASE("emulated transpose_few_rows_half_kernel equals the transpose", "[transpose][emulation][rows16h]") {
  int n = 0;
  for (Index rows = 2; rows <= 16; ++rows)
    for (Index cols : {1, 7, 8, 9, 15, 17, 255, 256, 257, 263, 1023, 1025, 1031, 2063}) {
      check_rows_half(rows, cols, cols, 0, n % 16);                      // dense
      check_rows_half(rows, cols, cols + 2 * (n % 7) + 3, n % 5, 0);  // a window, odd stride
      ++n;
    }
}

TEST_CASE("emulated transpose_few_rows_half_kernel at every input offset into a vector",
          "[transpose][emulation][rows16h]") {
  for (Index pre = 0; pre < 16; ++pre)
    for (Index rows = 9; rows <= 16; ++rows) {
      check_rows_half(rows, 1100, 1100, 0, pre);                   // dense: every row at pre + 1100 i
      check_rows_half(rows, 1033, 1033, 0, pre);                   // dense, odd: each row at its own offset
      check_rows_half(rows, 523, 523 + 2 * rows + 1, 3, pre);      // a window through an odd stride
      check_rows_half(rows, 8 * (pre + 1) + 1, 8 * (pre + 1) + 1, 0, pre);  // a few lanes, odd
    }
}

// transpose_rows_run_kernel and transpose_cols_run_kernel (one short side of 17 to a few hundred
// elements through shared memory in output order / as a span): the regions the launchers make
// (RowsRunShape / ColsRunShape: K = 4, 2 and 1 pieces, odd sides unpadded and even ones padded,
// 4-byte rows in groups of 2 or 4 where their count allows, regions of 8, 16 and 32 KiB), rows
// and columns around them, windows through odd strides ending a few elements before an
// inaccessible page at every offset into a word, read exactly (emu::ExactReads), inputs and
// outputs at every offset into a word. Bytes, floats and doubles.
namespace {
template <class T>
void launch_rows_run_emu(int tile_bytes, const T* in, Index ld, T* out, Index rows, Index cols) {
  const d::RowsRunShape shape(rows, cols, sizeof(T), tile_bytes);
  d::with_rows_run_kernel<T>(shape, [&](auto kernel) {
    emu::launch(dim3(shape.blocks), dim3(d::kTransposeRunThreads),
                [&] { kernel(in, ld, out, static_cast<int>(rows), cols, shape.cb, shape.units, shape.g); });
  });
}

template <class T>
void launch_cols_run_emu(int tile_bytes, const T* in, Index ld, T* out, Index rows, Index cols) {
  const d::ColsRunShape shape(rows, cols, ld, sizeof(T), tile_bytes);
  d::with_cols_run_kernel<T>(shape, [&](auto kernel) {
    emu::launch(dim3(shape.blocks), dim3(d::kTransposeRunThreads),
                [&] { kernel(in, ld, out, rows, static_cast<int>(cols), shape.ra, shape.g); });
  });
}

template <class T>
void check_rows_run(int tile_bytes, Index rows, Index cols, Index ld, Index c0, Index pre, Index at) {
  CAPTURE(tile_bytes, d::RowsRunShape(rows, cols, sizeof(T), tile_bytes).k);
  check_launch<T>([&](const T* in, Index l, T* out, Index r, Index c) { launch_rows_run_emu<T>(tile_bytes, in, l, out, r, c); },
                  rows, cols, ld, c0, pre, at, true);
}

template <class T>
void check_cols_run(int tile_bytes, Index rows, Index cols, Index ld, Index c0, Index pre, Index at) {
  CAPTURE(tile_bytes);
  check_launch<T>([&](const T* in, Index l, T* out, Index r, Index c) { launch_cols_run_emu<T>(tile_bytes, in, l, out, r, c); },
                  rows, cols, ld, c0, pre, at, true);
}

template <class T>
void check_run_shapes(const std::vector<Index>& shorts, const std::vector<Index>& longs) {
  constexpr Index kV = 16 / sizeof(T);
  int n = 0;
  for (Index few : shorts)
    for (Index len : longs)
      for (int tile : {8192, 16384, 32768}) {
        check_rows_run<T>(tile, few, len, len, 0, n % kV, (n * 3) % kV);                   // dense
        check_rows_run<T>(tile, few, len, len + 2 * (n % 5) + 3, n % 7 + 1, 0, n % kV);  // a window, odd stride
        check_cols_run<T>(tile, len, few, few, 0, (n + 1) % kV, (n * 5) % kV);            // dense
        check_cols_run<T>(tile, len, few, few + n % 9 + 1, n % 9 + 1 - n % 2, (n + 2) % kV, 0);  // a window
        ++n;
      }
}
}  // namespace

TEST_CASE("emulated transpose_rows_run_kernel and transpose_cols_run_kernel equal the transpose",
          "[transpose][emulation][run]") {
  check_run_shapes<std::uint8_t>({17, 18, 20, 24, 31, 32, 33, 40, 42, 63, 64, 100, 126, 127, 128},
                                 {1, 129, 1016, 1017, 2100});
  check_run_shapes<float>({17, 18, 20, 24, 31, 32, 36, 40, 64, 127}, {1, 33, 255, 257, 1030});
  check_run_shapes<double>({17, 24, 31, 32, 127}, {1, 129, 520});
}

TEST_CASE("emulated run kernels at every input and output offset into a word or vector", "[transpose][emulation][run]") {
  for (Index pre = 0; pre < 16; ++pre)
    for (Index at = 0; at < 4; ++at) {
      check_rows_run<std::uint8_t>(16384, 17, 1100, 1100, 0, pre, at);
      check_rows_run<std::uint8_t>(16384, 24, 1033, 1037, 3, pre, at);
      check_rows_run<std::uint8_t>(16384, 31, 1100, 1103, 1, pre, at);  // one piece a row, no pad: the row loop
      check_cols_run<std::uint8_t>(32768, 1100, 17, 17, 0, pre, at);
      check_cols_run<std::uint8_t>(32768, 1033, 24, 31, 5, pre, at);
      // The few-columns span is read as the 16-byte vectors under it: floats and doubles at
      // every offset into one too.
      if (pre < 4) check_cols_run<float>(32768, 1030, 17 + 7 * (pre % 2), 17 + 7 * (pre % 2) + at, at, pre, at);
      // Floats of rows in groups of 4 (36 rows) and 2 (22), and of one row (35), whose second
      // phase leaves as 16-byte vectors where the run starts on one.
      if (pre < 4) {
        check_rows_run<float>(16384, 36, 1030, 1030 + at, at, pre, at);
        check_rows_run<float>(16384, 22, 517, 519 + pre, 1, pre, at);
        check_rows_run<float>(16384, 35, 1030, 1030, 0, pre, at);
      }
      if (pre < 2) check_cols_run<double>(32768, 520, 17, 17 + at, at, pre, at % 2);
    }
}

// transpose_few_rows_stage_kernel (2 to 16 rows of 4- or 8-byte elements in registers, each
// warp's stores staged through shared memory): every row count, columns around a warp's 32
// vectors and a block's 4 warps (the last warp's columns element by element), dense and through
// a wider stride, against the plain transpose; the output poisoned with guards on both sides.
namespace {
template <class T, int kN = 2>
void launch_rows_stage_emu(const T* in, Index ld, T* out, Index rows, Index cols) {
  if constexpr (kN <= 16) {
    if (rows != kN) return launch_rows_stage_emu<T, kN + 1>(in, ld, out, rows, cols);
    constexpr Index kV = 16 / sizeof(T);
    const dim3 grid(static_cast<unsigned>(((cols + kV - 1) / kV + d::kFewRowsStageThreads - 1) / d::kFewRowsStageThreads));
    emu::launch(grid, dim3(d::kFewRowsStageThreads), [&] { d::transpose_few_rows_stage_kernel<T, kN>(in, ld, out, cols); });
  } else {
    FAIL("launch_rows_stage_emu: more than 16 rows");
  }
}

template <class T>
void check_rows_stage(Index rows, Index cols, Index ld) {
  CAPTURE(sizeof(T), rows, cols, ld);
  constexpr Index kV = 16 / sizeof(T), kGuard = 3 * kV;
  // Input and output on 16 bytes (the kernel's requirement), the output kGuard elements into a
  // poisoned buffer.
  std::vector<uint4> in_buf(static_cast<std::size_t>((rows * ld + kV - 1) / kV));
  std::vector<uint4> out_buf(static_cast<std::size_t>((rows * cols + 2 * kGuard + kV - 1) / kV));
  T* in = reinterpret_cast<T*>(in_buf.data());
  T* out_all = reinterpret_cast<T*>(out_buf.data());
  const Index out_len = static_cast<Index>(out_buf.size()) * kV;
  std::uniform_int_distribution<int> dist(-1000, 1000);
  for (Index e = 0; e < rows * ld; ++e) in[e] = static_cast<T>(dist(emu::rng()));
  const T poison = static_cast<T>(-7777);
  for (Index e = 0; e < out_len; ++e) out_all[e] = poison;
  launch_rows_stage_emu<T>(in, ld, out_all + kGuard, rows, cols);
  Index bad = 0, guards = 0;
  for (Index e = 0; e < out_len; ++e) {
    const Index o = e - kGuard;
    if (o < 0 || o >= rows * cols) guards += out_all[e] != poison;
    else bad += out_all[e] != in[(o % rows) * ld + o / rows];
  }
  CHECK(bad == 0);
  CHECK(guards == 0);
}

template <class T>
void check_rows_stage_shapes() {
  constexpr Index kV = 16 / sizeof(T), kWarpCols = 32 * kV, kBlockCols = kWarpCols * d::kFewRowsStageThreads / 32;
  int n = 0;
  for (Index rows = 2; rows <= 16; ++rows)
    for (Index cols : {Index(1), kV - 1, kV, kWarpCols - 1, kWarpCols, kWarpCols + kV + 1, kBlockCols,
                       kBlockCols + kWarpCols - 1, 2 * kBlockCols + 3 * kV}) {
      check_rows_stage<T>(rows, cols, (cols + kV - 1) / kV * kV);  // dense where cols is whole vectors
      check_rows_stage<T>(rows, cols, (cols + kV - 1) / kV * kV + kV * (1 + n % 3));  // a wider stride
      ++n;
    }
}
}  // namespace

TEST_CASE("emulated transpose_few_rows_stage_kernel equals the transpose", "[transpose][emulation][rows16s]") {
  check_rows_stage_shapes<float>();
  check_rows_stage_shapes<double>();
}

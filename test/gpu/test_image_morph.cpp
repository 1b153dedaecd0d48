// erode, dilate, morphology_open and morphology_close (u8 and f32, rectangular elements of any
// size) against OpenCV's erode/dilate/morphologyEx (where the tests were built with it) and a
// plain C++ reference of OpenCV's definition: anchor at the element's centre
// (rows / 2, cols / 2), pixels outside the image ignored (OpenCV's default morphology border).
// Exact equality. Shapes that break the tiles, elements from 1x1 to past the shared-memory path
// (257), even sides, elements larger than the image, regions of interest at odd offsets, more
// tile rows than a grid holds, 4097x4095; outputs poisoned, inputs checked intact; errors. The
// one-kernel tile (morph_tile_kernel) forced in each of its tile shapes for every side from 1 to
// 31 (square, 1 x k, k x 1, k x (32 - k)), on aligned rows and on an odd view into a view, its
// block minima a word and four words at a time; the
// fused float kernel forced at 7x7 and 9x9 (a candidate for erode/dilate's choice there); the
// streaming kernels (morph_stream_kernel up to 32 rows, morph_stream_doubling_kernel up to 16,
// u8 and float) forced for every side from 1 to 32 and widths to 129 (u8 to 513), segments of 1
// row to past the image, past grid.y's limit.
#include "support/image_small.hpp"
#include "support/opencv.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {
template <class T>
using H = HostMatrix<T>;

enum class Morph { erode, dilate, open, close };

const char* name(Morph m) {
  switch (m) {
    case Morph::erode: return "erode";
    case Morph::dilate: return "dilate";
    case Morph::open: return "open";
    default: return "close";
  }
}

/// Pixels of `got` outside its rows x cols block at (r0, c0) that are no longer the poison value
/// (compared by bits: NaN != NaN): the kernels under test wrote that block into a poisoned parent.
template <class T>
Index poison_changed_outside(const H<T>& got, Index r0, Index c0, Index rows, Index cols) {
  const T want = poison_value<T>();
  Index changed = 0;
  for (Index y = 0; y < got.rows(); ++y)
    for (Index x = 0; x < got.cols(); ++x) {
      const bool inside = y >= r0 && y < r0 + rows && x >= c0 && x < c0 + cols;
      changed += !inside && std::memcmp(&got(y, x), &want, sizeof(T)) != 0;
    }
  return changed;
}

/// Elements (kh, kw) with a side of every length k in 1 .. max and the other side k, 1 or
/// max + 1 - k, both ways round.
std::set<std::pair<int, int>> element_sides(int max) {
  std::set<std::pair<int, int>> elements;
  for (int k = 1; k <= max; ++k)
    for (int other : {k, 1, max + 1 - k}) {
      elements.insert({k, other});
      elements.insert({other, k});
    }
  return elements;
}

// ------------------------------------------------------------------ reference
/// out(y, x) = min (erode) or max over img(y - kh/2 .. y - kh/2 + kh - 1, x - kw/2 .. + kw - 1)
/// restricted to the image, computed directly over the window (no separability, no blocks).
template <class T>
H<T> morph_ref(const H<T>& img, int kh, int kw, bool erode) {
  const Index r = img.rows(), c = img.cols();
  // Rows first (any order gives the same result: the window is a rectangle).
  H<T> rows_done(r, c), out(r, c);
  for (Index y = 0; y < r; ++y)
    for (Index x = 0; x < c; ++x) {
      const Index lo = std::max<Index>(0, x - kw / 2), hi = std::min<Index>(c, x - kw / 2 + kw);
      T v = img(y, lo);
      for (Index j = lo + 1; j < hi; ++j) v = erode ? std::min(v, img(y, j)) : std::max(v, img(y, j));
      rows_done(y, x) = v;
    }
  for (Index y = 0; y < r; ++y)
    for (Index x = 0; x < c; ++x) {
      const Index lo = std::max<Index>(0, y - kh / 2), hi = std::min<Index>(r, y - kh / 2 + kh);
      T v = rows_done(lo, x);
      for (Index i = lo + 1; i < hi; ++i) v = erode ? std::min(v, rows_done(i, x)) : std::max(v, rows_done(i, x));
      out(y, x) = v;
    }
  return out;
}

template <class T>
H<T> ref(Morph m, const H<T>& img, int kh, int kw) {
  switch (m) {
    case Morph::erode: return morph_ref(img, kh, kw, true);
    case Morph::dilate: return morph_ref(img, kh, kw, false);
    case Morph::open: return morph_ref(morph_ref(img, kh, kw, true), kh, kw, false);
    default: return morph_ref(morph_ref(img, kh, kw, false), kh, kw, true);
  }
}

template <class T>
DeviceMatrix<T> run(Morph m, const MatrixView<const T>& img, int kh, int kw) {
  switch (m) {
    case Morph::erode: return erode(img, kh, kw);
    case Morph::dilate: return dilate(img, kh, kw);
    case Morph::open: return morphology_open(img, kh, kw);
    default: return morphology_close(img, kh, kw);
  }
}

template <class T>
H<T> random_image(Index r, Index c) {
  if constexpr (std::is_same_v<T, float>) return random_matrix<float>(r, c, -100.0, 100.0);
  else return random_matrix<std::uint8_t>(r, c, 0, 255);
}

template <class T>
const char* type_name() {
  return std::is_same_v<T, float> ? "f32" : "u8";
}

template <class T>
void check(Morph m, const H<T>& h, int kh, int kw) {
  CAPTURE(name(m), type_name<T>(), shape(h.rows(), h.cols()), kh, kw);
  const auto img = to_device(h);
  poison_next<T>(h.rows(), h.cols(), img.stream());
  const DeviceMatrix<T> out = run<T>(m, img, kh, kw);
  REQUIRE(out.rows() == h.rows());
  REQUIRE(out.cols() == h.cols());
  CHECK(out.stream() == img.stream());
  const H<T> got = to_eigen(out);
  const H<T> want = ref(m, h, kh, kw);
  Index bad = 0;
  for (Index i = 0; i < got.size(); ++i) bad += !(got.data()[i] == want.data()[i]);
  CHECK(bad == 0);
  CHECK(to_eigen(img) == h);  // input intact
}

// Elements: 1x1 (a copy), one-pass ones, even sides, the sizes the benchmarks time, and one past
// the shared-memory path (257) in each direction.
const std::vector<std::pair<int, int>> kElements = {{1, 1}, {3, 3},  {1, 3},  {3, 1},   {5, 5},  {2, 2},
                                                    {4, 7}, {7, 4},  {15, 15}, {31, 31}, {1, 40}, {64, 2},
                                                    {3, 258}, {300, 5}};
}  // namespace

TEMPLATE_TEST_CASE("erode and dilate equal the direct reference on awkward shapes", "[image][morph]", std::uint8_t,
                   float) {
  for (auto [r, c] : awkward_shapes(4, 400)) {
    if (r * c > 40000) continue;  // the long ones below, with fewer elements
    const H<TestType> h = random_image<TestType>(r, c);
    for (auto [kh, kw] : kElements) {
      if (r * c * (kh + kw) > 2'000'000) continue;  // keeps the reference quick
      check(Morph::erode, h, kh, kw);
      check(Morph::dilate, h, kh, kw);
    }
  }
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{4099, 3}, {3, 4099}, {1, 4097}, {4097, 1}, {2, 10007}}) {
    const H<TestType> h = random_image<TestType>(r, c);
    for (auto [kh, kw] : std::vector<std::pair<int, int>>{{3, 3}, {31, 31}, {1, 300}, {300, 1}}) {
      check(Morph::erode, h, kh, kw);
      check(Morph::dilate, h, kh, kw);
    }
  }
}

TEMPLATE_TEST_CASE("the one-kernel tile (morph_tile_kernel), every tile shape, every side from 1 to 31, is exact",
                   "[image][morph][tile]", std::uint8_t, float) {
  using T = TestType;
  // A dense image whose rows are 16-byte aligned (the vector loads), and a view at an odd offset
  // with an odd stride (every load a pixel at a time) written into a view of a poisoned parent
  // (every store a pixel at a time; nothing around it may change). Both cross the tiles of every
  // shape (at most 64 x 256) in both directions, with a partial last tile.
  const H<T> dense_h = random_image<T>(130, 272);
  const H<T> parent_h = random_image<T>(137, 269);
  const auto dense = to_device(dense_h);
  const auto parent = to_device(parent_h);
  const Index r = 129, c = 257;
  const MatrixView<const T> roi = parent.block(3, 5, r, c);
  const H<T> roi_h = parent_h.block(3, 5, r, c);
  const cudaStream_t s = dense.stream().native();
  const std::set<std::pair<int, int>> elements = element_sides(31);
  const int shapes = 3;  // kernels/image_morph.cuh's kMorphTileShapes<T>
  const int tiles = under_sanitizer() ? 1 : shapes;
  for (auto [kh, kw] : elements)
    for (bool erode_ : {true, false}) {
      CAPTURE(type_name<T>(), kh, kw, erode_);
      for (int tile = 0; tile < tiles; ++tile) {
        CAPTURE(tile);
        auto out = DeviceMatrix<T>::constant(dense_h.rows(), dense_h.cols(), poison_value<T>(), dense.stream());
        small::morph_tile(erode_, s, dense.data(), dense.cols(), out.data(), out.cols(), dense_h.rows(),
                          dense_h.cols(), kh, kw, tile);
        CHECK(to_eigen(out) == morph_ref(dense_h, kh, kw, erode_));
      }
      {  // the block minima four words at a time (the "-b4" candidate), one tile shape an element
        const int tile = (kh * kw) % tiles;
        CAPTURE(tile);
        auto out = DeviceMatrix<T>::constant(dense_h.rows(), dense_h.cols(), poison_value<T>(), dense.stream());
        small::morph_tile(erode_, s, dense.data(), dense.cols(), out.data(), out.cols(), dense_h.rows(),
                          dense_h.cols(), kh, kw, tile, 4);
        CHECK(to_eigen(out) == morph_ref(dense_h, kh, kw, erode_));
      }
      const int tile = (kh + kw) % tiles;
      const int batch = (kh + kw + erode_) % 2 ? 4 : 1;
      CAPTURE(tile, batch);
      auto out_parent = DeviceMatrix<T>::constant(r + 4, c + 6, poison_value<T>(), dense.stream());
      small::morph_tile(erode_, s, roi.data(), roi.stride(), out_parent.data() + 2 * out_parent.cols() + 3,
                        out_parent.cols(), r, c, kh, kw, tile, batch);
      const H<T> got = to_eigen(out_parent);
      CHECK(H<T>(got.block(2, 3, r, c)) == morph_ref(roi_h, kh, kw, erode_));
      CHECK(poison_changed_outside(got, 2, 3, r, c) == 0);  // nothing written around the block
    }
  CHECK(to_eigen(dense) == dense_h);
  CHECK(to_eigen(parent) == parent_h);
  DeviceMatrix<T> out(dense_h.rows(), dense_h.cols(), dense.stream());
  CHECK_THROWS_AS(small::morph_tile(true, s, dense.data(), dense.cols(), out.data(), out.cols(), dense_h.rows(),
                                    dense_h.cols(), 3, 3, shapes),
                  std::invalid_argument);
  CHECK_THROWS_AS(small::morph_tile(true, s, dense.data(), dense.cols(), out.data(), out.cols(), dense_h.rows(),
                                    dense_h.cols(), 3, 3, 0, 2),
                  std::invalid_argument);
}

namespace {
/// morph_stream_kernel<T> (or, `doubling`, morph_stream_doubling_kernel<T>) against the
/// reference, as the test cases below say.
template <class T>
void check_stream_kernel(bool doubling) {
  constexpr bool kU8 = std::is_same_v<T, std::uint8_t>;
  // Strips of 256 (float) or 1024 (u8) pixels less the element's width: a dense image crossing
  // several strips (u8: whole words, the word loads and stores), and a view at an odd offset
  // written into a view of a poisoned parent (nothing around it may change; float: an odd
  // stride; u8: rows that start off 4 bytes and end on them, as the kernel requires, read as two
  // aligned words a row and stored a pixel at a time). Segments: the launcher's choice (0), 1
  // row, 7, 32 and 256 (past the image: one segment a strip).
  const H<T> dense_h = random_image<T>(131, kU8 ? 2300 : 1100);
  const H<T> parent_h = random_image<T>(137, kU8 ? 2312 : 1111);
  const auto dense = to_device(dense_h);
  const auto parent = to_device(parent_h);
  const Index r = 129, c = kU8 ? 2235 : 1037;  // u8: 3 * 2312 + 5 + 2235 is a multiple of 4
  const MatrixView<const T> roi = parent.block(3, 5, r, c);
  const H<T> roi_h = parent_h.block(3, 5, r, c);
  const cudaStream_t s = dense.stream().native();
  std::set<std::pair<int, int>> elements = element_sides(32);
  for (std::pair<int, int> wide : {std::pair<int, int>{1, 129}, {32, 129}, {3, 128}, {7, 64}, {31, 100}, {2, 127}})
    elements.insert(wide);
  if (kU8)
    for (std::pair<int, int> wide : {std::pair<int, int>{1, 513}, {32, 513}, {5, 400}, {31, 257}}) elements.insert(wide);
  const std::vector<int> segs = {0, 1, 7, 32, 256};
  const int every = under_sanitizer() ? 3 : 1;  // a third of the cases under compute-sanitizer (3 and 5 coprime)
  int n = 0;
  const int max_rows = doubling ? 16 : 32;  // the doubling kernel's register arrays hold 16 rows
  for (auto [kh, kw] : elements)
    for (bool erode_ : {true, false}) {
      if (kh > max_rows || ++n % every != 0) continue;
      const int seg = segs[static_cast<std::size_t>(n) % segs.size()];
      // Each of the launcher's instances (MorphStreamExact: 0 run-time sides, 1 exact rows, 2
      // exact square) on an odd square element, where the kernel has them; else the run-time one.
      const bool odd_square = kh == kw && kh % 2 == 1;
      for (int exact = 0; exact <= (odd_square ? 2 : 0); ++exact) {
        const bool prefetch = (n + exact) % 2 == 0;  // half the cases with the L2 prefetch (kPrefetch)
        CAPTURE(kh, kw, erode_, seg, exact, prefetch);
        auto out = DeviceMatrix<T>::constant(dense_h.rows(), dense_h.cols(), poison_value<T>(), dense.stream());
        small::morph_stream(erode_, s, dense.data(), dense.cols(), out.data(), out.cols(), dense_h.rows(),
                            dense_h.cols(), kh, kw, seg, doubling, exact, prefetch);
        CHECK(to_eigen(out) == morph_ref(dense_h, kh, kw, erode_));
        const int seg2 = segs[static_cast<std::size_t>(n + 2) % segs.size()];
        CAPTURE(seg2);
        auto out_parent = DeviceMatrix<T>::constant(r + 4, c + 6, poison_value<T>(), dense.stream());
        small::morph_stream(erode_, s, roi.data(), roi.stride(), out_parent.data() + 2 * out_parent.cols() + 3,
                            out_parent.cols(), r, c, kh, kw, seg2, doubling, exact, !prefetch);
        const H<T> got = to_eigen(out_parent);
        CHECK(H<T>(got.block(2, 3, r, c)) == morph_ref(roi_h, kh, kw, erode_));
        CHECK(poison_changed_outside(got, 2, 3, r, c) == 0);  // nothing written around the block
      }
    }
  CHECK(to_eigen(dense) == dense_h);
  CHECK(to_eigen(parent) == parent_h);
  // The benchmark's shape and a ragged one, the launcher's segments and a few forced.
  if (!under_sanitizer()) {
    // (u8 rows must end on 4 bytes: a ragged width that does.)
    for (auto [rr, cc] : std::vector<std::pair<Index, Index>>{{4096, 4096}, {4097, kU8 ? 4092 : 4095}}) {
      const H<T> big_h = random_image<T>(rr, cc);
      const auto big = to_device(big_h);
      for (int k : {7, 11, 15, 31})
        for (bool erode_ : {true, false}) {
          if (k > max_rows) continue;
          const H<T> want = morph_ref(big_h, k, k, erode_);
          for (int seg : {0, 32, 128}) {
            // Segments and instances in turn (exact rows, exact square, run-time): each one the
            // kernel has for k x k once (the doubling kernel has no square one; k 7 .. 15 on
            // morph_stream_kernel only the run-time one).
            const int exact = seg == 0 ? 1 : seg == 32 ? 2 : 0;
            const bool prefetch = seg != 128;  // the launcher's segments and 32 with the L2 prefetch
            CAPTURE(rr, cc, k, erode_, seg, exact, prefetch);
            auto out = DeviceMatrix<T>::constant(rr, cc, poison_value<T>(), big.stream());
            small::morph_stream(erode_, big.stream().native(), big.data(), cc, out.data(), cc, rr, cc, k, k, seg, doubling,
                                exact, prefetch);
            CHECK(to_eigen(out) == want);
          }
        }
    }
  }
  // Segments past grid.y's 65'535 blocks: 70'001 rows of one row a segment.
  {
    const Index w = kU8 ? 8 : 5;  // u8 rows must end on 4 bytes
    const H<T> tall_h = random_image<T>(70001, w);
    const auto tall = to_device(tall_h);
    auto out = DeviceMatrix<T>::constant(70001, w, poison_value<T>(), tall.stream());
    small::morph_stream(true, tall.stream().native(), tall.data(), w, out.data(), w, 70001, w, 3, 3, 1, doubling);
    CHECK(to_eigen(out) == morph_ref(tall_h, 3, 3, true));
  }
  // Elements it does not take, and a negative segment: invalid_argument before anything runs.
  DeviceMatrix<T> out(8, 8, dense.stream());
  for (auto [kh, kw, seg] : std::vector<std::array<int, 3>>{
           {max_rows + 1, 3, 0}, {3, kU8 ? 514 : 130, 0}, {0, 3, 0}, {3, 0, 0}, {3, 3, -1}})
    CHECK_THROWS_AS(small::morph_stream(true, s, dense.data(), dense.cols(), out.data(), 8, 8, 8, kh, kw, seg, doubling),
                    std::invalid_argument);
  if (kU8)  // rows that end off 4 bytes: the view's rows start at 1 mod 4 and hold 6 pixels
    CHECK_THROWS_AS(small::morph_stream(true, s, roi.data(), roi.stride(), out.data(), 8, 8, 6, 3, 3, 0, doubling),
                    std::invalid_argument);
}
}  // namespace

TEMPLATE_TEST_CASE("the streaming kernel (morph_stream_kernel), every side up to 32 x 129 (u8 513), is exact",
                   "[image][morph][stream]", std::uint8_t, float) {
  check_stream_kernel<TestType>(false);
}

TEMPLATE_TEST_CASE("the streaming kernel with the doubling row pass (morph_stream_doubling_kernel), every side up to "
                   "16 x 129 (u8 513), is exact",
                   "[image][morph][stream][doubling]", std::uint8_t, float) {
  check_stream_kernel<TestType>(true);
}


TEST_CASE("the fused float kernel (morph_f32_small_kernel) at 7x7 and 9x9 is exact", "[image][morph][small]") {
  // Not erode/dilate's choice at these sides yet (bench_image_small times it as "ours-r<R>"), so
  // forced: every rows-per-thread, on awkward shapes (0, 1, the 128 x 8R tile +- 1, primes), a
  // dense image with 16-byte aligned rows (the vector loads and stores) and an odd view written
  // into a view of a poisoned parent (pixel by pixel; nothing around it may change).
  std::vector<std::pair<Index, Index>> shapes = awkward_shapes(3, 300);
  for (std::pair<Index, Index> extra : {std::pair<Index, Index>{33, 129}, {127, 131}, {65, 4}, {1, 257}, {257, 1}})
    shapes.push_back(extra);
  const int seed_shapes = static_cast<int>(shapes.size());
  for (int i = 0; i < seed_shapes; ++i) {
    const auto [r, c] = shapes[static_cast<std::size_t>(i)];
    if (r * c == 0 || r * c > 200000) continue;
    const H<float> h = random_image<float>(r, c);
    const auto img = to_device(h);
    const cudaStream_t s = img.stream().native();
    for (int k : {7, 9})
      for (bool erode_ : {true, false})
        for (int rpt : {4, 8, 16}) {
          CAPTURE(shape(r, c), k, erode_, rpt);
          auto out = DeviceMatrix<float>::constant(r, c, poison_value<float>(), img.stream());
          small::morph(erode_, s, img.data(), img.cols(), out.data(), out.cols(), r, c, k, k, rpt);
          CHECK(to_eigen(out) == morph_ref(h, k, k, erode_));
        }
    CHECK(to_eigen(img) == h);
  }
  const H<float> parent_h = random_image<float>(140, 271);
  const auto parent = to_device(parent_h);
  const Index r = 131, c = 261;
  const MatrixView<const float> roi = parent.block(3, 5, r, c);
  const H<float> roi_h = parent_h.block(3, 5, r, c);
  for (int k : {7, 9})
    for (bool erode_ : {true, false}) {
      CAPTURE(k, erode_);
      auto out_parent = DeviceMatrix<float>::constant(r + 4, c + 6, poison_value<float>(), parent.stream());
      small::morph(erode_, parent.stream().native(), roi.data(), roi.stride(), out_parent.data() + 2 * out_parent.cols() + 3,
                   out_parent.cols(), r, c, k, k, 8);
      const H<float> got = to_eigen(out_parent);
      CHECK(H<float>(got.block(2, 3, r, c)) == morph_ref(roi_h, k, k, erode_));
      CHECK(poison_changed_outside(got, 2, 3, r, c) == 0);  // nothing written around the block
    }
  CHECK(to_eigen(parent) == parent_h);
  // No kernel for other sides: a logic_error before anything runs.
  DeviceMatrix<float> out(8, 8, parent.stream());
  for (auto [kh, kw] : std::vector<std::pair<int, int>>{{7, 5}, {9, 7}, {11, 11}, {7, 3}})
    CHECK_THROWS_AS(small::morph(true, parent.stream().native(), parent.data(), parent.cols(), out.data(), 8, 8, 8, kh, kw, 8),
                    std::logic_error);
}

TEMPLATE_TEST_CASE("morphology_open and morphology_close equal the composed reference", "[image][morph]",
                   std::uint8_t, float) {
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{1, 1}, {1, 9}, {9, 1}, {37, 53}, {129, 127}, {257, 131}}) {
    const H<TestType> h = random_image<TestType>(r, c);
    for (auto [kh, kw] : std::vector<std::pair<int, int>>{{1, 1}, {3, 3}, {5, 3}, {2, 6}, {31, 31}}) {
      check(Morph::open, h, kh, kw);
      check(Morph::close, h, kh, kw);
    }
  }
}

TEST_CASE("erode and dilate at 4097x4095, 3x3 to 31x31", "[image][morph]") {
  const H<std::uint8_t> h = random_image<std::uint8_t>(4097, 4095);
  for (int k : {3, 31}) {
    check(Morph::erode, h, k, k);
    check(Morph::dilate, h, k, k);
  }
  check(Morph::dilate, h, 15, 15);
  check(Morph::erode, h, 1, 31);
  check(Morph::dilate, h, 31, 1);
  const H<float> hf = random_image<float>(4097, 4095);
  check(Morph::erode, hf, 5, 5);
  check(Morph::erode, hf, 31, 31);
  check(Morph::dilate, hf, 7, 7);
}

TEST_CASE("erode and dilate with more tile rows than a grid holds", "[image][morph]") {
  // 2'100'001 rows: 65'626 row-pass tiles of 32 rows, past the 65'535 blocks of grid.y; the
  // column pass (128-row tiles) crosses the limit at 8.4M rows.
  check(Morph::erode, random_image<std::uint8_t>(2100001, 3), 3, 3);
  check(Morph::dilate, random_image<std::uint8_t>(8400001, 1), 5, 1);
}

TEMPLATE_TEST_CASE("morphology of a region of interest is that of its dense copy", "[image][morph][views]",
                   std::uint8_t, float) {
  // A view is an image of its own: its edges are the borders, whatever lies around it.
  const H<TestType> h = random_image<TestType>(301, 517);
  const auto img = to_device(h);
  for (const auto& w : std::vector<std::array<Index, 4>>{
           {0, 0, 301, 517}, {1, 3, 299, 510}, {100, 1, 67, 129}, {0, 516, 301, 1}, {300, 0, 1, 517}, {7, 9, 2, 3}}) {
    CAPTURE(w[0], w[1], w[2], w[3]);
    const MatrixView<const TestType> roi = img.block(w[0], w[1], w[2], w[3]);
    const H<TestType> dense = h.block(w[0], w[1], w[2], w[3]);
    for (auto [kh, kw] : std::vector<std::pair<int, int>>{{3, 3}, {5, 1}, {1, 5}, {9, 4}}) {
      CAPTURE(kh, kw);
      for (Morph m : {Morph::erode, Morph::dilate, Morph::open, Morph::close}) {
        CAPTURE(name(m));
        poison_next<TestType>(w[2], w[3], img.stream());
        CHECK(to_eigen(run<TestType>(m, roi, kh, kw)) == ref(m, dense, kh, kw));
      }
    }
  }
  CHECK(to_eigen(img) == h);  // the parent is intact
}

TEST_CASE("u8 morphology from 7x7: windows whose rows end on 4 bytes (the streaming kernels) and others",
          "[image][morph][views]") {
  // erode/dilate take the streaming kernels for u8 elements of 7 to 16 rows (the doubling one)
  // and past 16 x 16 only where every row ends on 4 bytes (morph_stream_default); the others keep
  // the tile. Both must be exact.
  const H<std::uint8_t> h = random_image<std::uint8_t>(300, 520);
  const auto img = to_device(h);
  for (const auto& w : std::vector<std::array<Index, 4>>{
           {0, 0, 300, 520}, {2, 4, 150, 512}, {5, 1, 203, 515}, {1, 0, 299, 519}, {9, 13, 37, 3}, {0, 3, 300, 1}}) {
    CAPTURE(w[0], w[1], w[2], w[3]);
    const MatrixView<const std::uint8_t> roi = img.block(w[0], w[1], w[2], w[3]);
    const H<std::uint8_t> dense = h.block(w[0], w[1], w[2], w[3]);
    // From 17 rows the streaming kernel; 7 to 16 rows its doubling twin (12 x 6: the tile).
    // Odd heights and squares take their exact instances (morph_stream_exact); 5 x 5 the
    // doubling kernel too where rows end on 4 bytes, else the fused pass.
    const std::vector<std::pair<int, int>> elements = {
        {17, 17}, {21, 21}, {31, 31}, {32, 40}, {17, 300}, {31, 16}, {25, 25}, {19, 23}, {29, 29}, {27, 17},
        {7, 7},   {9, 12},  {16, 16}, {13, 40}, {8, 301},  {12, 6},  {5, 5},   {11, 11}, {15, 9},  {13, 13}};
    for (auto [kh, kw] : elements) {
      CAPTURE(kh, kw);
      for (Morph m : {Morph::erode, Morph::dilate}) {
        CAPTURE(name(m));
        poison_next<std::uint8_t>(w[2], w[3], img.stream());
        CHECK(to_eigen(run<std::uint8_t>(m, roi, kh, kw)) == ref(m, dense, kh, kw));
      }
    }
  }
  CHECK(to_eigen(img) == h);  // the parent is intact
}

TEST_CASE("float morphology keeps infinities", "[image][morph]") {
  H<float> h = random_image<float>(40, 50);
  h(0, 0) = std::numeric_limits<float>::infinity();
  h(20, 25) = -std::numeric_limits<float>::infinity();
  h(39, 49) = std::numeric_limits<float>::max();
  for (auto [kh, kw] : std::vector<std::pair<int, int>>{{3, 3}, {7, 2}})
    for (Morph m : {Morph::erode, Morph::dilate, Morph::open, Morph::close}) check(m, h, kh, kw);
}

TEST_CASE("morphology: elements with a side below 1 are shape_errors, thrown before anything runs",
          "[image][morph]") {
  const H<std::uint8_t> h = random_image<std::uint8_t>(20, 30);
  const auto img = to_device(h);
  const auto imgf = to_device(random_image<float>(20, 30));
  for (auto [kh, kw] : std::vector<std::pair<int, int>>{{0, 3}, {3, 0}, {0, 0}, {-1, 3}, {3, -5}}) {
    CAPTURE(kh, kw);
    CHECK_THROWS_AS(erode(img, kh, kw), shape_error);
    CHECK_THROWS_AS(dilate(img, kh, kw), shape_error);
    CHECK_THROWS_AS(morphology_open(img, kh, kw), shape_error);
    CHECK_THROWS_AS(morphology_close(img, kh, kw), shape_error);
    CHECK_THROWS_AS(erode(imgf, kh, kw), shape_error);
    CHECK_THROWS_AS(dilate(imgf, kh, kw), shape_error);
    CHECK_THROWS_AS(morphology_open(imgf, kh, kw), shape_error);
    CHECK_THROWS_AS(morphology_close(imgf, kh, kw), shape_error);
    CHECK_THROWS_AS(erode(Image8(0, 4), kh, kw), shape_error);  // even with an empty image
    CHECK_THROWS_WITH(erode(img, kh, kw), contains("erode"));
    CHECK_THROWS_WITH(morphology_close(imgf, kh, kw), contains("morphology_close"));
  }
  CHECK(to_eigen(img) == h);
  // Empty images give empty results of the same shape.
  CHECK(erode(Image8(0, 7), 3, 3).cols() == 7);
  CHECK(dilate(DeviceMatrix<float>(5, 0), 3, 3).rows() == 5);
}

// ------------------------------------------------------------------ OpenCV, the oracle
DEVMAT_OPENCV_MISSING_CASE("[image][morph]")

#if DEVMAT_TEST_HAVE_OPENCV
namespace {
template <class T>
H<T> opencv_morph(Morph m, const H<T>& h, int kh, int kw) {
  const cv::Mat el = cv::getStructuringElement(cv::MORPH_RECT, cv::Size(kw, kh));
  const int op = m == Morph::erode ? cv::MORPH_ERODE
                 : m == Morph::dilate ? cv::MORPH_DILATE
                 : m == Morph::open   ? cv::MORPH_OPEN
                                      : cv::MORPH_CLOSE;
  cv::Mat out;
  cv::morphologyEx(to_cv(h), out, op, el);  // default anchor, border and iterations
  return from_cv<T>(out);
}
}  // namespace

TEMPLATE_TEST_CASE("erode, dilate, open and close equal OpenCV exactly", "[image][morph][opencv]", std::uint8_t,
                   float) {
  INFO("OpenCV " << cv::getVersionString());
  std::vector<std::pair<Index, Index>> shapes = {{1, 1}, {1, 97}, {97, 1}, {2, 3}, {31, 37}, {127, 129},
                                                 {257, 263}, {509, 521}};
  for (auto [r, c] : shapes) {
    const H<TestType> h = random_image<TestType>(r, c);
    const auto img = to_device(h);
    for (auto [kh, kw] : std::vector<std::pair<int, int>>{{1, 1}, {3, 3}, {5, 5}, {2, 2}, {4, 7}, {1, 9}, {9, 1},
                                                          {15, 15}, {31, 31}, {3, 300}}) {
      for (Morph m : {Morph::erode, Morph::dilate, Morph::open, Morph::close}) {
        CAPTURE(name(m), shape(r, c), kh, kw);
        poison_next<TestType>(r, c, img.stream());
        CHECK(to_eigen(run<TestType>(m, img, kh, kw)) == opencv_morph(m, h, kh, kw));
      }
    }
  }
  // 4097x4095 and a region of interest at odd offsets (OpenCV gets its dense copy).
  const H<TestType> big = random_image<TestType>(4097, 4095);
  const auto big_d = to_device(big);
  for (auto [kh, kw] : std::vector<std::pair<int, int>>{{3, 3}, {31, 31}}) {
    CAPTURE(kh, kw);
    CHECK(to_eigen(erode(big_d.view(), kh, kw)) == opencv_morph(Morph::erode, big, kh, kw));
    CHECK(to_eigen(dilate(big_d.block(3, 5, 1001, 2047), kh, kw)) ==
          opencv_morph(Morph::dilate, H<TestType>(big.block(3, 5, 1001, 2047)), kh, kw));
  }
}
#endif

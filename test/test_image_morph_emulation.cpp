// morph_tile_kernel (kernels/image_morph.cuh: both van Herk / Gil-Werman passes of an erosion
// or dilation on a tile in shared memory) run on the CPU through the CUDA emulation (expr_emu/:
// a block's threads are host threads, __syncthreads a barrier, a misaligned vector load aborts)
// against the clipped window's minimum and maximum: u8 and f32, each tile shape, elements from
// 1 x 1 to 31 x 31 with even and non-square sides, images smaller and larger than a tile, dense
// (the 16-byte loads and word stores) and at odd offsets (a pixel at a time), outputs inside a
// poisoned margin, grid.y cut to 1 so the loop over the tiles past the grid runs; the block
// minima a word and four words at a time (morph_tile_kernel's kBatch). A host test,
// so CI checks the index math that test_image_morph checks on the GPU. The fused float kernel
// (morph_f32_small_kernel) likewise at 7x7 and 9x9, the sides it may take over from the tile.
// The streaming kernel (morph_stream_kernel, u8 and float: column pass in registers, row pass in
// shared memory, a strip of 256 float or 1024 u8 pixels a block, its columns shared evenly among
// the strips) likewise: elements 1 x 1 to 32 x 129 (u8 also 3 x 513) with even sides, dense rows
// of whole words (u8: word loads and stores) and rows at odd offsets (u8: the aligned words either
// side shifted into place),
// images narrower and wider than a strip, segments of 1 row up to past the image, grid.y cut to
// 1 so the loop over the segments runs.
#include <math.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "support/catch.hpp"

#include "emu_cuda.hpp"
#include "emu_image.hpp"

#include "dispatch/morph_segment.hpp"
#include "kernels/image_morph.cuh"

using devmat::Index;
namespace d = devmat::detail;

namespace {

/// An image of values that are never a poison (u8 1..254; float -100..100).
template <class T>
struct Image : emu::Image<T> {
  Image(Index r, Index c, bool offset)
      : emu::Image<T>(r, c, offset, std::is_same_v<T, float> ? -100.0 : 1.0, std::is_same_v<T, float> ? 100.0 : 254.0) {}
};

using emu::Output;

/// morph_tile_kernel<T, kErode, tile `Shape`> on img into out, grid.y cut to 1.
template <class T, bool kErode, int Shape, int kBatch>
void run_tile(const Image<T>& img, Output<T>& out, int kr, int kc) {
  constexpr d::MorphTileShape t = d::morph_tile_shape<T>(Shape);
  const d::MorphTileLayout lay(kr, kc, t.rows, t.cols, d::kMorphPack4<T>);
  REQUIRE(lay.words * sizeof(d::MorphWord<T>) <= 227 * 1024);
  const auto tiles_y = static_cast<unsigned>((img.rows + t.rows - 1) / t.rows);
  const dim3 grid(static_cast<unsigned>((img.cols + t.cols - 1) / t.cols), 1);
  emu::launch(grid, dim3(d::kMorphTileThreads), [&] {
    d::morph_tile_kernel<T, kErode, t.rows, t.cols, kBatch>(img.data(), img.ld, out.data(), out.ld, img.rows, img.cols, kr, kc,
                                                    tiles_y);
  });
}

template <class T>
void check_tile(bool erode, int shape, const Image<T>& img, int kr, int kc, bool padded, bool batch4 = false) {
  CAPTURE(img.rows, img.cols, img.ld, kr, kc, erode, shape, padded, batch4);
  // Never an answer here (u8 pixels are 1 .. 254); the identity (255 for erosion, 0 for dilation)
  // leaking out would not be one either.
  const T poison = std::is_same_v<T, float> ? T(12345) : T(erode ? 0 : 255);
  Output<T> out(img.rows, img.cols, poison, padded);
  const auto run = [&](auto erode_c, auto shape_c) {
    if (batch4) run_tile<T, decltype(erode_c)::value, decltype(shape_c)::value, 4>(img, out, kr, kc);
    else run_tile<T, decltype(erode_c)::value, decltype(shape_c)::value, 1>(img, out, kr, kc);
  };
  const auto with_shape = [&](auto erode_c) {
    if (shape == 0) run(erode_c, std::integral_constant<int, 0>{});
    else if (shape == 1) run(erode_c, std::integral_constant<int, 1>{});
    else if constexpr (d::kMorphTileShapes<T> > 2) run(erode_c, std::integral_constant<int, 2>{});
  };
  if (erode) with_shape(std::true_type{});
  else with_shape(std::false_type{});
  Index bad = 0;
  for (Index y = 0; y < img.rows; ++y)
    for (Index x = 0; x < img.cols; ++x) {
      T v = img.at(std::max<Index>(0, y - kr / 2), std::max<Index>(0, x - kc / 2));
      for (Index i = std::max<Index>(0, y - kr / 2); i < std::min<Index>(img.rows, y - kr / 2 + kr); ++i)
        for (Index j = std::max<Index>(0, x - kc / 2); j < std::min<Index>(img.cols, x - kc / 2 + kc); ++j)
          v = erode ? std::min(v, img.at(i, j)) : std::max(v, img.at(i, j));
      bad += !(out.at(y, x) == v);
    }
  CHECK(bad == 0);
  CHECK(out.margin_changed() == 0);
}

/// The clipped window's min (erode) or max of img at every pixel, against out: the mismatches.
template <class T>
Index window_mismatches(bool erode, const Image<T>& img, const Output<T>& out, int kr, int kc) {
  Index bad = 0;
  for (Index y = 0; y < img.rows; ++y)
    for (Index x = 0; x < img.cols; ++x) {
      T v = img.at(std::max<Index>(0, y - kr / 2), std::max<Index>(0, x - kc / 2));
      for (Index i = std::max<Index>(0, y - kr / 2); i < std::min<Index>(img.rows, y - kr / 2 + kr); ++i)
        for (Index j = std::max<Index>(0, x - kc / 2); j < std::min<Index>(img.cols, x - kc / 2 + kc); ++j)
          v = erode ? std::min(v, img.at(i, j)) : std::max(v, img.at(i, j));
      bad += !(out.at(y, x) == v);
    }
  return bad;
}

/// morph_stream_kernel (or, `doubling`, morph_stream_doubling_kernel) on img into out, `seg`
/// output rows a block, the kernel's KMAX as the launcher picks it, grid.y cut to 1 (the loop over
/// the segments), its strip and shared memory as launch_morph_stream sizes them.
/// Runs of run_stream on a kernel instance for exactly kr rows (template KR), counted so that a
/// test can see that its elements reached them.
int exact_runs = 0;
/// And those on morph_stream_kernel's instance for exactly kr x kr (template KC).
int square_runs = 0;

/// `exact`: the instance for exactly this element where the launcher has one (with_morph_stream_rows).
template <class T, bool kErode>
void run_stream(const Image<T>& img, Output<T>& out, int kr, int kc, int seg, bool doubling, d::MorphStreamExact exact) {
  REQUIRE(d::morph_stream_reads_rows(img.data(), img.ld, img.cols));
  const d::MorphStrip strip = doubling ? d::morph_doubling_strip<T>(kc) : d::morph_stream_strip<T>(kr, kc);
  const int max_out_w = strip.out_w;
  REQUIRE(max_out_w > 0);
  REQUIRE(max_out_w % d::kMorphStreamPx<T> == 0);
  REQUIRE(strip.p0 + max_out_w + kc - 1 <= d::kMorphStreamStrip<T>);
  const std::size_t smem =
      doubling ? d::morph_doubling_smem_bytes<T>(d::morph_doubling_rows(kr)) : d::morph_stream_smem_bytes<T>(kr);
  REQUIRE(smem <= 227 * 1024);
  const auto out_w = static_cast<int>(d::morph_stream_out_w<T>(max_out_w, img.cols));
  REQUIRE(out_w <= max_out_w);
  REQUIRE(out_w % d::kMorphStreamPx<T> == 0);
  const auto segs = static_cast<unsigned>((img.rows + seg - 1) / seg);
  const dim3 grid(static_cast<unsigned>((img.cols + out_w - 1) / out_w), 1);
  const auto go = [&](auto kmax, auto krc, auto kcc) {
    constexpr int KMAX = decltype(kmax)::value, KR = decltype(krc)::value, KC = decltype(kcc)::value;
    if (KR != 0) ++exact_runs;
    if (KC != 0) ++square_runs;
    emu::launch(grid, dim3(d::kMorphStreamThreads), [&] {
      if constexpr (KMAX <= d::kMorphDoublingMaxRows && (KR == 0 || d::morph_stream_exact_rows(KR, true)) && KC == 0)
        if (doubling)
          return d::morph_stream_doubling_kernel<T, kErode, KMAX, KR>(img.data(), img.ld, out.data(), out.ld, img.rows,
                                                                      img.cols, kr, kc, out_w, seg, segs);
      if constexpr (KMAX % 8 == 0 && (KR == 0 || d::morph_stream_exact_rows(KR, false)))
        d::morph_stream_kernel<T, kErode, KMAX, KR, KC>(img.data(), img.ld, out.data(), out.ld, img.rows, img.cols, kr,
                                                        kc, out_w, seg, segs);
    });
  };
  d::with_morph_stream_rows(kr, kc, doubling, go, exact);
}

template <class T>
void check_stream(bool erode, const Image<T>& img, int kr, int kc, int seg, bool padded, bool doubling) {
  CAPTURE(img.rows, img.cols, img.ld, kr, kc, erode, seg, padded, doubling);
  if (!d::morph_stream_reads_rows(img.data(), img.ld, img.cols)) return;  // u8 rows ending off 4 bytes: not taken
  if (doubling && kr > d::kMorphDoublingMaxRows) return;                  // not taken
  // Every instance the launcher may pick for this element (with_morph_stream_rows).
  using X = d::MorphStreamExact;
  for (X exact : {X::none, X::rows, X::square}) {
    if (exact != X::none && !d::morph_stream_exact_rows(kr, doubling)) break;
    if (exact == X::square && (doubling || kc != kr)) break;
    CAPTURE(static_cast<int>(exact));
    Output<T> out(img.rows, img.cols, std::is_same_v<T, float> ? T(12345.0f) : T(0), padded);
    if (erode) run_stream<T, true>(img, out, kr, kc, seg, doubling, exact);
    else run_stream<T, false>(img, out, kr, kc, seg, doubling, exact);
    CHECK(window_mismatches(erode, img, out, kr, kc) == 0);
    CHECK(out.margin_changed() == 0);
  }
}

/// check_stream over the shapes, elements and segments below, on morph_stream_kernel or
/// (`doubling`) morph_stream_doubling_kernel.
template <class T>
void check_stream_shapes(bool doubling) {
  // Strips are 256 pixels (float) or 1024 (u8): widths 1, under a strip, past one and past two;
  // dense widths of whole words (u8: the word loads and stores) and not; heights under, at and
  // past the segments; kr up to 32 (the register arrays' three sizes 8, 16, 32) and kc up to the
  // widest element a strip takes (float 129, u8 513).
  // u8 takes only rows that end on 4 bytes: dense widths that are whole words, and views (ld =
  // cols + 7, first pixel ld + 3) of widths 1 mod 4, whose rows start off 4 bytes.
  const std::vector<std::pair<Index, Index>> shapes = {{1, 1},    {1, 301},  {40, 1},   {13, 17},  {37, 263},
                                                       {9, 1100}, {6, 2104}, {11, 64},  {37, 265}, {5, 1029}};
  std::vector<std::pair<int, int>> elements = {{1, 1},  {3, 3},  {2, 2},  {1, 31}, {31, 1}, {5, 7},  {31, 31},
                                               {16, 9}, {4, 30}, {7, 1},  {32, 32}, {9, 129}, {17, 2}, {8, 8},
                                               {11, 13}, {21, 21}, {13, 13}, {25, 3}, {19, 23}};
  if (std::is_same_v<T, std::uint8_t>) {
    elements.push_back({3, 513});
    elements.push_back({2, 258});
  }
  const std::vector<int> segs = {1, 5, 16, 31, 64};
  const int exact_before = exact_runs, square_before = square_runs;
  int n = 0;
  for (const auto& [r, c] : shapes)
    for (bool offset : {true, false}) {
      const Image<T> img(r, c, offset);
      for (const auto& [kr, kc] : elements) {
        ++n;
        check_stream<T>(n % 2 == 0, img, kr, kc, segs[static_cast<std::size_t>(n) % segs.size()], offset, doubling);
      }
    }
  // Both operations, every segment, on a view and a dense image several strips wide and tall.
  for (bool offset : {true, false}) {
    const Image<T> img(70, std::is_same_v<T, float> ? 530 : (offset ? 2081 : 2080), offset);
    for (bool erode : {true, false})
      for (int seg : segs) {
        check_stream<T>(erode, img, 15, 15, seg, offset, doubling);
        check_stream<T>(erode, img, 32, 31, seg, offset, doubling);
        check_stream<T>(erode, img, 31, 29, seg, offset, doubling);
      }
  }
  CHECK(exact_runs > exact_before);  // the elements above reached the instances for exact heights
  if (!doubling) CHECK(square_runs > square_before);  // and (morph_stream_kernel) for exact squares
}
}  // namespace

TEMPLATE_TEST_CASE("emulated streaming erode and dilate (morph_stream_kernel) equal the clipped window's min and max",
                   "[image][morph][emulation][stream]", std::uint8_t, float) {
  check_stream_shapes<TestType>(false);
}

TEMPLATE_TEST_CASE("emulated streaming erode and dilate with the doubling row pass (morph_stream_doubling_kernel) equal "
                   "the clipped window's min and max",
                   "[image][morph][emulation][stream][doubling]", std::uint8_t, float) {
  check_stream_shapes<TestType>(true);
}

/// morph_f32_small_kernel<K, K, kErode, R> on img into out, grid.y cut to 1; the result's
/// mismatches against the clipped window's min or max.
template <int K, bool kErode, int R>
Index small_f32_mismatches(const Image<float>& img, Output<float>& out) {
  const auto tiles_y = static_cast<unsigned>((img.rows + d::kNbrTileH<R> - 1) / d::kNbrTileH<R>);
  const dim3 grid(static_cast<unsigned>((img.cols + d::kNbrTileW - 1) / d::kNbrTileW), 1);
  emu::launch(grid, dim3(d::kNbrThreadsX, d::kNbrThreadsY), [&] {
    d::morph_f32_small_kernel<K, K, kErode, R>(img.data(), img.ld, out.data(), out.ld, img.rows, img.cols, tiles_y);
  });
  return window_mismatches(kErode, img, out, K, K);
}

TEST_CASE("emulated fused float erode and dilate (morph_f32_small_kernel) at 7x7 and 9x9 equal the clipped window's",
          "[image][morph][emulation]") {
  // The sides the kernel's 12-pixel row loads reach at most (9: 4 either side of its 4 pixels),
  // 3 as the kernel erode/dilate already take; images narrower and wider than the 128-pixel
  // tile, shorter and taller than its 8R rows, dense (the 16-byte loads and stores) and at odd
  // offsets (pixel by pixel) inside a poisoned margin.
  const std::vector<std::pair<Index, Index>> shapes = {{1, 1}, {1, 133}, {70, 1}, {13, 17}, {33, 129}, {67, 260}};
  int n = 0;
  for (const auto& [r, c] : shapes)
    for (bool offset : {true, false}) {
      const Image<float> img(r, c, offset);
      ++n;
      CAPTURE(r, c, offset, n);
      const auto check = [&](auto k_c, auto erode_c, auto r_c) {
        CAPTURE(decltype(k_c)::value, decltype(erode_c)::value, decltype(r_c)::value);
        Output<float> out(img.rows, img.cols, 12345.f, offset);
        CHECK(small_f32_mismatches<decltype(k_c)::value, decltype(erode_c)::value, decltype(r_c)::value>(img, out) == 0);
        CHECK(out.margin_changed() == 0);
      };
      using C3 = std::integral_constant<int, 3>;
      using C7 = std::integral_constant<int, 7>;
      using C9 = std::integral_constant<int, 9>;
      using R4 = std::integral_constant<int, 4>;
      using R8 = std::integral_constant<int, 8>;
      check(C7{}, std::true_type{}, R8{});
      check(C7{}, std::false_type{}, R4{});
      check(C9{}, std::true_type{}, R4{});
      check(C9{}, std::false_type{}, R8{});
      if (n % 3 == 0) check(C3{}, std::true_type{}, R4{});
    }
}

TEMPLATE_TEST_CASE("emulated one-kernel tile erode and dilate equal the clipped window's min and max",
                   "[image][morph][emulation]", std::uint8_t, float) {
  using T = TestType;
  const std::vector<std::pair<Index, Index>> shapes = {{1, 1}, {1, 131}, {131, 1}, {13, 17}, {65, 129}, {67, 272}};
  const std::vector<std::pair<int, int>> elements = {{1, 1}, {3, 3}, {2, 2},  {1, 31},  {31, 1},
                                                     {5, 7}, {31, 31}, {16, 9}, {4, 30}, {7, 1}};
  int n = 0;
  for (const auto& [r, c] : shapes)
    for (bool offset : {true, false}) {
      const Image<T> img(r, c, offset);
      for (const auto& [kr, kc] : elements) {
        ++n;
        check_tile<T>(n % 2 == 0, n % d::kMorphTileShapes<T>, img, kr, kc, offset, n % 4 < 2);  // half with batches of 4 loads
      }
    }
  // Every shape and both operations once on a view of several tiles each way.
  const Image<T> img(131, 263, true);
  for (int shape = 0; shape < d::kMorphTileShapes<T>; ++shape)
    for (bool erode : {true, false}) {
      check_tile<T>(erode, shape, img, 9, 31, true);
      check_tile<T>(erode, shape, img, 31, 9, true, true);
    }
}

TEST_CASE("morph_stream_segment: whole column blocks, one wave, and no more rows on the busiest SM than filling every slot",
          "[image][morph][emulation]") {
  // The rule it replaced (session 27): every resident slot filled, the segment rounded up to kr.
  const auto fill = [](Index rows, long long strips, long long resident, int kr) {
    const long long want = std::max<long long>(1, resident / std::max<long long>(1, strips));
    const long long seg = std::max<long long>({(rows + want - 1) / want, 16, kr});
    return std::min<long long>((seg + kr - 1) / kr * kr, (1LL << 30) / kr * kr);
  };
  const auto busiest = [](Index rows, long long strips, int sms, long long seg, int kr) {
    const long long blocks = strips * ((rows + seg - 1) / seg);
    return (blocks + sms - 1) / sms * (seg + kr);
  };
  std::mt19937 rng(std::random_device{}());
  int changed = 0;
  for (int i = 0; i < 20000; ++i) {
    const Index rows = i % 7 == 0 ? Index(1) + rng() % 64 : Index(1) + rng() % 100000;
    const long long strips = 1 + rng() % (i % 5 == 0 ? 2000 : 40);
    const int per_sm = 1 + static_cast<int>(rng() % 6), sms = 1 + static_cast<int>(rng() % 160),
              kr = 1 + static_cast<int>(rng() % 32);
    const long long seg = d::morph_stream_segment(rows, strips, per_sm, sms, kr);
    INFO("rows " << rows << " strips " << strips << " per_sm " << per_sm << " sms " << sms << " kr " << kr << " seg "
                 << seg);
    REQUIRE(seg % kr == 0);
    REQUIRE(seg >= std::max(16, kr));
    REQUIRE(seg <= (1LL << 30));
    const long long resident = static_cast<long long>(per_sm) * sms, blocks = strips * ((rows + seg - 1) / seg);
    if (strips <= resident) REQUIRE(blocks <= resident);  // one wave
    else REQUIRE(blocks == strips);                        // a segment a strip: the fewest waves
    const long long old = fill(rows, strips, resident, kr);
    REQUIRE(busiest(rows, strips, sms, seg, kr) <= busiest(rows, strips, sms, old, kr));
    changed += seg != old;
  }
  CHECK(changed > 0);  // the sweep reaches shapes where the two rules differ
  // Float 17x17 at 4096^2 on 132 SMs (18 strips of 228 outputs, 4 blocks an SM, session 28's
  // ptxas): 187 rows (3 blocks an SM, 612 rows on the busiest) where filling every slot took 153
  // (4 on most SMs, 680 rows).
  CHECK(d::morph_stream_segment(4096, 18, 4, 132, 17) == 187);
  CHECK(fill(4096, 18, 4 * 132, 17) == 153);
  // Huge images stay in an int, in whole column blocks.
  CHECK(d::morph_stream_segment(Index(1) << 40, 18, 4, 132, 31) % 31 == 0);
  CHECK(d::morph_stream_segment(Index(1) << 40, 1, 1, 1, 31) <= (1 << 30));
}

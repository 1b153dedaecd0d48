// The small-kernel image paths (kernels/image_neigh.cuh, image_morph.cuh, image_geometry.cuh,
// image_intensity.cuh, image_color.cuh, filter.cuh) run on the CPU through the CUDA
// emulation (expr_emu/: a block's threads are host threads; a misaligned vector load aborts)
// against plain C++ definitions of the operations: u8 box (BORDER_REFLECT_101, rounded half
// up), u8 erode/dilate (pixels outside ignored), u8 threshold (OpenCV's five types), u8
// rgb_to_gray (OpenCV's 14-bit fixed point), f32 filter2d 3x3/5x5/7x7 (BORDER_REPLICATE). A
// host test, so CI checks the index math, the borders, the shuffles and the vector/byte paths
// that test_image_small checks on the GPU. Small grids on purpose (grid.y 1 or 2, few stream blocks) so the kernels'
// loops over the tiles past the grid run too. Inputs at odd offsets with odd strides; outputs
// inside a poisoned margin, u8 poisoned with 0 and 255 in turn.
#include <math.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "support/catch.hpp"

#include "emu_cuda.hpp"
#include "emu_image.hpp"

#include "kernels/filter.cuh"
#include "kernels/image_color.cuh"
#include "kernels/image_geometry.cuh"
#include "kernels/image_intensity.cuh"
#include "kernels/image_morph.cuh"
#include "kernels/image_neigh.cuh"

using devmat::Index;
namespace d = devmat::detail;

namespace {
using U8 = std::uint8_t;

/// An image of any u8 value, or floats in [-1, 1].
template <class T>
struct Image : emu::Image<T> {
  Image(Index r, Index c, bool offset = true)
      : emu::Image<T>(r, c, offset, std::is_same_v<T, float> ? -1.0 : 0.0, std::is_same_v<T, float> ? 1.0 : 255.0) {}
};

using emu::Output;

Index reflect(Index i, Index n) { return d::reflect101(i, n); }

template <class Ref>
void check_u8(const Output<U8>& out, Ref&& want) {
  Index bad = 0;
  for (Index y = 0; y < out.rows; ++y)
    for (Index x = 0; x < out.cols; ++x) bad += out.at(y, x) != want(y, x);
  CHECK(bad == 0);
  CHECK(out.margin_changed() == 0);
}

/// A tile grid of (tile_w, tile_h) with grid.y cut to `grid_y` (the kernels loop over the rest).
dim3 cut_grid(Index rows, Index cols, int tile_w, int tile_h, unsigned grid_y, unsigned* tiles_y) {
  *tiles_y = static_cast<unsigned>((rows + tile_h - 1) / tile_h);
  return dim3(static_cast<unsigned>((cols + tile_w - 1) / tile_w), std::min(grid_y, *tiles_y));
}

/// f(std::integral_constant<int, R>) for R = 4, 8, 16 (rows a thread).
template <class F>
void for_each_rows_per_thread(F&& f) {
  f(std::integral_constant<int, 4>{});
  f(std::integral_constant<int, 8>{});
  f(std::integral_constant<int, 16>{});
}

const std::vector<std::pair<Index, Index>> kShapes = {{1, 1},  {1, 2},   {2, 1},   {1, 9},   {9, 1},   {2, 2},
                                                      {3, 3},  {4, 5},   {5, 4},   {6, 7},   {1, 131}, {131, 1},
                                                      {13, 17}, {63, 127}, {64, 128}, {65, 129}, {130, 7}, {7, 261},
                                                      {17, 513}, {33, 1031}};

/// Runs the fused box (kind 0: 4 pixels a thread, 1: banded, 3: sliding, 4: sliding with 8 pixels
/// a thread, 5: sliding with 16 pixels a thread (box_u8_vec16_kernel); `erode` unused) or
/// morphology (kind 2) kernel of sides kr x kc, R rows a thread, on img.
template <int R, int KR, int KC>
void run_nbr(int kind, bool erode, const Image<U8>& img, Output<U8>& out, unsigned grid_y) {
  const Index r = img.rows, c = img.cols;
  unsigned tiles_y = 0;
  const bool band = kind == 1 || kind == 5;  // the 16-pixel kernels' tile
  const dim3 grid = band ? cut_grid(r, c, d::kBandTileW, d::kBandTileH<R>, grid_y, &tiles_y)
                         : cut_grid(r, c, d::kNbrTileW * (kind == 4 ? 2 : 1), d::kNbrTileH<R>, grid_y, &tiles_y);
  const dim3 block = band ? dim3(d::kBandThreadsX, d::kBandThreadsY) : dim3(d::kNbrThreadsX, d::kNbrThreadsY);
  emu::launch(grid, block, [&] {
    const auto run = [&](auto kernel) { kernel(img.data(), img.ld, out.data(), out.ld, r, c, tiles_y); };
    if (kind == 0) run(d::box_u8_small_kernel<KR, KC, R>);
    else if (kind == 1) run(d::box_u8_band_kernel<KR, KC, R>);
    else if (kind == 3) run(d::box_u8_slide_kernel<KR, KC, R>);
    else if (kind == 4) run(d::box_u8_slide_kernel<KR, KC, R, 2>);
    else if (kind == 5) run(d::box_u8_vec16_kernel<KR, KC, R>);
    else erode ? run(d::morph_u8_small_kernel<KR, KC, true, R>) : run(d::morph_u8_small_kernel<KR, KC, false, R>);
  });
}

/// f(std::integral_constant<int, KR>, std::integral_constant<int, KC>) for sides 3 and 5.
template <class F>
void for_each_sides(F&& f) {
  f(std::integral_constant<int, 3>{}, std::integral_constant<int, 3>{});
  f(std::integral_constant<int, 3>{}, std::integral_constant<int, 5>{});
  f(std::integral_constant<int, 5>{}, std::integral_constant<int, 3>{});
  f(std::integral_constant<int, 5>{}, std::integral_constant<int, 5>{});
}
}  // namespace

TEST_CASE("emulated fused u8 box 3 and 5 (4 pixels a thread, banded, sliding by 4 and 8) equal the reflected box mean",
          "[image][small][emulation]") {
  for (const auto& [r, c] : kShapes)
    for (bool offset : {true, false}) {
      const Image<U8> img(r, c, offset);
      for_each_sides([&](auto kr_c, auto kc_c) {
        constexpr int KR = decltype(kr_c)::value, KC = decltype(kc_c)::value;
        for_each_rows_per_thread([&](auto rows_per_thread) {
          constexpr int R = decltype(rows_per_thread)::value;
          for (int kind : {0, 1, 3, 4})
            for (U8 poison : {U8(0), U8(255)}) {
              CAPTURE(img.rows, img.cols, offset, KR, KC, R, kind, int(poison));
              Output<U8> out(img.rows, img.cols, poison, offset);
              run_nbr<R, KR, KC>(kind, false, img, out, 2);
              check_u8(out, [&](Index y, Index x) {
                int s = 0;
                for (int i = -KR / 2; i <= KR / 2; ++i)
                  for (int j = -KC / 2; j <= KC / 2; ++j) s += img.at(reflect(y + i, img.rows), reflect(x + j, img.cols));
                return static_cast<U8>((2 * s + KR * KC) / (2 * KR * KC));
              });
            }
        });
      });
    }
}

TEST_CASE("emulated 16-pixel u8 box 3 and 5 (box_u8_vec16_kernel) equals the reflected box mean",
          "[image][small][emulation][vec16]") {
  // The shapes of the test above (views at odd offsets: the byte path), and dense images whose
  // rows are 16-byte aligned (uint4 loads, the lane-0 / lane-31 word loads, widths around a
  // warp's 512 pixels and a thread's 16).
  std::vector<std::tuple<Index, Index, bool>> cases;
  for (const auto& [r, c] : kShapes) cases.emplace_back(r, c, true);
  for (const auto& [r, c] : std::vector<std::pair<Index, Index>>{{1, 16}, {5, 16}, {4, 32}, {9, 48}, {7, 496}, {9, 512},
                                                                 {6, 528}, {3, 1024}, {11, 1040}, {40, 64}})
    cases.emplace_back(r, c, false);
  for (const auto& [r, c, offset] : cases) {
    const Image<U8> img(r, c, offset);
    for_each_sides([&](auto kr_c, auto kc_c) {
      constexpr int KR = decltype(kr_c)::value, KC = decltype(kc_c)::value;
      for_each_rows_per_thread([&](auto rows_per_thread) {
        constexpr int R = decltype(rows_per_thread)::value;
        for (U8 poison : {U8(0), U8(255)}) {
          CAPTURE(img.rows, img.cols, offset, KR, KC, R, int(poison));
          Output<U8> out(img.rows, img.cols, poison, offset);
          run_nbr<R, KR, KC>(5, false, img, out, 2);
          check_u8(out, [&](Index y, Index x) {
            int s = 0;
            for (int i = -KR / 2; i <= KR / 2; ++i)
              for (int j = -KC / 2; j <= KC / 2; ++j) s += img.at(reflect(y + i, img.rows), reflect(x + j, img.cols));
            return static_cast<U8>((2 * s + KR * KC) / (2 * KR * KC));
          });
        }
      });
    });
  }
}

TEST_CASE("u8 box mean by multiply-add (box_u8_slide_kernel) equals (2 s + A) / (2 A) for every sum",
          "[image][small][emulation]") {
  const auto check_area = [](auto area_c) {
    constexpr unsigned A = decltype(area_c)::value;
    Index bad = 0, overflow = 0;
    for (unsigned s = 0; s <= 255 * A; ++s) {
      const unsigned long long t = static_cast<unsigned long long>(s) * d::kBoxMul<A> + d::kBoxMulAdd;
      overflow += t >= (1ull << 32);
      bad += (t >> 24) != (2 * s + A) / (2 * A);
    }
    CAPTURE(A);
    CHECK(bad == 0);
    CHECK(overflow == 0);
    // The packed form: four lanes' sums (even pixels in `even`, odd in `odd`) to four bytes in order.
    bad = 0;
    for (unsigned s = 0; s + 3 <= 255 * A; s += 7) {
      const unsigned even = s | (s + 2) << 16, odd = (s + 1) | (s + 3) << 16;
      const unsigned w = d::box_mean_word_mul<A>(even, odd);
      for (unsigned b = 0; b < 4; ++b) bad += ((w >> (8 * b)) & 255u) != (2 * (s + b) + A) / (2 * A);
    }
    CHECK(bad == 0);
  };
  check_area(std::integral_constant<unsigned, 9>{});
  check_area(std::integral_constant<unsigned, 15>{});
  check_area(std::integral_constant<unsigned, 25>{});
}

TEST_CASE("emulated fused u8 erode and dilate 3 and 5 equal the clipped window's min and max",
          "[image][small][emulation]") {
  for (const auto& [r, c] : kShapes)
    for (bool offset : {true, false}) {
      const Image<U8> img(r, c, offset);
      for_each_sides([&](auto kr_c, auto kc_c) {
        constexpr int KR = decltype(kr_c)::value, KC = decltype(kc_c)::value;
        for (bool erode : {true, false})
          for_each_rows_per_thread([&](auto rows_per_thread) {
            constexpr int R = decltype(rows_per_thread)::value;
            for (U8 poison : {U8(0), U8(255)}) {
              CAPTURE(img.rows, img.cols, offset, KR, KC, erode, R, int(poison));
              Output<U8> out(img.rows, img.cols, poison, offset);
              run_nbr<R, KR, KC>(2, erode, img, out, 1);
              const Index rr = img.rows, cc = img.cols;
              check_u8(out, [&](Index y, Index x) {
                int v = erode ? 255 : 0;
                for (Index i = std::max<Index>(0, y - KR / 2); i < std::min<Index>(rr, y - KR / 2 + KR); ++i)
                  for (Index j = std::max<Index>(0, x - KC / 2); j < std::min<Index>(cc, x - KC / 2 + KC); ++j)
                    v = erode ? std::min<int>(v, img.at(i, j)) : std::max<int>(v, img.at(i, j));
                return static_cast<U8>(v);
              });
            }
          });
      });
    }
}

namespace {
/// Runs stream_u8_kernel with c chunks a thread (1, 2 or 4) on 3 blocks (grid-stride over the rest).
template <int N, class F>
void run_stream(const d::StreamArgs<N>& a, Output<U8>& out, F f, int c) {
  const auto run = [&](auto c_c) {
    constexpr int C = decltype(c_c)::value;
    emu::launch(dim3(3), dim3(d::kStreamThreads), [&] { d::stream_u8_kernel<N, C, F>(a, out.data(), out.ld, out.rows, out.cols, f); });
  };
  if (c == 1) run(std::integral_constant<int, 1>{});
  else if (c == 2) run(std::integral_constant<int, 2>{});
  else run(std::integral_constant<int, 4>{});
}
}  // namespace

TEST_CASE("emulated streaming u8 threshold equals OpenCV's definition for every type", "[image][small][emulation]") {
  // Dense input and output (uint4 loads and stores on every whole chunk, whatever the width) and
  // an offset input with a padded output (bytes).
  for (const auto& rc : std::vector<std::pair<Index, Index>>{{1, 1}, {3, 17}, {5, 64}, {4, 100}, {2, 300}}) {
    const Index r = rc.first, c = rc.second;
    const Image<U8> img(r, c);
    std::vector<U8> dense(static_cast<std::size_t>(r * c));
    for (Index y = 0; y < r; ++y)
      for (Index x = 0; x < c; ++x) dense[y * c + x] = img.at(y, x);
    for (int kind = 0; kind < 5; ++kind)
      for (int t : {-1, 0, 77, 128, 254, 255})
        for (int maxval : {255, 100, 0})
          for (bool aligned : {false, true}) {
            const int chunks = 1 << (kind % 3);  // 1, 2, 4 chunks a thread, in turn
            CAPTURE(r, c, kind, t, maxval, aligned, chunks);
            d::StreamArgs<1> a{};
            a.in[0] = aligned ? dense.data() : img.data();
            a.ld[0] = aligned ? c : img.ld;
            Output<U8> out(r, c, U8(kind * 50 + 3), !aligned);  // dense: the 16-byte stores
            run_stream(a, out, d::ThresholdWord{t, static_cast<unsigned>(maxval) * 0x01010101u, kind, nullptr, 0u}, chunks);
            check_u8(out, [&](Index y, Index x) {
              const int p = img.at(y, x);
              const bool above = p > t;
              switch (kind) {
                case 0: return static_cast<U8>(above ? maxval : 0);
                case 1: return static_cast<U8>(above ? 0 : maxval);
                case 2: return static_cast<U8>(above ? std::max(t, 0) : p);
                case 3: return static_cast<U8>(above ? p : 0);
                default: return static_cast<U8>(above ? 0 : p);
              }
            });
          }
  }
}

TEST_CASE("emulated streaming u8 rgb_to_gray equals OpenCV's fixed point", "[image][small][emulation]") {
  for (const auto& rc : std::vector<std::pair<Index, Index>>{{1, 1}, {3, 17}, {5, 64}, {4, 100}, {2, 300}, {37, 41}}) {
    const Index r = rc.first, c = rc.second;
    const Image<U8> pr(r, c), pg(r, c), pb(r, c);
    std::vector<U8> dr(static_cast<std::size_t>(r * c)), dg(dr.size()), db(dr.size());
    for (Index y = 0; y < r; ++y)
      for (Index x = 0; x < c; ++x) {
        dr[y * c + x] = pr.at(y, x);
        dg[y * c + x] = pg.at(y, x);
        db[y * c + x] = pb.at(y, x);
      }
    for (bool aligned : {false, true}) {
      for (int chunks : {1, 2, 4}) {
        CAPTURE(r, c, aligned, chunks);
        d::StreamArgs<3> a{};
        a.in[0] = aligned ? dr.data() : pr.data();
        a.in[1] = aligned ? dg.data() : pg.data();
        a.in[2] = aligned ? db.data() : pb.data();
        for (int k = 0; k < 3; ++k) a.ld[k] = aligned ? c : pr.ld;
        Output<U8> out(r, c, U8(7), !aligned);
        run_stream(a, out, d::GrayWord{}, chunks);
        check_u8(out, [&](Index y, Index x) {
          return static_cast<U8>((pr.at(y, x) * 4899 + pg.at(y, x) * 9617 + pb.at(y, x) * 1868 + (1 << 13)) >> 14);
        });
      }
    }
  }
}

TEST_CASE("emulated register-blocked f32 filter2d 3x3, 5x5, 7x7 (and direct 3x3, 5x5) equals the replicated correlation",
          "[image][small][emulation]") {
  // The float4 tile path needs whole tiles inside on 16-byte rows: a dense 200 x 272 image
  // (ld 272) has interior tiles; the offset images take the clamped path everywhere.
  std::vector<std::pair<Index, Index>> shapes = kShapes;
  shapes.push_back({200, 272});
  shapes.push_back({140, 400});
  const auto run_k = [&](auto k_c) {
    constexpr int K = decltype(k_c)::value;
    std::vector<float> w(K * K);
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    double scale = 0;
    for (float& v : w) scale += std::fabs(v = dist(emu::rng()));
    for (const auto& rc : shapes) {
      const Index r = rc.first, c = rc.second;
      const Image<float> img(r, c);
      for (bool dense : {false, true})
      for (int kind : {0, 1, 2}) {  // filter2d_small_kernel, filter2d_direct_kernel with R 4, 16
        CAPTURE(K, r, c, dense, kind);
        std::vector<float> dbuf(static_cast<std::size_t>(r * c));
        for (Index y = 0; y < r; ++y)
          for (Index x = 0; x < c; ++x) dbuf[y * c + x] = img.at(y, x);
        const float* in = dense ? dbuf.data() : img.data();
        const Index ld = dense ? c : img.ld;
        Output<float> out(r, c, NAN, !dense);
        unsigned tiles_y = 0;
        const dim3 grid = cut_grid(r, c, d::kF2sTileW, d::kF2sTileH, 2, &tiles_y);
        if (kind == 0) {
          emu::launch(grid, dim3(d::kFilterThreadsX, d::kFilterThreadsY),
                      [&] { d::filter2d_small_kernel<K>(in, ld, out.data(), out.ld, r, c, w.data(), tiles_y); });
        } else if constexpr (K <= 5) {  // the direct kernel, 4 or 16 rows a thread
          const auto direct = [&](auto r_c) {
            constexpr int R = decltype(r_c)::value;
            const dim3 g = cut_grid(r, c, d::kF2dDirectTileW, d::kF2dDirectTileH<R>, 2, &tiles_y);
            emu::launch(g, dim3(d::kFilterThreadsX, d::kFilterThreadsY),
                        [&] { d::filter2d_direct_kernel<K, R>(in, ld, out.data(), out.ld, r, c, w.data(), tiles_y); });
          };
          if (kind == 1) direct(std::integral_constant<int, 4>{});
          else direct(std::integral_constant<int, 16>{});
        } else {
          continue;
        }
        Index bad = 0;
        double worst = 0;
        for (Index y = 0; y < r; ++y)
          for (Index x = 0; x < c; ++x) {
            double s = 0;
            for (int i = 0; i < K; ++i)
              for (int j = 0; j < K; ++j)
                s += double(w[i * K + j]) *
                     img.at(std::clamp<Index>(y + i - K / 2, 0, r - 1), std::clamp<Index>(x + j - K / 2, 0, c - 1));
            const double diff = std::fabs(s - out.at(y, x));
            bad += !(diff <= 1e-5 * scale);
            worst = std::max(worst, std::isnan(diff) ? INFINITY : diff);
          }
        CAPTURE(worst);
        CHECK(bad == 0);
        CHECK(out.margin_changed() == 0);
      }
    }
  };
  run_k(std::integral_constant<int, 3>{});
  run_k(std::integral_constant<int, 5>{});
  run_k(std::integral_constant<int, 7>{});
}

namespace {
/// Runs stream_flat_kernel<T, N, U> (u = 1, 2, 4 or 8 uint4s a thread) on `blocks` blocks (they
/// stride over the rest) over n elements into out.
template <class T, int N, class F>
void run_flat(const d::StreamArgs<N>& a, T* out, Index n, F f, int u, unsigned blocks) {
  const auto run = [&](auto u_c) {
    constexpr int U = decltype(u_c)::value;
    emu::launch(dim3(blocks), dim3(d::kStreamThreads), [&] { d::stream_flat_kernel<T, N, U, F>(a, out, n, f); });
  };
  if (u == 1) run(std::integral_constant<int, 1>{});
  else if (u == 2) run(std::integral_constant<int, 2>{});
  else if (u == 4) run(std::integral_constant<int, 4>{});
  else run(std::integral_constant<int, 8>{});
}

/// out[0, n) == want(i), and the 16 elements after it still `poison`.
template <class T, class Want>
void check_flat(const std::vector<T>& out, Index n, T poison, Want&& want) {
  Index bad = 0, margin = 0;
  for (Index i = 0; i < n; ++i) bad += !(out[i] == want(i));
  for (Index i = n; i < n + 16; ++i) margin += !(out[i] == poison);
  CHECK(bad == 0);
  CHECK(margin == 0);
}
}  // namespace

TEST_CASE("emulated flat streaming threshold (u8, f32) and rgb_to_gray equal their definitions",
          "[image][small][emulation]") {
  // Lengths with every tail (n mod 16 and mod 4), below one uint4, and past what 2 blocks cover
  // in one step for every U (the blocks stride).
  for (Index n : {Index{1}, Index{3}, Index{15}, Index{16}, Index{17}, Index{100}, Index{4101}, Index{12707}, Index{70001}})
    for (int u : {1, 2, 4, 8}) {
      CAPTURE(n, u);
      const Image<U8> img(1, n, false);
      const Image<float> imf(1, n, false);
      for (int kind = 0; kind < 5; ++kind) {
        CAPTURE(kind);
        const int t = 77, maxval = 200;
        d::StreamArgs<1> a{};
        a.in[0] = img.data();
        a.ld[0] = n;
        std::vector<U8> out(static_cast<std::size_t>(n + 16), U8(kind * 50 + 3));
        run_flat(a, out.data(), n, d::ThresholdWord{t, static_cast<unsigned>(maxval) * 0x01010101u, kind, nullptr, 0u}, u, 2);
        check_flat(out, n, U8(kind * 50 + 3), [&](Index i) {
          const int p = img.at(0, i);
          const bool above = p > t;
          switch (kind) {
            case 0: return static_cast<U8>(above ? maxval : 0);
            case 1: return static_cast<U8>(above ? 0 : maxval);
            case 2: return static_cast<U8>(above ? t : p);
            case 3: return static_cast<U8>(above ? p : 0);
            default: return static_cast<U8>(above ? 0 : p);
          }
        });
        const float tf = 0.25f, mf = 2.5f;
        a.in[0] = reinterpret_cast<const U8*>(imf.data());
        std::vector<float> outf(static_cast<std::size_t>(n + 16), -7.f);
        run_flat(a, outf.data(), n, d::ThresholdF32Word{tf, mf, kind}, u, 2);
        check_flat(outf, n, -7.f, [&](Index i) {
          const float p = imf.at(0, i);
          const bool above = p > tf;
          switch (kind) {
            case 0: return above ? mf : 0.f;
            case 1: return above ? 0.f : mf;
            case 2: return above ? tf : p;
            case 3: return above ? p : 0.f;
            default: return above ? 0.f : p;
          }
        });
      }
      const Image<U8> pr(1, n, false), pg(1, n, false), pb(1, n, false);
      d::StreamArgs<3> a{};
      a.in[0] = pr.data();
      a.in[1] = pg.data();
      a.in[2] = pb.data();
      for (int k = 0; k < 3; ++k) a.ld[k] = n;
      std::vector<U8> out(static_cast<std::size_t>(n + 16), U8(9));
      run_flat(a, out.data(), n, d::GrayWord{}, u, 2);
      check_flat(out, n, U8(9), [&](Index i) {
        return static_cast<U8>((pr.at(0, i) * 4899 + pg.at(0, i) * 9617 + pb.at(0, i) * 1868 + (1 << 13)) >> 14);
      });
    }
}

// The small-kernel image paths against independent results: u8 box 3x3/3x5/5x3/5x5 and u8
// erode/dilate of the same sides (fused, every configuration the benchmark times: the 4-pixel
// kernels with 4, 8 and 16 output rows a thread, the 16-pixel banded box, the sliding box) against the general
// two-pass kernels they replaced for those sides (which test_image_neigh / _morph hold to
// OpenCV); f32 filter2d 3x3, 5x5, 7x7 (register-blocked) against the general filter2d kernel
// (1e-5 of the weights' scale: the sums run in another order); u8 threshold (every type,
// thresholds below, inside and above the u8 range, maxval 0 .. 255) and u8 rgb_to_gray through
// the public functions against their definitions on the host (OpenCV's types; its 14-bit fixed
// point). Identical results for u8. Shapes: 1x1, 1xN, Nx1, primes, tile-1/tile/tile+1 of the
// 128x64 and 512x32 tiles, 4097x4095, more tile rows than grid.y holds; inputs dense and as
// views at odd offsets with odd strides; outputs dense and inside a larger poisoned matrix (the
// margin must stay poisoned, every pixel of the output must be written: u8 runs twice, poisoned
// 0 and 255).
#include "support/image_small.hpp"
#include "support/util.hpp"

#include <devmat/devmat.hpp>
#include <devmat/eigen.hpp>
#include <devmat/image.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {
using U8 = std::uint8_t;
template <class T>
using H = HostMatrix<T>;

/// cand(in, ld, out, ld_out, rows, cols) writes the candidate's result into `out`.
template <class T>
using Candidate = std::function<void(const T*, Index, T*, Index, Index, Index, cudaStream_t)>;
/// The public function on a view.
template <class T>
using Reference = std::function<DeviceMatrix<T>(const MatrixView<const T>&)>;

template <class T>
std::vector<T> poisons() {
  if constexpr (std::is_same_v<T, float>) return {poison_value<float>()};
  else return {T(0), T(255)};
}

/// Runs `cand` on `in` into a dense output and into the (1, 2) block of a larger matrix, for
/// each poison, and checks both against `want` and the margin against the poison.
template <class T>
void check_outputs(const MatrixView<const T>& in, const H<T>& want, const Candidate<T>& cand, double tol) {
  const Index r = in.rows(), c = in.cols();
  for (const T poison : poisons<T>()) {
    for (const bool padded : {false, true}) {
      CAPTURE(padded, double(poison));
      const Index pr = padded ? r + 2 : r, pc = padded ? c + 5 : c;
      DeviceMatrix<T> big = DeviceMatrix<T>::constant(pr, pc, poison, in.stream());
      T* out = big.data() + (padded ? pc + 2 : 0);
      cand(in.data(), in.stride(), out, pc, r, c, in.stream().native());
      const H<T> got_all = to_eigen(big);
      Index bad = 0, margin = 0;
      double worst = 0;
      for (Index y = 0; y < pr; ++y)
        for (Index x = 0; x < pc; ++x) {
          const bool inside = padded ? (y >= 1 && y < r + 1 && x >= 2 && x < c + 2) : true;
          const T v = got_all(y, x);
          if (!inside) {
            margin += !(v == poison || (std::isnan(double(v)) && std::isnan(double(poison))));
            continue;
          }
          const T w = want(padded ? y - 1 : y, padded ? x - 2 : x);
          if constexpr (std::is_same_v<T, float>) {
            const double d = std::fabs(double(v) - double(w));
            if (!(d <= tol)) ++bad;
            worst = std::max(worst, std::isnan(d) ? INFINITY : d);
          } else {
            bad += v != w;
          }
        }
      CAPTURE(worst);
      CHECK(bad == 0);
      CHECK(margin == 0);
    }
  }
}

/// Random pixels: floats in [-1, 1], u8 over the whole range.
template <class T>
H<T> random_image(Index r, Index c) {
  return std::is_same_v<T, float> ? random_matrix<T>(r, c, -1.0, 1.0) : random_matrix<T>(r, c, 0, 255);
}

/// The candidate against the reference on an r x c image: dense, and as the (1, 3) block of an
/// (r + 3) x (c + 7) matrix (an odd offset and an odd stride).
template <class T>
void check_candidate(Index r, Index c, const Reference<T>& ref, const Candidate<T>& cand, double tol = 0,
                     bool views = true) {
  CAPTURE(shape(r, c));
  const H<T> h = random_image<T>(r, c);
  const auto img = to_device(h);
  if (r > 0 && c > 0) check_outputs<T>(img.view(), to_eigen(ref(img.view())), cand, tol);
  if (!views) return;
  const H<T> hb = random_image<T>(r + 3, c + 7);
  const auto big = to_device(hb);
  const MatrixView<const T> roi = big.block(1, 3, r, c);
  if (r > 0 && c > 0) check_outputs<T>(roi, to_eigen(ref(roi)), cand, tol);
  CHECK(to_eigen(big) == hb);  // input intact
}

/// 1x1, 1xN, Nx1, primes, the 128 x 64 and 512 x 32 tiles and their neighbours, tall and wide,
/// and random ones.
std::vector<std::pair<Index, Index>> shapes() {
  std::vector<std::pair<Index, Index>> s = {{1, 1},    {1, 2},    {2, 1},    {1, 7},    {7, 1},   {1, 131}, {131, 1},
                                            {2, 2},    {3, 3},    {4, 5},    {5, 4},    {6, 9},   {63, 127}, {64, 128},
                                            {65, 129}, {127, 4},  {128, 3},  {3, 257},  {97, 101}, {257, 263}, {8, 4096},
                                            {4096, 8}, {2, 4099}, {4099, 2}, {31, 511}, {32, 512}, {33, 513},
                                            {17, 1025}};
  for (auto rc : awkward_shapes(4, 500)) s.push_back(rc);
  return s;
}

/// shapes(), or under compute-sanitizer for a configuration the public functions do not run (not
/// `dispatched`) a few of them: the instrumented run checks every configuration's memory on
/// every path without repeating all shapes for each.
std::vector<std::pair<Index, Index>> shapes_for(bool dispatched) {
  if (dispatched || !under_sanitizer()) return shapes();
  return {{1, 1}, {3, 3}, {65, 129}, {97, 101}, {33, 513}, {4099, 2}};
}

/// More tile rows than grid.y's 65535 blocks for every tile height (64 rows for filter2d, 8 R
/// for the fused u8 kernels, 4 R for the banded box, R up to 16): the kernels loop over the rest.
constexpr Index kTallRows = 65535 * 128 + 65;

/// A reference computed by `gpu` (a launcher into a dense output) on the view.
template <class T>
Reference<T> by_launcher(const Candidate<T>& gpu) {
  return [gpu](const MatrixView<const T>& v) {
    DeviceMatrix<T> out(v.rows(), v.cols(), v.stream());
    gpu(v.data(), v.stride(), out.data(), v.cols(), v.rows(), v.cols(), v.stream().native());
    return out;
  };
}
}  // namespace

TEST_CASE("image small: fused u8 box 3 and 5 equals the two-pass box filter", "[image][small][box]") {
  for (int kr : {3, 5})
    for (int kc : {3, 5}) {
      const Reference<U8> two_pass = by_launcher<U8>([=](const U8* in, Index ld, U8* out, Index ldo, Index r, Index c,
                                                    cudaStream_t s) { small::box_u8_two_pass(s, in, ld, out, ldo, r, c, kr, kc); });
      // The public function, on the same views.
      for (auto [r, c] : std::vector<std::pair<Index, Index>>{{1, 1}, {5, 3}, {97, 101}, {130, 600}}) {
        CAPTURE(kr, kc, shape(r, c));
        const auto img = to_device(random_matrix<U8>(r + 3, c + 7, 0, 255));
        const MatrixView<const U8> roi = img.block(1, 3, r, c);
        CHECK(to_eigen(box_filter(roi, kr, kc)) == to_eigen(two_pass(roi)));
      }
      // Every configuration (r 0: the public function's).
      for (const bool band : {false, true})
        for (const int rpt : {0, 4, 8, 16}) {
          if (band && rpt == 0) continue;
          if (kr != kc && rpt != 0 && rpt != 8) continue;  // the non-square sides: the default and one more
          CAPTURE(kr, kc, band, rpt);
          const Candidate<U8> cand = [=](const U8* in, Index ld, U8* out, Index ldo, Index r, Index c, cudaStream_t s) {
            small::box_u8(s, in, ld, out, ldo, r, c, kr, kc, band, rpt);
          };
          for (auto [r, c] : shapes_for(rpt == 0)) check_candidate<U8>(r, c, two_pass, cand);
          if (kr == kc && (rpt == 0 || !under_sanitizer())) {  // the large ones once under compute-sanitizer
            check_candidate<U8>(4097, 4095, two_pass, cand);
            check_candidate<U8>(kTallRows, 3, two_pass, cand, 0, false);
          }
        }
    }
}

TEST_CASE("image small: sliding u8 box 3 and 5 (1 or 2 words a thread) equals the two-pass box filter",
          "[image][small][box][slide]") {
  for (int kr : {3, 5})
    for (int kc : {3, 5}) {
      const Reference<U8> two_pass = by_launcher<U8>([=](const U8* in, Index ld, U8* out, Index ldo, Index r, Index c,
                                                    cudaStream_t s) { small::box_u8_two_pass(s, in, ld, out, ldo, r, c, kr, kc); });
      for (const auto& config : {std::pair{1, 4}, std::pair{1, 8}, std::pair{1, 16}, std::pair{2, 4}, std::pair{2, 8}}) {
        const int words = config.first, rpt = config.second;  // words of 4 pixels, output rows a thread
        if (kr != kc && rpt != 8) continue;  // the non-square sides: one configuration a width
        CAPTURE(kr, kc, rpt, words);
        const Candidate<U8> cand = [=](const U8* in, Index ld, U8* out, Index ldo, Index r, Index c, cudaStream_t s) {
          small::box_u8_slide(s, in, ld, out, ldo, r, c, kr, kc, rpt, words);
        };
        for (auto [r, c] : shapes_for(false)) check_candidate<U8>(r, c, two_pass, cand);
        if (kr == kc && (rpt == 8 || !under_sanitizer())) {  // the large ones once a side under compute-sanitizer
          check_candidate<U8>(4097, 4095, two_pass, cand);
          check_candidate<U8>(kTallRows, 3, two_pass, cand, 0, false);
        }
      }
    }
}

TEST_CASE("image small: 16-pixel u8 box 3 and 5 equals the two-pass box filter", "[image][small][box][vec16]") {
  // Dense inputs take the uint4 loads where a row is 16-byte aligned (cols a multiple of 16:
  // 64 x 128, 32 x 512, 8 x 4096, 4096 x 4096 below), views and other widths the byte path; the
  // widths around 512 (a warp's 32 x 16 pixels) and 16 move the lane-0 / lane-31 loads and the
  // right edge through every case.
  for (int kr : {3, 5})
    for (int kc : {3, 5}) {
      const Reference<U8> two_pass = by_launcher<U8>([=](const U8* in, Index ld, U8* out, Index ldo, Index r, Index c,
                                                    cudaStream_t s) { small::box_u8_two_pass(s, in, ld, out, ldo, r, c, kr, kc); });
      for (const auto& [rpt, mb] : {std::pair{4, 1}, std::pair{8, 1}, std::pair{16, 1}, std::pair{8, 6}, std::pair{16, 6}}) {
        if (kr != kc && (rpt != 8 || mb != 1)) continue;  // the non-square sides: one configuration
        CAPTURE(kr, kc, rpt, mb);
        const Candidate<U8> cand = [=, rpt = rpt, mb = mb](const U8* in, Index ld, U8* out, Index ldo, Index r, Index c,
                                                           cudaStream_t s) {
          small::box_u8_vec16(s, in, ld, out, ldo, r, c, kr, kc, rpt, mb);
        };
        for (auto [r, c] : shapes_for(false)) check_candidate<U8>(r, c, two_pass, cand);
        for (auto [r, c] : std::vector<std::pair<Index, Index>>{{5, 16}, {7, 32}, {9, 496}, {9, 528}, {3, 1024}, {11, 1040}})
          check_candidate<U8>(r, c, two_pass, cand);
        if (kr == kc && ((rpt == 8 && mb == 1) || !under_sanitizer())) {
          check_candidate<U8>(4096, 4096, two_pass, cand);
          check_candidate<U8>(4097, 4095, two_pass, cand);
          check_candidate<U8>(kTallRows, 3, two_pass, cand, 0, false);
        }
      }
    }
}

TEMPLATE_TEST_CASE("image small: fused erode and dilate 3 and 5 equal the two-pass erode/dilate", "[image][small][morph]",
                   U8, float) {
  using T = TestType;
  for (int kr : {3, 5})
    for (int kc : {3, 5})
      for (bool erode_ : {true, false}) {
        const Reference<T> two_pass = by_launcher<T>([=](const T* in, Index ld, T* out, Index ldo, Index r, Index c,
                                                         cudaStream_t s) {
          small::morph_two_pass(erode_, s, in, ld, out, ldo, r, c, kr, kc);
        });
        for (auto [r, c] : std::vector<std::pair<Index, Index>>{{1, 1}, {5, 3}, {97, 101}, {130, 600}}) {
          CAPTURE(kr, kc, erode_, shape(r, c));
          const auto img = to_device(random_image<T>(r + 3, c + 7));
          const MatrixView<const T> roi = img.block(1, 3, r, c);
          CHECK(to_eigen(erode_ ? erode(roi, kr, kc) : dilate(roi, kr, kc)) == to_eigen(two_pass(roi)));
        }
        for (int rpt : {0, 4, 8, 16}) {
          if (kr != kc && rpt != 0) continue;
          CAPTURE(kr, kc, erode_, rpt);
          const Candidate<T> cand = [=](const T* in, Index ld, T* out, Index ldo, Index r, Index c, cudaStream_t s) {
            small::morph(erode_, s, in, ld, out, ldo, r, c, kr, kc, rpt);
          };
          // Exact for floats too: a minimum or maximum of the same values in any order (no NaN
          // in the inputs).
          for (auto [r, c] : shapes_for(rpt == 0)) check_candidate<T>(r, c, two_pass, cand);
          if (kr == kc && (rpt == 0 || !under_sanitizer())) {
            check_candidate<T>(4097, 4095, two_pass, cand);
            // Under a sanitizer the float tall image (four times the bytes) runs for side 3 only.
            if (std::is_same_v<T, U8> || kr == 3 || !under_sanitizer())
              check_candidate<T>(kTallRows, 3, two_pass, cand, 0, false);
          }
        }
      }
}

namespace {
/// OpenCV's threshold of one u8 pixel (t floored and clamped to -1..255, maxval rounded and
/// saturated, as threshold() documents).
U8 threshold_ref(int p, double t, double maxval, Threshold type) {
  const int it = static_cast<int>(std::clamp(std::floor(t), -1.0, 255.0));
  const int im = static_cast<int>(std::clamp(std::nearbyint(maxval), 0.0, 255.0));
  const bool above = p > it;
  switch (type) {
    case Threshold::binary: return static_cast<U8>(above ? im : 0);
    case Threshold::binary_inv: return static_cast<U8>(above ? 0 : im);
    case Threshold::trunc: return static_cast<U8>(above ? std::max(it, 0) : p);
    case Threshold::to_zero: return static_cast<U8>(above ? p : 0);
    default: return static_cast<U8>(above ? 0 : p);
  }
}
}  // namespace

TEST_CASE("image small: u8 threshold (16 pixels a thread) equals OpenCV's definition for every type",
          "[image][small][threshold]") {
  const Threshold types[] = {Threshold::binary, Threshold::binary_inv, Threshold::trunc, Threshold::to_zero,
                             Threshold::to_zero_inv};
  std::vector<std::pair<Index, Index>> sh = {{1, 1}, {1, 17}, {3, 33}, {97, 101}, {64, 4096}, {4097, 4095}};
  for (auto rc : awkward_shapes(3, 300)) sh.push_back(rc);
  for (auto [r, c] : sh) {
    const H<U8> h = random_matrix<U8>(r + 3, c + 7, 0, 255);
    const auto big = to_device(h);
    for (const bool view : {false, true}) {
      // A view at an odd offset with an odd stride (bytes), or a dense copy (16-byte vectors).
      const DeviceMatrix<U8> dense = DeviceMatrix<U8>(big.block(1, 3, r, c));
      const MatrixView<const U8> in = view ? big.block(1, 3, r, c) : dense.view();
      for (const Threshold type : types)
        for (const double t : {-5.0, 0.0, 77.5, 254.0, 255.0, 300.0})
          for (const double maxval : {255.0, 100.4, 0.0, 999.0}) {
            if (r * c > 100000 && !(t == 77.5 && maxval == 255.0)) continue;  // the large shapes: one threshold
            CAPTURE(shape(r, c), view, static_cast<int>(type), t, maxval);
            const H<U8> got = to_eigen(threshold(in, t, maxval, type));
            Index bad = 0;
            for (Index y = 0; y < r; ++y)
              for (Index x = 0; x < c; ++x) bad += got(y, x) != threshold_ref(h(y + 1, x + 3), t, maxval, type);
            CHECK(bad == 0);
          }
    }
    CHECK(to_eigen(big) == h);  // input intact
  }
}

TEST_CASE("image small: u8 rgb_to_gray (16 pixels a thread) equals OpenCV's fixed point", "[image][small][color]") {
  for (const auto& rc : shapes()) {
    const Index r = rc.first, c = rc.second;
    if (r == 0 || c == 0) continue;
    CAPTURE(shape(r, c));
    // Three planes: R dense, G and B views at different odd offsets of larger matrices.
    const H<U8> hr = random_matrix<U8>(r, c, 0, 255), hg = random_matrix<U8>(r + 2, c + 5, 0, 255),
                hb = random_matrix<U8>(r + 1, c + 3, 0, 255);
    const auto dr = to_device(hr), dg = to_device(hg), db = to_device(hb);
    const MatrixView<const U8> vr = dr.view(), vg = dg.block(1, 3, r, c), vb = db.block(1, 1, r, c);
    const auto want = [&](Index y, Index x, const H<U8>& g, Index gy, Index gx, const H<U8>& b, Index by, Index bx) {
      return static_cast<U8>((hr(y, x) * 4899 + g(y + gy, x + gx) * 9617 + b(y + by, x + bx) * 1868 + (1 << 13)) >> 14);
    };
    const H<U8> got = to_eigen(rgb_to_gray(vr, vg, vb));
    Index bad = 0;
    for (Index y = 0; y < r; ++y)
      for (Index x = 0; x < c; ++x) bad += got(y, x) != want(y, x, hg, 1, 3, hb, 1, 1);
    CHECK(bad == 0);
    // All three dense (the 16-byte path where the rows allow).
    const auto dg2 = to_device(H<U8>(hg.block(0, 0, r, c))), db2 = to_device(H<U8>(hb.block(0, 0, r, c)));
    const H<U8> got2 = to_eigen(rgb_to_gray(dr, dg2, db2));
    bad = 0;
    for (Index y = 0; y < r; ++y)
      for (Index x = 0; x < c; ++x) bad += got2(y, x) != want(y, x, hg, 0, 0, hb, 0, 0);
    CHECK(bad == 0);
  }
}

TEST_CASE("image small: register-blocked f32 filter2d 3x3, 5x5, 7x7 equals the general kernel", "[image][small][filter]") {
  for (int k : {3, 5, 7}) {
    CAPTURE(k);
    const H<float> w = random_matrix<float>(k, k, -1.0, 1.0);
    const auto dw = to_device(w);
    const double scale = w.cwiseAbs().sum();  // |out| <= scale for inputs in [-1, 1]
    const Reference<float> general = [&](const MatrixView<const float>& v) {
      DeviceMatrix<float> out(v.rows(), v.cols(), v.stream());
      small::filter2d_general(v.stream().native(), v.data(), v.stride(), out.data(), v.rows(), v.cols(), dw.data(), k, k);
      return out;
    };
    const Candidate<float> cand = [&](const float* in, Index ld, float* out, Index ldo, Index r, Index c, cudaStream_t s) {
      small::filter2d_small(s, in, ld, out, ldo, r, c, dw.data(), k);
    };
    const double tol = 1e-5 * scale;
    for (auto [r, c] : shapes()) check_candidate<float>(r, c, general, cand, tol);
    // Whole tiles inside the image (the float4 path) and tiles on every border.
    for (auto [r, c] : std::vector<std::pair<Index, Index>>{{4097, 4095}, {4096, 4096}, {200, 136}, {68, 140}})
      check_candidate<float>(r, c, general, cand, tol);
    if (k == 3 || !under_sanitizer()) check_candidate<float>(kTallRows, 2, general, cand, tol, false);  // one under a sanitizer
    // The public function dispatches here: on a view, within the same tolerance of the general kernel.
    const auto img = to_device(random_matrix<float>(300, 407, -1.0, 1.0));
    const MatrixView<const float> roi = img.block(1, 3, 250, 333);
    const H<float> a = to_eigen(filter2d(roi, dw)), b = to_eigen(general(roi));
    CHECK((a - b).cwiseAbs().maxCoeff() <= tol);
  }
}

TEST_CASE("image small: f32 filter2d 3x3 and 5x5 without shared memory equals the general kernel",
          "[image][small][filter][direct]") {
  for (int k : {3, 5})
    for (int rpt : {4, 8, 16}) {
      CAPTURE(k, rpt);
      const H<float> w = random_matrix<float>(k, k, -1.0, 1.0);
      const auto dw = to_device(w);
      const double scale = w.cwiseAbs().sum();  // |out| <= scale for inputs in [-1, 1]
      const Reference<float> general = [&](const MatrixView<const float>& v) {
        DeviceMatrix<float> out(v.rows(), v.cols(), v.stream());
        small::filter2d_general(v.stream().native(), v.data(), v.stride(), out.data(), v.rows(), v.cols(), dw.data(), k, k);
        return out;
      };
      const Candidate<float> cand = [&](const float* in, Index ld, float* out, Index ldo, Index r, Index c, cudaStream_t s) {
        small::filter2d_direct(s, in, ld, out, ldo, r, c, dw.data(), k, rpt);
      };
      const double tol = 1e-5 * scale;
      for (auto [r, c] : shapes_for(false)) check_candidate<float>(r, c, general, cand, tol);
      if (rpt == 8 || !under_sanitizer()) {  // the large ones once a side under compute-sanitizer
        // Odd widths (the scalar path on most rows) and aligned ones (the float4 path).
        for (auto [r, c] : std::vector<std::pair<Index, Index>>{{4097, 4095}, {4096, 4096}, {200, 136}})
          check_candidate<float>(r, c, general, cand, tol);
        check_candidate<float>(kTallRows, 2, general, cand, tol, false);
      }
    }
}

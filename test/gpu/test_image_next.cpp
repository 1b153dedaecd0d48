// The candidate kernels of src/kernels/image_next.cuh (not dispatched yet; support/image_next.hpp) against the public
// functions they would replace, which test_image_neigh / _morph / _intensity / _color /
// test_filter hold to OpenCV and Eigen: u8 box 3x3 and 5x5 and u8 erode/dilate 3x3, 5x5 and 7x7
// (each with 4, 8 and 16 output rows a thread),
// u8 threshold (every type, thresholds below, inside and above the u8 range), u8 rgb_to_gray,
// f32 filter2d 5x5. Identical results for u8, 1e-5 of the weights' scale for f32 (the sums run
// in another order). Shapes: 1x1, 1xN, Nx1, primes, tile-1/tile/tile+1 of the 128x64 tiles,
// 4097x4095, more tile rows than grid.y holds; inputs dense and as views at odd offsets with odd
// strides; outputs dense and inside a larger poisoned matrix (the margin must stay poisoned,
// every pixel of the output must be written: u8 runs twice, poisoned 0 and 255).
#include "support/image_next.hpp"
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

/// The candidate against the reference on an r x c image: dense, and as the (1, 3) block of an
/// (r + 3) x (c + 7) matrix (an odd offset and an odd stride).
template <class T>
void check_candidate(Index r, Index c, const Reference<T>& ref, const Candidate<T>& cand, double tol = 0,
                     bool views = true) {
  CAPTURE(shape(r, c));
  const H<T> h = std::is_same_v<T, float> ? random_matrix<T>(r, c, -1.0, 1.0) : random_matrix<T>(r, c, 0, 255);
  const auto img = to_device(h);
  if (r > 0 && c > 0) check_outputs<T>(img.view(), to_eigen(ref(img.view())), cand, tol);
  if (!views) return;
  const H<T> hb = std::is_same_v<T, float> ? random_matrix<T>(r + 3, c + 7, -1.0, 1.0) : random_matrix<T>(r + 3, c + 7, 0, 255);
  const auto big = to_device(hb);
  const MatrixView<const T> roi = big.block(1, 3, r, c);
  if (r > 0 && c > 0) check_outputs<T>(roi, to_eigen(ref(roi)), cand, tol);
  CHECK(to_eigen(big) == hb);  // input intact
}

/// 1x1, 1xN, Nx1, primes, the 128 x 64 tile and its neighbours, tall and wide, and random ones.
std::vector<std::pair<Index, Index>> shapes() {
  std::vector<std::pair<Index, Index>> s = {{1, 1},    {1, 2},    {2, 1},    {1, 7},    {7, 1},   {1, 131}, {131, 1},
                                            {2, 2},    {3, 3},    {4, 5},    {5, 4},    {6, 9},   {63, 127}, {64, 128},
                                            {65, 129}, {127, 4},  {128, 3},  {3, 257},  {97, 101}, {257, 263}, {8, 4096},
                                            {4096, 8}, {2, 4099}, {4099, 2}};
  for (auto rc : awkward_shapes(4, 500)) s.push_back(rc);
  return s;
}

/// More tile rows than grid.y's 65535 blocks for every tile height (64 rows for filter2d, 8 R
/// for the fused u8 kernels, R up to 16): the kernels loop over the rest.
constexpr Index kTallRows = 65535 * 128 + 65;
}  // namespace

TEST_CASE("image_next: fused u8 box 3x3 and 5x5 equal box_filter", "[image][next][box]") {
  for (int k : {3, 5}) {
    for (int rpt : {4, 8, 16}) {  // output rows a thread
      CAPTURE(k, rpt);
      const Reference<U8> ref = [k](const MatrixView<const U8>& v) { return box_filter(v, k, k); };
      const Candidate<U8> cand = [k, rpt](const U8* in, Index ld, U8* out, Index ldo, Index r, Index c, cudaStream_t s) {
        next::box_u8(s, in, ld, out, ldo, r, c, k, rpt);
      };
      for (auto [r, c] : shapes()) check_candidate<U8>(r, c, ref, cand);
      if (rpt == 8 || !under_sanitizer()) {  // the large ones once under compute-sanitizer
        check_candidate<U8>(4097, 4095, ref, cand);
        check_candidate<U8>(kTallRows, 3, ref, cand, 0, false);
      }
    }
  }
}

TEST_CASE("image_next: fused u8 erode and dilate 3x3, 5x5, 7x7 equal erode/dilate", "[image][next][morph]") {
  for (int k : {3, 5, 7}) {
    for (bool erode_ : {true, false}) {
      for (int rpt : {4, 8, 16}) {
        CAPTURE(k, erode_, rpt);
        const Reference<U8> ref = [=](const MatrixView<const U8>& v) { return erode_ ? erode(v, k, k) : dilate(v, k, k); };
        const Candidate<U8> cand = [=](const U8* in, Index ld, U8* out, Index ldo, Index r, Index c, cudaStream_t s) {
          next::morph_u8(erode_, s, in, ld, out, ldo, r, c, k, rpt);
        };
        for (auto [r, c] : shapes()) check_candidate<U8>(r, c, ref, cand);
        if (k == 3 && (rpt == 8 || !under_sanitizer())) {
          check_candidate<U8>(4097, 4095, ref, cand);
          check_candidate<U8>(kTallRows, 3, ref, cand, 0, false);
        }
      }
    }
  }
}

TEST_CASE("image_next: streaming u8 threshold equals threshold for every type", "[image][next][threshold]") {
  const Threshold types[] = {Threshold::binary, Threshold::binary_inv, Threshold::trunc, Threshold::to_zero,
                             Threshold::to_zero_inv};
  for (const Threshold type : types) {
    for (const double t : {-5.0, 0.0, 77.5, 254.0, 255.0, 300.0}) {
      for (const double maxval : {255.0, 100.0}) {
        CAPTURE(static_cast<int>(type), t, maxval);
        const Reference<U8> ref = [=](const MatrixView<const U8>& v) { return threshold(v, t, maxval, type); };
        // As threshold(): t floored and clamped to -1..255, maxval rounded and saturated.
        const int it = static_cast<int>(std::clamp(std::floor(t), -1.0, 255.0));
        const auto im = static_cast<U8>(std::clamp(std::nearbyint(maxval), 0.0, 255.0));
        const Candidate<U8> cand = [=](const U8* in, Index ld, U8* out, Index ldo, Index r, Index c, cudaStream_t s) {
          next::threshold_u8(s, in, ld, out, ldo, r, c, it, im, static_cast<int>(type));
        };
        for (auto [r, c] : std::vector<std::pair<Index, Index>>{{1, 1}, {1, 17}, {3, 33}, {97, 101}, {64, 4096}})
          check_candidate<U8>(r, c, ref, cand);
      }
    }
  }
  const Reference<U8> ref = [](const MatrixView<const U8>& v) { return threshold(v, 128, 255, Threshold::trunc); };
  const Candidate<U8> cand = [](const U8* in, Index ld, U8* out, Index ldo, Index r, Index c, cudaStream_t s) {
    next::threshold_u8(s, in, ld, out, ldo, r, c, 128, 255, 2 /* trunc */);
  };
  for (auto [r, c] : shapes()) check_candidate<U8>(r, c, ref, cand);
  check_candidate<U8>(4097, 4095, ref, cand);
}

TEST_CASE("image_next: streaming u8 rgb_to_gray equals rgb_to_gray", "[image][next][color]") {
  for (const auto& rc : shapes()) {
    const Index r = rc.first, c = rc.second;
    if (r == 0 || c == 0) continue;
    CAPTURE(shape(r, c));
    // Three planes: R dense, G and B views at different odd offsets of larger matrices.
    const H<U8> hr = random_matrix<U8>(r, c, 0, 255), hg = random_matrix<U8>(r + 2, c + 5, 0, 255),
                hb = random_matrix<U8>(r + 1, c + 3, 0, 255);
    const auto dr = to_device(hr), dg = to_device(hg), db = to_device(hb);
    const MatrixView<const U8> vr = dr.view(), vg = dg.block(1, 3, r, c), vb = db.block(1, 1, r, c);
    const H<U8> want = to_eigen(rgb_to_gray(vr, vg, vb));
    const Candidate<U8> cand = [&](const U8*, Index, U8* out, Index ldo, Index rr, Index cc, cudaStream_t s) {
      next::rgb_to_gray_u8(s, vr.data(), vr.stride(), vg.data(), vg.stride(), vb.data(), vb.stride(), out, ldo,
                                         rr, cc);
    };
    check_outputs<U8>(vr, want, cand, 0);
    // All three dense (the 16-byte path where the rows allow).
    const auto dg2 = to_device(H<U8>(hg.block(0, 0, r, c))), db2 = to_device(H<U8>(hb.block(0, 0, r, c)));
    const Candidate<U8> dense = [&](const U8*, Index, U8* out, Index ldo, Index rr, Index cc, cudaStream_t s) {
      next::rgb_to_gray_u8(s, dr.data(), c, dg2.data(), c, db2.data(), c, out, ldo, rr, cc);
    };
    check_outputs<U8>(vr, to_eigen(rgb_to_gray(dr, dg2, db2)), dense, 0);
  }
}

TEST_CASE("image_next: register-blocked f32 filter2d 5x5 equals filter2d", "[image][next][filter]") {
  const H<float> w = random_matrix<float>(5, 5, -1.0, 1.0);
  const auto dw = to_device(w);
  const double scale = w.cwiseAbs().sum();  // |out| <= scale for inputs in [-1, 1]
  const Reference<float> ref = [&](const MatrixView<const float>& v) { return filter2d(v, dw); };
  const Candidate<float> cand = [&](const float* in, Index ld, float* out, Index ldo, Index r, Index c, cudaStream_t s) {
    next::filter2d_5x5(s, in, ld, out, ldo, r, c, w.data());
  };
  const double tol = 1e-5 * scale;
  for (auto [r, c] : shapes()) check_candidate<float>(r, c, ref, cand, tol);
  // Whole tiles inside the image (the float4 path) and tiles on every border.
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{4097, 4095}, {4096, 4096}, {200, 136}, {68, 140}})
    check_candidate<float>(r, c, ref, cand, tol);
  check_candidate<float>(kTallRows, 2, ref, cand, tol, false);
}

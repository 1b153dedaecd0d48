// canny against OpenCV's cv::Canny (where the tests were built with it) and a plain C++
// reference of its definition (support/canny_ref.hpp: 3x3 Sobel with replicated borders, L1
// magnitude, OpenCV's four-sector suppression with tan 22.5 in Q15, floor()ed thresholds,
// 8-connected hysteresis by a search): exact. Noise, smooth images, drawn shapes whose edges run
// across many tiles, serpentines and spirals of weak edges with one strong end (the worst case
// for tile-local fills), odd shapes, regions of interest, thresholds 0, equal and fractional;
// every hysteresis configuration (rounds to the end, the ring pieces' components after some
// rounds, checked or not, each suppression walk); errors before launch.
#include "support/canny_ref.hpp"
#include "support/image_canny.hpp"
#include "support/opencv.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {
using H8 = HostMatrix<std::uint8_t>;

H8 canny_ref(const H8& img, double low_t, double high_t) {
  const std::vector<std::uint8_t> e = canny_reference(img.data(), img.rows(), img.cols(), img.cols(), low_t, high_t);
  H8 out(img.rows(), img.cols());
  std::copy(e.begin(), e.end(), out.data());
  return out;
}

H8 snake(Index r, Index c, int spacing, bool spiral) {
  const std::vector<std::uint8_t> v = snake_image(r, c, spacing, spiral);
  H8 h(r, c);
  std::copy(v.begin(), v.end(), h.data());
  return h;
}

/// Noise blurred by a box filter of side `blur` (on the host), so that edges are long.
H8 test_image(Index r, Index c, int blur) {
  const H8 noise = random_matrix<std::uint8_t>(r, c, 0, 255);
  if (blur <= 1) return noise;
  H8 out(r, c);
  for (Index y = 0; y < r; ++y)
    for (Index x = 0; x < c; ++x) {
      int s = 0, n = 0;
      for (Index i = std::max<Index>(0, y - blur / 2); i <= std::min(r - 1, y + blur / 2); ++i)
        for (Index j = std::max<Index>(0, x - blur / 2); j <= std::min(c - 1, x + blur / 2); ++j) s += noise(i, j), ++n;
      out(y, x) = static_cast<std::uint8_t>(s / n);
    }
  return out;
}

/// Rings and a diagonal: edges that cross many 32 x 32 tiles, one pixel apart.
H8 drawn_image(Index r, Index c) {
  H8 h(r, c);
  for (Index y = 0; y < r; ++y)
    for (Index x = 0; x < c; ++x) {
      const double d = std::hypot(double(y) - r / 2.0, double(x) - c / 2.0);
      h(y, x) = static_cast<std::uint8_t>((static_cast<long long>(d) / 9) % 2 ? 200 : 40);
      if (std::abs(double(y) * c - double(x) * r) < c) h(y, x) = 120;
    }
  return h;
}

/// The pixels where got and want differ (want's shape).
Index mismatches(const H8& got, const H8& want) {
  REQUIRE(got.rows() == want.rows());
  REQUIRE(got.cols() == want.cols());
  Index bad = 0;
  for (Index e = 0; e < got.size(); ++e) bad += got.data()[e] != want.data()[e];
  return bad;
}

void check_canny(const H8& h, double low, double high) {
  CAPTURE(shape(h.rows(), h.cols()), low, high);
  const auto img = to_device(h);
  poison_next<std::uint8_t>(h.rows(), h.cols(), img.stream());
  const Image8 out = canny(img, low, high);
  CHECK(out.stream() == img.stream());
  const H8 want = canny_ref(h, low, high);
  const H8 got = to_eigen(out);
  CHECK(mismatches(got, want) == 0);
  // Rounds to the end (canny's hysteresis where the ring nodes would not have 32-bit indices),
  // each walk of the suppression.
  for (int walk : {1, 2}) {
    CAPTURE(walk);
    poison_next<std::uint8_t>(h.rows(), h.cols(), img.stream());
    CHECK(mismatches(to_eigen(canny_forced(img, low, high, 4, 0, walk)), want) == 0);
  }
  // The ring pieces' components after one round; and after 0 or 1 rounds never checked
  // (ring_unchecked, bench_image_small's "ours-planes-ring-u<N>").
  poison_next<std::uint8_t>(h.rows(), h.cols(), img.stream());
  CHECK(mismatches(to_eigen(canny_forced(img, low, high, 1, 1, 2)), want) == 0);
  for (int rounds : {0, 1}) {
    CAPTURE(rounds);
    poison_next<std::uint8_t>(h.rows(), h.cols(), img.stream());
    CHECK(mismatches(to_eigen(canny_forced(img, low, high, 4, rounds, 1, true)), want) == 0);
  }
  CHECK(to_eigen(img) == h);
}

const std::vector<std::pair<double, double>> kThresholds = {{50, 150}, {10, 30}, {0, 0}, {20.7, 80.2}, {100, 100}, {600, 900}};
}  // namespace

TEST_CASE("canny equals the reference on noise, smooth images and drawn edges", "[image][canny]") {
  for (auto [r, c] : awkward_shapes(4, 300)) {
    if (r * c > 40000) continue;
    const H8 noise = random_matrix<std::uint8_t>(r, c, 0, 255);
    const H8 smooth = test_image(r, c, 5);
    for (auto [lo, hi] : kThresholds) {
      check_canny(noise, lo, hi);
      check_canny(smooth, lo, hi);
    }
  }
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{257, 263}, {1021, 3}, {3, 1021}, {4097, 1}, {1, 4097}, {601, 599}}) {
    check_canny(drawn_image(r, c), 50, 150);
    check_canny(test_image(r, c, 7), 5, 20);
  }
}

TEST_CASE("canny at 4097x4095: long edges across many tiles", "[image][canny]") {
  check_canny(drawn_image(4097, 4095), 50, 150);
  check_canny(test_image(1031, 2053, 9), 2, 12);  // low thresholds: long weak chains
}

TEST_CASE("canny: serpentines and spirals of weak edges across many tiles, every hysteresis configuration", "[image][canny]") {
  const auto check_designs = [](const H8& h, double low, double high, bool rounds) {
    CAPTURE(shape(h.rows(), h.cols()), low, high);
    const auto img = to_device(h);
    const H8 want = canny_ref(h, low, high);
    Index edges = 0;
    for (Index e = 0; e < want.size(); ++e) edges += want.data()[e] != 0;
    CAPTURE(edges);
    poison_next<std::uint8_t>(h.rows(), h.cols(), img.stream());
    CHECK(to_eigen(canny(img, low, high)) == want);
    for (int max_rounds : {1, 3}) {  // rounds that give up for the ring pieces' components
      CAPTURE(max_rounds);
      poison_next<std::uint8_t>(h.rows(), h.cols(), img.stream());
      CHECK(to_eigen(canny_forced(img, low, high, 1, max_rounds)) == want);
      poison_next<std::uint8_t>(h.rows(), h.cols(), img.stream());
      CHECK(to_eigen(canny_forced(img, low, high, 1, max_rounds, 2)) == want);  // the other walk
      poison_next<std::uint8_t>(h.rows(), h.cols(), img.stream());
      CHECK(to_eigen(canny_forced(img, low, high, 4, max_rounds, 1, true)) == want);  // unchecked
    }
    poison_next<std::uint8_t>(h.rows(), h.cols(), img.stream());
    CHECK(to_eigen(canny_forced(img, low, high, 4, 0, 1, true)) == want);  // ring pieces at once
    if (rounds)  // rounds to the end
      for (int per_check : under_sanitizer() ? std::vector<int>{4} : std::vector<int>{1, 4, 16}) {
        CAPTURE(per_check);
        poison_next<std::uint8_t>(h.rows(), h.cols(), img.stream());
        CHECK(to_eigen(canny_forced(img, low, high, per_check, 0, per_check == 1 ? 2 : 1)) == want);
      }
    CHECK(to_eigen(img) == h);
  };
  // Under compute-sanitizer the rounds to the end (hundreds of launches on a serpentine) only on
  // the widest spacing.
  const bool san = under_sanitizer();
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{257, 263}, {1, 4099}, {4099, 1}, {2, 1031}, {1031, 2}, {97, 1021}}) {
    for (int spacing : {3, 4, 9})
      for (bool spiral : {false, true}) {
        CAPTURE(spacing, spiral);
        check_designs(snake(r, c, spacing, spiral), 20, 100, !san || spacing == 9);
      }
    check_designs(random_matrix<std::uint8_t>(r, c, 0, 255), 10, 30, true);
    check_designs(test_image(r, c, 7), 2, 12, true);
  }
  // Serpentines of columns (the transposed snakes): the bit fill's slow direction (a step moves a
  // chain one row down, where a row's run fills at once), tiles crossed vertically.
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{263, 257}, {64, 96}, {33, 95}, {1021, 97}}) {
    for (int spacing : {2, 3, 5})
      for (bool spiral : {false, true}) {
        CAPTURE(spacing, spiral);
        const H8 t = snake(c, r, spacing, spiral).transpose();
        check_designs(t, 20, 100, !san || (spacing == 5 && r < 1000));
      }
  }
  // One path through every tile row: far past what the rounds finish in a test's time.
  for (bool spiral : {false, true}) {
    CAPTURE(spiral);
    check_designs(snake(2053, 1031, 3, spiral), 20, 100, false);
  }
  if (!san) check_designs(snake(4097, 4095, 5, false), 20, 100, false);
}

TEST_CASE("canny of a region of interest is that of its dense copy", "[image][canny][views]") {
  const H8 h = test_image(301, 517, 5);
  const auto img = to_device(h);
  for (const auto& w : std::vector<std::array<Index, 4>>{{1, 3, 299, 510}, {100, 1, 67, 129}, {0, 516, 301, 1}, {7, 9, 2, 3}}) {
    CAPTURE(w[0], w[1], w[2], w[3]);
    CHECK(to_eigen(canny(img.block(w[0], w[1], w[2], w[3]), 10, 40)) == canny_ref(H8(h.block(w[0], w[1], w[2], w[3])), 10, 40));
  }
  CHECK(to_eigen(img) == h);
}

TEST_CASE("canny: low > high and thresholds that are not finite are invalid_argument, thrown before anything runs",
          "[image][canny]") {
  const H8 h = random_matrix<std::uint8_t>(20, 30, 0, 255);
  const auto img = to_device(h);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (auto [lo, hi] : std::vector<std::pair<double, double>>{{150, 50}, {1, 0.5}, {nan, 10}, {10, nan}, {0, inf}, {-inf, 10}}) {
    CAPTURE(lo, hi);
    CHECK_THROWS_AS(canny(img, lo, hi), std::invalid_argument);
    CHECK_THROWS_AS(canny(Image8(0, 3), lo, hi), std::invalid_argument);
    CHECK_THROWS_WITH(canny(img, lo, hi), contains("canny"));
  }
  CHECK(to_eigen(img) == h);
  CHECK(canny(Image8(0, 7), 1, 2).cols() == 7);
}

DEVMAT_OPENCV_MISSING_CASE("[image][canny]")

#if DEVMAT_TEST_HAVE_OPENCV
TEST_CASE("canny equals OpenCV's Canny exactly", "[image][canny][opencv]") {
  INFO("OpenCV " << cv::getVersionString());
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{1, 1}, {1, 97}, {97, 1}, {2, 3}, {31, 37}, {257, 263}, {509, 521}}) {
    for (const H8& h : {random_matrix<std::uint8_t>(r, c, 0, 255), test_image(r, c, 5), drawn_image(r, c)}) {
      const auto img = to_device(h);
      for (auto [lo, hi] : kThresholds) {
        CAPTURE(shape(r, c), lo, hi);
        cv::Mat want;
        cv::Canny(to_cv(h), want, lo, hi);
        CHECK(to_eigen(canny(img, lo, hi)) == from_cv<std::uint8_t>(want));
      }
    }
  }
  const H8 big = drawn_image(4097, 4095);
  cv::Mat want;
  cv::Canny(to_cv(big), want, 50, 150);
  CHECK(to_eigen(canny(to_device(big), 50, 150)) == from_cv<std::uint8_t>(want));
}
#endif

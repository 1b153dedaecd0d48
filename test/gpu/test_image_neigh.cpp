// box_filter, median_blur and integral against OpenCV (where the tests were built with it) and plain C++
// references of OpenCV's definitions (boxFilter with
// BORDER_REFLECT_101, its default; medianBlur with BORDER_REPLICATE, exact; integral's (rows + 1) x (cols + 1) layout): exact for u8
// (sums in int, means rounded halves up) and integral u8 -> int32, 1e-5 relative for float.
// Shapes that break the tiles, odd and even sides 1..255, windows larger than the image,
// regions of interest, more tile rows than a grid holds, 4097x4095; outputs poisoned, inputs
// checked intact; errors before launch.
#include "support/opencv.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {
template <class T>
using H = HostMatrix<T>;
using H8 = H<std::uint8_t>;
using HF = H<float>;

/// OpenCV's BORDER_REFLECT_101 index (cv::borderInterpolate).
Index reflect101(Index i, Index n) {
  if (n == 1) return 0;
  while (i < 0 || i >= n) i = i < 0 ? -i : 2 * n - 2 - i;
  return i;
}

/// The window sums, in double (exact for u8 sums).
template <class T>
H<double> box_sums(const H<T>& img, int kh, int kw) {
  const Index r = img.rows(), c = img.cols();
  H<double> out = H<double>::Zero(r, c);
  for (Index y = 0; y < r; ++y)
    for (Index x = 0; x < c; ++x) {
      double s = 0;
      for (int i = 0; i < kh; ++i)
        for (int j = 0; j < kw; ++j) s += static_cast<double>(img(reflect101(y - kh / 2 + i, r), reflect101(x - kw / 2 + j, c)));
      out(y, x) = s;
    }
  return out;
}

H8 box_ref(const H8& img, int kh, int kw, bool normalize) {
  const H<double> s = box_sums(img, kh, kw);
  H8 out(img.rows(), img.cols());
  const long long area = normalize ? static_cast<long long>(kh) * kw : 1;
  for (Index i = 0; i < s.size(); ++i) {
    const long long sum = static_cast<long long>(s.data()[i]);
    out.data()[i] = static_cast<std::uint8_t>(std::min<long long>(255, (2 * sum + area) / (2 * area)));
  }
  return out;
}

H<double> box_ref(const HF& img, int kh, int kw, bool normalize) {
  H<double> s = box_sums(img, kh, kw);
  if (normalize) s /= static_cast<double>(kh) * kw;
  return s;
}

void check_box(const H8& h, int kh, int kw, bool normalize = true) {
  CAPTURE(shape(h.rows(), h.cols()), kh, kw, normalize);
  const auto img = to_device(h);
  poison_next<std::uint8_t>(h.rows(), h.cols(), img.stream());
  const Image8 out = box_filter(img, kh, kw, normalize);
  CHECK(out.stream() == img.stream());
  CHECK(to_eigen(out) == box_ref(h, kh, kw, normalize));
  CHECK(to_eigen(img) == h);
}

void check_box(const HF& h, int kh, int kw, bool normalize = true) {
  CAPTURE(shape(h.rows(), h.cols()), kh, kw, normalize);
  const auto img = to_device(h);
  poison_next<float>(h.rows(), h.cols(), img.stream());
  const HF got = to_eigen(box_filter(img, kh, kw, normalize));
  const H<double> want = box_ref(h, kh, kw, normalize);
  REQUIRE(got.rows() == want.rows());
  REQUIRE(got.cols() == want.cols());
  CHECK(got.allFinite());
  // 1e-5 of the largest |sum| a window can reach, per pixel.
  const double range = (h.size() ? h.cwiseAbs().cast<double>().maxCoeff() : 0.0) * (normalize ? 1.0 : double(kh) * kw);
  const double err = max_abs_diff(got, want);
  CAPTURE(err, range);
  CHECK(err <= 1e-5 * std::max(1.0, range));
  CHECK(to_eigen(img) == h);
}

/// The integral image in OpenCV's layout, in double (exact for u8 sums below 2^53).
template <class T>
H<double> integral_ref(const H<T>& img) {
  const Index r = img.rows(), c = img.cols();
  H<double> out = H<double>::Zero(r + 1, c + 1);
  for (Index y = 0; y < r; ++y) {
    double row = 0;
    for (Index x = 0; x < c; ++x) {
      row += static_cast<double>(img(y, x));
      out(y + 1, x + 1) = out(y, x + 1) + row;
    }
  }
  return out;
}

void check_integral(const H8& h) {
  CAPTURE(shape(h.rows(), h.cols()));
  const auto img = to_device(h);
  poison_next<std::int32_t>(h.rows() + 1, h.cols() + 1, img.stream());
  const DeviceMatrix<std::int32_t> out = integral(img);
  REQUIRE(out.rows() == h.rows() + 1);
  REQUIRE(out.cols() == h.cols() + 1);
  CHECK(to_eigen(out) == integral_ref(h).cast<std::int32_t>());
  CHECK(to_eigen(img) == h);
}

void check_integral(const HF& h) {
  CAPTURE(shape(h.rows(), h.cols()));
  const auto img = to_device(h);
  poison_next<double>(h.rows() + 1, h.cols() + 1, img.stream());
  const DeviceMatrix<double> out = integral(img);
  REQUIRE(out.rows() == h.rows() + 1);
  REQUIRE(out.cols() == h.cols() + 1);
  const H<double> got = to_eigen(out);
  CHECK(got.allFinite());
  const double scale = h.size() ? h.cwiseAbs().cast<double>().sum() : 0.0;
  CHECK(max_abs_diff(got, integral_ref(h)) <= 1e-12 * std::max(1.0, scale));
  CHECK(to_eigen(img) == h);
}

/// The median of the k x k window, borders replicated (medianBlur), by sorting.
template <class T>
H<T> median_ref(const H<T>& img, int k) {
  const Index r = img.rows(), c = img.cols();
  H<T> out(r, c);
  std::vector<T> w(static_cast<std::size_t>(k) * k);
  for (Index y = 0; y < r; ++y)
    for (Index x = 0; x < c; ++x) {
      std::size_t n = 0;
      for (int i = 0; i < k; ++i)
        for (int j = 0; j < k; ++j)
          w[n++] = img(std::clamp<Index>(y - k / 2 + i, 0, r - 1), std::clamp<Index>(x - k / 2 + j, 0, c - 1));
      std::nth_element(w.begin(), w.begin() + w.size() / 2, w.end());
      out(y, x) = w[w.size() / 2];
    }
  return out;
}

template <class T>
void check_median(const H<T>& h, int k) {
  CAPTURE(shape(h.rows(), h.cols()), k);
  const auto img = to_device(h);
  poison_next<T>(h.rows(), h.cols(), img.stream());
  const DeviceMatrix<T> out = median_blur(img, k);
  CHECK(out.stream() == img.stream());
  CHECK(to_eigen(out) == median_ref(h, k));
  CHECK(to_eigen(img) == h);
}

const std::vector<std::pair<int, int>> kBoxes = {{1, 1}, {3, 3}, {5, 5}, {1, 7}, {7, 1}, {2, 2}, {4, 7},
                                                 {31, 31}, {15, 3}, {1, 40}, {64, 2}, {255, 5}, {3, 255}};
}  // namespace

// ------------------------------------------------------------------ box_filter
TEST_CASE("box_filter u8 and f32 equal the reference on awkward shapes", "[image][box]") {
  for (auto [r, c] : awkward_shapes(4, 300)) {
    if (r * c > 40000) continue;
    const H8 h8 = random_matrix<std::uint8_t>(r, c, 0, 255);
    const HF hf = random_matrix<float>(r, c, -100.0, 100.0);
    for (auto [kh, kw] : kBoxes) {
      if (r * c * kh * kw > 3'000'000) continue;  // keeps the direct reference quick
      check_box(h8, kh, kw);
      check_box(hf, kh, kw);
    }
  }
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{4099, 3}, {3, 4099}, {1, 4097}, {4097, 1}, {2, 10007}}) {
    check_box(random_matrix<std::uint8_t>(r, c, 0, 255), 3, 3);
    check_box(random_matrix<float>(r, c, 0.0, 1.0), 5, 5);
  }
}

TEST_CASE("box_filter without normalisation: sums, saturated for u8", "[image][box]") {
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{1, 1}, {37, 53}, {129, 131}}) {
    check_box(random_matrix<std::uint8_t>(r, c, 0, 255), 3, 3, false);
    check_box(random_matrix<std::uint8_t>(r, c, 0, 20), 3, 5, false);  // below 255: exact sums
    check_box(random_matrix<float>(r, c, -1.0, 1.0), 5, 4, false);
  }
}

TEST_CASE("box_filter at 4097x4095", "[image][box]") {
  check_box(random_matrix<std::uint8_t>(4097, 4095, 0, 255), 3, 3);
  check_box(random_matrix<float>(4097, 4095, 0.0, 1.0), 5, 5);
}

TEST_CASE("box_filter with more tile rows than a grid holds", "[image][box]") {
  // 2'100'001 rows: 65'626 row-pass tiles of 32 rows; 8'400'001 rows: 65'626 column-pass tiles.
  check_box(random_matrix<std::uint8_t>(2100001, 2, 0, 255), 3, 3);
  check_box(random_matrix<float>(8400001, 1, 0.0, 1.0), 5, 1);
}

TEST_CASE("box_filter of a region of interest is that of its dense copy", "[image][box][views]") {
  const H8 h = random_matrix<std::uint8_t>(301, 517, 0, 255);
  const HF hf = random_matrix<float>(301, 517, -1.0, 1.0);
  const auto img = to_device(h);
  const auto imgf = to_device(hf);
  for (const auto& w : std::vector<std::array<Index, 4>>{{1, 3, 299, 510}, {100, 1, 67, 129}, {0, 516, 301, 1},
                                                         {300, 0, 1, 517}, {7, 9, 2, 3}}) {
    CAPTURE(w[0], w[1], w[2], w[3]);
    const H8 dense = h.block(w[0], w[1], w[2], w[3]);
    const HF densef = hf.block(w[0], w[1], w[2], w[3]);
    for (auto [kh, kw] : std::vector<std::pair<int, int>>{{3, 3}, {5, 2}, {9, 9}}) {
      CAPTURE(kh, kw);
      poison_next<std::uint8_t>(w[2], w[3], img.stream());
      CHECK(to_eigen(box_filter(img.block(w[0], w[1], w[2], w[3]), kh, kw)) == box_ref(dense, kh, kw, true));
      const HF got = to_eigen(box_filter(imgf.block(w[0], w[1], w[2], w[3]), kh, kw));
      CHECK(max_abs_diff(got, box_ref(densef, kh, kw, true)) <= 1e-5);
    }
  }
  CHECK(to_eigen(img) == h);
}

TEST_CASE("box_filter: sides outside 1..255 are shape_errors, thrown before anything runs", "[image][box]") {
  const H8 h = random_matrix<std::uint8_t>(20, 30, 0, 255);
  const auto img = to_device(h);
  const auto imgf = to_device(random_matrix<float>(20, 30));
  for (auto [kh, kw] : std::vector<std::pair<int, int>>{{0, 3}, {3, 0}, {-1, 1}, {256, 3}, {3, 256}}) {
    CAPTURE(kh, kw);
    CHECK_THROWS_AS(box_filter(img, kh, kw), shape_error);
    CHECK_THROWS_AS(box_filter(imgf, kh, kw, false), shape_error);
    CHECK_THROWS_AS(box_filter(Image8(0, 3), kh, kw), shape_error);
    CHECK_THROWS_WITH(box_filter(img, kh, kw), contains("box_filter"));
  }
  CHECK(to_eigen(img) == h);
  CHECK(box_filter(Image8(0, 7), 3, 3).cols() == 7);
  CHECK(box_filter(DeviceMatrix<float>(4, 0), 3, 3).rows() == 4);
}

// ------------------------------------------------------------------ median_blur
TEST_CASE("median_blur u8 (1, 3, 5, 7) and f32 (1, 3, 5) equal the sorted reference exactly", "[image][median]") {
  for (auto [r, c] : awkward_shapes(4, 300)) {
    if (r * c > 40000) continue;
    const H8 h8 = random_matrix<std::uint8_t>(r, c, 0, 255);
    const HF hf = random_matrix<float>(r, c, -100.0, 100.0);
    for (int k : {1, 3, 5, 7}) check_median(h8, k);
    for (int k : {1, 3, 5}) check_median(hf, k);
    // Few distinct values: many ties.
    const H8 ties = random_matrix<std::uint8_t>(r, c, 0, 2);
    for (int k : {3, 5, 7}) check_median(ties, k);
  }
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{4099, 3}, {3, 4099}, {1, 4097}, {4097, 1}, {2, 10007}}) {
    check_median(random_matrix<std::uint8_t>(r, c, 0, 255), 7);
    check_median(random_matrix<float>(r, c, 0.0, 1.0), 5);
  }
  check_median(random_matrix<std::uint8_t>(4097, 4095, 0, 255), 5);
  check_median(random_matrix<float>(4097, 4095, 0.0, 1.0), 3);
  check_median(random_matrix<std::uint8_t>(2100001, 3, 0, 255), 3);  // 65'626 tiles of 32 rows: past grid.y
}

TEST_CASE("median_blur of a region of interest is that of its dense copy", "[image][median][views]") {
  // Odd offsets: the u8 kernel reads words of 4 bytes from unaligned rows and writes a dense result.
  const H8 h = random_matrix<std::uint8_t>(301, 517, 0, 255);
  const HF hf = random_matrix<float>(301, 517, -1.0, 1.0);
  const auto img = to_device(h);
  const auto imgf = to_device(hf);
  for (const auto& w : std::vector<std::array<Index, 4>>{{1, 3, 299, 510}, {100, 1, 67, 129}, {0, 516, 301, 1},
                                                         {300, 0, 1, 517}, {7, 9, 2, 3}}) {
    CAPTURE(w[0], w[1], w[2], w[3]);
    for (int k : {3, 5, 7}) {
      CAPTURE(k);
      poison_next<std::uint8_t>(w[2], w[3], img.stream());
      CHECK(to_eigen(median_blur(img.block(w[0], w[1], w[2], w[3]), k)) == median_ref(H8(h.block(w[0], w[1], w[2], w[3])), k));
      if (k < 7)
        CHECK(to_eigen(median_blur(imgf.block(w[0], w[1], w[2], w[3]), k)) ==
              median_ref(HF(hf.block(w[0], w[1], w[2], w[3])), k));
    }
  }
  CHECK(to_eigen(img) == h);
}

TEST_CASE("median_blur: other sizes are shape_errors, thrown before anything runs", "[image][median]") {
  const auto img = to_device(random_matrix<std::uint8_t>(20, 30, 0, 255));
  const auto imgf = to_device(random_matrix<float>(20, 30));
  for (int k : {0, -1, 2, 4, 6, 8, 9, 11}) {
    CAPTURE(k);
    CHECK_THROWS_AS(median_blur(img, k), shape_error);
    CHECK_THROWS_AS(median_blur(imgf, k), shape_error);
    CHECK_THROWS_AS(median_blur(Image8(0, 3), k), shape_error);
    CHECK_THROWS_WITH(median_blur(img, k), contains("median_blur"));
  }
  CHECK_THROWS_AS(median_blur(imgf, 7), shape_error);  // OpenCV has no 7x7 float median either
  CHECK(median_blur(Image8(0, 7), 3).cols() == 7);
}

// ------------------------------------------------------------------ integral
TEST_CASE("integral u8 -> int32 (exact) and f32 -> double on awkward shapes", "[image][integral]") {
  for (auto [r, c] : awkward_shapes(6, 700)) {
    check_integral(random_matrix<std::uint8_t>(r, c, 0, 255));
    check_integral(random_matrix<float>(r, c, -1.0, 1.0));
  }
  check_integral(random_matrix<std::uint8_t>(4097, 4095, 0, 127));  // sums below 2^31
  check_integral(random_matrix<float>(4097, 4095, 0.0, 1.0));
  check_integral(random_matrix<std::uint8_t>(2, 100003, 0, 255));
  check_integral(random_matrix<std::uint8_t>(100003, 2, 0, 255));
}

TEST_CASE("integral of a region of interest is that of its dense copy; empty images give zeros", "[image][integral][views]") {
  const H8 h = random_matrix<std::uint8_t>(301, 517, 0, 255);
  const auto img = to_device(h);
  for (const auto& w : std::vector<std::array<Index, 4>>{{1, 3, 299, 510}, {100, 1, 67, 129}, {0, 516, 301, 1}, {7, 9, 2, 3}}) {
    CAPTURE(w[0], w[1], w[2], w[3]);
    const H8 dense = h.block(w[0], w[1], w[2], w[3]);
    CHECK(to_eigen(integral(img.block(w[0], w[1], w[2], w[3]))) == integral_ref(dense).cast<std::int32_t>());
  }
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{0, 0}, {0, 5}, {5, 0}}) {
    CAPTURE(r, c);
    poison_next<std::int32_t>(r + 1, c + 1, img.stream());
    const auto z = integral(img.block(0, 0, r, c));
    REQUIRE(z.rows() == r + 1);
    REQUIRE(z.cols() == c + 1);
    CHECK(to_eigen(z).isZero(0));
  }
}

// ------------------------------------------------------------------ OpenCV, the oracle
DEVMAT_OPENCV_MISSING_CASE("[image][box][median][integral]")

#if DEVMAT_TEST_HAVE_OPENCV
TEST_CASE("box_filter equals OpenCV's boxFilter: u8 within 1 grey level, f32 within 1e-5", "[image][box][opencv]") {
  INFO("OpenCV " << cv::getVersionString());
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{1, 1}, {1, 97}, {97, 1}, {2, 3}, {31, 37}, {257, 263},
                                                          {509, 521}, {4097, 4095}}) {
    const H8 h8 = random_matrix<std::uint8_t>(r, c, 0, 255);
    const HF hf = random_matrix<float>(r, c, -100.0, 100.0);
    const auto d8 = to_device(h8);
    const auto df = to_device(hf);
    for (auto [kh, kw] : std::vector<std::pair<int, int>>{{1, 1}, {3, 3}, {5, 5}, {2, 2}, {4, 7}, {31, 31}, {1, 40}}) {
      if (r * c > 300000 && kh * kw > 25) continue;
      CAPTURE(shape(r, c), kh, kw);
      for (bool normalize : {true, false}) {
        CAPTURE(normalize);
        cv::Mat want8, wantf;
        cv::boxFilter(to_cv(h8), want8, -1, cv::Size(kw, kh), cv::Point(-1, -1), normalize);
        cv::boxFilter(to_cv(hf), wantf, -1, cv::Size(kw, kh), cv::Point(-1, -1), normalize);
        CHECK(max_abs_diff(to_eigen(box_filter(d8, kh, kw, normalize)), from_cv<std::uint8_t>(want8)) <= 1.0);
        const HF want = from_cv<float>(wantf);
        const double range = 100.0 * (normalize ? 1.0 : double(kh) * kw);
        CHECK(max_abs_diff(to_eigen(box_filter(df, kh, kw, normalize)), want) <= 1e-5 * range);
      }
    }
  }
}

TEST_CASE("median_blur equals OpenCV's medianBlur exactly", "[image][median][opencv]") {
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{1, 1}, {1, 97}, {97, 1}, {2, 3}, {31, 37}, {257, 263},
                                                          {509, 521}, {4097, 4095}}) {
    CAPTURE(shape(r, c));
    const H8 h8 = random_matrix<std::uint8_t>(r, c, 0, 255);
    const HF hf = random_matrix<float>(r, c, -100.0, 100.0);
    const auto d8 = to_device(h8);
    const auto df = to_device(hf);
    for (int k : {3, 5, 7}) {
      CAPTURE(k);
      cv::Mat want;
      cv::medianBlur(to_cv(h8), want, k);
      CHECK(to_eigen(median_blur(d8, k)) == from_cv<std::uint8_t>(want));
      if (k < 7) {
        cv::medianBlur(to_cv(hf), want, k);
        CHECK(to_eigen(median_blur(df, k)) == from_cv<float>(want));
      }
    }
  }
}

TEST_CASE("integral equals OpenCV's: u8 -> int32 exactly, f32 -> double", "[image][integral][opencv]") {
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{1, 1}, {1, 97}, {97, 1}, {2, 3}, {257, 263}, {4097, 4095}}) {
    CAPTURE(shape(r, c));
    const H8 h8 = random_matrix<std::uint8_t>(r, c, 0, 127);
    const HF hf = random_matrix<float>(r, c, -1.0, 1.0);
    cv::Mat want8, wantf;
    cv::integral(to_cv(h8), want8, CV_32S);
    cv::integral(to_cv(hf), wantf, CV_64F);
    CHECK(to_eigen(integral(to_device(h8))) == from_cv<std::int32_t>(want8));
    const H<double> got = to_eigen(integral(to_device(hf)));
    CHECK(max_abs_diff(got, from_cv<double>(wantf)) <= 1e-9 * std::max<double>(1.0, double(r) * c));
  }
  // A region of interest: OpenCV gets its dense copy.
  const H8 h = random_matrix<std::uint8_t>(301, 517, 0, 255);
  cv::Mat want;
  cv::integral(to_cv(H8(h.block(3, 5, 201, 311))), want, CV_32S);
  CHECK(to_eigen(integral(to_device(h).block(3, 5, 201, 311))) == from_cv<std::int32_t>(want));
}
#endif

// histogram, equalize_hist, threshold (every type, Otsu's included) and otsu_threshold against
// OpenCV 4 (cv::calcHist, cv::equalizeHist, cv::threshold), exactly, on odd sizes, views at odd
// offsets (the histogram's strided path) and dense images (its 16-byte path with unaligned
// heads and tails), images of few levels, and 4097x4095; bad parameters are typed errors.
#include "support/opencv.hpp"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {

using Shape = std::pair<Index, Index>;

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {{1, 1}, {1, 15}, {1, 17}, {15, 1}, {7, 33}, {64, 64}, {97, 131}, {1000, 3}, {331, 257}};
  return s;
}

/// An image of rows x cols: uniform, a narrow band, two levels, or one level.
HostMatrix<std::uint8_t> image_of(Index rows, Index cols, int kind) {
  std::uniform_int_distribution<int> d(0, 255);
  const int a = d(rng()), b = d(rng());
  HostMatrix<std::uint8_t> m(rows, cols);
  for (Index i = 0; i < m.size(); ++i) {
    const int v = kind == 0 ? d(rng()) : kind == 1 ? std::min(a, b) + d(rng()) % (std::abs(a - b) + 1)
                : kind == 2 ? (d(rng()) % 3 ? a : b) : a;
    m.data()[i] = static_cast<std::uint8_t>(v);
  }
  return m;
}

/// The image on the device, dense (offset false) or as a view at an odd offset.
struct Img {
  HostMatrix<std::uint8_t> host;
  DeviceMatrix<std::uint8_t> parent;
  MatrixView<const std::uint8_t> view;
  Img(const HostMatrix<std::uint8_t>& h, bool offset) : host(h) {
    if (!offset) {
      parent = to_device(h);
      view = parent.view();
      return;
    }
    HostMatrix<std::uint8_t> big = random_matrix<std::uint8_t>(h.rows() + 2, h.cols() + 5, 0, 255);
    big.block(1, 3, h.rows(), h.cols()) = h;
    parent = to_device(big);
    view = parent.view().block(1, 3, h.rows(), h.cols());
  }
};

}  // namespace

DEVMAT_OPENCV_MISSING_CASE("[image][intensity]")

#if DEVMAT_TEST_HAVE_OPENCV
namespace {

void check_all(const Img& img) {
  const cv::Mat src = to_cv(img.host);
  // histogram
  {
    cv::Mat h;
    const int channels = 0, bins = 256;
    const float range[] = {0, 256};
    const float* ranges[] = {range};
    cv::calcHist(&src, 1, &channels, cv::Mat(), h, 1, &bins, ranges);
    HostMatrix<std::int32_t> want(1, 256);
    for (int b = 0; b < 256; ++b) want(0, b) = static_cast<std::int32_t>(h.at<float>(b));
    poison_next<std::int32_t>(1, 256, img.view.stream());
    CHECK(to_eigen(histogram(img.view)) == want);
  }
  // equalize_hist
  {
    cv::Mat want;
    cv::equalizeHist(src, want);
    poison_next<std::uint8_t>(img.host.rows(), img.host.cols(), img.view.stream());
    CHECK(to_eigen(equalize_hist(img.view)) == from_cv<std::uint8_t>(want));
  }
  // Otsu
  {
    cv::Mat want;
    const double t = cv::threshold(src, want, 0, 200, cv::THRESH_BINARY | cv::THRESH_OTSU);
    CHECK(otsu_threshold(img.view) == t);
    poison_next<std::uint8_t>(img.host.rows(), img.host.cols(), img.view.stream());
    CHECK(to_eigen(threshold(img.view, 17, 200, Threshold::otsu)) == from_cv<std::uint8_t>(want));
  }
}

const std::vector<std::pair<Threshold, int>>& types() {
  static const std::vector<std::pair<Threshold, int>> t = {{Threshold::binary, cv::THRESH_BINARY},
                                                          {Threshold::binary_inv, cv::THRESH_BINARY_INV},
                                                          {Threshold::trunc, cv::THRESH_TRUNC},
                                                          {Threshold::to_zero, cv::THRESH_TOZERO},
                                                          {Threshold::to_zero_inv, cv::THRESH_TOZERO_INV}};
  return t;
}

}  // namespace

TEST_CASE("histogram, equalize_hist and Otsu match OpenCV", "[image][intensity]") {
  for (auto [r, c] : shapes())
    for (int kind = 0; kind < 4; ++kind)
      for (bool offset : {false, true}) {
        CAPTURE(r, c, kind, offset);
        check_all(Img(image_of(r, c, kind), offset));
      }
}

TEST_CASE("histogram, equalize_hist and Otsu of a 4097x4095 image match OpenCV", "[image][intensity][large]") {
  for (bool offset : {false, true}) {
    CAPTURE(offset);
    check_all(Img(image_of(4097, 4095, 1), offset));
  }
}

TEST_CASE("threshold matches cv::threshold (u8)", "[image][intensity][threshold]") {
  // Thresholds inside, at and beyond the range, fractional (floored), maxval rounded/saturated.
  const std::vector<std::pair<double, double>> params = {{100, 255}, {0, 7}, {254.5, 255}, {255, 255}, {-3, 255},
                                                         {300, 128}, {17.9, 300}, {128, -5},  {99.5, 99.5}};
  for (auto [r, c] : shapes())
    for (bool offset : {false, true}) {
      const Img img(image_of(r, c, 0), offset);
      for (auto [t, maxval] : params)
        for (auto [type, code] : types()) {
          CAPTURE(r, c, offset, t, maxval, code);
          cv::Mat want;
          cv::threshold(to_cv(img.host), want, t, maxval, code);
          poison_next<std::uint8_t>(r, c, img.view.stream());
          CHECK(to_eigen(threshold(img.view, t, maxval, type)) == from_cv<std::uint8_t>(want));
        }
    }
}

TEST_CASE("threshold matches cv::threshold (f32)", "[image][intensity][threshold]") {
  const std::vector<std::pair<double, double>> params = {{0.25, 1}, {-0.5, 2.5}, {0, -1}, {0.1, 0.7}};
  for (auto [r, c] : shapes()) {
    const HostMatrix<float> big = random_matrix<float>(r + 2, c + 3, -1, 1);
    const HostMatrix<float> host = big.block(1, 1, r, c);
    const auto parent = to_device(big);
    const MatrixView<const float> view = parent.view().block(1, 1, r, c);
    for (auto [t, maxval] : params)
      for (auto [type, code] : types()) {
        CAPTURE(r, c, t, maxval, code);
        cv::Mat want;
        cv::threshold(to_cv(host), want, t, maxval, code);
        poison_next<float>(r, c, view.stream());
        CHECK(to_eigen(threshold(view, t, maxval, type)) == from_cv<float>(want));
      }
  }
}

namespace {

/// threshold of `view` (its host copy `host`) against cv::threshold, every type, exactly.
template <class T>
void check_threshold_view(const MatrixView<const T>& view, const HostMatrix<T>& host, double t, double maxval) {
  for (auto [type, code] : types()) {
    CAPTURE(view.rows(), view.cols(), view.stride(), t, maxval, code);
    cv::Mat want;
    cv::threshold(to_cv(host), want, t, maxval, code);
    poison_next<T>(view.rows(), view.cols(), view.stream());
    CHECK(to_eigen(threshold(view, t, maxval, type)) == from_cv<T>(want));
  }
}

/// Dense images (threshold's flat 16-byte path, with tails of every length) and views that are
/// contiguous or one row, whose start is 16-byte aligned (the flat path too) or not (row by
/// row): blocks of whole rows from row 1, 2 and 16, one row from column 1 and from the 16-byte
/// column.
template <class T>
void threshold_stream_cases(double lo, double hi, double t, double maxval) {
  const std::vector<Shape> shapes = {{1, 1}, {1, 3}, {1, 16}, {1, 31}, {2, 8}, {3, 5}, {13, 17}, {64, 64}, {97, 131}};
  for (auto [r, c] : shapes) {
    const HostMatrix<T> big = random_matrix<T>(r + 16, c + 16 / static_cast<Index>(sizeof(T)), lo, hi);
    const auto parent = to_device(big);
    const HostMatrix<T> host = big.block(0, 0, r, c);
    const auto dense = to_device(host);
    check_threshold_view<T>(dense.view(), host, t, maxval);
    for (Index r0 : {1, 2, 16}) {  // whole rows: contiguous, aligned iff r0 * cols * sizeof(T) % 16 == 0
      const HostMatrix<T> h = big.block(r0, 0, r, big.cols());
      check_threshold_view<T>(parent.view().block(r0, 0, r, big.cols()), h, t, maxval);
    }
    for (Index c0 : {Index{1}, 16 / static_cast<Index>(sizeof(T))}) {  // one row
      const HostMatrix<T> h = big.block(1, c0, 1, c);
      check_threshold_view<T>(parent.view().block(1, c0, 1, c), h, t, maxval);
    }
  }
}

}  // namespace

TEST_CASE("threshold streams dense images, row blocks and single rows (u8, f32)", "[image][intensity][threshold]") {
  threshold_stream_cases<std::uint8_t>(0, 255, 100, 200);
  threshold_stream_cases<float>(-1, 1, 0.25, 2.5);
}

TEST_CASE("threshold of a dense 4097x4095 image matches cv::threshold (u8, f32)", "[image][intensity][threshold][large]") {
  const HostMatrix<std::uint8_t> h8 = random_matrix<std::uint8_t>(4097, 4095, 0, 255);
  check_threshold_view<std::uint8_t>(to_device(h8).view(), h8, 77, 250);
  const HostMatrix<float> hf = random_matrix<float>(4097, 4095, -1, 1);
  check_threshold_view<float>(to_device(hf).view(), hf, -0.125, 3);
}
#endif

TEST_CASE("intensity: bad parameters are typed errors thrown before any launch", "[image][intensity][errors]") {
  const HostMatrix<std::uint8_t> h = random_matrix<std::uint8_t>(5, 6, 0, 255);
  const auto img = to_device(h);
  const auto f = to_device(random_matrix<float>(5, 6));
  CHECK_THROWS_AS(threshold(img, 10, 255, static_cast<Threshold>(17)), std::invalid_argument);
  CHECK_THROWS_AS(threshold(img, NAN, 255, Threshold::binary), std::invalid_argument);
  CHECK_THROWS_AS(threshold(img, 10, INFINITY, Threshold::binary), std::invalid_argument);
  CHECK_THROWS_AS(threshold(f, 0.5, 1, Threshold::otsu), std::invalid_argument);
  CHECK_THROWS_WITH(threshold(f, 0.5, 1, Threshold::otsu), contains("u8"));
  CHECK_THROWS_AS(threshold(f, 0.5, 1, static_cast<Threshold>(-1)), std::invalid_argument);
  // histogram refuses a view of 2^31 pixels or more (its int32 counts) before anything reads it;
  // equalize_hist and Otsu count in 64 bits and take any size (test_large).
  const MatrixView<const std::uint8_t> huge = wrap(img.data(), Index{1} << 16, Index{1} << 15, Index{1} << 15, img.stream());
  CHECK_THROWS_AS(histogram(huge), shape_error);
  // Empty images: an all-zero histogram, empty results.
  const DeviceMatrix<std::uint8_t> empty(0, 3);
  CHECK(to_eigen(histogram(empty)).isZero());
  CHECK(equalize_hist(empty).rows() == 0);
  CHECK(threshold(empty, 1, 2, Threshold::otsu).cols() == 3);
  CHECK(otsu_threshold(empty) == 0.0);
  CHECK(to_eigen(img) == h);
}

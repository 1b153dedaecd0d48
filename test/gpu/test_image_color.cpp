// split_channels / merge_channels against cv::split / cv::merge (exact), load_rgb's split on the
// device, and rgb_to_gray, gray_to_rgb, rgb <-> hsv, rgb <-> ycrcb against cv::cvtColor: u8
// within one level (hue within one step of its circle), f32 within 1e-5 relative; planes as
// views at odd offsets, outputs poisoned, odd sizes; mismatched planes are shape_errors.
#include "support/opencv.hpp"

#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {

using Shape = std::pair<Index, Index>;

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {{1, 1}, {1, 7}, {7, 1}, {13, 17}, {64, 33}, {257, 129}, {4097, 5}};
  return s;
}

/// Three random planes of rows x cols as views at odd offsets, with their host copies. u8 in
/// [0, 255]; f32 in [lo, hi] per plane.
template <class T>
struct Planes {
  std::array<HostMatrix<T>, 3> host;
  std::array<DeviceMatrix<T>, 3> parent;
  std::array<MatrixView<const T>, 3> view;
  Planes(Index rows, Index cols, std::array<std::pair<double, double>, 3> range = {{{0, 255}, {0, 255}, {0, 255}}}) {
    for (int k = 0; k < 3; ++k) {
      const HostMatrix<T> big = random_matrix<T>(rows + 2, cols + 5, range[k].first, range[k].second);
      host[k] = big.block(1, 2 + k, rows, cols);
      parent[k] = to_device(big);
      view[k] = parent[k].view().block(1, 2 + k, rows, cols);
    }
  }
};

/// Poisons the next `n` allocations of rows x cols on `stream` (the planes an operation returns):
/// all n poisoned blocks are held at once, then freed.
template <class T>
void poison_planes(int n, Index rows, Index cols, const Stream& stream) {
  if (rows * cols == 0) return;
  std::vector<DeviceMatrix<T>> held;
  for (int k = 0; k < n; ++k) held.push_back(DeviceMatrix<T>::constant(rows, cols, poison_value<T>(), stream));
}

/// The planes interleaved, as OpenCV holds a colour image.
template <class T>
HostMatrix<T> interleave(const std::array<HostMatrix<T>, 3>& p) {
  HostMatrix<T> out(p[0].rows(), 3 * p[0].cols());
  for (Index i = 0; i < out.rows(); ++i)
    for (Index j = 0; j < p[0].cols(); ++j)
      for (int k = 0; k < 3; ++k) out(i, 3 * j + k) = p[k](i, j);
  return out;
}

/// |got - want| within one level (u8) or 1e-5 relative (f32); `circle` > 0: the difference is
/// taken around a circle of that size (hue).
template <class T>
void check_plane(const HostMatrix<T>& got, const HostMatrix<T>& want, double circle = 0) {
  REQUIRE(got.rows() == want.rows());
  REQUIRE(got.cols() == want.cols());
  Index bad = 0, first = -1;
  for (Index i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got.data()[i]), w = static_cast<double>(want.data()[i]);
    double d = std::abs(g - w);
    if (circle > 0) d = std::min(d, circle - d);
    const double lim = std::is_same_v<T, std::uint8_t> ? 1.0 : 1e-5 * std::max(1.0, std::abs(w));
    if (!(d <= lim)) {
      if (first < 0) first = i;
      ++bad;
    }
  }
  if (bad > 0) {
    INFO("first mismatch at " << first << ": got " << +got.data()[first] << ", OpenCV " << +want.data()[first]);
    CHECK(bad == 0);
  }
}

}  // namespace

DEVMAT_OPENCV_MISSING_CASE("[image][color]")

#if DEVMAT_TEST_HAVE_OPENCV
namespace {

/// The channel `k` of an interleaved OpenCV result.
template <class T>
HostMatrix<T> channel(const cv::Mat& m, int k) {
  std::vector<cv::Mat> parts;
  cv::split(m, parts);
  return from_cv<T>(parts[static_cast<std::size_t>(k)]);
}

template <class T, class Op>
void check_cvt3(const char* name, int code, Op op, std::array<std::pair<double, double>, 3> range, double circle0 = 0) {
  for (auto [r, c] : shapes()) {
    CAPTURE(name, r, c);
    const Planes<T> in(r, c, range);
    poison_planes<T>(3, r, c, in.view[0].stream());
    const std::array<DeviceMatrix<T>, 3> got = op(in.view[0], in.view[1], in.view[2]);
    cv::Mat want;
    cv::cvtColor(to_cv(interleave(in.host), 3), want, code);
    for (int k = 0; k < 3; ++k) {
      CAPTURE(k);
      check_plane(to_eigen(got[static_cast<std::size_t>(k)]), channel<T>(want, k), k == 0 ? circle0 : 0);
    }
  }
}

}  // namespace

TEMPLATE_TEST_CASE("split_channels and merge_channels match cv::split and cv::merge", "[image][color][split]",
                   std::uint8_t, float) {
  for (auto [r, c] : shapes())
    for (int n = 1; n <= 4; ++n) {
      CAPTURE(r, c, n);
      // An interleaved image as a view at an odd offset.
      const HostMatrix<TestType> big = random_matrix<TestType>(r + 2, n * c + 3, 0, 255);
      const HostMatrix<TestType> host = big.block(1, 1, r, n * c);
      const auto parent = to_device(big);
      const MatrixView<const TestType> view = parent.view().block(1, 1, r, n * c);
      poison_planes<TestType>(n, r, c, view.stream());
      const std::vector<DeviceMatrix<TestType>> planes = split_channels(view, n);
      REQUIRE(planes.size() == static_cast<std::size_t>(n));
      std::vector<cv::Mat> want;
      cv::split(to_cv(host, n), want);
      std::vector<MatrixView<const TestType>> views;
      for (int k = 0; k < n; ++k) {
        CHECK(to_eigen(planes[static_cast<std::size_t>(k)]) == from_cv<TestType>(want[static_cast<std::size_t>(k)]));
        views.push_back(planes[static_cast<std::size_t>(k)]);
      }
      poison_next<TestType>(r, n * c, view.stream());
      CHECK(to_eigen(merge_channels(views)) == host);
    }
}

TEST_CASE("rgb_to_gray and gray_to_rgb match cv::cvtColor", "[image][color][gray]") {
  for (auto [r, c] : shapes()) {
    CAPTURE(r, c);
    const Planes<std::uint8_t> in8(r, c);
    poison_next<std::uint8_t>(r, c, in8.view[0].stream());
    cv::Mat want;
    cv::cvtColor(to_cv(interleave(in8.host), 3), want, cv::COLOR_RGB2GRAY);
    check_plane(to_eigen(rgb_to_gray(in8.view[0], in8.view[1], in8.view[2])), from_cv<std::uint8_t>(want));
    const Planes<float> inf(r, c, {{{0, 1}, {0, 1}, {0, 1}}});
    poison_next<float>(r, c, inf.view[0].stream());
    cv::cvtColor(to_cv(interleave(inf.host), 3), want, cv::COLOR_RGB2GRAY);
    check_plane(to_eigen(rgb_to_gray(inf.view[0], inf.view[1], inf.view[2])), from_cv<float>(want));
    // gray_to_rgb: three exact copies.
    poison_planes<std::uint8_t>(3, r, c, in8.view[0].stream());
    const Rgb8 rgb = gray_to_rgb(in8.view[1]);
    for (const auto& p : rgb) CHECK(to_eigen(p) == in8.host[1]);
    poison_planes<float>(3, r, c, inf.view[0].stream());
    const RgbF rgbf = gray_to_rgb(inf.view[2]);
    for (const auto& p : rgbf) CHECK(to_eigen(p) == inf.host[2]);
  }
}

TEST_CASE("rgb <-> hsv and rgb <-> ycrcb match cv::cvtColor (u8)", "[image][color][hsv][ycrcb]") {
  using P = const MatrixView<const std::uint8_t>&;
  const std::array<std::pair<double, double>, 3> full = {{{0, 255}, {0, 255}, {0, 255}}};
  check_cvt3<std::uint8_t>("rgb_to_hsv", cv::COLOR_RGB2HSV, [](P a, P b, P c) { return rgb_to_hsv(a, b, c); }, full, 180);
  check_cvt3<std::uint8_t>("hsv_to_rgb", cv::COLOR_HSV2RGB, [](P a, P b, P c) { return hsv_to_rgb(a, b, c); },
                           {{{0, 179}, {0, 255}, {0, 255}}});
  check_cvt3<std::uint8_t>("rgb_to_ycrcb", cv::COLOR_RGB2YCrCb, [](P a, P b, P c) { return rgb_to_ycrcb(a, b, c); }, full);
  check_cvt3<std::uint8_t>("ycrcb_to_rgb", cv::COLOR_YCrCb2RGB, [](P a, P b, P c) { return ycrcb_to_rgb(a, b, c); }, full);
}

TEST_CASE("rgb <-> hsv and rgb <-> ycrcb match cv::cvtColor (f32)", "[image][color][hsv][ycrcb]") {
  using P = const MatrixView<const float>&;
  const std::array<std::pair<double, double>, 3> unit = {{{0, 1}, {0, 1}, {0, 1}}};
  check_cvt3<float>("rgb_to_hsv", cv::COLOR_RGB2HSV, [](P a, P b, P c) { return rgb_to_hsv(a, b, c); }, unit, 360);
  check_cvt3<float>("hsv_to_rgb", cv::COLOR_HSV2RGB, [](P a, P b, P c) { return hsv_to_rgb(a, b, c); },
                    {{{0, 359.99}, {0, 1}, {0, 1}}});
  check_cvt3<float>("rgb_to_ycrcb", cv::COLOR_RGB2YCrCb, [](P a, P b, P c) { return rgb_to_ycrcb(a, b, c); }, unit);
  check_cvt3<float>("ycrcb_to_rgb", cv::COLOR_YCrCb2RGB, [](P a, P b, P c) { return ycrcb_to_rgb(a, b, c); }, unit);
}

TEST_CASE("every u8 colour converts as cv::cvtColor does", "[image][color][hsv][ycrcb][large]") {
  // All 2^24 RGB triples as a 4096x4096 image: R = low byte, G = middle, B = high.
  HostMatrix<std::uint8_t> r(4096, 4096), g(4096, 4096), b(4096, 4096);
  for (Index i = 0; i < r.size(); ++i) {
    r.data()[i] = static_cast<std::uint8_t>(i & 255);
    g.data()[i] = static_cast<std::uint8_t>((i >> 8) & 255);
    b.data()[i] = static_cast<std::uint8_t>((i >> 16) & 255);
  }
  const auto dr = to_device(r), dg = to_device(g), db = to_device(b);
  const cv::Mat rgb = to_cv(interleave<std::uint8_t>({r, g, b}), 3);
  cv::Mat want;
  cv::cvtColor(rgb, want, cv::COLOR_RGB2GRAY);
  check_plane(to_eigen(rgb_to_gray(dr, dg, db)), from_cv<std::uint8_t>(want));
  for (auto [code, circle] : {std::pair{cv::COLOR_RGB2HSV, 180.0}, {cv::COLOR_RGB2YCrCb, 0.0}, {cv::COLOR_YCrCb2RGB, 0.0}}) {
    CAPTURE(code);
    cv::cvtColor(rgb, want, code);
    const Rgb8 got = code == cv::COLOR_RGB2HSV ? rgb_to_hsv(dr, dg, db)
                     : code == cv::COLOR_RGB2YCrCb ? rgb_to_ycrcb(dr, dg, db)
                                                   : ycrcb_to_rgb(dr, dg, db);
    for (int k = 0; k < 3; ++k) check_plane(to_eigen(got[static_cast<std::size_t>(k)]), channel<std::uint8_t>(want, k), k == 0 ? circle : 0);
  }
}
#endif

TEST_CASE("colour: mismatched planes and bad channel counts are shape_errors before any launch", "[image][color][errors]") {
  const HostMatrix<std::uint8_t> h = random_matrix<std::uint8_t>(4, 6, 0, 255);
  const auto a = to_device(h);
  const auto b = to_device(random_matrix<std::uint8_t>(4, 5, 0, 255));
  CHECK_THROWS_AS(rgb_to_gray(a, a, b), shape_error);
  CHECK_THROWS_AS(rgb_to_hsv(a, b, a), shape_error);
  CHECK_THROWS_AS(hsv_to_rgb(b, a, a), shape_error);
  CHECK_THROWS_AS(rgb_to_ycrcb(a, a, b), shape_error);
  CHECK_THROWS_AS(ycrcb_to_rgb(a, b, a), shape_error);
  CHECK_THROWS_AS(split_channels(a, 4), shape_error);  // 6 is not a multiple of 4
  CHECK_THROWS_AS(split_channels(a, 0), shape_error);
  CHECK_THROWS_AS(split_channels(a, 5), shape_error);
  CHECK_THROWS_AS(merge_channels(std::vector<MatrixView<const std::uint8_t>>{}), shape_error);
  CHECK_THROWS_AS(merge_channels(std::vector<MatrixView<const std::uint8_t>>{a, b}), shape_error);
  CHECK_THROWS_AS(merge_channels(std::vector<MatrixView<const std::uint8_t>>{a, a, a, a, a}), shape_error);
  const auto f = to_device(random_matrix<float>(4, 6));
  const auto g = to_device(random_matrix<float>(3, 6));
  CHECK_THROWS_AS(rgb_to_gray(f, g, f), shape_error);
  CHECK_THROWS_WITH(rgb_to_gray(f, g, f), contains("rgb_to_gray"));
  CHECK(to_eigen(a) == h);  // untouched
}

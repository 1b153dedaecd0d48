// resize, warp_affine, flip and rotate90 against OpenCV 4 on the CPU (support/opencv.hpp), u8
// and f32, on sizes that break tiling (1x1, 1xN, Nx1, primes, 4097x4095), regions of interest
// at odd offsets, outputs poisoned: exact for nearest, flip and rotate; u8 interpolation within
// one grey level, f32 within 1e-5 relative. Bad parameters are typed errors thrown before any
// launch (no OpenCV needed for those).
#include "support/image_small.hpp"
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

const std::vector<Shape>& source_shapes() {
  static const std::vector<Shape> shapes = {{1, 1}, {1, 7}, {7, 1}, {2, 2}, {13, 17}, {31, 29}, {64, 64}, {97, 131}, {257, 33}};
  return shapes;
}

/// A random image of rows x cols as a view at an odd offset (1, 3) inside a larger matrix, with
/// its host copy. u8 in [0, 255]; f32 in [0, 255] too, as an image would be.
template <class T>
struct Roi {
  HostMatrix<T> host;
  DeviceMatrix<T> parent;
  MatrixView<const T> view;
  Roi(Index rows, Index cols, bool offset = true) {
    const Index dr = offset ? 1 : 0, dc = offset ? 3 : 0;
    const HostMatrix<T> big = random_matrix<T>(rows + 2 * dr, cols + 2 * dc, 0, 255);
    host = big.block(dr, dc, rows, cols);
    parent = to_device(big);
    view = parent.view().block(dr, dc, rows, cols);
  }
};

/// |got - want| <= tol (u8: grey levels) or <= tol max(1, |want|) (f32), counted over all pixels;
/// the first mismatch is reported.
template <class T>
void check_close(const HostMatrix<T>& got, const HostMatrix<T>& want, double tol) {
  REQUIRE(got.rows() == want.rows());
  REQUIRE(got.cols() == want.cols());
  Index bad = 0, first = -1;
  for (Index i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got.data()[i]), w = static_cast<double>(want.data()[i]);
    const double lim = std::is_floating_point_v<T> ? tol * std::max(1.0, std::abs(w)) : tol;
    if (!(std::abs(g - w) <= lim)) {
      if (first < 0) first = i;
      ++bad;
    }
  }
  if (bad > 0) {
    const Index c = got.cols();
    INFO("first mismatch at (" << first / c << ", " << first % c << "): got " << +got.data()[first] << ", OpenCV "
                               << +want.data()[first]);
    CHECK(bad == 0);
  }
}

template <class T>
double interp_tol() {
  return std::is_same_v<T, std::uint8_t> ? 1.0 : 1e-5;
}

const char* interp_name(Interp i) { return i == Interp::nearest ? "nearest" : i == Interp::linear ? "linear" : "area"; }

int cv_interp(Interp i) {
  return i == Interp::nearest ? cv::INTER_NEAREST : i == Interp::linear ? cv::INTER_LINEAR : cv::INTER_AREA;
}

}  // namespace

DEVMAT_OPENCV_MISSING_CASE("[image][geometry]")

#if DEVMAT_TEST_HAVE_OPENCV
namespace {

template <class T>
void check_resize(const Roi<T>& src, Index rows, Index cols, Interp interp) {
  CAPTURE(src.host.rows(), src.host.cols(), rows, cols, interp_name(interp));
  poison_next<T>(rows, cols, src.view.stream());
  const HostMatrix<T> got = to_eigen(resize(src.view, rows, cols, interp));
  cv::Mat want;
  cv::resize(to_cv(src.host), want, cv::Size(static_cast<int>(cols), static_cast<int>(rows)), 0, 0, cv_interp(interp));
  check_close(got, from_cv<T>(want), interp == Interp::nearest ? 0.0 : interp_tol<T>());
}

template <class T>
void resize_cases() {
  for (auto [r, c] : source_shapes()) {
    const Roi<T> src(r, c);
    // Shrinking, enlarging, both at once, integer factors (OpenCV's fast area path), 1 pixel.
    const std::vector<Shape> outs = {{1, 1},         {r, c},         {2 * r, 2 * c},     {3 * r + 1, c + 2},
                                     {(r + 1) / 2, (c + 1) / 2},     {std::max<Index>(r / 3, 1), std::max<Index>(c / 3, 1)},
                                     {r + 5, std::max<Index>(c / 2, 1)}, {7, 5}};
    for (auto [orows, ocols] : outs)
      for (Interp interp : {Interp::nearest, Interp::linear, Interp::area}) check_resize(src, orows, ocols, interp);
  }
  // Fresh random shapes and ratios.
  for (int t = 0; t < 6; ++t) {
    std::uniform_int_distribution<Index> d(1, 300);
    const Roi<T> src(d(rng()), d(rng()));
    const Index orows = d(rng()), ocols = d(rng());
    for (Interp interp : {Interp::nearest, Interp::linear, Interp::area}) check_resize(src, orows, ocols, interp);
  }
}

}  // namespace

TEST_CASE("resize matches cv::resize (u8)", "[image][geometry][resize]") { resize_cases<std::uint8_t>(); }
TEST_CASE("resize matches cv::resize (f32)", "[image][geometry][resize]") { resize_cases<float>(); }

TEMPLATE_TEST_CASE("resize of a 4097x4095 image matches cv::resize", "[image][geometry][resize][large]", std::uint8_t,
                   float) {
  const Roi<TestType> src(4097, 4095);
  for (Interp interp : {Interp::nearest, Interp::linear, Interp::area}) {
    check_resize(src, 2048, 2047, interp);
    check_resize(src, 6001, 5999, interp);
  }
}

namespace {

/// A 2 rows x 2 cols image resized to rows x cols (area and linear: the halving kernel) against
/// cv::resize, u8 exactly (OpenCV's fast area path rounds the 2x2 sum (s + 2) >> 2, and takes
/// that path for INTER_LINEAR too), f32 within 1e-5: dense (16-byte loads where the output row
/// is aligned), at an odd offset (pixel by pixel), and from an aligned column of a parent whose
/// stride is a multiple of 16 bytes.
template <class T>
void half_cases(Index r, Index c) {
  const double tol = std::is_same_v<T, std::uint8_t> ? 0.0 : 1e-5;
  const Roi<T> dense(2 * r, 2 * c, false), odd(2 * r, 2 * c, true);
  const Index vec = 16 / static_cast<Index>(sizeof(T));
  const Index pc = (2 * c + 2 * vec + vec - 1) / vec * vec;  // parent cols: a multiple of 16 bytes
  const HostMatrix<T> big = random_matrix<T>(2 * r + 2, pc, 0, 255);
  const auto parent = to_device(big);
  const MatrixView<const T> aligned = parent.view().block(1, vec, 2 * r, 2 * c);
  const HostMatrix<T> aligned_host = big.block(1, vec, 2 * r, 2 * c);
  for (Interp interp : {Interp::area, Interp::linear}) {
    CAPTURE(r, c, interp_name(interp));
    for (const Roi<T>* src : {&dense, &odd}) {
      poison_next<T>(r, c, src->view.stream());
      const HostMatrix<T> got = to_eigen(resize(src->view, r, c, interp));
      cv::Mat want;
      cv::resize(to_cv(src->host), want, cv::Size(static_cast<int>(c), static_cast<int>(r)), 0, 0, cv_interp(interp));
      check_close(got, from_cv<T>(want), tol);
    }
    poison_next<T>(r, c, aligned.stream());
    const HostMatrix<T> got = to_eigen(resize(aligned, r, c, interp));
    cv::Mat want;
    cv::resize(to_cv(aligned_host), want, cv::Size(static_cast<int>(c), static_cast<int>(r)), 0, 0, cv_interp(interp));
    check_close(got, from_cv<T>(want), tol);
  }
}

}  // namespace

TEMPLATE_TEST_CASE("resize to exactly half size matches cv::resize's fast area path", "[image][geometry][resize]",
                   std::uint8_t, float) {
  for (auto [r, c] : std::vector<Shape>{{1, 1}, {1, 9}, {9, 1}, {3, 5}, {4, 8}, {13, 17}, {31, 29}, {64, 64}, {97, 131}})
    half_cases<TestType>(r, c);
  std::uniform_int_distribution<Index> d(1, 200);
  for (int t = 0; t < 3; ++t) half_cases<TestType>(d(rng()), d(rng()));
}

TEMPLATE_TEST_CASE("resize to half size: the cache-streaming halving kernel equals the default one",
                   "[image][geometry][resize][half_cs]", std::uint8_t, float) {
  // Dense (vector loads), at an odd offset (pixel by pixel), widths around the 32 threads x
  // kHalfVec outputs of a block row; outputs poisoned differently, compared exactly, and with
  // cv::resize (u8 exactly, f32 within 1e-5).
  for (auto [r, c] : std::vector<Shape>{{1, 1}, {3, 5}, {9, 127}, {8, 128}, {17, 129}, {31, 257}, {2048, 2047}, {2048, 2048}})
    for (const bool offset : {false, true}) {
      CAPTURE(r, c, offset);
      const Roi<TestType> src(2 * r, 2 * c, offset);
      const Stream s = src.view.stream();
      const bool f32 = std::is_same_v<TestType, float>;
      DeviceMatrix<TestType> plain = DeviceMatrix<TestType>::constant(r, c, f32 ? poison_value<TestType>() : TestType(0), s);
      DeviceMatrix<TestType> cs = DeviceMatrix<TestType>::constant(r, c, f32 ? poison_value<TestType>() : TestType(255), s);
      small::resize_half(s.native(), src.view.data(), src.view.stride(), plain.data(), r, c, false);
      small::resize_half(s.native(), src.view.data(), src.view.stride(), cs.data(), r, c, true);
      const HostMatrix<TestType> got = to_eigen(cs);
      check_close(got, to_eigen(plain), 0.0);
      cv::Mat want;
      cv::resize(to_cv(src.host), want, cv::Size(static_cast<int>(c), static_cast<int>(r)), 0, 0, cv::INTER_AREA);
      check_close(got, from_cv<TestType>(want), f32 ? 1e-5 : 0.0);
    }
}

TEMPLATE_TEST_CASE("resize of a 4096x4094 image to half size matches cv::resize", "[image][geometry][resize][large]",
                   std::uint8_t, float) {
  half_cases<TestType>(2048, 2047);
}

namespace {

/// resize's INTER_AREA shrink of a random sr x sc view (odd offset) to r x c by both kernels
/// (support/image_small.hpp: geom_map_kernel over ResizeArea, and resize_area_tab_kernel, whose
/// footprints come from shared memory), each into a dense output poisoned differently: the same
/// arithmetic, so identical results (f32: within 1e-6 relative, should the compiler contract the
/// two inlined copies differently), and the table kernel's within a grey level (f32: 1e-5) of
/// cv::resize.
template <class T>
void area_table_case(Index sr, Index sc, Index r, Index c) {
  CAPTURE(sr, sc, r, c);
  const Roi<T> src(sr, sc);
  const Stream s = src.view.stream();
  const T poison_a = std::is_same_v<T, float> ? poison_value<T>() : T(0);
  const T poison_b = std::is_same_v<T, float> ? poison_value<T>() : T(255);
  DeviceMatrix<T> per_pixel = DeviceMatrix<T>::constant(r, c, poison_a, s);
  DeviceMatrix<T> table = DeviceMatrix<T>::constant(r, c, poison_b, s);
  small::resize_area(s.native(), src.view.data(), src.view.stride(), sr, sc, per_pixel.data(), r, c, false);
  small::resize_area(s.native(), src.view.data(), src.view.stride(), sr, sc, table.data(), r, c, true);
  const HostMatrix<T> got = to_eigen(table);
  check_close(got, to_eigen(per_pixel), std::is_same_v<T, float> ? 1e-6 : 0.0);
  cv::Mat want;
  cv::resize(to_cv(src.host), want, cv::Size(static_cast<int>(c), static_cast<int>(r)), 0, 0, cv::INTER_AREA);
  check_close(got, from_cv<T>(want), interp_tol<T>());
}

}  // namespace

TEMPLATE_TEST_CASE("resize area: the table kernel equals the per-pixel kernel and cv::resize", "[image][geometry][resize][area_tab]",
                   std::uint8_t, float) {
  // Shrinks by non-integer factors (and 1, and integer ones but not half): a block's tile is
  // 128 columns x 8 rows, so output widths 127/128/129/131 (the last not a multiple of 4: no
  // vector stores), 1 and 2 rows, heights 7/8/9/17.
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{1, 1}, {1, 1}},       {{7, 1}, {2, 1}},         {{1, 7}, {1, 2}},       {{13, 17}, {4, 5}},
      {{31, 29}, {10, 9}},    {{97, 131}, {32, 43}},    {{257, 33}, {85, 10}},  {{22, 382}, {7, 127}},
      {{25, 385}, {8, 128}},  {{28, 388}, {9, 129}},    {{53, 394}, {17, 131}}, {{9, 300}, {9, 100}},
      {{300, 9}, {100, 3}},   {{64, 64}, {21, 21}},     {{131, 997}, {131, 257}}, {{4096, 4096}, {1365, 1365}}};
  for (const auto& [in, o] : cases) area_table_case<TestType>(in.first, in.second, o.first, o.second);
  std::uniform_int_distribution<Index> d(1, 400);
  for (int t = 0; t < 4; ++t) {
    const Index sr = d(rng()), sc = d(rng());
    area_table_case<TestType>(sr, sc, std::uniform_int_distribution<Index>(1, sr)(rng()),
                              std::uniform_int_distribution<Index>(1, sc)(rng()));
  }
}

TEMPLATE_TEST_CASE("resize area: the table kernel strides over more tile rows than grid.y holds",
                   "[image][geometry][resize][area_tab][large]", std::uint8_t, float) {
  area_table_case<TestType>(600001, 5, 524287, 3);  // 65536 tile rows of 8, grid.y 65535
}

namespace {

/// A source -> output affine map: rotate by `deg` about the image centre, scale, shift.
Affine rotation(double deg, double scale, double cx, double cy, double tx, double ty) {
  const cv::Mat m = cv::getRotationMatrix2D(cv::Point2f(static_cast<float>(cx), static_cast<float>(cy)), deg, scale);
  return {m.at<double>(0, 0), m.at<double>(0, 1), m.at<double>(0, 2) + tx,
          m.at<double>(1, 0), m.at<double>(1, 1), m.at<double>(1, 2) + ty};
}

template <class T>
void check_warp(const Roi<T>& src, const Affine& m, Index rows, Index cols, Interp interp, Border border, double value) {
  CAPTURE(src.host.rows(), src.host.cols(), rows, cols, interp_name(interp), border == Border::replicate, value);
  CAPTURE(m[0], m[1], m[2], m[3], m[4], m[5]);
  poison_next<T>(rows, cols, src.view.stream());
  const HostMatrix<T> got = to_eigen(warp_affine(src.view, m, rows, cols, interp, border, value));
  cv::Mat want;
  const cv::Mat cm = (cv::Mat_<double>(2, 3) << m[0], m[1], m[2], m[3], m[4], m[5]);
  cv::warpAffine(to_cv(src.host), want, cm, cv::Size(static_cast<int>(cols), static_cast<int>(rows)), cv_interp(interp),
                 border == Border::replicate ? cv::BORDER_REPLICATE : cv::BORDER_CONSTANT, cv::Scalar(value));
  // Nearest is exact; linear u8 too in OpenCV's fixed point, f32 to float rounding.
  check_close(got, from_cv<T>(want), interp == Interp::nearest ? 0.0 : interp_tol<T>());
}

template <class T>
void warp_cases() {
  std::uniform_real_distribution<double> angle(-180, 180), scale(0.4, 2.5), shift(-20, 20), value(-10, 300);
  for (auto [r, c] : source_shapes()) {
    const Roi<T> src(r, c);
    const std::vector<std::pair<Affine, Shape>> maps = {
        {{1, 0, 0, 0, 1, 0}, {r, c}},                        // identity
        {{1, 0, 2.5, 0, 1, -1.25}, {r + 3, c + 4}},          // a shift by fractions of a pixel
        {{0.5, 0, 0, 0, 0.5, 0}, {(r + 1) / 2, (c + 1) / 2}},  // a halving
        {rotation(90, 1, c / 2.0, r / 2.0, 0, 0), {c, r}},
        {rotation(angle(rng()), scale(rng()), c / 2.0, r / 2.0, shift(rng()), shift(rng())), {r + 7, c + 2}},
        {rotation(angle(rng()), scale(rng()), 0, 0, shift(rng()), shift(rng())), {2 * r + 1, 2 * c + 1}},
    };
    for (const auto& [m, out] : maps)
      for (Interp interp : {Interp::nearest, Interp::linear})
        for (Border border : {Border::constant, Border::replicate})
          check_warp(src, m, out.first, out.second, interp, border, value(rng()));
  }
}

}  // namespace

TEST_CASE("warp_affine matches cv::warpAffine (u8)", "[image][geometry][warp]") { warp_cases<std::uint8_t>(); }
TEST_CASE("warp_affine matches cv::warpAffine (f32)", "[image][geometry][warp]") { warp_cases<float>(); }

TEMPLATE_TEST_CASE("flip and rotate90 match cv::flip and cv::rotate", "[image][geometry][flip][rotate]", std::uint8_t,
                   float) {
  std::vector<Shape> shapes = source_shapes();
  shapes.push_back({33, 95});
  shapes.push_back({100, 31});
  for (auto [r, c] : shapes) {
    CAPTURE(r, c);
    const Roi<TestType> src(r, c);
    for (auto [axis, code] : {std::pair{FlipAxis::vertical, 0}, {FlipAxis::horizontal, 1}, {FlipAxis::both, -1}}) {
      CAPTURE(code);
      poison_next<TestType>(r, c, src.view.stream());
      cv::Mat want;
      cv::flip(to_cv(src.host), want, code);
      CHECK(to_eigen(flip(src.view, axis)) == from_cv<TestType>(want));
    }
    for (int k = -1; k <= 5; ++k) {
      CAPTURE(k);
      const int q = ((k % 4) + 4) % 4;
      poison_next<TestType>(q % 2 ? c : r, q % 2 ? r : c, src.view.stream());
      cv::Mat want = to_cv(src.host);
      if (q == 1) cv::rotate(to_cv(src.host), want, cv::ROTATE_90_COUNTERCLOCKWISE);
      if (q == 2) cv::rotate(to_cv(src.host), want, cv::ROTATE_180);
      if (q == 3) cv::rotate(to_cv(src.host), want, cv::ROTATE_90_CLOCKWISE);
      CHECK(to_eigen(rotate90(src.view, k)) == from_cv<TestType>(want));
    }
  }
}

TEMPLATE_TEST_CASE("flip and rotate90 of a 4097x4095 image", "[image][geometry][flip][rotate][large]", std::uint8_t,
                   float) {
  const Roi<TestType> src(4097, 4095);
  cv::Mat want;
  cv::flip(to_cv(src.host), want, -1);
  CHECK(to_eigen(flip(src.view, FlipAxis::both)) == from_cv<TestType>(want));
  cv::rotate(to_cv(src.host), want, cv::ROTATE_90_CLOCKWISE);
  CHECK(to_eigen(rotate90(src.view, -1)) == from_cv<TestType>(want));
  cv::rotate(to_cv(src.host), want, cv::ROTATE_90_COUNTERCLOCKWISE);
  CHECK(to_eigen(rotate90(src.view, 1)) == from_cv<TestType>(want));
}
#endif

TEMPLATE_TEST_CASE("geometry: bad parameters are typed errors thrown before any launch", "[image][geometry][errors]",
                   std::uint8_t, float) {
  const HostMatrix<TestType> host = random_matrix<TestType>(5, 6, 0, 255);
  const auto img = to_device(host);
  const DeviceMatrix<TestType> empty(0, 4);
  CHECK_THROWS_AS(resize(img, 0, 3), shape_error);
  CHECK_THROWS_AS(resize(img, 3, 0), shape_error);
  CHECK_THROWS_AS(resize(img, -1, 3), shape_error);
  CHECK_THROWS_AS(resize(empty, 3, 3), shape_error);
  CHECK_THROWS_AS(resize(img, 3, 3, static_cast<Interp>(7)), std::invalid_argument);
  CHECK_THROWS_WITH(resize(img, 0, 3), contains("resize"));

  const Affine id = {1, 0, 0, 0, 1, 0};
  CHECK_THROWS_AS(warp_affine(img, {1, 2, 0, 2, 4, 0}, 5, 6), std::invalid_argument);  // singular
  CHECK_THROWS_WITH(warp_affine(img, {0, 0, 1, 0, 0, 1}, 5, 6), contains("singular"));
  CHECK_THROWS_AS(warp_affine(img, {1, 0, NAN, 0, 1, 0}, 5, 6), std::invalid_argument);
  CHECK_THROWS_AS(warp_affine(img, id, 5, 6, Interp::area), std::invalid_argument);
  CHECK_THROWS_AS(warp_affine(img, id, 5, 6, Interp::linear, static_cast<Border>(9)), std::invalid_argument);
  CHECK_THROWS_AS(warp_affine(img, id, 5, 6, Interp::linear, Border::constant, INFINITY), std::invalid_argument);
  CHECK_THROWS_AS(warp_affine(img, id, 0, 6), shape_error);
  CHECK_THROWS_AS(warp_affine(empty, id, 5, 6), shape_error);

  CHECK_THROWS_AS(flip(img, static_cast<FlipAxis>(5)), std::invalid_argument);
  // Empty images flip and turn to empty images.
  CHECK(flip(empty, FlipAxis::both).rows() == 0);
  CHECK(rotate90(empty, 1).rows() == 4);
  CHECK(rotate90(empty, 1).cols() == 0);
  // The input is untouched by the failed calls.
  CHECK(to_eigen(img) == host);
}

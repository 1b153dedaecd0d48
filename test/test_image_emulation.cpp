// The image kernels' per-pixel arithmetic, run on the CPU (the expression emulation's CUDA
// stand-in, expr_emu/) against OpenCV 4: resize and warp_affine functors, every u8 colour
// triple through the cvtColor functors, equalize_hist's table and Otsu's threshold from
// histograms. A host test, so CI checks the rounding that the GPU tests check on the device;
// it needs OpenCV and is registered only where the build found it.
// The library headers first: emu_cuda.hpp defines __noinline__ as a macro, which breaks
// headers (gcc 13's libstdc++) that spell __attribute__((__noinline__)) after it.
#include <math.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "support/catch.hpp"

#include "emu_cuda.hpp"
#include "emu_image.hpp"

#include "kernels/image_color.cuh"
#include "kernels/image_geometry.cuh"
#include "kernels/image_intensity.cuh"

using devmat::Index;
namespace d = devmat::detail;

namespace {

template <class T>
cv::Mat random_image(int rows, int cols) {
  cv::Mat m(rows, cols, cv::DataType<T>::type);
  std::uniform_int_distribution<int> dist(0, 255);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) m.at<T>(i, j) = static_cast<T>(dist(emu::rng()));
  return m;
}

/// Pixels of f (y, x) further than the tolerance from `want` (u8: levels; f32: relative).
template <class T, class F>
long long count_bad(const cv::Mat& want, const F& f, double tol) {
  long long bad = 0;
  for (int y = 0; y < want.rows; ++y)
    for (int x = 0; x < want.cols; ++x) {
      const double g = static_cast<double>(f(y, x)), w = static_cast<double>(want.at<T>(y, x));
      double diff = std::abs(g - w);
      if (std::is_floating_point_v<T>) diff /= std::max(1.0, std::abs(w));
      bad += diff > tol;
    }
  return bad;
}

template <class T>
void check_resize(int r, int c, int rows, int cols, int interp) {
  CAPTURE(r, c, rows, cols, interp);
  const cv::Mat src = random_image<T>(r, c);
  cv::Mat want;
  cv::resize(src, want, cv::Size(cols, rows), 0, 0, interp);
  const double inv_x = static_cast<double>(cols) / c, inv_y = static_cast<double>(rows) / r;
  const double sx = 1 / inv_x, sy = 1 / inv_y;
  const T* p = src.ptr<T>();
  const Index ld = static_cast<Index>(src.step1());
  const double tol = std::is_same_v<T, std::uint8_t> ? (interp == cv::INTER_NEAREST ? 0 : 1) : 1e-5;
  long long bad;
  if (interp == cv::INTER_NEAREST)
    bad = count_bad<T>(want, d::ResizeNearest<T>{p, ld, d::NearestIndex{sx, c}, d::NearestIndex{sy, r}}, tol);
  else if (interp == cv::INTER_AREA && sx >= 1 && sy >= 1)
    bad = count_bad<T>(want, d::ResizeArea<T>{p, ld, r, c, sx, sy}, tol);
  else if (interp == cv::INTER_AREA)
    bad = count_bad<T>(want, d::ResizeLinear<T, true>{p, ld, r, c, sx, inv_x, sy, inv_y}, tol);
  else
    bad = count_bad<T>(want, d::ResizeLinear<T, false>{p, ld, r, c, sx, inv_x, sy, inv_y}, tol);
  CHECK(bad == 0);
}

template <class T>
void check_warp(int r, int c, int rows, int cols, const double* m, bool linear, bool replicate, double value) {
  CAPTURE(r, c, rows, cols, linear, replicate, value, m[0], m[1], m[2], m[3], m[4], m[5]);
  const cv::Mat src = random_image<T>(r, c);
  const cv::Mat cm = (cv::Mat_<double>(2, 3) << m[0], m[1], m[2], m[3], m[4], m[5]);
  cv::Mat want;
  cv::warpAffine(src, want, cm, cv::Size(cols, rows), linear ? cv::INTER_LINEAR : cv::INTER_NEAREST,
                 replicate ? cv::BORDER_REPLICATE : cv::BORDER_CONSTANT, cv::Scalar(value));
  // The inverse as src/image_geometry.cu computes it.
  double im[6] = {m[0], m[1], m[2], m[3], m[4], m[5]};
  const double det = 1.0 / (im[0] * im[4] - im[1] * im[3]);
  const double a11 = im[4] * det, a22 = im[0] * det;
  im[0] = a11;
  im[1] *= -det;
  im[3] *= -det;
  im[4] = a22;
  const double b1 = -im[0] * im[2] - im[1] * im[5], b2 = -im[3] * im[2] - im[4] * im[5];
  im[2] = b1;
  im[5] = b2;
  const T cval = std::is_same_v<T, std::uint8_t> ? static_cast<T>(std::lrint(std::fmin(std::fmax(value, 0.), 255.)))
                                                  : static_cast<T>(value);
  const T* p = src.ptr<T>();
  const Index ld = static_cast<Index>(src.step1());
  const double tol = std::is_same_v<T, std::uint8_t> ? 0 : 1e-5;  // u8 exact: OpenCV's integer weights
  long long bad;
  if (linear && replicate)
    bad = count_bad<T>(want, d::WarpAffine<T, true, true>{p, ld, r, c, im[0], im[1], im[2], im[3], im[4], im[5], cval}, tol);
  else if (linear)
    bad = count_bad<T>(want, d::WarpAffine<T, true, false>{p, ld, r, c, im[0], im[1], im[2], im[3], im[4], im[5], cval}, tol);
  else if (replicate)
    bad = count_bad<T>(want, d::WarpAffine<T, false, true>{p, ld, r, c, im[0], im[1], im[2], im[3], im[4], im[5], cval}, tol);
  else
    bad = count_bad<T>(want, d::WarpAffine<T, false, false>{p, ld, r, c, im[0], im[1], im[2], im[3], im[4], im[5], cval}, tol);
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("emulated resize functors match cv::resize", "[image][emulation]") {
  const int shapes[][2] = {{1, 1}, {1, 7}, {7, 1}, {2, 2}, {13, 17}, {31, 29}, {97, 131}, {257, 33}};
  for (const auto& s : shapes) {
    const int r = s[0], c = s[1];
    const int outs[][2] = {{1, 1}, {r, c}, {2 * r, 2 * c}, {3 * r + 1, c + 2}, {(r + 1) / 2, (c + 1) / 2},
                           {std::max(r / 3, 1), std::max(c / 3, 1)}, {r + 5, std::max(c / 2, 1)}, {7, 5}};
    for (const auto& o : outs)
      for (int interp : {cv::INTER_NEAREST, cv::INTER_LINEAR, cv::INTER_AREA}) {
        check_resize<std::uint8_t>(r, c, o[0], o[1], interp);
        check_resize<float>(r, c, o[0], o[1], interp);
      }
  }
}

namespace {

/// resize_half_kernel on src (2 rows x 2 cols, or its block from column 1: no 16-byte loads)
/// against cv::resize to rows x cols with INTER_AREA and INTER_LINEAR (OpenCV takes its fast
/// area path for both): u8 exactly, f32 within 1e-5; grid.y cut to 2 (the rows stride), the
/// output's 16 elements past the end untouched.
template <class T>
void check_half(int rows, int cols, bool offset) {
  CAPTURE(rows, cols, offset, sizeof(T));
  const cv::Mat big = random_image<T>(2 * rows, 2 * cols + 1);
  const cv::Mat src = big(cv::Rect(offset ? 1 : 0, 0, 2 * cols, 2 * rows));
  for (int interp : {cv::INTER_AREA, cv::INTER_LINEAR}) {
    CAPTURE(interp);
    cv::Mat want;
    cv::resize(src, want, cv::Size(cols, rows), 0, 0, interp);
    const T poison = static_cast<T>(13);
    std::vector<T> out(static_cast<std::size_t>(rows * cols + 16), poison);
    const unsigned bx = static_cast<unsigned>((cols + d::kHalfVec<T> - 1) / d::kHalfVec<T> + d::kGeomThreadsX - 1) / d::kGeomThreadsX;
    emu::launch(dim3(bx, std::min(2, (rows + d::kGeomThreadsY - 1) / d::kGeomThreadsY)), dim3(d::kGeomThreadsX, d::kGeomThreadsY),
                [&] { d::resize_half_kernel<T>(src.ptr<T>(), static_cast<Index>(src.step1()), out.data(), rows, cols); });
    const double tol = std::is_same_v<T, std::uint8_t> ? 0 : 1e-5;
    CHECK(count_bad<T>(want, [&](int y, int x) { return out[static_cast<std::size_t>(y) * cols + x]; }, tol) == 0);
    // The cache-streaming loads (kStreamLoads): the same outputs.
    std::vector<T> out_cs(out.size(), poison);
    emu::launch(dim3(bx, std::min(2, (rows + d::kGeomThreadsY - 1) / d::kGeomThreadsY)), dim3(d::kGeomThreadsX, d::kGeomThreadsY),
                [&] { d::resize_half_kernel<T, true>(src.ptr<T>(), static_cast<Index>(src.step1()), out_cs.data(), rows, cols); });
    CHECK(out_cs == out);
    long long margin = 0;
    for (int i = 0; i < 16; ++i) margin += out[static_cast<std::size_t>(rows) * cols + i] != poison;
    CHECK(margin == 0);
  }
}

}  // namespace

TEST_CASE("emulated halving kernel matches cv::resize to half size (area and linear)", "[image][emulation]") {
  const int shapes[][2] = {{1, 1}, {1, 9}, {9, 1}, {2, 8}, {3, 5}, {13, 17}, {17, 64}, {40, 131}, {31, 300}};
  for (const auto& s : shapes)
    for (bool offset : {false, true}) {
      check_half<std::uint8_t>(s[0], s[1], offset);
      check_half<float>(s[0], s[1], offset);
    }
}

namespace {

/// resize_area_tab_kernel (the footprints from shared memory) shrinking a random sr x sc image
/// to rows x cols, grid.y cut to 2 (the loop over tile rows, its barriers), against the
/// ResizeArea functor pixel by pixel (exactly: the same arithmetic) and cv::resize INTER_AREA
/// (u8 within a grey level, f32 1e-5); the output's 16 elements past the end untouched.
template <class T>
void check_area_tab(int sr, int sc, int rows, int cols) {
  CAPTURE(sr, sc, rows, cols, sizeof(T));
  const cv::Mat src = random_image<T>(sr, sc);
  const double sx = 1.0 / (static_cast<double>(cols) / sc), sy = 1.0 / (static_cast<double>(rows) / sr);
  const d::ResizeArea<T> f{src.ptr<T>(), static_cast<Index>(src.step1()), sr, sc, sx, sy};
  const T poison = static_cast<T>(13);
  std::vector<T> out(static_cast<std::size_t>(rows * cols + 16), poison);
  const unsigned bx = static_cast<unsigned>((cols + d::kGeomVec - 1) / d::kGeomVec + d::kGeomThreadsX - 1) / d::kGeomThreadsX;
  emu::launch(dim3(bx, std::min(2, (rows + d::kGeomThreadsY - 1) / d::kGeomThreadsY)), dim3(d::kGeomThreadsX, d::kGeomThreadsY),
              [&] { d::resize_area_tab_kernel<T>(out.data(), rows, cols, cols % d::kGeomVec == 0, f); });
  const auto got = [&](int y, int x) { return out[static_cast<std::size_t>(y) * cols + x]; };
  long long differs = 0;
  for (int y = 0; y < rows; ++y)
    for (int x = 0; x < cols; ++x) differs += !(got(y, x) == f(y, x));
  CHECK(differs == 0);
  cv::Mat want;
  cv::resize(src, want, cv::Size(cols, rows), 0, 0, cv::INTER_AREA);
  CHECK(count_bad<T>(want, got, std::is_same_v<T, std::uint8_t> ? 1.0 : 1e-5) == 0);
  long long margin = 0;
  for (int i = 0; i < 16; ++i) margin += out[static_cast<std::size_t>(rows) * cols + i] != poison;
  CHECK(margin == 0);
}

}  // namespace

TEST_CASE("emulated INTER_AREA shrink with the footprints in shared memory matches the functor and cv::resize",
          "[image][emulation][area_tab]") {
  const int cases[][4] = {{1, 1, 1, 1},     {7, 1, 2, 1},      {1, 7, 1, 2},     {13, 17, 4, 5},   {97, 131, 32, 43},
                          {22, 382, 7, 127}, {25, 385, 8, 128}, {28, 388, 9, 129}, {53, 394, 17, 131}, {60, 800, 25, 257},
                          {9, 300, 9, 100}, {300, 9, 100, 3}};
  for (const auto& c : cases) {
    check_area_tab<std::uint8_t>(c[0], c[1], c[2], c[3]);
    check_area_tab<float>(c[0], c[1], c[2], c[3]);
  }
}

TEST_CASE("emulated warp_affine functors match cv::warpAffine", "[image][emulation]") {
  std::uniform_real_distribution<double> angle(-180, 180), scale(0.4, 2.5), shift(-20, 20), value(-10, 300);
  const int shapes[][2] = {{1, 1}, {1, 7}, {7, 1}, {13, 17}, {64, 64}, {97, 131}};
  for (const auto& s : shapes) {
    const int r = s[0], c = s[1];
    for (int t = 0; t < 6; ++t) {
      const cv::Mat rot = cv::getRotationMatrix2D(cv::Point2f(c / 2.f, r / 2.f), t == 0 ? 90 : angle(emu::rng()),
                                                  t == 0 ? 1 : scale(emu::rng()));
      double m[6] = {rot.at<double>(0, 0), rot.at<double>(0, 1), rot.at<double>(0, 2) + (t ? shift(emu::rng()) : 0),
                     rot.at<double>(1, 0), rot.at<double>(1, 1), rot.at<double>(1, 2) + (t ? shift(emu::rng()) : 0)};
      if (t == 1) {
        const double shifted[6] = {1, 0, 2.5, 0, 1, -1.25};
        std::copy(shifted, shifted + 6, m);
      }
      for (bool linear : {false, true})
        for (bool replicate : {false, true}) {
          const double v = value(emu::rng());
          check_warp<std::uint8_t>(r, c, r + 7, c + 2, m, linear, replicate, v);
          check_warp<float>(r, c, r + 7, c + 2, m, linear, replicate, v);
        }
    }
  }
}

namespace {
/// WarpAffine<T, kLinear, kReplicate> on an r x c source under the inverse map "source = output +
/// (tx, ty)" (whole pixels), at output pixels (y, x) for y < out_rows and x in `xs`, against the
/// source pixel it lands on (or the border). OpenCV cannot be the oracle here: cv::remap asserts
/// sources under 32767 a side, and its 32-bit sums wrap past 2^21 pixels.
template <class T, bool kLinear, bool kReplicate>
long long warp_shift_bad(const std::vector<T>& src, Index r, Index c, double tx, double ty, Index out_rows,
                         const std::vector<Index>& xs) {
  const T cval = static_cast<T>(7);
  const d::WarpAffine<T, kLinear, kReplicate> f{src.data(), c, r, c, 1, 0, tx, 0, 1, ty, cval};
  long long bad = 0;
  for (Index y = 0; y < out_rows; ++y)
    for (Index x : xs) {
      Index sy = y + static_cast<Index>(ty), sx = x + static_cast<Index>(tx);
      T want = cval;
      if (kReplicate) {
        sy = std::min(std::max<Index>(sy, 0), r - 1);
        sx = std::min(std::max<Index>(sx, 0), c - 1);
        want = src[static_cast<std::size_t>(sy * c + sx)];
      } else if (sy >= 0 && sy < r && sx >= 0 && sx < c) {
        want = src[static_cast<std::size_t>(sy * c + sx)];
      }
      bad += f(y, x) != want;
    }
  return bad;
}

template <class T>
void check_warp_shift(Index r, Index c, double tx, double ty, Index out_rows, const std::vector<Index>& xs) {
  CAPTURE(r, c, tx, ty, out_rows);
  std::vector<T> src(static_cast<std::size_t>(r * c));
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& v : src) v = static_cast<T>(byte(emu::rng()));
  CHECK(warp_shift_bad<T, false, false>(src, r, c, tx, ty, out_rows, xs) == 0);
  CHECK(warp_shift_bad<T, false, true>(src, r, c, tx, ty, out_rows, xs) == 0);
  CHECK(warp_shift_bad<T, true, false>(src, r, c, tx, ty, out_rows, xs) == 0);
  CHECK(warp_shift_bad<T, true, true>(src, r, c, tx, ty, out_rows, xs) == 0);
}

std::vector<Index> index_range(Index lo, Index hi, Index step = 1) {
  std::vector<Index> v;
  for (Index i = lo; i < hi; i += step) v.push_back(i);
  return v;
}
}  // namespace

TEST_CASE("emulated warp_affine functors past OpenCV's 16-bit source and 32-bit sums", "[image][emulation]") {
  // A source 40001 wide, output pixels that land past column 32767 (a 16-bit clamp read
  // column 32767 for all of them), and past its last column (the border).
  check_warp_shift<std::uint8_t>(3, 40001, 35000, 0, 3, index_range(0, 5010));
  check_warp_shift<float>(3, 40001, 35000, 0, 3, index_range(0, 5010));
  // The same down the rows: a source 40001 high, output rows that land past row 32767.
  check_warp_shift<std::uint8_t>(40001, 3, 0, 35000, 5010, index_range(0, 3));
  // An output past 2^21 columns whose map cancels: round(x 1024) alone passes 2^31 (it
  // saturated, and the 32-bit sum wrapped), the source column x - 2190000 is inside.
  const std::vector<Index> xs = index_range(0, 2230010, 97);
  std::vector<Index> edge = index_range(2189990, 2190010);
  const std::vector<Index> tail = index_range(2229990, 2230010);
  edge.insert(edge.end(), tail.begin(), tail.end());
  edge.insert(edge.end(), xs.begin(), xs.end());
  check_warp_shift<std::uint8_t>(1, 40001, -2190000, 0, 1, edge);
  check_warp_shift<float>(1, 40001, -2190000, 0, 1, edge);
}

namespace {
/// Every u8 triple (R low byte, G, B high byte) through `f` against cv::cvtColor(code).
template <int NO, class F>
long long cvt_bad_u8(int code, const F& f, int hue_circle) {
  const int n = 1 << 24;
  cv::Mat src(1, n, CV_8UC3);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < 3; ++k) src.ptr<std::uint8_t>()[3 * i + k] = static_cast<std::uint8_t>((i >> (8 * k)) & 255);
  cv::Mat want;
  cv::cvtColor(src, want, code);
  long long bad = 0;
  for (int i = 0; i < n; ++i) {
    const std::uint8_t* a3 = src.ptr<std::uint8_t>() + 3 * i;
    const std::uint8_t a[3] = {a3[0], a3[1], a3[2]};
    std::uint8_t b[NO];
    f(a, b);
    for (int k = 0; k < NO; ++k) {
      int diff = std::abs(int(b[k]) - int(want.ptr<std::uint8_t>()[NO * i + k]));
      if (k == 0 && hue_circle) diff = std::min(diff, hue_circle - diff);
      bad += diff > 1;
    }
  }
  return bad;
}
}  // namespace

TEST_CASE("emulated colour functors match cv::cvtColor on every u8 triple", "[image][emulation]") {
  // u8 gray maps 4 pixels a word (GrayWord): here one pixel in byte 0 of each plane's word.
  const auto gray = [](const std::uint8_t (&a)[3], std::uint8_t (&b)[1]) {
    const unsigned w[3] = {a[0], a[1], a[2]};
    b[0] = static_cast<std::uint8_t>(d::GrayWord{}.bind()(w) & 255u);
  };
  CHECK(cvt_bad_u8<1>(cv::COLOR_RGB2GRAY, gray, 0) == 0);
  CHECK(cvt_bad_u8<3>(cv::COLOR_RGB2YCrCb, d::RgbToYCrCb<std::uint8_t>{}, 0) == 0);
  CHECK(cvt_bad_u8<3>(cv::COLOR_YCrCb2RGB, d::YCrCbToRgb<std::uint8_t>{}, 0) == 0);
  CHECK(cvt_bad_u8<3>(cv::COLOR_RGB2HSV, d::RgbToHsv<std::uint8_t>{}, 180) == 0);
  CHECK(cvt_bad_u8<3>(cv::COLOR_HSV2RGB, d::HsvToRgb<std::uint8_t>{}, 0) == 0);
}

TEST_CASE("emulated histogram_kernel counts strided images a piece of a row at a time", "[image][emulation]") {
  // The strided path in pieces of `seg` pixels (the launcher's 2^24, here small, so that rows
  // span many pieces, a last short one, and blocks take pieces of several rows), and whole rows
  // (seg past cols); the contiguous path; int and 64-bit counts. Against a plain count.
  std::uniform_int_distribution<int> level(0, 255);
  const int shapes[][3] = {{5, 1000, 1003}, {1, 777, 777}, {33, 129, 140}, {3, 64, 64}};
  for (const auto& sh : shapes) {
    const Index r = sh[0], c = sh[1], ld = sh[2];
    std::vector<std::uint8_t> img(static_cast<std::size_t>((r - 1) * ld + c));
    for (auto& v : img) v = static_cast<std::uint8_t>(level(emu::rng()) >> (level(emu::rng()) & 3));
    long long want[256] = {0};
    for (Index y = 0; y < r; ++y)
      for (Index x = 0; x < c; ++x) ++want[img[static_cast<std::size_t>(y * ld + x)]];
    for (Index seg : {Index(7), Index(64), Index(333), Index(5000)})
      for (unsigned blocks : {1u, 5u}) {
        CAPTURE(r, c, ld, seg, blocks);
        std::vector<unsigned long long> h64(256, 0);
        std::vector<int> h32(256, 0);
        const bool contiguous = ld == c;
        emu::launch(dim3(blocks), dim3(d::kHistThreads), [&] {
          d::histogram_kernel<unsigned long long>(img.data(), ld, r, c, contiguous, seg, h64.data());
        });
        emu::launch(dim3(blocks), dim3(d::kHistThreads), [&] {
          d::histogram_kernel<int>(img.data(), ld, r, c, contiguous, seg, h32.data());
        });
        int bad = 0;
        for (int i = 0; i < 256; ++i) bad += static_cast<long long>(h64[i]) != want[i] || h32[i] != want[i];
        CHECK(bad == 0);
      }
  }
}

TEST_CASE("emulated equalize_hist table and Otsu threshold past 2^31 pixels", "[image][emulation]") {
  // Counts OpenCV's ints cannot hold (it stops at 2^31 pixels): the table against the real
  // 255 (cdf - h_first) / (total - h_first) within the float rounding (half a level each way
  // at most, so within 1), and Otsu's level against the same histogram scaled down by 2^12
  // (Otsu's method sees only the proportions).
  for (int t = 0; t < 50; ++t) {
    std::uniform_int_distribution<long long> count(0, 1ll << 30);
    std::uniform_int_distribution<int> level(0, 255);
    unsigned long long hist[256] = {0}, small[256] = {0};
    long long total = 0, small_total = 0;
    const int lo = level(emu::rng()), hi = std::max(lo + 1, level(emu::rng()));
    for (int i = lo; i <= std::min(hi, 255); ++i) {
      small[i] = static_cast<unsigned long long>(count(emu::rng()) >> 12);
      hist[i] = small[i] << 12;
      total += static_cast<long long>(hist[i]);
      small_total += static_cast<long long>(small[i]);
    }
    if (total <= (1ll << 31)) continue;
    CAPTURE(t, lo, hi, total);
    std::uint8_t lut[256];
    d::equalize_lut_kernel(hist, total, lut);
    int first = 0;
    while (first < 255 && hist[first] == 0) ++first;
    long long cdf = 0;
    int bad = 0;
    for (int i = first + 1; i < 256; ++i) {
      cdf += static_cast<long long>(hist[i]);
      const double want = 255.0 * static_cast<double>(cdf) / static_cast<double>(total - static_cast<long long>(hist[first]));
      bad += std::fabs(lut[i] - want) > 1.0;
    }
    CHECK(bad == 0);
    int th = -1, th_small = -2;
    d::otsu_kernel(hist, total, &th);
    d::otsu_kernel(small, small_total, &th_small);
    CHECK(th == th_small);
  }
}

TEST_CASE("emulated equalize_hist table and Otsu threshold match OpenCV", "[image][emulation]") {
  for (int t = 0; t < 200; ++t) {
    std::uniform_int_distribution<int> side(1, 150), level(0, 255);
    const int r = side(emu::rng()), c = side(emu::rng());
    int a = level(emu::rng()), b = level(emu::rng());
    if (a > b) std::swap(a, b);
    cv::Mat m(r, c, CV_8U);
    for (int i = 0; i < r * c; ++i) {
      const int kind = t % 3;
      m.data[i] = static_cast<std::uint8_t>(kind == 0 ? level(emu::rng()) : kind == 1 ? a + level(emu::rng()) % (b - a + 1)
                                                                     : (level(emu::rng()) % 2 ? a : b));
    }
    CAPTURE(t, r, c, a, b);
    unsigned long long hist[256] = {0};  // the library's counts (64 bits)
    for (int i = 0; i < r * c; ++i) ++hist[m.data[i]];
    std::uint8_t lut[256];
    d::equalize_lut_kernel(hist, static_cast<long long>(r) * c, lut);
    cv::Mat eq;
    cv::equalizeHist(m, eq);
    int bad = 0;
    for (int i = 0; i < r * c; ++i) bad += lut[m.data[i]] != eq.data[i];
    CHECK(bad == 0);
    int th = -1;
    d::otsu_kernel(hist, static_cast<long long>(r) * c, &th);
    cv::Mat dst;
    CHECK(th == cv::threshold(m, dst, 0, 255, cv::THRESH_BINARY | cv::THRESH_OTSU));
  }
}

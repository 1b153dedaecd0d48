// filter2d, gaussian_blur and sobel against Eigen references computed in double, on shapes that
// are not multiples of any tile (awkward_shapes(), 1xN, Nx1, images smaller than the kernel),
// every odd kernel size 1..31, outputs poisoned, inputs checked intact.
#include "support/util.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {
using HF = HostMatrix<float>;
using HD = HostMatrix<double>;

// ------------------------------------------------------------------ references (double)
/// The image with `ry` rows and `rx` columns replicated on each side (BORDER_REPLICATE).
HD pad_replicate(const HF& img, Index ry, Index rx) {
  const Index r = img.rows(), c = img.cols();
  HD p = HD::Zero(r + 2 * ry, c + 2 * rx);
  if (r == 0 || c == 0) return p;  // nothing to replicate; the result is empty anyway
  for (Index i = 0; i < p.rows(); ++i)
    for (Index j = 0; j < p.cols(); ++j)
      p(i, j) = img(std::clamp<Index>(i - ry, 0, r - 1), std::clamp<Index>(j - rx, 0, c - 1));
  return p;
}

/// out(y, x) = sum_ij k(i, j) img(y + i - kh/2, x + j - kw/2), borders replicated.
HD filter2d_ref(const HF& img, const HF& k) {
  const Index r = img.rows(), c = img.cols();
  const HD p = pad_replicate(img, k.rows() / 2, k.cols() / 2);
  HD out = HD::Zero(r, c);
  for (Index i = 0; i < k.rows(); ++i)
    for (Index j = 0; j < k.cols(); ++j) out += static_cast<double>(k(i, j)) * p.block(i, j, r, c);
  return out;
}

/// Separable Gaussian with radius ceil(3 sigma) and normalised weights.
HD gaussian_ref(const HF& img, float sigma) {
  const int radius = static_cast<int>(std::ceil(3.0 * static_cast<double>(sigma)));
  std::vector<double> w(2 * radius + 1);
  double sum = 0;
  for (int d = -radius; d <= radius; ++d) sum += w[d + radius] = std::exp(-0.5 * d * d / (double(sigma) * sigma));
  for (double& v : w) v /= sum;
  const Index r = img.rows(), c = img.cols();
  const HD p = pad_replicate(img, radius, radius);
  HD rows_done = HD::Zero(r + 2 * radius, c);
  for (int k = 0; k <= 2 * radius; ++k) rows_done += w[k] * p.block(0, k, r + 2 * radius, c);
  HD out = HD::Zero(r, c);
  for (int k = 0; k <= 2 * radius; ++k) out += w[k] * rows_done.block(k, 0, r, c);
  return out;
}

/// sqrt(gx^2 + gy^2) with gx = [-1 0 1; -2 0 2; -1 0 1] and gy its transpose (correlation).
HD sobel_ref(const HF& img) {
  const Index r = img.rows(), c = img.cols();
  const HD p = pad_replicate(img, 1, 1);
  auto b = [&](Index i, Index j) { return p.block(i, j, r, c); };
  const HD gx = (b(0, 2) + 2 * b(1, 2) + b(2, 2)) - (b(0, 0) + 2 * b(1, 0) + b(2, 0));
  const HD gy = (b(2, 0) + 2 * b(2, 1) + b(2, 2)) - (b(0, 0) + 2 * b(0, 1) + b(0, 2));
  return (gx.array().square() + gy.array().square()).sqrt().matrix();
}

double max_abs(const HF& m) { return m.size() ? m.cwiseAbs().cast<double>().maxCoeff() : 0.0; }

/// The result has the reference's shape, is finite (poison is NaN), and is within `tol`.
void check_close(const DeviceMatrix<float>& got_d, const HD& want, double tol) {
  const HF got = to_eigen(got_d);
  REQUIRE(got.rows() == want.rows());
  REQUIRE(got.cols() == want.cols());
  CHECK(got.allFinite());
  const double err = max_abs_diff(got, want);
  CAPTURE(err, tol);
  CHECK(err <= tol);
}

/// Tolerance relative to the range of the output: 1e-5 * (max|x| * sum|k|) * taps along a side.
double filter_tol(const HF& img, const HF& k) {
  return 1e-5 * std::max(1.0, max_abs(img) * k.cwiseAbs().cast<double>().sum()) * std::max(k.rows(), k.cols());
}

void check_filter2d(const HF& h, const HF& k) {
  CAPTURE(shape(h.rows(), h.cols()), shape(k.rows(), k.cols()));
  const auto img = to_device(h);
  const auto kernel = to_device(k);
  poison_next<float>(h.rows(), h.cols(), img.stream());
  const DeviceMatrix<float> out = filter2d(img, kernel);
  check_close(out, filter2d_ref(h, k), filter_tol(h, k));
  CHECK(to_eigen(img) == h);  // inputs intact
}

void check_gaussian(const HF& h, float sigma) {
  CAPTURE(shape(h.rows(), h.cols()), sigma);
  const auto img = to_device(h);
  poison_next<float>(h.rows(), h.cols(), img.stream());
  const DeviceMatrix<float> out = gaussian_blur(img, sigma);
  const double taps = 2 * std::ceil(3.0 * sigma) + 1;
  check_close(out, gaussian_ref(h, sigma), 1e-5 * std::max(1.0, max_abs(h)) * taps);
  CHECK(to_eigen(img) == h);
}

void check_sobel(const HF& h) {
  CAPTURE(shape(h.rows(), h.cols()));
  const auto img = to_device(h);
  poison_next<float>(h.rows(), h.cols(), img.stream());
  const DeviceMatrix<float> out = sobel(img);
  check_close(out, sobel_ref(h), 1e-5 * std::max(1.0, 8 * max_abs(h)) * 3);
  CHECK(to_eigen(img) == h);
}

HF random_kernel(Index kh, Index kw) { return random_matrix<float>(kh, kw, -1.0, 1.0); }

// Small shapes and the ones that cross tile edges, for the loops over every kernel size.
const std::vector<std::pair<Index, Index>> kSizeShapes = {{45, 67}, {70, 130}, {1, 200}, {300, 1},
                                                          {5, 3},   {1, 1},    {2, 2},   {31, 31}};
}  // namespace

// ------------------------------------------------------------------ filter2d
TEST_CASE("filter2d matches a double Eigen reference on awkward shapes", "[filter]") {
  for (auto [r, c] : awkward_shapes()) {
    const HF h = random_matrix<float>(r, c, -1.0, 1.0);
    check_filter2d(h, random_kernel(3, 3));
    check_filter2d(h, random_kernel(5, 5));
  }
  // Image-like values: 0..255 with a normalised box kernel.
  const HF h = random_matrix<float>(129, 257, 0.0, 255.0);
  check_filter2d(h, HF::Constant(7, 7, 1.f / 49));
}

TEST_CASE("filter2d: every odd kernel size 1..31, square and rectangular", "[filter]") {
  for (int k = 1; k <= 31; k += 2) {
    for (auto [r, c] : kSizeShapes) {
      const HF h = random_matrix<float>(r, c, -1.0, 1.0);
      check_filter2d(h, random_kernel(k, k));
    }
    const HF h = random_matrix<float>(45, 67, -1.0, 1.0);
    check_filter2d(h, random_kernel(k, 1));
    check_filter2d(h, random_kernel(1, k));
    check_filter2d(h, random_kernel(k, 32 - k));
    check_filter2d(h, random_kernel(32 - k, k));
  }
}

TEST_CASE("filter2d: identity and shift kernels are exact", "[filter]") {
  const HF h = random_matrix<float>(77, 131, -10.0, 10.0);
  const auto img = to_device(h);
  HF id = HF::Zero(31, 31);
  id(15, 15) = 1.f;
  CHECK(to_eigen(filter2d(img, to_device(id))) == h);
  // A 3x1 kernel picking the row below: a shift up, the last row replicated.
  HF below = HF::Zero(3, 1);
  below(2, 0) = 1.f;
  const HF got = to_eigen(filter2d(img, to_device(below)));
  CHECK(got.topRows(76) == h.bottomRows(76));
  CHECK(got.row(76) == h.row(76));
}

TEST_CASE("filter2d rejects even, oversized and empty kernels before touching the image", "[filter]") {
  const HF h = random_matrix<float>(20, 30);
  const auto img = to_device(h);
  for (auto [kh, kw] : std::vector<std::pair<Index, Index>>{
           {2, 2}, {4, 3}, {3, 4}, {1, 2}, {33, 33}, {31, 33}, {33, 1}, {0, 0}, {0, 3}, {3, 0}, {32, 31}}) {
    CAPTURE(shape(kh, kw));
    const DeviceMatrix<float> k = kh * kw ? to_device(HF::Ones(kh, kw)) : DeviceMatrix<float>(kh, kw);
    CHECK_THROWS_AS(filter2d(img, k), shape_error);
    CHECK_THROWS_AS(filter2d(DeviceMatrix<float>(0, 4), k), shape_error);
    CHECK_THROWS_WITH(filter2d(img, k), contains("filter2d"));
    CHECK_THROWS_WITH(filter2d(img, k), contains(shape(kh, kw)));
  }
  CHECK(to_eigen(img) == h);
}

TEST_CASE("filter2d runs on the image's stream, with a kernel from another stream", "[filter]") {
  const Stream a = Stream::create(), b = Stream::create();
  const HF h = random_matrix<float>(100, 90);
  const HF k = random_kernel(9, 5);
  const auto img = to_device(h, a);
  const auto kernel = to_device(k, b);
  poison_next<float>(h.rows(), h.cols(), a);
  const auto out = filter2d(img, kernel);
  CHECK(out.stream() == a);
  check_close(out, filter2d_ref(h, k), filter_tol(h, k));
}

TEST_CASE("concurrent filters on several streams keep their own weights", "[filter]") {
  // Weights live in each launch's shared memory (or parameters): launches on different
  // streams at once must not see each other's.
  const HF h = random_matrix<float>(700, 900);
  constexpr int kStreams = 6;
  std::vector<Stream> streams;
  std::vector<HF> kernels;
  std::vector<DeviceMatrix<float>> imgs, outs, blurs;
  const float sigmas[kStreams] = {0.7f, 1.3f, 2.f, 3.f, 4.5f, 6.f};
  for (int i = 0; i < kStreams; ++i) {
    streams.push_back(Stream::create());
    kernels.push_back(random_kernel(2 * i + 3, 2 * i + 3));
    imgs.push_back(to_device(h, streams[i]));
  }
  for (int rep = 0; rep < 3; ++rep) {
    outs.clear();
    blurs.clear();
    for (int i = 0; i < kStreams; ++i) {
      outs.push_back(filter2d(imgs[i], to_device(kernels[i], streams[i])));
      blurs.push_back(gaussian_blur(imgs[i], sigmas[i]));
    }
  }
  for (int i = 0; i < kStreams; ++i) {
    CAPTURE(i);
    check_close(outs[i], filter2d_ref(h, kernels[i]), filter_tol(h, kernels[i]));
    check_close(blurs[i], gaussian_ref(h, sigmas[i]), 1e-5 * (2 * std::ceil(3 * sigmas[i]) + 1));
  }
}

// ------------------------------------------------------------------ gaussian_blur
TEST_CASE("gaussian_blur matches a separable double reference", "[filter]") {
  for (auto [r, c] : awkward_shapes()) check_gaussian(random_matrix<float>(r, c, -1.0, 1.0), 2.f);
  for (float sigma : {0.3f, 0.5f, 0.8f, 1.f, 1.5f, 3.7f, 7.f, 10.f, 21.f, 21.5f}) {
    for (auto [r, c] : kSizeShapes) check_gaussian(random_matrix<float>(r, c, -1.0, 1.0), sigma);
  }
  // Radii past the shared-memory path (ceil(3 sigma) > 64).
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{150, 170}, {1, 500}, {500, 1}, {3, 2}})
    check_gaussian(random_matrix<float>(r, c, -1.0, 1.0), 25.f);
  check_gaussian(random_matrix<float>(257, 255, 0.0, 255.0), 2.f);
}

TEST_CASE("gaussian_blur keeps a constant image and rejects sigma <= 0", "[filter]") {
  const auto img = DeviceMatrix<float>::constant(131, 67, 42.f);
  poison_next<float>(131, 67, img.stream());
  const HF got = to_eigen(gaussian_blur(img, 3.f));
  CHECK((got.array() - 42.f).abs().maxCoeff() <= 42.f * 1e-5f);
  for (float bad : {0.f, -1.f, -0.f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(gaussian_blur(img, bad), std::invalid_argument);
    CHECK_THROWS_AS(gaussian_blur(DeviceMatrix<float>(), bad), std::invalid_argument);
  }
  CHECK(gaussian_blur(DeviceMatrix<float>(0, 9), 1.f).cols() == 9);
}

// ------------------------------------------------------------------ sobel
TEST_CASE("sobel matches the Eigen reference", "[filter]") {
  for (auto [r, c] : awkward_shapes()) check_sobel(random_matrix<float>(r, c, -1.0, 1.0));
  check_sobel(random_matrix<float>(257, 129, 0.0, 255.0));
}

TEST_CASE("sobel: zero on a constant image, 8 on a unit ramp, replicated borders", "[filter]") {
  // Poisoned first: fresh device memory is often zero already.
  const auto flat = DeviceMatrix<float>::constant(70, 33, 5.f);
  poison_next<float>(70, 33, flat.stream());
  CHECK(to_eigen(sobel(flat)).isZero(0));
  HF ramp(40, 50);
  for (Index y = 0; y < 40; ++y)
    for (Index x = 0; x < 50; ++x) ramp(y, x) = static_cast<float>(x);
  const auto ramp_d = to_device(ramp);
  poison_next<float>(40, 50, ramp_d.stream());
  const HF g = to_eigen(sobel(ramp_d));
  CHECK(g.middleCols(1, 48).isConstant(8.f, 0));
  CHECK(g.col(0).isConstant(4.f, 0));  // replicated: (1 - 0) * 4
  CHECK(g.col(49).isConstant(4.f, 0));
}

// ------------------------------------------------------------------ large shapes
TEST_CASE("filters on 8.4M x 1 (more tile rows than a grid holds)", "[filter]") {
  // 8'400'001 rows: 65'626 filter2d tiles of 128 rows along y, 131'251 column-pass tiles,
  // 262'501 Sobel tiles, all past the 65'535 blocks of grid.y.
  const HF h = random_matrix<float>(8400001, 1, -1.0, 1.0);
  const auto img = to_device(h);
  const HF k = random_kernel(3, 3);
  check_close(filter2d(img, to_device(k)), filter2d_ref(h, k), filter_tol(h, k));
  check_close(gaussian_blur(img, 1.f), gaussian_ref(h, 1.f), 1e-5 * 7);
  check_close(sobel(img), sobel_ref(h), 1e-5 * 24);
}

TEST_CASE("filter2d and sobel past 2^31 elements (64-bit indexing)", "[filter][large]") {
  const Index r = (Index(1) << 16) + 1, c = Index(1) << 15;  // 2^31 + 2^15 floats, 8 GiB
  std::vector<float> h(static_cast<std::size_t>(r * c));
  for (Index y = 0; y < r; ++y) std::fill_n(h.begin() + y * c, c, static_cast<float>(y & 1023));
  const auto img = DeviceMatrix<float>::from_vector(h, r, c);
  const float value_below[3] = {0.f, 0.f, 1.f};  // 3x1: out(y, x) = img(min(y + 1, r - 1), x)
  {
    const std::vector<float> got =
        filter2d(img, DeviceMatrix<float>::from_host(value_below, 3, 1)).to_vector();
    Index bad = 0;
    for (Index y = 0; y < r; ++y) {
      const float want = static_cast<float>(std::min(y + 1, r - 1) & 1023);
      for (Index x = 0; x < c; ++x) bad += got[y * c + x] != want;
    }
    CHECK(bad == 0);
  }
  {
    const std::vector<float> got = sobel(img).to_vector();
    Index bad = 0;
    for (Index y = 0; y < r; ++y) {
      const float up = static_cast<float>(std::max<Index>(y - 1, 0) & 1023);
      const float down = static_cast<float>(std::min(y + 1, r - 1) & 1023);
      const float want = std::fabs(4.f * (down - up));
      for (Index x = 0; x < c; ++x) bad += got[y * c + x] != want;
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("filters of a region of interest equal the filters of its dense copy, bitwise", "[filter][views]") {
  // A view is filtered as an image of its own (its edges are the borders), read in place
  // through its stride: the same kernels on the same pixels, so the same bits.
  const HF h = random_matrix<float>(301, 517, -1, 1);
  const auto img = to_device(h);
  const HF hk = random_matrix<float>(9, 11, -1, 1);
  const auto big_kernel = to_device(hk);
  for (const auto& w : std::vector<std::array<Index, 4>>{
           {0, 0, 301, 517}, {1, 3, 299, 510}, {100, 1, 67, 129}, {0, 516, 301, 1}, {300, 0, 1, 517}, {7, 9, 2, 3}}) {
    CAPTURE(w[0], w[1], w[2], w[3]);
    const MatrixView<const float> roi = img.block(w[0], w[1], w[2], w[3]);
    const DeviceMatrix<float> dense(roi);
    const MatrixView<const float> kernel = big_kernel.block(2, 3, 5, 7);  // a strided kernel too
    CHECK(to_eigen(filter2d(roi, kernel)) == to_eigen(filter2d(dense, DeviceMatrix<float>(kernel))));
    for (float sigma : {1.5f, 30.f})  // the tiled passes and the global one
      CHECK(to_eigen(gaussian_blur(roi, sigma)) == to_eigen(gaussian_blur(dense, sigma)));
    CHECK(to_eigen(sobel(roi)) == to_eigen(sobel(dense)));
    CHECK(to_eigen(filter2d(roi, kernel)).cast<double>().isApprox(
        filter2d_ref(HF(h.block(w[0], w[1], w[2], w[3])), HF(hk.block(2, 3, 5, 7))), 1e-5));
  }
  CHECK(to_eigen(img) == h);  // the parent is intact
}

// Matrices of one device used while another device is current (issue 15: "every launch picks the
// right device, switching and restoring the current device where the user's may differ"). Each
// kind of entry point (host transfers, fills, copies, views, element access, reductions,
// transpose, expressions, products, generators, image operations, stream moves, frees with
// foreign users) runs on matrices of device `there` with device `here` current, both ways round;
// its result must be right (Eigen, a host reference, or the same operation on the current device),
// live on `there`, and the current device must still be `here` afterwards. Needs 2 GPUs; skipped
// with fewer.
#include "support/util.hpp"

#include "detail/device_guard.hpp"

#include <devmat/image.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
  return n;
}

int current_device() {
  int d = -1;
  REQUIRE(cudaGetDevice(&d) == cudaSuccess);
  return d;
}

/// The device that owns `p` (device memory).
int device_of(const void* p) {
  cudaPointerAttributes a{};
  REQUIRE(cudaPointerGetAttributes(&a, p) == cudaSuccess);
  return a.device;
}

/// A new stream of device `dev` (Stream::create takes the current device: switch for it).
Stream stream_on(int dev) {
  const detail::DeviceGuard guard(dev);
  return Stream::create();
}

/// `m` lives on `s` and its memory on `dev`.
template <class T>
void check_on(const DeviceMatrix<T>& m, const Stream& s, int dev) {
  CHECK(m.stream() == s);
  if (!m.empty()) CHECK(device_of(m.data()) == dev);
}

/// Nothing changed the current device and no error is left pending.
void check_untouched(int here) {
  CHECK(current_device() == here);
  CHECK(cudaGetLastError() == cudaSuccess);
}

template <class T>
HostMatrix<T> host(const DeviceMatrix<T>& m) {
  return to_eigen(m);
}

// out(y, x) = sum k(i, j) img(clamp(y + i - kh/2), clamp(x + j - kw/2)), in double.
HostMatrix<double> filter2d_ref(const HostMatrix<float>& img, const HostMatrix<float>& k) {
  const Index r = img.rows(), c = img.cols();
  HostMatrix<double> out(r, c);
  for (Index y = 0; y < r; ++y)
    for (Index x = 0; x < c; ++x) {
      double acc = 0;
      for (Index i = 0; i < k.rows(); ++i)
        for (Index j = 0; j < k.cols(); ++j) {
          const Index yy = std::clamp<Index>(y + i - k.rows() / 2, 0, r - 1);
          const Index xx = std::clamp<Index>(x + j - k.cols() / 2, 0, c - 1);
          acc += static_cast<double>(k(i, j)) * static_cast<double>(img(yy, xx));
        }
      out(y, x) = acc;
    }
  return out;
}

// The minimum over the kh x kw window anchored at its centre, pixels outside the image ignored.
HostMatrix<std::uint8_t> erode_ref(const HostMatrix<std::uint8_t>& img, int kh, int kw) {
  const Index r = img.rows(), c = img.cols();
  HostMatrix<std::uint8_t> out(r, c);
  for (Index y = 0; y < r; ++y)
    for (Index x = 0; x < c; ++x) {
      std::uint8_t v = 255;
      for (Index i = std::max<Index>(0, y - kh / 2); i < std::min<Index>(r, y - kh / 2 + kh); ++i)
        for (Index j = std::max<Index>(0, x - kw / 2); j < std::min<Index>(c, x - kw / 2 + kw); ++j)
          v = std::min(v, img(i, j));
      out(y, x) = v;
    }
  return out;
}

}  // namespace

TEST_CASE("multi-device: transfers, fills, copies, views and element access", "[multi_device]") {
  if (device_count() < 2) DEVMAT_SKIP("needs 2 GPUs (" + std::to_string(device_count()) + " here)");
  const int here = GENERATE(0, 1), there = 1 - here;  // both ways round
  CAPTURE(here, there);
  REQUIRE(cudaSetDevice(here) == cudaSuccess);
  const Stream s = stream_on(there);
  for (auto [rows, cols] : std::vector<std::pair<Index, Index>>{{1, 1}, {37, 53}, {130, 67}}) {
    CAPTURE(rows, cols);
    const HostMatrix<float> ha = random_matrix<float>(rows, cols);

    poison_next<float>(rows, cols, s);
    const auto a = DeviceMatrix<float>::from_host(ha.data(), rows, cols, s);
    check_on(a, s, there);
    CHECK(host(a) == ha);                   // copy_to_host
    CHECK(to_device(ha, s).to_vector() == a.to_vector());  // to_vector
    check_untouched(here);

    poison_next<float>(rows, cols, s);
    const auto z = DeviceMatrix<float>::zeros(rows, cols, s);
    check_on(z, s, there);
    CHECK(host(z) == HostMatrix<float>::Zero(rows, cols));
    poison_next<float>(rows, cols, s);
    const auto k = DeviceMatrix<float>::constant(rows, cols, 2.5f, s);
    CHECK(host(k) == HostMatrix<float>::Constant(rows, cols, 2.5f));
    DeviceMatrix<float> u(rows, cols, s);  // uninitialised, then filled
    check_on(u, s, there);
    u.fill(-1.0f);
    CHECK(host(u) == HostMatrix<float>::Constant(rows, cols, -1.0f));
    check_untouched(here);

    poison_next<float>(rows, cols, s);
    const DeviceMatrix<float> copy = a;  // copy constructor
    check_on(copy, s, there);
    CHECK(host(copy) == ha);
    CHECK(host(a.clone()) == ha);
    DeviceMatrix<float> assigned = DeviceMatrix<float>::zeros(2, 3, s);
    assigned = a;  // copy assignment
    check_on(assigned, s, there);
    CHECK(host(assigned) == ha);
    check_untouched(here);

    // Element access.
    const Index i = rows / 2, j = cols - 1;
    assigned.set(i, j, 42.0f);
    CHECK(assigned.at(i, j) == 42.0f);
    CHECK(a.at(i, j) == ha(i, j));
    check_untouched(here);

    if (rows < 3 || cols < 5) continue;
    // Views: a dense copy of a strided window, a window written from another, a view's host copy.
    const Index br = rows - 2, bc = cols - 4;
    const MatrixView<const float> win = a.view().block(1, 3, br, bc);
    CHECK(to_eigen(win) == HostMatrix<float>(ha.block(1, 3, br, bc)));  // strided copy_to_host
    CHECK(win.at(0, 0) == ha(1, 3));
    poison_next<float>(br, bc, s);
    const DeviceMatrix<float> dense(win);
    check_on(dense, s, there);
    CHECK(host(dense) == HostMatrix<float>(ha.block(1, 3, br, bc)));
    DeviceMatrix<float> target = DeviceMatrix<float>::zeros(rows, cols, s);
    target.view().block(0, 1, br, bc) = win;  // window to window (copy_rows)
    HostMatrix<float> want = HostMatrix<float>::Zero(rows, cols);
    want.block(0, 1, br, bc) = ha.block(1, 3, br, bc);
    CHECK(host(target) == want);
    target.view().block(1, 0, 2, 3).fill(7.0f);
    want.block(1, 0, 2, 3).setConstant(7.0f);
    CHECK(host(target) == want);
    target.view().block(0, 0, 1, 1).set(0, 0, -3.0f);
    want(0, 0) = -3.0f;
    CHECK(host(target) == want);
    check_untouched(here);
  }
}

TEST_CASE("multi-device: stream moves, synchronisation and frees with foreign users", "[multi_device]") {
  if (device_count() < 2) DEVMAT_SKIP("needs 2 GPUs (" + std::to_string(device_count()) + " here)");
  const int here = GENERATE(0, 1), there = 1 - here;  // both ways round
  CAPTURE(here, there);
  REQUIRE(cudaSetDevice(here) == cudaSuccess);
  const Stream s = stream_on(there), s2 = stream_on(there);
  // Blocks past the 4 MiB of the per-stream cache: their frees reach the pool (cudaFreeAsync).
  const Index n = 1031;
  const HostMatrix<float> ha = random_matrix<float>(n, n), hb = random_matrix<float>(n, n);
  const auto pool_used_there = [&] {
    const detail::DeviceGuard guard(there);  // pool_stats() is the current device's
    return pool_stats().used;
  };
  const std::size_t used_before = pool_used_there();
  {
    auto a = to_device(ha, s);
    const auto b = to_device(hb, s2);
    // b's expression reads a on s2: a's memory records s2 as a user, so its free (below, with
    // `here` current) waits for s2 through an event made on `there`.
    const DeviceMatrix<float> ab = b + a;
    check_on(ab, s2, there);
    CHECK(host(ab) == HostMatrix<float>(hb + ha));
    a.set_stream(s2);  // s2 waits for s, through an event on `there`
    CHECK(a.stream() == s2);
    a.synchronize();
    CHECK(host(a) == ha);
    a.set_stream(s);
    const DeviceMatrix<float> again = b - a;  // a foreign use of a's memory again, on s2
    CHECK(host(again) == HostMatrix<float>(hb - ha));
    CHECK(pool_used_there() >= used_before + 4 * static_cast<std::size_t>(n * n) * sizeof(float));
    check_untouched(here);
  }  // frees on `there`, with `here` current
  s.synchronize();
  s2.synchronize();
  check_untouched(here);
  CHECK(pool_used_there() == used_before);  // every block went back to `there`'s pool
}

TEMPLATE_TEST_CASE("multi-device: reductions, transpose, expressions and products", "[multi_device]", float,
                   double) {
  using T = TestType;
  if (device_count() < 2) DEVMAT_SKIP("needs 2 GPUs (" + std::to_string(device_count()) + " here)");
  const int here = GENERATE(0, 1), there = 1 - here;  // both ways round
  CAPTURE(here, there);
  REQUIRE(cudaSetDevice(here) == cudaSuccess);
  const Stream s = stream_on(there);
  const Index rows = 131, cols = 67, n = 45;
  const HostMatrix<T> ha = random_matrix<T>(rows, cols), hb = random_matrix<T>(rows, cols),
                      hc = random_matrix<T>(cols, n);
  const auto a = to_device(ha, s), b = to_device(hb, s), c = to_device(hc, s);
  const HostMatrix<double> da = ha.template cast<double>();
  const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;

  // Reductions, host values and device results.
  CHECK(std::abs(static_cast<double>(a.sum()) - da.sum()) <= 1e-6 * static_cast<double>(rows * cols));
  CHECK(a.min() == ha.minCoeff());
  CHECK(a.max() == ha.maxCoeff());
  CHECK(std::abs(a.mean() - da.mean()) <= 1e-9);
  const auto sum_dev = a.sum_async();
  check_on(sum_dev, s, there);
  CHECK(static_cast<double>(sum_dev.to_vector()[0]) == static_cast<double>(a.sum()));
  poison_next<sum_t<T>>(rows, 1, s);
  const auto rs = a.row_sums();
  check_on(rs, s, there);
  CHECK(max_abs_diff(to_eigen(rs), HostMatrix<double>(da.rowwise().sum())) <= tol * cols);
  poison_next<sum_t<T>>(1, cols, s);
  const auto cs = a.col_sums();
  check_on(cs, s, there);
  CHECK(max_abs_diff(to_eigen(cs), HostMatrix<double>(da.colwise().sum())) <= tol * rows);
  const MatrixView<const T> win = a.view().block(2, 3, rows - 5, cols - 7);
  CHECK(win.max() == ha.block(2, 3, rows - 5, cols - 7).maxCoeff());
  check_untouched(here);

  // Transpose.
  poison_next<T>(cols, rows, s);
  const DeviceMatrix<T> at = a.transpose();
  check_on(at, s, there);
  CHECK(host(at) == HostMatrix<T>(ha.transpose()));
  check_untouched(here);

  // Expressions: a new matrix, in place, a fused reduction, an eager method.
  poison_next<T>(rows, cols, s);
  DeviceMatrix<T> e = a * T(2) + b;
  check_on(e, s, there);
  CHECK(max_abs_diff(host(e), HostMatrix<double>(2.0 * da + hb.template cast<double>())) <= 4 * tol);
  e -= a;
  CHECK(max_abs_diff(host(e), HostMatrix<double>(da + hb.template cast<double>())) <= 8 * tol);
  const HostMatrix<T> hab = ha + hb;
  CHECK(std::abs(static_cast<double>((a + b).sum()) - hab.template cast<double>().sum()) <=
        1e-6 * static_cast<double>(rows * cols));
  CHECK(host(a.abs()) == HostMatrix<T>(ha.cwiseAbs()));
  check_untouched(here);

  // Products: operator*, gemm on matrices (into an empty C), gemm on views.
  const HostMatrix<double> ref = da * hc.template cast<double>();
  poison_next<T>(rows, n, s);
  const DeviceMatrix<T> p = a * c;
  check_on(p, s, there);
  CHECK(max_abs_diff(host(p), ref) <= tol * cols);
  DeviceMatrix<T> g = DeviceMatrix<T>::constant(rows, n, T(1), s);
  gemm(T(1), a, c, T(2), g);  // g = a c + 2
  g -= T(2);
  CHECK(max_abs_diff(host(g), ref) <= tol * cols);
  DeviceMatrix<T> gv = DeviceMatrix<T>::zeros(rows + 2, n + 3, s);
  gemm(T(1), a.view(), c.view(), T(0), gv.view().block(1, 2, rows, n));
  CHECK(max_abs_diff(HostMatrix<T>(host(gv).block(1, 2, rows, n)), ref) <= tol * cols);
  check_untouched(here);
}

TEST_CASE("multi-device: generators and concatenation", "[multi_device]") {
  if (device_count() < 2) DEVMAT_SKIP("needs 2 GPUs (" + std::to_string(device_count()) + " here)");
  const int here = GENERATE(0, 1), there = 1 - here;  // both ways round
  CAPTURE(here, there);
  REQUIRE(cudaSetDevice(here) == cudaSuccess);
  const Stream s = stream_on(there);
  const std::uint64_t seed = rng()();
  // The generators give bitwise the same values on every GPU: the current device's are the oracle.
  poison_next<float>(77, 129, s);
  const auto ru = DeviceMatrix<float>::random_uniform(77, 129, -2.0f, 3.0f, seed, s);
  check_on(ru, s, there);
  CHECK(host(ru) == host(DeviceMatrix<float>::random_uniform(77, 129, -2.0f, 3.0f, seed)));
  CHECK(ru.min() >= -2.0f);
  CHECK(ru.max() <= 3.0f);
  const auto rn = DeviceMatrix<double>::random_normal(33, 17, 1.0, 2.0, seed, s);
  check_on(rn, s, there);
  CHECK(host(rn) == host(DeviceMatrix<double>::random_normal(33, 17, 1.0, 2.0, seed)));
  poison_next<double>(37, 37, s);
  const auto id = DeviceMatrix<double>::identity(37, s);
  check_on(id, s, there);
  CHECK(host(id) == HostMatrix<double>::Identity(37, 37));
  const HostMatrix<float> hx = random_matrix<float>(5, 7), hy = random_matrix<float>(5, 3);
  const auto x = to_device(hx, s), y = to_device(hy, s);
  const DeviceMatrix<float> xy = hconcat(x, y);
  check_on(xy, s, there);
  HostMatrix<float> want(5, 10);
  want << hx, hy;
  CHECK(host(xy) == want);
  check_untouched(here);
}

TEST_CASE("multi-device: image operations", "[multi_device]") {
  if (device_count() < 2) DEVMAT_SKIP("needs 2 GPUs (" + std::to_string(device_count()) + " here)");
  const int here = GENERATE(0, 1), there = 1 - here;  // both ways round
  CAPTURE(here, there);
  REQUIRE(cudaSetDevice(here) == cudaSuccess);
  const Stream s = stream_on(there);
  const Index rows = 97, cols = 131;
  const HostMatrix<float> hf = random_matrix<float>(rows, cols, 0.0, 1.0);
  const HostMatrix<std::uint8_t> h8 = random_matrix<std::uint8_t>(rows, cols, 0, 255);
  const auto f = to_device(hf, s);
  const auto u8 = to_device(h8, s);
  // The same images on the current device: for the operations checked against themselves there.
  const auto f_here = to_device(hf);
  const auto u8_here = to_device(h8);
  CHECK(device_of(f_here.data()) == here);

  const HostMatrix<float> hk = random_matrix<float>(5, 3);
  const auto k = to_device(hk, s);
  poison_next<float>(rows, cols, s);
  const auto filtered = filter2d(f, k);
  check_on(filtered, s, there);
  CHECK(max_abs_diff(host(filtered), filter2d_ref(hf, hk)) <= 1e-5);

  const auto blurred = gaussian_blur(f, 1.5f);
  check_on(blurred, s, there);
  CHECK(host(blurred) == host(gaussian_blur(f_here, 1.5f)));

  poison_next<std::uint8_t>(41, 200, s);
  const auto resized = resize(u8, 41, 200, Interp::linear);
  check_on(resized, s, there);
  CHECK(host(resized) == host(resize(u8_here, 41, 200, Interp::linear)));

  poison_next<float>(rows, cols, s);
  const auto th = threshold(f, 0.5, 2.0, Threshold::binary);
  check_on(th, s, there);
  CHECK(host(th) == HostMatrix<float>(hf.unaryExpr([](float v) { return v > 0.5f ? 2.0f : 0.0f; })));
  const auto otsu = threshold(u8, 0, 255, Threshold::otsu);
  check_on(otsu, s, there);
  CHECK(host(otsu) == host(threshold(u8_here, 0, 255, Threshold::otsu)));
  CHECK(otsu_threshold(u8) == otsu_threshold(u8_here));
  const auto hist = histogram(u8);
  check_on(hist, s, there);
  HostMatrix<std::int32_t> counts = HostMatrix<std::int32_t>::Zero(1, 256);
  for (Index i = 0; i < h8.size(); ++i) ++counts(0, h8.data()[i]);
  CHECK(host(hist) == counts);

  poison_next<std::uint8_t>(rows, cols, s);
  const auto eroded = erode(u8, 3, 5);
  check_on(eroded, s, there);
  CHECK(host(eroded) == erode_ref(h8, 3, 5));
  const auto boxed = box_filter(u8, 3, 3);
  check_on(boxed, s, there);
  CHECK(host(boxed) == host(box_filter(u8_here, 3, 3)));
  const auto med = median_blur(u8, 3);
  CHECK(host(med) == host(median_blur(u8_here, 3)));

  const auto planes = split_channels(f.view().block(0, 0, rows, 129), 3);
  REQUIRE(planes.size() == 3);
  check_on(planes[0], s, there);
  const auto gray = rgb_to_gray(planes[0], planes[1], planes[2]);
  check_on(gray, s, there);
  const auto planes_here = split_channels(f_here.view().block(0, 0, rows, 129), 3);
  CHECK(host(gray) == host(rgb_to_gray(planes_here[0], planes_here[1], planes_here[2])));
  const auto flipped = flip(u8, FlipAxis::both);
  CHECK(host(flipped) == HostMatrix<std::uint8_t>(h8.reverse()));
  check_untouched(here);
}

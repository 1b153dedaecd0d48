// Views (MatrixView, wrap) against Eigen's block/row/col: windows at the edges, 1-wide windows,
// blocks of blocks, odd strides, a wrapped cudaMallocPitch buffer; element-wise operations and
// products through views; writes through views, with the elements outside the window intact;
// overlapping windows; errors that leave everything intact; lifetime and streams.
#include "support/device_helpers.hpp"
#include "support/util.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {

template <class T> double lo() { return std::is_unsigned_v<T> ? 0 : -50; }
template <class T> double hi() { return std::is_same_v<T, std::uint8_t> ? 100 : 50; }

template <class T>
HostMatrix<T> rand_m(Index r, Index c) {
  return random_matrix<T>(r, c, lo<T>(), hi<T>());
}

/// Windows of an R x C matrix that break every tiling: corners, edges, 1-wide, odd sizes.
std::vector<std::array<Index, 4>> windows(Index R, Index C) {
  return {{0, 0, R, C},         {0, 0, 1, 1},         {R - 1, C - 1, 1, 1}, {0, 0, R, 1},     {0, C - 1, R, 1},
          {R - 1, 0, 1, C},     {1, 1, R - 2, C - 2}, {R / 3, C / 5, R / 2, C / 2},          {2, 3, 0, 4},
          {R - 5, C - 7, 5, 7}, {R - 4, 0, 4, C},         {0, 1, R, C - 2}};
}

template <class T>
void check_equal(const HostMatrix<T>& got, const HostMatrix<T>& want) {
  REQUIRE(got.rows() == want.rows());
  REQUIRE(got.cols() == want.cols());
  CHECK(max_abs_diff(got, want) == 0.0);
}

}  // namespace

TEMPLATE_TEST_CASE("views read the window Eigen's block, row and col give", "[views]", float, double, std::int32_t,
                   std::uint8_t) {
  using T = TestType;
  for (auto [R, C] : std::vector<std::pair<Index, Index>>{{37, 53}, {64, 64}, {129, 7}, {5, 1031}}) {
    const HostMatrix<T> h = rand_m<T>(R, C);
    const auto A = to_device(h);
    for (const auto& w : windows(R, C)) {
      CAPTURE(R, C, w[0], w[1], w[2], w[3]);
      const MatrixView<const T> v = A.block(w[0], w[1], w[2], w[3]);
      CHECK(v.rows() == w[2]);
      CHECK(v.cols() == w[3]);
      CHECK(v.stride() == C);
      const HostMatrix<T> want = h.block(w[0], w[1], w[2], w[3]);
      check_equal<T>(to_eigen(v), want);
      check_equal<T>(to_eigen(DeviceMatrix<T>(v)), want);  // a dense copy
      if (w[2] > 2 && w[3] > 2) {                            // a block of a block
        const HostMatrix<T> inner = want.block(1, 2, w[2] - 2, w[3] - 3);
        check_equal<T>(to_eigen(v.block(1, 2, w[2] - 2, w[3] - 3)), inner);
        check_equal<T>(to_eigen(v.row(w[2] - 1)), HostMatrix<T>(want.row(w[2] - 1)));
        check_equal<T>(to_eigen(v.col(1)), HostMatrix<T>(want.col(1)));
        CHECK(v.at(1, 2) == want(1, 2));
      }
    }
    check_equal<T>(to_eigen(A.row(R - 1)), HostMatrix<T>(h.row(R - 1)));
    check_equal<T>(to_eigen(A.col(C - 1)), HostMatrix<T>(h.col(C - 1)));
    CHECK(A.at(R - 1, C - 1) == h(R - 1, C - 1));
  }
}

TEST_CASE("windows that do not fit are shape_errors naming both shapes", "[views]") {
  auto A = DeviceMatrix<float>::constant(10, 20, 3.f);
  CHECK_THROWS_AS(A.block(0, 0, 11, 1), shape_error);
  CHECK_THROWS_WITH(A.block(5, 15, 6, 6), contains("10x20") && contains("6x6") && contains("(5, 15)"));
  CHECK_THROWS_AS(A.block(-1, 0, 1, 1), shape_error);
  CHECK_THROWS_AS(A.block(0, 0, -1, 1), shape_error);
  CHECK_THROWS_AS(A.row(10), shape_error);
  CHECK_THROWS_AS(A.col(20), shape_error);
  CHECK_THROWS_AS(A.at(10, 0), shape_error);
  CHECK_THROWS_AS(A.set(0, 20, 1.f), shape_error);
  CHECK_THROWS_AS(A.block(2, 2, 3, 3).block(1, 1, 3, 1), shape_error);
  CHECK_THROWS_AS(A.block(0, 0, 2, 2) = DeviceMatrix<float>::zeros(2, 3), shape_error);
  CHECK_THROWS_AS(A.block(0, 0, 2, 2) += DeviceMatrix<float>::zeros(3, 2).view(), shape_error);
  CHECK_THROWS_AS(A.block(0, 0, 2, 2) + A.block(0, 0, 2, 3), shape_error);
  CHECK(A.sum() == 3.f * 200);  // untouched
}

TEMPLATE_TEST_CASE("element-wise operations on views and matrices, any mix", "[views]", float, double,
                   std::int32_t, std::uint8_t) {
  using T = TestType;
  const Index R = 45, C = 67;
  const HostMatrix<T> ha = rand_m<T>(R, C), hb = rand_m<T>(R + 3, C + 5);
  const auto A = to_device(ha);
  const auto B = to_device(hb);
  const Index r = 31, c = 41;
  const auto va = A.block(7, 3, r, c);
  const auto vb = B.block(2, 9, r, c);
  const HostMatrix<T> ea = ha.block(7, 3, r, c), eb = hb.block(2, 9, r, c);
  const auto dense_b = DeviceMatrix<T>(vb);
  // In T's own arithmetic (integers wrap as the element-wise rules say).
  const auto wrap_sum = [](const HostMatrix<T>& x, const HostMatrix<T>& y) {
    return HostMatrix<T>(x.binaryExpr(y, [](T p, T q) { return static_cast<T>(p + q); }));
  };
  const auto wrap_diff = [](const HostMatrix<T>& x, const HostMatrix<T>& y) {
    return HostMatrix<T>(x.binaryExpr(y, [](T p, T q) { return static_cast<T>(p - q); }));
  };
  check_equal<T>(to_eigen(va + vb), wrap_sum(ea, eb));
  check_equal<T>(to_eigen(dense_b + va), wrap_sum(eb, ea));
  check_equal<T>(to_eigen(va + dense_b), wrap_sum(ea, eb));
  check_equal<T>(to_eigen(va - vb), wrap_diff(ea, eb));
  check_equal<T>(to_eigen(dense_b - va), wrap_diff(eb, ea));
  check_equal<T>(to_eigen(va - dense_b), wrap_diff(ea, eb));
  const T s = T(3);
  check_equal<T>(to_eigen(va + s), HostMatrix<T>(ea.unaryExpr([&](T x) { return static_cast<T>(x + s); })));
  check_equal<T>(to_eigen(s - va), HostMatrix<T>(ea.unaryExpr([&](T x) { return static_cast<T>(s - x); })));
  check_equal<T>(to_eigen(va * s), HostMatrix<T>(ea.unaryExpr([&](T x) { return static_cast<T>(x * s); })));
  check_equal<T>(to_eigen(va / s), HostMatrix<T>(ea.unaryExpr([&](T x) { return static_cast<T>(x / s); })));
  check_equal<T>(to_eigen(-va), HostMatrix<T>(ea.unaryExpr([](T x) { return static_cast<T>(-x); })));
  // Columns (one element a row, a stride apart) and rows.
  check_equal<T>(to_eigen(A.col(5) + B.block(0, 1, R, 1)), wrap_sum(ha.col(5), hb.block(0, 1, R, 1)));
  check_equal<T>(to_eigen(A.row(44) - B.block(47, 4, 1, C)), wrap_diff(ha.row(44), hb.block(47, 4, 1, C)));
  if constexpr (std::is_integral_v<T>) CHECK_THROWS_AS(va / T(0), std::invalid_argument);
}

TEMPLATE_TEST_CASE("writing through a view changes the window and nothing else", "[views]", float, double,
                   std::int32_t, std::uint8_t) {
  using T = TestType;
  const Index R = 33, C = 70;
  HostMatrix<T> h = rand_m<T>(R, C);
  auto A = to_device(h);
  const HostMatrix<T> hb = rand_m<T>(9, 13);
  const auto B = to_device(hb);

  A.block(4, 50, 9, 13) = B;  // copy in
  h.block(4, 50, 9, 13) = hb;
  check_equal<T>(to_eigen(A), h);

  const auto add = [](T p, T q) { return static_cast<T>(p + q); };
  const auto sub = [](T p, T q) { return static_cast<T>(p - q); };
  A.block(20, 1, 9, 13) += B.view();
  h.block(20, 1, 9, 13) = HostMatrix<T>(h.block(20, 1, 9, 13)).binaryExpr(hb, add);
  check_equal<T>(to_eigen(A), h);

  A.block(0, 0, 2, C) -= A.block(30, 0, 2, C);  // disjoint windows of the same matrix
  h.block(0, 0, 2, C) = HostMatrix<T>(h.block(0, 0, 2, C)).binaryExpr(HostMatrix<T>(h.block(30, 0, 2, C)), sub);
  check_equal<T>(to_eigen(A), h);

  A.col(7) *= T(2);
  A.row(8) += T(1);
  A.block(10, 10, 3, 3) -= T(1);
  A.block(15, 60, 4, 5).fill(T(9));
  for (Index i = 0; i < R; ++i) h(i, 7) = static_cast<T>(h(i, 7) * T(2));
  for (Index j = 0; j < C; ++j) h(8, j) = static_cast<T>(h(8, j) + T(1));
  for (Index i = 10; i < 13; ++i)
    for (Index j = 10; j < 13; ++j) h(i, j) = static_cast<T>(h(i, j) - T(1));
  h.block(15, 60, 4, 5).setConstant(T(9));
  A.set(32, 69, T(5));
  h(32, 69) = T(5);
  check_equal<T>(to_eigen(A), h);
  CHECK(A.at(32, 69) == T(5));
}

TEMPLATE_TEST_CASE("transpose, cast, threshold, abs and clamp read views in place", "[views]", float, double,
                   std::int32_t, std::uint8_t) {
  using T = TestType;
  for (auto [R, C] : std::vector<std::pair<Index, Index>>{{37, 53}, {130, 131}, {5, 1029}, {1029, 7}}) {
    const HostMatrix<T> h = rand_m<T>(R, C);
    const auto A = to_device(h);
    for (const auto& w : windows(R, C)) {
      CAPTURE(R, C, w[0], w[1], w[2], w[3]);
      const MatrixView<const T> v = A.block(w[0], w[1], w[2], w[3]);
      const HostMatrix<T> want = h.block(w[0], w[1], w[2], w[3]);
      poison_next<T>(w[3], w[2], v.stream());
      check_equal<T>(to_eigen(v.transpose()), want.transpose());
      check_equal<double>(to_eigen(v.template cast<double>()), want.template cast<double>());
      check_equal<std::int32_t>(to_eigen(v.template cast<std::int32_t>()), to_eigen(DeviceMatrix<T>(v).template cast<std::int32_t>()));
      const T t = static_cast<T>(7);
      const HostMatrix<std::uint8_t> th = want.unaryExpr([t](T x) { return std::uint8_t(x > t ? 255 : 0); });
      check_equal<std::uint8_t>(to_eigen(v.threshold(t)), th);
      if constexpr (!std::is_unsigned_v<T>) check_equal<T>(to_eigen(v.abs()), want.cwiseAbs());
      else check_equal<T>(to_eigen(v.abs()), want);
      const T clo = static_cast<T>(10), chi = static_cast<T>(30);
      check_equal<T>(to_eigen(v.clamp(clo, chi)), want.cwiseMax(clo).cwiseMin(chi));
    }
    CHECK_THROWS_AS(A.block(1, 1, 2, 2).clamp(T(3), T(2)), std::invalid_argument);
    check_equal<T>(to_eigen(A), h);  // the parent is intact
  }
}

TEST_CASE("overlapping windows: the right side is read as a whole first", "[views]") {
  const Index R = 40, C = 50;
  HostMatrix<float> h = random_matrix<float>(R, C);
  auto A = to_device(h);
  // Shifted down and right by one: a naive row-by-row copy would read rows it already wrote.
  A.block(1, 1, R - 1, C - 1) = A.block(0, 0, R - 1, C - 1);
  HostMatrix<float> want = h;
  want.block(1, 1, R - 1, C - 1) = HostMatrix<float>(h.block(0, 0, R - 1, C - 1));
  check_equal<float>(to_eigen(A), want);
  // Shifted up, in place arithmetic.
  h = want;
  A.block(0, 0, R - 2, C) += A.block(2, 0, R - 2, C);
  want.block(0, 0, R - 2, C) = h.block(0, 0, R - 2, C) + h.block(2, 0, R - 2, C);
  check_equal<float>(to_eigen(A), want);
  // The same window: in place.
  h = want;
  A.block(3, 4, 10, 10) += A.block(3, 4, 10, 10);
  want.block(3, 4, 10, 10) *= 2.f;
  check_equal<float>(to_eigen(A), want);
  A.block(0, 0, 5, 5) = A.block(0, 0, 5, 5);  // a no-op
  check_equal<float>(to_eigen(A), want);
}

TEST_CASE("a view keeps its matrix's memory alive and runs on its stream", "[views]") {
  const Stream s1 = Stream::create(), s2 = Stream::create();
  MatrixView<const float> v;
  DeviceMatrix<float> sum;
  {
    auto A = DeviceMatrix<float>::constant(300, 400, 2.f, s1);
    v = A.block(10, 20, 100, 200);
    CHECK(v.stream() == s1);
    auto B = DeviceMatrix<float>::constant(100, 200, 1.f, s2);
    spin(s2.native(), 5);  // B's stream is busy: the sum must wait for it
    sum = v + B;
  }  // A and B destroyed; v still holds A's memory
  CHECK(sum.stream() == s1);
  CHECK(sum.sum() == 3.f * 100 * 200);
  CHECK(v.at(99, 199) == 2.f);
  CHECK(DeviceMatrix<float>(v).sum() == 2.f * 100 * 200);
}

TEMPLATE_TEST_CASE("wrap: foreign pitched memory, and what it refuses", "[views]", float, std::uint8_t) {
  using T = TestType;
  const Index R = 37, C = 29;
  T* d = nullptr;
  std::size_t pitch = 0;
  REQUIRE(cudaMallocPitch(reinterpret_cast<void**>(&d), &pitch, C * sizeof(T), R) == cudaSuccess);
  const Index stride = static_cast<Index>(pitch / sizeof(T));
  const HostMatrix<T> h = rand_m<T>(R, C);
  REQUIRE(cudaMemcpy2D(d, pitch, h.data(), C * sizeof(T), C * sizeof(T), R, cudaMemcpyHostToDevice) == cudaSuccess);
  const Stream s = Stream::create();
  {
    const MatrixView<T> w = wrap(d, R, C, stride, s);
    CHECK(w.stride() == stride);
    check_equal<T>(to_eigen(w), h);
    check_equal<T>(to_eigen(w.block(3, 4, 20, 11)), HostMatrix<T>(h.block(3, 4, 20, 11)));
    const auto twice = w + w;
    check_equal<T>(to_eigen(twice), HostMatrix<T>(h.unaryExpr([](T x) { return static_cast<T>(x + x); })));
    w.block(0, 0, 2, 2).fill(T(7));
    CHECK(w.at(1, 1) == T(7));
    const MatrixView<const T> cw = wrap(static_cast<const T*>(d), R, C, stride, s);
    CHECK(cw.at(1, 1) == T(7));
    s.synchronize();
  }
  std::vector<T> host(static_cast<std::size_t>(R * C));
  CHECK_THROWS_AS(wrap(host.data(), R, C, C, s), std::invalid_argument);
  CHECK_THROWS_WITH(wrap(host.data(), R, C, C, s), contains("not device memory"));
  CHECK_THROWS_AS(wrap(static_cast<T*>(nullptr), R, C, C, s), std::invalid_argument);
  CHECK_THROWS_AS(wrap(d, R, C, C - 1, s), shape_error);
  CHECK_THROWS_AS(wrap(d, -1, C, C, s), shape_error);
  CHECK(wrap(static_cast<T*>(nullptr), 0, 5, 5, s).empty());
  REQUIRE(cudaFree(d) == cudaSuccess);
}

TEMPLATE_TEST_CASE("products of views through their strides; C a window of a larger matrix", "[views][gemm]", float,
                   double, std::int32_t) {
  using T = TestType;
  const double lo_ = std::is_integral_v<T> ? -8 : -1, hi_ = std::is_integral_v<T> ? 8 : 1;
  const HostMatrix<T> ha = random_matrix<T>(150, 131, lo_, hi_), hb = random_matrix<T>(140, 97, lo_, hi_);
  const auto A = to_device(ha);
  const auto B = to_device(hb);
  const double tol = std::is_same_v<T, double> ? 1e-12 : std::is_same_v<T, float> ? 1e-5 : 0.0;
  const auto check_product = [&](const HostMatrix<T>& got, const HostMatrix<double>& want) {
    REQUIRE(got.rows() == want.rows());
    REQUIRE(got.cols() == want.cols());
    const double scale = std::max(1.0, want.cwiseAbs().maxCoeff()) * 131;
    CHECK(max_abs_diff(got.template cast<double>(), want) <= tol * scale);
  };
  for (auto [m, k, n] : std::vector<std::array<Index, 3>>{{77, 65, 43}, {1, 65, 43}, {77, 65, 1}, {1, 1, 1}, {140, 97, 1}}) {
    CAPTURE(m, k, n);
    const auto va = A.block(3, 5, m, k);
    const auto vb = B.block(7, 2, k, n);
    const HostMatrix<double> want = ha.block(3, 5, m, k).template cast<double>() * hb.block(7, 2, k, n).template cast<double>();
    check_product(to_eigen(va * vb), want);
    // Transposed operands through views: op(A) = (A^T block)^T.
    const auto at = DeviceMatrix<T>(va).transpose();
    {
      DeviceMatrix<T> big = DeviceMatrix<T>::constant(m + 10, n + 10, T(1));
      gemm(T(1), at.view(), vb, T(0), big.block(4, 6, m, n), Op::transpose, Op::none);
      HostMatrix<T> got = to_eigen(big);
      check_product(HostMatrix<T>(got.block(4, 6, m, n)), want);
      got.block(4, 6, m, n).setConstant(T(1));
      CHECK(got.isConstant(T(1)));  // nothing outside the window written
    }
    // beta: C = 2 op(A) op(B) + 3 C into a strided window.
    DeviceMatrix<T> big = to_device(HostMatrix<T>(random_matrix<T>(m + 3, n + 2, lo_, hi_)));
    const HostMatrix<T> before = to_eigen(big);
    gemm(T(2), va, vb, T(3), big.block(1, 1, m, n));
    const HostMatrix<double> want2 = 2.0 * want + 3.0 * before.block(1, 1, m, n).template cast<double>();
    check_product(HostMatrix<T>(to_eigen(big).block(1, 1, m, n)), want2);
  }
  // C overlapping an operand: computed through a temporary.
  DeviceMatrix<T> X = to_device(HostMatrix<T>(random_matrix<T>(60, 60, lo_, hi_)));
  const HostMatrix<T> hx = to_eigen(X);
  gemm(T(1), X.block(0, 0, 30, 30), X.block(30, 30, 30, 30), T(0), X.block(10, 10, 30, 30));
  const HostMatrix<double> want = hx.block(0, 0, 30, 30).template cast<double>() * hx.block(30, 30, 30, 30).template cast<double>();
  check_product(HostMatrix<T>(to_eigen(X).block(10, 10, 30, 30)), want);
  DeviceMatrix<T> small(2, 2);
  CHECK_THROWS_AS(gemm(T(1), A.block(0, 0, 2, 3), B.block(0, 0, 3, 2), T(0), small.block(0, 0, 1, 2)), shape_error);
  CHECK_THROWS_AS(A.block(0, 0, 2, 3) * B.block(0, 0, 2, 2), shape_error);
}

TEST_CASE("printing: Eigen's layout, and an elided middle for large matrices", "[views]") {
  const HostMatrix<int> h = (HostMatrix<int>(2, 3) << 1, -2, 3, 40, 5, 6).finished();
  const auto A = to_device(h);
  std::ostringstream os;
  os << A.view();
  CHECK(os.str() == " 1 -2  3\n40  5  6");
  std::ostringstream os8;
  os8 << DeviceMatrix<std::uint8_t>::constant(1, 2, 7).view();
  CHECK(os8.str() == "7 7");
  std::ostringstream big;
  big << DeviceMatrix<int>::constant(100, 100, 1).view();
  const std::string s = big.str();
  CHECK(s.find("...") != std::string::npos);
  CHECK(std::count(s.begin(), s.end(), '\n') == 16);  // 16 rows and the "..." line
}

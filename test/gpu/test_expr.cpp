// Fused expressions (include/devmat/expr.hpp) against Eigen's array operations: every operator
// and function on every applicable type, fused results bitwise equal to one operator at a time,
// broadcasting in every direction and its errors, fused reductions against double references,
// operand lifetime, streams, aliasing, views, 0-size and 1xN shapes, the two ways of launching.
#include "expr/engine.hpp"
#include "support/device_helpers.hpp"
#include "support/util.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {

template <class T> using H = HostMatrix<T>;

// Values for which int32 and uint8 arithmetic below wraps (or not) the same way on both sides.
template <class T> double lo() { return std::is_unsigned_v<T> ? 0 : -100; }
template <class T> double hi() { return std::is_same_v<T, std::uint8_t> ? 255 : 100; }

template <class T>
H<T> rand_h(Index r, Index c) {
  return random_matrix<T>(r, c, lo<T>(), hi<T>());
}

const std::vector<std::pair<Index, Index>>& shapes() {
  static const std::vector<std::pair<Index, Index>> s = {{0, 0}, {0, 5}, {1, 1}, {1, 37}, {37, 1}, {3, 5}, {129, 67}, {256, 257}, {513, 1031}};
  return s;
}

/// Bitwise equality of two host matrices (NaNs of the same bits compare equal).
template <class T>
bool same_bits(const H<T>& a, const H<T>& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         (a.size() == 0 || std::memcmp(a.data(), b.data(), sizeof(T) * static_cast<std::size_t>(a.size())) == 0);
}

/// Within a few units in the last place of the reference (transcendental functions: CUDA's
/// and glibc's differ by up to 2 ulp).
template <class T>
bool close_ulps(const H<T>& got, const H<T>& want, double ulps = 4) {
  if (got.rows() != want.rows() || got.cols() != want.cols()) return false;
  const double eps = std::numeric_limits<T>::epsilon();
  for (Index i = 0; i < got.size(); ++i) {
    const double g = got.data()[i], w = want.data()[i];
    if (std::isnan(w) ? !std::isnan(g) : std::fabs(g - w) > ulps * eps * std::max(1.0, std::fabs(w))) {
      UNSCOPED_INFO("element " << i << ": got " << g << ", want " << w);
      return false;
    }
  }
  return true;
}

}  // namespace

TEMPLATE_TEST_CASE("arithmetic, comparisons, select, min and max match Eigen", "[expr]", float, double, std::int32_t,
                   std::uint8_t) {
  using T = TestType;
  for (auto [r, c] : shapes()) {
    CAPTURE(shape(r, c));
    const H<T> ha = rand_h<T>(r, c), hb = rand_h<T>(r, c), hc = rand_h<T>(r, c);
    const auto A = to_device(ha), B = to_device(hb), C = to_device(hc);
    const T two = T(2), three = T(3);

    // (2A + B)/2 - |C|, op by op in T on the host, as devmat does on the device.
    const H<T> h2a = ha.unaryExpr([&](T x) { return T(two * x); });
    const H<T> hsum = (h2a.array() + hb.array()).matrix().unaryExpr([](T x) { return x; });
    const H<T> hhalf = hsum.unaryExpr([&](T x) { return T(x / two); });
    const H<T> habs = hc.unaryExpr([](T x) { return std::is_unsigned_v<T> ? x : T(x < 0 ? -x : x); });
    const H<T> want1 = (hhalf.array() - habs.array()).matrix();
    poison_next<T>(r, c, A.stream());
    DeviceMatrix<T> got1 = (2 * A + B) / 2 - abs(C);
    CHECK(same_bits<T>(to_eigen(got1), want1.unaryExpr([](T x) { return T(x); })));

    CHECK(same_bits<T>(to_eigen(A + B - C), H<T>((ha.array() + hb.array() - hc.array()).matrix())));
    CHECK(same_bits<T>(to_eigen(-A), H<T>(ha.unaryExpr([](T x) { return T(-x); }))));
    CHECK(same_bits<T>(to_eigen(square(A)), H<T>(ha.unaryExpr([](T x) { return T(x * x); }))));
    CHECK(same_bits<T>(to_eigen(3 - A), H<T>(ha.unaryExpr([&](T x) { return T(three - x); }))));
    CHECK(same_bits<T>(to_eigen(A * 3), H<T>(ha.unaryExpr([&](T x) { return T(x * three); }))));
    CHECK(same_bits<T>(to_eigen(min(A, B)), H<T>(ha.cwiseMin(hb))));
    CHECK(same_bits<T>(to_eigen(max(A, 7)), H<T>(ha.cwiseMax(T(7)))));
    CHECK(same_bits<T>(to_eigen(clamp(A, 10, 50)), H<T>(ha.cwiseMax(T(10)).cwiseMin(T(50)))));
    CHECK(same_bits<T>(to_eigen(select(A > B, A, B)), H<T>(ha.cwiseMax(hb))));
    CHECK(same_bits<T>(to_eigen(select(A > B, C, 1)),
                       H<T>((ha.array() > hb.array()).select(hc.array(), T(1)).matrix())));

    using M8 = H<std::uint8_t>;
    CHECK(to_eigen(A < B) == M8((ha.array() < hb.array()).template cast<std::uint8_t>().matrix()));
    CHECK(to_eigen(A <= B) == M8((ha.array() <= hb.array()).template cast<std::uint8_t>().matrix()));
    CHECK(to_eigen(A > 20) == M8((ha.array() > T(20)).template cast<std::uint8_t>().matrix()));
    CHECK(to_eigen(A >= B) == M8((ha.array() >= hb.array()).template cast<std::uint8_t>().matrix()));
    CHECK(to_eigen(A == B) == M8((ha.array() == hb.array()).template cast<std::uint8_t>().matrix()));
    CHECK(to_eigen(A != 0) == M8((ha.array() != T(0)).template cast<std::uint8_t>().matrix()));
    CHECK(to_eigen((A > B) && (B > C)) ==
          M8(((ha.array() > hb.array()) && (hb.array() > hc.array())).template cast<std::uint8_t>().matrix()));
    CHECK(to_eigen((A > B) || !(B > C)) ==
          M8(((ha.array() > hb.array()) || !(hb.array() > hc.array())).template cast<std::uint8_t>().matrix()));

    // Eager methods run through the same engine: the same bits.
    CHECK(same_bits<T>(to_eigen(A.cwise_product(B)), to_eigen(DeviceMatrix<T>(A * 1).cwise_product(B))));
    CHECK(same_bits<T>(to_eigen(A.abs()), to_eigen(abs(A))));
    CHECK(to_eigen(A) == ha);  // operands intact
    CHECK(to_eigen(B) == hb);
  }
}

TEMPLATE_TEST_CASE("integer division: by an element 0 gives 0, by the scalar 0 throws", "[expr]", std::int32_t,
                   std::uint8_t) {
  using T = TestType;
  const H<T> ha = rand_h<T>(33, 65);
  H<T> hb = random_matrix<T>(33, 65, 0, 9);  // many zeros
  const auto A = to_device(ha), B = to_device(hb);
  const H<T> want = ha.binaryExpr(hb, [](T x, T y) { return y == 0 ? T(0) : T(x / y); });
  CHECK(to_eigen(A / B) == want);
  CHECK_THROWS_AS(A / 0, std::invalid_argument);
  auto M = A.clone();
  CHECK_THROWS_AS(M /= T(0), std::invalid_argument);
  CHECK(to_eigen(M) == ha);  // intact
}

TEMPLATE_TEST_CASE("float functions match the standard library within a few ulps", "[expr]", float, double) {
  using T = TestType;
  for (auto [r, c] : shapes()) {
    CAPTURE(shape(r, c));
    const H<T> ha = random_matrix<T>(r, c, -4, 4), hb = random_matrix<T>(r, c, 0.1, 3);
    const auto A = to_device(ha), B = to_device(hb);
    const auto f = [&](auto fn) { return H<T>(ha.unaryExpr([&](T x) { return T(fn(x)); })); };
    const auto g = [&](auto fn) { return H<T>(hb.unaryExpr([&](T x) { return T(fn(x)); })); };
    CHECK(same_bits<T>(to_eigen(sqrt(B)), g([](T x) { return std::sqrt(x); })));  // IEEE sqrt: exact
    CHECK(close_ulps<T>(to_eigen(rsqrt(B)), g([](T x) { return T(1) / std::sqrt(x); })));
    CHECK(close_ulps<T>(to_eigen(exp(A)), f([](T x) { return std::exp(x); })));
    CHECK(close_ulps<T>(to_eigen(log(B)), g([](T x) { return std::log(x); })));
    CHECK(close_ulps<T>(to_eigen(log1p(B)), g([](T x) { return std::log1p(x); })));
    CHECK(close_ulps<T>(to_eigen(expm1(A)), f([](T x) { return std::expm1(x); })));
    CHECK(close_ulps<T>(to_eigen(sin(A)), f([](T x) { return std::sin(x); })));
    CHECK(close_ulps<T>(to_eigen(cos(A)), f([](T x) { return std::cos(x); })));
    CHECK(close_ulps<T>(to_eigen(tanh(A)), f([](T x) { return std::tanh(x); })));
    CHECK(same_bits<T>(to_eigen(floor(A)), f([](T x) { return std::floor(x); })));
    CHECK(same_bits<T>(to_eigen(ceil(A)), f([](T x) { return std::ceil(x); })));
    CHECK(same_bits<T>(to_eigen(round(A * 2)), H<T>(ha.unaryExpr([](T x) { return std::round(T(x * 2)); }))));
    CHECK(close_ulps<T>(to_eigen(pow(B, T(0.75))), g([](T x) { return std::pow(x, T(0.75)); })));
    CHECK(close_ulps<T>(to_eigen(pow(B, abs(A))), H<T>(hb.binaryExpr(ha, [](T x, T y) { return std::pow(x, std::fabs(y)); }))));
    CHECK(close_ulps<T>(to_eigen(pow(2, A)), f([](T x) { return std::pow(T(2), x); })));
    CHECK(same_bits<T>(to_eigen(1 / B), g([](T x) { return T(1) / x; })));
    CHECK(same_bits<T>(to_eigen(exp(B).log()), to_eigen(log(DeviceMatrix<T>(exp(B))))));
  }
}

TEMPLATE_TEST_CASE("fused results are bitwise those of one operator at a time", "[expr]", float, double,
                   std::int32_t, std::uint8_t) {
  using T = TestType;
  const H<T> ha = rand_h<T>(301, 257), hb = rand_h<T>(301, 257), hc = rand_h<T>(301, 257);
  const auto A = to_device(ha), B = to_device(hb), C = to_device(hc);
  // One operator at a time: every step materialised.
  const DeviceMatrix<T> s1 = 2 * A;
  const DeviceMatrix<T> s2 = s1 + B;
  const DeviceMatrix<T> s3 = s2 / 2;
  const DeviceMatrix<T> s4 = abs(C);
  const DeviceMatrix<T> s5 = s3 - s4;
  const DeviceMatrix<T> fused = ((2 * A + B) / 2 - abs(C));
  CHECK(same_bits<T>(to_eigen(fused), to_eigen(s5)));
  const DeviceMatrix<T> m1 = min(A, B), m2 = max(m1, C), m3 = m2 - A;
  CHECK(same_bits<T>(to_eigen(max(min(A, B), C) - A), to_eigen(m3)));
  if constexpr (std::is_floating_point_v<T>) {
    const DeviceMatrix<T> gx = A * T(0.5), gy = B * T(0.25);
    const DeviceMatrix<T> q1 = square(gx), q2 = square(gy), q3 = q1 + q2, q4 = sqrt(q3);
    CHECK(same_bits<T>(to_eigen(sqrt(square(A * T(0.5)) + square(B * T(0.25)))), to_eigen(q4)));
    // (two matrices multiply as matrices: cwise_product is the element-wise product)
    const DeviceMatrix<T> e1 = exp(A / 100), e2 = cwise_product(e1, B), e3 = tanh(e2), e4 = e3 - C;
    CHECK(same_bits<T>(to_eigen(tanh(cwise_product(exp(A / 100), B)) - C), to_eigen(e4)));
    const DeviceMatrix<T> f1 = A.cwise_product(B), f2 = f1 + C;  // a*b + c: no multiply-add contraction
    CHECK(same_bits<T>(to_eigen(cwise_product(A, B) + C), to_eigen(f2)));
  }
}

TEMPLATE_TEST_CASE("broadcasting: rows, columns, 1x1 on the device, scalars; mismatches are shape_errors",
                   "[expr]", float, std::int32_t, std::uint8_t) {
  using T = TestType;
  const Index R = 77, Cn = 131;
  const H<T> ha = rand_h<T>(R, Cn), hrow = rand_h<T>(1, Cn), hcol = rand_h<T>(R, 1), hone = rand_h<T>(1, 1);
  const auto A = to_device(ha), row = to_device(hrow), col = to_device(hcol), one = to_device(hone);
  H<T> want(R, Cn);
  for (Index i = 0; i < R; ++i)
    for (Index j = 0; j < Cn; ++j) want(i, j) = T(T(ha(i, j) + hrow(0, j)) - hcol(i, 0));
  CHECK(same_bits<T>(to_eigen(A + row - col), want));
  for (Index i = 0; i < R; ++i)
    for (Index j = 0; j < Cn; ++j) want(i, j) = T(hrow(0, j) + hcol(i, 0));
  CHECK(same_bits<T>(to_eigen(row + col), want));  // an outer sum: 1 x C with R x 1
  CHECK(same_bits<T>(to_eigen(col + row), H<T>(want)));
  for (Index i = 0; i < R; ++i)
    for (Index j = 0; j < Cn; ++j) want(i, j) = T(ha(i, j) * hone(0, 0));
  CHECK(same_bits<T>(to_eigen(A.cwise_product(one)), want));
  // In place, broadcasting the right side.
  auto M = A.clone();
  M += row;
  for (Index i = 0; i < R; ++i)
    for (Index j = 0; j < Cn; ++j) want(i, j) = T(ha(i, j) + hrow(0, j));
  CHECK(same_bits<T>(to_eigen(M), want));
  // Mismatches: thrown when the expression is built, naming both shapes.
  const auto At = to_device(rand_h<T>(Cn, R));
  CHECK_THROWS_AS(A + At, shape_error);
  CHECK_THROWS_WITH(A - At, contains("77x131") && contains("131x77"));
  CHECK_THROWS_AS(A + col.view().block(0, 0, R - 1, 1), shape_error);
  CHECK_THROWS_AS(select(A > 1, A, At), shape_error);
  auto small = to_device(rand_h<T>(1, Cn));
  CHECK_THROWS_AS(small += A, shape_error);  // the result would not fit the left side
  CHECK(to_eigen(A) == ha);
}

TEMPLATE_TEST_CASE("fused reductions: sums, extremes, means, row and column sums", "[expr][reduce]", float, double,
                   std::int32_t, std::uint8_t) {
  using T = TestType;
  using S = sum_t<T>;
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{0, 3}, {1, 1}, {1, 4099}, {4099, 1}, {300, 301}, {1024, 1024}}) {
    CAPTURE(shape(r, c));
    const H<T> ha = rand_h<T>(r, c), hb = rand_h<T>(r, c);
    const auto A = to_device(ha), B = to_device(hb);
    const auto e = abs(A - B);
    const DeviceMatrix<T> m = e;  // unfused: materialised, then reduced
    const H<T> hm = to_eigen(m);
    // The sum, min, max and mean of a fused expression are bitwise those of its materialised matrix.
    const S fs = e.sum(), us = m.sum();
    CHECK(std::memcmp(&fs, &us, sizeof(S)) == 0);
    long double exact = 0;
    for (Index i = 0; i < hm.size(); ++i) exact += static_cast<long double>(hm.data()[i]);
    if constexpr (std::is_integral_v<T>) CHECK(static_cast<long double>(fs) == exact);
    else CHECK(std::fabs(static_cast<long double>(fs) - exact) <= 1e-6L * (1 + std::fabs(exact)));
    if (r * c == 0) {
      CHECK_THROWS_AS(e.min(), shape_error);
      CHECK_THROWS_AS(e.mean_async(), shape_error);
      CHECK_THROWS_AS(arg_max(e), shape_error);
      continue;
    }
    CHECK(e.min() == m.min());
    CHECK(e.max() == m.max());
    const double fm = e.mean(), um = m.mean();
    CHECK(std::memcmp(&fm, &um, sizeof(double)) == 0);
    // Row and column sums: deterministic and accurate.
    const std::vector<S> rs = e.row_sums().to_vector(), cs = e.col_sums().to_vector();
    Index bad = 0;
    for (Index i = 0; i < r; ++i) {
      long double x = 0;
      for (Index j = 0; j < c; ++j) x += static_cast<long double>(hm(i, j));
      bad += std::fabs(static_cast<long double>(rs[static_cast<std::size_t>(i)]) - x) > 1e-6L * (1 + std::fabs(x));
    }
    for (Index j = 0; j < c; ++j) {
      long double x = 0;
      for (Index i = 0; i < r; ++i) x += static_cast<long double>(hm(i, j));
      bad += std::fabs(static_cast<long double>(cs[static_cast<std::size_t>(j)]) - x) > 1e-6L * (1 + std::fabs(x));
    }
    CHECK(bad == 0);
    CHECK(e.row_sums().to_vector() == rs);  // deterministic
    // arg_min / arg_max: the first extreme in row-major order.
    Index imin = 0, imax = 0;
    for (Index i = 1; i < hm.size(); ++i) {
      if (hm.data()[i] < hm.data()[imin]) imin = i;
      if (hm.data()[i] > hm.data()[imax]) imax = i;
    }
    CHECK(arg_min(e) == std::make_pair(imin / c, imin % c));
    CHECK(arg_max(e) == std::make_pair(imax / c, imax % c));
    // count_nonzero, any, all.
    const Index nz = static_cast<Index>((hm.array() != T(0)).count());
    CHECK(count_nonzero(e) == nz);
    CHECK(any(e) == (nz > 0));
    CHECK(all(e) == (nz == hm.size()));
    CHECK(all(A == A));
    CHECK_FALSE(any(A != A));
  }
}

TEMPLATE_TEST_CASE("dot, norm, squared_norm and is_approx", "[expr][reduce]", float, double) {
  using T = TestType;
  const H<T> ha = random_matrix<T>(257, 129, -1, 1), hb = random_matrix<T>(257, 129, -1, 1);
  const auto A = to_device(ha), B = to_device(hb);
  const double d = static_cast<double>(dot(A, B));
  const double want = (ha.template cast<double>().array() * hb.template cast<double>().array()).sum();
  CHECK(std::fabs(d - want) <= 1e-5 * (1 + std::fabs(want)));
  const double sq = static_cast<double>(squared_norm(A)), hsq = ha.template cast<double>().squaredNorm();
  CHECK(std::fabs(sq - hsq) <= 1e-5 * hsq);
  CHECK(std::fabs(norm(A) - std::sqrt(hsq)) <= 1e-5 * std::sqrt(hsq));
  CHECK(is_approx(A, A));
  CHECK(is_approx(A, DeviceMatrix<T>(A * T(1 + 4 * std::numeric_limits<T>::epsilon()))));
  CHECK_FALSE(is_approx(A, B));
  CHECK(is_approx(A, B, 10.0));
  CHECK_THROWS_AS(is_approx(A, to_device(ha.transpose().eval())), shape_error);
}

TEST_CASE("an expression keeps its operands alive and runs on its first operand's stream", "[expr][streams]") {
  const Stream s1 = Stream::create(), s2 = Stream::create();
  const H<float> ha = random_matrix<float>(513, 511), hb = random_matrix<float>(513, 511);
  Expr<float> e = Expr<float>(DeviceMatrix<float>(1, 1));  // replaced below
  {
    auto A = to_device(ha, s1);
    auto B = to_device(hb, s2);
    spin(s2.native(), 5);  // B's stream is busy: the expression must wait for it
    B += 1.0f;
    e = A * 2.0f - B;
  }  // A and B are destroyed: e holds them
  CHECK(e.stream() == s1);
  DeviceMatrix<float> C = e;
  CHECK(C.stream() == s1);
  CHECK(same_bits<float>(to_eigen(C), H<float>((ha.array() * 2.0f - (hb.array() + 1.0f)).matrix())));
  // Reused after its operands are gone, again.
  CHECK(same_bits<float>(to_eigen(e), to_eigen(C)));
}

TEST_CASE("aliasing: the same window in place, overlapping windows through a temporary", "[expr][views]") {
  const H<float> ha = random_matrix<float>(64, 80), hb = random_matrix<float>(64, 80);
  auto A = to_device(ha);
  const auto B = to_device(hb);
  A = A * 2.0f + B;  // the same window: in place
  CHECK(same_bits<float>(to_eigen(A), H<float>((ha.array() * 2.0f + hb.array()).matrix())));

  A = to_device(ha);
  A.block(0, 0, 60, 70) = A.block(2, 3, 60, 70) + A.block(1, 1, 60, 70) * 2.0f;  // overlapping
  H<float> want = ha;
  want.block(0, 0, 60, 70) = (ha.block(2, 3, 60, 70).array() + ha.block(1, 1, 60, 70).array() * 2.0f).matrix();
  CHECK(same_bits<float>(to_eigen(A), want));

  A = to_device(ha);
  A = A - A.row(0);  // broadcasting its own first row, which the write changes
  want = ha;
  for (Index i = 0; i < 64; ++i) want.row(i) = (ha.row(i).array() - ha.row(0).array()).matrix();
  CHECK(same_bits<float>(to_eigen(A), want));

  A = to_device(ha);
  A.block(5, 7, 10, 11) += A.block(5, 7, 10, 11) * 3.0f;  // the same window on both sides
  want = ha;
  want.block(5, 7, 10, 11) = (ha.block(5, 7, 10, 11).array() + ha.block(5, 7, 10, 11).array() * 3.0f).matrix();
  CHECK(same_bits<float>(to_eigen(A), want));
}

TEMPLATE_TEST_CASE("views in expressions: odd offsets and strides, written into windows", "[expr][views]", float,
                   std::uint8_t) {
  using T = TestType;
  const H<T> ha = rand_h<T>(99, 203), hb = rand_h<T>(101, 97);
  const auto A = to_device(ha), B = to_device(hb);
  const auto va = A.block(3, 5, 90, 90), vb = B.block(1, 2, 90, 90);
  const H<T> want = (ha.block(3, 5, 90, 90).array() - hb.block(1, 2, 90, 90).array() * T(3)).matrix();
  CHECK(same_bits<T>(to_eigen(va - vb * 3), want));
  auto D = DeviceMatrix<T>::zeros(95, 97);
  D.block(4, 6, 90, 90) = va - vb * 3;
  H<T> wd = H<T>::Zero(95, 97);
  wd.block(4, 6, 90, 90) = want;
  CHECK(same_bits<T>(to_eigen(D), wd));
  CHECK(same_bits<float>(to_eigen(cast<float>(va) * 0.5f), H<float>(ha.block(3, 5, 90, 90).template cast<float>() * 0.5f)));
  CHECK(to_eigen(A) == ha);
  CHECK(to_eigen(B) == hb);
}

TEMPLATE_TEST_CASE("views at every alignment: odd strides, each operand at its own offset, broadcasts, in place",
                   "[expr][views]", float, double, std::int32_t, std::uint8_t) {
  // Odd parent strides put every row of each view at its own offset within 16 bytes (the 2D
  // slot path); 1, 3 and 17 wide rows are shorter than or about one vector, 4095 is view-add's.
  using T = TestType;
  for (auto [rows, cols] : std::vector<std::pair<Index, Index>>{{37, 1}, {41, 3}, {29, 17}, {23, 100}, {9, 4095}}) {
    CAPTURE(shape(rows, cols));
    const H<T> ha = rand_h<T>(rows + 2, 2 * cols + 1), hb = rand_h<T>(rows + 1, cols + 5);
    const H<T> hr = rand_h<T>(2, cols + 7), hc = rand_h<T>(rows + 3, 3);
    const auto A = to_device(ha), B = to_device(hb), R = to_device(hr), C = to_device(hc);
    const auto va = A.block(1, 1, rows, cols), vb = B.block(1, 3, rows, cols);
    const auto vr = R.block(1, 2, 1, cols), vc = C.block(2, 1, rows, 1);
    H<T> want(rows, cols), wantb(rows, cols);
    for (Index i = 0; i < rows; ++i)
      for (Index j = 0; j < cols; ++j) {
        want(i, j) = T(ha(1 + i, 1 + j) + T(hb(1 + i, 3 + j) * T(3)));
        wantb(i, j) = T(T(ha(1 + i, 1 + j) - hr(1, 2 + j)) + hc(2 + i, 1));
      }
    CHECK(same_bits<T>(to_eigen(va + vb * 3), want));  // into a dense result: odd strides too
    CHECK(same_bits<T>(to_eigen(va - vr + vc), wantb));
    // In place on the odd-stride window; nothing around it written.
    auto A2 = to_device(ha);
    A2.block(1, 1, rows, cols) = A2.block(1, 1, rows, cols) + vb * 3;
    H<T> whole = ha;
    whole.block(1, 1, rows, cols) = want;
    CHECK(same_bits<T>(to_eigen(A2), whole));
    A2 = to_device(ha);
    A2.block(1, 1, rows, cols) = A2.block(1, 1, rows, cols) - vr + vc;
    whole.block(1, 1, rows, cols) = wantb;
    CHECK(same_bits<T>(to_eigen(A2), whole));
  }
}

TEST_CASE("cast inside an expression follows DeviceMatrix::cast", "[expr]") {
  const H<float> h = random_matrix<float>(65, 67, -300, 300);
  const auto A = to_device(h);
  CHECK(to_eigen(cast<std::uint8_t>(A * 1.0f)) == to_eigen(A.cast<std::uint8_t>()));
  CHECK(to_eigen(cast<std::int32_t>(A) + 1) == H<std::int32_t>(to_eigen(A.cast<std::int32_t>()).array() + 1));
  CHECK(to_eigen(A.threshold(10.0f)) == H<std::uint8_t>(h.unaryExpr([](float x) { return std::uint8_t(x > 10.0f ? 255 : 0); })));
}

namespace {
/// A process-wide setting of the engine (detail::set_expr_small_vector, set_expr_flat_units) for
/// a scope: `value` while it lives, the default (0) after.
struct ExprSetting {
  ExprSetting(void (*set)(int), int value) : set_(set) { set_(value); }
  ~ExprSetting() { set_(0); }
  ExprSetting(const ExprSetting&) = delete;
  ExprSetting& operator=(const ExprSetting&) = delete;

 private:
  void (*set_)(int);
};
}  // namespace

TEMPLATE_TEST_CASE("small expressions on narrower units give the default kernel's bits", "[expr]", float, double,
                   std::int32_t, std::uint8_t) {
  using T = TestType;
  // Small contiguous shapes (the flat path's one-unit-a-thread grids): tails of every length,
  // a 1 x 1, a single row and column, the benchmark's 256 x 256.
  const std::vector<std::pair<Index, Index>> small = {{1, 1}, {1, 37}, {37, 1}, {3, 5}, {61, 67}, {256, 256}, {257, 255}, {1, 4099}};
  for (const auto& [r, c] : small) {
    CAPTURE(r, c);
    const H<T> ha = rand_h<T>(r, c), hb = rand_h<T>(r, c);
    const auto A = to_device(ha), B = to_device(hb);
    const auto formula = [&] {
      if constexpr (std::is_floating_point_v<T>)
        return min(cwise_product(sqrt(square(abs((A + B) * T(0.5) - A)) + T(1)), A) - B, T(4));  // bench_expr's chain10
      else
        return max(A - B, T(3)) * T(2) + abs(B);
    };
    const DeviceMatrix<T> want = formula();  // the default: 16-byte units
    for (int v : {1, 2, 4, 8, 16}) {
      if (v * sizeof(T) > 16) continue;  // wider than the default: the default kernel
      CAPTURE(v);
      const ExprSetting setting(detail::set_expr_small_vector, v);
      DeviceMatrix<T> got = DeviceMatrix<T>::constant(r, c, poison_value<T>());
      got = formula();  // in place, into the poisoned window
      CHECK(same_bits<T>(to_eigen(got), to_eigen(want)));
      poison_next<T>(r, c, A.stream());
      const DeviceMatrix<T> fresh = formula();  // into a new (poisoned) matrix
      CHECK(same_bits<T>(to_eigen(fresh), to_eigen(want)));
    }
    // And the default against the host, one operation at a time in T (as the device rounds).
    H<T> ref(r, c);
    for (Index i = 0; i < r; ++i)
      for (Index j = 0; j < c; ++j) {
        const T a = ha(i, j), b = hb(i, j);
        if constexpr (std::is_floating_point_v<T>) {
          const T t = std::fabs(T(T(T(a + b) * T(0.5)) - a));
          ref(i, j) = std::min(T(T(std::sqrt(T(T(t * t) + T(1))) * a) - b), T(4));
        } else {
          const T m = std::max(static_cast<T>(a - b), T(3));
          const T ab = std::is_unsigned_v<T> ? b : static_cast<T>(b < 0 ? -b : b);
          ref(i, j) = static_cast<T>(static_cast<T>(m * 2) + ab);
        }
      }
    CHECK(close_ulps<T>(to_eigen(want), ref, 2));
  }
}

TEMPLATE_TEST_CASE("flat kernels, small and large, with and without a tail, give each element's bits", "[expr]",
                   float, double, std::int32_t, std::uint8_t) {
  using T = TestType;
  // The flat path compiles one kernel for each loop (one unit a thread on small matrices, U
  // units on large ones) and leaves out the tail's code where the element count is a multiple
  // of the unit. Shapes: small without a tail and with one (n % V = 3 for 4-element units),
  // large (over 2 blocks of full units an SM on any GPU up to 256 SMs, for every type) without
  // a tail and with one (n % 16 = 9, n % 4 = 1, n % 2 = 1).
  // The last, past 2 blocks an SM of 8 full units (every type on up to 128 SMs, 132 on the
  // H200 for 2-byte units and wider), also runs forced unroll counts (set_expr_flat_units).
  const std::vector<std::pair<Index, Index>> flat = {{256, 256}, {61, 67}, {2048, 2048}, {2053, 2053}, {4099, 4097}};
  for (const auto& [r, c] : flat) {
    CAPTURE(r, c);
    const H<T> ha = rand_h<T>(r, c), hb = rand_h<T>(r, c), hc = rand_h<T>(r, c);
    const auto A = to_device(ha), B = to_device(hb), C = to_device(hc);
    // Each operation rounded (or wrapped) to T, as the device does one at a time.
    H<T> ref(r, c);
    for (Index i = 0; i < r; ++i)
      for (Index j = 0; j < c; ++j) {
        const T a = ha(i, j), b = hb(i, j), x = hc(i, j);
        const T twice_a = static_cast<T>(T(2) * a), sum = static_cast<T>(twice_a + b), half = static_cast<T>(sum / T(2));
        T abs_x = x;  // DeviceMatrix::abs: x < 0 ? -x : x
        if constexpr (!std::is_unsigned_v<T>) abs_x = static_cast<T>(x < T(0) ? -x : x);
        ref(i, j) = static_cast<T>(half - abs_x);
      }
    DeviceMatrix<T> got = DeviceMatrix<T>::constant(r, c, poison_value<T>());
    got = (2 * A + B) / 2 - abs(C);  // into the poisoned matrix, where it is
    CHECK(same_bits<T>(to_eigen(got), ref));
    poison_next<T>(r, c, A.stream());
    const DeviceMatrix<T> fresh = (2 * A + B) / 2 - abs(C);  // into a new (poisoned) matrix
    CHECK(same_bits<T>(to_eigen(fresh), ref));
    if (r < 4099) continue;
    for (int u : {1, 3, 8}) {  // bench_elementwise's ours-u<N> kernels (3: a count no default takes)
      CAPTURE(u);
      const ExprSetting setting(detail::set_expr_flat_units, u);
      poison_next<T>(r, c, A.stream());
      const DeviceMatrix<T> forced = (2 * A + B) / 2 - abs(C);
      CHECK(same_bits<T>(to_eigen(forced), ref));
    }
  }
}

namespace {
/// set_expr_driver_launch for a scope (process-wide); the default, the driver's launch, after.
struct DriverLaunch {
  explicit DriverLaunch(bool on) : active(detail::set_expr_driver_launch(on)) {}
  ~DriverLaunch() { detail::set_expr_driver_launch(true); }
  DriverLaunch(const DriverLaunch&) = delete;
  DriverLaunch& operator=(const DriverLaunch&) = delete;
  const bool active;  // the driver's launch is in use
};
}  // namespace

TEMPLATE_TEST_CASE("the driver's launch gives the runtime launch's bits on every kernel path", "[expr]", float,
                   std::int32_t) {
  using T = TestType;
  using S = sum_t<T>;
  {
    const DriverLaunch on(true);
    CHECK(on.active);  // the runtime gives the driver's entry points: the fast launch runs below
  }
  const H<T> ha = rand_h<T>(257, 263), hb = rand_h<T>(257, 263), hc = rand_h<T>(100, 264);
  const auto A = to_device(ha), B = to_device(hb), C = to_device(hc);
  struct Results {
    H<T> flat, vec, slots;
    S sum_grid, sum_one;
    H<S> row_sums, col_sums;
    std::pair<Index, Index> arg;
  };
  const auto run = [&] {
    Results r;
    const auto poisoned = [](Index rows, Index cols) { return DeviceMatrix<T>::constant(rows, cols, poison_value<T>()); };
    DeviceMatrix<T> flat = poisoned(257, 263), vec = poisoned(100, 128), slots = poisoned(200, 201);
    flat = max(A - B, T(3)) * T(2) + abs(B);                              // contiguous: the flat kernel
    vec = C.block(0, 4, 100, 128) - C.block(7, 4, 1, 128) * T(2);        // aligned rows, a broadcast row: 2D vectors
    slots = A.block(1, 1, 200, 201) * T(3) - B.block(2, 3, 200, 201);   // odd offsets and stride: the slot path
    r.flat = to_eigen(flat);
    r.vec = to_eigen(vec);
    r.slots = to_eigen(slots);
    r.sum_grid = (A * T(2) - B).sum();                   // block partials, then the second pass
    r.sum_one = (A.block(3, 5, 2, 3) * T(2)).sum();      // one block
    r.row_sums = to_eigen(DeviceMatrix<S>((A - B).row_sums()));
    r.col_sums = to_eigen(DeviceMatrix<S>((A - B).col_sums()));
    r.arg = arg_max(A - B * T(2));                       // two generated kernels
    return r;
  };
  const Results driver = run();
  Results runtime;
  {
    const DriverLaunch off(false);
    CHECK_FALSE(off.active);
    runtime = run();
  }
  CHECK(same_bits<T>(driver.flat, runtime.flat));
  CHECK(same_bits<T>(driver.vec, runtime.vec));
  CHECK(same_bits<T>(driver.slots, runtime.slots));
  CHECK(driver.sum_grid == runtime.sum_grid);
  CHECK(driver.sum_one == runtime.sum_one);
  CHECK(same_bits<S>(driver.row_sums, runtime.row_sums));
  CHECK(same_bits<S>(driver.col_sums, runtime.col_sums));
  CHECK(driver.arg == runtime.arg);
  // And the driver's against the host, so that the comparison above cannot pass on two wrong runs.
  const H<T> want_slots = (ha.block(1, 1, 200, 201).array() * T(3) - hb.block(2, 3, 200, 201).array()).matrix();
  CHECK(same_bits<T>(driver.slots, want_slots));
  H<T> want_vec(100, 128);
  for (Index i = 0; i < 100; ++i)
    for (Index j = 0; j < 128; ++j) want_vec(i, j) = static_cast<T>(hc(i, 4 + j) - static_cast<T>(hc(7, 4 + j) * T(2)));
  CHECK(same_bits<T>(driver.vec, want_vec));
}

TEST_CASE("an evaluation on a new thread whose first CUDA call is its launch runs, and so does the next",
          "[expr][streams]") {
  const H<float> ha = random_matrix<float>(129, 67), hb = random_matrix<float>(129, 67);
  const auto A = to_device(ha), B = to_device(hb);
  const auto e = A * 2.0f - B;
  // Both kernels built here (the thread below only launches them), on the path it takes.
  const DeviceMatrix<float> first = e, compiled = e * 3.0f;
  auto R = DeviceMatrix<float>::constant(129, 67, poison_value<float>());
  auto R2 = DeviceMatrix<float>::constant(129, 67, poison_value<float>());
  R.synchronize();
  // With one GPU (no device guard call), a cached kernel and R's own stream, the launch is about
  // the thread's first CUDA call: the driver's launch may find no current context, and the
  // runtime's launch then makes one current; the second finds it.
  std::thread t([&] {
    R = e;
    R2 = e * 3.0f;
  });
  t.join();
  const H<float> want = (ha.array() * 2.0f - hb.array()).matrix();
  CHECK(same_bits<float>(to_eigen(R), want));
  CHECK(same_bits<float>(to_eigen(first), want));
  CHECK(same_bits<float>(to_eigen(R2), H<float>((want.array() * 3.0f).matrix())));
  CHECK(same_bits<float>(to_eigen(R2), to_eigen(compiled)));
}

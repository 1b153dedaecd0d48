// Reductions: sum, min, max, mean (host and async forms), row and column sums, against a
// reference computed in long double (floats) or exactly (integers), every type, awkward shapes.
#include "support/util.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {
template <class T> double lo() { return std::is_same_v<T, std::uint8_t> ? 0 : std::is_integral_v<T> ? -1e9 : -1; }
template <class T> double hi() { return std::is_same_v<T, std::uint8_t> ? 255 : std::is_integral_v<T> ? 1e9 : 1; }

/// The exact (integers) or long-double (floats) sum of v[0], v[stride], ... (n values), and the
/// sum of their magnitudes.
template <class T>
std::pair<long double, long double> ref_sum(const T* v, Index n, Index stride = 1) {
  long double s = 0, m = 0;
  for (Index i = 0; i < n; ++i) {
    const long double x = static_cast<long double>(v[i * stride]);
    s += x;
    m += std::fabs(x);
  }
  return {s, m};
}

template <class T>
sum_t<T> ref_int_sum(const T* v, Index n, Index stride = 1) {
  sum_t<T> s = 0;
  for (Index i = 0; i < n; ++i) s += static_cast<sum_t<T>>(v[i * stride]);
  return s;
}

/// A float sum of n values is right if it is within the pairwise-summation bound
/// max(1, log2 n) * eps * sum|x| of the exact sum, and, since devmat accumulates floats in
/// double and rounds once, within about one rounding of the result itself.
template <class S>
bool sum_close(S got, long double want, long double abs_sum, Index n) {
  const long double eps = std::numeric_limits<S>::epsilon();
  const long double err = std::fabs(static_cast<long double>(got) - want);
  const long double pairwise = std::max(1.0L, std::log2(static_cast<long double>(std::max<Index>(n, 1)))) * eps * abs_sum;
  if (err > pairwise) return false;
  if constexpr (std::is_same_v<S, float>) return err <= eps * std::fabs(want) + 1e-12L * abs_sum;
  return true;
}

template <class T>
void check_sum_value(sum_t<T> got, const T* v, Index n, Index stride = 1) {
  if constexpr (std::is_integral_v<T>) {
    CHECK(got == ref_int_sum(v, n, stride));
  } else {
    const auto [s, m] = ref_sum(v, n, stride);
    const double want = static_cast<double>(s), abs_sum = static_cast<double>(m);
    CAPTURE(got, want, abs_sum, n);
    CHECK(sum_close(got, s, m, n));
  }
}

template <class T>
const std::vector<std::pair<Index, Index>>& extra_shapes() {
  // Wide and tall; rows split into chunks (few long rows); columns split into row chunks (tall);
  // column vectors of 16, 8, 4, 2 and 1 bytes; a team of every width for short rows.
  static const std::vector<std::pair<Index, Index>> s = {
      {3, 100003}, {100003, 3}, {1, 1 << 20}, {(1 << 20) + 3, 1}, {7, 70001}, {2, 1000003}, {5, 65536},
      {16, 16384}, {300, 8192}, {1000, 8200}, {3000, 64}, {2000, 48}, {50000, 40}, {123457, 17},
      {4099, 9}, {999, 100}, {777, 130}, {517, 129}, {33, 4096}, {20000, 96}, {1, 16}, {16, 1}};
  return s;
}
}  // namespace

TEMPLATE_TEST_CASE("sum, min, max and mean match the reference", "[reduce]", float, double, std::int32_t,
                   std::uint8_t) {
  using T = TestType;
  using S = sum_t<T>;
  const Stream stream = Stream::per_thread();
  auto shapes = awkward_shapes();
  for (auto rc : extra_shapes<T>()) shapes.push_back(rc);
  for (auto [r, c] : shapes) {
    CAPTURE(shape(r, c));
    const HostMatrix<T> h = random_matrix<T>(r, c, lo<T>(), hi<T>());
    const auto a = to_device(h, stream);
    const Index n = r * c;

    check_sum_value<T>(a.sum(), h.data(), n);
    poison_next<S>(1, 1, stream);
    const DeviceMatrix<S> s_dev = a.sum_async();
    REQUIRE(s_dev.rows() == 1);
    REQUIRE(s_dev.cols() == 1);
    CHECK(s_dev.stream() == a.stream());
    check_sum_value<T>(s_dev.to_vector()[0], h.data(), n);

    if (n == 0) {
      CHECK_THROWS_AS(a.min(), shape_error);
      CHECK_THROWS_AS(a.max(), shape_error);
      CHECK_THROWS_AS(a.mean(), shape_error);
      CHECK_THROWS_AS(a.min_async(), shape_error);
      CHECK_THROWS_AS(a.max_async(), shape_error);
      CHECK_THROWS_AS(a.mean_async(), shape_error);
      continue;
    }
    CHECK(a.min() == h.minCoeff());
    CHECK(a.max() == h.maxCoeff());
    poison_next<T>(1, 1, stream);
    CHECK(a.min_async().to_vector()[0] == h.minCoeff());
    poison_next<T>(1, 1, stream);
    CHECK(a.max_async().to_vector()[0] == h.maxCoeff());

    const auto [s, m] = ref_sum(h.data(), n);
    const double want_mean = static_cast<double>(s / n);
    const double tol = std::is_integral_v<T> ? 1e-15 * std::fabs(want_mean)
                                             : (std::log2(double(n)) + 2) * std::numeric_limits<T>::epsilon() * double(m / n);
    CHECK(std::fabs(a.mean() - want_mean) <= tol);
    poison_next<double>(1, 1, stream);
    CHECK(std::fabs(a.mean_async().to_vector()[0] - want_mean) <= tol);
    CHECK(to_eigen(a) == h);  // operand intact
  }
}

TEMPLATE_TEST_CASE("row_sums and col_sums match the reference", "[reduce]", float, double, std::int32_t,
                   std::uint8_t) {
  using T = TestType;
  using S = sum_t<T>;
  const Stream stream = Stream::per_thread();
  auto shapes = awkward_shapes();
  for (auto rc : extra_shapes<T>()) shapes.push_back(rc);
  for (auto [r, c] : shapes) {
    CAPTURE(shape(r, c));
    const HostMatrix<T> h = random_matrix<T>(r, c, lo<T>(), hi<T>());
    const auto a = to_device(h, stream);

    poison_next<S>(r, 1, stream);
    const DeviceMatrix<S> rs = a.row_sums();
    REQUIRE(rs.rows() == r);
    REQUIRE(rs.cols() == 1);
    CHECK(rs.stream() == a.stream());
    const std::vector<S> rv = rs.to_vector();
    Index bad_rows = 0;
    for (Index i = 0; i < r; ++i) {
      if constexpr (std::is_integral_v<T>) {
        bad_rows += rv[i] != ref_int_sum(h.data() + i * c, c);
      } else {
        const auto [s, m] = ref_sum(h.data() + i * c, c);
        bad_rows += !sum_close(rv[i], s, m, c);
      }
    }
    CHECK(bad_rows == 0);

    poison_next<S>(1, c, stream);
    const DeviceMatrix<S> cs = a.col_sums();
    REQUIRE(cs.rows() == 1);
    REQUIRE(cs.cols() == c);
    CHECK(cs.stream() == a.stream());
    const std::vector<S> cv = cs.to_vector();
    Index bad_cols = 0;
    for (Index j = 0; j < c; ++j) {
      if constexpr (std::is_integral_v<T>) {
        bad_cols += cv[j] != ref_int_sum(h.data() + j, r, c);
      } else {
        const auto [s, m] = ref_sum(h.data() + j, r, c);
        bad_cols += !sum_close(cv[j], s, m, r);
      }
    }
    CHECK(bad_cols == 0);
  }
}

TEST_CASE("sums are bitwise the same on every run") {
  const Index n = 10'000'019;
  const HostMatrix<float> h = random_matrix<float>(1, n, -1, 1);
  const auto a = to_device(h);
  const float first = a.sum();
  for (int i = 0; i < 5; ++i) {
    const float again = a.sum();
    CHECK(std::memcmp(&again, &first, sizeof(float)) == 0);
    const float async = a.sum_async().to_vector()[0];
    CHECK(std::memcmp(&async, &first, sizeof(float)) == 0);
  }
  const double mean = a.mean();
  CHECK(a.mean() == mean);
  check_sum_value<float>(first, h.data(), n);

  for (auto [r, c] : {std::pair<Index, Index>{3, 3'000'017}, {3'000'017, 3}, {4096, 4096}}) {
    CAPTURE(shape(r, c));
    const auto m = to_device(random_matrix<float>(r, c, -1, 1));
    const std::vector<float> rows0 = m.row_sums().to_vector(), cols0 = m.col_sums().to_vector();
    for (int i = 0; i < 3; ++i) {
      const std::vector<float> rows1 = m.row_sums().to_vector(), cols1 = m.col_sums().to_vector();
      CHECK(std::memcmp(rows0.data(), rows1.data(), rows0.size() * sizeof(float)) == 0);
      CHECK(std::memcmp(cols0.data(), cols1.data(), cols0.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("float sums stay accurate where float accumulation would not") {
  // 2^24 + 17 values near 0.1: a float running sum stalls once it passes 2^21 or so.
  const Index n = (Index(1) << 24) + 17;
  const HostMatrix<float> h = random_matrix<float>(1, n, 0.09, 0.11);
  const auto a = to_device(h);
  const auto [s, m] = ref_sum(h.data(), n);
  const float got = a.sum();
  const double want = static_cast<double>(s);
  CAPTURE(got, want);
  CHECK(std::fabs(got - want) <= std::numeric_limits<float>::epsilon() * want);
  CHECK(std::fabs(a.mean() - static_cast<double>(s / n)) <= 1e-12 * static_cast<double>(s / n));
}

TEST_CASE("more partial sums than a block has threads (n > 512 * 1024, not a block multiple)") {
  for (Index n : {Index(512) * 1024 + 1, Index(512) * 1024 * 3 + 7, Index(16384) * 1000 - 1, Index(4'000'037)}) {
    CAPTURE(n);
    const HostMatrix<float> hf = random_matrix<float>(1, n, -1, 1);
    check_sum_value<float>(to_device(hf).sum(), hf.data(), n);
    const HostMatrix<std::int32_t> hi = random_matrix<std::int32_t>(n, 1, -1e9, 1e9);
    check_sum_value<std::int32_t>(to_device(hi).sum(), hi.data(), n);
    const HostMatrix<double> hd = random_matrix<double>(1, n, 0, 1);
    check_sum_value<double>(to_device(hd).sum(), hd.data(), n);
  }
}

TEST_CASE("integer sums never overflow") {
  {
    const Index r = 4096, c = 1024;
    const std::int32_t big = std::numeric_limits<std::int32_t>::max();
    auto a = DeviceMatrix<std::int32_t>::constant(r, c, big);
    CHECK(a.sum() == std::int64_t(big) * r * c);
    CHECK(a.mean() == double(big));
    const std::vector<std::int64_t> rs = a.row_sums().to_vector(), cs = a.col_sums().to_vector();
    CHECK(std::count(rs.begin(), rs.end(), std::int64_t(big) * c) == r);
    CHECK(std::count(cs.begin(), cs.end(), std::int64_t(big) * r) == c);
    auto b = DeviceMatrix<std::int32_t>::constant(r, c, std::numeric_limits<std::int32_t>::min());
    CHECK(b.sum() == std::int64_t(std::numeric_limits<std::int32_t>::min()) * r * c);
  }
  {
    // 255 * (2^24 + 5) passes 2^32: per-thread 32-bit byte sums must be widened in time, in
    // the column path too (more than 2^24 rows of 16 bytes).
    const Index r = (Index(1) << 24) + 5, c = 16;
    auto a = DeviceMatrix<std::uint8_t>::constant(r, c, 255);
    CHECK(a.sum() == std::uint64_t(255) * r * c);
    const std::vector<std::uint64_t> cs = a.col_sums().to_vector();
    CHECK(std::count(cs.begin(), cs.end(), std::uint64_t(255) * r) == c);
    const std::vector<std::uint64_t> rs = a.row_sums().to_vector();
    CHECK(std::count(rs.begin(), rs.end(), std::uint64_t(255) * c) == r);
    CHECK(a.max() == 255);
    CHECK(a.min() == 255);
  }
}

TEST_CASE("uint8 reductions past 2^31 elements", "[large]") {
  // v(r, c) = (r + c) mod 256, so every sum has a closed form.
  const Index rows = 65537, cols = 32771;  // 2,147,713,027 elements
  std::vector<std::uint8_t> pattern(static_cast<std::size_t>(cols + 256));
  for (std::size_t k = 0; k < pattern.size(); ++k) pattern[k] = static_cast<std::uint8_t>(k);
  std::vector<std::uint8_t> h(static_cast<std::size_t>(rows * cols));
  for (Index r = 0; r < rows; ++r) std::memcpy(h.data() + r * cols, pattern.data() + (r & 255), static_cast<std::size_t>(cols));
  auto a = DeviceMatrix<std::uint8_t>::from_vector(h, rows, cols);
  std::vector<std::uint8_t>().swap(h);

  auto count_mod = [](Index n) {  // how many i in [0, n) have i mod 256 == k
    std::vector<std::uint64_t> count(256, static_cast<std::uint64_t>(n / 256));
    for (Index k = 0; k < n % 256; ++k) ++count[static_cast<std::size_t>(k)];
    return count;
  };
  const auto cols_mod = count_mod(cols), rows_mod = count_mod(rows);
  auto line_sum = [](const std::vector<std::uint64_t>& count, Index i) {
    std::uint64_t s = 0;
    for (Index k = 0; k < 256; ++k) s += count[static_cast<std::size_t>(k)] * static_cast<std::uint64_t>((i + k) & 255);
    return s;
  };
  std::uint64_t total = 0;
  for (Index r = 0; r < rows; ++r) total += line_sum(cols_mod, r);

  CHECK(a.sum() == total);
  CHECK(a.sum_async().to_vector()[0] == total);
  CHECK(a.min() == 0);
  CHECK(a.max() == 255);
  CHECK(std::fabs(a.mean() - double(total) / double(rows * cols)) <= 1e-12 * a.mean());
  const std::vector<std::uint64_t> rs = a.row_sums().to_vector();
  Index bad = 0;
  for (Index r = 0; r < rows; ++r) bad += rs[static_cast<std::size_t>(r)] != line_sum(cols_mod, r);
  CHECK(bad == 0);
  const std::vector<std::uint64_t> cs = a.col_sums().to_vector();
  bad = 0;
  for (Index c = 0; c < cols; ++c) bad += cs[static_cast<std::size_t>(c)] != line_sum(rows_mod, c);
  CHECK(bad == 0);
}

TEST_CASE("empty matrices: sum 0, row and column sums of zeros, the rest a shape_error") {
  for (auto [r, c] : {std::pair<Index, Index>{0, 0}, {0, 5}, {5, 0}}) {
    CAPTURE(shape(r, c));
    DeviceMatrix<float> a(r, c);
    CHECK(a.sum() == 0.0f);
    poison_next<float>(1, 1, Stream::per_thread());
    CHECK(a.sum_async().to_vector() == std::vector<float>{0.0f});
    DeviceMatrix<std::uint8_t> b(r, c);
    CHECK(b.sum() == 0u);
    CHECK_THROWS_AS(a.min(), shape_error);
    CHECK_THROWS_AS(b.max(), shape_error);
    CHECK_THROWS_AS(a.mean(), shape_error);
    poison_next<float>(r, 1, Stream::per_thread());
    const auto rs = a.row_sums();
    CHECK(rs.rows() == r);
    CHECK(rs.cols() == 1);
    CHECK(rs.to_vector() == std::vector<float>(static_cast<std::size_t>(r), 0.0f));
    poison_next<std::uint64_t>(1, c, Stream::per_thread());
    const auto cs = b.col_sums();
    CHECK(cs.rows() == 1);
    CHECK(cs.cols() == c);
    CHECK(cs.to_vector() == std::vector<std::uint64_t>(static_cast<std::size_t>(c), 0u));
  }
}

TEST_CASE("reductions run on the matrix's stream; min and max propagate NaN") {
  const Stream s = Stream::create();
  const HostMatrix<double> h = random_matrix<double>(300, 500, -5, 5);
  const auto a = to_device(h, s);
  const auto sum = a.sum_async();
  const auto mn = a.min_async();
  const auto mean = a.mean_async();
  CHECK(sum.stream() == s);
  CHECK(mn.stream() == s);
  CHECK(mean.stream() == s);
  CHECK(a.row_sums().stream() == s);
  CHECK(a.col_sums().stream() == s);
  CHECK(mn.to_vector()[0] == h.minCoeff());
  check_sum_value<double>(sum.to_vector()[0], h.data(), h.size());

  std::vector<float> v(1000, 1.0f);
  v[517] = std::numeric_limits<float>::quiet_NaN();
  const auto f = DeviceMatrix<float>::from_vector(v, 10, 100);
  CHECK(std::isnan(f.min()));
  CHECK(std::isnan(f.max()));
  std::vector<float> inf = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  const auto g = DeviceMatrix<float>::from_vector(inf, 1, 2);
  CHECK(g.max() == std::numeric_limits<float>::infinity());
  CHECK(g.min() == -std::numeric_limits<float>::infinity());
}

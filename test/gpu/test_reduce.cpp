// Reductions: sum, min, max, mean (host and async forms), row and column sums, against a
// reference computed in long double (floats) or exactly (integers), every type, awkward shapes;
// infinities and NaN in float and double sums by IEEE rules, on every code path.
#include "support/reduce_ref.hpp"
#include "support/util.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {
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

// ------------------------------------------------------------------ IEEE infinities and NaN
/// Whether `got` is what IEEE arithmetic makes of the sum of v[0], v[stride], ... (n values)
/// in any order: NaN if a value is NaN or both infinities occur; else the infinity that
/// occurs; else the finite sum, which rounds to an infinity when it passes the largest finite
/// value (so two maxima give +inf). Inputs that hold two maxima and an infinity of the other
/// sign depend on the order (an overflow first gives NaN) and are not used.
template <class S, class T>
bool ieee_sum_ok(S got, const T* v, Index n, Index stride = 1) {
  bool nan = false, pos = false, neg = false;
  for (Index i = 0; i < n; ++i) {
    const T x = v[i * stride];
    nan |= std::isnan(x);
    pos |= x == std::numeric_limits<T>::infinity();
    neg |= x == -std::numeric_limits<T>::infinity();
  }
  if (nan || (pos && neg)) return std::isnan(got);
  if (pos) return got == std::numeric_limits<S>::infinity();
  if (neg) return got == -std::numeric_limits<S>::infinity();
  const auto [s, m] = ref_sum(v, n, stride);
  const S rounded = static_cast<S>(s);  // an exact sum past the largest S rounds to an infinity
  if (std::isinf(rounded)) return got == rounded;
  return sum_close(got, s, m, n);
}

/// What is put into a line (a row or a column) of random values in [-1, 1].
enum Plant { kPosInf, kNegInf, kBothInf, kNaN, kTwoMax, kPlants };
const char* plant_name(int p) {
  static const char* const names[kPlants] = {"+inf", "-inf", "+inf and -inf", "NaN", "two maxima"};
  return names[p];
}

/// Puts `p` into the n values v[0], v[stride], ...: +inf at a random place, -inf as the last
/// value (the tail that vector loads leave), +inf first and -inf at a random place, NaN at a
/// random place, or the largest finite value at two random places. Needs n >= 2 for the
/// last two-value plants.
template <class T>
void plant(T* v, Index n, Index stride, int p) {
  std::uniform_int_distribution<Index> d(0, n - 1);
  const Index i = d(rng());
  const Index j = n > 1 ? (i + 1 + std::uniform_int_distribution<Index>(0, n - 2)(rng())) % n : i;  // j != i
  const T inf = std::numeric_limits<T>::infinity(), big = std::numeric_limits<T>::max();
  switch (p) {
    case kPosInf: v[i * stride] = inf; break;
    case kNegInf: v[(n - 1) * stride] = -inf; break;
    case kBothInf: v[0] = inf, v[(i == 0 ? j : i) * stride] = -inf; break;
    case kNaN: v[i * stride] = std::numeric_limits<T>::quiet_NaN(); break;
    case kTwoMax: v[i * stride] = big, v[j * stride] = big; break;
  }
}

/// Checks every entry of `got` (one sum per line) against ieee_sum_ok; reports the first bad one.
template <class S, class T>
void check_line_sums(const char* what, const std::vector<S>& got, const T* data, Index lines, Index line_step, Index len,
                     Index stride) {
  Index bad = 0, first = -1;
  for (Index l = 0; l < lines; ++l) {
    if (!ieee_sum_ok(got[static_cast<std::size_t>(l)], data + l * line_step, len, stride)) {
      if (bad++ == 0) first = l;
    }
  }
  INFO(what << ": " << bad << " wrong, the first at " << first << " = "
            << (first >= 0 ? got[static_cast<std::size_t>(first)] : S(0)));
  CHECK(bad == 0);
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

TEMPLATE_TEST_CASE("reductions of views read the window through its stride", "[reduce][views]", float, double,
                   std::int32_t, std::uint8_t) {
  using T = TestType;
  using S = sum_t<T>;
  const Stream stream = Stream::per_thread();
  // Parents whose windows have short strided rows (a team per row), rows past the 2048-element
  // unit (split into units), one long row, single columns, and odd offsets everywhere.
  // Strides of every alignment: 53 and 1031 elements (each row's head at another offset within
  // 16 bytes), 8200 and 1024 (every row's head at the window's offset).
  for (auto [R, C] : std::vector<std::pair<Index, Index>>{
           {37, 53}, {300, 8200}, {20001, 3}, {5, 70001}, {1, 1}, {64, 1031}, {1029, 1024}}) {
    const HostMatrix<T> h = random_matrix<T>(R, C, lo<T>(), hi<T>());
    const auto a = to_device(h, stream);
    const std::vector<std::array<Index, 4>> windows = {
        {0, 0, R, C}, {R / 3, C / 5, R - R / 3, C - C / 5}, {0, C - 1, R, 1}, {R - 1, 0, 1, C},
        {R / 2, C / 3, (R + 1) / 2, C / 2}, {0, 1, R, C - 1}, {1, 0, R - 1, C}, {R / 2, C / 2, 0, C / 2}};
    for (const auto& w : windows) {
      CAPTURE(shape(R, C), w[0], w[1], w[2], w[3]);
      const MatrixView<const T> v = a.block(w[0], w[1], w[2], w[3]);
      const HostMatrix<T> want = h.block(w[0], w[1], w[2], w[3]);  // dense, row-major
      const Index r = want.rows(), c = want.cols(), n = r * c;

      check_sum_value<T>(v.sum(), want.data(), n);
      poison_next<S>(1, 1, stream);
      check_sum_value<T>(v.sum_async().to_vector()[0], want.data(), n);
      if (n == 0) {
        CHECK_THROWS_AS(v.min(), shape_error);
        CHECK_THROWS_AS(v.max_async(), shape_error);
        CHECK_THROWS_AS(v.mean(), shape_error);
      } else {
        CHECK(v.min() == want.minCoeff());
        poison_next<T>(1, 1, stream);
        CHECK(v.max_async().to_vector()[0] == want.maxCoeff());
        const auto [s, m] = ref_sum(want.data(), n);
        const double want_mean = static_cast<double>(s / n);
        const double tol = std::is_integral_v<T>
                               ? 1e-15 * std::fabs(want_mean)
                               : (std::log2(double(n)) + 2) * std::numeric_limits<T>::epsilon() * double(m / n);
        CHECK(std::fabs(v.mean() - want_mean) <= tol);
      }

      poison_next<S>(r, 1, stream);
      const std::vector<S> rv = v.row_sums().to_vector();
      REQUIRE(static_cast<Index>(rv.size()) == r);
      Index bad = 0;
      for (Index i = 0; i < r; ++i) {
        if constexpr (std::is_integral_v<T>) {
          bad += rv[i] != ref_int_sum(want.data() + i * c, c);
        } else {
          const auto [s, m] = ref_sum(want.data() + i * c, c);
          bad += !sum_close(rv[i], s, m, c);
        }
      }
      poison_next<S>(1, c, stream);
      const std::vector<S> cv = v.col_sums().to_vector();
      REQUIRE(static_cast<Index>(cv.size()) == c);
      for (Index j = 0; j < c; ++j) {
        if constexpr (std::is_integral_v<T>) {
          bad += cv[j] != ref_int_sum(want.data() + j, r, c);
        } else {
          const auto [s, m] = ref_sum(want.data() + j, r, c);
          bad += !sum_close(cv[j], s, m, r);
        }
      }
      CHECK(bad == 0);
    }
    CHECK(to_eigen(a) == h);  // the parent is intact
  }
}

TEMPLATE_TEST_CASE("row and column sums of tall-narrow and short-wide matrices", "[reduce]", float, double,
                   std::int32_t, std::uint8_t) {
  using T = TestType;
  using S = sum_t<T>;
  const Stream stream = Stream::per_thread();
  // Tall: more rows than one round of the persistent teams takes (several rounds, a partial
  // last one), aligned rows of 16 and unaligned rows of 3 and 33. Wide: enough columns for a
  // thread per vector of columns (16 bytes, and single elements where cols is odd).
  const std::vector<std::pair<Index, Index>> shapes = {
      {(Index(1) << 20) + 7, 16}, {(Index(1) << 20) + 3, 3}, {(Index(1) << 19) + 1, 33},
      {16, (Index(1) << 21) + 16}, {5, 1000003}, {33, Index(1) << 18}};
  for (auto [r, c] : shapes) {
    CAPTURE(shape(r, c));
    const HostMatrix<T> h = random_matrix<T>(r, c, lo<T>(), hi<T>());
    const auto a = to_device(h, stream);
    poison_next<S>(r, 1, stream);
    const std::vector<S> rv = a.row_sums().to_vector();
    REQUIRE(static_cast<Index>(rv.size()) == r);
    Index bad_rows = 0;
    for (Index i = 0; i < r; ++i) {
      if constexpr (std::is_integral_v<T>) {
        bad_rows += rv[static_cast<std::size_t>(i)] != ref_int_sum(h.data() + i * c, c);
      } else {
        const auto [s, m] = ref_sum(h.data() + i * c, c);
        bad_rows += !sum_close(rv[static_cast<std::size_t>(i)], s, m, c);
      }
    }
    CHECK(bad_rows == 0);
    poison_next<S>(1, c, stream);
    const std::vector<S> cv = a.col_sums().to_vector();
    REQUIRE(static_cast<Index>(cv.size()) == c);
    Index bad_cols = 0;
    for (Index j = 0; j < c; ++j) {
      if constexpr (std::is_integral_v<T>) {
        bad_cols += cv[static_cast<std::size_t>(j)] != ref_int_sum(h.data() + j, r, c);
      } else {
        const auto [s, m] = ref_sum(h.data() + j, r, c);
        bad_cols += !sum_close(cv[static_cast<std::size_t>(j)], s, m, r);
      }
    }
    CHECK(bad_cols == 0);
    // The same through a window at an odd offset: unaligned rows, another path for each.
    if (r > 2 && c > 2) {
      const MatrixView<const T> v = a.block(1, 1, r - 2, c - 2);
      const HostMatrix<T> want = h.block(1, 1, r - 2, c - 2);
      const Index wr = want.rows(), wc = want.cols();
      check_sum_value<T>(v.sum(), want.data(), wr * wc);
      poison_next<S>(wr, 1, stream);
      const std::vector<S> wrv = v.row_sums().to_vector();
      poison_next<S>(1, wc, stream);
      const std::vector<S> wcv = v.col_sums().to_vector();
      Index bad = 0;
      for (Index i = 0; i < wr; ++i) {
        if constexpr (std::is_integral_v<T>) {
          bad += wrv[static_cast<std::size_t>(i)] != ref_int_sum(want.data() + i * wc, wc);
        } else {
          const auto [s, m] = ref_sum(want.data() + i * wc, wc);
          bad += !sum_close(wrv[static_cast<std::size_t>(i)], s, m, wc);
        }
      }
      for (Index j = 0; j < wc; ++j) {
        if constexpr (std::is_integral_v<T>) {
          bad += wcv[static_cast<std::size_t>(j)] != ref_int_sum(want.data() + j, wr, wc);
        } else {
          const auto [s, m] = ref_sum(want.data() + j, wr, wc);
          bad += !sum_close(wcv[static_cast<std::size_t>(j)], s, m, wr);
        }
      }
      CHECK(bad == 0);
    }
  }
}

TEMPLATE_TEST_CASE("sums with infinities and NaN follow IEEE", "[reduce]", float, double) {
  using T = TestType;
  const T inf = std::numeric_limits<T>::infinity(), big = std::numeric_limits<T>::max();
  const T nan = std::numeric_limits<T>::quiet_NaN();
  struct Case {
    std::vector<T> v;
    T want;         // NaN: any NaN
    bool overflow;  // the infinity comes from rounding a finite sum: the mean is then finite
  };
  const std::vector<Case> cases = {
      {{1, inf, 2}, inf, false},         {{-inf, 5}, -inf, false},       {{big, big}, inf, true},
      {{-big, -big}, -inf, true},        {{inf, -inf}, nan, false},      {{1, nan, 2}, nan, false},
      {{nan, inf}, nan, false},          {{inf, inf, inf}, inf, false},  {{inf}, inf, false},
      {{2, 3, -inf, -inf, 7}, -inf, false}, {{-inf, 1, inf}, nan, false}, {{big, 1, big, -1}, inf, true}};
  const auto same = [](auto got, T want) { return std::isnan(want) ? std::isnan(got) : got == want; };
  for (const Case& c : cases) {
    const Index n = static_cast<Index>(c.v.size());
    CAPTURE(c.v, c.want);
    const auto row = DeviceMatrix<T>::from_vector(c.v, 1, n);
    const auto col = DeviceMatrix<T>::from_vector(c.v, n, 1);
    CHECK(same(row.sum(), c.want));
    CHECK(same(col.sum(), c.want));
    CHECK(same(row.sum_async().to_vector()[0], c.want));
    CHECK(same(row.row_sums().to_vector()[0], c.want));
    CHECK(same(col.col_sums().to_vector()[0], c.want));
    if (!c.overflow) {
      CHECK(same(row.mean(), c.want));
      CHECK(same(col.mean_async().to_vector()[0], c.want));
    }
  }
}

TEMPLATE_TEST_CASE("one infinity or NaN anywhere in a large matrix decides its sum and mean", "[reduce]", float,
                   double) {
  using T = TestType;
  const T inf = std::numeric_limits<T>::infinity();
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{
           {1000, 1000}, {1, (1 << 20) + 3}, {(1 << 20) + 3, 1}, {3, 200000}, {4099, 9}, {17, 15}}) {
    const HostMatrix<T> h = random_matrix<T>(r, c, -1, 1);
    for (int p = 0; p < kPlants; ++p) {
      CAPTURE(shape(r, c), plant_name(p));
      HostMatrix<T> m = h;
      plant(m.data(), m.size(), 1, p);
      const T want = p == kPosInf || p == kTwoMax ? inf : p == kNegInf ? -inf : std::numeric_limits<T>::quiet_NaN();
      const auto same = [&](auto got) { return std::isnan(want) ? std::isnan(got) : got == want; };
      const auto a = to_device(m);
      const T sum = a.sum();
      CAPTURE(sum);
      CHECK(same(sum));
      CHECK(same(a.sum_async().to_vector()[0]));
      if (p != kTwoMax) {  // the mean of two maxima and small values is finite
        const double mean = a.mean();
        CAPTURE(mean);
        CHECK(same(mean));
        CHECK(same(a.mean_async().to_vector()[0]));
      }
    }
  }
}

TEMPLATE_TEST_CASE("row and column sums with infinities and NaN follow IEEE on every code path", "[reduce]", float,
                   double) {
  using T = TestType;
  using S = sum_t<T>;
  // Row sums: teams of 1..16 lanes (rows under 512 bytes), a warp per row, a block per row
  // (8192 columns or more), rows split into chunks (few long rows). Column sums: narrow and
  // wide strips, tall matrices whose columns are split into row chunks.
  const std::vector<std::pair<Index, Index>> shapes = {
      {3, 200000}, {200000, 3}, {64, 9000}, {300, 8200}, {1, 100003}, {100003, 1}, {1000, 3},  {500, 12},
      {400, 30},   {300, 60},   {200, 100}, {100, 1000}, {5000, 40},  {123457, 17}, {16, 16384}, {17, 15},
      {2, 2},      {20000, 96}};
  for (auto [r, c] : shapes) {
    const HostMatrix<T> h = random_matrix<T>(r, c, -1, 1);
    // Plants along rows, then along columns; with fewer lines than plants, several rounds.
    for (bool along_rows : {true, false}) {
      const Index lines = along_rows ? r : c, len = along_rows ? c : r;
      const Index line_step = along_rows ? c : 1, stride = along_rows ? 1 : c;
      for (int first = 0; first < kPlants; first += static_cast<int>(std::min<Index>(lines, kPlants))) {
        HostMatrix<T> m = h;
        std::vector<Index> order(static_cast<std::size_t>(lines));
        for (Index l = 0; l < lines; ++l) order[static_cast<std::size_t>(l)] = l;
        std::shuffle(order.begin(), order.end(), rng());
        std::string planted;  // "line: what; ..."
        for (int p = first; p < kPlants && p - first < lines; ++p) {
          if (len < 2 && (p == kBothInf || p == kTwoMax)) continue;
          const Index l = order[static_cast<std::size_t>(p - first)];
          plant(m.data() + l * line_step, len, stride, p);
          planted += std::to_string(l) + ": " + plant_name(p) + "; ";
        }
        CAPTURE(shape(r, c), along_rows, planted);
        const auto a = to_device(m);
        poison_next<S>(r, 1, a.stream());
        const std::vector<S> rs = a.row_sums().to_vector();
        REQUIRE(rs.size() == static_cast<std::size_t>(r));
        check_line_sums("row_sums", rs, m.data(), r, c, c, 1);
        poison_next<S>(1, c, a.stream());
        const std::vector<S> cs = a.col_sums().to_vector();
        REQUIRE(cs.size() == static_cast<std::size_t>(c));
        check_line_sums("col_sums", cs, m.data(), c, 1, r, c);
      }
    }
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

  for (auto [r, c] : {std::pair<Index, Index>{3, 3'000'017}, {3'000'017, 3}, {4096, 4096}, {(1 << 20) + 7, 16},
                      {16, (1 << 21) + 16}, {(1 << 19) + 1, 33}}) {
    CAPTURE(shape(r, c));
    const auto m = to_device(random_matrix<float>(r, c, -1, 1));
    const std::vector<float> rows0 = m.row_sums().to_vector(), cols0 = m.col_sums().to_vector();
    for (int i = 0; i < 3; ++i) {
      const std::vector<float> rows1 = m.row_sums().to_vector(), cols1 = m.col_sums().to_vector();
      CHECK(std::memcmp(rows0.data(), rows1.data(), rows0.size() * sizeof(float)) == 0);
      CHECK(std::memcmp(cols0.data(), cols1.data(), cols0.size() * sizeof(float)) == 0);
    }
  }

  // A window's sum, at an odd offset of a parent with an odd stride and with an aligned one.
  for (Index C : {Index(4103), Index(4104)}) {
    CAPTURE(C);
    const auto m = to_device(random_matrix<float>(4097, C, -1, 1));
    const MatrixView<const float> v = m.block(1, 3, 4000, 4000);
    const float first_view = v.sum();
    for (int i = 0; i < 3; ++i) {
      const float again = v.sum_async().to_vector()[0];
      CHECK(std::memcmp(&again, &first_view, sizeof(float)) == 0);
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

// Generated matrices and assembly: identity against Eigen's Identity; random_uniform and
// random_normal against a host Philox4_32_10 (checked against Random123's known answers) and the
// same mapping, bitwise for uniform values; reproducibility across shapes, streams and runs;
// statistics of a million samples; hconcat / vconcat against Eigen's comma initializer with
// strided views and empty operands; reshaped views and matrices; errors that leave everything
// intact.
#include "support/device_helpers.hpp"
#include "support/util.hpp"

#include <devmat/memory.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {

// ---------------------------------------------------------------- the host reference
using Words = std::array<std::uint32_t, 4>;

/// Philox4x32-10 (Salmon et al., SC'11), as cuRAND's curand_Philox4x32_10.
Words philox(Words c, std::uint32_t k0, std::uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const std::uint64_t p0 = std::uint64_t(0xD2511F53u) * c[0], p1 = std::uint64_t(0xCD9E8D57u) * c[2];
    c = {std::uint32_t(p1 >> 32) ^ c[1] ^ k0, std::uint32_t(p1), std::uint32_t(p0 >> 32) ^ c[3] ^ k1,
         std::uint32_t(p0)};
  }
  return c;
}

/// The words devmat draws for Philox block `group` of `seed` in `lane` (0: uniform float,
/// 1: uniform double, 2: normal float, 3: normal double): counter (lane, 0, group), key seed.
Words words(std::uint64_t seed, std::uint64_t group, std::uint32_t lane) {
  return philox({lane, 0, std::uint32_t(group), std::uint32_t(group >> 32)}, std::uint32_t(seed),
                std::uint32_t(seed >> 32));
}

template <class T> constexpr int per_block() { return std::is_same_v<T, float> ? 4 : 2; }
template <class T> constexpr std::uint32_t uniform_lane() { return std::is_same_v<T, float> ? 0 : 1; }
template <class T> constexpr std::uint32_t normal_lane() { return std::is_same_v<T, float> ? 2 : 3; }

float unit(std::uint32_t w) { return static_cast<float>(w >> 8) * 0x1p-24f; }
double unit(std::uint32_t hi, std::uint32_t lo) {
  return static_cast<double>((std::uint64_t(hi) << 32 | lo) >> 11) * 0x1p-53;
}

template <class T>
T uniform_in(T u, T lo, T hi) {
  if (!(lo < hi)) return lo;
  const T v = std::fma(u, hi, std::fma(-u, lo, lo));
  return v < hi ? std::max(v, lo) : std::nextafter(hi, lo);
}

/// Element i of random_uniform(.., lo, hi, seed): exactly what the device computes.
template <class T>
T uniform_element(std::uint64_t seed, Index i, T lo, T hi) {
  const Words w = words(seed, std::uint64_t(i / per_block<T>()), uniform_lane<T>());
  const int k = static_cast<int>(i % per_block<T>());
  if constexpr (std::is_same_v<T, float>) return uniform_in(unit(w[k]), lo, hi);
  else return uniform_in(unit(w[2 * k], w[2 * k + 1]), lo, hi);
}

/// Element i of random_normal(.., 0, 1, seed), in long double: the device's Box-Muller on the same
/// words, with the device's u1 and u2 (exact) and the host's more accurate log, sqrt, sin, cos.
template <class T>
long double normal_element(std::uint64_t seed, Index i) {
  const Words w = words(seed, std::uint64_t(i / per_block<T>()), normal_lane<T>());
  const int k = static_cast<int>(i % per_block<T>());
  long double u1, u2;
  int which;  // 0: r cos, 1: r sin
  if constexpr (std::is_same_v<T, float>) {
    const int pair = k / 2;
    u1 = std::fma(static_cast<float>(w[2 * pair]), 0x1p-32f, 0x1p-33f);
    u2 = unit(w[2 * pair + 1]);
    which = k % 2;
  } else {
    u1 = unit(w[0], w[1]) + 0x1p-53;
    u2 = unit(w[2], w[3]);
    which = k;
  }
  const long double pi = 3.141592653589793238462643383279502884L;
  const long double r = std::sqrt(-2.0L * std::log(u1)), a = 2.0L * pi * u2;
  return which == 0 ? r * std::cos(a) : r * std::sin(a);
}

/// |got - want| within a few units in the last place of T (the device's logf/log and
/// sincospif/sincospi are within 2 ulp).
template <class T>
bool close_normal(T got, long double z, T mean, T stddev) {
  const long double want = static_cast<long double>(mean) + static_cast<long double>(stddev) * z;
  const long double eps = std::numeric_limits<T>::epsilon();
  const long double tol = 16 * eps * (stddev * (std::fabs(z) + 1) + std::fabs(static_cast<long double>(mean)));
  return std::fabs(static_cast<long double>(got) - want) <= tol;
}

template <class T>
bool bitwise_equal(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

std::uint64_t fresh_seed() { return rng()(); }

template <class T>
std::pair<T, T> fresh_bounds() {
  std::uniform_real_distribution<double> d(-100.0, 100.0);
  T lo = static_cast<T>(d(rng())), hi = static_cast<T>(d(rng()));
  if (hi < lo) std::swap(lo, hi);
  return {lo, hi};
}

template <class T> double lo_of() { return std::is_unsigned_v<T> ? 0 : -50; }
template <class T> double hi_of() { return std::is_same_v<T, std::uint8_t> ? 100 : 50; }

template <class T>
HostMatrix<T> rand_m(Index r, Index c) {
  return random_matrix<T>(r, c, lo_of<T>(), hi_of<T>());
}

template <class T>
void check_equal(const HostMatrix<T>& got, const HostMatrix<T>& want) {
  REQUIRE(got.rows() == want.rows());
  REQUIRE(got.cols() == want.cols());
  CHECK(max_abs_diff(got, want) == 0.0);
}

/// Bytes allocated from the pool once all queued work is done (nothing in flight changes it).
std::size_t settled_used() {
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  return pool_stats().used;
}

}  // namespace

// ---------------------------------------------------------------- identity
TEMPLATE_TEST_CASE("identity is Eigen's Identity", "[generate]", float, double, std::int32_t, std::uint8_t) {
  using T = TestType;
  const Stream s = Stream::create();
  for (Index n : {0, 1, 7, 1025}) {
    CAPTURE(n);
    poison_next<T>(n, n, Stream::per_thread());
    const auto I = DeviceMatrix<T>::identity(n);
    CHECK(I.rows() == n);
    CHECK(I.cols() == n);
    CHECK(to_eigen(I) == HostMatrix<T>::Identity(n, n));
    poison_next<T>(n, n, s);
    const auto J = DeviceMatrix<T>::identity(n, s);
    if (n > 0) CHECK(J.stream() == s);
    CHECK(to_eigen(J) == HostMatrix<T>::Identity(n, n));
  }
  CHECK_THROWS_AS(DeviceMatrix<T>::identity(-1), shape_error);
  CHECK_THROWS_AS(DeviceMatrix<T>::identity(-3, s), shape_error);
}

TEST_CASE("identity exists for the integer-sum types too", "[generate]") {
  CHECK(DeviceMatrix<std::int64_t>::identity(3).to_vector() == std::vector<std::int64_t>{1, 0, 0, 0, 1, 0, 0, 0, 1});
  CHECK(DeviceMatrix<std::uint64_t>::identity(2).to_vector() == std::vector<std::uint64_t>{1, 0, 0, 1});
}

// ---------------------------------------------------------------- random values
TEST_CASE("the host Philox4x32-10 gives Random123's known answers", "[generate]") {
  CHECK(philox({0, 0, 0, 0}, 0, 0) == Words{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(philox({~0u, ~0u, ~0u, ~0u}, ~0u, ~0u) == Words{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(philox({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, 0xa4093822, 0x299f31d0) ==
        Words{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEMPLATE_TEST_CASE("random_uniform: element i is Philox4_32_10 at (seed, i) mapped onto [lo, hi), bit for bit",
                   "[generate]", float, double) {
  using T = TestType;
  const Stream s = Stream::create();
  for (auto [r, c] : awkward_shapes(4)) {
    CAPTURE(shape(r, c));
    const std::uint64_t seed = fresh_seed();
    const auto [lo, hi] = fresh_bounds<T>();
    CAPTURE(seed, lo, hi);
    poison_next<T>(r, c, s);
    const auto M = DeviceMatrix<T>::random_uniform(r, c, lo, hi, seed, s);
    REQUIRE(M.rows() == r);
    REQUIRE(M.cols() == c);
    if (!M.empty()) CHECK(M.stream() == s);
    const std::vector<T> got = M.to_vector();
    std::vector<T> want(got.size());
    for (Index i = 0; i < Index(want.size()); ++i) want[std::size_t(i)] = uniform_element<T>(seed, i, lo, hi);
    CHECK(bitwise_equal(got, want));
  }
}

TEMPLATE_TEST_CASE("random_normal: Box-Muller on Philox4_32_10's words at (seed, i)", "[generate]", float, double) {
  using T = TestType;
  for (auto [r, c] : awkward_shapes(4)) {
    CAPTURE(shape(r, c));
    const std::uint64_t seed = fresh_seed();
    const T mean = static_cast<T>(std::uniform_real_distribution<double>(-10, 10)(rng()));
    const T stddev = static_cast<T>(std::uniform_real_distribution<double>(0.1, 5)(rng()));
    CAPTURE(seed, mean, stddev);
    poison_next<T>(r, c, Stream::per_thread());
    const std::vector<T> got = DeviceMatrix<T>::random_normal(r, c, mean, stddev, seed).to_vector();
    REQUIRE(got.size() == std::size_t(r * c));
    Index bad = 0;
    for (Index i = 0; i < Index(got.size()); ++i)
      if (!close_normal(got[std::size_t(i)], normal_element<T>(seed, i), mean, stddev)) {
        if (bad++ == 0) {
          CAPTURE(i, got[std::size_t(i)], static_cast<double>(normal_element<T>(seed, i)));
          FAIL_CHECK("the first element off the host's Box-Muller");
        }
      }
    CHECK(bad == 0);
  }
}

TEMPLATE_TEST_CASE("a seed gives the same values on every run, stream and shape, in row-major order", "[generate]",
                   float, double) {
  using T = TestType;
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  const Stream s1 = Stream::create(), s2 = Stream::create();
  for (bool normal : {false, true}) {
    CAPTURE(normal);
    const auto make = [&](Index r, Index c, const Stream& s) {
      return normal ? DeviceMatrix<T>::random_normal(r, c, T(1), T(2), seed, s)
                    : DeviceMatrix<T>::random_uniform(r, c, T(-1), T(3), seed, s);
    };
    const std::vector<T> a = make(3, 5, s1).to_vector();
    CHECK(bitwise_equal(make(3, 5, s1).to_vector(), a));  // again
    CHECK(bitwise_equal(make(3, 5, s2).to_vector(), a));  // another stream
    CHECK(bitwise_equal(make(5, 3, s1).to_vector(), a));  // the same 15 values, another shape
    CHECK(bitwise_equal(make(1, 15, s2).to_vector(), a));
    CHECK(bitwise_equal(make(15, 1, s1).to_vector(), a));
    const std::vector<T> prefix = make(2, 5, s1).to_vector();  // the first 10
    CHECK(bitwise_equal(prefix, std::vector<T>(a.begin(), a.begin() + 10)));
    const std::vector<T> one = make(1, 1, s2).to_vector();
    CHECK(bitwise_equal(one, std::vector<T>(a.begin(), a.begin() + 1)));
    // Large: many blocks of the grid-stride loop; a smaller odd shape is a prefix of it.
    const std::vector<T> big = make(1000, 1001, s1).to_vector();
    const std::vector<T> smaller = make(997, 1003, s2).to_vector();
    CHECK(bitwise_equal(smaller, std::vector<T>(big.begin(), big.begin() + Index(smaller.size()))));
    // The default stream too.
    const auto d = normal ? DeviceMatrix<T>::random_normal(3, 5, T(1), T(2), seed)
                          : DeviceMatrix<T>::random_uniform(3, 5, T(-1), T(3), seed);
    CHECK(d.stream() == Stream::per_thread());
    CHECK(bitwise_equal(d.to_vector(), a));
  }
}

TEMPLATE_TEST_CASE("other seeds, the other distribution and the other type give other values", "[generate]", float,
                   double) {
  using T = TestType;
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  const Index n = 100000;
  const auto count_equal = [](const std::vector<T>& a, const std::vector<T>& b) {
    Index k = 0;
    for (std::size_t i = 0; i < a.size(); ++i) k += a[i] == b[i];
    return k;
  };
  const std::vector<T> a = DeviceMatrix<T>::random_uniform(1, n, T(0), T(1), seed).to_vector();
  // A float in [0, 1) repeats with probability about 2^-24 per element: 100000 elements give
  // 0.006 matches on average, so 5 or more cannot happen by chance.
  CHECK(count_equal(a, DeviceMatrix<T>::random_uniform(1, n, T(0), T(1), seed + 1).to_vector()) < 5);
  CHECK(count_equal(a, DeviceMatrix<T>::random_uniform(1, n, T(0), T(1), seed ^ (1ull << 63)).to_vector()) < 5);
  CHECK(count_equal(a, DeviceMatrix<T>::random_uniform(1, n, T(0), T(1), seed ^ 1).to_vector()) < 5);
  // The normal generator reads other counters: its values are uncorrelated with the uniform ones
  // of the same seed (|r| < 6 / sqrt(n)).
  const std::vector<T> z = DeviceMatrix<T>::random_normal(1, n, T(0), T(1), seed).to_vector();
  double sa = 0, sz = 0, saa = 0, szz = 0, saz = 0;
  for (Index i = 0; i < n; ++i) {
    const double x = a[std::size_t(i)], y = z[std::size_t(i)];
    sa += x, sz += y, saa += x * x, szz += y * y, saz += x * y;
  }
  const double cov = saz / n - sa / n * sz / n;
  const double corr = cov / std::sqrt((saa / n - sa / n * sa / n) * (szz / n - sz / n * sz / n));
  CHECK(std::fabs(corr) < 6 / std::sqrt(double(n)));
  // float and double read other counters too.
  using Other = std::conditional_t<std::is_same_v<T, float>, double, float>;
  const std::vector<Other> o = DeviceMatrix<Other>::random_uniform(1, n, Other(0), Other(1), seed).to_vector();
  Index near = 0;
  for (Index i = 0; i < n; ++i) near += std::fabs(double(a[std::size_t(i)]) - double(o[std::size_t(i)])) < 1e-6;
  CHECK(near < 10);
}

TEMPLATE_TEST_CASE("a million uniform values: in [lo, hi), with the mean and variance of U(lo, hi)", "[generate]",
                   float, double) {
  using T = TestType;
  const std::uint64_t seed = fresh_seed();
  const auto [lo, hi] = fresh_bounds<T>();
  CAPTURE(seed, lo, hi);
  const Index n = 1000000;
  poison_next<T>(1000, 1000, Stream::per_thread());
  const std::vector<T> v = DeviceMatrix<T>::random_uniform(1000, 1000, lo, hi, seed).to_vector();
  double sum = 0, sum2 = 0;
  T mn = std::numeric_limits<T>::max(), mx = std::numeric_limits<T>::lowest();
  Index outside = 0;
  for (T x : v) {
    outside += !(x >= lo && x < hi);
    mn = std::min(mn, x), mx = std::max(mx, x);
    sum += x, sum2 += double(x) * x;
  }
  CHECK(outside == 0);
  const double w = double(hi) - double(lo);
  const double mean = sum / n, var = sum2 / n - mean * mean;
  // 6 standard errors: sd(mean) = w / sqrt(12 n); sd(var) = w^2 sqrt(1/80 - 1/144) / sqrt(n).
  CHECK(std::fabs(mean - (double(lo) + double(hi)) / 2) < 6 * w / std::sqrt(12.0 * n));
  CHECK(std::fabs(var - w * w / 12) < 6 * w * w * std::sqrt(1.0 / 80 - 1.0 / 144) / std::sqrt(double(n)) + 1e-9 * w * w);
  // The extremes come within w 2e-5 of the bounds (each misses with probability e^-20).
  CHECK(double(mn) - double(lo) < 2e-5 * w);
  CHECK(double(hi) - double(mx) < 2e-5 * w);
}

TEMPLATE_TEST_CASE("a million normal values: the mean, variance and tails of N(mean, stddev^2)", "[generate]", float,
                   double) {
  using T = TestType;
  const std::uint64_t seed = fresh_seed();
  const T mu = static_cast<T>(std::uniform_real_distribution<double>(-10, 10)(rng()));
  const T sigma = static_cast<T>(std::uniform_real_distribution<double>(0.1, 5)(rng()));
  CAPTURE(seed, mu, sigma);
  const Index n = 1000000;
  const Stream s = Stream::create();
  const std::vector<T> v = DeviceMatrix<T>::random_normal(1000, 1000, mu, sigma, seed, s).to_vector();
  double sum = 0, sum2 = 0;
  Index within1 = 0, above = 0, non_finite = 0;
  double max_z = 0;
  for (T x : v) {
    non_finite += !std::isfinite(x);
    const double z = (double(x) - mu) / sigma;
    sum += z, sum2 += z * z;
    within1 += std::fabs(z) < 1;
    above += z > 0;
    max_z = std::max(max_z, std::fabs(z));
  }
  CHECK(non_finite == 0);
  const double mean = sum / n, var = sum2 / n - mean * mean;
  // 6 standard errors: sd(mean) = 1 / sqrt(n), sd(var) = sqrt(2 / n), sd(fraction) = sqrt(p (1 - p) / n).
  CHECK(std::fabs(mean) < 6 / std::sqrt(double(n)));
  CHECK(std::fabs(var - 1) < 6 * std::sqrt(2.0 / n));
  const double p1 = 0.6826894921370859;
  CHECK(std::fabs(double(within1) / n - p1) < 6 * std::sqrt(p1 * (1 - p1) / n));
  CHECK(std::fabs(double(above) / n - 0.5) < 6 * std::sqrt(0.25 / n));
  CHECK(max_z > 4);                                          // P(max |z| <= 4 in 1e6) is e^-63
  CHECK(max_z < (std::is_same_v<T, float> ? 6.78 : 8.58));  // the documented cut (plus rounding)
}

TEMPLATE_TEST_CASE("random generators at the edges of their parameters", "[generate]", float, double) {
  using T = TestType;
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  const auto all = [](const std::vector<T>& v, auto pred) { return std::all_of(v.begin(), v.end(), pred); };
  const T big = std::numeric_limits<T>::max();
  // lo == hi: lo everywhere.
  CHECK(all(DeviceMatrix<T>::random_uniform(33, 17, T(2.5), T(2.5), seed).to_vector(), [](T x) { return x == T(2.5); }));
  // One representable value in [lo, hi): all of them lo (lo is drawn, hi never).
  const T one_up = std::nextafter(T(1), T(2));
  CHECK(all(DeviceMatrix<T>::random_uniform(33, 17, T(1), one_up, seed).to_vector(), [](T x) { return x == T(1); }));
  // A range a few units in the last place wide: values that round to hi are taken below it.
  const T b = T(1) / std::numeric_limits<T>::epsilon();  // ulp 1 above, 0.5 below
  CHECK(all(DeviceMatrix<T>::random_uniform(33, 17, b, b + 4, seed).to_vector(),
            [&](T x) { return x >= b && x < b + 4; }));
  // The whole finite range: no overflow, both signs.
  const std::vector<T> wide = DeviceMatrix<T>::random_uniform(100, 100, -big, big, seed).to_vector();
  CHECK(all(wide, [&](T x) { return std::isfinite(x) && x >= -big && x < big; }));
  CHECK(std::count_if(wide.begin(), wide.end(), [](T x) { return x < 0; }) > 4000);
  CHECK(std::count_if(wide.begin(), wide.end(), [](T x) { return x > 0; }) > 4000);
  // Negative ranges and -0.
  CHECK(all(DeviceMatrix<T>::random_uniform(33, 17, T(-3), T(-2), seed).to_vector(),
            [](T x) { return x >= T(-3) && x < T(-2); }));
  CHECK(all(DeviceMatrix<T>::random_uniform(33, 17, T(-1), T(-0.0), seed).to_vector(),
            [](T x) { return x >= T(-1) && x < T(0); }));
  // stddev 0: the mean everywhere.
  CHECK(all(DeviceMatrix<T>::random_normal(33, 17, T(4), T(0), seed).to_vector(), [](T x) { return x == T(4); }));
  // Empty shapes: no work, no error.
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{0, 0}, {0, 5}, {5, 0}}) {
    CHECK(DeviceMatrix<T>::random_uniform(r, c, T(0), T(1), seed).empty());
    CHECK(DeviceMatrix<T>::random_normal(r, c, T(0), T(1), seed, Stream::create()).rows() == r);
  }
}

TEMPLATE_TEST_CASE("invalid random parameters throw before anything is allocated or queued", "[generate]", float,
                   double) {
  using T = TestType;
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  const Stream s = Stream::create();
  const std::size_t before = settled_used();
  using M = DeviceMatrix<T>;
  CHECK_THROWS_AS(M::random_uniform(10, 10, T(1), T(0), 1), std::invalid_argument);
  CHECK_THROWS_WITH(M::random_uniform(10, 10, T(1), T(0), 1, s), contains("lo <= hi"));
  CHECK_THROWS_AS(M::random_uniform(10, 10, nan, T(1), 1), std::invalid_argument);
  CHECK_THROWS_AS(M::random_uniform(10, 10, T(0), nan, 1, s), std::invalid_argument);
  CHECK_THROWS_AS(M::random_uniform(10, 10, -inf, T(0), 1), std::invalid_argument);
  CHECK_THROWS_AS(M::random_uniform(10, 10, T(0), inf, 1, s), std::invalid_argument);
  CHECK_THROWS_AS(M::random_normal(10, 10, T(0), T(-1), 1), std::invalid_argument);
  CHECK_THROWS_WITH(M::random_normal(10, 10, T(0), T(-1), 1, s), contains("stddev"));
  CHECK_THROWS_AS(M::random_normal(10, 10, nan, T(1), 1), std::invalid_argument);
  CHECK_THROWS_AS(M::random_normal(10, 10, T(0), inf, 1, s), std::invalid_argument);
  CHECK_THROWS_AS(M::random_normal(10, 10, inf, T(1), 1), std::invalid_argument);
  CHECK_THROWS_AS(M::random_uniform(-1, 10, T(0), T(1), 1), shape_error);
  CHECK_THROWS_AS(M::random_normal(10, -1, T(0), T(1), 1, s), shape_error);
  CHECK(settled_used() == before);
}

// ---------------------------------------------------------------- hconcat, vconcat
TEMPLATE_TEST_CASE("hconcat and vconcat are Eigen's comma initializer, for matrices, views and empty operands",
                   "[generate]", float, double, std::int32_t, std::uint8_t) {
  using T = TestType;
  // (rows, cols of a, cols of b) for hconcat; vconcat uses the transposed shapes.
  for (auto [r, ca, cb] : std::vector<std::array<Index, 3>>{
           {1, 1, 1}, {7, 3, 5}, {33, 1, 64}, {129, 77, 1}, {5, 0, 4}, {5, 4, 0}, {0, 3, 2}, {0, 0, 0}, {301, 257, 129}}) {
    CAPTURE(r, ca, cb);
    const HostMatrix<T> ha = rand_m<T>(r, ca), hb = rand_m<T>(r, cb);
    const auto A = to_device(ha);
    const auto B = to_device(hb);
    HostMatrix<T> h(r, ca + cb);
    h << ha, hb;
    poison_next<T>(r, ca + cb, A.stream());
    check_equal<T>(to_eigen(hconcat(A, B)), h);
    check_equal<T>(to_eigen(hconcat(A.view(), B)), h);
    check_equal<T>(to_eigen(hconcat(A, B.view())), h);
    check_equal<T>(to_eigen(hconcat(A.view(), B.view())), h);

    const HostMatrix<T> ta = ha.transpose(), tb = hb.transpose();
    const auto At = to_device(ta);
    const auto Bt = to_device(tb);
    HostMatrix<T> v(ca + cb, r);
    v << ta, tb;
    poison_next<T>(ca + cb, r, At.stream());
    check_equal<T>(to_eigen(vconcat(At, Bt)), v);
    check_equal<T>(to_eigen(vconcat(At.view(), Bt)), v);
    check_equal<T>(to_eigen(vconcat(At, Bt.view())), v);
  }
}

TEMPLATE_TEST_CASE("hconcat and vconcat of strided windows", "[generate]", float, double, std::int32_t, std::uint8_t) {
  using T = TestType;
  // Odd strides (37, 53 elements), windows off the origin, writable and read-only views.
  const HostMatrix<T> hx = rand_m<T>(41, 37), hy = rand_m<T>(29, 53);
  auto X = to_device(hx);
  const auto Y = to_device(hy);
  const MatrixView<T> xa = X.block(3, 5, 17, 11);      // writable view: T deduced through its base
  const MatrixView<const T> yb = Y.block(7, 2, 17, 23);
  HostMatrix<T> h(17, 34);
  h << hx.block(3, 5, 17, 11), hy.block(7, 2, 17, 23);
  poison_next<T>(17, 34, X.stream());
  check_equal<T>(to_eigen(hconcat(xa, yb)), h);
  check_equal<T>(to_eigen(hconcat(DeviceMatrix<T>(xa), yb)), h);
  HostMatrix<T> v(17 + 22, 11);
  v << hx.block(3, 5, 17, 11), hy.block(1, 40, 22, 11);
  check_equal<T>(to_eigen(vconcat(xa, Y.block(1, 40, 22, 11))), v);
  // Single columns and rows (a stride apart), and a window with itself.
  HostMatrix<T> cols(41, 2);
  cols << hx.col(36), hx.col(0);
  check_equal<T>(to_eigen(hconcat(X.col(36), X.col(0))), cols);
  HostMatrix<T> rows(2, 37);
  rows << hx.row(40), hx.row(40);
  check_equal<T>(to_eigen(vconcat(X.row(40), X.row(40))), rows);
  // Empty windows of a strided matrix.
  check_equal<T>(to_eigen(hconcat(X.block(2, 2, 5, 0), X.block(2, 2, 5, 3))), HostMatrix<T>(hx.block(2, 2, 5, 3)));
  check_equal<T>(to_eigen(vconcat(X.block(2, 2, 5, 3), X.block(9, 2, 0, 3))), HostMatrix<T>(hx.block(2, 2, 5, 3)));
}

TEST_CASE("concatenation: on a's stream, after b's work; shape errors name both shapes", "[generate]") {
  const Stream s1 = Stream::create(), s2 = Stream::create();
  const auto A = DeviceMatrix<float>::constant(64, 48, 1.f, s1);
  spin(s2.native(), 20);  // B is written only after 20 ms on s2
  poison_next<float>(64, 32, s2);
  const auto B = DeviceMatrix<float>::constant(64, 32, 2.f, s2);
  const auto H = hconcat(A, B);
  CHECK(H.stream() == s1);
  HostMatrix<float> h(64, 80);
  h << HostMatrix<float>::Constant(64, 48, 1.f), HostMatrix<float>::Constant(64, 32, 2.f);
  CHECK(to_eigen(H) == h);
  spin(s2.native(), 20);
  const auto C = DeviceMatrix<float>::constant(16, 48, 3.f, s2);
  const auto V = vconcat(A.view(), C);
  CHECK(V.stream() == s1);
  CHECK(V.sum() == 64.f * 48 + 3.f * 16 * 48);

  CHECK_THROWS_AS(hconcat(A, DeviceMatrix<float>::zeros(63, 2)), shape_error);
  CHECK_THROWS_WITH(hconcat(A, DeviceMatrix<float>::zeros(63, 2)), contains("64x48") && contains("63x2"));
  CHECK_THROWS_AS(vconcat(A.block(0, 0, 3, 4), B.block(0, 0, 3, 5)), shape_error);
  CHECK_THROWS_WITH(vconcat(A, C.block(0, 0, 16, 47)), contains("64x48") && contains("16x47"));
  CHECK_THROWS_AS(hconcat(A, DeviceMatrix<float>()), shape_error);  // 0x0 has 0 rows, not 64
  CHECK(A.sum() == 64.f * 48);                                       // operands untouched
}

// ---------------------------------------------------------------- reshaped
TEMPLATE_TEST_CASE("reshaped: the same memory read in row-major order under another shape", "[generate]", float,
                   double, std::int32_t, std::uint8_t) {
  using T = TestType;
  const HostMatrix<T> h = rand_m<T>(6, 10);
  auto A = to_device(h);
  const auto& cA = A;
  const auto as = [&](Index r, Index c) {  // h's elements read as r x c, row-major
    return HostMatrix<T>(Eigen::Map<const HostMatrix<T>>(h.data(), r, c));
  };
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{6, 10}, {10, 6}, {15, 4}, {1, 60}, {60, 1}, {2, 30}}) {
    CAPTURE(r, c);
    const MatrixView<const T> v = cA.reshaped(r, c);
    CHECK(v.rows() == r);
    CHECK(v.cols() == c);
    CHECK(v.stride() == c);
    CHECK(v.data() == A.data());
    check_equal<T>(to_eigen(v), as(r, c));
    check_equal<T>(to_eigen(v.reshaped(c, r)), as(c, r));  // a view of a view
  }
  // Writable: writes through to A.
  const MatrixView<T> w = A.reshaped(60, 1);
  w.set(59, 0, T(7));
  CHECK(A.at(5, 9) == T(7));
  A.reshaped(3, 20).row(1).fill(T(3));  // elements 20..39: rows 2 and 3 of A
  HostMatrix<T> want = h;
  want(5, 9) = T(7);
  want.row(2).setConstant(T(3));
  want.row(3).setConstant(T(3));
  check_equal<T>(to_eigen(A), want);
  // Element counts must match; no dimension may be negative.
  CHECK_THROWS_AS(cA.reshaped(7, 9), shape_error);
  CHECK_THROWS_WITH(A.reshaped(7, 9), contains("6x10") && contains("7x9"));
  CHECK_THROWS_AS(A.reshaped(-6, -10), shape_error);
  CHECK_THROWS_AS(A.reshaped(60, 0), shape_error);
  CHECK_THROWS_AS(A.view().reshaped(0, 60), shape_error);
  check_equal<T>(to_eigen(A), want);  // untouched
}

TEST_CASE("reshaped views keep the memory alive; an rvalue hands its memory over", "[generate]") {
  const Stream s = Stream::create();
  MatrixView<const float> v;
  {
    auto A = DeviceMatrix<float>::random_uniform(40, 50, -1.f, 1.f, 17, s);
    v = A.reshaped(2000, 1);
  }  // A destroyed: v still holds its memory
  CHECK(v.stream() == s);
  CHECK(v.rows() == 2000);
  CHECK(bitwise_equal(v.to_vector(), DeviceMatrix<float>::random_uniform(1, 2000, -1.f, 1.f, 17).to_vector()));

  auto B = DeviceMatrix<float>::random_uniform(40, 50, -1.f, 1.f, 18, s);
  const std::vector<float> b = B.to_vector();
  const float* p = B.data();
  // A failed reshape of an rvalue leaves the matrix as it was.
  CHECK_THROWS_AS(std::move(B).reshaped(3, 3), shape_error);
  CHECK(B.data() == p);
  CHECK(B.rows() == 40);
  DeviceMatrix<float> C = std::move(B).reshaped(25, 80);
  CHECK(C.data() == p);  // the same memory, no copy
  CHECK(C.rows() == 25);
  CHECK(C.cols() == 80);
  CHECK(C.stream() == s);
  CHECK(B.empty());
  CHECK(C.to_vector() == b);
  // A temporary reshapes into a matrix.
  const DeviceMatrix<float> flat = DeviceMatrix<float>::identity(4).reshaped(1, 16);
  CHECK(flat.rows() == 1);
  CHECK(flat.sum() == 4.f);
  // Empty matrices reshape among empty shapes.
  CHECK(DeviceMatrix<float>(0, 6).reshaped(3, 0).rows() == 3);
  const DeviceMatrix<float> E(0, 6);
  CHECK(E.reshaped(0, 0).empty());
}

TEST_CASE("reshaped on views: contiguous windows only", "[generate]") {
  const HostMatrix<int> h = random_matrix<int>(9, 12, -100, 100);
  const auto A = to_device(h);
  // Whole rows of a matrix follow each other: contiguous.
  const auto rows = A.block(2, 0, 4, 12);
  REQUIRE(rows.contiguous());
  const HostMatrix<int> rows_h = h.block(2, 0, 4, 12);
  CHECK(to_eigen(rows.reshaped(6, 8)) == HostMatrix<int>(Eigen::Map<const HostMatrix<int>>(rows_h.data(), 6, 8)));
  // One row of a window is contiguous whatever the stride.
  const HostMatrix<int> part = h.block(5, 3, 1, 8);
  CHECK(to_eigen(A.block(5, 3, 1, 8).reshaped(2, 4)) == HostMatrix<int>(Eigen::Map<const HostMatrix<int>>(part.data(), 2, 4)));
  // A window with gaps between its rows is refused, naming the way out.
  const auto win = A.block(1, 1, 3, 4);
  REQUIRE(!win.contiguous());
  CHECK_THROWS_AS(win.reshaped(4, 3), shape_error);
  CHECK_THROWS_WITH(win.reshaped(4, 3), contains("not contiguous") && contains("3x4") && contains("dense copy"));
  CHECK_THROWS_AS(A.col(0).reshaped(1, 9), shape_error);
  // ... and the dense copy works.
  const HostMatrix<int> win_h = h.block(1, 1, 3, 4);
  CHECK(to_eigen(DeviceMatrix<int>(win).reshaped(4, 3)) ==
        HostMatrix<int>(Eigen::Map<const HostMatrix<int>>(win_h.data(), 4, 3)));
  // An empty window reshapes among empty shapes whatever its stride.
  CHECK(A.block(1, 1, 3, 0).reshaped(0, 5).cols() == 5);
  CHECK(to_eigen(A) == h);
}

// References for the reduction tests: exact integer sums, long-double float sums and the
// accuracy a float or double sum of n values must reach.
#pragma once

#include <devmat/device_matrix.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

namespace devmat::test {

/// The range of random test values of T: [-1, 1] for floats, +-1e9 for int32, all of uint8.
template <class T> inline double lo() { return std::is_same_v<T, std::uint8_t> ? 0 : std::is_integral_v<T> ? -1e9 : -1; }
template <class T> inline double hi() { return std::is_same_v<T, std::uint8_t> ? 255 : std::is_integral_v<T> ? 1e9 : 1; }

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
/// double and rounds once, within about one rounding of the result itself. (A NaN result is
/// never close: every comparison with NaN is false, so the test is written to fail on it.)
template <class S>
bool sum_close(S got, long double want, long double abs_sum, Index n) {
  const long double eps = std::numeric_limits<S>::epsilon();
  const long double err = std::fabs(static_cast<long double>(got) - want);
  const long double pairwise = std::max(1.0L, std::log2(static_cast<long double>(std::max<Index>(n, 1)))) * eps * abs_sum;
  if (!(err <= pairwise)) return false;
  if constexpr (std::is_same_v<S, float>) return err <= eps * std::fabs(want) + 1e-12L * abs_sum;
  return true;
}

}  // namespace devmat::test

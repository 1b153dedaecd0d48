// Test helpers: fresh random inputs, awkward shapes, poisoning, Eigen references.
#pragma once

#include "support/catch.hpp"

#include <devmat/devmat.hpp>
#include <devmat/eigen.hpp>

#include <Eigen/Core>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace devmat::test {

template <class T>
using HostMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// The random engine of this run, seeded from std::random_device (printed once, so a failure
/// can be replayed with DEVMAT_TEST_SEED=<seed>).
std::mt19937_64& rng();
std::uint64_t seed();

/// Uniform random values: floats in [lo, hi], integers in [lo, hi].
template <class T>
HostMatrix<T> random_matrix(Index rows, Index cols, double lo = -1.0, double hi = 1.0) {
  HostMatrix<T> m(rows, cols);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<double> d(lo, hi);
    for (Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<T>(d(rng()));
  } else {
    std::uniform_int_distribution<long long> d(static_cast<long long>(lo), static_cast<long long>(hi));
    for (Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<T>(d(rng()));
  }
  return m;
}

/// A value that no correct operation writes where the tests look (NaN for floats).
template <class T>
T poison_value() {
  if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::quiet_NaN();
  else return static_cast<T>(0x5A5A5A5A5A5A5A5Aull);
}

/// Fills pool memory of rows x cols elements of T with poison and frees it on `stream`, so the
/// next allocation of that size on that stream (the operation's result) starts poisoned.
template <class T>
void poison_next(Index rows, Index cols, const Stream& stream) {
  if (rows * cols == 0) return;
  auto p = DeviceMatrix<T>::constant(rows, cols, poison_value<T>(), stream);
}

/// Shapes that break tiling: 0, 1, tile-1/tile/tile+1 for tiles 16..256, primes, tall and
/// skinny, plus `n_random` fresh random ones up to `max_dim`.
std::vector<std::pair<Index, Index>> awkward_shapes(int n_random = 8, Index max_dim = 700);

/// Largest absolute difference, computed in double.
template <class A, class B>
double max_abs_diff(const A& a, const B& b) {
  if (a.size() == 0) return 0.0;
  return (a.template cast<double>() - b.template cast<double>()).cwiseAbs().maxCoeff();
}

std::string shape(Index r, Index c);

/// True under compute-sanitizer (scripts/gpu-check sets DEVMAT_TEST_SANITIZER=1): kernels run
/// serialised and many times slower, so tests trim repetitions and skip checks that observe
/// concurrency. Tests tagged [large] (past 2^31 elements, or 2^30-FMA products, which take
/// many minutes under racecheck) are left out of those runs.
bool under_sanitizer();

}  // namespace devmat::test

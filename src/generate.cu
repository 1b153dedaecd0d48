// Matrices made on the device: identity, random_uniform and random_normal (kernels/generate.cuh),
// and hconcat / vconcat, which assemble two operands with strided copies.
//
// CMakeLists.txt compiles this file with -fmad=false: the random values are then made of IEEE
// rounded operations only, the same on every GPU (see kernels/generate.cuh).
#include "detail/device_guard.hpp"
#include "detail/instantiate.hpp"
#include "detail/runtime.hpp"
#include "dispatch/generate.cuh"

#include <devmat/device_matrix.hpp>

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

namespace devmat {

namespace {

template <class T>
void set_identity(DeviceMatrix<T>& m) {
  if (m.empty()) return;
  const Stream s = m.stream();
  const detail::DeviceGuard device(s);
  DEVMAT_CUDA_TRY(cudaMemsetAsync(m.data(), 0, static_cast<std::size_t>(m.size()) * sizeof(T), s.native()));
  detail::launch_identity_diagonal(m.rows(), m.data(), s.native());
}

template <class T>
std::string number(T v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

/// Throws std::invalid_argument unless (a, b) are valid parameters of `dist`.
template <class T>
void check_parameters(detail::Random dist, T a, T b) {
  if (dist == detail::Random::uniform) {
    if (!std::isfinite(a) || !std::isfinite(b) || !(a <= b))
      throw std::invalid_argument("devmat: random_uniform: the bounds must be finite with lo <= hi (lo = " +
                                  number(a) + ", hi = " + number(b) + ")");
  } else {
    if (!std::isfinite(a) || !std::isfinite(b) || !(b >= 0))
      throw std::invalid_argument("devmat: random_normal: mean and stddev must be finite with stddev >= 0 (mean = " +
                                  number(a) + ", stddev = " + number(b) + ")");
  }
}

template <class T>
void fill_random(DeviceMatrix<T>& m, detail::Random dist, T a, T b, std::uint64_t seed) {
  if (m.empty()) return;
  const Stream stream = m.stream();
  const detail::DeviceGuard device(stream);
  const cudaStream_t s = stream.native();
  if (dist == detail::Random::uniform)
    detail::launch_random(m.size(), m.data(), seed, detail::Uniform<T>{a, b}, s);
  else
    detail::launch_random(m.size(), m.data(), seed, detail::Normal<T>{a, b}, s);
}

}  // namespace

// ------------------------------------------------------------------ identity
template <class T>
DeviceMatrix<T> DeviceMatrix<T>::identity(Index n) {
  DeviceMatrix m(n, n);  // the calling thread's stream (none for 0x0); n < 0 throws here
  set_identity(m);
  return m;
}

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::identity(Index n, const Stream& stream) {
  DeviceMatrix m(n, n, stream);
  set_identity(m);
  return m;
}

// ------------------------------------------------------------------ random values
namespace detail {

template <class T>
DeviceMatrix<T> random_matrix(Index rows, Index cols, Random dist, T a, T b, std::uint64_t seed) {
  check_parameters(dist, a, b);
  DeviceMatrix<T> m(rows, cols);
  fill_random(m, dist, a, b, seed);
  return m;
}

template <class T>
DeviceMatrix<T> random_matrix(Index rows, Index cols, Random dist, T a, T b, std::uint64_t seed,
                              const Stream& stream) {
  check_parameters(dist, a, b);
  DeviceMatrix<T> m(rows, cols, stream);
  fill_random(m, dist, a, b, seed);
  return m;
}

// ------------------------------------------------------------------ concatenation
template <class T>
DeviceMatrix<T> concat(const MatrixView<const T>& a, const MatrixView<const T>& b, bool horizontal) {
  if (horizontal && a.rows() != b.rows())
    throw_shape_error("hconcat", a.rows(), a.cols(), b.rows(), b.cols(), "do not have the same number of rows");
  if (!horizontal && a.cols() != b.cols())
    throw_shape_error("vconcat", a.rows(), a.cols(), b.rows(), b.cols(), "do not have the same number of columns");
  const Stream s = a.stream();
  const DeviceGuard device(s);
  const Index rows = horizontal ? a.rows() : a.rows() + b.rows();
  const Index cols = horizontal ? a.cols() + b.cols() : a.cols();
  DeviceMatrix<T> out(rows, cols, s);
  if (out.empty()) return out;
  use_on(s, a, b);
  if (!a.empty()) copy_rows(out.data(), cols, a.data(), a.stride(), a.rows(), a.cols(), s);
  T* const b_dst = horizontal ? out.data() + a.cols() : out.data() + a.rows() * cols;  // (0, a.cols()) or (a.rows(), 0)
  if (!b.empty()) copy_rows(b_dst, cols, b.data(), b.stride(), b.rows(), b.cols(), s);
  return out;
}

}  // namespace detail

#define DEVMAT_INSTANTIATE(T)                                                                                   \
  template DeviceMatrix<T> DeviceMatrix<T>::identity(Index);                                                    \
  template DeviceMatrix<T> DeviceMatrix<T>::identity(Index, const Stream&);                                     \
  template DeviceMatrix<T> detail::concat<T>(const MatrixView<const T>&, const MatrixView<const T>&, bool);
DEVMAT_FOR_EACH_TYPE(DEVMAT_INSTANTIATE)
#undef DEVMAT_INSTANTIATE

#define DEVMAT_INSTANTIATE_REAL(T)                                                                              \
  template DeviceMatrix<T> detail::random_matrix<T>(Index, Index, detail::Random, T, T, std::uint64_t);         \
  template DeviceMatrix<T> detail::random_matrix<T>(Index, Index, detail::Random, T, T, std::uint64_t,          \
                                                    const Stream&);
DEVMAT_INSTANTIATE_REAL(float)
DEVMAT_INSTANTIATE_REAL(double)
#undef DEVMAT_INSTANTIATE_REAL

}  // namespace devmat

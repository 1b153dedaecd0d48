// Element-wise operations: matrix-matrix, matrix-scalar, unary, clamp, threshold and cast.
#include "detail/instantiate.hpp"
#include "detail/runtime.hpp"
#include "dispatch/elementwise.cuh"

#include <devmat/device_matrix.hpp>

#include <limits>
#include <stdexcept>
#include <type_traits>

namespace devmat {
namespace detail {
namespace {

template <class T>
void check_same_shape(const char* op, const DeviceMatrix<T>& a, const DeviceMatrix<T>& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols())
    throw_shape_error(op, a.rows(), a.cols(), b.rows(), b.cols());
}

/// A new dense matrix of f(v(i, j)), on v's stream.
template <class U, class T, class F>
DeviceMatrix<U> map_view(const MatrixView<const T>& v, F f) {
  const Stream s = v.stream();
  DeviceMatrix<U> out(v.rows(), v.cols(), s);
  if (out.empty()) return out;
  use_on(s, v);
  launch_transform_2d(s.native(), v.rows(), v.cols(), out.data(), out.cols(), v.data(), v.stride(), kNone, Index(0), f);
  return out;
}

}  // namespace
}  // namespace detail

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::zip(const DeviceMatrix& b, detail::Binary op, const char* name) const {
  detail::check_same_shape(name, *this, b);
  DeviceMatrix out(rows_, cols_, stream_);
  if (empty()) return out;
  detail::use_on(stream_, *this, b);
  detail::run_binary_2d(op, stream_.native(), 1, size(), out.data_, size(), data_, size(), b.data_, size());
  return out;
}

template <class T>
DeviceMatrix<T>& DeviceMatrix<T>::zip_inplace(const DeviceMatrix& b, detail::Binary op, const char* name) {
  detail::check_same_shape(name, *this, b);
  if (empty()) return *this;
  detail::use_on(stream_, *this, b);
  detail::run_binary_2d(op, stream_.native(), 1, size(), data_, size(), static_cast<const T*>(data_), size(), b.data_, size());
  return *this;
}

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::map(detail::Scalar op, T s) const {
  detail::check_scalar_div(op, s);
  DeviceMatrix out(rows_, cols_, stream_);
  if (empty()) return out;
  detail::use_on(stream_, *this);
  detail::run_scalar_2d(op, s, stream_.native(), 1, size(), out.data_, size(), data_, size());
  return out;
}

template <class T>
DeviceMatrix<T>& DeviceMatrix<T>::map_inplace(detail::Scalar op, T s) {
  detail::check_scalar_div(op, s);
  if (empty()) return *this;
  detail::use_on(stream_, *this);
  detail::run_scalar_2d(op, s, stream_.native(), 1, size(), data_, size(), static_cast<const T*>(data_), size());
  return *this;
}

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::unary(detail::Unary op) const {
  DeviceMatrix out(rows_, cols_, stream_);
  if (empty()) return out;
  detail::use_on(stream_, *this);
  detail::run_unary_2d(op, stream_.native(), 1, size(), out.data_, size(), data_, size());
  return out;
}

// ------------------------------------------------------------------ any window, read through its stride
template <class T>
DeviceMatrix<T> MatrixView<const T>::abs() const {
  return detail::view_unary(*this, detail::Unary::abs);
}

template <class T>
DeviceMatrix<T> MatrixView<const T>::clamp(T lo, T hi) const {
  if (hi < lo) throw std::invalid_argument("devmat: clamp: lo > hi");
  return detail::map_view<T>(*this, detail::ClampFn<T>{lo, hi});
}

template <class T>
DeviceMatrix<std::uint8_t> MatrixView<const T>::threshold(T t) const {
  return detail::map_view<std::uint8_t>(*this, detail::ThresholdFn<T>{t});
}

template <class T>
template <class U>
DeviceMatrix<U> MatrixView<const T>::cast() const {
  return detail::map_view<U>(*this, detail::CastFn<U, T>{});
}

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::clamp(T lo, T hi) const {
  return view().clamp(lo, hi);
}

template <class T>
DeviceMatrix<std::uint8_t> DeviceMatrix<T>::threshold(T t) const {
  return view().threshold(t);
}

template <class T>
template <class U>
DeviceMatrix<U> DeviceMatrix<T>::cast() const {
  return view().template cast<U>();
}

#define DEVMAT_INSTANTIATE_CASTS(C, T)                                                             \
  template DeviceMatrix<float> C::cast<float>() const;                                             \
  template DeviceMatrix<double> C::cast<double>() const;                                           \
  template DeviceMatrix<std::int32_t> C::cast<std::int32_t>() const;                               \
  template DeviceMatrix<std::uint8_t> C::cast<std::uint8_t>() const;                               \
  template DeviceMatrix<std::int64_t> C::cast<std::int64_t>() const;                               \
  template DeviceMatrix<std::uint64_t> C::cast<std::uint64_t>() const;
#define DEVMAT_INSTANTIATE(T)                                                                      \
  template DeviceMatrix<T> DeviceMatrix<T>::zip(const DeviceMatrix&, detail::Binary, const char*) const; \
  template DeviceMatrix<T>& DeviceMatrix<T>::zip_inplace(const DeviceMatrix&, detail::Binary, const char*); \
  template DeviceMatrix<T> DeviceMatrix<T>::map(detail::Scalar, T) const;                          \
  template DeviceMatrix<T>& DeviceMatrix<T>::map_inplace(detail::Scalar, T);                       \
  template DeviceMatrix<T> DeviceMatrix<T>::unary(detail::Unary) const;                            \
  template DeviceMatrix<T> DeviceMatrix<T>::clamp(T, T) const;                                     \
  template DeviceMatrix<std::uint8_t> DeviceMatrix<T>::threshold(T) const;                         \
  template DeviceMatrix<T> MatrixView<const T>::abs() const;                                       \
  template DeviceMatrix<T> MatrixView<const T>::clamp(T, T) const;                                 \
  template DeviceMatrix<std::uint8_t> MatrixView<const T>::threshold(T) const;                     \
  DEVMAT_INSTANTIATE_CASTS(MatrixView<const T>, T)                                                 \
  DEVMAT_INSTANTIATE_CASTS(DeviceMatrix<T>, T)
DEVMAT_FOR_EACH_TYPE(DEVMAT_INSTANTIATE)
#undef DEVMAT_INSTANTIATE
#undef DEVMAT_INSTANTIATE_CASTS

}  // namespace devmat

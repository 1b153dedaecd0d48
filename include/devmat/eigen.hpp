// Conversions between Eigen and devmat. Needs Eigen only where it is included. Plain C++.
/// @file
/// Conversions between Eigen and devmat: to_device and to_eigen. Including this header needs
/// Eigen's headers (CMake: find_package(Eigen3) and link Eigen3::Eigen); libdevmat does not.
#pragma once

#include <devmat/device_matrix.hpp>

#include <Eigen/Core>

namespace devmat {

///@{
/// The same matrix on the device, from any Eigen dense expression (row- or column-major),
/// on `stream` or on the calling thread's Stream::per_thread().
template <class Derived>
DeviceMatrix<typename Derived::Scalar> to_device(const Eigen::DenseBase<Derived>& expr, const Stream& stream) {
  using T = typename Derived::Scalar;
  const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> row_major = expr;
  return DeviceMatrix<T>::from_host(row_major.data(), row_major.rows(), row_major.cols(), stream);
}

template <class Derived>
DeviceMatrix<typename Derived::Scalar> to_device(const Eigen::DenseBase<Derived>& expr) {
  using T = typename Derived::Scalar;
  const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> row_major = expr;
  return DeviceMatrix<T>::from_host(row_major.data(), row_major.rows(), row_major.cols());
}
///@}

/// The matrix on the host, row-major; blocks until the data is there.
template <class T>
Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> to_eigen(const DeviceMatrix<T>& m) {
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> out(m.rows(), m.cols());
  m.copy_to_host(out.data());
  return out;
}

/// A view's elements on the host, row-major (the window only, no gaps); blocks.
template <class T>
Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> to_eigen(const MatrixView<const T>& v) {
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> out(v.rows(), v.cols());
  v.copy_to_host(out.data());
  return out;
}

/// An expression's elements on the host, row-major: runs it, then copies; blocks.
template <class T>
Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> to_eigen(const Expr<T>& e) {
  return to_eigen(e.eval());
}

}  // namespace devmat

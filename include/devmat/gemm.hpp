// Matrix products. Plain C++.
/// @file
/// Matrix products: operator*, gemm, and how float products run (FloatMath).
#pragma once

#include <devmat/device_matrix.hpp>

#include <cstdint>
#include <type_traits>

namespace devmat {

/// How gemm reads an operand: as it is, or transposed (no transposed copy is made).
enum class Op { none, transpose };

/// C = alpha * op(A) * op(B) + beta * C, on C's stream (after waiting for A's and B's).
///
/// T is float, double or int32_t (int32 accumulates in int32, as Eigen does). If C is empty
/// and op(A)*op(B) is not, C is resized to the product's shape first (and beta*C is taken as
/// zero; a C that never had a stream takes A's, and A's device); otherwise C of the wrong
/// shape is a shape_error, thrown before anything runs.
/// Any of A, B and C may be the same matrix: the product is computed into a fresh buffer
/// when C aliases an operand, so `gemm(1, A, A, 0, A)` gives A*A.
template <class T>
void gemm(T alpha, const DeviceMatrix<T>& A, const DeviceMatrix<T>& B, T beta, DeviceMatrix<T>& C,
          Op op_a = Op::none, Op op_b = Op::none);

/// The same on views (windows of matrices or of foreign memory, through their row strides, with
/// no copy): C = alpha * op(A) * op(B) + beta * C, on C's stream. C must already have the
/// product's shape (a view is never resized). A C that shares memory with A or B, or whose
/// rows are not contiguous, is computed through a dense temporary and copied in.
template <class T>
void gemm(T alpha, const MatrixView<const T>& A, const MatrixView<const T>& B, T beta, const MatrixView<T>& C,
          Op op_a = Op::none, Op op_b = Op::none);

/// How float products run. Both give FP32 accuracy.
///  - tf32x3 (the default): on the tensor cores, each element split into a TF32 part and a TF32
///    remainder, three TF32 products accumulated in FP32 (about 22 significant bits per product,
///    FP32 rounding in the sums). A result tile that comes out infinite or NaN is recomputed
///    with plain FP32 multiply-adds, so infinities and NaNs come out exactly as IEEE arithmetic
///    gives them. Needs sm_80 or later; older devices use simt.
///  - simt: on the CUDA cores, fused multiply-adds in FP32 (as cuBLAS's default SGEMM).
/// Results of the two differ in the last bits; each is deterministic run to run.
enum class FloatMath { tf32x3, simt };

/// Sets how float products run from now on, in every thread (a process-wide setting).
void set_float_math(FloatMath mode) noexcept;
/// The current setting (FloatMath::tf32x3 unless set_float_math changed it).
FloatMath float_math() noexcept;

namespace detail {
template <class T> DeviceMatrix<T> multiply(const DeviceMatrix<T>& a, const DeviceMatrix<T>& b);
template <class T> DeviceMatrix<T> multiply_views(const MatrixView<const T>& a, const MatrixView<const T>& b);
}

/// The matrix product A*B on A's stream. Not offered for uint8_t.
template <class T>
DeviceMatrix<T> operator*(const DeviceMatrix<T>& a, const DeviceMatrix<T>& b) {
  static_assert(!std::is_same_v<T, std::uint8_t>,
                "devmat: the matrix product is not offered for DeviceMatrix<uint8_t>; "
                "convert first, e.g. A.cast<float>() * B.cast<float>()");
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> ||
                    std::is_same_v<T, std::int32_t>,
                "devmat: the matrix product is offered for float, double and int32_t");
  return detail::multiply(a, b);
}

/// @cond DEVMAT_INSTANTIATIONS
// Instantiated once, in libdevmat (not part of the reference).
///@{
/// The matrix product of views and matrices (any mix), on the first operand's stream.
template <class T>
DeviceMatrix<T> operator*(const MatrixView<const T>& a, const MatrixView<const T>& b) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t>,
                "devmat: the matrix product is offered for float, double and int32_t; "
                "convert first, e.g. DeviceMatrix<std::uint8_t>(view).cast<float>()");
  return detail::multiply_views(a, b);
}
template <class T>
DeviceMatrix<T> operator*(const DeviceMatrix<T>& a, const MatrixView<const T>& b) {
  return a.view() * b;
}
template <class T>
DeviceMatrix<T> operator*(const MatrixView<const T>& a, const DeviceMatrix<T>& b) {
  return a * b.view();
}
///@}

extern template void gemm<float>(float, const DeviceMatrix<float>&, const DeviceMatrix<float>&, float,
                                 DeviceMatrix<float>&, Op, Op);
extern template void gemm<double>(double, const DeviceMatrix<double>&, const DeviceMatrix<double>&,
                                  double, DeviceMatrix<double>&, Op, Op);
extern template void gemm<std::int32_t>(std::int32_t, const DeviceMatrix<std::int32_t>&,
                                        const DeviceMatrix<std::int32_t>&, std::int32_t,
                                        DeviceMatrix<std::int32_t>&, Op, Op);
/// @endcond

}  // namespace devmat

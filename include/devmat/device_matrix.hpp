// devmat::DeviceMatrix<T>: a dense, row-major matrix in GPU memory, used as a value type.
// Plain C++: every kernel is compiled into libdevmat and instantiated there for the element
// types below, so a host compiler alone reads this header.
/// @file
/// devmat::DeviceMatrix<T>, its element-wise operations, transpose and reductions.
#pragma once

#include <devmat/error.hpp>
#include <devmat/matrix_view.hpp>
#include <devmat/stream.hpp>

#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

namespace devmat {

template <class T> class Expr;

namespace detail {
struct Buffer;  // stream-ordered device allocation, defined in src/
struct Access;  // the library's own access to a matrix's internals

template <class T>
inline constexpr bool is_element_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
    std::is_same_v<T, std::uint8_t> || std::is_same_v<T, std::int64_t> ||
    std::is_same_v<T, std::uint64_t>;


// The generators' random distributions (src/generate.cu), for float and double.
enum class Random { uniform, normal };
template <class T> inline constexpr bool is_real_v = std::is_same_v<T, float> || std::is_same_v<T, double>;
/// rows x cols values of `dist` with parameters (a, b): [lo, hi) or (mean, stddev).
template <class T>
DeviceMatrix<T> random_matrix(Index rows, Index cols, Random dist, T a, T b, std::uint64_t seed);
template <class T>
DeviceMatrix<T> random_matrix(Index rows, Index cols, Random dist, T a, T b, std::uint64_t seed, const Stream& stream);
}  // namespace detail

/// A dense row-major matrix of T in device memory, owned by value.
///
/// T is float, double, int32_t or uint8_t (int64_t and uint64_t also exist as the element
/// types of integer sums). Every matrix carries a Stream: its memory is allocated and freed
/// stream-ordered on it, and operations whose left operand it is run on it. Operations never
/// block the host unless they return a host value (copy_to_host, to_vector, sum, ...).
///
/// Copies are deep: `B = A` and `DeviceMatrix B(A)` queue a device-to-device copy on A's
/// stream (as `A.clone()` does), so two matrices never share memory. Moves are free.
template <class T>
class DeviceMatrix {
  static_assert(detail::is_element_v<T>,
                "devmat::DeviceMatrix<T>: T must be float, double, int32_t or uint8_t (or int64_t and "
                "uint64_t, the element types of integer sums)");

 public:
  /// The element type T.
  using value_type = T;

  /// 0x0, holds no memory and touches no device.
  DeviceMatrix() noexcept;
  /// rows x cols, uninitialised, on the calling thread's Stream::per_thread().
  DeviceMatrix(Index rows, Index cols);
  /// rows x cols, uninitialised, on `stream`.
  DeviceMatrix(Index rows, Index cols, const Stream& stream);

  ///@{
  /// rows x cols of zeros, on the calling thread's Stream::per_thread() or on `stream`
  /// (stream-ordered: does not block).
  static DeviceMatrix zeros(Index rows, Index cols);
  static DeviceMatrix zeros(Index rows, Index cols, const Stream& stream);
  ///@}
  ///@{
  /// rows x cols, every element `value`, on the calling thread's Stream::per_thread() or on
  /// `stream` (stream-ordered: does not block).
  static DeviceMatrix constant(Index rows, Index cols, T value);
  static DeviceMatrix constant(Index rows, Index cols, T value, const Stream& stream);
  ///@}
  ///@{
  /// Copies rows*cols values in row-major order from host memory.
  /// On the calling thread's Stream::per_thread() or on `stream`; the host buffer may be
  /// reused as soon as the call returns.
  static DeviceMatrix from_host(const T* row_major, Index rows, Index cols);
  static DeviceMatrix from_host(const T* row_major, Index rows, Index cols, const Stream& stream);
  ///@}
  ///@{
  /// Like from_host; `values.size()` must be rows*cols (else shape_error).
  static DeviceMatrix from_vector(const std::vector<T>& values, Index rows, Index cols);
  static DeviceMatrix from_vector(const std::vector<T>& values, Index rows, Index cols,
                                  const Stream& stream);
  ///@}

  /// A deep copy of `other`, queued on other's stream, which the copy then carries.
  DeviceMatrix(const DeviceMatrix& other);             // deep copy on other's stream
  /// A deep copy of `other`, queued on this matrix's stream, which it keeps.
  DeviceMatrix& operator=(const DeviceMatrix& other);  // deep copy; keeps this matrix's stream
  /// Takes other's memory and stream (no copy); `other` is left 0x0.
  DeviceMatrix(DeviceMatrix&& other) noexcept;
  /// Takes other's memory and stream (no copy); `other` is left 0x0.
  DeviceMatrix& operator=(DeviceMatrix&& other) noexcept;
  /// Frees the memory stream-ordered, after every use already queued; never throws.
  ~DeviceMatrix();

  /// A deep copy on the same stream.
  DeviceMatrix clone() const;

  /// Number of rows.
  Index rows() const noexcept { return rows_; }
  /// Number of columns.
  Index cols() const noexcept { return cols_; }
  /// rows() * cols().
  Index size() const noexcept { return rows_ * cols_; }
  /// True when size() is 0.
  bool empty() const noexcept { return size() == 0; }
  ///@{
  /// The device pointer to element (0, 0), row-major with rows of cols() elements; null when
  /// empty. For the caller's own kernels: queue them on stream().native().
  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  ///@}

  /// The stream this matrix lives on.
  Stream stream() const;
  /// Moves the matrix to `stream`: later work on `stream` waits for everything already queued
  /// on the matrix, and its memory will be freed on `stream`.
  void set_stream(const Stream& stream);
  /// Blocks until all work queued so far that reads or writes this matrix has finished.
  void synchronize() const;

  /// Copies to rows()*cols() values in row-major order; blocks until they are on the host.
  void copy_to_host(T* row_major) const;
  /// The rows()*cols() values in row-major order; blocks until they are on the host.
  std::vector<T> to_vector() const;
  /// Queues a copy of rows()*cols() values in row-major order from host memory at `row_major`
  /// into this matrix, on stream(), and returns without waiting (cudaMemcpyAsync). The host
  /// memory must stay valid and unchanged until the stream has run the copy (stream()
  /// .synchronize(), or a CUDA event recorded on stream().native() after this call). From a
  /// PinnedBuffer the copy overlaps with work on other streams; from pageable memory CUDA
  /// stages it first and the call returns once the bytes are staged. Does nothing for an empty
  /// matrix; a null pointer is std::invalid_argument.
  void copy_from_host_async(const T* row_major);
  /// Queues a copy of the rows()*cols() values in row-major order to host memory at
  /// `row_major`, on stream(), after the work already queued on the matrix, and returns
  /// without waiting. The values are there once the stream has run the copy (as above); the
  /// matrix may be destroyed right after the call. From pinned memory the call returns at once;
  /// to pageable memory CUDA copies through its own buffer and the call returns when the values
  /// are there. Does nothing for an empty matrix; a null pointer is std::invalid_argument.
  void copy_to_host_async(T* row_major) const;
  /// Sets every element to `value` (stream-ordered, does not block).
  void fill(T value);

  // ----------------------------------------------------------------- views
  /// A dense copy of the window `v`, queued on v's stream, which the copy then carries.
  DeviceMatrix(const MatrixView<const T>& v);
  ///@{
  /// The whole matrix as a view (no copy); it keeps this matrix's memory alive.
  MatrixView<const T> view() const;
  MatrixView<T> view();
  ///@}
  /// The whole matrix as a read-only view, so that a matrix goes wherever a view does.
  operator MatrixView<const T>() const { return view(); }
  ///@{
  /// The rows x cols window whose top-left element is (r0, c0); shape_error if it does not fit.
  MatrixView<const T> block(Index r0, Index c0, Index rows, Index cols) const { return view().block(r0, c0, rows, cols); }
  MatrixView<T> block(Index r0, Index c0, Index rows, Index cols) { return view().block(r0, c0, rows, cols); }
  ///@}
  ///@{
  /// Row i as a 1 x cols() view.
  MatrixView<const T> row(Index i) const { return view().row(i); }
  MatrixView<T> row(Index i) { return view().row(i); }
  ///@}
  ///@{
  /// Column j as a rows() x 1 view.
  MatrixView<const T> col(Index j) const { return view().col(j); }
  MatrixView<T> col(Index j) { return view().col(j); }
  ///@}
  /// Element (i, j), copied to the host; blocks. Out of range: shape_error.
  T at(Index i, Index j) const { return view().at(i, j); }
  /// Sets element (i, j) from the host; blocks until it is written. Out of range: shape_error.
  void set(Index i, Index j, T value) { view().set(i, j, value); }
  ///@{
  /// The same elements as a rows x cols matrix, in the same row-major order, with no copy:
  /// on an lvalue, a view of this matrix's memory (which it keeps alive, as view() does); on
  /// an rvalue (`std::move(A).reshaped(r, c)`, a temporary), a matrix that takes the memory and
  /// the stream. rows * cols must be size(), and neither negative, else shape_error naming both
  /// shapes (the matrix is left as it was).
  MatrixView<const T> reshaped(Index rows, Index cols) const& { return view().reshaped(rows, cols); }
  MatrixView<T> reshaped(Index rows, Index cols) & { return view().reshaped(rows, cols); }
  DeviceMatrix reshaped(Index rows, Index cols) &&;
  ///@}

  // ----------------------------------------------------------------- generators
  ///@{
  /// The n x n identity matrix (ones on the diagonal, zeros elsewhere), on the calling
  /// thread's Stream::per_thread() or on `stream` (stream-ordered: does not block). n < 0 is a
  /// shape_error.
  static DeviceMatrix identity(Index n);
  static DeviceMatrix identity(Index n, const Stream& stream);
  ///@}

  ///@{
  /// rows x cols values uniformly distributed in [lo, hi), on the calling thread's
  /// Stream::per_thread() or on `stream` (stream-ordered: does not block). For float and double
  /// only: a compile error for other T (the template parameter is not for callers).
  ///
  /// Each value is lo (1 - u) + hi u for u a multiple of 2^-24 (float) or 2^-53 (double) in
  /// [0, 1), drawn from cuRAND's Philox4_32_10: lo itself is drawn (u = 0), hi never is (a value
  /// that rounds up to hi becomes the largest value below it). lo == hi gives lo everywhere.
  /// Non-finite bounds or lo > hi: std::invalid_argument, before anything runs.
  ///
  /// Reproducible: element i, counted in row-major order, depends only on (seed, i), never on
  /// the launch, the stream or the GPU, so a seed gives bitwise the same matrix on every run
  /// and every GPU, and matrices of any shapes with the same seed agree element for element in
  /// row-major order (a 3x5 and a 5x3 hold the same 15 values; a 2x5 holds the first 10). The
  /// uniform and normal generators, and float and double, draw from disjoint parts of the
  /// generator's counter space: the same seed gives independent values.
  template <class U = T>
  static DeviceMatrix random_uniform(Index rows, Index cols, T lo, T hi, std::uint64_t seed) {
    static_assert(detail::is_real_v<U> && std::is_same_v<U, T>,
                  "devmat::DeviceMatrix<T>::random_uniform: T must be float or double");
    return detail::random_matrix<T>(rows, cols, detail::Random::uniform, lo, hi, seed);
  }
  template <class U = T>
  static DeviceMatrix random_uniform(Index rows, Index cols, T lo, T hi, std::uint64_t seed, const Stream& stream) {
    static_assert(detail::is_real_v<U> && std::is_same_v<U, T>,
                  "devmat::DeviceMatrix<T>::random_uniform: T must be float or double");
    return detail::random_matrix<T>(rows, cols, detail::Random::uniform, lo, hi, seed, stream);
  }
  ///@}

  ///@{
  /// rows x cols values normally distributed with mean `mean` and standard deviation `stddev`,
  /// on the calling thread's Stream::per_thread() or on `stream` (stream-ordered: does not
  /// block). For float and double only: a compile error for other T.
  ///
  /// Box-Muller on Philox4_32_10's words: each value is mean + stddev z for z a standard normal
  /// value, reproducible as random_uniform's: element i depends only on (seed, i). float values
  /// are made of IEEE rounded operations alone, bitwise the same on every GPU; double values go
  /// through CUDA's double log, whose last bit rests on a hardware reciprocal estimate, bitwise
  /// the same on every GPU of one architecture. The tails are cut where the uniform values run
  /// out: |z| <= 6.77 for float (the normal distribution has 1.3e-11 of its mass beyond) and
  /// |z| <= 8.58 for double. stddev == 0 gives mean everywhere. Non-finite mean or stddev, or
  /// stddev < 0: std::invalid_argument, before anything runs.
  template <class U = T>
  static DeviceMatrix random_normal(Index rows, Index cols, T mean, T stddev, std::uint64_t seed) {
    static_assert(detail::is_real_v<U> && std::is_same_v<U, T>,
                  "devmat::DeviceMatrix<T>::random_normal: T must be float or double");
    return detail::random_matrix<T>(rows, cols, detail::Random::normal, mean, stddev, seed);
  }
  template <class U = T>
  static DeviceMatrix random_normal(Index rows, Index cols, T mean, T stddev, std::uint64_t seed,
                                    const Stream& stream) {
    static_assert(detail::is_real_v<U> && std::is_same_v<U, T>,
                  "devmat::DeviceMatrix<T>::random_normal: T must be float or double");
    return detail::random_matrix<T>(rows, cols, detail::Random::normal, mean, stddev, seed, stream);
  }
  ///@}

  // ----------------------------------------------------------------- element-wise
  // The operators and functions of <devmat/expr.hpp> (`A + B`, `2 * A`, `sqrt(A)`, `A > B`,
  // ...) build lazy expressions, run as one kernel when assigned to a matrix or a view.

  /// Runs the expression `e` into a new matrix, on e's stream (`DeviceMatrix<T> C = A + B;`).
  DeviceMatrix(const Expr<T>& e);
  /// Runs `e` into this matrix. When the shapes match, in place, on this matrix's stream (e
  /// may read this matrix: `A = A * 2 + B` is fine); otherwise this becomes a new matrix of
  /// e's shape on e's stream.
  DeviceMatrix& operator=(const Expr<T>& e);
  /// Copies the window `v` into this matrix (as operator=(const Expr<T>&) does).
  DeviceMatrix& operator=(const MatrixView<const T>& v);

  ///@{
  /// In place, on this matrix's stream: `a += x`, `a -= x` for a matrix, view or expression x
  /// of a's shape or broadcasting to it (else shape_error), and with a scalar `a += s`,
  /// `a -= s`, `a *= s`, `a /= s` (integer division by the scalar 0 throws
  /// std::invalid_argument).
  DeviceMatrix& operator+=(const Expr<T>& x);
  DeviceMatrix& operator-=(const Expr<T>& x);
  DeviceMatrix& operator+=(T s);
  DeviceMatrix& operator-=(T s);
  DeviceMatrix& operator*=(T s);
  DeviceMatrix& operator/=(T s);
  ///@}

  // These methods run at once and return a new matrix (the free functions of the same names in
  // <devmat/expr.hpp>, `abs(A)`, `min(A, B)`, ..., are lazy).

  /// Element-wise |a| (identity for unsigned types).
  DeviceMatrix abs() const;
  /// Element-wise min(max(a, lo), hi); lo > hi is std::invalid_argument.
  DeviceMatrix clamp(T lo, T hi) const;
  ///@{
  /// Element-wise a*b, a/b, max(a,b), min(a,b) (Eigen's cwiseProduct, cwiseQuotient, ...) with
  /// b a matrix, view or expression of a's shape (or broadcasting to it, else shape_error).
  /// With a scalar: max(a, s), min(a, s).
  DeviceMatrix cwise_product(const Expr<T>& b) const;
  DeviceMatrix cwise_quotient(const Expr<T>& b) const;
  DeviceMatrix cwise_max(const Expr<T>& b) const;
  DeviceMatrix cwise_min(const Expr<T>& b) const;
  DeviceMatrix cwise_max(T s) const;
  DeviceMatrix cwise_min(T s) const;
  ///@}
  /// 255 where a > t, else 0 (OpenCV THRESH_BINARY with maxval 255).
  DeviceMatrix<std::uint8_t> threshold(T t) const;
  /// Converts the element type. Float to integer rounds to nearest (ties to even) and
  /// saturates to the target's range, NaN gives 0 (OpenCV convertTo semantics).
  template <class U> DeviceMatrix<U> cast() const;

  // ----------------------------------------------------------------- transpose and reductions
  /// A new cols() x rows() matrix.
  DeviceMatrix transpose() const;

  /// Sum of all elements (0 for an empty matrix); blocks. Deterministic: the same input gives
  /// bitwise the same result on every run.
  sum_t<T> sum() const;
  ///@{
  /// Smallest / largest element; blocks. An empty matrix is a shape_error.
  T min() const;
  T max() const;
  ///@}
  /// sum() / size() in double; blocks. An empty matrix is a shape_error.
  double mean() const;
  ///@{
  /// The same reductions left on the device as a 1x1 matrix on this matrix's stream; they
  /// do not block, so a pipeline keeps going on the stream.
  DeviceMatrix<sum_t<T>> sum_async() const;
  DeviceMatrix min_async() const;
  DeviceMatrix max_async() const;
  DeviceMatrix<double> mean_async() const;
  ///@}
  ///@{
  /// rows() x 1 and 1 x cols() sums, in sum_t<T>.
  DeviceMatrix<sum_t<T>> row_sums() const;
  DeviceMatrix<sum_t<T>> col_sums() const;
  ///@}

 private:
  template <class U> friend class DeviceMatrix;
  friend struct detail::Access;

  Index rows_ = 0, cols_ = 0;
  T* data_ = nullptr;
  std::shared_ptr<detail::Buffer> buf_;  // null when empty
  Stream stream_;                        // unset until first needed (empty matrices)
};

namespace detail {
template <class T> struct identity { using type = T; };
/// T in a non-deduced context: a scalar or view argument takes the other operand's type.
template <class T> using identity_t = typename identity<T>::type;
}  // namespace detail

// ----------------------------------------------------------------- concatenation
namespace detail {
template <class T> DeviceMatrix<T> concat(const MatrixView<const T>& a, const MatrixView<const T>& b, bool horizontal);
}  // namespace detail

///@{
/// `[a b]`: a new matrix with a's columns, then b's (Eigen's `M << a, b`). Matrices and views
/// in any mix; the rows must match, else shape_error naming both shapes. Either may be empty
/// (a 0-column operand adds nothing). On a's stream, after the work queued on b's.
template <class T>
DeviceMatrix<T> hconcat(const MatrixView<const T>& a, const MatrixView<const detail::identity_t<T>>& b) {
  return detail::concat(a, b, true);
}
template <class T>
DeviceMatrix<T> hconcat(const DeviceMatrix<T>& a, const MatrixView<const detail::identity_t<T>>& b) {
  return detail::concat(a.view(), b, true);
}
///@}

///@{
/// `[a; b]`: a new matrix with a's rows, then b's (Eigen's `M << a, b` for stacked operands).
/// Matrices and views in any mix; the columns must match, else shape_error naming both shapes.
/// Either may be empty (a 0-row operand adds nothing). On a's stream, after the work queued
/// on b's.
template <class T>
DeviceMatrix<T> vconcat(const MatrixView<const T>& a, const MatrixView<const detail::identity_t<T>>& b) {
  return detail::concat(a, b, false);
}
template <class T>
DeviceMatrix<T> vconcat(const DeviceMatrix<T>& a, const MatrixView<const detail::identity_t<T>>& b) {
  return detail::concat(a.view(), b, false);
}
///@}

// Instantiated once, in libdevmat.
extern template class DeviceMatrix<float>;
extern template class DeviceMatrix<double>;
extern template class DeviceMatrix<std::int32_t>;
extern template class DeviceMatrix<std::uint8_t>;
extern template class DeviceMatrix<std::int64_t>;
extern template class DeviceMatrix<std::uint64_t>;

}  // namespace devmat

// The expressions: operators and functions on matrices and views.
#include <devmat/expr.hpp>

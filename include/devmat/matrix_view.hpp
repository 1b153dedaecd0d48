// devmat::MatrixView<T>: a non-owning, strided window of a matrix in device memory. Plain C++.
/// @file
/// Views: sub-matrices, rows, columns and foreign GPU memory, with no copies
/// (devmat::MatrixView, devmat::wrap).
#pragma once

#include <devmat/error.hpp>
#include <devmat/stream.hpp>

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <type_traits>
#include <vector>

namespace devmat {

template <class T> class DeviceMatrix;
template <class T> class MatrixView;
template <class T> class Expr;

namespace detail {
struct Buffer;
struct Access;
[[noreturn]] void throw_window_error(const char* op, Index rows, Index cols, Index r0, Index c0, Index wr, Index wc);

// The sum of T's: wide enough that integer sums never overflow for any matrix in memory.
template <class T> struct sum_type { using type = T; };
template <> struct sum_type<std::int32_t> { using type = std::int64_t; };
template <> struct sum_type<std::uint8_t> { using type = std::uint64_t; };
}  // namespace detail

/// Element type of sum(), row_sums() and col_sums(): float, double, int64_t for int32_t,
/// uint64_t for uint8_t.
template <class T> using sum_t = typename detail::sum_type<T>::type;

/// A read-only window of rows() x cols() elements of T in device memory, row-major with
/// stride() elements between the starts of two rows (stride() >= cols()).
///
/// Made by DeviceMatrix::view, DeviceMatrix::block, DeviceMatrix::row, DeviceMatrix::col (and
/// the same on a view), or by devmat::wrap over memory devmat does not own. A view of a
/// DeviceMatrix keeps that matrix's memory alive (it never dangles, even after the matrix is
/// destroyed) and runs on the matrix's stream; its uses are recorded on the matrix's memory
/// like the matrix's own. Copying a view copies the window, not the elements.
/// `DeviceMatrix<T> m = view;` makes a dense copy.
template <class T>
class MatrixView<const T> {
 public:
  /// The element type, without const.
  using value_type = T;

  /// An empty 0x0 view.
  MatrixView() noexcept;

  /// The first element (device memory).
  const T* data() const noexcept { return data_; }
  /// Rows of the window.
  Index rows() const noexcept { return rows_; }
  /// Columns of the window.
  Index cols() const noexcept { return cols_; }
  /// Elements between the starts of two consecutive rows.
  Index stride() const noexcept { return stride_; }
  /// rows() * cols().
  Index size() const noexcept { return rows_ * cols_; }
  /// True when the window has no element.
  bool empty() const noexcept { return size() == 0; }
  /// True when the rows follow each other with no gap (stride() == cols(), or one row).
  bool contiguous() const noexcept { return stride_ == cols_ || rows_ <= 1; }
  /// The stream the view runs on (its matrix's, or the one given to wrap).
  Stream stream() const;

  /// The rows x cols window whose top-left element is (r0, c0) of this view; a window that
  /// does not fit is a shape_error naming this view's shape and the window.
  MatrixView block(Index r0, Index c0, Index rows, Index cols) const;
  /// The same elements as a rows x cols view, in the same row-major order, with no copy. The
  /// view must be contiguous() (or empty): a window with gaps between its rows is a shape_error
  /// (make a dense copy first: `DeviceMatrix<T>(v).reshaped(rows, cols)`). rows * cols must be
  /// size(), and neither negative, else shape_error naming both shapes.
  MatrixView reshaped(Index rows, Index cols) const;
  /// Row i as a 1 x cols() view.
  MatrixView row(Index i) const { return block(i, 0, 1, cols_); }
  /// Column j as a rows() x 1 view (stride() apart).
  MatrixView col(Index j) const { return block(0, j, rows_, 1); }

  /// Element (i, j), copied to the host; blocks until it is there. Out of range: shape_error.
  T at(Index i, Index j) const;
  /// Copies the rows()*cols() elements to the host in row-major order (no gaps); blocks.
  void copy_to_host(T* row_major) const;
  /// The elements in row-major order; blocks.
  std::vector<T> to_vector() const;

  // The operations below read the window in place (no dense copy) and behave as the
  // DeviceMatrix members of the same names; results are new dense matrices on stream().

  /// A new cols() x rows() matrix.
  DeviceMatrix<T> transpose() const;
  /// Sum of the elements (0 for an empty view); blocks. Deterministic.
  sum_t<T> sum() const;
  ///@{
  /// Smallest / largest element; blocks. An empty view is a shape_error.
  T min() const;
  T max() const;
  ///@}
  /// sum() / size() in double; blocks. An empty view is a shape_error.
  double mean() const;
  ///@{
  /// The reductions above as 1x1 device matrices on stream(); they do not block.
  DeviceMatrix<sum_t<T>> sum_async() const;
  DeviceMatrix<T> min_async() const;
  DeviceMatrix<T> max_async() const;
  DeviceMatrix<double> mean_async() const;
  ///@}
  ///@{
  /// rows() x 1 and 1 x cols() sums, in sum_t<T>.
  DeviceMatrix<sum_t<T>> row_sums() const;
  DeviceMatrix<sum_t<T>> col_sums() const;
  ///@}
  /// Element-wise |a| (identity for unsigned types).
  DeviceMatrix<T> abs() const;
  /// Element-wise min(max(a, lo), hi); lo > hi is std::invalid_argument.
  DeviceMatrix<T> clamp(T lo, T hi) const;
  /// 255 where a > t, else 0 (OpenCV THRESH_BINARY with maxval 255).
  DeviceMatrix<std::uint8_t> threshold(T t) const;
  /// Converts the element type (DeviceMatrix::cast's rules).
  template <class U> DeviceMatrix<U> cast() const;

 private:
  // A window over `data`, kept alive by `keep` (null for foreign memory).
  MatrixView(const T* data, Index rows, Index cols, Index stride, std::shared_ptr<detail::Buffer> keep,
             Stream stream) noexcept
      : data_(data), rows_(rows), cols_(cols), stride_(stride), keep_(std::move(keep)), stream_(std::move(stream)) {}

  const T* data_ = nullptr;
  Index rows_ = 0, cols_ = 0, stride_ = 0;
  std::shared_ptr<detail::Buffer> keep_;  // the matrix memory kept alive (null for wrapped memory)
  Stream stream_;

  template <class U> friend class MatrixView;
  template <class U> friend class DeviceMatrix;
  friend struct detail::Access;
};

/// A writable window (see MatrixView<const T>, which it converts to). Besides reading, it
/// writes through: `A.block(0, 0, 2, 2) = B;` copies B's elements into the window (the shapes
/// must match), `+=`, `-=`, `*=` a scalar and fill() change the window in place. Writing from
/// an overlapping but different window of the same memory gives the result as if the right
/// side were read first.
template <class T>
class MatrixView
#ifndef DEVMAT_DOXYGEN  // Doxygen takes a base that is a specialization of the same template for recursion
    : public MatrixView<const T>
#endif
{
  static_assert(!std::is_const_v<T>, "MatrixView<const T> is the read-only view");
  using Base = MatrixView<const T>;

 public:
  /// An empty 0x0 view.
  MatrixView() noexcept = default;
  /// A view of the same window (the elements are not copied).
  MatrixView(const MatrixView& other) = default;

  /// The first element (device memory).
  T* data() const noexcept { return const_cast<T*>(Base::data_); }
  /// The rows x cols window at (r0, c0) (see MatrixView<const T>::block).
  MatrixView block(Index r0, Index c0, Index rows, Index cols) const;
  /// The same elements as a rows x cols writable view (see MatrixView<const T>::reshaped).
  MatrixView reshaped(Index rows, Index cols) const;
  /// Row i.
  MatrixView row(Index i) const { return block(i, 0, 1, this->cols_); }
  /// Column j.
  MatrixView col(Index j) const { return block(0, j, this->rows_, 1); }

  /// Copies the elements of `src` (same shape, else shape_error) into this window, on this
  /// view's stream (after the work queued on src's).
  MatrixView& operator=(const MatrixView& src);
  /// Copies the elements of `src` (same shape, else shape_error) into this window.
  MatrixView& operator=(const MatrixView<const T>& src);
  /// Sets element (i, j) from the host; blocks until it is written. Out of range: shape_error.
  void set(Index i, Index j, T value) const;
  /// Sets every element of the window to `value` (stream-ordered).
  void fill(T value) const;
  /// Copies the elements of the matrix `src` (same shape, else shape_error) into this window.
  MatrixView& operator=(const DeviceMatrix<T>& src);
  /// Runs the expression `e` into this window, on this view's stream, in one kernel (e's shape
  /// must be the window's, else shape_error). e may read this very window (in place); a
  /// different window overlapping this one is read as a whole first (through a temporary).
  MatrixView& operator=(const Expr<T>& e);
  /// Element-wise `this += x`, x a matrix, view or expression of the window's shape or
  /// broadcasting to it (else shape_error).
  const MatrixView& operator+=(const Expr<T>& x) const;
  /// Element-wise `this -= x` (as operator+=).
  const MatrixView& operator-=(const Expr<T>& x) const;
  /// Adds `s` to every element.
  const MatrixView& operator+=(T s) const;
  /// Subtracts `s` from every element.
  const MatrixView& operator-=(T s) const;
  /// Multiplies every element by `s`.
  const MatrixView& operator*=(T s) const;

 private:
  template <class U> friend class DeviceMatrix;
  friend struct detail::Access;
  MatrixView(T* data, Index rows, Index cols, Index stride, std::shared_ptr<detail::Buffer> keep, Stream stream) noexcept
      : Base(data, rows, cols, stride, std::move(keep), std::move(stream)) {}
};

/// A view of `rows` x `cols` elements of T at `device_ptr`, `stride` elements between rows,
/// in memory devmat does not own (cudaMalloc, cudaMallocPitch with stride = pitch /
/// sizeof(T), another library's tensor): the caller keeps it alive while the view is used.
/// Operations on the view run on `stream`. A host pointer, a null pointer with a non-empty
/// shape, negative sizes or stride < cols are refused (std::invalid_argument or shape_error)
/// before anything runs. T may be const.
template <class T>
MatrixView<T> wrap(T* device_ptr, Index rows, Index cols, Index stride, const Stream& stream);

/// Writes the view's elements, Eigen's layout: one row a line, columns aligned; past 16 rows
/// or 16 columns the middle is elided with "...". Blocks (copies the elements to the host).
template <class T>
std::ostream& operator<<(std::ostream& os, const MatrixView<const T>& v);

}  // namespace devmat

// Views: windows of a matrix and of foreign device memory (include/devmat/matrix_view.hpp), dense
// copies of them, writes through them, element access, printing, and element-wise operations
// on strided operands (dispatch/transform.cuh's 2D launcher).
#include "detail/device_guard.hpp"
#include "detail/error_scope.hpp"
#include "detail/instantiate.hpp"
#include "detail/runtime.hpp"
#include "detail/view_overlap.hpp"
#include "dispatch/transform.cuh"
#include "dispatch/workspace.hpp"

#include <devmat/device_matrix.hpp>
#include <devmat/matrix_view.hpp>

#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace devmat {
namespace detail {

void throw_window_error(const char* op, Index rows, Index cols, Index r0, Index c0, Index wr, Index wc) {
  throw shape_error(std::string("devmat: ") + op + ": the " + shape_string(wr, wc) + " window at (" +
                    std::to_string(r0) + ", " + std::to_string(c0) + ") does not fit in a " +
                    shape_string(rows, cols) + " matrix");
}

namespace {

template <class T>
struct FillValue {
  T value;
  __device__ T operator()() const { return value; }
};

template <class T>
struct CopyValue {
  __device__ T operator()(T a) const { return a; }
};

template <class T>
void check_same_shape(const char* op, const MatrixView<const T>& a, const MatrixView<const T>& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) throw_shape_error(op, a.rows(), a.cols(), b.rows(), b.cols());
}

/// rows x cols holds exactly the elements of an r x c matrix, neither negative (checked without
/// forming rows * cols, which may overflow).
void check_reshape(Index r, Index c, Index rows, Index cols) {
  if (rows < 0 || cols < 0) throw_shape_error("reshaped", r, c, rows, cols, "do not match (a negative dimension)");
  const Index n = r * c;
  if (cols == 0 ? n != 0 : n % cols != 0 || n / cols != rows)
    throw_shape_error("reshaped", r, c, rows, cols, "do not hold the same number of elements");
}

template <class T>
void check_element(const char* op, const MatrixView<const T>& v, Index i, Index j) {
  if (i < 0 || j < 0 || i >= v.rows() || j >= v.cols()) throw_window_error(op, v.rows(), v.cols(), i, j, 1, 1);
}

/// A dense copy of `v` on `s` (for an operand that overlaps the output).
template <class T>
DeviceMatrix<T> dense_copy(const MatrixView<const T>& v, const Stream& s) {
  const DeviceGuard device(s);
  DeviceMatrix<T> m(v.rows(), v.cols(), s);
  if (m.empty()) return m;
  use_on(s, v);
  copy_rows(m.data(), m.cols(), v.data(), v.stride(), v.rows(), v.cols(), s);
  return m;
}

}  // namespace

}  // namespace detail

// ------------------------------------------------------------------ MatrixView<const T>
template <class T>
MatrixView<const T>::MatrixView() noexcept = default;

template <class T>
Stream MatrixView<const T>::stream() const {
  return detail::Access::is_set(stream_) ? stream_ : Stream::per_thread();
}

template <class T>
MatrixView<const T> MatrixView<const T>::block(Index r0, Index c0, Index rows, Index cols) const {
  if (r0 < 0 || c0 < 0 || rows < 0 || cols < 0 || r0 > rows_ - rows || c0 > cols_ - cols)
    detail::throw_window_error("block", rows_, cols_, r0, c0, rows, cols);
  const T* p = rows && cols ? data_ + r0 * stride_ + c0 : data_;
  return MatrixView(p, rows, cols, stride_, keep_, stream_);
}

template <class T>
MatrixView<const T> MatrixView<const T>::reshaped(Index rows, Index cols) const {
  detail::check_reshape(rows_, cols_, rows, cols);
  if (!empty() && !contiguous())
    throw shape_error("devmat: reshaped: the " + detail::shape_string(rows_, cols_) + " view (row stride " +
                      std::to_string(stride_) + ") is not contiguous, so no " + detail::shape_string(rows, cols) +
                      " view holds its elements; reshape a dense copy instead: DeviceMatrix<T>(view).reshaped(" +
                      std::to_string(rows) + ", " + std::to_string(cols) + ")");
  return MatrixView(data_, rows, cols, cols, keep_, stream_);
}

template <class T>
T MatrixView<const T>::at(Index i, Index j) const {
  detail::check_element("at", *this, i, j);
  const Stream s = stream();
  const detail::DeviceGuard device(s);  // the view's device, whatever the caller's current one
  T v{};
  detail::use_on(s, *this);
  DEVMAT_CUDA_TRY(cudaMemcpyAsync(&v, data_ + i * stride_ + j, sizeof(T), cudaMemcpyDeviceToHost, s.native()));
  DEVMAT_CUDA_TRY(cudaStreamSynchronize(s.native()));
  return v;
}

template <class T>
void MatrixView<const T>::copy_to_host(T* row_major) const {
  if (empty()) return;
  if (!row_major) throw std::invalid_argument("devmat: copy_to_host: null host pointer");
  const Stream s = stream();
  const detail::DeviceGuard device(s);
  detail::use_on(s, *this);
  detail::copy_rows(row_major, cols_, data_, stride_, rows_, cols_, s, cudaMemcpyDeviceToHost);
  DEVMAT_CUDA_TRY(cudaStreamSynchronize(s.native()));
}

template <class T>
std::vector<T> MatrixView<const T>::to_vector() const {
  std::vector<T> v(static_cast<std::size_t>(size()));
  copy_to_host(v.data());
  return v;
}

// ------------------------------------------------------------------ MatrixView<T>
template <class T>
MatrixView<T> MatrixView<T>::block(Index r0, Index c0, Index rows, Index cols) const {
  const MatrixView<const T> b = Base::block(r0, c0, rows, cols);
  return MatrixView(const_cast<T*>(b.data()), rows, cols, this->stride_, this->keep_, this->stream_);
}

template <class T>
MatrixView<T> MatrixView<T>::reshaped(Index rows, Index cols) const {
  const MatrixView<const T> r = Base::reshaped(rows, cols);
  return MatrixView(data(), rows, cols, r.stride(), this->keep_, this->stream_);
}

template <class T>
MatrixView<T>& MatrixView<T>::operator=(const MatrixView& src) {
  return *this = static_cast<const MatrixView<const T>&>(src);
}

template <class T>
MatrixView<T>& MatrixView<T>::operator=(const MatrixView<const T>& src) {
  detail::check_same_shape("view assignment", *this, src);
  if (this->empty()) return *this;
  const Stream s = this->stream();
  const detail::DeviceGuard device(s);
  if (detail::overlap_differs<T>(*this, src)) {
    const DeviceMatrix<T> tmp = detail::dense_copy(src, s);  // read the whole right side first
    return *this = tmp.view();
  }
  if (detail::same_window<T>(*this, src)) return *this;
  detail::use_on(s, *this, src);
  detail::copy_rows(data(), this->stride_, src.data(), src.stride(), this->rows_, this->cols_, s);
  return *this;
}

template <class T>
void MatrixView<T>::set(Index i, Index j, T value) const {
  detail::check_element("set", *this, i, j);
  const Stream s = this->stream();
  const detail::DeviceGuard device(s);
  detail::use_on(s, *this);
  DEVMAT_CUDA_TRY(cudaMemcpyAsync(data() + i * this->stride_ + j, &value, sizeof(T), cudaMemcpyHostToDevice, s.native()));
  DEVMAT_CUDA_TRY(cudaStreamSynchronize(s.native()));  // `value` lives on this stack frame
}

template <class T>
void MatrixView<T>::fill(T value) const {
  if (this->empty()) return;
  const Stream s = this->stream();
  const detail::DeviceGuard device(s);
  detail::use_on(s, *this);
  detail::launch_transform_2d(s.native(), this->rows_, this->cols_, data(), this->stride_,
                              static_cast<const detail::None*>(nullptr), Index(0),
                              static_cast<const detail::None*>(nullptr), Index(0), detail::FillValue<T>{value});
}

// ------------------------------------------------------------------ DeviceMatrix and views
template <class T>
DeviceMatrix<T>::DeviceMatrix(const MatrixView<const T>& v) : DeviceMatrix(detail::dense_copy(v, v.stream())) {}

template <class T>
MatrixView<const T> DeviceMatrix<T>::view() const {
  return detail::Access::view(static_cast<const T*>(data_), rows_, cols_, cols_, buf_, stream_);
}

template <class T>
MatrixView<T> DeviceMatrix<T>::view() {
  return detail::Access::view(data_, rows_, cols_, cols_, buf_, stream_);
}

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::reshaped(Index rows, Index cols) && {
  detail::check_reshape(rows_, cols_, rows, cols);  // before the move: an error leaves *this intact
  DeviceMatrix m(std::move(*this));
  m.rows_ = rows;
  m.cols_ = cols;
  return m;
}

// ------------------------------------------------------------------ foreign memory
template <class T>
MatrixView<T> wrap(T* device_ptr, Index rows, Index cols, Index stride, const Stream& stream) {
  using E = std::remove_const_t<T>;
  if (rows < 0 || cols < 0)
    throw shape_error("devmat: wrap: negative dimensions " + detail::shape_string(rows, cols));
  if (stride < cols)
    throw shape_error("devmat: wrap: stride " + std::to_string(stride) + " is less than the " + std::to_string(cols) +
                      " columns of " + detail::shape_string(rows, cols));
  if (rows > 0 && cols > 0) {
    if (!device_ptr)
      throw std::invalid_argument("devmat: wrap: null pointer for a " + detail::shape_string(rows, cols) + " view");
    if (reinterpret_cast<std::uintptr_t>(device_ptr) % alignof(E) != 0)
      throw std::invalid_argument("devmat: wrap: the pointer is not aligned to its element type");
    cudaPointerAttributes attr{};
    const detail::ErrorScope scope;
    const cudaError_t st = cudaPointerGetAttributes(&attr, device_ptr);
    if (st != cudaSuccess) scope.forget_ours();
    if (st != cudaSuccess || (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged))
      throw std::invalid_argument(
          "devmat: wrap: the pointer is not device memory (cudaPointerGetAttributes says it is " +
          std::string(st != cudaSuccess ? "unknown to CUDA"
                      : attr.type == cudaMemoryTypeHost ? "pinned host memory"
                                                       : "host memory") +
          "); wrap takes memory from cudaMalloc, cudaMallocPitch or another GPU library");
  }
  return detail::Access::view(device_ptr, rows, cols, stride, nullptr, stream);
}

// ------------------------------------------------------------------ printing
template <class T>
std::ostream& operator<<(std::ostream& os, const MatrixView<const T>& v) {
  constexpr Index kEdge = 8;  // rows and columns shown at each end past 16
  const auto shown = [](Index n) { return n > 2 * kEdge; };
  const Index rows = v.rows(), cols = v.cols();
  const Index out_rows = shown(rows) ? 2 * kEdge : rows, out_cols = shown(cols) ? 2 * kEdge : cols;
  const auto index = [&](Index k, Index n, bool elided) { return elided && k >= kEdge ? n - 2 * kEdge + k : k; };
  // Copy only what is printed: the corner blocks.
  std::vector<std::vector<std::string>> cells(static_cast<std::size_t>(out_rows));
  std::size_t width = 0;
  for (Index i = 0; i < out_rows; ++i) {
    const Index r = index(i, rows, shown(rows));
    std::vector<T> row_vals(static_cast<std::size_t>(cols));
    if (!shown(cols)) {
      v.row(r).copy_to_host(row_vals.data());
    } else {
      v.block(r, 0, 1, kEdge).copy_to_host(row_vals.data());
      v.block(r, cols - kEdge, 1, kEdge).copy_to_host(row_vals.data() + kEdge);
    }
    for (Index j = 0; j < out_cols; ++j) {
      std::ostringstream cell;
      cell.precision(os.precision());
      using Print = std::conditional_t<(sizeof(T) < sizeof(int)), int, T>;  // bytes as numbers
      cell << static_cast<Print>(row_vals[static_cast<std::size_t>(j)]);
      width = std::max(width, cell.str().size());
      cells[static_cast<std::size_t>(i)].push_back(cell.str());
    }
  }
  for (Index i = 0; i < out_rows; ++i) {
    if (shown(rows) && i == kEdge) os << "...\n";
    for (Index j = 0; j < out_cols; ++j) {
      if (shown(cols) && j == kEdge) os << " ...";
      if (j > 0) os << ' ';
      os << std::setw(static_cast<int>(width)) << cells[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
    }
    if (i + 1 < out_rows) os << '\n';
  }
  return os;
}

#define DEVMAT_INSTANTIATE(T)                                                                                      \
  template class MatrixView<const T>;                                                                              \
  template class MatrixView<T>;                                                                                    \
  template DeviceMatrix<T>::DeviceMatrix(const MatrixView<const T>&);                                              \
  template MatrixView<const T> DeviceMatrix<T>::view() const;                                                      \
  template MatrixView<T> DeviceMatrix<T>::view();                                                                  \
  template DeviceMatrix<T> DeviceMatrix<T>::reshaped(Index, Index) &&;                                             \
  template MatrixView<T> wrap<T>(T*, Index, Index, Index, const Stream&);                                          \
  template MatrixView<const T> wrap<const T>(const T*, Index, Index, Index, const Stream&);                        \
  template std::ostream& operator<< <T>(std::ostream&, const MatrixView<const T>&);
DEVMAT_FOR_EACH_TYPE(DEVMAT_INSTANTIATE)
#undef DEVMAT_INSTANTIATE

}  // namespace devmat

// DeviceMatrix<T>: construction, copies, host transfers and streams.
#include "detail/device_guard.hpp"
#include "detail/error_scope.hpp"
#include "detail/instantiate.hpp"
#include "detail/runtime.hpp"
#include "dispatch/transform.cuh"

#include <devmat/device_matrix.hpp>

#include <limits>
#include <stdexcept>

namespace devmat {

namespace {
template <class T>
std::size_t checked_bytes(Index rows, Index cols) {
  if (rows < 0 || cols < 0)
    throw shape_error("devmat: DeviceMatrix: negative dimensions " + detail::shape_string(rows, cols));
  const auto max = std::numeric_limits<std::size_t>::max() / sizeof(T);
  if (rows > 0 && static_cast<std::size_t>(cols) > max / static_cast<std::size_t>(rows))
    throw shape_error("devmat: DeviceMatrix: " + detail::shape_string(rows, cols) +
                      " elements do not fit in memory");
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols) * sizeof(T);
}

template <class T>
struct FillFn {
  T value;
  __device__ T operator()() const { return value; }
};

// Every entry point below that queues work makes the matrix's stream's device current for the
// whole operation (detail::DeviceGuard: one cudaGetDevice when it already is): a device's pool
// memory may not be copied, nor a kernel launched on its stream, while another device is
// current. Allocations, frees and cross-stream waits (set_stream, synchronize) switch on their
// own (runtime.cpp).

// The calling thread's stream for a non-empty matrix; none (no device touched) for an empty one.
template <class T>
Stream default_stream(Index rows, Index cols) {
  return checked_bytes<T>(rows, cols) ? Stream::per_thread() : detail::Access::unset();
}
}  // namespace

template <class T>
DeviceMatrix<T>::DeviceMatrix() noexcept = default;

template <class T>
DeviceMatrix<T>::DeviceMatrix(Index rows, Index cols) : DeviceMatrix(rows, cols, default_stream<T>(rows, cols)) {}

template <class T>
DeviceMatrix<T>::DeviceMatrix(Index rows, Index cols, const Stream& stream)
    : rows_(rows), cols_(cols), stream_(stream) {
  const std::size_t bytes = checked_bytes<T>(rows, cols);
  if (bytes) {
    buf_ = std::make_shared<detail::Buffer>(bytes, stream);
    data_ = static_cast<T*>(buf_->ptr);
  }
}

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::zeros(Index rows, Index cols) {
  return zeros(rows, cols, default_stream<T>(rows, cols));
}

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::zeros(Index rows, Index cols, const Stream& stream) {
  const detail::DeviceGuard device(stream);
  DeviceMatrix m(rows, cols, stream);
  if (!m.empty()) DEVMAT_CUDA_TRY(cudaMemsetAsync(m.data_, 0, m.size() * sizeof(T), stream.native()));
  return m;
}

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::constant(Index rows, Index cols, T value) {
  return constant(rows, cols, value, default_stream<T>(rows, cols));
}

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::constant(Index rows, Index cols, T value, const Stream& stream) {
  const detail::DeviceGuard device(stream);
  DeviceMatrix m(rows, cols, stream);
  m.fill(value);
  return m;
}

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::from_host(const T* row_major, Index rows, Index cols) {
  return from_host(row_major, rows, cols, default_stream<T>(rows, cols));
}

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::from_host(const T* row_major, Index rows, Index cols,
                                           const Stream& stream) {
  const detail::DeviceGuard device(stream);
  DeviceMatrix m(rows, cols, stream);
  if (m.empty()) return m;
  if (!row_major) throw std::invalid_argument("devmat: from_host: null host pointer");
  const cudaStream_t s = stream.native();
  DEVMAT_CUDA_TRY(cudaMemcpyAsync(m.data_, row_major, m.size() * sizeof(T), cudaMemcpyHostToDevice, s));
  // From pageable memory the call returns once the data is staged; from pinned memory it
  // returns at once, so wait: the caller may reuse its buffer as soon as we return.
  cudaPointerAttributes attr{};
  const detail::ErrorScope scope;
  const cudaError_t st = cudaPointerGetAttributes(&attr, row_major);
  if (st != cudaSuccess) scope.forget_ours();  // unknown to CUDA: pageable memory, already staged
  else if (attr.type == cudaMemoryTypeHost) DEVMAT_CUDA_TRY(cudaStreamSynchronize(s));
  return m;
}

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::from_vector(const std::vector<T>& values, Index rows, Index cols) {
  const bool fits = rows >= 0 && cols >= 0 &&
                    values.size() == static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  return from_vector(values, rows, cols, fits ? default_stream<T>(rows, cols) : detail::Access::unset());
}

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::from_vector(const std::vector<T>& values, Index rows, Index cols,
                                             const Stream& stream) {
  if (rows < 0 || cols < 0 || values.size() != static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols))
    detail::throw_shape_error("from_vector", static_cast<Index>(values.size()), 1, rows, cols,
                              "(vector length vs requested shape) do not match");
  return from_host(values.data(), rows, cols, stream);
}

template <class T>
DeviceMatrix<T>::DeviceMatrix(const DeviceMatrix& other) : rows_(other.rows_), cols_(other.cols_), stream_(other.stream_) {
  if (other.empty()) return;
  const detail::DeviceGuard device(stream_);
  buf_ = std::make_shared<detail::Buffer>(other.size() * sizeof(T), stream_);
  data_ = static_cast<T*>(buf_->ptr);
  detail::use_on(stream_, other);
  DEVMAT_CUDA_TRY(cudaMemcpyAsync(data_, other.data_, size() * sizeof(T), cudaMemcpyDeviceToDevice, stream_.native()));
}

template <class T>
DeviceMatrix<T>& DeviceMatrix<T>::operator=(const DeviceMatrix& other) {
  if (this == &other) return *this;
  const Stream s = detail::Access::is_set(stream_) ? stream_ : other.stream_;
  const detail::DeviceGuard device(s);
  DeviceMatrix copy(other.rows_, other.cols_, s);
  if (!other.empty()) {
    detail::use_on(s, other);
    DEVMAT_CUDA_TRY(cudaMemcpyAsync(copy.data_, other.data_, size_t(other.size()) * sizeof(T),
                                    cudaMemcpyDeviceToDevice, s.native()));
  }
  return *this = std::move(copy);
}

template <class T>
DeviceMatrix<T>::DeviceMatrix(DeviceMatrix&& other) noexcept
    : rows_(other.rows_), cols_(other.cols_), data_(other.data_), buf_(std::move(other.buf_)),
      stream_(std::move(other.stream_)) {
  other.rows_ = other.cols_ = 0;
  other.data_ = nullptr;
}

template <class T>
DeviceMatrix<T>& DeviceMatrix<T>::operator=(DeviceMatrix&& other) noexcept {
  if (this == &other) return *this;
  rows_ = other.rows_;
  cols_ = other.cols_;
  data_ = other.data_;
  buf_ = std::move(other.buf_);
  stream_ = std::move(other.stream_);
  other.rows_ = other.cols_ = 0;
  other.data_ = nullptr;
  return *this;
}

template <class T>
DeviceMatrix<T>::~DeviceMatrix() = default;

template <class T>
DeviceMatrix<T> DeviceMatrix<T>::clone() const {
  return DeviceMatrix(*this);
}

template <class T>
Stream DeviceMatrix<T>::stream() const {
  return detail::Access::is_set(stream_) ? stream_ : Stream::per_thread();
}

template <class T>
void DeviceMatrix<T>::set_stream(const Stream& stream) {
  if (buf_) buf_->set_owner(stream);
  stream_ = stream;
}

template <class T>
void DeviceMatrix<T>::synchronize() const {
  if (!buf_) return;
  buf_->prepare_use(stream_);  // the owner stream now follows every foreign use
  stream_.synchronize();
}

template <class T>
void DeviceMatrix<T>::copy_to_host(T* row_major) const {
  if (empty()) return;
  if (!row_major) throw std::invalid_argument("devmat: copy_to_host: null host pointer");
  copy_to_host_async(row_major);
  DEVMAT_CUDA_TRY(cudaStreamSynchronize(stream_.native()));
}

template <class T>
void DeviceMatrix<T>::copy_from_host_async(const T* row_major) {
  if (empty()) return;
  if (!row_major) throw std::invalid_argument("devmat: copy_from_host_async: null host pointer");
  const detail::DeviceGuard device(stream_);
  detail::use_on(stream_, *this);  // after every queued use of the old values, on any stream
  DEVMAT_CUDA_TRY(cudaMemcpyAsync(data_, row_major, size() * sizeof(T), cudaMemcpyHostToDevice, stream_.native()));
}

template <class T>
void DeviceMatrix<T>::copy_to_host_async(T* row_major) const {
  if (empty()) return;
  if (!row_major) throw std::invalid_argument("devmat: copy_to_host_async: null host pointer");
  const detail::DeviceGuard device(stream_);
  detail::use_on(stream_, *this);
  DEVMAT_CUDA_TRY(cudaMemcpyAsync(row_major, data_, size() * sizeof(T), cudaMemcpyDeviceToHost, stream_.native()));
}

template <class T>
std::vector<T> DeviceMatrix<T>::to_vector() const {
  std::vector<T> v(static_cast<std::size_t>(size()));
  copy_to_host(v.data());
  return v;
}

template <class T>
void DeviceMatrix<T>::fill(T value) {
  if (empty()) return;
  const detail::DeviceGuard device(stream_);
  detail::use_on(stream_, *this);
  detail::launch_transform(stream_.native(), size(), data_, static_cast<const detail::None*>(nullptr),
                           static_cast<const detail::None*>(nullptr), FillFn<T>{value});
}

#define DEVMAT_INSTANTIATE(T) template class DeviceMatrix<T>;
DEVMAT_FOR_EACH_TYPE(DEVMAT_INSTANTIATE)
#undef DEVMAT_INSTANTIATE

}  // namespace devmat

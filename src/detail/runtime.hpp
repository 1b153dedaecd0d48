// Internals shared by every translation unit of libdevmat: streams, buffers, the pool and
// the cross-stream bookkeeping. Plain C++ (used from .cpp and .cu files).
#pragma once

#include <devmat/device_matrix.hpp>
#include <devmat/stream.hpp>

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace devmat {

struct Stream::Impl {
  cudaStream_t native = nullptr;
  bool owning = false;
  int device = 0;  // the device the stream belongs to: its memory comes from that device's pool
  ~Impl();
};

namespace detail {

/// Throws cuda_error if no CUDA device can be used.
void require_device();

/// Stream-ordered allocation on `stream` from the pool of the stream's device (or from the
/// cache of small freed blocks); throws out_of_memory.
void* pool_allocate(std::size_t bytes, const Stream& stream);
/// Stream-ordered free of a block from pool_allocate: small blocks of streams devmat owns
/// stay cached for the next allocation of the same size on the same stream.
void pool_free(void* ptr, std::size_t bytes, const Stream& stream);
/// Frees the cached blocks of `stream` (before it is destroyed).
void release_cached(cudaStream_t stream);
/// Bytes held in the cache.
std::size_t cached_bytes();
/// Allocations the cache could not serve (each a call into the pool's allocator, ~4 us of host
/// time) since the process began: the benchmarks report it per iteration.
std::size_t pool_allocations();

/// Makes `waiter` wait (on the device, through an event) for all work queued on `on` so far.
void stream_wait(cudaStream_t waiter, cudaStream_t on);

/// A device allocation freed stream-ordered on its owner stream, after every other stream
/// that used it has finished that use.
struct Buffer {
  Buffer(std::size_t bytes, Stream owner);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  /// Orders stream `s` after all work queued so far on this buffer (its owner stream and
  /// the foreign streams that used it), and records `s` as a user when it is foreign, so
  /// the free (or the next use on the owner stream) waits for it. The common case, the owner
  /// stream with no foreign user, takes no lock.
  void prepare_use(const Stream& s);
  /// Moves ownership to `s`: `s` waits for all queued work, frees happen on `s`.
  void set_owner(const Stream& s);

  void* ptr = nullptr;
  std::size_t bytes = 0;
  Stream owner;

 private:
  void wait_users_locked(cudaStream_t waiter);
  std::mutex mu_;
  std::vector<Stream> users_;  // foreign streams that used the buffer since the owner last did
  // Mirrors of owner.native() and !users_.empty(), written under mu_, read without it.
  std::atomic<cudaStream_t> owner_native_{nullptr};
  std::atomic<bool> has_users_{false};
};

/// The library's access to a matrix's internals.
struct Access {
  template <class T> static Buffer* buffer(const DeviceMatrix<T>& m) { return m.buf_.get(); }
  template <class T> static Buffer* buffer(const MatrixView<const T>& v) { return v.keep_.get(); }
  template <class T> static const std::shared_ptr<Buffer>& keep(const DeviceMatrix<T>& m) { return m.buf_; }
  template <class T> static const std::shared_ptr<Buffer>& keep(const MatrixView<const T>& v) { return v.keep_; }
  /// A view of `data` (T may be const), kept alive by `keep` (null for foreign memory).
  template <class T>
  static MatrixView<T> view(T* data, Index rows, Index cols, Index stride, std::shared_ptr<Buffer> keep, Stream s) {
    return MatrixView<T>(data, rows, cols, stride, std::move(keep), std::move(s));
  }
  /// A view's stream as it was given (unset for an empty matrix's view: no device needed).
  template <class T> static const Stream& raw_stream(const MatrixView<const T>& v) { return v.stream_; }
  /// A matrix's stream as it was given (unset for an empty matrix that never needed one).
  template <class T> static const Stream& raw_stream(const DeviceMatrix<T>& m) { return m.stream_; }
  static bool is_set(const Stream& s) { return s.is_set(); }
  static int device(const Stream& s) { return s.impl_->device; }
  static Stream unset() { return Stream(); }
};

/// Throws shape_error when a rows x cols `what` ("matrix", "expression") has no element: its
/// `op` (min, max, mean, arg_min, ...) is undefined.
void require_nonempty(Index rows, Index cols, const char* op, const char* what = "matrix");

/// dst = src for windows of device memory whose rows do not all start on 16 bytes, by the
/// expression engine's copy kernel (expr/eval.cpp): cudaMemcpy2DAsync moves such rows at half
/// the speed of memory (1.5 against 3.3 TB/s on the H200, bench_views' view-copy rows).
template <class T>
void copy_rows_unaligned(T* dst, Index ld_dst, const T* src, Index ld_src, Index rows, Index cols, const Stream& stream);

/// Copies of at least this many bytes between unaligned device windows take the kernel.
inline constexpr std::size_t kCopyKernelMinBytes = std::size_t(1) << 20;

/// The widest row pitch cudaMemcpy2DAsync takes (cudaDevAttrMaxPitch: 2^31 - 1 bytes on every
/// GPU CUDA 13 supports); past it the call fails with cudaErrorInvalidPitchValue.
inline constexpr std::size_t kMaxCopyPitch = std::size_t(2147483647);

/// dst (rows x cols, row stride ld_dst elements) = src (row stride ld_src), stream-ordered on
/// `stream`; `kind` as cudaMemcpy2DAsync's (device to device by default). Device windows of
/// strides past kMaxCopyPitch take the copy kernel, as large unaligned ones do; else rows that
/// follow one another in both (one row, or both dense) are one plain copy, of any size; host
/// copies through such a stride go a row at a time (it leaves room for a few dozen rows at most).
template <class T>
void copy_rows(T* dst, Index ld_dst, const T* src, Index ld_src, Index rows, Index cols, const Stream& stream,
               cudaMemcpyKind kind = cudaMemcpyDeviceToDevice) {
  if (rows <= 0 || cols <= 0) return;
  const std::size_t row_bytes = static_cast<std::size_t>(cols) * sizeof(T);
  const std::size_t dst_pitch = static_cast<std::size_t>(ld_dst) * sizeof(T);
  const std::size_t src_pitch = static_cast<std::size_t>(ld_src) * sizeof(T);
  const auto rows_aligned = [](const void* p, std::size_t pitch) {
    return reinterpret_cast<std::uintptr_t>(p) % 16 == 0 && pitch % 16 == 0;
  };
  const bool wide = dst_pitch > kMaxCopyPitch || src_pitch > kMaxCopyPitch;
  if (kind == cudaMemcpyDeviceToDevice && rows > 1 &&
      (wide || (static_cast<std::size_t>(rows) * row_bytes >= kCopyKernelMinBytes &&
                !(rows_aligned(dst, dst_pitch) && rows_aligned(src, src_pitch))))) {
    copy_rows_unaligned(dst, ld_dst, src, ld_src, rows, cols, stream);
    return;
  }
  if (rows == 1 || (dst_pitch == row_bytes && src_pitch == row_bytes)) {
    DEVMAT_CUDA_TRY(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(rows) * row_bytes, kind, stream.native()));
    return;
  }
  if (wide) {
    try {
      for (Index r = 0; r < rows; ++r)
        DEVMAT_CUDA_TRY(cudaMemcpyAsync(dst + r * ld_dst, src + r * ld_src, row_bytes, kind, stream.native()));
    } catch (...) {
      // The rows already queued must not outlive the caller's buffer, which the error may free.
      (void)cudaStreamSynchronize(stream.native());
      throw;
    }
    return;
  }
  DEVMAT_CUDA_TRY(
      cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, row_bytes, static_cast<std::size_t>(rows), kind, stream.native()));
}

/// Orders `s` after every queued use of each matrix and records the use (see Buffer).
template <class... M>
void use_on(const Stream& s, const M&... m) {
  (void)std::initializer_list<int>{
      (Access::buffer(m) ? (Access::buffer(m)->prepare_use(s), 0) : 0)...};
}

}  // namespace detail
}  // namespace devmat

// devmat::Stream: shared ownership of a CUDA stream. Plain C++.
/// @file
/// devmat::Stream, the CUDA stream every matrix carries.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

namespace devmat {

template <class T> class DeviceMatrix;
template <class T> class MatrixView;
namespace detail { struct Access; }

/// A CUDA stream with shared ownership: copies refer to the same stream, and the stream is
/// destroyed when the last copy (including every matrix that carries it) goes away.
///
/// - `Stream::create()`      a new non-blocking stream that devmat owns.
/// - `Stream::per_thread()`  one non-blocking stream per host thread and device, created on
///                           first use on the calling thread's current device;
///                           the default stream of every matrix created on that thread.
/// - `Stream::wrap(s)`       uses a stream the caller owns (and must keep alive).
class Stream {
 public:
  /// A new non-blocking CUDA stream that devmat owns (destroyed with its last handle).
  static Stream create();
  /// The calling host thread's own non-blocking stream on the current device, created on first
  /// use (one per thread and device); the default stream of every matrix created on that thread.
  static Stream per_thread();
  /// Uses `native`, a stream the caller owns and keeps alive while devmat uses it.
  static Stream wrap(cudaStream_t native);

  /// The CUDA stream, for the caller's own kernels and library calls.
  cudaStream_t native() const noexcept;
  /// Blocks the host until all work queued on this stream so far has finished.
  void synchronize() const;
  /// True if this Stream owns its CUDA stream (create/per_thread), false for wrap().
  bool owning() const noexcept;

  ///@{
  /// Two Streams are equal when they refer to the same CUDA stream.
  friend bool operator==(const Stream& a, const Stream& b) noexcept { return a.native() == b.native(); }
  friend bool operator!=(const Stream& a, const Stream& b) noexcept { return !(a == b); }
  ///@}

  struct Impl;  // defined in src/

 private:
  template <class T> friend class DeviceMatrix;
  template <class T> friend class MatrixView;
  friend struct detail::Access;
  Stream() noexcept = default;  // unset: a matrix that never needed a stream (empty)
  explicit Stream(std::shared_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
  bool is_set() const noexcept { return impl_ != nullptr; }
  std::shared_ptr<Impl> impl_;
};

}  // namespace devmat

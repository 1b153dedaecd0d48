// devmat::PinnedBuffer<T>: page-locked host memory, for copies that overlap with GPU work.
// Plain C++.
/// @file
/// devmat::PinnedBuffer, page-locked (pinned) host memory owned by value: the host side of
/// DeviceMatrix::copy_from_host_async and DeviceMatrix::copy_to_host_async.
#pragma once

#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>

namespace devmat {

namespace detail {
/// cudaHostAlloc of `bytes` (portable: usable with every device's streams); throws cuda_error
/// naming the size when the host cannot lock that much. 0 bytes gives null.
void* pinned_allocate(std::size_t bytes);
/// cudaFreeHost; never throws (errors at process exit are ignored).
void pinned_free(void* p) noexcept;
}  // namespace detail

/// Page-locked (pinned) host memory for `size()` elements of T, owned by value like a
/// std::vector without initialisation: move-only, freed by its destructor.
///
/// A copy between the GPU and pinned memory runs on the DMA engines while kernels run and
/// returns to the host at once (DeviceMatrix::copy_from_host_async, copy_to_host_async); from
/// ordinary (pageable) memory CUDA first stages the bytes through a buffer of its own, with the
/// host waiting. Allocating and freeing pinned memory is slow (milliseconds for megabytes, and
/// freeing waits for the device): allocate a few buffers and reuse them, as resize() does.
/// T must be trivially copyable. The first allocation initialises CUDA (on a machine without a
/// usable GPU it throws cuda_error).
template <class T>
class PinnedBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "devmat::PinnedBuffer<T>: T must be trivially copyable");

 public:
  /// The element type T.
  using value_type = T;

  /// Empty: holds no memory and touches no device.
  PinnedBuffer() noexcept = default;
  /// `n` uninitialised elements.
  explicit PinnedBuffer(std::size_t n) : data_(static_cast<T*>(detail::pinned_allocate(n * sizeof(T)))), size_(n), capacity_(n) {}
  /// Takes other's memory; `other` is left empty.
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  /// Frees this buffer's memory and takes other's; `other` is left empty.
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    if (this != &other) {
      detail::pinned_free(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;             ///< Not copyable (pinned memory is scarce).
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;  ///< Not copyable.
  /// Frees the memory (cudaFreeHost); never throws. No copy queued from or to it may still be
  /// pending.
  ~PinnedBuffer() { detail::pinned_free(data_); }

  /// Makes size() `n`, keeping the first min(n, size()) elements (the others are
  /// uninitialised). Allocates only when `n` exceeds capacity(): then the old memory is freed,
  /// so no copy may be pending on it.
  void resize(std::size_t n) {
    if (n > capacity_) {
      PinnedBuffer bigger(n);
      if (size_ > 0) std::memcpy(static_cast<void*>(bigger.data_), static_cast<const void*>(data_), size_ * sizeof(T));
      *this = std::move(bigger);
    }
    size_ = n;
  }

  ///@{
  /// The first element (host memory); null when nothing was ever allocated.
  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  ///@}
  /// Number of elements.
  std::size_t size() const noexcept { return size_; }
  /// Elements the memory holds without allocating again.
  std::size_t capacity() const noexcept { return capacity_; }
  /// True when size() is 0.
  bool empty() const noexcept { return size_ == 0; }
  ///@{
  /// Element i (no bounds check).
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  ///@}
  ///@{
  /// Iterators over the size() elements.
  T* begin() noexcept { return data_; }
  T* end() noexcept { return data_ + size_; }
  const T* begin() const noexcept { return data_; }
  const T* end() const noexcept { return data_ + size_; }
  ///@}

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0, capacity_ = 0;
};

}  // namespace devmat

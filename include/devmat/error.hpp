// devmat error types. Plain C++: a host compiler alone reads this header.
/// @file
/// devmat's exceptions (error, cuda_error, shape_error, io_error, out_of_memory), the Index
/// type and DEVMAT_CUDA_TRY.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <new>
#include <stdexcept>
#include <string>

/// devmat: a GPU matrix as a C++ value type (DeviceMatrix) and the operations on it.
namespace devmat {

/// Rows, columns and element counts: signed, as Eigen's Index.
using Index = std::ptrdiff_t;  // rows and columns, signed as in Eigen

/// Base of devmat's own errors (out_of_memory derives from std::bad_alloc instead).
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A CUDA call failed: keeps the cudaError_t; what() names the call, where, and CUDA's message.
class cuda_error : public error {
 public:
  /// A failure with CUDA's `code`; `what` is the whole message.
  cuda_error(cudaError_t code, const std::string& what) : error(what), code_(code) {}
  /// The CUDA error, e.g. cudaErrorNoDevice on a machine without a usable GPU.
  cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

/// Operands whose shapes do not fit the operation; what() names the operation and both shapes.
class shape_error : public error {
 public:
  using error::error;
};

/// Reading or writing a file failed; what() names the file and the reason.
class io_error : public error {
 public:
  using error::error;
};

/// The device (or devmat's memory pool) could not provide an allocation.
class out_of_memory : public std::bad_alloc {
 public:
  /// An allocation of `requested` bytes failed while the device had `free_bytes` of
  /// `total_bytes` free.
  out_of_memory(std::size_t requested, std::size_t free_bytes, std::size_t total_bytes);
  /// Says how many bytes were asked for and how many were free, of how many.
  const char* what() const noexcept override { return what_.c_str(); }
  /// The bytes asked for.
  std::size_t requested() const noexcept { return requested_; }
  /// The device's free bytes when the allocation failed.
  std::size_t free_bytes() const noexcept { return free_; }

 private:
  std::string what_;
  std::size_t requested_, free_;
};

namespace detail {
[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);
[[noreturn]] void throw_shape_error(const char* op, Index ar, Index ac, Index br, Index bc,
                                    const char* why = nullptr);
std::string shape_string(Index rows, Index cols);
}  // namespace detail

}  // namespace devmat

/// Checks a CUDA runtime call; throws devmat::cuda_error naming the call and file:line.
#define DEVMAT_CUDA_TRY(call)                                                       \
  do {                                                                              \
    const cudaError_t devmat_status_ = (call);                                      \
    if (devmat_status_ != cudaSuccess)                                              \
      ::devmat::detail::throw_cuda_error(devmat_status_, #call, __FILE__, __LINE__); \
  } while (0)

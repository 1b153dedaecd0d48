// A scoped device switch: the entry of an operation makes its stream's device current and
// restores the caller's afterwards (as c10::cuda::CUDAGuard). Costs one cudaGetDevice when the
// device is already current, and no CUDA call at all in a process that sees one device (its
// only device is always the current one). Plain C++.
#pragma once

#include "detail/error_scope.hpp"
#include "detail/runtime.hpp"

#include <devmat/error.hpp>

#include <cuda_runtime_api.h>

namespace devmat::detail {

/// Makes `device` current; returns the device that was current before when it differed, else -1.
inline int switch_device(int device) {
  int current = -1;
  DEVMAT_CUDA_TRY(cudaGetDevice(&current));
  if (current == device) return -1;
  DEVMAT_CUDA_TRY(cudaSetDevice(device));
  return current;
}
/// Undoes switch_device (nothing for -1). Never throws.
inline void restore_device(int previous) noexcept {
  if (previous >= 0) (void)cudaSetDevice(previous);
}

/// Whether the process sees exactly one device (asked once). Then every stream belongs to it and
/// it is always the current device: a guard has nothing to check or switch.
inline bool single_device() noexcept {
  static const bool one = [] {
    const ErrorScope scope;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      scope.forget_ours();
      return false;  // the guards then ask cudaGetDevice, which reports the failure
    }
    return count == 1;
  }();
  return one;
}

class DeviceGuard {
 public:
  /// Makes `device` current for the scope.
  explicit DeviceGuard(int device) { enter(device); }
  /// Makes the device of `s` current for the scope (nothing for an unset stream).
  explicit DeviceGuard(const Stream& s) {
    if (Access::is_set(s)) enter(Access::device(s));
  }
  ~DeviceGuard() { restore_device(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  // One device: nothing to switch (a cudaGetDevice per operation saved, ~40 ns on the H200 host).
  void enter(int device) {
    if (!single_device()) previous_ = switch_device(device);
  }
  int previous_ = -1;
};

}  // namespace devmat::detail

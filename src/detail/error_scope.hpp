// CUDA keeps the error of the last failed runtime call until someone reads it with
// cudaGetLastError(). devmat reads it only to forget an error that its own call just produced,
// and only when nothing was pending before: a user's own pending error (a launch of theirs that
// failed) is never cleared or reported as devmat's. Plain C++.
#pragma once

#include <cuda_runtime_api.h>

namespace devmat::detail {

class ErrorScope {
 public:
  ErrorScope() noexcept : pending_(cudaPeekAtLastError()) {}
  /// Call after a CUDA call in this scope failed and its error is handled (thrown or ignored):
  /// clears the last error if nothing was pending when the scope began.
  void forget_ours() const noexcept {
    if (pending_ == cudaSuccess) (void)cudaGetLastError();
  }

 private:
  cudaError_t pending_;
};

}  // namespace devmat::detail

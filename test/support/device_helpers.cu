// Device-side helpers for tests (kept out of the Catch2 translation units).
#include "support/device_helpers.hpp"

#include <cuda_runtime.h>

namespace devmat::test {

namespace {
__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
}  // namespace

void spin(cudaStream_t stream, double ms) {
  int khz = 0;
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
  if (khz <= 0) khz = 2000000;
  spin_kernel<<<1, 1, 0, stream>>>(static_cast<long long>(ms * khz));
}

cudaError_t make_pending_launch_error() {
  spin_kernel<<<1, 4096>>>(0);  // 4096 threads a block: more than any GPU allows
  return cudaPeekAtLastError();
}

}  // namespace devmat::test

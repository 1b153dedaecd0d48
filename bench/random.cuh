// Random non-zero benchmark inputs generated on the device (no host transfer of gigabytes).
#pragma once

#include "support.hpp"

#include <devmat/device_matrix.hpp>

#include <cstdint>
#include <type_traits>

namespace devmat::bench {

__device__ inline std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

/// Values from a hash of (index, seed): floats in [0.5, 1.5), integers in [1, 255].
template <class T>
__global__ void fill_random_kernel(T* p, Index n, std::uint64_t seed) {
  for (Index i = blockIdx.x * Index(blockDim.x) + threadIdx.x; i < n; i += Index(gridDim.x) * blockDim.x) {
    const std::uint64_t h = mix(static_cast<std::uint64_t>(i) + 0x9e3779b97f4a7c15ull + seed);
    if constexpr (std::is_integral_v<T>) p[i] = static_cast<T>(1 + h % 255);
    else p[i] = static_cast<T>(0.5 + static_cast<double>(h >> 11) * 0x1.0p-53);
  }
}

/// A rows x cols matrix of such values on the calling thread's stream.
template <class T>
DeviceMatrix<T> random_matrix(Index rows, Index cols, std::uint64_t seed = 0) {
  DeviceMatrix<T> m(rows, cols);
  if (m.empty()) return m;
  fill_random_kernel<<<1024, 256, 0, m.stream().native()>>>(m.data(), m.size(), seed);
  DEVMAT_BENCH_CUDA(cudaGetLastError());
  return m;
}

}  // namespace devmat::bench

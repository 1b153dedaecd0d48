// The one way devmat launches a kernel: the launch's own error is checked where it arises
// (cudaLaunchKernelEx returns it), never read back later through cudaGetLastError(), which
// would report or clear someone else's error. Host code for .cu files.
#pragma once

#include "detail/error_scope.hpp"

#include <devmat/error.hpp>

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

namespace devmat::detail {

[[noreturn]] inline void throw_launch_error(cudaError_t st, dim3 grid, dim3 block, std::size_t smem) {
  const auto dim = [](dim3 d) {
    return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
  };
  throw cuda_error(st, std::string("devmat: kernel launch failed (grid ") + dim(grid) + ", block " + dim(block) +
                           ", " + std::to_string(smem) + " bytes of shared memory): " + cudaGetErrorName(st) + ": " +
                           cudaGetErrorString(st));
}

/// kernel<<<grid, block, smem, stream>>>(args...) with `attrs` (n_attrs of them); throws
/// cuda_error if this launch fails.
template <class... Params, class... Args>
void launch_with(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
                 cudaLaunchAttribute* attrs, unsigned n_attrs, Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attrs;
  config.numAttrs = n_attrs;
  const ErrorScope scope;
  const cudaError_t st = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  if (st != cudaSuccess) {
    scope.forget_ours();
    throw_launch_error(st, grid, block, smem);
  }
}

/// kernel<<<grid, block, smem, stream>>>(args...); throws cuda_error if this launch fails.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
            Args&&... args) {
  launch_with(kernel, grid, block, smem, stream, nullptr, 0, std::forward<Args>(args)...);
}

/// launch() with the grid's blocks in thread-block clusters of `cluster` (sm_90 on; each grid
/// dimension a multiple of the cluster's).
template <class... Params, class... Args>
void launch_clusters(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
                     dim3 cluster, Args&&... args) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = cluster.x;
  attr.val.clusterDim.y = cluster.y;
  attr.val.clusterDim.z = cluster.z;
  launch_with(kernel, grid, block, smem, stream, &attr, 1, std::forward<Args>(args)...);
}

}  // namespace devmat::detail

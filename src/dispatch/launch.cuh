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

/// kernel<<<grid, block, smem, stream>>>(args...); throws cuda_error if this launch fails.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
            Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  const ErrorScope scope;
  const cudaError_t st = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  if (st != cudaSuccess) {
    scope.forget_ours();
    throw_launch_error(st, grid, block, smem);
  }
}

/// launch() with the grid cut into thread-block clusters of `cluster` blocks (sm_90 on; each
/// grid dimension a multiple of the cluster's); throws cuda_error if this launch fails.
template <class... Params, class... Args>
void launch_clusters(void (*kernel)(Params...), dim3 grid, dim3 cluster, dim3 block, std::size_t smem,
                     cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cluster.x;
  attr[0].val.clusterDim.y = cluster.y;
  attr[0].val.clusterDim.z = cluster.z;
  config.attrs = attr;
  config.numAttrs = 1;
  const ErrorScope scope;
  const cudaError_t st = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  if (st != cudaSuccess) {
    scope.forget_ours();
    throw_launch_error(st, grid, block, smem);
  }
}

}  // namespace devmat::detail

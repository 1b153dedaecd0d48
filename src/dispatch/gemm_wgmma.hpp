// The Hopper wgmma float GEMM (kernels/gemm_wgmma.cuh) as the registry sees it. Its launcher and
// occupancy live in src/gemm_wgmma.cu, the one translation unit compiled for sm_90a (CMake's
// devmat_wgmma object library); everything else in libdevmat keeps the common architectures.
#pragma once

#include "kernels/gemm_common.cuh"  // GemmArgs

#include <cuda_runtime.h>

namespace devmat::detail {

/// Launches the wgmma 3xTF32 tile with kConsumers consumer warpgroups (WgmmaTileT: 2 is the
/// 128x128x32 tile, 1 the 64x128x32 one) over `grid` as run_tiled computes it. Operand rows
/// must allow 16-byte copies (TMA needs 16-byte-aligned rows: the registry marks it
/// aligned_rows, so run_gemm pads the operands whose rows do not). Instantiated for 1 and 2.
/// kCluster: the grid's z slices (at most 8) are one thread-block cluster that adds them up
/// inside the kernel and writes C (run_tiled passes C, not a workspace).
template <int kConsumers, bool kCluster = false>
void launch_gemm_wgmma(const GemmArgs<float>& p, dim3 grid, cudaStream_t stream);

/// Blocks per SM of that tile on the current device: 0 unless the library has sm_90a code and
/// the device is compute capability 9.0 (sm_90a code runs there only), which keeps
/// gemm_forced from running it elsewhere (it throws std::invalid_argument).
template <int kConsumers, bool kCluster = false>
int occupancy_gemm_wgmma();

/// The tile's description (shapes, threads, stages) for the registry.
template <int kConsumers>
struct WgmmaTileInfo {
  static constexpr int kBM = 64 * kConsumers, kBN = 128, kBK = 32, kThreads = 128 * (kConsumers + 1), kStages = 3;
};

}  // namespace devmat::detail

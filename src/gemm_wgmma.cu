// The host side of the Hopper wgmma float GEMM: TMA descriptors, occupancy and launch. This
// translation unit alone is compiled for sm_90a (CMakeLists.txt: devmat_wgmma), since wgmma
// and setmaxnreg exist only there; DEVMAT_HAS_WGMMA says that it was.
#include "detail/tensor_map.hpp"
#include "dispatch/device.hpp"
#include "dispatch/gemm_wgmma.hpp"
#include "dispatch/launch.cuh"
#include "kernels/gemm_wgmma.cuh"

#include <cuda.h>

#include <stdexcept>

namespace devmat::detail {

template <int kConsumers>
constexpr bool info_matches() {
  using Info = WgmmaTileInfo<kConsumers>;
  using Tile = WgmmaTileT<kConsumers>;
  return Info::kBM == Tile::kBM && Info::kBN == Tile::kBN && Info::kBK == Tile::kBK && Info::kThreads == Tile::kThreads &&
         Info::kStages == Tile::kStages;
}
static_assert(info_matches<1>() && info_matches<2>(), "the registry's description of the wgmma tiles");

namespace {

/// The TMA descriptor of one operand in its global layout: `rows` x (its k extent or x extent)
/// elements, row stride ld. k-contiguous: dimensions (k, x), box (BK, tile); else (x, k), box
/// (tile, BK). No swizzle (the consumers write the swizzled split tiles), zeros outside.
CUtensorMap operand_map(const GemmOperand<float>& op, int x_extent, int k_extent, int box_x) {
  CUtensorMap map;
  encode_tensor_map_2d(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, op.ptr, static_cast<cuuint64_t>(op.kcontig ? k_extent : x_extent),
                       static_cast<cuuint64_t>(op.kcontig ? x_extent : k_extent),
                       static_cast<cuuint64_t>(op.ld) * sizeof(float),  // bytes, a multiple of 16
                       static_cast<cuuint32_t>(op.kcontig ? WgmmaTile::kBK : box_x),
                       static_cast<cuuint32_t>(op.kcontig ? box_x : WgmmaTile::kBK), CU_TENSOR_MAP_SWIZZLE_NONE,
                       CU_TENSOR_MAP_L2_PROMOTION_L2_128B, "gemm");
  return map;
}

template <class Cfg, bool kAK, bool kBK>
int occupancy_of() {
  return blocks_per_sm(reinterpret_cast<const void*>(&gemm_wgmma_kernel<Cfg, kAK, kBK>), Cfg::kThreads,
                       Cfg::kSmemBytes, true);
}

template <class Cfg, bool kAK, bool kBK>
void launch_layout(const CUtensorMap& a_map, const CUtensorMap& b_map, const GemmArgs<float>& p, dim3 grid,
                   cudaStream_t s) {
  occupancy_of<Cfg, kAK, kBK>();  // prepares the kernel (shared memory past 48 KiB)
  if constexpr (Cfg::kClusterSum)
    launch_clusters(&gemm_wgmma_kernel<Cfg, kAK, kBK>, grid, Cfg::kThreads, Cfg::kSmemBytes, s, dim3(1, 1, grid.z),
                    a_map, b_map, p);
  else
    launch(&gemm_wgmma_kernel<Cfg, kAK, kBK>, grid, Cfg::kThreads, Cfg::kSmemBytes, s, a_map, b_map, p);
}

}  // namespace

template <int kConsumers, bool kCluster>
int occupancy_gemm_wgmma() {
#if defined(DEVMAT_HAS_WGMMA)
  using Cfg = WgmmaTileT<kConsumers, kCluster>;
  const DeviceProps& props = current_device_props();
  if (props.arch() != 90 || Cfg::kSmemBytes > props.smem_per_block_optin) return 0;
  return occupancy_of<Cfg, true, false>();
#else
  return 0;
#endif
}

template <int kConsumers, bool kCluster>
void launch_gemm_wgmma(const GemmArgs<float>& p, dim3 grid, cudaStream_t s) {
  using Cfg = WgmmaTileT<kConsumers, kCluster>;
  if (occupancy_gemm_wgmma<kConsumers, kCluster>() == 0)
    throw std::logic_error("devmat: gemm: the wgmma tile needs sm_90a code and an sm_90 device");
  if (kCluster && (grid.z < 1 || grid.z > static_cast<unsigned>(Cfg::kMaxClusterSlices)))
    throw std::logic_error("devmat: gemm: a cluster split-K tile got more k slices than a cluster holds");
  if (!p.a.vec || !p.b.vec)
    throw std::logic_error("devmat: gemm: the wgmma tile got operand rows without 16-byte alignment");
  const CUtensorMap a_map = operand_map(p.a, p.m, p.k, Cfg::kBM);
  const CUtensorMap b_map = operand_map(p.b, p.n, p.k, Cfg::kBN);
  if (p.a.kcontig) {
    if (p.b.kcontig) launch_layout<Cfg, true, true>(a_map, b_map, p, grid, s);
    else launch_layout<Cfg, true, false>(a_map, b_map, p, grid, s);
  } else {
    if (p.b.kcontig) launch_layout<Cfg, false, true>(a_map, b_map, p, grid, s);
    else launch_layout<Cfg, false, false>(a_map, b_map, p, grid, s);
  }
}

template int occupancy_gemm_wgmma<1, false>();
template int occupancy_gemm_wgmma<2, false>();
template int occupancy_gemm_wgmma<1, true>();
template int occupancy_gemm_wgmma<2, true>();
template void launch_gemm_wgmma<1, false>(const GemmArgs<float>&, dim3, cudaStream_t);
template void launch_gemm_wgmma<2, false>(const GemmArgs<float>&, dim3, cudaStream_t);
template void launch_gemm_wgmma<1, true>(const GemmArgs<float>&, dim3, cudaStream_t);
template void launch_gemm_wgmma<2, true>(const GemmArgs<float>&, dim3, cudaStream_t);

}  // namespace devmat::detail

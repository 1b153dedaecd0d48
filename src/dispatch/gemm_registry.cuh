// The GEMM kernel registry: every tiled configuration compiled into libdevmat, named by its
// tile shapes, with the host's description of it (for the cost model) and its launcher.
#pragma once

#include "dispatch/device.hpp"
#include "dispatch/gemm_cost_model.hpp"
#include "dispatch/gemm_wgmma.hpp"
#include "dispatch/launch.cuh"
#include "kernels/gemm_dmma.cuh"
#include "kernels/gemm_mma.cuh"
#include "kernels/gemm_simt.cuh"

#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace devmat::detail {

// ------------------------------------------------------------------ configurations
// SIMT (float, int32): the SimtTile configurations are in kernels/gemm_simt.cuh, beside the
// kernel, where its CPU emulation test takes them too.

// Tensor cores (mma.sync): the MmaTile configurations are in kernels/gemm_mma.cuh, beside the
// kernel, where its CPU emulation test takes them too; the pipelined DMMA ones in gemm_dmma.cuh.

template <class T>
constexpr GemmElement gemm_element() {
  if constexpr (std::is_same_v<T, float>) return GemmElement::f32;
  else if constexpr (std::is_same_v<T, double>) return GemmElement::f64;
  else {
    static_assert(std::is_same_v<T, std::int32_t>, "GEMM kernels exist for float, double and int32");
    return GemmElement::i32;
  }
}

// ------------------------------------------------------------------ launchers
/// One compiled-in tiled configuration: its description and how to launch and size it.
template <class T>
struct TiledKernel {
  GemmConfigInfo info;
  void (*launch)(const GemmArgs<T>&, dim3, cudaStream_t);
  int (*occupancy)();  // blocks per SM on the current device (prepares the kernel there)
};

/// Blocks per SM of one GEMM kernel instantiation on the current device. The first call there
/// also prepares the kernel (shared memory past 48 KiB, the largest carveout), so every launch
/// goes through it (a cache hit after the first).
template <class Cfg, class T>
int gemm_kernel_occupancy(void (*kernel)(GemmArgs<T>)) {
  return blocks_per_sm(reinterpret_cast<const void*>(kernel), Cfg::kThreads, Cfg::kSmemBytes, true);
}

template <class Cfg, class T>
void launch_gemm(void (*kernel)(GemmArgs<T>), const GemmArgs<T>& p, dim3 grid, cudaStream_t s) {
  gemm_kernel_occupancy<Cfg>(kernel);
  launch(kernel, grid, Cfg::kThreads, Cfg::kSmemBytes, s, p);
}

template <class T, class Cfg>
void launch_simt(const GemmArgs<T>& p, dim3 grid, cudaStream_t s) {
  with_simt_kernel<T, Cfg>(p, [&](auto kernel) { launch_gemm<Cfg>(kernel, p, grid, s); });
}

template <class T, class Cfg>
int occupancy_simt() {
  return gemm_kernel_occupancy<Cfg>(&gemm_simt_kernel<T, Cfg>);
}

/// The four layouts of A and B (k-contiguous or not) are four instantiations.
template <class Cfg>
void launch_mma(const GemmArgs<typename Cfg::Element>& p, dim3 grid, cudaStream_t s) {
  if (p.a.kcontig) {
    if (p.b.kcontig) launch_gemm<Cfg>(&gemm_mma_kernel<Cfg, true, true>, p, grid, s);
    else launch_gemm<Cfg>(&gemm_mma_kernel<Cfg, true, false>, p, grid, s);
  } else {
    if (p.b.kcontig) launch_gemm<Cfg>(&gemm_mma_kernel<Cfg, false, true>, p, grid, s);
    else launch_gemm<Cfg>(&gemm_mma_kernel<Cfg, false, false>, p, grid, s);
  }
}

template <class Cfg>
int occupancy_mma() {  // the four layouts share tile sizes; the A row-major one stands for all
  return gemm_kernel_occupancy<Cfg>(&gemm_mma_kernel<Cfg, true, false>);
}

/// One layout of a pipelined DMMA tile; a cluster-summed one (kClusterSum) runs the grid's z
/// slices of a tile as one cluster.
template <class Cfg>
void launch_dmma_layout(void (*kernel)(GemmArgs<double>), const GemmArgs<double>& p, dim3 grid, cudaStream_t s) {
  if constexpr (Cfg::kClusterSum) {
    if (grid.z > static_cast<unsigned>(Cfg::kMaxClusterSlices))
      throw std::logic_error("devmat: gemm: a cluster split-K tile got more k slices than a cluster holds");
    gemm_kernel_occupancy<Cfg>(kernel);
    launch_clusters(kernel, grid, Cfg::kThreads, Cfg::kSmemBytes, s, dim3(1, 1, grid.z), p);
  } else {
    launch_gemm<Cfg>(kernel, p, grid, s);
  }
}

/// The pipelined DMMA tiles: four layouts as launch_mma. Operand rows must allow 16-byte
/// copies (GemmConfigInfo::aligned_rows: run_gemm pads the operands whose rows do not).
template <class Cfg>
void launch_dmma(const GemmArgs<double>& p, dim3 grid, cudaStream_t s) {
  if (!p.a.vec || !p.b.vec)
    throw std::logic_error("devmat: gemm: a pipelined DMMA tile got operand rows without 16-byte copies");
  if (p.a.kcontig) {
    if (p.b.kcontig) launch_dmma_layout<Cfg>(&gemm_dmma_kernel<Cfg, true, true>, p, grid, s);
    else launch_dmma_layout<Cfg>(&gemm_dmma_kernel<Cfg, true, false>, p, grid, s);
  } else {
    if (p.b.kcontig) launch_dmma_layout<Cfg>(&gemm_dmma_kernel<Cfg, false, true>, p, grid, s);
    else launch_dmma_layout<Cfg>(&gemm_dmma_kernel<Cfg, false, false>, p, grid, s);
  }
}

/// 0 where the tile's shared memory does not fit a block of the current device (the BK 32 tiles
/// need sm_90's 227 KB), or where a cluster-summed tile meets a device without clusters (before
/// sm_90), which keeps it out of gemm's choice there and makes forcing it throw.
template <class Cfg>
int occupancy_dmma() {
  const DeviceProps& props = current_device_props();
  if (Cfg::kSmemBytes > props.smem_per_block_optin || (Cfg::kClusterSum && props.cc_major < 9)) return 0;
  return gemm_kernel_occupancy<Cfg>(&gemm_dmma_kernel<Cfg, true, false>);
}

template <class Cfg>
GemmConfigInfo gemm_info(const char* name, GemmMath math, bool automatic = true, bool aligned_rows = false,
                         int only_arch = 0) {
  return {name, Cfg::kBM, Cfg::kBN, Cfg::kBK, Cfg::kThreads, Cfg::kStages, math, automatic, aligned_rows, only_arch};
}

template <class T, class Cfg>
TiledKernel<T> simt_kernel(const char* name) {
  return {gemm_info<Cfg>(name, GemmMath::simt), &launch_simt<T, Cfg>, &occupancy_simt<T, Cfg>};
}

/// A narrow SIMT tile (GemmConfigInfo::narrow_side): automatic only where the product's narrow
/// side fits it.
template <class T, class Cfg>
TiledKernel<T> narrow_simt_kernel(const char* name) {
  TiledKernel<T> k = simt_kernel<T, Cfg>(name);
  k.info.narrow_side = true;
  return k;
}

template <class Cfg>
TiledKernel<typename Cfg::Element> mma_kernel(const char* name, bool automatic = true) {
  constexpr GemmMath math = std::is_same_v<typename Cfg::Element, float> ? GemmMath::tf32x3 : GemmMath::dmma;
  return {gemm_info<Cfg>(name, math, automatic), &launch_mma<Cfg>, &occupancy_mma<Cfg>};
}

/// A small mma.sync tile for short k (GemmConfigInfo::whole_k): k up to its stages' k tiles,
/// every one of whose copies is issued before the first MMA (gemm_mainloop).
template <class Cfg>
TiledKernel<typename Cfg::Element> short_k_kernel(const char* name) {
  TiledKernel<typename Cfg::Element> k = mma_kernel<Cfg>(name);
  k.info.whole_k = Cfg::kStages * Cfg::kBK;
  return k;
}

template <class Cfg>
TiledKernel<double> dmma_kernel(const char* name) {
  GemmConfigInfo info = gemm_info<Cfg>(name, GemmMath::dmma, !Cfg::kClusterSum || kGemmClusterSplitKDmma, true);
  if constexpr (Cfg::kClusterSum) info.cluster_splits = Cfg::kMaxClusterSlices, info.tail_split = true;
  return {info, &launch_dmma<Cfg>, &occupancy_dmma<Cfg>};
}

/// A wgmma tile (src/gemm_wgmma.cu; kConsumers warpgroups of 64 rows): sm_90a code, so compute capability 9.0 only (its
/// occupancy is 0 elsewhere, and the model skips it on other architectures); TMA needs
/// 16-byte-aligned operand rows.
template <int kConsumers>
TiledKernel<float> wgmma_kernel(const char* name, bool automatic = true) {
  return {gemm_info<WgmmaTileInfo<kConsumers>>(name, GemmMath::tf32x3, automatic, true, 90),
          &launch_gemm_wgmma<kConsumers>, &occupancy_gemm_wgmma<kConsumers>};
}

/// The wgmma tile with its k slices (at most 8) summed in a cluster: automatic per
/// kGemmClusterSplitKWgmma (dispatch/gemm_cost_model.hpp).
template <int kConsumers>
TiledKernel<float> wgmma_cluster_kernel(const char* name) {
  // The 64x128 one stays forced-only: measured at four shapes, never the fastest.
  constexpr bool automatic = kGemmClusterSplitKWgmma && kConsumers == 2;
  GemmConfigInfo info = gemm_info<WgmmaTileInfo<kConsumers>>(name, GemmMath::tf32x3, automatic, true, 90);
  info.cluster_splits = 8;
  return {info, &launch_gemm_wgmma<kConsumers, true>, &occupancy_gemm_wgmma<kConsumers, true>};
}

// ------------------------------------------------------------------ the registry
/// The tiled configurations of T, in a fixed order (gemm_forced indexes them); the cost model's
/// efficiency table (dispatch/gemm_cost_model.cpp) knows them by name.
template <class T> const std::vector<TiledKernel<T>>& tiled_kernels();

template <>
inline const std::vector<TiledKernel<float>>& tiled_kernels<float>() {
  static const std::vector<TiledKernel<float>> v = {
      simt_kernel<float, SimtMid>("128x128x8"),       simt_kernel<float, SimtBig>("128x256x8"),
      simt_kernel<float, SimtSmall>("64x64x16"),      simt_kernel<float, SimtWide>("64x256x16"),
      mma_kernel<Tf32x128x64>("tf32x3-128x64x32"),    mma_kernel<Tf32x64x128>("tf32x3-64x128x32"),
      mma_kernel<Tf32x64x256>("tf32x3-64x256x32"),    mma_kernel<Tf32x64x64>("tf32x3-64x64x32"),
      // 65536x64x64's fastest (run U2a: 23.62 TFLOP/s, two CTAs an SM).
      mma_kernel<Tf32r128x64b2>("tf32x3r-128x64x32-2b"),
      // The 128x128 mma.sync tile with the fast split (the 21:35 H200 run: 53.8 TFLOP/s at
      // 4096^3 against the exact split's 48.6, error 3.19e-7 against 3.16e-7, cuBLAS 1.15e-6).
      mma_kernel<Tf32f128x128>("tf32x3f-128x128x32"),
      // Hopper's warpgroup MMA (kernels/gemm_wgmma.cuh, sm_90a only: occupancy 0 elsewhere),
      // automatic on an sm_90 device: 1.58 times tf32x3f at 4096^3 on the H200 (run S3). The
      // 64x128 tile (one consumer warpgroup) is a variant for small and m ~ 64 products,
      // measured beside it (bench_gemm), not picked.
      wgmma_kernel<2>("wgmma-128x128x32"), wgmma_kernel<1>("wgmma-64x128x32", false),
      // Split-K summed in a cluster (sm_90): the 128x128 one automatic per kGemmClusterSplitKWgmma.
      wgmma_cluster_kernel<2>("wgmma-128x128x32-cl"), wgmma_cluster_kernel<1>("wgmma-64x128x32-cl"),
      // The small tiles: 32x32 for short k over few output tiles (session 35, H100, of cuBLAS:
      // 384x256x128 0.63 -> 1.16, 64x2048x128 0.71 -> 1.43, 128x128x128 0.75 -> 1.12); 32x64
      // and 64x32 forced-only, never more than 1% ahead of the best automatic tile there.
      short_k_kernel<Tf32x32x32>("tf32x3-32x32x32"), mma_kernel<Tf32x32x64>("tf32x3-32x64x32", false),
      mma_kernel<Tf32x64x32>("tf32x3-64x32x32", false),
      // The narrow CUDA-core tiles, for n <= 16 or m <= 16 (session 36, H100, of cuBLAS:
      // 65536x16x128 0.98 against the 32x32 tile's 0.82, 16x65536x128 1.14 against 0.85).
      narrow_simt_kernel<float, SimtTall>("128x16x16"), narrow_simt_kernel<float, SimtShort>("16x128x16")};
  return v;
}

template <>
inline const std::vector<TiledKernel<std::int32_t>>& tiled_kernels<std::int32_t>() {
  static const std::vector<TiledKernel<std::int32_t>> v = {simt_kernel<std::int32_t, SimtMid>("128x128x8"),
                                                            simt_kernel<std::int32_t, SimtSmall>("64x64x16")};
  return v;
}

template <>
inline const std::vector<TiledKernel<double>>& tiled_kernels<double>() {
  static const std::vector<TiledKernel<double>> v = {
      mma_kernel<Dmma128x128>("128x128x16"), mma_kernel<Dmma128x64>("128x64x16"), mma_kernel<Dmma64x64>("64x64x16"),
      // pipelined (gemm_dmma_kernel): "pipe-" BMxBNxBK, the MMA's k, "w<count>" for other warp counts
      dmma_kernel<DmmaPipe128x128k4>("pipe-128x128x16-k4"),
      dmma_kernel<DmmaPipe128x128k4w16>("pipe-128x128x16-k4-w16"),
      dmma_kernel<DmmaPipe128x128x32k4w16>("pipe-128x128x32-k4-w16"),
      dmma_kernel<DmmaPipe128x128x32k8>("pipe-128x128x32-k8"),
      dmma_kernel<DmmaPipe128x64k4w8>("pipe-128x64x16-k4-w8"),
      dmma_kernel<DmmaPipe64x64k8>("pipe-64x64x16-k8"),
      dmma_kernel<DmmaPipe64x64x32k16>("pipe-64x64x32-k16"),
      // k slices added in a cluster, and the tail split (forced-only: kGemmClusterSplitKDmma)
      dmma_kernel<DmmaPipe128x128k4w16Cl>("pipe-128x128x16-k4-w16-cl"),
      dmma_kernel<DmmaPipe128x128x32k4w16Cl>("pipe-128x128x32-k4-w16-cl")};
  return v;
}

/// The descriptions of T's configurations, for the cost model.
template <class T>
const std::vector<GemmConfigInfo>& tiled_infos() {
  static const std::vector<GemmConfigInfo> v = [] {
    std::vector<GemmConfigInfo> infos;
    for (const auto& k : tiled_kernels<T>()) infos.push_back(k.info);
    return infos;
  }();
  return v;
}

}  // namespace devmat::detail

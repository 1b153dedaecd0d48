// SIMT tiled GEMM for 4-byte types (float, int32): block tile -> warp tile -> a per-thread
// register tile of 4x4 sub-tiles, a multi-stage cp.async pipeline, A and B both stored k-major
// in shared memory ([k][m] and [k][n]) so every fragment read is one conflict-free 16-byte LDS.
// Device code only.
#pragma once

#include "gemm_common.cuh"

#include <type_traits>

namespace devmat::detail {

/// A SIMT tile configuration: block tile BlockShape (BM, BN, BK), WarpLayout warps (M down, N
/// across), a STAGES-deep cp.async pipeline, at least MIN_BLOCKS blocks per SM. The warp is
/// 4 x 8 threads; each thread owns kSubM x kSubN sub-tiles of 4x4, spaced 16 rows and 32 columns
/// apart, so the warp tile is (16*kSubM, 32*kSubN).
template <class BlockShape, class WarpLayout, int STAGES_, int MIN_BLOCKS_>
struct SimtTile {
  static constexpr int kBM = BlockShape::kM, kBN = BlockShape::kN, kBK = BlockShape::kK;
  static constexpr int kWarpsM = WarpLayout::kM, kWarpsN = WarpLayout::kN;
  static constexpr int kWarpTileM = kBM / kWarpsM, kWarpTileN = kBN / kWarpsN;
  static constexpr int kSubM = kWarpTileM / 16, kSubN = kWarpTileN / 32;
  static constexpr int kThreads = WarpLayout::kCount * 32;
  static constexpr int kStages = STAGES_, kMinBlocks = MIN_BLOCKS_;
  static constexpr int kTM = 4 * kSubM, kTN = 4 * kSubN;  // the per-thread register tile
  // Row strides of the k-major tiles: +4 keeps rows 16-byte aligned and makes the transposing
  // copy (8 k x 4 x per warp instruction) hit 32 distinct banks.
  static constexpr int kStrideA = kBM + 4, kStrideB = kBN + 4;
  static constexpr int kStageA = kBK * kStrideA, kStageB = kBK * kStrideB;  // elements
  static constexpr int kSmemBytes = kStages * (kStageA + kStageB) * 4;
  static_assert(kBM % (kWarpsM * 16) == 0 && kBN % (kWarpsN * 32) == 0,
                "SimtTile: a warp tile is a whole number of 16 x 32 sub-tile grids");
};

/// Copies the (BX, BK) tile of one operand starting at (x0, k0) into the k-major shared tile
/// s (BK, BX+4), zero-filling outside [.., x_lim) x [.., k_lim).
template <class T, int BX, int BK, int kStride, int kThreads>
__device__ __forceinline__ void simt_load_operand(T* s, const GemmOperand<T>& g, int x0, int x_lim, int k0,
                                                  int k_lim, int tid) {
  if (g.kcontig) {
    // Transposing copy, one element each: a warp reads 8 consecutive k (32 bytes) of 4
    // consecutive rows x, and writes them to 8 rows of shared memory.
    static_assert(BK % 8 == 0 && kThreads % 8 == 0 && (BK * BX) % kThreads == 0, "bad transposing copy");
    const int kk = tid % 8;
#pragma unroll
    for (int it = 0; it < BK * BX / kThreads; ++it) {
      const int r = tid / 8 + it * (kThreads / 8);
      const int x = r % BX, k = (r / BX) * 8 + kk;
      const int gx = x0 + x, gk = k0 + k;
      const bool ok = gx < x_lim && gk < k_lim;
      cp_async<4>(s + k * kStride + x, ok ? g.ptr + gx * g.ld + gk : g.ptr, ok ? 4 : 0);
    }
  } else {
    gemm_copy_tile<T, BK, BX, kStride, kThreads>(s, g.ptr, g.ld, k0, k_lim, x0, x_lim, g.vec, tid);
  }
}

template <class T>
__device__ __forceinline__ T gemm_madd(T a, T b, T c) {
  if constexpr (std::is_same_v<T, float>) return fmaf(a, b, c);
  else return a * b + c;
}

template <class T, class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks) gemm_simt_kernel(GemmArgs<T> p) {
  static_assert(sizeof(T) == 4, "the SIMT kernel moves 4-byte elements (float, int32)");
  constexpr int BM = Cfg::kBM, BN = Cfg::kBN, BK = Cfg::kBK, kStages = Cfg::kStages;
  constexpr int TM = Cfg::kTM, TN = Cfg::kTN;
  using Vec4 = Pack<T, 4>;

  DEVMAT_DYNAMIC_SHARED(unsigned char, gemm_smem);
  T* a_smem = reinterpret_cast<T*>(gemm_smem);  // (STAGES, BK, BM+4)
  T* b_smem = a_smem + kStages * Cfg::kStageA;   // (STAGES, BK, BN+4)

  const GemmTileRange tr = gemm_tile_range<BM, BN, BK>(p);
  const int m0 = tr.m0, n0 = tr.n0;

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int warp_m = warp / Cfg::kWarpsN, warp_n = warp % Cfg::kWarpsN;
  const int ty = lane / 8, tx = lane % 8;                          // 4 x 8 threads in a warp
  const int a_col = warp_m * Cfg::kWarpTileM + ty * 4;             // + i*16: this thread's rows
  const int b_col = warp_n * Cfg::kWarpTileN + tx * 4;             // + j*32: this thread's columns

  T acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = T(0);

  auto load_stage = [&](int stage, int k_tile) {
    const int k0 = tr.k_begin + k_tile * BK;
    simt_load_operand<T, BM, BK, Cfg::kStrideA, Cfg::kThreads>(a_smem + stage * Cfg::kStageA, p.a, m0, p.m,
                                                               k0, tr.k_end, tid);
    simt_load_operand<T, BN, BK, Cfg::kStrideB, Cfg::kThreads>(b_smem + stage * Cfg::kStageB, p.b, n0, p.n,
                                                               k0, tr.k_end, tid);
  };
  auto compute_stage = [&](int stage) {
    const T* a_tile = a_smem + stage * Cfg::kStageA;  // (BK, BM+4)
    const T* b_tile = b_smem + stage * Cfg::kStageB;  // (BK, BN+4)
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      T a_frag[TM], b_frag[TN];
#pragma unroll
      for (int i = 0; i < Cfg::kSubM; ++i) {
        const Vec4 v = *reinterpret_cast<const Vec4*>(a_tile + kk * Cfg::kStrideA + a_col + i * 16);
#pragma unroll
        for (int e = 0; e < 4; ++e) a_frag[i * 4 + e] = v.v[e];
      }
#pragma unroll
      for (int j = 0; j < Cfg::kSubN; ++j) {
        const Vec4 v = *reinterpret_cast<const Vec4*>(b_tile + kk * Cfg::kStrideB + b_col + j * 32);
#pragma unroll
        for (int e = 0; e < 4; ++e) b_frag[j * 4 + e] = v.v[e];
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = gemm_madd(a_frag[i], b_frag[j], acc[i][j]);
    }
  };
  gemm_mainloop<kStages>(tr.k_tiles, load_stage, compute_stage);

  // Epilogue: each 4-wide row piece is 16 contiguous bytes; a warp stores 4 rows x 128 bytes.
  T* out = p.c + static_cast<long long>(blockIdx.z) * p.split_stride;
#pragma unroll
  for (int i = 0; i < Cfg::kSubM; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = m0 + a_col + i * 16 + e;
#pragma unroll
      for (int j = 0; j < Cfg::kSubN; ++j) {
        const T v[4] = {acc[i * 4 + e][j * 4], acc[i * 4 + e][j * 4 + 1], acc[i * 4 + e][j * 4 + 2],
                        acc[i * 4 + e][j * 4 + 3]};
        gemm_store_results<T, 4>(p, out, r, n0 + b_col + j * 32, v);
      }
    }
}

}  // namespace devmat::detail

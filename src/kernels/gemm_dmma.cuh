// Double-precision tiled GEMM on the FP64 tensor cores (DMMA through mma.sync, sm_80+; the
// m16n8k* shapes are sm_90's). Each operand keeps its global layout in shared memory
// (16-byte cp.async along the contiguous direction), padded so that fragment reads, which are
// 8-byte loads, hit distinct banks in either layout. Device code only.
#pragma once

#include "gemm_common.cuh"

namespace devmat::detail {

/// A DMMA tile configuration: block tile (BM, BN, BK), WARPS_M x WARPS_N warps, each warp a
/// (BM/WARPS_M, BN/WARPS_N) tile of MMA_M x 8 x MMA_K instructions (MMA_M 8 or 16, MMA_K 4,
/// 8 or 16; m8n8k4 is the sm_80 DMMA, the m16n8 shapes are sm_90's).
template <int BM_, int BN_, int BK_, int WARPS_M_, int WARPS_N_, int MMA_M_, int MMA_K_, int STAGES_,
          int MIN_BLOCKS_>
struct DmmaTile {
  static constexpr int kBM = BM_, kBN = BN_, kBK = BK_;
  static constexpr int kWarpsM = WARPS_M_, kWarpsN = WARPS_N_, kThreads = kWarpsM * kWarpsN * 32;
  static constexpr int kWarpTileM = kBM / kWarpsM, kWarpTileN = kBN / kWarpsN;
  static constexpr int kMmaM = MMA_M_, kMmaK = MMA_K_;
  static constexpr int kMI = kWarpTileM / kMmaM, kNI = kWarpTileN / 8;
  static constexpr int kStages = STAGES_, kMinBlocks = MIN_BLOCKS_;
  // Row strides (doubles) of the two possible layouts: [x][k] with BK+4, [k][x] with BX+4;
  // both are 4 mod 16, which spreads a half-warp's fragment reads over all 32 banks.
  static constexpr int kStrideXK = kBK + 4, kStrideAK = kBM + 4, kStrideBK = kBN + 4;
  static constexpr int kStageA = (kBM * kStrideXK > kBK * kStrideAK) ? kBM * kStrideXK : kBK * kStrideAK;
  static constexpr int kStageB = (kBN * kStrideXK > kBK * kStrideBK) ? kBN * kStrideXK : kBK * kStrideBK;
  static constexpr int kSmemBytes = kStages * (kStageA + kStageB) * 8;
  static_assert(kBM % kWarpsM == 0 && kBN % kWarpsN == 0, "bad warp layout");
  static_assert(kWarpTileM % kMmaM == 0 && kWarpTileN % 8 == 0 && kBK % kMmaK == 0, "bad mma tiling");
  static_assert(kStrideXK % 16 == 4 && kStrideAK % 16 == 4 && kStrideBK % 16 == 4, "bank-conflict padding");
};

/// One MMA_M x 8 x MMA_K product: c += a b, fragments as the PTX ISA lays them out, with
/// g = lane/4 and t = lane%4: a[v0 + (MMA_M/8)*v1] = A(g + 8 v0, t + 4 v1),
/// b[v1] = B(t + 4 v1, g), c[2h + j] = C(g + 8h, 2t + j).
template <int MMA_M, int MMA_K>
struct Dmma {
  static constexpr int kA = (MMA_M / 8) * (MMA_K / 4), kB = MMA_K / 4, kC = (MMA_M / 8) * 2;

  __device__ static __forceinline__ void m8n8k4(double& c0, double& c1, double a, double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                 : "+d"(c0), "+d"(c1)
                 : "d"(a), "d"(b));
#else
    // Pre-Ampere: the same product through shuffles (A(g, k) is in lane 4g+k, B(k, n) in 4n+k).
    const int lane = static_cast<int>(threadIdx.x) % 32, g = lane / 4, t = lane % 4;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const double av = __shfl_sync(0xffffffffu, a, 4 * g + k);
      c0 += av * __shfl_sync(0xffffffffu, b, 4 * (2 * t) + k);
      c1 += av * __shfl_sync(0xffffffffu, b, 4 * (2 * t + 1) + k);
    }
#endif
  }

  __device__ static __forceinline__ void run(double (&c)[kC], const double (&a)[kA], const double (&b)[kB]) {
    if constexpr (MMA_M == 8) {
      static_assert(MMA_K == 4, "m8n8 exists as m8n8k4 only");
      m8n8k4(c[0], c[1], a[0], b[0]);
    } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      if constexpr (MMA_K == 4) {
        asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                     "{%0,%1,%2,%3};\n"
                     : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
                     : "d"(a[0]), "d"(a[1]), "d"(b[0]));
      } else if constexpr (MMA_K == 8) {
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                     "{%8,%9}, {%0,%1,%2,%3};\n"
                     : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
                     : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
      } else {
        static_assert(MMA_K == 16, "m16n8 exists with k = 4, 8, 16");
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7,%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3};\n"
                     : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
                     : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]),
                       "d"(a[7]), "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
      }
#else
      // Before sm_90: two m8n8k4 per k-step of 4 (rows g and g+8).
#pragma unroll
      for (int v1 = 0; v1 < MMA_K / 4; ++v1) {
        m8n8k4(c[0], c[1], a[2 * v1], b[v1]);
        m8n8k4(c[2], c[3], a[2 * v1 + 1], b[v1]);
      }
#endif
    }
  }
};

/// kAK / kBK: A / B is k-contiguous in global memory (op(A) = A, op(B) = B^T), and so is its
/// shared tile ([x][k]); otherwise the shared tile is [k][x].
template <class Cfg, bool kAK, bool kBK>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks) gemm_dmma_kernel(GemmArgs<double> p) {
  constexpr int BM = Cfg::kBM, BN = Cfg::kBN, BK = Cfg::kBK, kStages = Cfg::kStages;
  constexpr int MI = Cfg::kMI, NI = Cfg::kNI, kThreads = Cfg::kThreads;
  using Mma = Dmma<Cfg::kMmaM, Cfg::kMmaK>;

  extern __shared__ __align__(16) unsigned char gemm_smem[];
  double* a_smem = reinterpret_cast<double*>(gemm_smem);  // (STAGES, BM, BK+4) or (STAGES, BK, BM+4)
  double* b_smem = a_smem + kStages * Cfg::kStageA;        // (STAGES, BN, BK+4) or (STAGES, BK, BN+4)

  int tile_m, tile_n;
  gemm_tile_coords(p.tiles_m, p.tiles_n, tile_m, tile_n);
  const int m0 = tile_m * BM, n0 = tile_n * BN;
  const int k_begin = static_cast<int>(blockIdx.z) * p.k_per_split;
  const int k_end = static_cast<int>(min(static_cast<long long>(p.k), static_cast<long long>(k_begin) + p.k_per_split));
  const int k_tiles = (k_end - k_begin + BK - 1) / BK;

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const int wm0 = (warp / Cfg::kWarpsN) * Cfg::kWarpTileM;
  const int wn0 = (warp % Cfg::kWarpsN) * Cfg::kWarpTileN;

  auto load_stage = [&](int stage, int k_tile) {
    const int k0 = k_begin + k_tile * BK;
    double* sa = a_smem + stage * Cfg::kStageA;
    double* sb = b_smem + stage * Cfg::kStageB;
    if constexpr (kAK)  // [m][k]
      gemm_copy_tile<double, BM, BK, Cfg::kStrideXK, kThreads>(sa, p.a.ptr, p.a.ld, m0, p.m, k0, k_end, p.a.vec, tid);
    else  // [k][m]
      gemm_copy_tile<double, BK, BM, Cfg::kStrideAK, kThreads>(sa, p.a.ptr, p.a.ld, k0, k_end, m0, p.m, p.a.vec, tid);
    if constexpr (kBK)  // [n][k]
      gemm_copy_tile<double, BN, BK, Cfg::kStrideXK, kThreads>(sb, p.b.ptr, p.b.ld, n0, p.n, k0, k_end, p.b.vec, tid);
    else  // [k][n]
      gemm_copy_tile<double, BK, BN, Cfg::kStrideBK, kThreads>(sb, p.b.ptr, p.b.ld, k0, k_end, n0, p.n, p.b.vec, tid);
  };
  // Shared-memory offsets of op(A)(m, k) and op(B)(k, n) inside one stage.
  auto a_at = [](int m, int k) { return kAK ? m * Cfg::kStrideXK + k : k * Cfg::kStrideAK + m; };
  auto b_at = [](int k, int n) { return kBK ? n * Cfg::kStrideXK + k : k * Cfg::kStrideBK + n; };

  double acc[MI][NI][Mma::kC];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int c = 0; c < Mma::kC; ++c) acc[i][j][c] = 0.0;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) load_stage(s, s);
    gemm_cp_async_commit();
  }

  int read_stage = 0, write_stage = kStages - 1;
  for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
    // Same pipeline invariant as the SIMT kernel: tile k_tile has landed for every thread
    // after the wait and the barrier, and the stage read in the previous iteration is free.
    gemm_cp_async_wait<kStages - 2>();
    __syncthreads();
    if (k_tile + kStages - 1 < k_tiles) load_stage(write_stage, k_tile + kStages - 1);
    gemm_cp_async_commit();

    const double* a_tile = a_smem + read_stage * Cfg::kStageA;
    const double* b_tile = b_smem + read_stage * Cfg::kStageB;
#pragma unroll
    for (int kb = 0; kb < BK / Cfg::kMmaK; ++kb) {
      double a_frag[MI][Mma::kA], b_frag[NI][Mma::kB];
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int v1 = 0; v1 < Cfg::kMmaK / 4; ++v1)
#pragma unroll
          for (int v0 = 0; v0 < Cfg::kMmaM / 8; ++v0)
            a_frag[i][v0 + (Cfg::kMmaM / 8) * v1] =
                a_tile[a_at(wm0 + i * Cfg::kMmaM + g + 8 * v0, kb * Cfg::kMmaK + 4 * v1 + t)];
#pragma unroll
      for (int j = 0; j < NI; ++j)
#pragma unroll
        for (int v1 = 0; v1 < Cfg::kMmaK / 4; ++v1)
          b_frag[j][v1] = b_tile[b_at(kb * Cfg::kMmaK + 4 * v1 + t, wn0 + j * 8 + g)];
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) Mma::run(acc[i][j], a_frag[i], b_frag[j]);
    }
    read_stage = read_stage + 1 == kStages ? 0 : read_stage + 1;
    write_stage = write_stage + 1 == kStages ? 0 : write_stage + 1;
  }
  gemm_cp_async_wait<0>();

  // Epilogue: c[2h + j] = C(g + 8h, 2t + j): pairs of consecutive columns, 16-byte stores.
  double* out = p.c + static_cast<long long>(blockIdx.z) * p.split_stride;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int h = 0; h < Cfg::kMmaM / 8; ++h) {
        const double v[2] = {acc[i][j][2 * h], acc[i][j][2 * h + 1]};
        gemm_store_results<double, 2>(p, out, m0 + wm0 + i * Cfg::kMmaM + g + 8 * h, n0 + wn0 + j * 8 + 2 * t, v);
      }
}

}  // namespace devmat::detail

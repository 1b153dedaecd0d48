// Float GEMM on Hopper's warpgroup MMA (wgmma), as 3xTF32 (see gemm_mma.cuh for the split and
// why the sums are flushed every 16 k). sm_90a only: the library compiles it in its own
// translation unit (src/gemm_wgmma.cu) for sm_90a, and the host runs it only on a compute
// capability 9.0 device (occupancy 0 elsewhere, so gemm_forced throws and gemm never picks it).
// On sm_90 the cost model picks it where it models faster (1.58 times the mma.sync tile at
// 4096^3 on the H200). Device code only.
//
// What it asks of a product (and how gemm meets it): operand rows of 16-byte multiples from a
// 16-byte-aligned start (TMA's global strides: gemm hands it row-padded copies otherwise, and
// the model counts their cost); nothing of m, n or k (the TMA boxes zero-fill past the operand
// in both dimensions, so ragged tiles and k tails need no code; the epilogue guards its stores);
// either layout of each operand (four instantiations); k slices of whole k tiles (run_tiled).
//
// One CTA computes a 128x128 output tile, 384 threads in three warpgroups:
//  - warpgroup 0, the producer: one thread issues TMA loads (cp.async.bulk.tensor.2d) of the
//    raw A and B tiles (BK = 32 deep) into kStages raw stages, in the operands' global layouts,
//    each stage guarded by a `full` mbarrier (transaction bytes) and an `empty` one (released
//    by the consumers). TMA zero-fills outside the operand, so the edges need no guard.
//  - warpgroups 1 and 2, the consumers, each 64 rows of the tile x 128 columns:
//    they split each landed raw stage once, together, into big and small TF32 parts written
//    K-major with the 128-byte swizzle that wgmma's shared-memory descriptors describe (a
//    transpose where the operand is not k-contiguous: tf32 wgmma reads K-major operands
//    only), into one of two split buffers, while the wgmmas of the previous tile run on the
//    other; then three wgmmas (m64n128k8) per k-step of 8: A_small B_big, A_big B_small,
//    A_big B_big, smallest terms first, into a step sum started from zero every 16 k
//    (scale-d = 0), added to the running sum with ordinary rounded FP32 adds.
//
// Assumptions (checked on the H200 in run S3: test_gemm's forced-configuration cases cover the
// tile edges, bench_gemm's ours-wgmma rows the speed and the error against FP64):
//  - the shared-memory descriptor (PTX ISA "Matrix Descriptor Format", CUTLASS's GmmaDescriptor):
//    bits 0-13 start address >> 4, 16-29 leading byte offset >> 4 (unused for swizzled K-major
//    layouts, set to 1 as CUTLASS does), 32-45 stride byte offset >> 4 (1024: from one 8-row
//    group of 128-byte rows to the next), 49-51 base offset (0: every tile starts on a
//    1024-byte boundary), 62-63 layout type (1 = 128-byte swizzle);
//  - the 128-byte swizzle: in a 1024-byte-aligned block of 8 rows of 128 bytes, the 16-byte
//    chunk c of row r is stored at chunk c ^ (r % 8) (CuTe's Swizzle<3,4,3>, TMA's SWIZZLE_128B);
//  - the k-steps of 8 tf32 (32 bytes) inside a 128-byte row are addressed by adding 32 bytes
//    to the descriptor's start address (CUTLASS's descriptor iterator does the same);
//  - the accumulator fragment of m64nNk8 .f32: register i of lane l in warp w (of the
//    warpgroup) is D(16 w + l/4 + 8 ((i/2) % 2), 8 (i/4) + 2 (l%4) + i%2);
//  - generic-proxy stores (the split) are made visible to wgmma (async proxy) by
//    fence.proxy.async.shared::cta in the writing threads before the consumers' barrier;
//  - the TMA's transaction count is the whole box, zero-filled parts included.
#pragma once

#include "gemm_common.cuh"
#include "gemm_mma.cuh"  // Tf32x3 (the split), gemm_tile_fma (the non-finite fallback)
#include "tma.cuh"       // mbarriers and TMA copies

#include <cuda.h>  // CUtensorMap (a type only: no driver library is linked)

#include <cstdint>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define DEVMAT_WGMMA_DEVICE 1
#else
#define DEVMAT_WGMMA_DEVICE 0
#endif

namespace devmat::detail {

/// The tile of gemm_wgmma_kernel: (64 kConsumers) x 128 x 32, one producer warpgroup and
/// kConsumers consumer warpgroups (64 rows each), kStages raw TMA stages and two split buffers.
/// kConsumers = 2 is the 128x128 tile gemm picks; 1 a 64x128 one, measured for small and
/// m ~ 64 products. Shared memory, in bytes from a 1024-aligned base: the raw stages (A then
/// B), the two split buffers (A big, A small, B big, B small), then the mbarriers
/// (full[kStages], empty[kStages]) and a flag.
/// kClusterSum_: the k slices of one output tile add up inside the kernel, across a cluster
/// (1, 1, slices <= 8): each CTA stages its partial tile over its raw stages, and
/// gemm_cluster_sum adds them in slice order and writes C (no workspace, no finalize kernel).
template <int kConsumerGroups, bool kClusterSum_ = false>
struct WgmmaTileT {
  using Element = float;
  static constexpr bool kClusterSum = kClusterSum_;
  static constexpr int kMaxClusterSlices = 8;  // the portable cluster size
  static constexpr int kConsumers = kConsumerGroups;  // warpgroups, 64 rows each
  static constexpr int kBM = 64 * kConsumers, kBN = 128, kBK = 32;
  static constexpr int kThreads = 128 * (kConsumers + 1);
  static constexpr int kConsumerThreads = 128 * kConsumers;
  static constexpr int kStages = 3;
  static constexpr int kMinBlocks = 1;
  // Registers (setmaxnreg, two consumer groups): the producer gives back what the consumers
  // take, within the pool that the launch bounds give the CTA: 65536 / 384 threads, in steps
  // of 8, is 168 a thread (ptxas of CUDA 13.0: 168 registers, no spills). One consumer group
  // needs no rebalancing, 256 threads may hold 255 registers each (held to 128 for two CTAs
  // per SM, it spilled 320 bytes).
  static constexpr bool kSetMaxNReg = kConsumers == 2;
  static constexpr int kProducerRegs = 40, kConsumerRegs = 232, kPoolRegs = 168;
  static constexpr int kRawA = kBM * kBK * 4, kRawB = kBN * kBK * 4;  // bytes of a raw tile
  static constexpr int kRawStage = kRawA + kRawB;
  static constexpr int kSplitOffset = kStages * kRawStage;
  static constexpr int kSplitBytes = 2 * (kRawA + kRawB);  // big and small of A and B
  static constexpr int kBarrierOffset = kSplitOffset + 2 * kSplitBytes;
  static constexpr int kFlagOffset = kBarrierOffset + 2 * kStages * 8;
  static constexpr int kAlign = 1024;  // the 128-byte swizzle's atom
  static constexpr int kSmemBytes = kFlagOffset + 16 + kAlign;  // + slack to align the base
  static constexpr int kSumStride = kBN + 4;  // the staged partial tile (kClusterSum), over the raw stages
  static_assert(kBM * kSumStride * 4 <= kSplitOffset, "the partial tile fits the raw stages");
  static_assert(kConsumers == 1 || kConsumers == 2, "one or two consumer warpgroups");
  static_assert(kBK * 4 == 128, "a K-major row of the split tiles is one 128-byte swizzle row");
  static_assert(kBM == 64 * kConsumers && kBN == 128, "each consumer warpgroup runs m64n128k8");
  static_assert(kRawA % kAlign == 0 && kRawB % kAlign == 0, "tiles on swizzle-atom boundaries");
  static_assert(!kSetMaxNReg || (kPoolRegs == 65536 / kThreads / 8 * 8 &&
                                 kProducerRegs * 128 + kConsumerRegs * kConsumerThreads <= kPoolRegs * kThreads),
                "register pool");
  static_assert(kProducerRegs <= kPoolRegs && kConsumerRegs >= kPoolRegs, "setmaxnreg dec / inc directions");
  static_assert(kProducerRegs % 8 == 0 && kConsumerRegs % 8 == 0, "setmaxnreg counts are multiples of 8");
};
using WgmmaTile = WgmmaTileT<2>;    // 128x128x32, gemm's choice on sm_90
using WgmmaTile64 = WgmmaTileT<1>;  // 64x128x32, a measured variant

// ------------------------------------------------------------------ PTX wrappers (sm_90a)
/// A barrier of the `count` threads that use id `id` (1..15; 0 is __syncthreads').
__device__ __forceinline__ void wg_named_barrier(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
template <int kRegs>
__device__ __forceinline__ void wg_setmaxnreg_dec() {
#if DEVMAT_WGMMA_DEVICE
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
#endif
}
template <int kRegs>
__device__ __forceinline__ void wg_setmaxnreg_inc() {
#if DEVMAT_WGMMA_DEVICE
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
#endif
}
__device__ __forceinline__ void wgmma_fence() {
#if DEVMAT_WGMMA_DEVICE
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if DEVMAT_WGMMA_DEVICE
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#if DEVMAT_WGMMA_DEVICE
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
/// Keeps the compiler from moving reads or writes of accumulator registers across the
/// wgmma fences and waits (CUTLASS's warpgroup_fence_operand).
template <int N>
__device__ __forceinline__ void wgmma_fence_operands(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

/// The descriptor of a K-major, 128-byte-swizzled operand tile whose rows (one x each, 32 tf32)
/// start at shared address `addr` (see the assumptions at the top).
__device__ __forceinline__ std::uint64_t wgmma_desc_sw128(std::uint32_t addr) {
  return static_cast<std::uint64_t>((addr & 0x3ffffu) >> 4) | (std::uint64_t{1} << 16) | (std::uint64_t{1024 >> 4} << 32) |
         (std::uint64_t{1} << 62);
}

/// d (64 rows x 128 columns of the warpgroup's fragment) = a b + (scale_d ? d : 0), a from
/// descriptor `a_desc` (64 x 8), b from `b_desc` (128 x 8, K-major: B^T's rows).
__device__ __forceinline__ void wgmma_m64n128k8_tf32(float (&d)[64], std::uint64_t a_desc, std::uint64_t b_desc,
                                                     int scale_d) {
#if DEVMAT_WGMMA_DEVICE
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(a_desc), "l"(b_desc), "r"(scale_d));
#else
  (void)d, (void)a_desc, (void)b_desc, (void)scale_d;
#endif
}

// ------------------------------------------------------------------ the split
/// Splits one landed raw (X, 32) tile of op(X) (x = m for A, n for B) into big and small TF32
/// parts, K-major and 128-byte swizzled: element (x, k) at float x*32 + 4 (c ^ (x % 8)) + k % 4
/// with c = k / 4. `raw` is [x][32] when kXK (the operand is k-contiguous), else [32][X]. The
/// kThreads consumer threads each move 16-byte chunks; both mappings keep a quarter warp on
/// distinct banks: kXK reads and writes one 128-byte row per 8 threads; otherwise 8
/// consecutive x read 32 consecutive floats and write chunk c of 8 rows, which the swizzle
/// sends to 8 different bank groups.
template <bool kXK, int X, int kThreads>
__device__ __forceinline__ void wgmma_split_tile(const float* raw, float* big, float* small, int ct) {
  constexpr int kChunks = X * 8;
  static_assert(kChunks % kThreads == 0, "the tile does not split into the consumers' chunks");
#pragma unroll
  for (int it = 0; it < kChunks / kThreads; ++it) {
    const int u = ct + it * kThreads;
    const int x = kXK ? u / 8 : u % X, c = kXK ? u % 8 : u / X;
    float v[4];
    if constexpr (kXK) {
      const float4 f = *reinterpret_cast<const float4*>(raw + x * 32 + c * 4);
      v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) v[j] = raw[(c * 4 + j) * X + x];
    }
    std::uint32_t b[4], s[4];
    Tf32x3<true>::split(b, s, v);  // big rounded, small = x - big (the fast split)
    const int at = x * 32 + ((c ^ (x & 7)) * 4);
    *reinterpret_cast<uint4*>(big + at) = make_uint4(b[0], b[1], b[2], b[3]);
    *reinterpret_cast<uint4*>(small + at) = make_uint4(s[0], s[1], s[2], s[3]);
  }
}

// ------------------------------------------------------------------ the kernel
/// Cfg: a WgmmaTileT. kAK / kBK: A / B is k-contiguous in global memory (see GemmOperand).
/// a_map / b_map: TMA descriptors of A and B in their global layouts (innermost dimension
/// first), boxes of (32, tile) when k-contiguous, else (tile, 32), tile = BM for A and BN for
/// B, no swizzle, zero fill (src/gemm_wgmma.cu).
template <class Cfg, bool kAK, bool kBK>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    gemm_wgmma_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                      GemmArgs<float> p) {
#if DEVMAT_WGMMA_DEVICE
  constexpr int BM = Cfg::kBM, BN = Cfg::kBN, BK = Cfg::kBK, kStages = Cfg::kStages;
  extern __shared__ unsigned char wgmma_smem_raw[];
  // The 128-byte swizzle is a function of address bits 4-9: the base must be 1024-aligned.
  const std::uint32_t raw_base = shared_u32(wgmma_smem_raw);
  const std::uint32_t pad = (Cfg::kAlign - (raw_base & (Cfg::kAlign - 1))) & (Cfg::kAlign - 1);
  unsigned char* smem = wgmma_smem_raw + pad;
  const std::uint32_t smem_u32 = raw_base + pad;
  auto full_bar = [&](int s) { return smem_u32 + Cfg::kBarrierOffset + 8u * s; };
  auto empty_bar = [&](int s) { return smem_u32 + Cfg::kBarrierOffset + 8u * (kStages + s); };
  volatile int* nonfinite = reinterpret_cast<volatile int*>(smem + Cfg::kFlagOffset);

  const GemmTileRange tr = gemm_tile_range<BM, BN, BK>(p);
  const int tid = static_cast<int>(threadIdx.x);
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(full_bar(s), 1);   // the producer's arrive.expect_tx (+ the TMA bytes)
      mbar_init(empty_bar(s), 1);  // one consumer thread, after the consumers' barrier
    }
    *nonfinite = 0;
    mbar_init_fence();
  }
  __syncthreads();

  if (tid < 128) {  // ---------------------------------------------------------- producer
    if constexpr (Cfg::kSetMaxNReg) wg_setmaxnreg_dec<Cfg::kProducerRegs>();
    if (tid == 0) {
      for (int k_tile = 0; k_tile < tr.k_tiles; ++k_tile) {
        const int s = k_tile % kStages, round = k_tile / kStages;
        mbar_wait(empty_bar(s), (round & 1) ^ 1);  // round 0 passes at once
        mbar_arrive_expect_tx(full_bar(s), Cfg::kRawStage);
        const int k0 = tr.k_begin + k_tile * BK;
        const std::uint32_t a_dst = smem_u32 + s * Cfg::kRawStage, b_dst = a_dst + Cfg::kRawA;
        // k tiles never straddle two k slices (k_per_split is a multiple of BK); past k the
        // TMA reads zeros.
        if constexpr (kAK) tma_load_2d(a_dst, &a_map, full_bar(s), k0, tr.m0);
        else tma_load_2d(a_dst, &a_map, full_bar(s), tr.m0, k0);
        if constexpr (kBK) tma_load_2d(b_dst, &b_map, full_bar(s), k0, tr.n0);
        else tma_load_2d(b_dst, &b_map, full_bar(s), tr.n0, k0);
      }
    }
    return;  // the consumers wait for every stage, so the CTA outlives the loads
  }

  // ------------------------------------------------------------------------- consumers
  if constexpr (Cfg::kSetMaxNReg) wg_setmaxnreg_inc<Cfg::kConsumerRegs>();
  const int ct = tid - 128;  // 0..255
  const int wg = ct / 128;   // this warpgroup's 64 rows of the tile
  constexpr int kConsumerBarrier = 1;
  auto split_stage = [&](int k_tile) {  // raw stage of k_tile -> split buffer k_tile % 2
    const int s = k_tile % kStages;
    mbar_wait(full_bar(s), (k_tile / kStages) & 1);
    const float* a_raw = reinterpret_cast<const float*>(smem + s * Cfg::kRawStage);
    const float* b_raw = reinterpret_cast<const float*>(smem + s * Cfg::kRawStage + Cfg::kRawA);
    float* split = reinterpret_cast<float*>(smem + Cfg::kSplitOffset + (k_tile & 1) * Cfg::kSplitBytes);
    float* a_big = split;
    float* a_small = a_big + BM * BK;
    float* b_big = a_small + BM * BK;
    float* b_small = b_big + BN * BK;
    wgmma_split_tile<kAK, BM, Cfg::kConsumerThreads>(a_raw, a_big, a_small, ct);
    wgmma_split_tile<kBK, BN, Cfg::kConsumerThreads>(b_raw, b_big, b_small, ct);
    fence_proxy_async();  // for the wgmmas, after the consumers' barrier
  };

  float acc[64], step[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = 0.0f, step[i] = 0.0f;

  if (tr.k_tiles > 0) {
    split_stage(0);
    wg_named_barrier(kConsumerBarrier, Cfg::kConsumerThreads);
    if (ct == 0) mbar_arrive(empty_bar(0));
  }
  for (int k_tile = 0; k_tile < tr.k_tiles; ++k_tile) {
    const std::uint32_t split = smem_u32 + Cfg::kSplitOffset + (k_tile & 1) * Cfg::kSplitBytes;
    const std::uint32_t a_big = split + wg * 64 * BK * 4, a_small = a_big + BM * BK * 4;
    const std::uint32_t b_big = split + 2 * BM * BK * 4, b_small = b_big + BN * BK * 4;
#pragma unroll
    for (int half = 0; half < 2; ++half) {  // 16 k each: one step sum
      wgmma_fence_operands(step);
      wgmma_fence();  // step was read by the adds below
#pragma unroll
      for (int ks = 0; ks < 2; ++ks) {
        const std::uint32_t k_bytes = (2 * half + ks) * 8 * 4;  // k-step of 8 tf32 in the 128-byte row
        const std::uint64_t ab = wgmma_desc_sw128(a_big + k_bytes), as = wgmma_desc_sw128(a_small + k_bytes);
        const std::uint64_t bb = wgmma_desc_sw128(b_big + k_bytes), bs = wgmma_desc_sw128(b_small + k_bytes);
        wgmma_m64n128k8_tf32(step, as, bb, ks);  // ks == 0: the step sum starts from zero
        wgmma_m64n128k8_tf32(step, ab, bs, 1);
        wgmma_m64n128k8_tf32(step, ab, bb, 1);
      }
      wgmma_commit();
      // While the first step sum runs: split the next tile into the other buffer (its last
      // readers, the previous tile's wgmmas, were waited for before the last barrier).
      if (half == 0 && k_tile + 1 < tr.k_tiles) split_stage(k_tile + 1);
      wgmma_wait<0>();
      wgmma_fence_operands(step);
#pragma unroll
      for (int i = 0; i < 64; ++i) acc[i] += step[i];
    }
    // Every consumer is done with this tile's split buffer, and has split (and fenced) the
    // next tile, whose raw stage is then free for the producer.
    wg_named_barrier(kConsumerBarrier, Cfg::kConsumerThreads);
    if (ct == 0 && k_tile + 1 < tr.k_tiles) mbar_arrive(empty_bar((k_tile + 1) % kStages));
  }

  float* out = p.c + static_cast<long long>(blockIdx.z) * p.split_stride;
  bool finite = true;
#pragma unroll
  for (int i = 0; i < 64; ++i) finite = finite && isfinite(acc[i]);
  if (!finite) *nonfinite = 1;
  wg_named_barrier(kConsumerBarrier, Cfg::kConsumerThreads);
  const int wt = ct % 128, w = wt / 32, lane = wt % 32, g = lane / 4, t = lane % 4;
  if constexpr (Cfg::kClusterSum) {
    // The partial tile goes to shared memory over the raw stages (every stage has landed and
    // been split: the consumers waited for each, and passed the barrier above after their
    // last split), then the cluster adds the slices' tiles.
    float* sum_smem = reinterpret_cast<float*>(smem);  // (BM, BN+4)
    constexpr int kStride = Cfg::kSumStride;
    if (*nonfinite) {
      // The exact FP32 path, into the staged tile: operands and C shifted to the tile's
      // origin, raw sums (alpha 1, C not read).
      GemmArgs<float> q = p;
      q.a.ptr += q.a.kcontig ? static_cast<long long>(tr.m0) * q.a.ld : tr.m0;
      q.b.ptr += q.b.kcontig ? static_cast<long long>(tr.n0) * q.b.ld : tr.n0;
      q.m = p.m - tr.m0, q.n = p.n - tr.n0;
      q.ldc = kStride, q.c_vec = true, q.read_c = false, q.alpha = 1.0f, q.beta = 0.0f;
      gemm_tile_fma<float, BM, BN, Cfg::kConsumerThreads>(q, sum_smem, 0, 0, tr.k_begin, tr.k_end, ct);
    } else {
      const int row0 = wg * 64 + 16 * w + g;
#pragma unroll
      for (int j = 0; j < 16; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          Pack<float, 2> v;
          v.v[0] = acc[4 * j + 2 * h], v.v[1] = acc[4 * j + 2 * h + 1];
          *reinterpret_cast<Pack<float, 2>*>(sum_smem + (row0 + 8 * h) * kStride + 8 * j + 2 * t) = v;
        }
    }
    gemm_cluster_sum<float, BM, BN, Cfg::kConsumerThreads, kStride>(p, sum_smem, tr.m0, tr.n0, ct);
    return;
  }
  if (*nonfinite) {  // uniform across the consumers: the exact FP32 path for this tile
    gemm_tile_fma<float, BM, BN, Cfg::kConsumerThreads>(p, out, tr.m0, tr.n0, tr.k_begin, tr.k_end, ct);
    return;
  }
  // Epilogue: register 4j + 2h + e of lane (g, t) in warp w is row 16w + g + 8h, column
  // 8j + 2t + e of the warpgroup's 64 x 128 fragment.
  const int row0 = tr.m0 + wg * 64 + 16 * w + g;
#pragma unroll
  for (int j = 0; j < 16; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float v[2] = {acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]};
      gemm_store_results<float, 2>(p, out, row0 + 8 * h, tr.n0 + 8 * j + 2 * t, v);
    }
#else
  (void)a_map, (void)b_map, (void)p;
  __trap();  // compiled for sm_90a only; the host never launches it elsewhere
#endif
}

}  // namespace devmat::detail

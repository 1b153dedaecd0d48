// FP64 tensor-core GEMM (DMMA through mma.sync) with a software-pipelined main loop: the
// latency-bound parts of gemm_mma_kernel (kernels/gemm_mma.cuh) moved off the tensor pipe's
// critical path. There, after each k tile's MMAs every warp of the block meets at the barrier,
// then all of them issue the next tile's copies (~45 instructions per 16-byte chunk, recomputing
// addresses and bounds) and wait for their first fragment loads, so the DP tensor pipe idles
// while the block's warps, synchronised by the barrier, do everything else at the same time
// (ncu, 4096^3 on an H200: 58% of the DMMA peak, 0.39 eligible warps per scheduler). Here:
//  - fragments are double-buffered in registers: the k-step kb+1's fragments are loaded from
//    shared memory while kb's MMAs issue, and the first k-step of the next tile is loaded
//    before the last k-step of this one computes, so the barrier and the load latency sit
//    behind MMAs in flight (CUTLASS's sm80 multistage order);
//  - the block's barrier comes once per k tile, after the second-to-last k-step's MMAs;
//  - each thread's copy address is worked out once (DmmaTileCopy); a k tile adds a fixed step,
//    whole k tiles need no bounds (edge blocks clamp x instead), and the copies are spread over
//    the tile's k-steps, between MMAs.
// Shared-memory layouts, fragment layouts and padding are MmaTile's (conflict-free LDS.64 in
// both layouts). Device code only.
#pragma once

#include "gemm_common.cuh"
#include "gemm_mma.cuh"

#include <type_traits>

namespace devmat::detail {

/// How DmmaTileCopy::load copies a k tile.
enum class DmmaCopy {
  bounded,  // any tile: chunks outside [.., x_lim) x [.., k_end) are zero-filled
  inside,   // a whole k tile of a block inside the operand: no bounds at all
  clamped,  // a whole k tile of an edge block: [x][k] rows past x_lim read the last one inside,
            // [k][x] chunks past it copy no bytes
};

/// The copies of one operand's BK-deep tiles into shared memory, for one thread. The tile is
/// (OUTER, INNER) with INNER contiguous in global and shared memory (row stride kStride in
/// shared memory); kKInner: k runs along INNER (the [x][k] layout), else along OUTER ([k][x]).
/// Needs 16-byte copies (op.vec; run_gemm pads operands whose rows break them). A thread moves
/// chunks of two doubles that share their INNER offset and sit kRowsPerPass rows apart, so one
/// pointer and one row step serve every pass of every k tile.
/// Along x (m for A, n for B) nothing past x_lim needs to be zero: those rows of op(A) and
/// columns of op(B) only reach outputs past C's edge, which are never stored. So an edge
/// block's whole k tiles read, for rows past x_lim ([x][k]), the last row inside (DmmaCopy::
/// clamped: a bound and a pointer select a pass), and copy no bytes for chunks past it ([k][x]:
/// fixed for the thread; read as the last chunk inside, the many lanes of a warp past the edge
/// copied one chunk each, and an H100's edge blocks of 1024x1000x1024 ran 9% longer than the
/// others, with 93.7k excess global sectors, 906 since); only a ragged k tile zero-fills
/// (bounded). Those
/// bounds are worked out where they are copied, from the kernel's parameters: the k8 tile runs
/// at 255 registers.
template <bool kKInner, int OUTER, int INNER, int kStride, int kThreads, int BK>
struct DmmaTileCopy {
  static constexpr int kPerRow = INNER / 2, kRowsPerPass = kThreads / kPerRow, kPasses = OUTER / kRowsPerPass;
  static_assert(INNER % 2 == 0 && kThreads % kPerRow == 0 && OUTER % kRowsPerPass == 0,
                "tile does not split into equal passes of 16-byte chunks");

  const GemmOperand<double>& op;  // a kernel parameter
  const double* first;            // this thread's first chunk in k tile 0, x clamped (above)
  int smem_offset;                // the first chunk in a stage
  // [x][k]: the last pass whose row is inside (0 when none is: `first` is then the last row
  // inside); [k][x]: the bytes of the chunk inside (16; 8 for x_lim - 1 at an even x; 0 past
  // x_lim, `first` then the last chunk inside: a valid address, nothing read).
  int x_room;

  // This thread's chunk in a pass: (outer, inner) offsets in the tile.
  __device__ __forceinline__ static int outer_of(int tid) { return tid / kPerRow; }
  __device__ __forceinline__ static int inner_of(int tid) { return (tid % kPerRow) * 2; }

  __device__ __forceinline__ DmmaTileCopy(const GemmOperand<double>& op_, int x0, int x_lim, int k_begin, int tid)
      : op(op_) {
    const int o = outer_of(tid), i = inner_of(tid);
    smem_offset = o * kStride + i;
    long long at;
    if constexpr (kKInner) {  // (o, i) = (x, k): rows past x_lim read row x_lim - 1
      x_room = x0 + o < x_lim ? (x_lim - 1 - x0 - o) / kRowsPerPass : 0;
      at = static_cast<long long>(::min(x0 + o, x_lim - 1)) * op.ld + k_begin + i;
    } else {  // (o, i) = (k, x): chunks past x_lim copy no bytes (x0 and i are even)
      const int x = ::min(x0 + i, (x_lim - 1) & ~1);
      x_room = 8 * ::max(0, ::min(2, x_lim - x0 - i));
      at = static_cast<long long>(k_begin + o) * op.ld + x;
    }
    first = op.ptr + at;
  }

  /// Issues passes [first_pass, last_pass) of k tile `k_tile` into the stage at `stage`
  /// (constants where the caller's loops unroll, so the pass loop folds to those passes), as
  /// kHow says; the caller knows which applies to the whole block. Whole tiles step a pointer
  /// from pass to pass (~3 instructions a copy inside, ~6 clamped; the bounded copies cost
  /// ~25 each in the k8 tile's SASS). (x0, x_lim) and [k_begin, k_end) bound the tile.
  template <DmmaCopy kHow>
  __device__ __forceinline__ void load(double* stage, int k_tile, int first_pass, int last_pass, int x0, int x_lim,
                                       int k_begin, int k_end) const {
    // The tile's source, and the pass stride: whole k tiles and rows of the operand.
    const long long tile_step = kKInner ? static_cast<long long>(BK) : static_cast<long long>(BK) * op.ld;
    const long long pass_step = static_cast<long long>(kRowsPerPass) * op.ld;
    const double* src = first + static_cast<long long>(k_tile) * tile_step;
    if constexpr (kHow != DmmaCopy::bounded) {
      constexpr bool kClampRows = kHow == DmmaCopy::clamped && kKInner;
      const double* from = src + (kClampRows ? ::min(first_pass, x_room) : first_pass) * pass_step;
      const int bytes = kHow == DmmaCopy::clamped && !kKInner ? x_room : 16;
#pragma unroll
      for (int pass = 0; pass < kPasses; ++pass) {
        if (pass < first_pass || pass >= last_pass) continue;
        cp_async<16>(stage + smem_offset + pass * kRowsPerPass * kStride, from, bytes);
        if (!kClampRows || pass < x_room) from += pass_step;
      }
      return;
    }
    const int tid = static_cast<int>(threadIdx.x);
    const int o = outer_of(tid), i = inner_of(tid);
    const int k0 = k_begin + k_tile * BK + (kKInner ? i : o);  // k of this thread's first chunk
    // Elements of a chunk in range: [x][k] along k (the same for every pass), [k][x] along x.
    const int count = kKInner ? ::max(0, ::min(2, k_end - k0)) : ::max(0, ::min(2, x_lim - (x0 + i)));
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass) {
      if (pass < first_pass || pass >= last_pass) continue;
      const bool in = kKInner ? x0 + o + pass * kRowsPerPass < x_lim : k0 + pass * kRowsPerPass < k_end;
      const int n = in ? count : 0;
      cp_async<16>(stage + smem_offset + pass * kRowsPerPass * kStride, n > 0 ? src + pass * pass_step : op.ptr,
                   8 * n);
    }
  }
};

/// A pipelined DMMA configuration: MmaTile's shapes (double only), run by gemm_dmma_kernel.
/// CLUSTER_SUM: the k slices of one output tile (gridDim.z, at most kMaxClusterSlices) are one
/// thread-block cluster, and gemm_cluster_sum adds them through distributed shared memory in
/// slice order (no workspace, no finalize kernel); the partial tile is staged in the pipeline's
/// shared memory, rows kSumStride apart (BN + 4 doubles: 16-byte pairs, and the two halves of a
/// warp's rows land 8 banks apart).
template <class BlockShape, class WarpLayout, class Instr, int STAGES, int MIN_BLOCKS, bool CLUSTER_SUM = false>
struct DmmaTile : MmaTile<double, BlockShape, WarpLayout, Instr, STAGES, MIN_BLOCKS> {
  using Base = MmaTile<double, BlockShape, WarpLayout, Instr, STAGES, MIN_BLOCKS>;
  static constexpr int kKSteps = Base::kBK / Base::kMmaK;  // MMA k-steps per k tile
  static_assert(kKSteps >= 2 && kKSteps % 2 == 0,
                "the pipeline needs an even number (>= 2) of k-steps per tile: two fragment buffers, "
                "and the barrier before the last k-step");
  static_assert(STAGES >= 3, "the pipeline needs three stages or more");
  static constexpr bool kClusterSum = CLUSTER_SUM;
  static constexpr int kMaxClusterSlices = 8;  // the portable cluster size
  static constexpr int kSumStride = Base::kBN + 4;
  static constexpr int kSumBytes = CLUSTER_SUM ? Base::kBM * kSumStride * 8 : 0;
  static constexpr int kSmemBytes = Base::kSmemBytes > kSumBytes ? Base::kSmemBytes : kSumBytes;
};

/// kAK / kBK: A / B is k-contiguous in global memory (op(A) = A, op(B) = B^T), and so is its
/// shared tile ([x][k]); otherwise the shared tile is [k][x].
template <class Cfg, bool kAK, bool kBK>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks) gemm_dmma_kernel(GemmArgs<double> p) {
  using Mma = typename Cfg::Mma;
  constexpr int BM = Cfg::kBM, BN = Cfg::kBN, BK = Cfg::kBK, kStages = Cfg::kStages, kThreads = Cfg::kThreads;
  constexpr int MI = Cfg::kMI, NI = Cfg::kNI, kKSteps = Cfg::kKSteps;
  constexpr int kMmaM = Cfg::kMmaM, kMmaK = Cfg::kMmaK;

  DEVMAT_DYNAMIC_SHARED(unsigned char, gemm_smem);
  double* a_smem = reinterpret_cast<double*>(gemm_smem);  // (STAGES, BM, BK+pad) or (STAGES, BK, BM+pad)
  double* b_smem = a_smem + kStages * Cfg::kStageA;      // (STAGES, BN, BK+pad) or (STAGES, BK, BN+pad)
  const GemmTileRange tr = gemm_tile_range<BM, BN, BK>(p);
  const int m0 = tr.m0, n0 = tr.n0, k_end = tr.k_end, k_tiles = tr.k_tiles;

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const int wm0 = (warp / Cfg::kWarpsN) * Cfg::kWarpTileM;
  const int wn0 = (warp % Cfg::kWarpsN) * Cfg::kWarpTileN;

  using CopyA = std::conditional_t<kAK, DmmaTileCopy<true, BM, BK, Cfg::kStrideXK, kThreads, BK>,
                                   DmmaTileCopy<false, BK, BM, Cfg::kStrideAK, kThreads, BK>>;
  using CopyB = std::conditional_t<kBK, DmmaTileCopy<true, BN, BK, Cfg::kStrideXK, kThreads, BK>,
                                   DmmaTileCopy<false, BK, BN, Cfg::kStrideBK, kThreads, BK>>;
  const CopyA copy_a(p.a, m0, p.m, tr.k_begin, tid);
  const CopyB copy_b(p.b, n0, p.n, tr.k_begin, tid);
  // The copies of one k tile are spread over the first kKSteps - 1 k-steps of the tile being
  // computed (all issued before its barrier, which follows the second-to-last): group `s`
  // issues its share of the passes.
  constexpr int kGroups = kKSteps - 1;
  // Passes [first, last) of k tile `k_tile` of both operands into `stage`, copied as `how`
  // (a DmmaCopy constant) says.
  auto load_passes = [&](auto how, int stage, int k_tile, int first_a, int last_a, int first_b, int last_b) {
    constexpr DmmaCopy kHow = decltype(how)::value;
    copy_a.template load<kHow>(a_smem + stage * Cfg::kStageA, k_tile, first_a, last_a, m0, p.m, tr.k_begin, k_end);
    copy_b.template load<kHow>(b_smem + stage * Cfg::kStageB, k_tile, first_b, last_b, n0, p.n, tr.k_begin, k_end);
  };
  auto load_group = [&](auto how, int s, int stage, int k_tile) {
    load_passes(how, stage, k_tile, CopyA::kPasses * s / kGroups, CopyA::kPasses * (s + 1) / kGroups,
                CopyB::kPasses * s / kGroups, CopyB::kPasses * (s + 1) / kGroups);
  };
  using Bounded = std::integral_constant<DmmaCopy, DmmaCopy::bounded>;
  auto load_tile = [&](int stage, int k_tile) {
    load_passes(Bounded{}, stage, k_tile, 0, CopyA::kPasses, 0, CopyB::kPasses);
  };

  // Shared-memory offsets of op(A)(m, k) and op(B)(k, n) inside one stage.
  auto a_at = [](int m, int k) { return kAK ? m * Cfg::kStrideXK + k : k * Cfg::kStrideAK + m; };
  auto b_at = [](int k, int n) { return kBK ? n * Cfg::kStrideXK + k : k * Cfg::kStrideBK + n; };

  typename Mma::FragA a_frag[2][MI];  // [buffer][i]
  typename Mma::FragB b_frag[2][NI];
  // Fragments of k-step kb of the tile in `stage` into buffer `buf` (layouts: Dmma).
  auto load_frags = [&](int buf, int stage, int kb) {
    const double* a_tile = a_smem + stage * Cfg::kStageA;
    const double* b_tile = b_smem + stage * Cfg::kStageB;
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int v1 = 0; v1 < kMmaK / 4; ++v1)
#pragma unroll
        for (int v0 = 0; v0 < kMmaM / 8; ++v0)
          a_frag[buf][i].v[v0 + (kMmaM / 8) * v1] =
              a_tile[a_at(wm0 + i * kMmaM + g + 8 * v0, kb * kMmaK + 4 * v1 + t)];
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int v1 = 0; v1 < kMmaK / 4; ++v1)
        b_frag[buf][j].v[v1] = b_tile[b_at(kb * kMmaK + 4 * v1 + t, wn0 + j * 8 + g)];
  };

  double acc[MI][NI][Mma::kC];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int c = 0; c < Mma::kC; ++c) acc[i][j][c] = 0.0;

  // The MMAs of one k-step from fragment buffer `buf`: consecutive ones write different
  // accumulators (n inside m, serpentine so that one B fragment feeds two MMAs in a row).
  auto mma_step = [&](int buf) {
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int jj = 0; jj < NI; ++jj) {
        const int j = i % 2 ? NI - 1 - jj : jj;
        Mma::run(acc[i][j], a_frag[buf][i], b_frag[buf][j], 0, false);
      }
  };

  // Prologue: tiles 0 .. STAGES-2 in flight (one commit group per tile, empty ones included, so
  // that the wait counts below are exact), tile 0 landed for every thread, its first fragments.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) load_tile(s, s);
    cp_async_commit();
  }
  cp_async_wait<kStages - 2>();
  __syncthreads();
  if (k_tiles > 0) load_frags(0, 0, 0);

  // One k tile: its MMAs, and tile k_tile + STAGES - 1's copies into write_stage, the stage read
  // in the previous iteration, whose every fragment load was issued before that iteration's
  // barrier. `how` (DmmaCopy): how that tile is copied; unless bounded, it is whole.
  int read_stage = 0, write_stage = kStages - 1;
  auto k_iteration = [&](auto how, int k_tile) {
    constexpr bool kWhole = decltype(how)::value != DmmaCopy::bounded;
    const bool load_next = kWhole || k_tile + kStages - 1 < k_tiles;
#pragma unroll
    for (int kb = 0; kb < kKSteps; ++kb) {
      const int cur = kb % 2, nxt = 1 - cur;  // compile-time after unrolling
      // The next k-step's fragments: this tile's, or (last k-step) the next tile's first,
      // from the stage the barrier below has made ready.
      if (kb + 1 < kKSteps) load_frags(nxt, read_stage, kb + 1);
      else if (kWhole || k_tile + 1 < k_tiles) load_frags(nxt, read_stage, 0);
      mma_step(cur);
      if (kb < kGroups && load_next) load_group(how, kb, write_stage, k_tile + kStages - 1);
      if (kb == kKSteps - 2) {
        // Groups committed: (STAGES-1) + k_tile + 1; allowing STAGES-2 in flight means tile
        // k_tile + 1 has landed for this thread, and the barrier for every thread. It also
        // orders every read of this tile's stage before the next iteration's copies into it.
        cp_async_commit();
        cp_async_wait<kStages - 2>();
        __syncthreads();
        read_stage = read_stage + 1 == kStages ? 0 : read_stage + 1;
        write_stage = write_stage + 1 == kStages ? 0 : write_stage + 1;
      }
    }
  };
  // Separate loops, so that the bounds of ragged tiles take no registers in the first two:
  // while the tile being copied is whole (a block inside the product, or an edge block), then
  // the rest (the slice's last tiles, whose copies are bounded).
  const int whole_end = ::max(0, (k_end - tr.k_begin) / BK - (kStages - 1));
  int k_tile = 0;
  if (m0 + BM <= p.m && n0 + BN <= p.n)
    for (; k_tile < whole_end; ++k_tile) k_iteration(std::integral_constant<DmmaCopy, DmmaCopy::inside>{}, k_tile);
  else
    for (; k_tile < whole_end; ++k_tile) k_iteration(std::integral_constant<DmmaCopy, DmmaCopy::clamped>{}, k_tile);
  for (; k_tile < k_tiles; ++k_tile) k_iteration(Bounded{}, k_tile);
  cp_async_wait<0>();

  // Epilogue: c[2h + j] = C(g + 8h, 2t + j): pairs of consecutive columns (16 bytes).
  if constexpr (Cfg::kClusterSum) {
    // The partial tile goes over the stages, once every warp has read its last fragments;
    // gemm_cluster_sum's first barrier makes it visible to the cluster.
    __syncthreads();
    double* sum_smem = a_smem;
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NI; ++j)
#pragma unroll
        for (int h = 0; h < kMmaM / 8; ++h)
          *reinterpret_cast<Pack<double, 2>*>(sum_smem + (wm0 + i * kMmaM + g + 8 * h) * Cfg::kSumStride + wn0 +
                                              j * 8 + 2 * t) = Pack<double, 2>{{acc[i][j][2 * h], acc[i][j][2 * h + 1]}};
    gemm_cluster_sum<double, BM, BN, kThreads, Cfg::kSumStride>(p, sum_smem, m0, n0, tid);
    return;
  }
  double* out = p.c + static_cast<long long>(blockIdx.z) * p.split_stride;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int h = 0; h < kMmaM / 8; ++h) {
        const double v[2] = {acc[i][j][2 * h], acc[i][j][2 * h + 1]};
        gemm_store_results<double, 2>(p, out, m0 + wm0 + i * kMmaM + g + 8 * h, n0 + wn0 + j * 8 + 2 * t, v);
      }
}

// ------------------------------------------------------------------ configurations
// The pipelined tiles compiled into the registry (dispatch/gemm_registry.cuh): DmmaTile<block
// tile, warps, instruction, stages, min blocks per SM>, commented with the warp tile. Both
// fragment buffers and the sums stay in registers: with a 64x32 warp tile that leaves room for
// m16n8k4 fragments (m16n8k8 spills a few registers there). One buffer instead (each k-step's
// fragments loaded just before its MMAs, no spills at 206-211 registers) was measured on an H100
// in session 30 at cuBLAS's own shape (128x64x16, four warps of 64x32, m16n8k8, two CTAs an SM)
// and at 128x128x16 with eight: 0.82 and 0.81 of cuBLAS at 4096^3 against this pipeline's 0.94
// (ncu: 0.33 eligible warps a scheduler against 0.65), and was dropped. Fragments read as
// 16-byte pairs (session 31: the k slots mapped so that a lane's k lie side by side, A times B
// computed as C^T = B^T A^T so that each pair is two registers of one DMMA operand, unpadded
// rows swizzled for conflict-free LDS.128; half the LDS) ran slower in every trial shape on an
// H100: 128x128x32 k8 0.905 of cuBLAS at 4096^3 against this tile's 0.955, 64x64x32 k8 0.790
// against 64x64x32 k16's 0.846; ncu at 4096^3: 727 M instructions against 752 M, the FP64 /
// tensor pipe busy 75.6% of cycles against 81.2%, 0.31 eligible warps against 0.35. The LDS are
// not what keeps the pipe waiting: the k8 tile's main loop (SASS, 709 instructions a k tile)
// spends ~440 on its 16 cp.async (64-bit address and bound arithmetic, ptxas rematerialising
// it at 255 registers) beside 64 DMMA and 96 LDS.64; warps held together by the barrier
// likely reach that code about together (not measured). Session 32 took the bounds out of the
// whole k tiles' copies (DmmaTileCopy, DmmaCopy): 360 instructions a k tile, 16 of them LDGSTS
// and about 50 more their addresses; on an H200 the k8 tile went from 0.934 to 1.037-1.046 of
// cuBLAS at 4096^3, and every pipelined tile gained 7-17% there (the cost model's rates). TMA
// would take the rest of the copy instructions off the warps that issue DMMA.
using DmmaPipe128x128k4 = DmmaTile<Shape<128, 128, 16>, Warps<2, 4>, Shape<16, 8, 4>, 4, 1>;    // 64x32, 164 KB
using DmmaPipe128x128k4w16 = DmmaTile<Shape<128, 128, 16>, Warps<4, 4>, Shape<16, 8, 4>, 4, 1>;  // 512 threads, 32x32
using DmmaPipe128x128x32k4w16 = DmmaTile<Shape<128, 128, 32>, Warps<4, 4>, Shape<16, 8, 4>, 3, 1>;  // 512 threads, 32x32
using DmmaPipe128x128x32k8 = DmmaTile<Shape<128, 128, 32>, Warps<2, 4>, Shape<16, 8, 8>, 3, 1>;  // 64x32, spills ~12 B
using DmmaPipe128x64k4w8 = DmmaTile<Shape<128, 64, 16>, Warps<4, 2>, Shape<16, 8, 4>, 3, 2>;     // 32x32, 2 CTAs x 8
using DmmaPipe64x64k8 = DmmaTile<Shape<64, 64, 16>, Warps<2, 2>, Shape<16, 8, 8>, 4, 2>;         // 32x32, 2 CTAs/SM
using DmmaPipe64x64x32k16 = DmmaTile<Shape<64, 64, 32>, Warps<2, 2>, Shape<16, 8, 16>, 3, 2>;    // 32x32, sm_90's k16
// The two 16-warp 128x128 tiles with their k slices added in a cluster (sm_90; issue 13's
// 1000^3-1024^3, 64 tiles on 132 SMs, and 8192^3's last round of 4 tiles: tail_split).
using DmmaPipe128x128k4w16Cl = DmmaTile<Shape<128, 128, 16>, Warps<4, 4>, Shape<16, 8, 4>, 4, 1, true>;
using DmmaPipe128x128x32k4w16Cl = DmmaTile<Shape<128, 128, 32>, Warps<4, 4>, Shape<16, 8, 4>, 3, 1, true>;

}  // namespace devmat::detail

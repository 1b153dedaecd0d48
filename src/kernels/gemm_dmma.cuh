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
//  - each thread's copy addresses and x bounds are worked out once (DmmaTileCopy); a k tile
//    adds a fixed step, and the copies are spread over the tile's k-steps, between MMAs.
// Shared-memory layouts, fragment layouts and padding are MmaTile's (conflict-free LDS.64 in
// both layouts), or for the wide tiles (DmmaTile's WIDE) unpadded swizzled rows read as 16-byte
// pairs (conflict-free LDS.128, half the loads). Device code only.
#pragma once

#include "gemm_common.cuh"
#include "gemm_mma.cuh"

#include <type_traits>

namespace devmat::detail {

/// Where the 16-byte pair `u` (two doubles) of row `r` of a shared tile sits in that row: as
/// it is (the padded tiles, whose reads are one double a lane).
struct DmmaNoSwizzle {
  __device__ static constexpr int xk(int, int u) { return u; }
  __device__ static constexpr int kx(int, int u) { return u; }
};

/// The period in passes of a swizzle on rows `rows_per_pass` apart: pass p's chunk sits as pass
/// p % period's, moved by whole rows (0: no period a copy can use).
template <class Swizzle>
constexpr int dmma_swizzle_period(bool k_inner, int rows_per_pass) {
  if constexpr (std::is_same_v<Swizzle, DmmaNoSwizzle>) {
    return 1;
  } else {
    constexpr int kV = Swizzle::kV;
    if (k_inner) return rows_per_pass % 2 == 0 ? 1 : 2;
    if (rows_per_pass % kV != 0) return 0;
    const int q = (rows_per_pass / kV) % 4;
    return q == 0 ? 1 : (q == 2 ? 2 : 4);
  }
}

/// The same for the wide-load tiles (DmmaTile's WIDE): unpadded rows, pairs permuted inside
/// each 128-byte line so that a quarter warp's LDS.128 (lanes g in {2q, 2q+1}, t in 0..3) meets
/// eight different 16-byte bank groups. [x][k] rows (kV k of a lane's k-step contiguous, lanes t
/// kV / 2 pairs apart): odd rows flip the half or the pair parity; [k][x] rows (a lane's pair
/// sits at g of its 16 rows or columns, lanes t on rows kV apart): row r / kV's low two bits
/// move it by two pairs each.
template <int V>
struct DmmaWideSwizzle {
  static constexpr int kV = V;
  static_assert(kV == 2 || kV == 4, "wide fragment loads: m16n8k8 or m16n8k16");
  __device__ static constexpr int xk(int r, int u) { return u ^ ((r & 1) * (kV == 2 ? 4 : 1)); }
  __device__ static constexpr int kx(int r, int u) { return u ^ (((r / kV) & 3) * 2); }
};

/// The copies of one operand's BK-deep tiles into shared memory, for one thread. The tile is
/// (OUTER, INNER) with INNER contiguous in global and shared memory (row stride kStride in
/// shared memory); kKInner: k runs along INNER (the [x][k] layout), else along OUTER ([k][x]).
/// Needs 16-byte copies (op.vec; run_gemm pads operands whose rows break them). A thread moves
/// chunks of two doubles that share their INNER offset and sit kRowsPerPass rows apart, so one
/// pointer, one row step and one bound per pass serve every k tile; elements outside
/// [.., x_lim) x [.., k_end) are zero-filled.
template <bool kKInner, int OUTER, int INNER, int kStride, int kThreads, int BK, class Swizzle = DmmaNoSwizzle>
struct DmmaTileCopy {
  static constexpr int kPerRow = INNER / 2, kRowsPerPass = kThreads / kPerRow, kPasses = OUTER / kRowsPerPass;
  static_assert(INNER % 2 == 0 && kThreads % kPerRow == 0 && OUTER % kRowsPerPass == 0,
                "tile does not split into equal passes of 16-byte chunks");
  static_assert(kPasses <= 32, "pass bounds are kept in a 32-bit mask");

  const double* base;   // the operand (the source of zero-byte copies)
  long long ld;
  const double* first;  // this thread's first chunk in k tile 0
  // Swizzled tiles: the offsets of passes 0 .. kPeriod-1 (pass p's is pass p % kPeriod's, whole
  // rows on), so that a few registers serve every pass; without a period, the row and pair.
  static constexpr int kPeriod = dmma_swizzle_period<Swizzle>(kKInner, kRowsPerPass);
  int smem_offset;      // the first chunk in a stage (rows as they are)
  int smem_row, smem_pair;
  int period_offset[kPeriod > 0 ? kPeriod : 1];
  int k_first;          // k of the first chunk's (first) element in k tile 0
  int x_count;          // [k][x]: elements of the chunk below x_lim (0..2)
  unsigned x_mask;      // [x][k]: bit `pass` set when the pass's row is below x_lim

  __device__ __forceinline__ DmmaTileCopy(const GemmOperand<double>& op, int x0, int x_lim, int k_begin, int tid)
      : base(op.ptr), ld(op.ld) {
    const int o = tid / kPerRow, i = (tid % kPerRow) * 2;
    smem_offset = o * kStride + i;
    smem_row = o, smem_pair = i / 2;
    if constexpr (!std::is_same_v<Swizzle, DmmaNoSwizzle>) {
#pragma unroll
      for (int c = 0; c < kPeriod; ++c) period_offset[c] = swizzled_offset(c);
    }
    x_mask = 0, x_count = 0;
    if constexpr (kKInner) {  // (o, i) = (x, k)
      k_first = k_begin + i;
      const bool in = x0 + o < x_lim;
      first = in ? op.ptr + (static_cast<long long>(x0 + o) * op.ld + k_first) : op.ptr;
#pragma unroll
      for (int pass = 0; pass < kPasses; ++pass)
        if (x0 + o + pass * kRowsPerPass < x_lim) x_mask |= 1u << pass;
    } else {  // (o, i) = (k, x)
      k_first = k_begin + o;
      x_count = ::max(0, ::min(2, x_lim - (x0 + i)));
      first = x_count > 0 ? op.ptr + (static_cast<long long>(k_first) * op.ld + x0 + i) : op.ptr;
    }
  }

  __device__ __forceinline__ int swizzled_offset(int pass) const {
    const int r = smem_row + pass * kRowsPerPass;
    return r * kStride + 2 * (kKInner ? Swizzle::xk(r, smem_pair) : Swizzle::kx(r, smem_pair));
  }

  /// The offset in a stage of this thread's chunk of pass `pass`.
  __device__ __forceinline__ int stage_offset(int pass) const {
    if constexpr (std::is_same_v<Swizzle, DmmaNoSwizzle>)
      return smem_offset + pass * kRowsPerPass * kStride;
    else if constexpr (kPeriod > 0)
      return period_offset[pass % kPeriod] + (pass / kPeriod) * kPeriod * kRowsPerPass * kStride;
    else
      return swizzled_offset(pass);
  }

  /// Issues passes [first_pass, last_pass) of k tile `k_tile` into the stage at `stage`
  /// (constants where the caller's loops unroll, so the pass loop folds to those passes).
  __device__ __forceinline__ void load(double* stage, int k_tile, int k_end, int first_pass, int last_pass) const {
    const int k0 = k_first + k_tile * BK;  // k of this thread's first chunk
    // The tile's source, and the pass stride: whole k tiles and rows of the operand.
    const long long tile_step = kKInner ? static_cast<long long>(BK) : static_cast<long long>(BK) * ld;
    const long long pass_step = static_cast<long long>(kRowsPerPass) * ld;
    const double* src = first + static_cast<long long>(k_tile) * tile_step;
    const int k_count = kKInner ? ::max(0, ::min(2, k_end - k0)) : 0;  // [x][k]: the same for every pass
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass) {
      if (pass < first_pass || pass >= last_pass) continue;
      int n;  // elements of this chunk in range
      if constexpr (kKInner) n = (x_mask >> pass) & 1u ? k_count : 0;
      else n = k0 + pass * kRowsPerPass < k_end ? x_count : 0;
      cp_async<16>(stage + stage_offset(pass), n > 0 ? src + pass * pass_step : base, 8 * n);
    }
  }
};

/// A pipelined DMMA configuration: MmaTile's shapes (double only), run by gemm_dmma_kernel.
/// CLUSTER_SUM: the k slices of one output tile (gridDim.z, at most kMaxClusterSlices) are one
/// thread-block cluster, and gemm_cluster_sum adds them through distributed shared memory in
/// slice order (no workspace, no finalize kernel); the partial tile is staged in the pipeline's
/// shared memory, rows kSumStride apart (BN + 4 doubles: 16-byte pairs, and the two halves of a
/// warp's rows land 8 banks apart).
/// WIDE (m16n8k8 / k16): fragments read as 16-byte pairs where a pair is two consecutive
/// registers of the MMA's operand (DmmaLayout says which operand tiles those are).
template <class BlockShape, class WarpLayout, class Instr, int STAGES, int MIN_BLOCKS, bool CLUSTER_SUM = false,
          bool WIDE = false>
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

  static constexpr bool kWide = WIDE;
  static constexpr int kV = Base::kMmaK / 4;  // k of a lane in one k-step
  static_assert(!WIDE || (Base::kMmaM == 16 && (kV == 2 || kV == 4)), "wide fragment loads: m16n8k8 or m16n8k16");
  // Stages hold either layout of either operand, padded (unpadded swizzled rows take less).
  static constexpr int kPipeBytes = Base::kSmemBytes;
  static constexpr int kSmemBytes = kPipeBytes > kSumBytes ? kPipeBytes : kSumBytes;
};

/// How a tile configuration meets one operand layout (kAK / kBK as gemm_dmma_kernel's). The
/// padded tiles: the MMA's A from A's tile, its B from B's, one double a lane, MmaTile's strides.
/// The wide tiles read a 16-byte pair where it is two consecutive registers of the MMA operand:
/// the MMA's A fragment is (row g, g+8) x (k slot t, t+4) in that order, so a pair is rows
/// g and g+8 at one k, side by side only in a [k][x] tile, under the m map (slot row g + 8h is
/// row 2g + h of the fragment's 16); its B fragment is k slots t, t+4 (t + 4v, v < kV) of one
/// column, side by side in an [x][k] tile under the k map (slot k 4v + t of a k-step is its k
/// kV*t + v, for both operands, so the product is the same sum). Where A is [x][k] and B [k][x]
/// (A row-major times B row-major, the common product) the kernel computes C's tile transposed
/// (kSwap: the MMA's A from B's tile, its B from A's), which makes both operands pairs; the other
/// layouts read pairs from the operand that allows it and single doubles (padded rows, k map)
/// from the other. Pair tiles are unpadded rows swizzled by DmmaWideSwizzle.
template <class Cfg, bool kAK, bool kBK>
struct DmmaLayout {
  // [x][k] A and [x][k] B (A times B^T): the MMA's B reads pairs, and ptxas merges the single
  // reads of A's adjacent k into LDS.128 too, registers the MMA cannot take as they land
  // (spills: 140 bytes at 128x128x32): such a product runs the padded tile.
  static constexpr bool kWide = Cfg::kWide && !(kAK && kBK);
  static constexpr bool kSwap = kWide && kAK && !kBK;
  static constexpr bool kPairsA = kWide && (kSwap || !kAK);  // A's tile read as pairs
  static constexpr bool kPairsB = kWide && (kSwap || kBK);
  static constexpr int kStrideA =
      kAK ? (kPairsA ? Cfg::kBK : Cfg::kStrideXK) : (kPairsA ? Cfg::kBM : Cfg::kStrideAK);
  static constexpr int kStrideB =
      kBK ? (kPairsB ? Cfg::kBK : Cfg::kStrideXK) : (kPairsB ? Cfg::kBN : Cfg::kStrideBK);
  using SwizzleA = std::conditional_t<kPairsA, DmmaWideSwizzle<kWide ? Cfg::kV : 2>, DmmaNoSwizzle>;
  using SwizzleB = std::conditional_t<kPairsB, DmmaWideSwizzle<kWide ? Cfg::kV : 2>, DmmaNoSwizzle>;
  // The MMA's fragments of a warp: its A's (16 rows each) and B's (8 columns each).
  static constexpr int kFragsA = (kSwap ? Cfg::kWarpTileN : Cfg::kWarpTileM) / 16;
  static constexpr int kFragsB = (kSwap ? Cfg::kWarpTileM : Cfg::kWarpTileN) / 8;
};

/// The fragments of k-step kb of a wide tile (DmmaLayout): the MMA's A from `a_src` (A's tile,
/// or B's under kSwap; its rows from x0), its B from `b_src`. Lane (g, t)'s k of the step are
/// kV*t .. kV*t + kV - 1. Every address is a lane constant plus a compile-time offset (kb is one
/// where the kernel unrolls), the swizzles worked out for the lane's rows: [k][x] pairs (rows
/// kb*K + kV*t + v) at corner/2 + g move by 2t: corner/2 + (g ^ 2t); [x][k] pairs (row parity
/// g's, s = g & 1) 4kb + t (kV 2) flipped by 4 are 4kb + t + 4s on even kb and - 4s on odd;
/// 8kb + 2t + pp (kV 4) flipped by 1 are 8kb + 2t + (pp ^ s).
template <class Cfg, class Lay, bool kAxk, bool kBxk, class FragA, class FragB>
__device__ __forceinline__ void load_wide_frags(FragA (&a)[Lay::kFragsA], FragB (&b)[Lay::kFragsB],
                                                const double* a_src, int a_stride, int a_x0, bool a_pairs,
                                                const double* b_src, int b_stride, int b_x0, bool b_pairs, int kb,
                                                int g, int t) {
  constexpr int kV = Cfg::kV, K = Cfg::kMmaK;
  const int k0 = kb * K + kV * t;  // the lane's first k of the step
  const auto pair_at = [](const double* p) { return *reinterpret_cast<const Pack<double, 2>*>(p); };
  // MMA A: a[i].v[h + 2v] = (slot row g + 8h, k k0 + v).
#pragma unroll
  for (int i = 0; i < Lay::kFragsA; ++i) {
    if (a_pairs) {  // [k][x], m map: rows 2g, 2g + 1 side by side
#pragma unroll
      for (int v = 0; v < kV; ++v) {
        const Pack<double, 2> x = pair_at(a_src + (kb * K + v) * a_stride + a_x0 + 16 * i + 2 * (g ^ (2 * t)) +
                                          kV * t * a_stride);
        a[i].v[2 * v] = x.v[0];
        a[i].v[2 * v + 1] = x.v[1];
      }
    } else {
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int v = 0; v < kV; ++v)
          a[i].v[h + 2 * v] = kAxk ? a_src[(a_x0 + 16 * i + g + 8 * h) * a_stride + k0 + v]
                                   : a_src[(k0 + v) * a_stride + a_x0 + 16 * i + g + 8 * h];
    }
  }
  // MMA B: b[j].v[v] = (k k0 + v, column g of fragment j).
  const int s = g & 1;
#pragma unroll
  for (int j = 0; j < Lay::kFragsB; ++j) {
    if (b_pairs) {  // [x][k]: the lane's k side by side
#pragma unroll
      for (int pp = 0; pp < kV / 2; ++pp) {
        const int pair = kV == 2 ? 4 * kb + t + ((kb & 1) ? -4 * s : 4 * s) : 8 * kb + 2 * t + (pp ? 1 - s : s);
        const Pack<double, 2> x = pair_at(b_src + (b_x0 + 8 * j + g) * b_stride + 2 * pair);
        b[j].v[2 * pp] = x.v[0];
        b[j].v[2 * pp + 1] = x.v[1];
      }
    } else {
#pragma unroll
      for (int v = 0; v < kV; ++v)
        b[j].v[v] = kBxk ? b_src[(b_x0 + 8 * j + g) * b_stride + k0 + v] : b_src[(k0 + v) * b_stride + b_x0 + 8 * j + g];
    }
  }
}

/// load_wide_frags from the tiles of A and B (the MMA's operands swapped under kSwap).
template <class Cfg, bool kAK, bool kBK, class FragA, class FragB, class Lay = DmmaLayout<Cfg, kAK, kBK>>
__device__ __forceinline__ void load_wide_layout(FragA (&a)[Lay::kFragsA], FragB (&b)[Lay::kFragsB],
                                                 const double* a_tile, const double* b_tile, int wm0, int wn0, int kb,
                                                 int g, int t) {
  if constexpr (Lay::kSwap)
    load_wide_frags<Cfg, Lay, kBK, kAK>(a, b, b_tile, Lay::kStrideB, wn0, Lay::kPairsB, a_tile, Lay::kStrideA, wm0,
                                        Lay::kPairsA, kb, g, t);
  else
    load_wide_frags<Cfg, Lay, kAK, kBK>(a, b, a_tile, Lay::kStrideA, wm0, Lay::kPairsA, b_tile, Lay::kStrideB, wn0,
                                        Lay::kPairsB, kb, g, t);
}

/// Where a wide tile's epilogue puts the accumulators of MMA fragment pair (i, j, h): two
/// consecutive columns of C's warp tile, (row, col) from its corner. Without the swap: c[2h],
/// c[2h + 1] at row 16i + g + 8h (2g + h under the m map) and column 8j + 2t. Under kSwap the
/// MMA computed C's tile transposed: c[2h' + e] is C(8j + 2t + e, 16i + 2g + h'), so a pair is
/// h' = 0, 1 of one e (the loop's h).
template <class Cfg, class Lay>
struct DmmaWideOut {
  struct Pair {
    int row, col;
    double v[2];
  };
  template <class Acc>
  __device__ static __forceinline__ Pair pair(const Acc& acc, int i, int j, int h, int g, int t) {
    Pair o;
    if constexpr (Lay::kSwap) {
      o.row = 8 * j + 2 * t + h;
      o.col = 16 * i + 2 * g;
      o.v[0] = acc[j][h];
      o.v[1] = acc[j][2 + h];
    } else {
      o.row = 16 * i + (Lay::kPairsA ? 2 * g + h : g + 8 * h);
      o.col = 8 * j + 2 * t;
      o.v[0] = acc[j][2 * h];
      o.v[1] = acc[j][2 * h + 1];
    }
    return o;
  }
};

/// kAK / kBK: A / B is k-contiguous in global memory (op(A) = A, op(B) = B^T), and so is its
/// shared tile ([x][k]); otherwise the shared tile is [k][x].
template <class Cfg, bool kAK, bool kBK>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks) gemm_dmma_kernel(GemmArgs<double> p) {
  using Mma = typename Cfg::Mma;
  constexpr int BM = Cfg::kBM, BN = Cfg::kBN, BK = Cfg::kBK, kStages = Cfg::kStages, kThreads = Cfg::kThreads;
  using Lay = DmmaLayout<Cfg, kAK, kBK>;
  constexpr int MI = Lay::kFragsA, NI = Lay::kFragsB, kKSteps = Cfg::kKSteps;  // the MMA's fragments a warp
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

  using CopyA = std::conditional_t<kAK, DmmaTileCopy<true, BM, BK, Lay::kStrideA, kThreads, BK, typename Lay::SwizzleA>,
                                   DmmaTileCopy<false, BK, BM, Lay::kStrideA, kThreads, BK, typename Lay::SwizzleA>>;
  using CopyB = std::conditional_t<kBK, DmmaTileCopy<true, BN, BK, Lay::kStrideB, kThreads, BK, typename Lay::SwizzleB>,
                                   DmmaTileCopy<false, BK, BN, Lay::kStrideB, kThreads, BK, typename Lay::SwizzleB>>;
  const CopyA copy_a(p.a, m0, p.m, tr.k_begin, tid);
  const CopyB copy_b(p.b, n0, p.n, tr.k_begin, tid);
  // The copies of one k tile are spread over the first kKSteps - 1 k-steps of the tile being
  // computed (all issued before its barrier, which follows the second-to-last): group `s`
  // issues its share of the passes.
  constexpr int kGroups = kKSteps - 1;
  auto load_group = [&](int s, int stage, int k_tile) {
    copy_a.load(a_smem + stage * Cfg::kStageA, k_tile, k_end, CopyA::kPasses * s / kGroups,
                CopyA::kPasses * (s + 1) / kGroups);
    copy_b.load(b_smem + stage * Cfg::kStageB, k_tile, k_end, CopyB::kPasses * s / kGroups,
                CopyB::kPasses * (s + 1) / kGroups);
  };
  auto load_tile = [&](int stage, int k_tile) {
    copy_a.load(a_smem + stage * Cfg::kStageA, k_tile, k_end, 0, CopyA::kPasses);
    copy_b.load(b_smem + stage * Cfg::kStageB, k_tile, k_end, 0, CopyB::kPasses);
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
    if constexpr (Lay::kWide) {
      load_wide_layout<Cfg, kAK, kBK>(a_frag[buf], b_frag[buf], a_tile, b_tile, wm0, wn0, kb, g, t);
    } else {
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
    }
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

  int read_stage = 0, write_stage = kStages - 1;
  for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
    // Tile k_tile + STAGES - 1 goes to write_stage, the stage read in the previous iteration,
    // whose every fragment load was issued before that iteration's barrier.
    const bool load_next = k_tile + kStages - 1 < k_tiles;
#pragma unroll
    for (int kb = 0; kb < kKSteps; ++kb) {
      const int cur = kb % 2, nxt = 1 - cur;  // compile-time after unrolling
      // The next k-step's fragments: this tile's, or (last k-step) the next tile's first,
      // from the stage the barrier below has made ready.
      if (kb + 1 < kKSteps) load_frags(nxt, read_stage, kb + 1);
      else if (k_tile + 1 < k_tiles) load_frags(nxt, read_stage, 0);
      mma_step(cur);
      if (kb < kGroups && load_next) load_group(kb, write_stage, k_tile + kStages - 1);
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
  }
  cp_async_wait<0>();

  // Epilogue: c[2h + e] = C(g + 8h, 2t + e) in slots: pairs of consecutive columns (16 bytes),
  // through the wide tiles' m and n maps (DmmaWideOut).
  using Out = DmmaWideOut<Cfg, Lay>;
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
        for (int h = 0; h < kMmaM / 8; ++h) {
          if constexpr (Lay::kWide) {
            const typename Out::Pair o = Out::pair(acc[i], i, j, h, g, t);
            *reinterpret_cast<Pack<double, 2>*>(sum_smem + (wm0 + o.row) * Cfg::kSumStride + wn0 + o.col) =
                Pack<double, 2>{{o.v[0], o.v[1]}};
          } else {
            *reinterpret_cast<Pack<double, 2>*>(sum_smem + (wm0 + i * kMmaM + g + 8 * h) * Cfg::kSumStride + wn0 +
                                                j * 8 + 2 * t) = Pack<double, 2>{{acc[i][j][2 * h], acc[i][j][2 * h + 1]}};
          }
        }
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
        if constexpr (Lay::kWide) {
          const typename Out::Pair o = Out::pair(acc[i], i, j, h, g, t);
          gemm_store_results<double, 2>(p, out, m0 + wm0 + o.row, n0 + wn0 + o.col, o.v);
        } else {
          const double v[2] = {acc[i][j][2 * h], acc[i][j][2 * h + 1]};
          gemm_store_results<double, 2>(p, out, m0 + wm0 + i * kMmaM + g + 8 * h, n0 + wn0 + j * 8 + 2 * t, v);
        }
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
// (ncu: 0.33 eligible warps a scheduler against 0.65), and was dropped.
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
// Wide fragment loads (DmmaTile's WIDE, DmmaLayout: LDS.128 pairs from swizzled unpadded rows,
// half the fragment loads), trials of session 31 beside the padded tiles they mirror. ptxas
// (sm_90, A times B): 128x128x32 k8 36 bytes of spills (the padded tile 16), 64x64x32 k16 16
// (44), 64x64x32 k8 none at 188 registers.
using DmmaPipe128x128x32k8Wide = DmmaTile<Shape<128, 128, 32>, Warps<2, 4>, Shape<16, 8, 8>, 3, 1, false, true>;
using DmmaPipe128x128x32k8WideCl = DmmaTile<Shape<128, 128, 32>, Warps<2, 4>, Shape<16, 8, 8>, 3, 1, true, true>;
using DmmaPipe64x64x32k16Wide = DmmaTile<Shape<64, 64, 32>, Warps<2, 2>, Shape<16, 8, 16>, 3, 2, false, true>;
using DmmaPipe64x64x32k8Wide = DmmaTile<Shape<64, 64, 32>, Warps<2, 2>, Shape<16, 8, 8>, 3, 2, false, true>;

}  // namespace devmat::detail

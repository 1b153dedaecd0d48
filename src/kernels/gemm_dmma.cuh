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
// both layouts), except with DmmaTile's kVec, where a k-contiguous A tile is stored with the
// two rows of each A fragment register pair side by side, so one LDS.128 fills a pair (see
// DmmaInterleavedCopy). Device code only.
#pragma once

#include "gemm_common.cuh"
#include "gemm_mma.cuh"

#include <cooperative_groups.h>

#include <type_traits>

namespace devmat::detail {

/// The copies of one operand's BK-deep tiles into shared memory, for one thread. The tile is
/// (OUTER, INNER) with INNER contiguous in global and shared memory (row stride kStride in
/// shared memory); kKInner: k runs along INNER (the [x][k] layout), else along OUTER ([k][x]).
/// Needs 16-byte copies (op.vec; run_gemm pads operands whose rows break them). A thread moves
/// chunks of two doubles that share their INNER offset and sit kRowsPerPass rows apart, so one
/// pointer, one row step and one bound per pass serve every k tile; elements outside
/// [.., x_lim) x [.., k_end) are zero-filled.
template <bool kKInner, int OUTER, int INNER, int kStride, int kThreads, int BK>
struct DmmaTileCopy {
  static constexpr int kPerRow = INNER / 2, kRowsPerPass = kThreads / kPerRow, kPasses = OUTER / kRowsPerPass;
  static_assert(INNER % 2 == 0 && kThreads % kPerRow == 0 && OUTER % kRowsPerPass == 0,
                "tile does not split into equal passes of 16-byte chunks");
  static_assert(kPasses <= 32, "pass bounds are kept in a 32-bit mask");

  const double* base;   // the operand (the source of zero-byte copies)
  long long ld;
  const double* first;  // this thread's first chunk in k tile 0
  int smem_offset;      // the first chunk in a stage
  int k_first;          // k of the first chunk's (first) element in k tile 0
  int x_count;          // [k][x]: elements of the chunk below x_lim (0..2)
  unsigned x_mask;      // [x][k]: bit `pass` set when the pass's row is below x_lim

  __device__ __forceinline__ DmmaTileCopy(const GemmOperand<double>& op, int x0, int x_lim, int k_begin, int tid)
      : base(op.ptr), ld(op.ld) {
    const int o = tid / kPerRow, i = (tid % kPerRow) * 2;
    smem_offset = o * kStride + i;
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
      gemm_cp_async<16>(stage + smem_offset + pass * kRowsPerPass * kStride, n > 0 ? src + pass * pass_step : base,
                        8 * n);
    }
  }
};

/// The vector-fragment layout of a k-contiguous A tile (DmmaTile's kVec): an (OUTER = BM, BK)
/// tile stored as BM/16 blocks of 16 rows, each block BK rows of 16 doubles (one per k), in
/// which row r of the block sits at 2 ((r % 8) ^ 2 (k % 4)) + r / 8. An A fragment register
/// pair (a[2 v1], a[2 v1 + 1]) is A(g, k), A(g + 8, k): 16 adjacent bytes, one LDS.128 into the
/// register pair the DMMA reads. The XOR spreads the four t (k = t + 4 v1) of a quarter warp
/// over the 8 16-byte bank groups; no padding, so the stage is BM BK doubles.
template <int BK>
__device__ __forceinline__ int dmma_interleaved_at(int row, int k) {
  return (row / 16) * (BK * 16) + k * 16 + 2 * ((row % 8) ^ (2 * (k % 4))) + (row / 8) % 2;
}

/// The copies of an (OUTER, BK) k-contiguous tile into dmma_interleaved_at's layout, for one
/// thread: 8-byte copies (the layout splits a 16-byte chunk of two k over two 16-double rows).
/// Thread tid moves chunks of row 16 b + tid % 16 (b a 16-row block), so that 16 lanes fill
/// one 128-byte row of a block with each copy; the passes step over chunks by kQ (the threads'
/// 16-lane groups) and over blocks, by compile-time offsets from one source pointer and one
/// shared-memory offset, as DmmaTileCopy. Elements outside [.., x_lim) x [.., k_end) are
/// zero-filled.
template <int OUTER, int BK, int kThreads>
struct DmmaInterleavedCopy {
  static constexpr int kChunks = BK / 2;  // 16-byte chunks of a row
  static constexpr int kQ = kThreads / 16;
  static_assert(OUTER % 16 == 0 && BK % 4 == 0 && kThreads % 32 == 0, "interleaved copies: 16-row blocks");
  static_assert(kChunks % kQ == 0 || kQ % kChunks == 0, "interleaved copies: whole passes");
  // A pass is (block step, chunk step): kJ chunk steps of kQ per block step of kBlockStep.
  static constexpr int kJ = kChunks > kQ ? kChunks / kQ : 1, kBlockStep = kQ > kChunks ? kQ / kChunks : 1;
  static constexpr int kPasses = kJ * (OUTER / 16) / kBlockStep;
  static_assert((OUTER / 16) % kBlockStep == 0 && kPasses * kThreads == OUTER * kChunks, "interleaved passes");
  static_assert(kPasses <= 32, "pass bounds are kept in a 32-bit mask");

  const double* base;  // the operand (the source of zero-byte copies)
  long long ld;
  const double* first;  // this thread's first chunk in k tile 0
  int k_first;          // its k
  int smem0, smem1;     // its two elements in a stage
  unsigned x_mask;      // bit `pass` set when the pass's row is below x_lim

  __device__ __forceinline__ DmmaInterleavedCopy(const GemmOperand<double>& op, int x0, int x_lim, int k_begin,
                                                 int tid)
      : base(op.ptr), ld(op.ld) {
    const int r16 = tid % 16, q0 = tid / 16;
    const int c0 = q0 % kChunks, block0 = q0 / kChunks;  // block0 is 0 when kJ > 1
    const int row = 16 * block0 + r16;
    k_first = k_begin + 2 * c0;
    // Rows grow with the pass: past x_lim here, every pass is zero-filled from base.
    first = x0 + row < x_lim ? op.ptr + (static_cast<long long>(x0 + row) * op.ld + k_first) : op.ptr;
    // Chunk steps of kQ move k by a multiple of 4, so k % 4 (the swizzle) stays 2 (c0 % 2), + 1.
    smem0 = dmma_interleaved_at<BK>(row, 2 * c0);
    smem1 = dmma_interleaved_at<BK>(row, 2 * c0 + 1);
    x_mask = 0;
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass)
      if (x0 + row + 16 * kBlockStep * (pass / kJ) < x_lim) x_mask |= 1u << pass;
  }

  /// Issues passes [first_pass, last_pass) of k tile `k_tile` into the stage at `stage`.
  __device__ __forceinline__ void load(double* stage, int k_tile, int k_end, int first_pass, int last_pass) const {
    static_assert(kQ % 2 == 0, "chunk steps keep k % 4");
    const int k_left = k_end - (k_first + k_tile * BK);  // elements in range from this thread's first chunk
    const double* src = first + static_cast<long long>(k_tile) * BK;
    const long long block_step = static_cast<long long>(16 * kBlockStep) * ld;
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass) {
      if (pass < first_pass || pass >= last_pass) continue;
      const int j = pass % kJ, b = pass / kJ;  // chunk step, block step
      const int n = (x_mask >> pass) & 1u ? ::max(0, ::min(2, k_left - 2 * kQ * j)) : 0;
      const double* p = src + (b * block_step + 2 * kQ * j);
      const int at = b * kBlockStep * (BK * 16) + 2 * kQ * j * 16;
      gemm_cp_async<8>(stage + smem0 + at, n > 0 ? p : base, n > 0 ? 8 : 0);
      gemm_cp_async<8>(stage + smem1 + at, n > 1 ? p + 1 : base, n > 1 ? 8 : 0);
    }
  }
};

/// The vector-fragment layout of a [k][n] B tile (DmmaTile's kVec, MMA_K 8 or 16): blocks of
/// MMA_K k rows, each block BN rows of MMA_K doubles (one per n) in which k sits at
/// w = V (k % 4) + (k / 4) % V (V = MMA_K / 4), XORed with 2 (n % 2) for MMA_K 16. A thread's B
/// fragment (b[v1] = B(t + 4 v1, g)) is then V adjacent doubles, V / 2 LDS.128 straight into
/// the register pairs the DMMA reads; the XOR puts rows n and n + 1 (lanes g and g + 1 of a
/// quarter warp) on different banks where a row is 128 bytes.
template <int BN, int MMA_K>
__device__ __forceinline__ int dmma_b_interleaved_at(int k, int n) {
  constexpr int V = MMA_K / 4;
  int w = V * (k % 4) + (k / 4) % V;
  if constexpr (MMA_K == 16) w ^= 2 * (n % 2);
  return (k / MMA_K) * (MMA_K * BN) + n * MMA_K + w;
}

/// The copies of a (BK, INNER = BN) [k][n] tile into dmma_b_interleaved_at's layout, for one
/// thread: 8-byte copies (the two n of a 16-byte chunk go to different rows). Thread tid moves
/// the chunks of k row tid % 16 (+ 16 per k block), so that 16 lanes fill one row of a block
/// (MMA_K 16: 128 bytes) with each copy; the passes step over n chunks by kQ (the threads'
/// 16-lane groups) and over 16-row k blocks, by compile-time offsets from one source pointer and
/// one shared-memory offset. Elements outside [.., k_end) x [.., x_lim) are zero-filled.
template <int BK, int INNER, int MMA_K, int kThreads>
struct DmmaInterleavedCopyB {
  static constexpr int kChunks = INNER / 2;  // 16-byte chunks of a k row
  static constexpr int kQ = kThreads / 16;
  static_assert(BK % 16 == 0 && INNER % 2 == 0 && kThreads % 32 == 0 && kChunks % kQ == 0,
                "interleaved B copies: 16-row k blocks, whole passes");
  static constexpr int kJ = kChunks / kQ;  // chunk steps per k block
  static constexpr int kPasses = kJ * (BK / 16);
  static_assert(kPasses <= 32, "pass bounds are kept in a 32-bit mask");

  const double* base;  // the operand (the source of zero-byte copies)
  long long ld;
  const double* first;  // this thread's first chunk in k tile 0
  int k_first;          // its k
  int x_left;           // elements of its first chunk's row from its n to x_lim
  int smem0, smem1;     // its two elements in a stage

  __device__ __forceinline__ DmmaInterleavedCopyB(const GemmOperand<double>& op, int x0, int x_lim, int k_begin,
                                                  int tid)
      : base(op.ptr), ld(op.ld) {
    const int k16 = tid % 16, c0 = tid / 16;  // c0 < kQ <= kChunks
    k_first = k_begin + k16;
    x_left = x_lim - (x0 + 2 * c0);
    first = x_left > 0 ? op.ptr + (static_cast<long long>(k_first) * op.ld + x0 + 2 * c0) : op.ptr;
    // Chunk steps of kQ (even) keep n % 2; k blocks of 16 keep k % 16.
    smem0 = dmma_b_interleaved_at<INNER, MMA_K>(k16, 2 * c0);
    smem1 = dmma_b_interleaved_at<INNER, MMA_K>(k16, 2 * c0 + 1);
  }

  /// Issues passes [first_pass, last_pass) of k tile `k_tile` into the stage at `stage`.
  __device__ __forceinline__ void load(double* stage, int k_tile, int k_end, int first_pass, int last_pass) const {
    static_assert(kQ % 2 == 0, "chunk steps keep n % 2");
    const int k_left = k_end - (k_first + k_tile * BK);  // k rows in range from this thread's first
    const double* src = first + static_cast<long long>(k_tile) * BK * ld;
    const long long block_step = 16 * ld;
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass) {
      if (pass < first_pass || pass >= last_pass) continue;
      const int j = pass % kJ, b = pass / kJ;  // chunk step, k block
      const int n = 16 * b < k_left ? ::max(0, ::min(2, x_left - 2 * kQ * j)) : 0;
      const double* p = src + (b * block_step + 2 * kQ * j);
      const int at = b * (16 * INNER) + 2 * kQ * j * MMA_K;
      gemm_cp_async<8>(stage + smem0 + at, n > 0 ? p : base, n > 0 ? 8 : 0);
      gemm_cp_async<8>(stage + smem1 + at, n > 1 ? p + 1 : base, n > 1 ? 8 : 0);
    }
  }
};

/// A pipelined DMMA configuration: MmaTile's shapes (double only), run by gemm_dmma_kernel.
/// VEC: a k-contiguous A tile (op(A) = A) in dmma_interleaved_at's layout, and (MMA k 8 or 16)
/// a [k][n] B tile (op(B) = B) in dmma_b_interleaved_at's, their fragments read with LDS.128
/// (half the loads); the other two layouts as without it.
/// CLUSTER_K: the CTAs of one output tile run k slices 0..CLUSTER_K-1 as one thread-block
/// cluster (sm_90) and add their sums through distributed shared memory
/// (dmma_cluster_reduce), so a product of few tiles fills the SMs without split-K's
/// workspace and second kernel.
template <class BlockShape, class WarpLayout, class Instr, int STAGES, int MIN_BLOCKS, bool VEC = false,
          int CLUSTER_K = 1>
struct DmmaTile : MmaTile<double, BlockShape, WarpLayout, Instr, STAGES, MIN_BLOCKS> {
  using Base = MmaTile<double, BlockShape, WarpLayout, Instr, STAGES, MIN_BLOCKS>;
  static constexpr int kKSteps = Base::kBK / Base::kMmaK;  // MMA k-steps per k tile
  static_assert(kKSteps >= 2 && kKSteps % 2 == 0,
                "the pipeline needs an even number (>= 2) of k-steps per tile: two fragment buffers, "
                "and the barrier before the last k-step");
  static_assert(STAGES >= 3, "the pipeline needs three stages or more");
  static constexpr bool kVec = VEC;
  static_assert(!VEC || Base::kMmaM == 16, "vector A fragments: the m16 instructions (register pairs g, g + 8)");
  // The interleaved A tile (BM BK doubles) fits in MmaTile's A stage.
  static_assert(!VEC || Base::kBM * Base::kBK <= Base::kStageA, "interleaved A tile in a stage");
  static_assert(!VEC || Base::kBN * Base::kBK <= Base::kStageB, "interleaved B tile in a stage");
  static constexpr int kClusterK = CLUSTER_K;
  static_assert(CLUSTER_K == 1 || CLUSTER_K == 2 || CLUSTER_K == 4 || CLUSTER_K == 8,
                "k clusters of 1, 2, 4 or 8 CTAs (portable cluster sizes)");
  // dmma_cluster_reduce stages the tile's sums (BM BN doubles) in the pipeline's shared memory.
  static_assert(CLUSTER_K == 1 || Base::kBM * Base::kBN * 8 <= Base::kSmemBytes, "cluster sums in shared memory");
};

/// The k reduction of a cluster of S CTAs that computed k slices 0..S-1 of one output tile
/// (cluster rank = slice = blockIdx.z % S): every CTA writes its sums to its own shared memory
/// (fragment by fragment, thread-minor: 16-byte accesses, no bank conflicts), and fragment
/// f = i NI + j of the tile is then summed by rank f % S, which reads slices 0..S-1 in that order
/// through distributed shared memory (the split-K finalize's order: the same result on every
/// run). Leaves the sums of this rank's fragments in acc and returns the rank; the caller
/// stores those, then calls dmma_cluster_done before it exits, since the other CTAs read this
/// one's shared memory until then.
template <int S, int kThreads, int MI, int NI, int kC>
__device__ __forceinline__ int dmma_cluster_reduce(double (&acc)[MI][NI][kC], unsigned char* smem, int tid) {
  static_assert(kC % 2 == 0, "sums in pairs");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  double2* sums = reinterpret_cast<double2*>(smem);  // (MI NI kC/2, kThreads)
  __syncthreads();  // every warp is done with the pipeline's stages
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int h = 0; h < kC / 2; ++h)
        sums[((i * NI + j) * (kC / 2) + h) * kThreads + tid] = make_double2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
  cluster.sync();  // release / acquire across the cluster: every slice's sums are visible
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j) {
      if ((i * NI + j) % S != rank) continue;
#pragma unroll
      for (int h = 0; h < kC / 2; ++h) {
        const int at = ((i * NI + j) * (kC / 2) + h) * kThreads + tid;
        double2 sum = cluster.map_shared_rank(sums, 0)[at];
#pragma unroll
        for (int s = 1; s < S; ++s) {
          const double2 part = cluster.map_shared_rank(sums, s)[at];
          sum.x += part.x;
          sum.y += part.y;
        }
        acc[i][j][2 * h] = sum.x;
        acc[i][j][2 * h + 1] = sum.y;
      }
    }
  return rank;
#else
  (void)acc, (void)smem, (void)tid;
  __trap();  // clusters need sm_90 (the host never launches this elsewhere: occupancy_dmma)
  return 0;
#endif
}

/// The end of dmma_cluster_reduce's protocol, after the stores of the sums: no CTA of the
/// cluster exits (and so releases the shared memory the others read) before every one has read
/// its slices. Those reads have completed here (the stores used their values), so the arrive
/// is relaxed: no fence, and the stores need not be visible before it (cluster.sync()'s
/// release arrive costs a MEMBAR.ALL.GPU that waits for them).
__device__ __forceinline__ void dmma_cluster_done() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
  asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
#endif
}

/// kAK / kBK: A / B is k-contiguous in global memory (op(A) = A, op(B) = B^T), and so is its
/// shared tile ([x][k]); otherwise the shared tile is [k][x].
template <class Cfg, bool kAK, bool kBK>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks) gemm_dmma_kernel(GemmArgs<double> p) {
  using Mma = typename Cfg::Mma;
  constexpr int BM = Cfg::kBM, BN = Cfg::kBN, BK = Cfg::kBK, kStages = Cfg::kStages, kThreads = Cfg::kThreads;
  constexpr int MI = Cfg::kMI, NI = Cfg::kNI, kKSteps = Cfg::kKSteps;
  constexpr int kMmaM = Cfg::kMmaM, kMmaK = Cfg::kMmaK;

  extern __shared__ __align__(16) unsigned char gemm_smem[];
  double* a_smem = reinterpret_cast<double*>(gemm_smem);  // (STAGES, BM, BK+pad) or (STAGES, BK, BM+pad)
  double* b_smem = a_smem + kStages * Cfg::kStageA;      // (STAGES, BN, BK+pad) or (STAGES, BK, BN+pad)
  const GemmTileRange tr = gemm_tile_range<BM, BN, BK>(p);
  const int m0 = tr.m0, n0 = tr.n0, k_end = tr.k_end, k_tiles = tr.k_tiles;

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const int wm0 = (warp / Cfg::kWarpsN) * Cfg::kWarpTileM;
  const int wn0 = (warp % Cfg::kWarpsN) * Cfg::kWarpTileN;

  constexpr bool kVecA = Cfg::kVec && kAK;  // A in dmma_interleaved_at's layout
  using CopyA = std::conditional_t<
      kVecA, DmmaInterleavedCopy<BM, BK, kThreads>,
      std::conditional_t<kAK, DmmaTileCopy<true, BM, BK, Cfg::kStrideXK, kThreads, BK>,
                         DmmaTileCopy<false, BK, BM, Cfg::kStrideAK, kThreads, BK>>>;
  constexpr bool kVecB = Cfg::kVec && !kBK && kMmaK >= 8;  // B in dmma_b_interleaved_at's layout
  using CopyB = std::conditional_t<
      kVecB, DmmaInterleavedCopyB<BK, BN, kMmaK, kThreads>,
      std::conditional_t<kBK, DmmaTileCopy<true, BN, BK, Cfg::kStrideXK, kThreads, BK>,
                         DmmaTileCopy<false, BK, BN, Cfg::kStrideBK, kThreads, BK>>>;
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
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int v1 = 0; v1 < kMmaK / 4; ++v1) {
        if constexpr (kVecA) {  // a[2 v1], a[2 v1 + 1] = A(g, k), A(g + 8, k): one 16-byte load
          const double2 pair = *reinterpret_cast<const double2*>(
              a_tile + dmma_interleaved_at<BK>(wm0 + i * kMmaM + g, kb * kMmaK + 4 * v1 + t));
          a_frag[buf][i].v[2 * v1] = pair.x;
          a_frag[buf][i].v[2 * v1 + 1] = pair.y;
        } else {
#pragma unroll
          for (int v0 = 0; v0 < kMmaM / 8; ++v0)
            a_frag[buf][i].v[v0 + (kMmaM / 8) * v1] =
                a_tile[a_at(wm0 + i * kMmaM + g + 8 * v0, kb * kMmaK + 4 * v1 + t)];
        }
      }
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int v1 = 0; v1 < kMmaK / 4; ++v1) {
        if constexpr (kVecB) {  // b[v1], b[v1 + 1] = B(t + 4 v1, n), B(t + 4 v1 + 4, n): one 16-byte load
          if (v1 % 2 == 0) {
            const double2 pair = *reinterpret_cast<const double2*>(
                b_tile + dmma_b_interleaved_at<BN, kMmaK>(kb * kMmaK + 4 * v1 + t, wn0 + j * 8 + g));
            b_frag[buf][j].v[v1] = pair.x;
            b_frag[buf][j].v[v1 + 1] = pair.y;
          }
        } else {
          b_frag[buf][j].v[v1] = b_tile[b_at(kb * kMmaK + 4 * v1 + t, wn0 + j * 8 + g)];
        }
      }
  };

  double acc[MI][NI][Mma::kC];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int c = 0; c < Mma::kC; ++c) acc[i][j][c] = 0.0;

  // Prologue: tiles 0 .. STAGES-2 in flight (one commit group per tile, empty ones included, so
  // that the wait counts below are exact), tile 0 landed for every thread, its first fragments.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) load_tile(s, s);
    gemm_cp_async_commit();
  }
  gemm_cp_async_wait<kStages - 2>();
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
      // MMAs of this k-step: consecutive ones write different accumulators (n inside m,
      // serpentine so that one B fragment feeds two MMAs in a row).
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int jj = 0; jj < NI; ++jj) {
          const int j = i % 2 ? NI - 1 - jj : jj;
          Mma::run(acc[i][j], a_frag[cur][i], b_frag[cur][j], 0, false);
        }
      if (kb < kGroups && load_next) load_group(kb, write_stage, k_tile + kStages - 1);
      if (kb == kKSteps - 2) {
        // Groups committed: (STAGES-1) + k_tile + 1; allowing STAGES-2 in flight means tile
        // k_tile + 1 has landed for this thread, and the barrier for every thread. It also
        // orders every read of this tile's stage before the next iteration's copies into it.
        gemm_cp_async_commit();
        gemm_cp_async_wait<kStages - 2>();
        __syncthreads();
        read_stage = read_stage + 1 == kStages ? 0 : read_stage + 1;
        write_stage = write_stage + 1 == kStages ? 0 : write_stage + 1;
      }
    }
  }
  gemm_cp_async_wait<0>();

  // A k cluster: this CTA's rank stores the fragments f with f % S == rank, summed over the
  // cluster's slices; split-K on top of it writes one partial per cluster (slice z / S).
  constexpr int S = Cfg::kClusterK;
  int rank = 0;
  if constexpr (S > 1) rank = dmma_cluster_reduce<S, kThreads>(acc, gemm_smem, tid);

  // Epilogue: c[2h + j] = C(g + 8h, 2t + j): pairs of consecutive columns (16 bytes).
  double* out = p.c + static_cast<long long>(blockIdx.z / S) * p.split_stride;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j) {
      if (S > 1 && (i * NI + j) % S != rank) continue;
#pragma unroll
      for (int h = 0; h < kMmaM / 8; ++h) {
        const double v[2] = {acc[i][j][2 * h], acc[i][j][2 * h + 1]};
        gemm_store_results<double, 2>(p, out, m0 + wm0 + i * kMmaM + g + 8 * h, n0 + wn0 + j * 8 + 2 * t, v);
      }
    }
  if constexpr (S > 1) dmma_cluster_done();
}

}  // namespace devmat::detail

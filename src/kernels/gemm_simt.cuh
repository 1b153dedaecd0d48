// SIMT tiled GEMM for 4-byte types (float, int32): block tile -> warp tile -> a per-thread
// register tile of 4x4 sub-tiles, a multi-stage cp.async pipeline, A and B stored k-major in
// shared memory ([k][m] and [k][n]) so a fragment read is one conflict-free 16-byte LDS; a tile
// may keep a k-contiguous A as [m][k] (A_ROWS), and rows copied off their 16-byte chunks
// (REALIGN) are read as four 4-byte loads. Device code only.
#pragma once

#include "gemm_common.cuh"

#include <type_traits>

namespace devmat::detail {

/// The operands a SIMT tile may realign (SimtTile's REALIGN_, gemm_simt_kernel's kRealign).
enum : int { kSimtRealignA = 1, kSimtRealignB = 2 };

/// A SIMT tile configuration: block tile BlockShape (BM, BN, BK), WarpLayout warps (M down, N
/// across), a STAGES-deep cp.async pipeline, at least MIN_BLOCKS blocks per SM. The warp is
/// (32 / WARP_COLS) x WARP_COLS threads (4 x 8 by default; 8 x 4 for a tile 16 columns wide);
/// each thread owns kSubM x kSubN sub-tiles of 4x4, spaced kSubStrideM = 4 * 32 / WARP_COLS rows
/// and kSubStrideN = 4 * WARP_COLS columns apart, so the warp tile is (kSubStrideM * kSubM,
/// kSubStrideN * kSubN). A_ROWS: where A is k-contiguous, its tile keeps A's layout in shared
/// memory ([m][k], rows of BK+4), copied in 16-byte chunks, instead of the transposing copy of
/// one element at a time (the tall 16-wide tile, whose A is the operand that streams).
/// REALIGN_ (kSimtRealignA | kSimtRealignB): the operands whose rows, where 16-byte copies cannot
/// take them as they are (a ptr or ld off 16-byte chunks), the configuration copies as the
/// aligned chunks that cover them (gemm_copy_tile_shifted) and reads shifted, instead of one
/// element at a time: the operand a narrow tile streams.
template <class BlockShape, class WarpLayout, int STAGES_, int MIN_BLOCKS_, int WARP_COLS_ = 8, bool A_ROWS_ = false,
          int REALIGN_ = 0>
struct SimtTile {
  static constexpr int kBM = BlockShape::kM, kBN = BlockShape::kN, kBK = BlockShape::kK;
  static constexpr int kWarpsM = WarpLayout::kM, kWarpsN = WarpLayout::kN;
  static constexpr int kWarpCols = WARP_COLS_, kWarpRows = 32 / WARP_COLS_;  // the warp's threads
  static constexpr int kSubStrideM = 4 * kWarpRows, kSubStrideN = 4 * kWarpCols;
  static constexpr int kWarpTileM = kBM / kWarpsM, kWarpTileN = kBN / kWarpsN;
  static constexpr int kSubM = kWarpTileM / kSubStrideM, kSubN = kWarpTileN / kSubStrideN;
  static constexpr int kThreads = WarpLayout::kCount * 32;
  static constexpr int kStages = STAGES_, kMinBlocks = MIN_BLOCKS_;
  static constexpr int kTM = 4 * kSubM, kTN = 4 * kSubN;  // the per-thread register tile
  // Row strides of the k-major tiles: +4 keeps rows 16-byte aligned and makes the transposing
  // copy (8 k x 4 x per warp instruction) hit 32 distinct banks.
  static constexpr int kStrideA = kBM + 4, kStrideB = kBN + 4;
  // A_ROWS: rows of BK+4 make a warp's 16-byte reads of kWarpRows consecutive rows (the threads'
  // rows interleave, kWarpRows apart) hit distinct banks.
  static constexpr bool kARows = A_ROWS_;
  static constexpr int kRealign = REALIGN_;
  static constexpr int kStrideARows = kBK + 4;
  static constexpr int kStageA = kARows && kBM * kStrideARows > kBK * kStrideA ? kBM * kStrideARows : kBK * kStrideA;
  static constexpr int kStageB = kBK * kStrideB;  // elements
  static constexpr int kSmemBytes = kStages * (kStageA + kStageB) * 4;
  static_assert(32 % kWarpCols == 0 && kBM % (kWarpsM * kSubStrideM) == 0 && kBN % (kWarpsN * kSubStrideN) == 0,
                "SimtTile: a warp tile is a whole number of its threads' 4x4 sub-tile grids");
  static_assert(!kARows || (kBK % 4 == 0 && kWarpRows == 8), "SimtTile: A_ROWS reads 4 k of 8 rows a warp");
};

/// Copies the (BX, BK) tile of one operand starting at (x0, k0) into the k-major shared tile
/// s (BK, BX+4), zero-filling outside [.., x_lim) x [.., k_lim). kShifted (an operand that is
/// not k-contiguous): row kk lands gemm_row_shift(g.ptr, g.ld, k0 + kk, x0) elements in.
template <class T, int BX, int BK, int kStride, int kThreads, bool kShifted = false>
__device__ __forceinline__ void simt_load_operand(T* s, const GemmOperand<T>& g, int x0, int x_lim, int k0,
                                                  int k_lim, int tid) {
  if constexpr (kShifted) {
    gemm_copy_tile_shifted<T, BK, BX, kStride, kThreads>(s, g.ptr, g.ld, k0, k_lim, x0, x_lim, tid);
  } else if (g.kcontig) {
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

// The configurations (float, int32): SimtTile<block tile, warps, stages, min blocks per SM[,
// threads across a warp]>.
using SimtMid = SimtTile<Shape<128, 128, 8>, Warps<4, 2>, 4, 2>;   // 256 threads, 8x8 per thread
using SimtBig = SimtTile<Shape<128, 256, 8>, Warps<2, 4>, 4, 1>;   // 256 threads, 16x8 per thread
using SimtSmall = SimtTile<Shape<64, 64, 16>, Warps<2, 2>, 3, 4>;  // 128 threads, 8x4 per thread
using SimtWide = SimtTile<Shape<64, 256, 16>, Warps<2, 4>, 3, 1>;  // 256 threads, 8x8 per thread (m ~ 64)
// The narrow tiles (GemmConfigInfo::narrow_side), for products with n <= 16 or m <= 16, which
// are memory-bound on their long operand: 128 threads, 4x4 a thread, 4 stages of 16 k; the tall
// one keeps a k-contiguous A as it is ([m][k], 16-byte copies).
// The narrow tiles realign the operand they stream where its rows are off 16-byte chunks (a row
// length or start that is not a multiple of 4 floats: k, m or n, views): A for the tall one, B
// (not k-contiguous) for the short one.
using SimtTall = SimtTile<Shape<128, 16, 16>, Warps<4, 1>, 4, 4, 4, true, kSimtRealignA>;  // n <= 16: warps of 8 x 4
using SimtShort = SimtTile<Shape<16, 128, 16>, Warps<1, 4>, 4, 4, 8, false, kSimtRealignB>;  // m <= 16

/// Four consecutive elements of a shared tile row: one 16-byte read, or kShifted (a row that
/// landed off its 16-byte chunks, gemm_copy_tile_shifted) four 4-byte ones.
template <bool kShifted, class T>
__device__ __forceinline__ Pack<T, 4> simt_read4(const T* p) {
  if constexpr (kShifted) return Pack<T, 4>{{p[0], p[1], p[2], p[3]}};
  else return *reinterpret_cast<const Pack<T, 4>*>(p);
}

/// kARows (Cfg::kARows with A k-contiguous): A's tile is [m][k] in shared memory, and a
/// thread's rows interleave (ty + kWarpRows*e) so that a warp's 16-byte reads of 4 k hit
/// consecutive rows; else A's tile is k-major and a thread's rows are 4 consecutive ones.
/// kRealign (a subset of Cfg::kRealign, for operands whose rows are off 16-byte chunks, not
/// k-contiguous for B): those operands' tile rows are copied by gemm_copy_tile_shifted and read
/// at their shift. A row's shift depends on its index mod 4 alone, and k tiles step 4-aligned, so
/// a k-major tile's row kk keeps one shift through the slice, (c + kk*l) mod 4, and a thread's
/// [m][k] rows (kWarpRows = 8 apart) share one.
template <class T, class Cfg, bool kARows = false, int kRealign = 0>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks) gemm_simt_kernel(GemmArgs<T> p) {
  static_assert(sizeof(T) == 4, "the SIMT kernel moves 4-byte elements (float, int32)");
  static_assert(!kARows || Cfg::kARows, "the [m][k] A tile is a configuration's choice");
  static_assert((kRealign & ~Cfg::kRealign) == 0, "the operands a tile realigns are a configuration's choice");
  constexpr bool kShiftA = (kRealign & kSimtRealignA) != 0, kShiftB = (kRealign & kSimtRealignB) != 0;
  constexpr int BM = Cfg::kBM, BN = Cfg::kBN, BK = Cfg::kBK, kStages = Cfg::kStages;
  constexpr int TM = Cfg::kTM, TN = Cfg::kTN;
  using Vec4 = Pack<T, 4>;

  DEVMAT_DYNAMIC_SHARED(unsigned char, gemm_smem);
  T* a_smem = reinterpret_cast<T*>(gemm_smem);  // (STAGES, BK, BM+4), or kARows (STAGES, BM, BK+4)
  T* b_smem = a_smem + kStages * Cfg::kStageA;   // (STAGES, BK, BN+4)

  const GemmTileRange tr = gemm_tile_range<BM, BN, BK>(p);
  const int m0 = tr.m0, n0 = tr.n0;

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int warp_m = warp / Cfg::kWarpsN, warp_n = warp % Cfg::kWarpsN;
  const int ty = lane / Cfg::kWarpCols, tx = lane % Cfg::kWarpCols;  // the warp's threads
  const int b_col = warp_n * Cfg::kWarpTileN + tx * 4;  // + j*kSubStrideN: this thread's columns
  // This thread's rows in the block tile: row_of(i, e) for sub-tile i, element e < 4.
  const auto row_of = [&](int i, int e) {
    return warp_m * Cfg::kWarpTileM + i * Cfg::kSubStrideM + (kARows ? ty + e * Cfg::kWarpRows : ty * 4 + e);
  };

  // The shifts of realigned tile rows (0 where not realigned): A's [m][k] rows (this thread's
  // all alike), or row kk of a k-major tile at (c + kk*l) mod 4.
  const int shift_a_rows = kShiftA && kARows ? gemm_row_shift(p.a.ptr, p.a.ld, m0 + row_of(0, 0), tr.k_begin) : 0;
  const int shift_a_c = kShiftA && !kARows ? gemm_row_shift(p.a.ptr, p.a.ld, tr.k_begin, m0) : 0;
  const int shift_a_l = kShiftA && !kARows ? static_cast<int>(p.a.ld % 4) : 0;
  const int shift_b_c = kShiftB ? gemm_row_shift(p.b.ptr, p.b.ld, tr.k_begin, n0) : 0;
  const int shift_b_l = kShiftB ? static_cast<int>(p.b.ld % 4) : 0;

  T acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = T(0);

  auto load_stage = [&](int stage, int k_tile) {
    const int k0 = tr.k_begin + k_tile * BK;
    if constexpr (kARows && kShiftA)
      gemm_copy_tile_shifted<T, BM, BK, Cfg::kStrideARows, Cfg::kThreads>(a_smem + stage * Cfg::kStageA, p.a.ptr,
                                                                          p.a.ld, m0, p.m, k0, tr.k_end, tid);
    else if constexpr (kARows)
      gemm_copy_tile<T, BM, BK, Cfg::kStrideARows, Cfg::kThreads>(a_smem + stage * Cfg::kStageA, p.a.ptr, p.a.ld,
                                                                  m0, p.m, k0, tr.k_end, p.a.vec, tid);
    else
      simt_load_operand<T, BM, BK, Cfg::kStrideA, Cfg::kThreads, kShiftA>(a_smem + stage * Cfg::kStageA, p.a, m0,
                                                                          p.m, k0, tr.k_end, tid);
    simt_load_operand<T, BN, BK, Cfg::kStrideB, Cfg::kThreads, kShiftB>(b_smem + stage * Cfg::kStageB, p.b, n0, p.n,
                                                                        k0, tr.k_end, tid);
  };
  // One k step: this thread's 4x4 sub-tiles += a_frag (its rows) x b_frag (its columns) at k kk.
  auto step = [&](const T* b_tile, int kk, const T (&a_frag)[TM]) {
    T b_frag[TN];
    const T* b_row = b_tile + kk * Cfg::kStrideB + (kShiftB ? (shift_b_c + kk * shift_b_l) % 4 : 0);
#pragma unroll
    for (int j = 0; j < Cfg::kSubN; ++j) {
      const Vec4 v = simt_read4<kShiftB>(b_row + b_col + j * Cfg::kSubStrideN);
#pragma unroll
      for (int e = 0; e < 4; ++e) b_frag[j * 4 + e] = v.v[e];
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = gemm_madd(a_frag[i], b_frag[j], acc[i][j]);
  };
  auto compute_stage = [&](int stage) {
    const T* a_tile = a_smem + stage * Cfg::kStageA;
    const T* b_tile = b_smem + stage * Cfg::kStageB;  // (BK, BN+4)
    if constexpr (kARows) {
      // (BM, BK+4): one 16-byte read gives a row's next 4 k.
#pragma unroll
      for (int k4 = 0; k4 < BK; k4 += 4) {
        Vec4 rows[TM];
#pragma unroll
        for (int i = 0; i < Cfg::kSubM; ++i)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            rows[i * 4 + e] = simt_read4<kShiftA>(a_tile + row_of(i, e) * Cfg::kStrideARows + shift_a_rows + k4);
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          T a_frag[TM];
#pragma unroll
          for (int r = 0; r < TM; ++r) a_frag[r] = rows[r].v[q];
          step(b_tile, k4 + q, a_frag);
        }
      }
    } else {
      // (BK, BM+4): one 16-byte read gives a sub-tile's 4 rows at one k.
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) {
        T a_frag[TM];
        const T* a_row = a_tile + kk * Cfg::kStrideA + (kShiftA ? (shift_a_c + kk * shift_a_l) % 4 : 0);
#pragma unroll
        for (int i = 0; i < Cfg::kSubM; ++i) {
          const Vec4 v = simt_read4<kShiftA>(a_row + row_of(i, 0));
#pragma unroll
          for (int e = 0; e < 4; ++e) a_frag[i * 4 + e] = v.v[e];
        }
        step(b_tile, kk, a_frag);
      }
    }
  };
  gemm_mainloop<kStages>(tr.k_tiles, load_stage, compute_stage);

  // Epilogue: each 4-wide row piece is 16 contiguous bytes; a warp stores kWarpRows rows of
  // 16 * kWarpCols bytes.
  T* out = p.c + static_cast<long long>(blockIdx.z) * p.split_stride;
#pragma unroll
  for (int i = 0; i < Cfg::kSubM; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = m0 + row_of(i, e);
#pragma unroll
      for (int j = 0; j < Cfg::kSubN; ++j) {
        const T v[4] = {acc[i * 4 + e][j * 4], acc[i * 4 + e][j * 4 + 1], acc[i * 4 + e][j * 4 + 2],
                        acc[i * 4 + e][j * 4 + 3]};
        gemm_store_results<T, 4>(p, out, r, n0 + b_col + j * Cfg::kSubStrideN, v);
      }
    }
}

/// The kernel of configuration Cfg for A's layout (kAKContig: A is k-contiguous): the [m][k] A
/// tile where Cfg keeps one (Cfg::kARows) and A is k-contiguous, else the k-major one; kRealign:
/// the operands it realigns (within Cfg::kRealign; B only where it is not k-contiguous).
template <class T, class Cfg, bool kAKContig, int kRealign = 0>
constexpr auto simt_kernel_for() {
  if constexpr (Cfg::kARows && kAKContig) return &gemm_simt_kernel<T, Cfg, true, kRealign>;
  else return &gemm_simt_kernel<T, Cfg, false, kRealign>;
}

/// The operands configuration Cfg realigns in product p (gemm_simt_kernel's kRealign): those of
/// Cfg::kRealign whose rows 16-byte copies cannot take (!vec) and that it copies row by row (A
/// not k-contiguous, or into Cfg's [m][k] tile; B not k-contiguous).
template <class Cfg, class T>
int simt_realign(const GemmArgs<T>& p) {
  int r = 0;
  if (!p.a.vec && (!p.a.kcontig || Cfg::kARows)) r |= kSimtRealignA;
  if (!p.b.vec && !p.b.kcontig) r |= kSimtRealignB;
  return r & Cfg::kRealign;
}

/// Calls f(kernel) with the kernel of configuration Cfg for product p's layout and realigned
/// operands (simt_kernel_for, simt_realign): the one place that picks it, for the launcher and
/// the CPU emulation alike. A configuration realigns all of Cfg::kRealign or nothing (each of
/// today's names one operand), so it has two kernels a layout.
template <class T, class Cfg, class F>
void with_simt_kernel(const GemmArgs<T>& p, F&& f) {
  const auto pick = [&](auto realign) {
    constexpr int kR = decltype(realign)::value;
    if (p.a.kcontig) f(simt_kernel_for<T, Cfg, true, kR>());
    else f(simt_kernel_for<T, Cfg, false, kR>());
  };
  if constexpr (Cfg::kRealign != 0)
    if (simt_realign<Cfg>(p) == Cfg::kRealign) return pick(std::integral_constant<int, Cfg::kRealign>{});
  pick(std::integral_constant<int, 0>{});
}

}  // namespace devmat::detail

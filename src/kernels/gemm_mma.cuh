// Tensor-core tiled GEMM through mma.sync, for two element types:
//  - double on the FP64 tensor cores (DMMA; the m16n8k* shapes are sm_90's, run as pairs of
//    sm_80's m8n8k4 before it);
//  - float as 3xTF32: each operand element x is split into a TF32 part big = tf32(x) and a TF32
//    remainder small = tf32(x - big), and a*b is accumulated in FP32 as
//    a_small*b_big + a_big*b_small + a_big*b_big (the a_small*b_small term, below 2^-22 |ab|, is
//    dropped). Each product keeps about 22 significant bits; every 16 k are summed in the MMA
//    from zero and added to the running total with a rounded FP32 add (the MMA's own
//    accumulation truncates), so the result has FP32 accuracy (test_gemm measures it against
//    the CUDA-core kernel) at a third of the TF32 tensor cores' rate, which is above FFMA's.
//    A tile whose result holds an infinity or a NaN (an operand holds one, or the sum
//    overflowed) is recomputed with plain FP32 fused multiply-adds, so special values follow
//    IEEE exactly as on the CUDA cores.
//    A float tile's main loop has variants (Tf32Loop): the warp tile walked one MMA row at a
//    time with the step sums flushed per row (fewer live registers), ldmatrix for k-contiguous
//    tiles, and a fast split (small handed to the MMA unrounded).
// Each operand keeps its global layout in shared memory (16-byte cp.async along the contiguous
// direction), padded so that fragment reads hit distinct banks in either layout. Device code only.
#pragma once

#include "gemm_common.cuh"

#include <cstdint>
#include <type_traits>

namespace devmat::detail {

/// One 16 x 8 x MMA_K DMMA: c += a b, fragments as the PTX ISA lays them out, with
/// g = lane/4 and t = lane%4: a[v0 + (MMA_M/8)*v1] = A(g + 8 v0, t + 4 v1),
/// b[v1] = B(t + 4 v1, g), c[2h + j] = C(g + 8h, 2t + j).
template <int MMA_M, int MMA_K>
struct Dmma {
  static_assert(MMA_M == 16, "DMMA tiles: the m16n8k* shapes");
  static constexpr int kA = (MMA_M / 8) * (MMA_K / 4), kB = MMA_K / 4, kC = (MMA_M / 8) * 2;
  static constexpr int kPasses = 1;            // mma instructions per fragment pair
  static constexpr bool kCheckFinite = false;  // FP64 arithmetic: IEEE as it stands
  static constexpr int kStepsPerSum = 0;       // DMMA accumulates with IEEE rounding: no step sums
  struct FragA {
    double v[kA];
  };
  struct FragB {
    double v[kB];
  };
  __device__ static __forceinline__ void prepare(FragA& f, const double (&raw)[kA]) {
#pragma unroll
    for (int i = 0; i < kA; ++i) f.v[i] = raw[i];
  }
  __device__ static __forceinline__ void prepare(FragB& f, const double (&raw)[kB]) {
#pragma unroll
    for (int i = 0; i < kB; ++i) f.v[i] = raw[i];
  }

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

  __device__ static __forceinline__ void run(double (&c)[kC], const FragA& fa, const FragB& fb, int /*pass*/,
                                             bool /*fresh*/) {
    const double(&a)[kA] = fa.v;
    const double(&b)[kB] = fb.v;
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
#elif defined(DEVMAT_EMULATION)
    emu::mma_m16n8_f64<MMA_K>(c, a, b);  // the CPU emulation's (test/expr_emu): one warp barrier
#else
    // Before sm_90: two m8n8k4 per k-step of 4 (rows g and g+8).
#pragma unroll
    for (int v1 = 0; v1 < MMA_K / 4; ++v1) {
      m8n8k4(c[0], c[1], a[2 * v1], b[v1]);
      m8n8k4(c[2], c[3], a[2 * v1 + 1], b[v1]);
    }
#endif
  }
};


/// 3xTF32 on the m16n8k8 TF32 MMA (sm_80+): the same fragment layout as Dmma<16, 8>, with each
/// element held as two TF32 values (see the top of this file). kFast: small = x - big goes to
/// the MMA unrounded (the MMA reads a TF32 operand's top 19 bits, so small is truncated, an
/// error of at most 2^-21 |x| instead of 2^-22): a split is then 3 instructions, against 8.
template <bool kFast = false>
struct Tf32x3 {
  static constexpr int kA = 4, kB = 2, kC = 4;
  static constexpr int kPasses = 3;
  static constexpr bool kCheckFinite = true;  // big - x is NaN for an infinite x: redo such tiles
  // The TF32 MMA adds into its FP32 accumulator with truncation, so a long sum in it drifts
  // (measured on an H200, positive data, k = 4096: relative error 4e-5 against 8e-7 for FFMA).
  // So every kStepsPerSum k-steps of 8 are summed in the MMA starting from zero, and the kernel
  // adds that sum to the running sum with an ordinary, rounded FP32 add. Measured there on
  // 16x8 outputs: relative error 6.7e-8 for one k-step (FFMA 5.2e-8), 1.8e-6 for 32.
  static constexpr int kStepsPerSum = 2;
  struct FragA {
    std::uint32_t big[kA], small[kA];
  };
  struct FragB {
    std::uint32_t big[kB], small[kB];
  };

  /// cvt.rna.tf32.f32 (nearest, ties away), which sm_90 runs as five instructions.
  __device__ static __forceinline__ std::uint32_t to_tf32(float x) {
    std::uint32_t r;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
#else
    // Truncation: unused on GPUs before sm_80 (no TF32 MMA there); the CPU emulation's, whose
    // tests bound the error that adds.
    r = __float_as_uint(x) & 0xffffe000u;
#endif
    return r;
  }
  /// The same rounding as to_tf32 for every finite x, in two integer instructions: half a TF32
  /// ulp added to the bits carries into the kept ones exactly when rounding up. It differs only
  /// for x non-finite (NaN may come out as a finite value) or past the largest TF32 (inf comes
  /// out): callers use it for big only, where x - big then is NaN or infinite, so the tile's
  /// result is not finite and the tile is recomputed on the exact path.
  __device__ static __forceinline__ std::uint32_t to_tf32_finite(float x) {
    return (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
  }
  template <int N>
  __device__ static __forceinline__ void split(std::uint32_t (&big)[N], std::uint32_t (&small)[N],
                                               const float (&raw)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
      big[i] = to_tf32_finite(raw[i]);
      const float rest = raw[i] - __uint_as_float(big[i]);  // exact (NaN for a non-finite raw)
      // to_tf32 keeps a NaN rest NaN, where to_tf32_finite could make it finite.
      small[i] = kFast ? __float_as_uint(rest) : to_tf32(rest);
    }
  }
  /// The raw bits of fragments read with ldmatrix.
  template <int N>
  __device__ static __forceinline__ void split(std::uint32_t (&big)[N], std::uint32_t (&small)[N],
                                               const std::uint32_t (&raw)[N]) {
    float f[N];
#pragma unroll
    for (int i = 0; i < N; ++i) f[i] = __uint_as_float(raw[i]);
    split(big, small, f);
  }
  __device__ static __forceinline__ void prepare(FragA& f, const float (&raw)[kA]) { split(f.big, f.small, raw); }
  __device__ static __forceinline__ void prepare(FragB& f, const float (&raw)[kB]) { split(f.big, f.small, raw); }

  /// c = a b + (kZero ? 0 : c).
  template <bool kZero>
  __device__ static __forceinline__ void mma(float (&c)[kC], const std::uint32_t (&a)[kA],
                                             const std::uint32_t (&b)[kB]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (kZero)
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                   "{%10,%10,%10,%10};\n"
                   : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(0.0f));
    else
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                   "{%0,%1,%2,%3};\n"
                   : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(DEVMAT_EMULATION)
    if constexpr (kZero) c[0] = c[1] = c[2] = c[3] = 0.0f;
    emu::mma_m16n8k8_tf32(c, a, b);  // the CPU emulation's (test/expr_emu): one warp barrier
#else
    // Pre-Ampere builds never launch this kernel (the host picks the CUDA-core one there).
    (void)c, (void)a, (void)b;
#endif
  }
  /// One k-step into the step sum c (`fresh`: pass 0 starts it from zero): pass 0 and 1 add
  /// the two small cross terms, pass 2 the big product (the terms are added smallest first).
  __device__ static __forceinline__ void run(float (&c)[kC], const FragA& a, const FragB& b, int pass, bool fresh) {
    if (pass == 0) {
      if (fresh) mma<true>(c, a.small, b.big);
      else mma<false>(c, a.small, b.big);
    } else if (pass == 1) mma<false>(c, a.big, b.small);
    else mma<false>(c, a.big, b.big);
  }
};

/// ldmatrix .x4: lane l gives the address of row l % 8 of 8x8 matrix l / 8 (16 bytes, 16-byte
/// aligned, shared memory); r[q] gets word l % 4 of row l / 4 of matrix q. For 4-byte elements
/// a matrix is 8 rows of 4 elements, and that word is element (g, t): a TF32 fragment's layout.
__device__ __forceinline__ void gemm_ldmatrix_x4(std::uint32_t (&r)[4], const void* row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_u32(row)));
#elif defined(DEVMAT_EMULATION)
  emu::ldmatrix_x4(r, row);
#else
  (void)row;  // pre-Turing builds never launch the TF32 kernels
  r[0] = r[1] = r[2] = r[3] = 0;
#endif
}

/// How a tile's main loop runs (float only; double tiles take the default):
///  - FAST_SPLIT: Tf32x3<true>, the small parts truncated by the MMA (see Tf32x3);
///  - ROWS: the warp tile one MMA row (mi) at a time: the B fragments of one step sum's k-steps
///    are split once, then each row's A fragments are split just before use and its NI step
///    sums (4 registers each) are added to the running sums right after its MMAs. Live:
///    the running sums, the B fragments and one row's A fragments and step sums, where the
///    whole-tile loop holds a second set of sums and every A fragment. Same MMAs, same order
///    per output element, so the same results as the whole-tile loop;
///  - LDSM: (with ROWS) fragments of k-contiguous shared tiles read with ldmatrix, one
///    instruction for an A fragment or for two B fragments, instead of four 4-byte reads each.
template <bool FAST_SPLIT = false, bool ROWS = false, bool LDSM = false>
struct Tf32Loop {
  static constexpr bool kFastSplit = FAST_SPLIT, kRows = ROWS, kLdsm = LDSM;
  static_assert(!LDSM || ROWS, "ldmatrix fragments come with the row loop");
};

/// A tensor-core tile configuration for element type T (double or float): block tile
/// BlockShape (BM, BN, BK), WarpLayout warps, each warp a (BM/warps.M, BN/warps.N) tile of
/// Instr-shaped MMA instructions (M x 8 x K: double 16 x 8 x 4, 8 or 16; float 16 x 8 x 8),
/// a STAGES-deep cp.async pipeline, at least MIN_BLOCKS blocks per SM, main loop Loop.
template <class T, class BlockShape, class WarpLayout, class Instr, int STAGES_, int MIN_BLOCKS_,
          class Loop = Tf32Loop<>>
struct MmaTile {
  using Element = T;
  using Mma = std::conditional_t<std::is_same_v<T, double>, Dmma<Instr::kM, Instr::kK>, Tf32x3<Loop::kFastSplit>>;
  static_assert(Instr::kN == 8, "tensor-core tiles: the MMA instructions are 8 wide in n");
  static_assert(std::is_same_v<T, double> || (std::is_same_v<T, float> && Instr::kM == 16 && Instr::kK == 8),
                "tensor-core tiles: double (DMMA) or float (3xTF32, m16n8k8)");
  static_assert(std::is_same_v<T, float> || std::is_same_v<Loop, Tf32Loop<>>, "loop variants are float's");
  static constexpr bool kRows = Loop::kRows, kLdsm = Loop::kLdsm;
  static constexpr int kBM = BlockShape::kM, kBN = BlockShape::kN, kBK = BlockShape::kK;
  static constexpr int kWarpsM = WarpLayout::kM, kWarpsN = WarpLayout::kN, kThreads = WarpLayout::kCount * 32;
  static constexpr int kWarpTileM = kBM / kWarpsM, kWarpTileN = kBN / kWarpsN;
  static constexpr int kMmaM = Instr::kM, kMmaK = Instr::kK;
  static constexpr int kMI = kWarpTileM / kMmaM, kNI = kWarpTileN / 8;
  static constexpr int kStages = STAGES_, kMinBlocks = MIN_BLOCKS_;
  // Row strides of the two possible layouts, [x][k] and [k][x]. A fragment read has lane
  // (g, t) at row offset g, column offset t ([x][k]) or the other way round ([k][x]).
  // double: 8-byte reads, half a warp per pass: strides of 4 mod 16 doubles spread them over
  // all 32 banks in either layout. float: 4-byte reads, a whole warp: g*S + t needs S = 4 mod 8,
  // t*S + g needs S = 8 mod 32.
  static constexpr int kPadXK = 4, kPadKX = sizeof(T) == 8 ? 4 : 8;
  static constexpr int kStrideXK = kBK + kPadXK, kStrideAK = kBM + kPadKX, kStrideBK = kBN + kPadKX;
  static constexpr int kStageA = (kBM * kStrideXK > kBK * kStrideAK) ? kBM * kStrideXK : kBK * kStrideAK;
  static constexpr int kStageB = (kBN * kStrideXK > kBK * kStrideBK) ? kBN * kStrideXK : kBK * kStrideBK;
  static constexpr int kSmemBytes = kStages * (kStageA + kStageB) * static_cast<int>(sizeof(T));
  static_assert(kBM % kWarpsM == 0 && kBN % kWarpsN == 0, "bad warp layout");
  static_assert(kWarpTileM % kMmaM == 0 && kWarpTileN % 8 == 0 && kBK % kMmaK == 0, "bad mma tiling");
  static_assert(sizeof(T) == 8 ? (kStrideXK % 16 == 4 && kStrideAK % 16 == 4 && kStrideBK % 16 == 4)
                               : (kStrideXK % 8 == 4 && kStrideAK % 32 == 8 && kStrideBK % 32 == 8),
                "bank-conflict padding");
};

// ------------------------------------------------------------------ configurations
// MmaTile<T, block tile, warps, instruction, stages, min blocks per SM[, loop]>, compiled into
// libdevmat by dispatch/gemm_registry.cuh.
// double (DMMA):
using Dmma128x128 = MmaTile<double, Shape<128, 128, 16>, Warps<2, 4>, Shape<16, 8, 8>, 3, 1>;  // warp tile 64x32
using Dmma128x64 = MmaTile<double, Shape<128, 64, 16>, Warps<4, 2>, Shape<16, 8, 4>, 3, 2>;    // warp tile 32x32
using Dmma64x64 = MmaTile<double, Shape<64, 64, 16>, Warps<2, 2>, Shape<16, 8, 4>, 3, 3>;      // warp tile 32x32
// double, software-pipelined: the DmmaPipe* configurations (kernels/gemm_dmma.cuh).
// float (3xTF32, m16n8k8). Each thread holds its sums twice, the running sums and one k-step's,
// which rules out warp tiles past 64x32.
using Tf32Instr = Shape<16, 8, 8>;
using Tf32x128x64 = MmaTile<float, Shape<128, 64, 32>, Warps<4, 2>, Tf32Instr, 3, 1>;    // warp tile 32x32
using Tf32x64x128 = MmaTile<float, Shape<64, 128, 32>, Warps<2, 4>, Tf32Instr, 4, 1>;    // warp tile 32x32 (m ~ 64)
using Tf32x64x256 = MmaTile<float, Shape<64, 256, 32>, Warps<2, 4>, Tf32Instr, 3, 1>;    // warp tile 32x64 (m ~ 64)
using Tf32x64x64 = MmaTile<float, Shape<64, 64, 32>, Warps<2, 2>, Tf32Instr, 3, 2>;      // warp tile 32x32
// Small tiles for short k over few output tiles (k <= 128, up to one round of CTAs), where the
// 64x64 tile's handful of CTAs each walk their k tiles one after another with one warp a
// scheduler (ncu, H100, 128x256x128: 3.8 cycles between a warp's instructions, 19.7 k cycles):
// four times the CTAs with a quarter of the work each (11.2 k cycles), and with k <= 128 every
// k tile's copy issued before the first MMA.
using Tf32x32x32 = MmaTile<float, Shape<32, 32, 32>, Warps<2, 2>, Tf32Instr, 4, 4>;      // warp tile 16x16
using Tf32x32x64 = MmaTile<float, Shape<32, 64, 32>, Warps<2, 2>, Tf32Instr, 4, 4>;      // warp tile 16x32
using Tf32x64x32 = MmaTile<float, Shape<64, 32, 32>, Warps<2, 2>, Tf32Instr, 4, 4>;      // warp tile 32x16
// Main-loop variants (Tf32Loop): "r" the row loop with ldmatrix, here for two blocks per SM
// (128 registers, 16 warps; its results are the whole-tile loop's bit for bit); "f" that loop
// with the fast split (the whole-tile loop's 128x128 tile needs 255 registers and spills).
using Tf32RowLoop = Tf32Loop<false, true, true>;
using Tf32FastLoop = Tf32Loop<true, true, true>;
using Tf32r128x64b2 = MmaTile<float, Shape<128, 64, 32>, Warps<4, 2>, Tf32Instr, 3, 2, Tf32RowLoop>;
using Tf32f128x128 = MmaTile<float, Shape<128, 128, 32>, Warps<2, 4>, Tf32Instr, 3, 1, Tf32FastLoop>;

/// The tile's results with plain fused multiply-adds, one output element per thread at a time:
/// the exact-IEEE path for the rare tiles whose 3xTF32 result is not finite. `thread`: this
/// thread's index among the kThreads that run it.
template <class T, int BM, int BN, int kThreads>
__device__ __forceinline__ void gemm_tile_fma(const GemmArgs<T>& p, T* out, int m0, int n0, int k_begin, int k_end,
                                              int thread) {
  for (int e = thread; e < BM * BN; e += kThreads) {
    const int r = m0 + e / BN, c = n0 + e % BN;
    if (r >= p.m || c >= p.n) continue;
    T acc = T(0);
    for (int kk = k_begin; kk < k_end; ++kk) {
      const T a = p.a.kcontig ? p.a.ptr[r * p.a.ld + kk] : p.a.ptr[kk * p.a.ld + r];
      const T b = p.b.kcontig ? p.b.ptr[c * p.b.ld + kk] : p.b.ptr[kk * p.b.ld + c];
      acc = fma(a, b, acc);
    }
    const T v[1] = {acc};
    gemm_store_results<T, 1>(p, out, r, c, v);
  }
}

/// kAK / kBK: A / B is k-contiguous in global memory (op(A) = A, op(B) = B^T), and so is its
/// shared tile ([x][k]); otherwise the shared tile is [k][x].
template <class Cfg, bool kAK, bool kBK>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    gemm_mma_kernel(GemmArgs<typename Cfg::Element> p) {
  using T = typename Cfg::Element;
  using Mma = typename Cfg::Mma;
  constexpr int BM = Cfg::kBM, BN = Cfg::kBN, BK = Cfg::kBK, kStages = Cfg::kStages;
  constexpr int MI = Cfg::kMI, NI = Cfg::kNI, kThreads = Cfg::kThreads;

  DEVMAT_DYNAMIC_SHARED(unsigned char, gemm_smem);
  T* a_smem = reinterpret_cast<T*>(gemm_smem);  // (STAGES, BM, BK+pad) or (STAGES, BK, BM+pad)
  T* b_smem = a_smem + kStages * Cfg::kStageA;   // (STAGES, BN, BK+pad) or (STAGES, BK, BN+pad)
  const GemmTileRange tr = gemm_tile_range<BM, BN, BK>(p);
  const int m0 = tr.m0, n0 = tr.n0, k_end = tr.k_end;

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const int wm0 = (warp / Cfg::kWarpsN) * Cfg::kWarpTileM;
  const int wn0 = (warp % Cfg::kWarpsN) * Cfg::kWarpTileN;

  auto load_stage = [&](int stage, int k_tile) {
    const int k0 = tr.k_begin + k_tile * BK;
    T* sa = a_smem + stage * Cfg::kStageA;
    T* sb = b_smem + stage * Cfg::kStageB;
    if constexpr (kAK)  // [m][k]
      gemm_copy_tile<T, BM, BK, Cfg::kStrideXK, kThreads>(sa, p.a.ptr, p.a.ld, m0, p.m, k0, k_end, p.a.vec, tid);
    else  // [k][m]
      gemm_copy_tile<T, BK, BM, Cfg::kStrideAK, kThreads>(sa, p.a.ptr, p.a.ld, k0, k_end, m0, p.m, p.a.vec, tid);
    if constexpr (kBK)  // [n][k]
      gemm_copy_tile<T, BN, BK, Cfg::kStrideXK, kThreads>(sb, p.b.ptr, p.b.ld, n0, p.n, k0, k_end, p.b.vec, tid);
    else  // [k][n]
      gemm_copy_tile<T, BK, BN, Cfg::kStrideBK, kThreads>(sb, p.b.ptr, p.b.ld, k0, k_end, n0, p.n, p.b.vec, tid);
  };
  // Shared-memory offsets of op(A)(m, k) and op(B)(k, n) inside one stage.
  auto a_at = [](int m, int k) { return kAK ? m * Cfg::kStrideXK + k : k * Cfg::kStrideAK + m; };
  auto b_at = [](int k, int n) { return kBK ? n * Cfg::kStrideXK + k : k * Cfg::kStrideBK + n; };

  // acc: the running sums; with Mma::kStepsPerSum, step holds the current k-steps' sums.
  T acc[MI][NI][Mma::kC], step[MI][NI][Mma::kC];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int c = 0; c < Mma::kC; ++c) acc[i][j][c] = T(0);

  auto compute_stage = [&](int stage) {
    const T* a_tile = a_smem + stage * Cfg::kStageA;
    const T* b_tile = b_smem + stage * Cfg::kStageB;
#pragma unroll
    for (int kb = 0; kb < BK / Cfg::kMmaK; ++kb) {
      typename Mma::FragA a_frag[MI];
      typename Mma::FragB b_frag[NI];
#pragma unroll
      for (int i = 0; i < MI; ++i) {
        T raw[Mma::kA];
#pragma unroll
        for (int v1 = 0; v1 < Cfg::kMmaK / 4; ++v1)
#pragma unroll
          for (int v0 = 0; v0 < Cfg::kMmaM / 8; ++v0)
            raw[v0 + (Cfg::kMmaM / 8) * v1] = a_tile[a_at(wm0 + i * Cfg::kMmaM + g + 8 * v0, kb * Cfg::kMmaK + 4 * v1 + t)];
        Mma::prepare(a_frag[i], raw);
      }
#pragma unroll
      for (int j = 0; j < NI; ++j) {
        T raw[Mma::kB];
#pragma unroll
        for (int v1 = 0; v1 < Cfg::kMmaK / 4; ++v1) raw[v1] = b_tile[b_at(kb * Cfg::kMmaK + 4 * v1 + t, wn0 + j * 8 + g)];
        Mma::prepare(b_frag[j], raw);
      }
      constexpr int kSteps = Mma::kStepsPerSum, kGroup = kSteps > 0 ? kSteps : 1;
      static_assert((BK / Cfg::kMmaK) % kGroup == 0, "k-step sums must end with the k tile");
      T(&target)[MI][NI][Mma::kC] = kSteps > 0 ? step : acc;
      const bool fresh = kSteps > 0 && kb % kGroup == 0;  // known at compile time (unrolled)
#pragma unroll
      for (int pass = 0; pass < Mma::kPasses; ++pass)
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int j = 0; j < NI; ++j) Mma::run(target[i][j], a_frag[i], b_frag[j], pass, fresh);
      if (kSteps > 0 && (kb + 1) % kGroup == 0) {
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int c = 0; c < Mma::kC; ++c) acc[i][j][c] += step[i][j][c];
      }
    }
  };
  if constexpr (Cfg::kRows) {
    // The row loop (Cfg::kRows, float): see Tf32Loop. Fragment (g, t) reads, or ldmatrix where
    // the shared tile is k-contiguous and Cfg::kLdsm: lane l addresses row l % 8 of matrix
    // q = l / 8. A: matrices (rows +0, k +0), (+8, +0), (+0, +4), (+8, +4) are a[0..3]; B: (n
    // block j, k +0), (j, +4), (j+1, +0), (j+1, +4) are b[0..1] of blocks j and j+1. The
    // fragments are split here.
    const int q = lane / 8, r = lane % 8;
    // Reads the N values of a fragment: through ldmatrix at shared offset `row` (kLdsmRead,
    // N == 4), else one element at each shared offset off[v]; then splits them.
    auto fetch = [&](auto ldsm_read, auto& frag, const T* tile, const int* off, int row) {
      constexpr int N = static_cast<int>(sizeof(frag.big) / sizeof(frag.big[0]));
      std::uint32_t raw[N];
      if constexpr (decltype(ldsm_read)::value) {
        static_assert(N == 4, "ldmatrix .x4 reads four values a lane");
        gemm_ldmatrix_x4(raw, tile + row);
      } else {
#pragma unroll
        for (int v = 0; v < N; ++v) raw[v] = __float_as_uint(tile[off[v]]);
      }
      Mma::split(frag.big, frag.small, raw);
    };
    auto compute_stage_rows = [&](int stage) {
      const T* a_tile = a_smem + stage * Cfg::kStageA;
      const T* b_tile = b_smem + stage * Cfg::kStageB;
      constexpr int kSteps = Mma::kStepsPerSum;
      static_assert(kSteps > 0 && (BK / 8) % kSteps == 0, "the row loop sums whole groups of k-steps");
#pragma unroll
      for (int kg = 0; kg < BK / 8 / kSteps; ++kg) {
        typename Mma::FragB b_frag[kSteps][NI];
#pragma unroll
        for (int ks = 0; ks < kSteps; ++ks) {
          const int k0 = (kg * kSteps + ks) * 8;
          if constexpr (Cfg::kLdsm && kBK) {
            static_assert(NI % 2 == 0, "ldmatrix reads B fragments in pairs");
#pragma unroll
            for (int j = 0; j < NI; j += 2) {
              // One ldmatrix: b[0..1] of block j in words 0..1, of block j+1 in words 2..3.
              typename Mma::FragA pair;
              const int row = b_at(k0 + 4 * (q & 1), wn0 + (j + (q >> 1)) * 8 + r);
              fetch(std::true_type{}, pair, b_tile, nullptr, row);
#pragma unroll
              for (int v = 0; v < 2; ++v) {
                b_frag[ks][j].big[v] = pair.big[v], b_frag[ks][j].small[v] = pair.small[v];
                b_frag[ks][j + 1].big[v] = pair.big[2 + v], b_frag[ks][j + 1].small[v] = pair.small[2 + v];
              }
            }
          } else {
#pragma unroll
            for (int j = 0; j < NI; ++j) {
              const int off[2] = {b_at(k0 + t, wn0 + j * 8 + g), b_at(k0 + 4 + t, wn0 + j * 8 + g)};
              fetch(std::false_type{}, b_frag[ks][j], b_tile, off, 0);
            }
          }
        }
#pragma unroll
        for (int i = 0; i < MI; ++i) {
          const int mi0 = wm0 + i * 16;
          typename Mma::FragA a_frag[kSteps];
#pragma unroll
          for (int ks = 0; ks < kSteps; ++ks) {
            const int k0 = (kg * kSteps + ks) * 8;
            if constexpr (Cfg::kLdsm && kAK) {
              const int row = a_at(mi0 + r + 8 * (q & 1), k0 + 4 * (q >> 1));
              fetch(std::true_type{}, a_frag[ks], a_tile, nullptr, row);
            } else {
              const int off[4] = {a_at(mi0 + g, k0 + t), a_at(mi0 + g + 8, k0 + t), a_at(mi0 + g, k0 + 4 + t),
                                  a_at(mi0 + g + 8, k0 + 4 + t)};
              fetch(std::false_type{}, a_frag[ks], a_tile, off, 0);
            }
          }
          T sum[NI][Mma::kC];  // this row's step sums
#pragma unroll
          for (int ks = 0; ks < kSteps; ++ks)
#pragma unroll
            for (int pass = 0; pass < Mma::kPasses; ++pass)
#pragma unroll
              for (int j = 0; j < NI; ++j) Mma::run(sum[j], a_frag[ks], b_frag[ks][j], pass, ks == 0);
#pragma unroll
          for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int c = 0; c < Mma::kC; ++c) acc[i][j][c] += sum[j][c];
        }
      }
    };
    gemm_mainloop<kStages>(tr.k_tiles, load_stage, compute_stage_rows);
  } else {
    gemm_mainloop<kStages>(tr.k_tiles, load_stage, compute_stage);
  }

  T* out = p.c + static_cast<long long>(blockIdx.z) * p.split_stride;
  if constexpr (Mma::kCheckFinite) {
    bool finite = true;
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NI; ++j)
#pragma unroll
        for (int c = 0; c < Mma::kC; ++c) finite = finite && isfinite(acc[i][j][c]);
    if (__syncthreads_or(!finite)) {  // uniform across the CTA
      gemm_tile_fma<T, BM, BN, kThreads>(p, out, m0, n0, tr.k_begin, tr.k_end, tid);
      return;
    }
  }

  // Epilogue: c[2h + j] = C(g + 8h, 2t + j): pairs of consecutive columns (8 or 16 bytes).

#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int h = 0; h < Cfg::kMmaM / 8; ++h) {
        const T v[2] = {acc[i][j][2 * h], acc[i][j][2 * h + 1]};
        gemm_store_results<T, 2>(p, out, m0 + wm0 + i * Cfg::kMmaM + g + 8 * h, n0 + wn0 + j * 8 + 2 * t, v);
      }
}

}  // namespace devmat::detail

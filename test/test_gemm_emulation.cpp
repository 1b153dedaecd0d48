// The tensor-core GEMM kernels run on the CPU through the CUDA emulation (expr_emu/): the
// pipelined DMMA kernel (gemm_dmma_kernel, kernels/gemm_dmma.cuh) and the mma.sync kernel's
// 3xTF32 float tiles (gemm_mma_kernel, kernels/gemm_mma.cuh); and the CUDA-core kernel's narrow
// tiles (gemm_simt_kernel, kernels/gemm_simt.cuh). A block's threads are host threads;
// __syncthreads, __syncthreads_or, ldmatrix and the MMAs (emu::mma_m16n8_f64 and
// emu::mma_m16n8k8_tf32: PTX's fragment layouts, one warp barrier) synchronise as on the GPU, and
// cp.async is a synchronous copy with its zero fill. That checks the main loops' bookkeeping
// (stages, the ring of k tiles, the fragment buffers, the barrier's place, the split of a tile's
// copies over its k-steps; the float tiles' step sums, row loop and ldmatrix fragments), the
// bounds and zero fill of ragged m, n and k, k slices (split-K partials at c + z * split_stride)
// and the epilogue (alpha, beta, C read only when asked) in every operand layout, rows with and
// without 16-byte copies (float), and a float tile whose result is not finite recomputed with
// FMAs; against a long-double product, every element of C's padding poisoned and checked. The
// float tiles here: the small ones (warp tiles of one MMA row or two) and the row loop with
// ldmatrix. cp.async aborts on an address its size does not divide (kernels/common.cuh). Not
// checked here: timing-dependent hazards (compute-sanitizer's racecheck on the GPU), the MMAs'
// own rounding (the GPU's accuracy tests) and the cluster sum (no clusters in the emulation).

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <type_traits>
#include <random>
#include <vector>

#include "support/catch.hpp"

#include "emu_cuda.hpp"
#include "emu_image.hpp"

[[noreturn]] inline void __trap() { std::abort(); }

#include "kernels/gemm_dmma.cuh"
#include "kernels/gemm_simt.cuh"

namespace d = devmat::detail;

namespace {
using emu::rng;

struct Case {
  int m, n, k;
  bool a_kcontig, b_kcontig;  // op(A) = A with A m x k row-major, else A stored k x m; B likewise
  int splits;                 // k slices (gridDim.z), each a whole number of k tiles
  bool beta;                  // C = 1.5 * AB - 0.5 * C instead of C = AB
  bool vec = true;            // rows allow 16-byte copies (the pipelined DMMA tiles need them)
  bool inf = false;           // A's first element is an infinity (float: the tile's FMA path)
  int off = 0;                // !vec: A and B start this many elements past a 16-byte boundary
  int ld_extra = 1;           // !vec: rows this many elements longer than whole chunks (0 .. 3),
                              // or -1: as long as the operand's (a dense matrix)
};

/// A SIMT tile (gemm_simt_kernel) of element T in this harness's terms: one kernel for every
/// layout, FP32 FMAs (so kMmaK 1).
template <class Tile, class T>
struct Simt : Tile {
  using Base = Tile;
  using Element = T;
  static constexpr int kMmaK = 1;
};

/// The kernel of configuration Cfg for one operand layout: gemm_dmma_kernel for the pipelined
/// DMMA tiles (their Cfg has kClusterSum), gemm_mma_kernel for the mma.sync ones; the SIMT ones
/// (Simt above: a Base, no kClusterSum) go through the launcher's d::with_simt_kernel.
template <class Cfg, class = void>
struct IsPipe : std::false_type {};
template <class Cfg>
struct IsPipe<Cfg, std::void_t<decltype(Cfg::kClusterSum)>> : std::true_type {};
template <class Cfg, class = void>
struct HasBase : std::false_type {};
template <class Cfg>
struct HasBase<Cfg, std::void_t<typename Cfg::Base>> : std::true_type {};
template <class Cfg>
constexpr bool kIsSimt = HasBase<Cfg>::value && !IsPipe<Cfg>::value;

template <class Cfg, bool kAK, bool kBK>
auto kernel_of() {
  if constexpr (IsPipe<Cfg>::value)
    return &d::gemm_dmma_kernel<Cfg, kAK, kBK>;
  else
    return &d::gemm_mma_kernel<Cfg, kAK, kBK>;
}

/// Runs one case on configuration Cfg and checks every element of C and of its padding.
template <class Cfg>
void check(const Case& c) {
  using T = typename Cfg::Element;
  CAPTURE(Cfg::kBM, Cfg::kBN, Cfg::kBK, Cfg::kThreads, Cfg::kMmaK, c.m, c.n, c.k, c.a_kcontig, c.b_kcontig,
          c.splits, c.beta, c.vec, c.inf, c.off, c.ld_extra);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  // Operands with rows of whole 16-byte chunks (vec), or one element past them (rows after the
  // first start off 16 bytes), and padding.
  constexpr int kPer = 16 / static_cast<int>(sizeof(T));
  const auto ld_of = [&](int inner, int pad) {
    if (!c.vec && c.ld_extra < 0) return static_cast<long long>(inner);
    return static_cast<long long>((inner + kPer - 1) / kPer * kPer + pad * kPer + (c.vec ? 0 : c.ld_extra));
  };
  const int a_outer = c.a_kcontig ? c.m : c.k, a_inner = c.a_kcontig ? c.k : c.m;
  const int b_outer = c.b_kcontig ? c.n : c.k, b_inner = c.b_kcontig ? c.k : c.n;
  const long long lda = ld_of(a_inner, 1), ldb = ld_of(b_inner, 2);
  // The operands start c.off elements into 16-byte aligned storage, as a window of a matrix
  // ld elements wide, whose last row they end: dense (ld == inner), on its last element.
  const auto storage = [&](int outer, long long ld, int inner) {
    return static_cast<std::size_t>(c.off + (outer - 1) * ld + std::max<long long>(ld, inner));
  };
  std::vector<T> a_store(storage(a_outer, lda, a_inner)), b_store(storage(b_outer, ldb, b_inner));
  for (T& v : a_store) v = static_cast<T>(dist(rng()));
  for (T& v : b_store) v = static_cast<T>(dist(rng()));
  REQUIRE(reinterpret_cast<std::uintptr_t>(a_store.data()) % 16 == 0);
  REQUIRE(reinterpret_cast<std::uintptr_t>(b_store.data()) % 16 == 0);
  T* const a = a_store.data() + c.off;
  T* const b = b_store.data() + c.off;
  if (c.inf) a[0] = std::numeric_limits<T>::infinity();
  const auto A = [&](int i, int kk) { return c.a_kcontig ? a[i * lda + kk] : a[kk * lda + i]; };
  const auto B = [&](int kk, int j) { return c.b_kcontig ? b[j * ldb + kk] : b[kk * ldb + j]; };

  const long long ldc = (c.n + kPer - 1) / kPer * kPer + kPer;
  const long long c_elems = static_cast<long long>(c.m) * ldc;
  const T kPoison = static_cast<T>(-7.25e30);
  // One output per slice (split-K partials), poisoned; with beta, slice 0 (the only one) holds C.
  std::vector<T> out(static_cast<std::size_t>(c_elems * c.splits), kPoison), c0;
  if (c.beta) {
    for (int i = 0; i < c.m; ++i)
      for (int j = 0; j < c.n; ++j) out[i * ldc + j] = static_cast<T>(dist(rng()));
    c0 = out;
  }

  const int k_tiles = (c.k + Cfg::kBK - 1) / Cfg::kBK;
  const int per_split = (k_tiles + c.splits - 1) / c.splits;
  REQUIRE((k_tiles + per_split - 1) / per_split == c.splits);  // every slice has k tiles
  d::GemmArgs<T> p{};
  p.m = c.m, p.n = c.n, p.k = c.k;
  p.a = {a, lda, c.a_kcontig, c.vec};
  p.b = {b, ldb, c.b_kcontig, c.vec};
  p.c = out.data(), p.ldc = ldc, p.c_vec = true;
  p.read_c = c.beta;
  p.alpha = static_cast<T>(c.beta ? 1.5 : 1.0), p.beta = static_cast<T>(c.beta ? -0.5 : 0.0);
  p.k_per_split = per_split * Cfg::kBK;
  p.split_stride = c_elems;
  p.tiles_m = (c.m + Cfg::kBM - 1) / Cfg::kBM, p.tiles_n = (c.n + Cfg::kBN - 1) / Cfg::kBN;
  p.tile_offset = 0;
  const dim3 grid(static_cast<unsigned>(p.tiles_m * p.tiles_n), 1, static_cast<unsigned>(c.splits));
  const auto run = [&](auto kernel) { emu::launch(grid, dim3(Cfg::kThreads), [&] { kernel(p); }); };
  // Every copy reads inside the operands' rows: not before their first element, not in the
  // padding between a row's last element and the next row, not past the last element.
  emu::g_readable = {
      {reinterpret_cast<const unsigned char*>(a), a_outer, static_cast<long>(a_inner * sizeof(T)), static_cast<long>(lda * sizeof(T))},
      {reinterpret_cast<const unsigned char*>(b), b_outer, static_cast<long>(b_inner * sizeof(T)), static_cast<long>(ldb * sizeof(T))}};
  emu::g_storage = {{reinterpret_cast<const unsigned char*>(a_store.data()),
                     reinterpret_cast<const unsigned char*>(a_store.data() + a_store.size())},
                    {reinterpret_cast<const unsigned char*>(b_store.data()),
                     reinterpret_cast<const unsigned char*>(b_store.data() + b_store.size())}};
  emu::g_bad_reads = 0;
  emu::g_check_reads = true;
  if constexpr (kIsSimt<Cfg>) {
    d::with_simt_kernel<T, typename Cfg::Base>(p, run);  // the launcher's pick, realigned rows included
  } else if (c.a_kcontig) {
    if (c.b_kcontig) run(kernel_of<Cfg, true, true>());
    else run(kernel_of<Cfg, true, false>());
  } else {
    if (c.b_kcontig) run(kernel_of<Cfg, false, true>());
    else run(kernel_of<Cfg, false, false>());
  }
  emu::g_check_reads = false;
  emu::g_readable.clear();
  emu::g_storage.clear();

  // Double: the DMMA's IEEE sums. Float: the split leaves about 5 units of 2^-22 of each |term|
  // (big to nearest, small truncated, small x small dropped), the MMA's rounded step sums one
  // more, the FP32 running sum k/64: (8 + k/8) units of 2^-22 of the sum of |terms| keeps twice
  // that and bounds the FMA path of a tile that is not finite (k/4 units) to k = 64.
  const double rel = std::is_same_v<T, double> ? 1e-14 : (8.0 + c.k / 8.0) * std::ldexp(1.0, -22);
  int wrong = 0, padding = 0;
  for (int z = 0; z < c.splits; ++z) {
    const int k_begin = z * p.k_per_split, k_end = std::min(c.k, k_begin + p.k_per_split);
    for (int i = 0; i < c.m; ++i)
      for (int j = 0; j < ldc; ++j) {
        const double got = out[z * c_elems + i * ldc + j];
        if (j >= c.n) {
          padding += got != static_cast<double>(kPoison);
          continue;
        }
        long double want = 0, scale = 0;
        for (int kk = k_begin; kk < k_end; ++kk) {
          const long double term = static_cast<long double>(A(i, kk)) * B(kk, j);
          want += term;
          scale += std::fabs(term);
        }
        if (c.beta) want = 1.5L * want - 0.5L * c0[i * ldc + j], scale = 1.5L * scale + 0.5L;
        const bool ok = std::isfinite(static_cast<double>(want))
                            ? std::fabs(static_cast<double>(want) - got) <= rel * static_cast<double>(scale) + 1e-300
                            : (std::isnan(static_cast<double>(want)) ? std::isnan(got) : got == static_cast<double>(want));
        if (!ok) {
          if (wrong < 5) UNSCOPED_INFO("C(" << i << ", " << j << ") slice " << z << ": " << got << " want " << static_cast<double>(want));
          ++wrong;
        }
      }
  }
  CHECK(wrong == 0);
  CHECK(padding == 0);
  if (emu::g_bad_reads != 0) UNSCOPED_INFO(emu::g_first_bad_read);
  CHECK(emu::g_bad_reads == 0);
}

/// The shapes every configuration runs, in all four layouts: ragged tiles in m and n, k past the
/// ring of stages three times and ragged, k below one MMA k-step, one element, k slices that end
/// mid-tile, beta's read of C, and blocks that lie inside the product (the copies without bounds).
/// Float tiles (mma.sync) also run rows without 16-byte copies and a tile that is not finite.
template <class Cfg>
void check_config() {
  constexpr int BM = Cfg::kBM, BN = Cfg::kBN, BK = Cfg::kBK;
  constexpr bool kFloat = std::is_same_v<typename Cfg::Element, float>;
  const int deep = BK * (3 * Cfg::kStages + 1) + 5;
  int r = 0;
  for (bool ak : {true, false})
    for (bool bk : {true, false}) {
      check<Cfg>({BM + 3, BN - 1, deep, ak, bk, 1, false});
      check<Cfg>({BM - 5, 2 * BN + 1, 7, ak, bk, 1, r % 2 == 0});
      check<Cfg>({1, 1, 1, ak, bk, 1, r % 2 == 1});
      check<Cfg>({37, BN + 9, 6 * BK + 3, ak, bk, 3, false});  // slices of 2, 2 and 2.x k tiles
      check<Cfg>({BM, BN, 2 * BK, ak, bk, 1, true});
      // Blocks inside the product copy their whole k tiles without bounds, then the rest with
      // them: an inside block beside edge blocks, and inside blocks in two k slices.
      check<Cfg>({BM + 3, BN, deep, ak, bk, 1, r % 2 == 0});
      check<Cfg>({BM, BN, deep, ak, bk, 2, false});
      if constexpr (kFloat) {
        check<Cfg>({BM + 1, BN + 5, 3 * BK + 1, ak, bk, 1, r % 2 == 1, false});
        check<Cfg>({2 * BM - 1, BN + 2, BK + 9, ak, bk, 1, r % 2 == 0, r % 2 == 0, true});  // k <= 64
        // Rows off 16-byte chunks at every start and length mod 16 bytes, in two k slices (the
        // second starts mid-row): the realigned copies of the narrow SIMT tiles.
        check<Cfg>({3 * BM + 5, 2 * BN + 3, 5 * BK + 3, ak, bk, 2, false, false, false, 1 + r % 3, 1 + (r + 1) % 3});
        check<Cfg>({BM + 7, BN - 3, 2 * BK + 1, ak, bk, 1, r % 2 == 0, false, false, 3 - r % 3, 3 - (r + 2) % 3});
      }
      ++r;
    }
}

/// The narrow SIMT tiles' realigned copies (gemm_copy_tile_shifted) over every start offset and
/// row length mod 16 bytes, in every layout: ragged tiles in three k slices, tiny products, and
/// one side within one tile.
template <class Cfg>
void check_realign_sweep() {
  constexpr int BM = Cfg::kBM, BN = Cfg::kBN, BK = Cfg::kBK;
  int r = 0;
  for (bool ak : {true, false})
    for (bool bk : {true, false})
      for (int off = 0; off < 4; ++off)
        for (int lx = 0; lx < 4; ++lx) {
          if (off == 0 && lx == 0) continue;  // aligned: the plain copies
          check<Cfg>({BM + 1 + r % 5, BN + 3 - r % 4, 7 * BK + 1 + r % 3, ak, bk, 3, false, false, false, off, lx});
          check<Cfg>({1 + r % 7, 2 + r % 5, 3 + r % 4, ak, bk, 1, r % 2 == 1, false, false, off, lx});
          check<Cfg>({2 * BM + 3, 5, 33, ak, bk, 2, false, false, false, off, lx});
          check<Cfg>({3, 2 * BN + 1, 35, ak, bk, 2, false, false, false, off, lx});
          ++r;
        }
  // Dense operands whose rows are not whole chunks (ld = their length, storage ending on the
  // last element): a row's last chunk is cut, and past the last row there is nothing.
  for (bool ak : {true, false})
    for (bool bk : {true, false})
      for (int off = 0; off < 4; ++off) {
        check<Cfg>({BM + 1 + off, BN + 3 - off, 7 * BK + 1 + 2 * off, ak, bk, 3, false, false, false, off, -1});
        check<Cfg>({2 * BM + 3, 5 + off, 33 + 2 * off, ak, bk, off % 2 == 1 ? 1 : 2, off % 2 == 1, false, false, off, -1});
      }
}

}  // namespace

TEST_CASE("emulated DMMA: 128x128x32, eight warps of 64x32, m16n8k8 (four k-steps a tile)", "[gemm][emulation]") {
  check_config<d::DmmaPipe128x128x32k8>();
}

TEST_CASE("emulated DMMA: 128x128x16, sixteen warps of 32x32, m16n8k4", "[gemm][emulation]") {
  check_config<d::DmmaPipe128x128k4w16>();
}

TEST_CASE("emulated DMMA: 64x64x16 (m16n8k8) and 128x64x16 (m16n8k4, eight warps, two CTAs an SM)", "[gemm][emulation]") {
  check_config<d::DmmaPipe64x64k8>();
  check_config<d::DmmaPipe128x64k4w8>();
}

TEST_CASE("emulated 3xTF32: the short-k tile 32x32x32, and 32x64x32 and 64x32x32 (warp tiles of one MMA row or two)",
          "[gemm][emulation]") {
  check_config<d::Tf32x32x32>();
  check_config<d::Tf32x32x64>();
  check_config<d::Tf32x64x32>();
}

// The whole-tile loop's other tiles differ from these in their shapes only; the fast split
// (tf32x3f) only in how small is rounded: the GPU's tests compare them bit for bit.
TEST_CASE("emulated 3xTF32: the row loop with ldmatrix (128x64x32, two CTAs an SM)", "[gemm][emulation]") {
  check_config<d::Tf32r128x64b2>();
}

// The CUDA-core tiles (gemm_simt_kernel): the narrow ones, whose warps are 8 x 4 threads (n <=
// 16; A's tile [m][k] where A is k-contiguous) or whose 16-wide operand tiles have fewer 16-byte
// chunks than the block has threads, and the 64x64 one of 4 x 8.
TEST_CASE("emulated SIMT: the narrow tiles 128x16x16 and 16x128x16, and 64x64x16", "[gemm][emulation]") {
  check_config<Simt<d::SimtTall, float>>();
  check_config<Simt<d::SimtShort, float>>();
  check_config<Simt<d::SimtSmall, float>>();
  check_realign_sweep<Simt<d::SimtTall, float>>();
  check_realign_sweep<Simt<d::SimtShort, float>>();
}

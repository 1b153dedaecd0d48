// The pipelined DMMA kernel (gemm_dmma_kernel, kernels/gemm_dmma.cuh) run on the CPU through the
// CUDA emulation (expr_emu/): a block's threads are host threads, __syncthreads and the MMA
// (emu::mma_m16n8_f64: PTX's fragment layouts, one warp barrier) synchronise as on the GPU, and
// cp.async is a synchronous copy with its zero fill. That checks the main loop's bookkeeping
// (stages, the ring of k tiles, the fragment buffers, the barrier's place, the split of a tile's
// copies over its k-steps), the bounds and zero fill of ragged m, n and k, k slices (split-K
// partials at c + z * split_stride) and the epilogue (alpha, beta, C read only when asked) in every
// operand layout, for m16n8k4 and k8 tiles of 2 to 4 k-steps; against a long-double product, every
// element of C's padding poisoned and checked. Not checked here: timing-dependent hazards
// (compute-sanitizer's racecheck on the GPU) and the cluster sum (no clusters in the emulation).

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "support/catch.hpp"

#include "emu_cuda.hpp"
#include "emu_image.hpp"

[[noreturn]] inline void __trap() { std::abort(); }
int __syncthreads_or(int);  // gemm_mma.cuh's kernel needs it; declared only: these kernels never call it

#include "kernels/gemm_dmma.cuh"

namespace d = devmat::detail;

namespace {
using emu::rng;

struct Case {
  int m, n, k;
  bool a_kcontig, b_kcontig;  // op(A) = A with A m x k row-major, else A stored k x m; B likewise
  int splits;                 // k slices (gridDim.z), each a whole number of k tiles
  bool beta;                  // C = 1.5 * AB - 0.5 * C instead of C = AB
};

/// Runs one case on configuration Cfg and checks every element of C and of its padding.
template <class Cfg>
void check(const Case& c) {
  CAPTURE(Cfg::kBM, Cfg::kBN, Cfg::kBK, Cfg::kThreads, Cfg::kMmaK, c.m, c.n, c.k, c.a_kcontig, c.b_kcontig,
          c.splits, c.beta);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  // Operands with rows of an even number of doubles (16-byte copies) and padding past them.
  const int a_outer = c.a_kcontig ? c.m : c.k, a_inner = c.a_kcontig ? c.k : c.m;
  const int b_outer = c.b_kcontig ? c.n : c.k, b_inner = c.b_kcontig ? c.k : c.n;
  const long long lda = (a_inner + 1) / 2 * 2 + 2, ldb = (b_inner + 1) / 2 * 2 + 4;
  std::vector<double> a(static_cast<std::size_t>(a_outer) * lda + 2), b(static_cast<std::size_t>(b_outer) * ldb + 2);
  for (double& v : a) v = dist(rng());
  for (double& v : b) v = dist(rng());
  const auto A = [&](int i, int kk) { return c.a_kcontig ? a[i * lda + kk] : a[kk * lda + i]; };
  const auto B = [&](int kk, int j) { return c.b_kcontig ? b[j * ldb + kk] : b[kk * ldb + j]; };

  const long long ldc = (c.n + 1) / 2 * 2 + 2;
  const long long c_elems = static_cast<long long>(c.m) * ldc;
  const double kPoison = -7.25e300;
  // One output per slice (split-K partials), poisoned; with beta, slice 0 (the only one) holds C.
  std::vector<double> out(static_cast<std::size_t>(c_elems * c.splits), kPoison), c0;
  if (c.beta) {
    for (int i = 0; i < c.m; ++i)
      for (int j = 0; j < c.n; ++j) out[i * ldc + j] = dist(rng());
    c0 = out;
  }

  const int k_tiles = (c.k + Cfg::kBK - 1) / Cfg::kBK;
  const int per_split = (k_tiles + c.splits - 1) / c.splits;
  REQUIRE((k_tiles + per_split - 1) / per_split == c.splits);  // every slice has k tiles
  d::GemmArgs<double> p{};
  p.m = c.m, p.n = c.n, p.k = c.k;
  p.a = {a.data(), lda, c.a_kcontig, true};
  p.b = {b.data(), ldb, c.b_kcontig, true};
  p.c = out.data(), p.ldc = ldc, p.c_vec = true;
  p.read_c = c.beta;
  p.alpha = c.beta ? 1.5 : 1.0, p.beta = c.beta ? -0.5 : 0.0;
  p.k_per_split = per_split * Cfg::kBK;
  p.split_stride = c_elems;
  p.tiles_m = (c.m + Cfg::kBM - 1) / Cfg::kBM, p.tiles_n = (c.n + Cfg::kBN - 1) / Cfg::kBN;
  p.tile_offset = 0;
  const dim3 grid(static_cast<unsigned>(p.tiles_m * p.tiles_n), 1, static_cast<unsigned>(c.splits));
  const auto run = [&](auto kernel) { emu::launch(grid, dim3(Cfg::kThreads), [&] { kernel(p); }); };
  if (c.a_kcontig) {
    if (c.b_kcontig) run(&d::gemm_dmma_kernel<Cfg, true, true>);
    else run(&d::gemm_dmma_kernel<Cfg, true, false>);
  } else {
    if (c.b_kcontig) run(&d::gemm_dmma_kernel<Cfg, false, true>);
    else run(&d::gemm_dmma_kernel<Cfg, false, false>);
  }

  int wrong = 0, padding = 0;
  for (int z = 0; z < c.splits; ++z) {
    const int k_begin = z * p.k_per_split, k_end = std::min(c.k, k_begin + p.k_per_split);
    for (int i = 0; i < c.m; ++i)
      for (int j = 0; j < ldc; ++j) {
        const double got = out[z * c_elems + i * ldc + j];
        if (j >= c.n) {
          padding += got != kPoison;
          continue;
        }
        long double want = 0, scale = 0;
        for (int kk = k_begin; kk < k_end; ++kk) {
          const long double term = static_cast<long double>(A(i, kk)) * B(kk, j);
          want += term;
          scale += std::fabs(term);
        }
        if (c.beta) want = 1.5L * want - 0.5L * c0[i * ldc + j], scale = 1.5L * scale + 0.5L;
        if (!(std::fabs(static_cast<double>(want - got)) <= 1e-14 * static_cast<double>(scale) + 1e-300)) {
          if (wrong < 5) UNSCOPED_INFO("C(" << i << ", " << j << ") slice " << z << ": " << got << " want " << static_cast<double>(want));
          ++wrong;
        }
      }
  }
  CHECK(wrong == 0);
  CHECK(padding == 0);
}

/// The shapes every configuration runs, in all four layouts: ragged tiles in m and n, k past the
/// ring of stages three times and ragged, k below one MMA k-step, one element, k slices that end
/// mid-tile, beta's read of C, and blocks that lie inside the product (the copies without bounds).
template <class Cfg>
void check_config() {
  constexpr int BM = Cfg::kBM, BN = Cfg::kBN, BK = Cfg::kBK;
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
      ++r;
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

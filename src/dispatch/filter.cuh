// Launchers of the image filters (kernels/filter.cuh): tile grids (grid.y capped, the kernels
// loop over the rest), shared-memory sizes, one instantiation of filter2d per odd kernel height.
#pragma once

#include "dispatch/common.hpp"
#include "dispatch/launch.cuh"
#include "dispatch/tile_grid.hpp"
#include "kernels/filter.cuh"

#include <devmat/error.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace devmat::detail {

inline const dim3 kBlock(kFilterThreadsX, kFilterThreadsY);

template <int KH>
void launch_filter2d(cudaStream_t s, const float* img, Index ld, float* out, Index rows, Index cols, const float* w,
                     int kw) {
  unsigned tiles_y = 0;
  const dim3 grid = tile_grid(rows, cols, kF2dTileW, kF2dTileH, &tiles_y);
  const std::size_t smem = sizeof(float) * (KH * kw + (kF2dTileH + KH - 1) * (kF2dTileW + kw - 1));  // <= 42 KiB
  launch(&filter2d_kernel<KH>, grid, kBlock, smem, s, img, ld, out, rows, cols, w, kw, tiles_y);
}

/// Launches filter2d_kernel<2 I + 1> for the I with kh == 2 I + 1: one instantiation per odd
/// kernel height.
template <int... I>
void dispatch_filter2d(std::integer_sequence<int, I...>, int kh, cudaStream_t s, const float* img, Index ld,
                       float* out, Index rows, Index cols, const float* w, int kw) {
  const bool found =
      ((kh == 2 * I + 1 ? (launch_filter2d<2 * I + 1>(s, img, ld, out, rows, cols, w, kw), true) : false) || ...);
  if (!found) throw std::logic_error("devmat: filter2d: no kernel for this height");
}

/// Whether launch_filter2d_small has a kernel for a kh x kw filter (squares of side 3, 5, 7).
inline bool filter2d_small(Index kh, Index kw) { return kh == kw && (kh == 3 || kh == 5 || kh == 7); }

/// Which small filter2d kernel: filter2d_small_kernel (shared-memory tile, the default) or
/// filter2d_direct_kernel (no shared memory; sides 3 and 5) with its output rows a thread. The
/// benchmark (bench_image_small) times each beside the default.
struct Filter2dSmallConfig {
  bool direct = false;       // filter2d_direct_kernel
  int rows_per_thread = 8;   // direct: 4, 8 or 16
};

/// The default per side: the direct kernel with 4 rows a thread for 3 and 5 (run S3, H200,
/// 4096^2, NPP = 1: 3x3 0.838 -> 1.016, 5x5 1.082 -> 1.168), the shared-memory tile for 7.
inline Filter2dSmallConfig filter2d_small_default(int k) {
  return k == 7 ? Filter2dSmallConfig{} : Filter2dSmallConfig{true, 4};
}

/// out (ld_out) = img correlated with the k x k device weights w (filter2d_small(k, k)),
/// register-blocked (filter2d_small_kernel, or filter2d_direct_kernel where cfg.direct).
inline void launch_filter2d_small(cudaStream_t s, const float* img, Index ld, float* out, Index ld_out, Index rows,
                                  Index cols, const float* w, int k, Filter2dSmallConfig cfg = {}) {
  if (rows == 0 || cols == 0) return;
  if (cfg.direct) {
    if (k != 3 && k != 5) throw std::logic_error("devmat: filter2d: no direct kernel of side " + std::to_string(k));
    with_rows_per_thread(cfg.rows_per_thread, [&](auto rc) {
      constexpr int R = decltype(rc)::value;
      unsigned tiles_y = 0;
      const dim3 grid = tile_grid(rows, cols, kF2dDirectTileW, kF2dDirectTileH<R>, &tiles_y);
      if (k == 3) launch(&filter2d_direct_kernel<3, R>, grid, kBlock, 0, s, img, ld, out, ld_out, rows, cols, w, tiles_y);
      else launch(&filter2d_direct_kernel<5, R>, grid, kBlock, 0, s, img, ld, out, ld_out, rows, cols, w, tiles_y);
    });
    return;
  }
  unsigned tiles_y = 0;
  const dim3 grid = tile_grid(rows, cols, kF2sTileW, kF2sTileH, &tiles_y);
  switch (k) {
    case 3: launch(&filter2d_small_kernel<3>, grid, kBlock, 0, s, img, ld, out, ld_out, rows, cols, w, tiles_y); break;
    case 5: launch(&filter2d_small_kernel<5>, grid, kBlock, 0, s, img, ld, out, ld_out, rows, cols, w, tiles_y); break;
    case 7: launch(&filter2d_small_kernel<7>, grid, kBlock, 0, s, img, ld, out, ld_out, rows, cols, w, tiles_y); break;
    default: throw std::logic_error("devmat: filter2d: no small kernel of side " + std::to_string(k));
  }
}

/// Normalised Gaussian weights exp(-d^2 / (2 sigma^2)), d = -radius..radius, in double.
inline std::vector<float> gaussian_weights(double sigma, int radius) {
  std::vector<double> w(2 * radius + 1);
  double sum = 0;
  for (int k = 0; k <= 2 * radius; ++k) {
    const double d = (k - radius) / sigma;  // +-inf for a denormal sigma: weight 0 off-centre
    w[k] = k == radius ? 1.0 : std::exp(-0.5 * d * d);
    sum += w[k];
  }
  std::vector<float> out(w.size());
  for (std::size_t k = 0; k < w.size(); ++k) out[k] = static_cast<float>(w[k] / sum);
  return out;
}

template <bool kRows>
void launch_gauss_pass(cudaStream_t s, const float* in, Index ld, float* out, Index rows, Index cols, const GaussTaps& taps,
                       std::size_t n_taps, int radius) {
  using P = GaussPass<kRows>;
  unsigned tiles_y = 0;
  const dim3 grid = tile_grid(rows, cols, P::kTileW, P::kTileH, &tiles_y);
  const std::size_t halo = 2 * static_cast<std::size_t>(radius);
  const std::size_t smem = sizeof(float) * (n_taps + (P::kTileH + (kRows ? 0 : halo)) * (P::kTileW + (kRows ? halo : 0)));
  launch(&gauss_pass_kernel<kRows>, grid, kBlock, smem, s, in, ld, out, rows, cols, taps, radius, tiles_y);
}

inline void launch_gaussian_tiled(cudaStream_t s, const float* in, Index ld, float* tmp, float* out, Index rows, Index cols,
                           const std::vector<float>& w, int radius) {
  GaussTaps taps{};
  std::copy(w.begin(), w.end(), taps.w);
  const std::size_t n_taps = w.size();
  launch_gauss_pass<true>(s, in, ld, tmp, rows, cols, taps, n_taps, radius);     // <= 8.5 KiB of shared memory
  launch_gauss_pass<false>(s, tmp, cols, out, rows, cols, taps, n_taps, radius);  // <= 25 KiB
}

inline void launch_gaussian_global(cudaStream_t s, const float* in, Index ld, float* tmp, float* out, Index rows, Index cols,
                            const float* d_w, int radius) {
  const unsigned long long n = static_cast<unsigned long long>(rows) * static_cast<unsigned long long>(cols);
  const unsigned blocks = static_cast<unsigned>(std::min<unsigned long long>(ceil_div(n, kFilterThreads), 1u << 20));
  launch(&gauss_pass_global_kernel, blocks, kFilterThreads, 0, s, in, ld, tmp, rows, cols, d_w, radius, true);
  launch(&gauss_pass_global_kernel, blocks, kFilterThreads, 0, s, tmp, cols, out, rows, cols, d_w, radius, false);
}

inline void launch_sobel(cudaStream_t s, const float* in, Index ld, float* out, Index rows, Index cols) {
  unsigned tiles_y = 0;
  const dim3 grid = tile_grid(rows, cols, kSobelTileW, kSobelTileH, &tiles_y);
  launch(&sobel_kernel, grid, kBlock, 0, s, in, ld, out, rows, cols, tiles_y);
}

}  // namespace devmat::detail

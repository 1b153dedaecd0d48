// Launchers of the candidate kernels (kernels/image_next.cuh), raw pointers in, a dense or
// strided output the caller allocated. Not used by the public functions yet: the benchmark and
// the tests call them directly. Preconditions (checked by the public functions that would
// dispatch here): rows, cols > 0; box K and morph K odd in 3..7; u8 t floored and clamped to
// -1..255.
#pragma once

#include "dispatch/common.hpp"
#include "dispatch/launch.cuh"
#include "dispatch/tile_grid.hpp"
#include "kernels/image_next.cuh"

#include <devmat/error.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace devmat::detail {

template <int N, class F>
void launch_stream_u8(cudaStream_t s, const StreamArgs<N>& a, std::uint8_t* out, Index ld_out, Index rows, Index cols,
                      F f) {
  if (rows == 0 || cols == 0) return;
  // ceil(cols / 16) + 1 chunk slots a row (stream_u8_kernel: chunks aligned on the output).
  const unsigned long long n = static_cast<unsigned long long>(rows) * (ceil_div(static_cast<unsigned long long>(cols), 16ull) + 1);
  const unsigned blocks = static_cast<unsigned>(std::min<unsigned long long>(ceil_div(n, kStreamThreads), 1u << 20));
  launch(&stream_u8_kernel<N, F>, dim3(blocks), dim3(kStreamThreads), 0, s, a, out, ld_out, rows, cols, f);
}

/// out = threshold(img, t, maxval, kind) for kind binary .. to_zero_inv; t already floored and
/// clamped to -1..255 (as threshold() does), maxval saturated.
inline void launch_threshold_u8_next(cudaStream_t s, const std::uint8_t* img, Index ld, std::uint8_t* out, Index ld_out,
                                     Index rows, Index cols, int t, std::uint8_t maxval, int kind) {
  const unsigned t8 = t < 0 ? 0u : static_cast<unsigned>(t);
  const ThresholdWord f{t8 * 0x01010101u, static_cast<unsigned>(maxval) * 0x01010101u, t, kind};
  StreamArgs<1> a{};
  a.in[0] = img;
  a.ld[0] = ld;
  launch_stream_u8(s, a, out, ld_out, rows, cols, f);
}

/// out = rgb_to_gray(r, g, b), u8 planes.
inline void launch_rgb_to_gray_u8_next(cudaStream_t s, const std::uint8_t* r, Index ld_r, const std::uint8_t* g,
                                       Index ld_g, const std::uint8_t* b, Index ld_b, std::uint8_t* out, Index ld_out,
                                       Index rows, Index cols) {
  StreamArgs<3> a{};
  a.in[0] = r;
  a.in[1] = g;
  a.in[2] = b;
  a.ld[0] = ld_r;
  a.ld[1] = ld_g;
  a.ld[2] = ld_b;
  launch_stream_u8(s, a, out, ld_out, rows, cols, GrayWord{});
}

/// The fused neighbourhood kernels' tile grid for R output rows a thread.
template <int R>
dim3 nbr_grid(Index rows, Index cols, unsigned* tiles_y) {
  return tile_grid(rows, cols, kNbrTileW, kNbrTileH<R>, tiles_y);
}

/// Launches kernel<R>(...) for r = R among 4, 8, 16 (rows a thread).
template <class Launch>
void with_rows_per_thread(int r, Launch&& l) {
  switch (r) {
    case 4: l(std::integral_constant<int, 4>{}); break;
    case 8: l(std::integral_constant<int, 8>{}); break;
    case 16: l(std::integral_constant<int, 16>{}); break;
    default: throw std::logic_error("devmat: fused neighbourhood kernels: rows a thread must be 4, 8 or 16");
  }
}

/// out = erode (kErode) or dilate of u8 img by a k x k square, k in {3, 5, 7}, fused; r rows a
/// thread (4, 8 or 16).
template <bool kErode>
void launch_morph_u8_next(cudaStream_t s, const std::uint8_t* img, Index ld, std::uint8_t* out, Index ld_out, Index rows,
                          Index cols, int k, int r = kNbrRows) {
  if (rows == 0 || cols == 0) return;
  with_rows_per_thread(r, [&](auto rc) {
    constexpr int R = decltype(rc)::value;
    unsigned tiles_y = 0;
    const dim3 grid = nbr_grid<R>(rows, cols, &tiles_y), block(kNbrThreadsX, kNbrThreadsY);
    switch (k) {
      case 3: launch(&morph_u8_fused_kernel<3, kErode, R>, grid, block, 0, s, img, ld, out, ld_out, rows, cols, tiles_y); break;
      case 5: launch(&morph_u8_fused_kernel<5, kErode, R>, grid, block, 0, s, img, ld, out, ld_out, rows, cols, tiles_y); break;
      case 7: launch(&morph_u8_fused_kernel<7, kErode, R>, grid, block, 0, s, img, ld, out, ld_out, rows, cols, tiles_y); break;
      default: throw std::logic_error("devmat: morph_u8_fused: no kernel for side " + std::to_string(k));
    }
  });
}

/// out = box_filter(img, k, k) (normalised, u8), k in {3, 5}, fused; r rows a thread (4, 8, 16).
inline void launch_box_u8_next(cudaStream_t s, const std::uint8_t* img, Index ld, std::uint8_t* out, Index ld_out,
                               Index rows, Index cols, int k, int r = kNbrRows) {
  if (rows == 0 || cols == 0) return;
  with_rows_per_thread(r, [&](auto rc) {
    constexpr int R = decltype(rc)::value;
    unsigned tiles_y = 0;
    const dim3 grid = nbr_grid<R>(rows, cols, &tiles_y), block(kNbrThreadsX, kNbrThreadsY);
    switch (k) {
      case 3: launch(&box_u8_fused_kernel<3, R>, grid, block, 0, s, img, ld, out, ld_out, rows, cols, tiles_y); break;
      case 5: launch(&box_u8_fused_kernel<5, R>, grid, block, 0, s, img, ld, out, ld_out, rows, cols, tiles_y); break;
      default: throw std::logic_error("devmat: box_u8_fused: no kernel for side " + std::to_string(k));
    }
  });
}

/// out = filter2d(img, w) for a 5x5 w (row-major host weights), register-blocked.
inline void launch_filter2d_5x5_next(cudaStream_t s, const float* img, Index ld, float* out, Index ld_out, Index rows,
                                     Index cols, const float* h_w) {
  if (rows == 0 || cols == 0) return;
  Taps5x5 taps{};
  std::copy(h_w, h_w + 25, taps.w);
  unsigned tiles_y = 0;
  const dim3 grid = tile_grid(rows, cols, kF5TileW, kF5TileH, &tiles_y);
  launch(&filter2d_5x5_kernel, grid, dim3(kF5ThreadsX, kF5ThreadsY), 0, s, img, ld, out, ld_out, rows, cols, taps, tiles_y);
}

}  // namespace devmat::detail

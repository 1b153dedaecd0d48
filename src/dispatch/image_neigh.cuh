// Launchers of the box filter and the integral image (kernels/image_neigh.cuh).
#pragma once

#include "dispatch/common.hpp"
#include "dispatch/launch.cuh"
#include "dispatch/tile_grid.hpp"
#include "kernels/image_neigh.cuh"

#include <devmat/error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace devmat::detail {

/// One box pass (kRows: along rows) of side k, sums in Acc, written as Out times `scale` (float)
/// or over `divisor` (u8; see box_store).
template <class In, class Acc, class Out, bool kRows>
void launch_box_pass(cudaStream_t s, const In* in, Index ld_in, Out* out, Index ld_out, Index rows, Index cols, int k,
                     double scale, int divisor) {
  unsigned tiles_y = 0;
  const dim3 grid = kRows ? tile_grid(rows, cols, kBoxAlong, kBoxAcross, &tiles_y)
                          : tile_grid(rows, cols, kBoxAcross, kBoxAlong, &tiles_y);
  const std::size_t len_in = kBoxAlong + static_cast<std::size_t>(k) - 1;
  const std::size_t smem = sizeof(Acc) * kBoxAcross * ((len_in | 1) + kBoxAlong + 1);  // <= 131 KiB
  const auto kernel = &box_pass_kernel<In, Acc, Out, kRows>;
  if (smem > 48 * 1024)
    DEVMAT_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  launch(kernel, grid, dim3(kBoxThreads), smem, s, in, ld_in, out, ld_out, rows, cols, k, scale, divisor, tiles_y);
}

/// out ((rows + 1) x (cols + 1), ld_out) = the integral image of `in` (rows x cols, ld_in).
template <class In, class Acc>
void launch_integral(cudaStream_t s, const In* in, Index ld_in, Acc* out, Index ld_out, Index rows, Index cols) {
  DEVMAT_CUDA_TRY(cudaMemsetAsync(out, 0, sizeof(Acc) * static_cast<std::size_t>(cols + 1), s));  // row 0
  if (rows == 0) return;
  const unsigned long long warps_per_block = kIntegralThreads / 32;
  const unsigned row_blocks =
      static_cast<unsigned>(std::min<unsigned long long>(ceil_div(static_cast<unsigned long long>(rows), warps_per_block), 1u << 20));
  launch(&integral_rows_kernel<In, Acc>, dim3(row_blocks), dim3(kIntegralThreads), 0, s, in, ld_in, out, ld_out, rows, cols);
  if (cols == 0) return;
  const unsigned col_blocks = static_cast<unsigned>(ceil_div(static_cast<unsigned long long>(cols), 32));
  launch(&integral_cols_kernel<Acc>, dim3(col_blocks), dim3(32, kIntegralSegments), 0, s, out, ld_out, rows, cols);
}


/// The u8 box kernels of sides 3 and 5 (box_u8_small_kernel, box_u8_band_kernel,
/// box_u8_slide_kernel with 1 or 2 words a thread): which one, and its output rows a thread.
/// The benchmark (bench_image_small) times each beside the default.
struct BoxU8Config {
  bool band;  // box_u8_band_kernel (16 pixels a thread) rather than box_u8_small_kernel (4)
  int rows_per_thread;  // 4, 8 or 16
  bool slide = false;   // box_u8_slide_kernel (4 pixels a thread, sliding column sums; band ignored)
  int words = 1;        // the sliding kernel: words of 4 pixels a thread (1 or 2: 8 pixels, 4 loads a row, not 6)
  bool vec16 = false;   // box_u8_vec16_kernel (16 pixels a thread, uint4 loads and stores; the others ignored)
  int min_blocks = 1;   // box_u8_vec16_kernel's kMinBlocks: 1 (registers free) or 6 (at most 80)
};

/// Output rows a thread of box_u8_vec16_kernel as the default for sides 3 and 5 (4, 8 or 16),
/// 0: the defaults below; kBoxU8Vec16MinBlocks its kMinBlocks (1 or 6). bench_image_small times
/// them as "ours-vec16-r4/r8/r16" (1) and "ours-vec16m6-r8/r16" (6).
inline constexpr int kBoxU8Vec16Rows = 4;  // run U2a: 3x3 1.11, 5x5 1.39 of NPP (the sliding kernel 0.72, 0.90)
inline constexpr int kBoxU8Vec16MinBlocks = 1;

/// Whether launch_box_u8_small has a kernel for a normalised kr x kc box.
inline bool box_u8_small(int kr, int kc) { return (kr == 3 || kr == 5) && (kc == 3 || kc == 5); }

/// The default: box_u8_vec16_kernel where kBoxU8Vec16Rows is set; else (run S3, H200, 4096^2, NPP
/// = 1) 3 rows the 4-pixel kernel with 8 rows a thread (0.724; the sliding kernel 0.705), 5 rows
/// the sliding kernel with 8 (0.935, against 0.781).
inline BoxU8Config box_u8_default(int kr) {
  if (kBoxU8Vec16Rows != 0) return BoxU8Config{false, kBoxU8Vec16Rows, false, 1, true, kBoxU8Vec16MinBlocks};
  return kr == 3 ? BoxU8Config{false, 8} : BoxU8Config{false, 8, true};
}

/// out (ld_out) = the normalised kr x kc box mean of u8 `in` (sides 3 or 5: box_u8_small), one
/// fused pass, as the two passes of launch_box_pass compute it.
inline void launch_box_u8_small(cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out,
                                Index rows, Index cols, int kr, int kc, BoxU8Config cfg) {
  if (rows == 0 || cols == 0) return;
  with_rows_per_thread(cfg.rows_per_thread, [&](auto rc) {
    constexpr int R = decltype(rc)::value;
    unsigned tiles_y = 0;
    with_small_sides(kr, kc, [&](auto kr_c, auto kc_c) {
      constexpr int KR = decltype(kr_c)::value, KC = decltype(kc_c)::value;
      if (cfg.vec16) {
        if (cfg.min_blocks != 1 && cfg.min_blocks != 6)
          throw std::logic_error("devmat: box_u8_vec16: min_blocks must be 1 or 6");
        const dim3 grid = tile_grid(rows, cols, kBandTileW, kBandTileH<R>, &tiles_y);
        launch(cfg.min_blocks == 6 ? &box_u8_vec16_kernel<KR, KC, R, 6> : &box_u8_vec16_kernel<KR, KC, R, 1>, grid,
               dim3(kBandThreadsX, kBandThreadsY), 0, s, in, ld, out, ld_out, rows, cols, tiles_y);
      } else if (cfg.slide && cfg.words == 2) {
        const dim3 grid = tile_grid(rows, cols, 2 * kNbrTileW, kNbrTileH<R>, &tiles_y);
        launch(&box_u8_slide_kernel<KR, KC, R, 2>, grid, dim3(kNbrThreadsX, kNbrThreadsY), 0, s, in, ld, out, ld_out, rows,
               cols, tiles_y);
      } else if (cfg.slide) {
        const dim3 grid = tile_grid(rows, cols, kNbrTileW, kNbrTileH<R>, &tiles_y);
        launch(&box_u8_slide_kernel<KR, KC, R>, grid, dim3(kNbrThreadsX, kNbrThreadsY), 0, s, in, ld, out, ld_out, rows,
               cols, tiles_y);
      } else if (cfg.band) {
        const dim3 grid = tile_grid(rows, cols, kBandTileW, kBandTileH<R>, &tiles_y);
        launch(&box_u8_band_kernel<KR, KC, R>, grid, dim3(kBandThreadsX, kBandThreadsY), 0, s, in, ld, out, ld_out, rows,
               cols, tiles_y);
      } else {
        const dim3 grid = tile_grid(rows, cols, kNbrTileW, kNbrTileH<R>, &tiles_y);
        launch(&box_u8_small_kernel<KR, KC, R>, grid, dim3(kNbrThreadsX, kNbrThreadsY), 0, s, in, ld, out, ld_out, rows,
               cols, tiles_y);
      }
    });
  });
}

}  // namespace devmat::detail

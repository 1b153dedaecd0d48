// Launchers of the geometry kernels (kernels/image_geometry.cuh): the per-pixel grid (grid.y
// capped, the kernel strides over the rest) and rotate90's tile grid.
#pragma once

#include "dispatch/common.hpp"
#include "dispatch/launch.cuh"
#include "kernels/image_geometry.cuh"

#include <devmat/error.hpp>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <string>

namespace devmat::detail {

constexpr unsigned kGeomMaxGridY = 65535;

/// The grid of the per-pixel kernels (geom_map_kernel, resize_area_tab_kernel) over a rows x cols
/// output: kGeomVec pixels a thread along x, grid.y capped (the kernels stride over the rest).
inline dim3 geom_map_grid(Index rows, Index cols) {
  const auto bx = ceil_div(ceil_div(static_cast<unsigned long long>(cols), kGeomVec), kGeomThreadsX);
  const auto by = std::min<unsigned long long>(ceil_div(static_cast<unsigned long long>(rows), kGeomThreadsY),
                                               kGeomMaxGridY);
  if (bx > static_cast<unsigned long long>(INT_MAX))
    throw shape_error("devmat: image of " + shape_string(rows, cols) + " is too wide");
  return dim3(static_cast<unsigned>(bx), static_cast<unsigned>(by));
}

/// out (rows x cols, dense, from the pool: 256-byte aligned) = f(y, x), on `s`.
template <class T, class F>
void launch_geom_map(cudaStream_t s, T* out, Index rows, Index cols, const F& f) {
  if (rows == 0 || cols == 0) return;
  const bool vec_ok = cols % kGeomVec == 0;
  launch(&geom_map_kernel<T, F>, geom_map_grid(rows, cols), dim3(kGeomThreadsX, kGeomThreadsY), 0, s, out, rows, cols,
         vec_ok, f);
}

/// Whether resize's INTER_AREA shrink at a non-half factor takes resize_area_tab_kernel (the
/// footprints once a block, in shared memory) rather than geom_map_kernel over ResizeArea (two
/// footprints a pixel). Identical results; bench_image_ops times both ("ours-tab").
inline constexpr bool kResizeAreaTable = true;  // run U2a: 4096 -> 1365 1.13 of NPP (per-pixel footprints 0.82)

/// out (rows x cols, dense) = the INTER_AREA shrink `f`, on `s`: resize_area_tab_kernel with
/// `table`, else geom_map_kernel (the same grid).
template <class T>
void launch_resize_area(cudaStream_t s, T* out, Index rows, Index cols, const ResizeArea<T>& f,
                        bool table = kResizeAreaTable) {
  if (!table) return launch_geom_map(s, out, rows, cols, f);
  if (rows == 0 || cols == 0) return;
  launch(&resize_area_tab_kernel<T>, geom_map_grid(rows, cols), dim3(kGeomThreadsX, kGeomThreadsY), 0, s, out, rows,
         cols, cols % kGeomVec == 0, f);
}

/// Whether resize to exactly half size reads its f32 source cache-streaming (resize_half_kernel's
/// kStreamLoads: a 4096^2 f32 source is larger than L2). bench_image_ops times both ("ours-cs").
inline constexpr bool kResizeHalfStreamF32 = true;  // run U2a: f32 4096 -> 2048 1.11 of NPP (cached loads 1.06)

/// out (rows x cols, dense) = the 2x2 means of src (2 rows x 2 cols, row stride ld)
/// (resize_half_kernel: area or linear resize to exactly half size), on `s`; stream_loads: the
/// source read cache-streaming (kStreamLoads).
template <class T>
void launch_resize_half(cudaStream_t s, const T* src, Index ld, T* out, Index rows, Index cols,
                        bool stream_loads = std::is_same_v<T, float> && kResizeHalfStreamF32) {
  if (rows == 0 || cols == 0) return;
  const auto bx = ceil_div(ceil_div(static_cast<unsigned long long>(cols), kHalfVec<T>), kGeomThreadsX);
  const auto by = std::min<unsigned long long>(ceil_div(static_cast<unsigned long long>(rows), kGeomThreadsY),
                                               kGeomMaxGridY);
  if (bx > static_cast<unsigned long long>(INT_MAX))
    throw shape_error("devmat: resize: output of " + shape_string(rows, cols) + " is too wide");
  const auto kernel = stream_loads ? &resize_half_kernel<T, true> : &resize_half_kernel<T, false>;
  launch(kernel, dim3(static_cast<unsigned>(bx), static_cast<unsigned>(by)), dim3(kGeomThreadsX, kGeomThreadsY), 0, s,
         src, ld, out, rows, cols);
}

/// out (cols x rows, dense) = in (rows x cols, row stride ld) turned a quarter counter-clockwise
/// (ccw) or clockwise.
template <class T>
void launch_rotate90(cudaStream_t s, const T* in, Index ld, T* out, Index rows, Index cols, bool ccw) {
  if (rows == 0 || cols == 0) return;
  const auto bx = ceil_div(static_cast<unsigned long long>(rows), kRotTile);  // output columns
  const auto ty = ceil_div(static_cast<unsigned long long>(cols), kRotTile);  // output rows
  if (bx > static_cast<unsigned long long>(INT_MAX) || ty > static_cast<unsigned long long>(UINT_MAX))
    throw shape_error("devmat: rotate90: image of " + shape_string(rows, cols) + " is too large");
  const dim3 grid(static_cast<unsigned>(bx), static_cast<unsigned>(std::min<unsigned long long>(ty, kGeomMaxGridY)));
  const dim3 block(kRotTile, kGeomThreadsY);
  if (ccw) launch(&rotate90_kernel<T, true>, grid, block, 0, s, in, ld, out, rows, cols, static_cast<unsigned>(ty));
  else launch(&rotate90_kernel<T, false>, grid, block, 0, s, in, ld, out, rows, cols, static_cast<unsigned>(ty));
}


/// out (rows x cols, row stride ld_out) = f over the u8 planes of `a`, 16 pixels a chunk
/// (stream_u8_kernel): threshold and rgb_to_gray on u8. chunks_per_thread: 1 (the default), 2 or
/// 4 (bench_image_small times each).
template <int N, class F>
void launch_stream_u8(cudaStream_t s, const StreamArgs<N>& a, std::uint8_t* out, Index ld_out, Index rows, Index cols,
                      const F& f, int chunks_per_thread = 1) {
  if (rows == 0 || cols == 0) return;
  // ceil(cols / 16) + 1 chunk slots a row (chunks aligned on the output's address).
  const unsigned long long n = static_cast<unsigned long long>(rows) * (ceil_div(static_cast<unsigned long long>(cols), 16ull) + 1);
  const auto run = [&](auto c) {
    constexpr int C = decltype(c)::value;
    const unsigned blocks = static_cast<unsigned>(std::min<unsigned long long>(ceil_div(n, kStreamThreads * C), 1u << 20));
    launch(&stream_u8_kernel<N, C, F>, dim3(blocks), dim3(kStreamThreads), 0, s, a, out, ld_out, rows, cols, f);
  };
  switch (chunks_per_thread) {
    case 1: run(std::integral_constant<int, 1>{}); break;
    case 2: run(std::integral_constant<int, 2>{}); break;
    case 4: run(std::integral_constant<int, 4>{}); break;
    default: throw std::logic_error("devmat: stream_u8: chunks a thread must be 1, 2 or 4");
  }
}

/// uint4s a thread of stream_flat_kernel by default, by the output's element size (bench_image_small
/// times 1, 2, 4 and 8 as threshold_trunc's "ours-flat-u<N>"): 8 for bytes, which led two of
/// the three H200 runs that timed them and tied the third (u8 4096^2, Mpix/s, u1 / u2 / u4 / u8
/// against NPP: run V1 1.494 / 1.461 / 1.403 / 1.570e6 against 1.562e6, run T5 1.342 / 1.392 /
/// 1.389 / 1.505e6 against 1.416e6, run T6 1.410 / 1.438 / 1.498 / 1.491e6 against 1.433e6); 4
/// for wider elements (f32: 4.39 / 4.40 / 4.25 / 4.29e5 in V1, within noise).
template <class T>
inline constexpr int kStreamFlatVecs = sizeof(T) == 1 ? 8 : 4;

/// Whether stream_flat_kernel can map the planes of `a` (rows x cols) into `out` (rows x cols,
/// row stride ld_out): every plane and the output dense (row stride cols, or a single row) and
/// every start 16-byte aligned (then every uint4 of the flat image lines up in all of them).
template <int N>
bool stream_flat_ok(const StreamArgs<N>& a, const void* out, Index ld_out, Index rows, Index cols) {
  const auto dense = [&](Index ld) { return rows == 1 || ld == cols; };
  bool ok = dense(ld_out) && is_aligned(out, 16);
  for (int k = 0; k < N; ++k) ok = ok && dense(a.ld[k]) && is_aligned(a.in[k], 16);
  return ok;
}

/// out[i] = f over the planes of `a`, i < n elements of T, all dense and 16-byte aligned
/// (stream_flat_ok), on `s` (stream_flat_kernel); vecs_per_thread: 1, 2, 4 or 8 uint4s a thread.
template <class T, int N, class F>
void launch_stream_flat(cudaStream_t s, const StreamArgs<N>& a, T* out, Index n, const F& f,
                        int vecs_per_thread = kStreamFlatVecs<T>) {
  if (n <= 0) return;
  const auto run = [&](auto u) {
    constexpr int U = decltype(u)::value;
    const unsigned long long n_vec = static_cast<unsigned long long>(n) / (16 / sizeof(T));
    // One block at least (the tail); past 2^20 blocks they stride.
    const unsigned blocks = static_cast<unsigned>(
        std::clamp<unsigned long long>(ceil_div(n_vec, static_cast<unsigned long long>(kStreamThreads) * U), 1, 1u << 20));
    launch(&stream_flat_kernel<T, N, U, F>, dim3(blocks), dim3(kStreamThreads), 0, s, a, out, n, f);
  };
  switch (vecs_per_thread) {
    case 1: run(std::integral_constant<int, 1>{}); break;
    case 2: run(std::integral_constant<int, 2>{}); break;
    case 4: run(std::integral_constant<int, 4>{}); break;
    case 8: run(std::integral_constant<int, 8>{}); break;
    default: throw std::logic_error("devmat: stream_flat: uint4s a thread must be 1, 2, 4 or 8");
  }
}

}  // namespace devmat::detail

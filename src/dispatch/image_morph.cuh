// Launchers of erosion and dilation (kernels/image_morph.cuh): both passes on a tile in shared
// memory (launch_morph_tile) where the element fits it; else one separable pass along rows or
// columns, tiled in shared memory up to kMorphMaxTiledSide, direct past it; elements with sides
// 3 or 5 in one fused pass; float up to 32 x 129 and u8 from 17 x 17 to 32 x 513, one kernel
// streaming down strips (launch_morph_stream; the benchmark and the tests force it on u8 elsewhere).
#pragma once

#include "dispatch/common.hpp"
#include "dispatch/device.hpp"
#include "dispatch/tile_grid.hpp"
#include "dispatch/launch.cuh"
#include "dispatch/morph_segment.hpp"
#include "kernels/image_morph.cuh"

#include <devmat/error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace devmat::detail {

/// Shared memory of one morph_pass_kernel tile for a side of k.
template <class T>
std::size_t morph_smem_bytes(int k) {
  const std::size_t len_in = kMorphAlong + static_cast<std::size_t>(k) - 1;
  return 2 * sizeof(MorphWord<T>) * kMorphAcross * (len_in | 1);
}

/// out (ld_out) = the erosion (kErode) or dilation of `in` (ld_in) by a 1 x k (kRows) or k x 1
/// window, k >= 2.
template <class T, bool kErode, bool kRows>
void launch_morph_pass(cudaStream_t s, const T* in, Index ld_in, T* out, Index ld_out, Index rows, Index cols, int k) {
  if (k <= kMorphMaxTiledSide) {
    unsigned tiles_y = 0;
    const dim3 grid = kRows ? tile_grid(rows, cols, kMorphAlong, kMorphAcross, &tiles_y)
                            : tile_grid(rows, cols, kMorphAcross * kMorphPack<T, kRows>, kMorphAlong, &tiles_y);
    const std::size_t smem = morph_smem_bytes<T>(k);
    const auto kernel = &morph_pass_kernel<T, kErode, kRows>;
    if (smem > 48 * 1024)
      DEVMAT_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    launch(kernel, grid, dim3(kMorphThreads), smem, s, in, ld_in, out, ld_out, rows, cols, k, tiles_y);
  } else {
    const unsigned long long n = static_cast<unsigned long long>(rows) * static_cast<unsigned long long>(cols);
    const unsigned blocks = static_cast<unsigned>(std::min<unsigned long long>(ceil_div(n, kMorphThreads), 1u << 20));
    launch(&morph_pass_direct_kernel<T, kErode, kRows>, dim3(blocks), dim3(kMorphThreads), 0, s, in, ld_in, out, ld_out,
           rows, cols, k);
  }
}

/// Bytes of dynamic shared memory morph_tile_kernel needs for a kr x kc element and tile `shape`.
template <class T>
std::size_t morph_tile_smem_bytes(int kr, int kc, int shape = 0) {
  const MorphTileShape t = morph_tile_shape<T>(shape);
  return sizeof(MorphWord<T>) * static_cast<std::size_t>(MorphTileLayout(kr, kc, t.rows, t.cols, kMorphPack4<T>).words);
}

/// The shared memory past which erode/dilate leave morph_tile_kernel for the two passes (at
/// least two blocks an SM): elements up to about 100 x 100 (u8) or 55 x 55 (float).
inline constexpr std::size_t kMorphTileMaxSmem = 100 * 1024;

/// Whether launch_morph_tile's default tile takes a kr x kc element.
template <class T>
bool morph_tile_fits(int kr, int kc) {
  return kr <= 4096 && kc <= 4096 && morph_tile_smem_bytes<T>(kr, kc) <= kMorphTileMaxSmem;
}

/// out (ld_out) = the erosion (kErode) or dilation of `in` (u8 or float) by a kr x kc element
/// (kr, kc >= 1), both passes in one kernel (morph_tile_kernel), tile morph_tile_shape<T>(shape),
/// `batch` words loaded at a time by the block minima (1, the measured default, or 4: the
/// candidate bench_image_neigh times as "ours-tile<rows>x<cols>-b4"). Throws
/// std::invalid_argument for a shape index or batch out of range; cuda_error when the tile's
/// shared memory exceeds the device's.
template <bool kErode, class T>
void launch_morph_tile(cudaStream_t s, const T* in, Index ld_in, T* out, Index ld_out, Index rows, Index cols, int kr,
                       int kc, int shape = 0, int batch = 1) {
  static_assert(std::is_same_v<T, std::uint8_t> || std::is_same_v<T, float>, "launch_morph_tile: u8 or float");
  if (shape < 0 || shape >= kMorphTileShapes<T>)
    throw std::invalid_argument("devmat: launch_morph_tile: no tile shape " + std::to_string(shape));
  if (batch != 1 && batch != 4)
    throw std::invalid_argument("devmat: launch_morph_tile: batch " + std::to_string(batch) + " (1 or 4)");
  if (rows == 0 || cols == 0) return;
  const auto run = [&](auto index) {
    constexpr MorphTileShape t = morph_tile_shape<T>(decltype(index)::value);
    const auto kernel = batch == 4 ? &morph_tile_kernel<T, kErode, t.rows, t.cols, 4>
                                   : &morph_tile_kernel<T, kErode, t.rows, t.cols, 1>;
    const std::size_t smem = morph_tile_smem_bytes<T>(kr, kc, shape);
    blocks_per_sm(reinterpret_cast<const void*>(kernel), kMorphTileThreads, static_cast<int>(smem), true);  // opts in past 48 KiB
    unsigned tiles_y = 0;
    const dim3 grid = tile_grid(rows, cols, t.cols, t.rows, &tiles_y);
    launch(kernel, grid, dim3(kMorphTileThreads), smem, s, in, ld_in, out, ld_out, rows, cols, kr, kc, tiles_y);
  };
  static_assert(kMorphTileShapes<T> <= 3, "launch_morph_tile: a case a tile shape");
  if (shape == 0) run(std::integral_constant<int, 0>{});
  else if (shape == 1) run(std::integral_constant<int, 1>{});
  else if constexpr (kMorphTileShapes<T> > 2) run(std::integral_constant<int, 2>{});
}

/// Outputs a strip of launch_morph_stream's kernel at most: morph_stream_kernel's, or
/// (`doubling`) morph_stream_doubling_kernel's.
template <class T>
int morph_stream_max_out_w(int kr, int kc, bool doubling) {
  return doubling ? morph_doubling_strip<T>(kc).out_w : morph_stream_strip<T>(kr, kc).out_w;
}

/// Rows launch_morph_stream<T> takes at most (its register arrays): 32, or 16 with the doubling
/// row pass (kMorphDoublingMaxRows).
inline int morph_stream_max_rows(bool doubling) { return doubling ? kMorphDoublingMaxRows : 32; }

/// Whether launch_morph_stream<T> takes a kr x kc element: at most morph_stream_max_rows rows and
/// columns that leave at least half of a strip outputs (float 129, u8 513).
template <class T>
bool morph_stream_fits(int kr, int kc, bool doubling = false) {
  return kr >= 1 && kc >= 1 && kr <= morph_stream_max_rows(doubling) && kc <= kMorphStreamStrip<T> / 2 + 1 &&
         2 * morph_stream_max_out_w<T>(kr, kc, doubling) >= kMorphStreamStrip<T>;
}

/// Whether erode/dilate's streaming kernel (morph_stream_default) is the one with the doubling
/// row pass (morph_stream_doubling_kernel): float elements of at most 16 rows, u8 ones of 7 to
/// 16 rows and at least 7 columns. H200, 4096^2,
/// float erode, us, doubling against morph_stream_kernel, both comparing by one FMNMX:
/// - session 17, first run: 7x7 55.0 against 60.6, 11x11 62.1 against 64.1, 15x15 55.8 against
///   58.2, 9x9 67.5 at 16 register rows against 65.4 (now 12: morph_doubling_rows);
/// - run M1: 7x7 52.6 against 58.6, 9x9 57.0 against 63.6, 11x11 55.7 against 62.2, 15x15 53.9
///   against 56.5;
/// - a later run on another lease, its kernel with the split code (left, image_morph.cuh)
///   compiled in: 7x7 53.3 against 61.2, 9x9 60.2 against 63.7, 11x11 56.9 against 62.7, but
///   15x15 59.3 against 56.9 (15x15 a wash across runs).
/// Past 16 rows it lost (kMorphDoublingMaxRows). u8: elements of 7 to 16 rows and at least 7
/// columns (morph_stream_default); with __vminu4's compares it had lost there to
/// morph_stream_kernel (15x15 39.0 against 39.6, 7x7 40.8 against 40.1, 9x9 50.0 against 44.0).
/// u8 5 x 5 too since session 26, on its exact instance (morph_stream_exact): dilate 30.1 us
/// against the fused pass's 34.0 (the public call's, beside it in the same run).
template <class T>
bool morph_stream_doubles(int kr, int kc) {
  if (!morph_stream_fits<T>(kr, kc, true)) return false;
  return std::is_same_v<T, float> || (kr >= 7 && kc >= 7) || (kr == 5 && kc == 5);
}

/// Whether erode/dilate take morph_stream_kernel for a T image (`in`, rows `ld` apart, `cols`
/// pixels) and a kr x kc element (after the fused kernels and the 1 x 1 copy, before the
/// one-kernel tile).
/// - float: elements it fits. Run T10 (H200, 4096^2, us): 7x7 79.0 against the fused kernel's
///   84.9, 9x9 78.3 against 101.5, 15x15 65.5, 31x31 75.4 (the tile 136, 201); 5x5 93.0 against
///   the fused 71.0.
/// - u8: elements of more than 16 rows and columns (the register arrays of 32 rows), on images
///   whose rows end on 4 bytes (morph_stream_reads_rows). Run E2 (standalone harness, dilate,
///   us, stream against the 64 x 128 tile): 31x31 37.4 against 41.9, 21x21 36.8 against 37.0;
///   at 16 rows or fewer the tile as fast or faster (9x9 34.3 against 39.4, 7x7 35.3 against
///   35.6, 11x11 and 15x15 within 0.6).
/// - u8, from session 18 (the byte compares by vmin_u8x4, three ALU instructions where
///   __vminu4 takes five, and the doubling kernel's row pass is mostly compares): elements of 7
///   to 16 rows and at least 7 columns on morph_stream_doubling_kernel (morph_stream_doubles).
///   H200, 4096^2 dilate, us, doubling against the 64 x 128 tile that took them (first run): 7x7
///   36.1 against 38.9, 9x9 38.1 against 37.9, 11x11 36.2 against 38.7, 15x15 35.6 against
///   40.0; run N2, the doubling kernel the default: 7x7 35.6 against the forced tile's 37.1,
///   15x15 36.6 against 38.5. Below 7 rows its register rows (8 at least) would mostly be
///   computed for nothing.
/// - u8 5 x 5 (session 26) the doubling kernel's exact instance where the rows end on 4 bytes,
///   else the fused pass (morph_fused).
template <class T>
bool morph_stream_default(const T* in, Index ld, Index cols, int kr, int kc) {
  if constexpr (std::is_same_v<T, float>) return morph_stream_fits<T>(kr, kc);
  else
    return morph_stream_reads_rows(in, ld, cols) &&
           ((kr > 16 && kc > 16 && morph_stream_fits<T>(kr, kc)) || morph_stream_doubles<T>(kr, kc));
}

/// Output rows a block erode/dilate give morph_stream_kernel: 0, morph_stream_segment's choice;
/// else the best "ours-stream-s<rows>" row of bench_image_neigh.
inline constexpr int kMorphStreamSegment = 0;

/// The instance of the streaming kernels erode/dilate take for a T element of kr rows
/// (with_morph_stream_rows; the doubling kernel has no square instance and takes the exact rows
/// for ::square): the exact ones wherever the kernel has them, square for u8 and for float from
/// 25 rows. H200, 4096^2, us, bench_image_neigh's forced kernels in one run (session 26; the
/// run-time instance "-rt", exact rows "ours-stream[-dbl]", exact square "-sq"):
/// - u8 dilate, doubling kernel, rt -> rows: 5x5 36.0 -> 30.1, 7x7 35.0 -> 29.8, 9x9 37.3 ->
///   30.3, 11x11 34.9 -> 33.1, 13x13 37.8 -> 33.4, 15x15 34.6 -> 32.8; morph_stream_kernel, rt /
///   rows / square: 17x17 41.1 / 35.0 / 28.7, 21x21 38.7 / 29.1 / 28.0, 25x25 42.4 / 34.2 /
///   32.4, 31x31 38.5 / 30.2 / 29.2 (the public 3x3, the fused pass: 29.8).
/// - float erode, doubling kernel, rt -> rows: 5x5 55.3 -> 52.0, 7x7 54.8 -> 54.9, 9x9 60.3 ->
///   55.2, 11x11 59.6 -> 57.6, 13x13 59.5 -> 56.4, 15x15 57.1 -> 56.8; morph_stream_kernel, rt /
///   rows / square: 17x17 76.3 / 60.5 / 64.0, 21x21 68.0 / 55.6 / 56.4, 25x25 70.3 / 62.8 /
///   60.0, 31x31 69.9 / 63.4 / 62.3 (the public 3x3: 47.9).
template <class T>
constexpr MorphStreamExact morph_stream_exact(int kr) {
  return std::is_same_v<T, std::uint8_t> || kr >= 25 ? MorphStreamExact::square : MorphStreamExact::rows;
}

/// Whether erode/dilate give the streaming kernels their L2 prefetch of the block of rows after
/// next (launch_morph_stream's kPrefetch) for a T element of kr rows: float on the doubling
/// kernel (up to 16 rows) and on the square instance (morph_stream_exact, from 25), not u8.
/// H100, 4096^2 erode / dilate, us, bench_image_neigh's forced kernels without / with ("-pf")
/// in one run (session 28):
/// - float, doubling: 5x5 62.8 / 63.2, 7x7 63.8 / 62.6, 9x9 64.0 / 62.5, 11x11 68.1 / 65.6,
///   13x13 63.4 / 61.6, 15x15 65.1 / 60.5; square: 17x17 75.4 / 68.3, 21x21 66.1 / 65.4, 25x25
///   68.2 / 60.9, 31x31 70.2 / 60.8; rows (17 to 23): 17x17 69.2 / 69.3, 21x21 66.1 / 72.5
///   (ptxas, sm_90: the 21-row pair differs in more than the prefetch, 80 registers against 64
///   with a 28-byte spill, 3 blocks an SM against 4 and another segment; the square 17 without
///   it spills 16 bytes. The 17-row rows pair, 64 registers both, is the clean one).
/// - u8 dilate, slower with it everywhere: doubling 7x7 31.5 / 34.2, 15x15 34.9 / 38.4; square
///   17x17 31.0 / 32.7, 31x31 29.7 / 31.3. The bytes' rounds are short (a quarter of float's
///   bytes a row), and the prefetch's instructions and requests cost more than the wait.
template <class T>
constexpr bool morph_stream_prefetch(int kr) {
  return std::is_same_v<T, float> &&
         (kr <= kMorphDoublingMaxRows || morph_stream_exact<T>(kr) == MorphStreamExact::square);
}

/// out (ld_out) = the erosion (kErode) or dilation of the u8 or float image `in` by a kr x kc
/// element (morph_stream_fits), one kernel streaming down strips (morph_stream_kernel, or
/// `doubling` morph_stream_doubling_kernel), `seg` output rows a block (0: morph_stream_segment's
/// choice; bench_image_neigh times others as "ours-stream-s<seg>"); `exact`: which instance
/// (with_morph_stream_rows; erode/dilate pass morph_stream_exact's): bench_image_neigh's
/// "ours-stream" rows run MorphStreamExact::rows, its "-rt" rows ::none and its "-sq" rows
/// ::square. kPrefetch: the kernels' L2 prefetch of the block of rows after next
/// (bench_image_neigh's "-pf" rows; erode/dilate take morph_stream_prefetch's). Throws
/// std::invalid_argument for an element it does not take, a u8 image whose rows do not end on 4
/// bytes (morph_stream_reads_rows) or a negative seg.
template <bool kErode, bool kPrefetch = false, class T>
void launch_morph_stream(cudaStream_t s, const T* in, Index ld_in, T* out, Index ld_out, Index rows, Index cols, int kr,
                         int kc, int seg = 0, bool doubling = false, MorphStreamExact exact = MorphStreamExact::none) {
  static_assert(std::is_same_v<T, std::uint8_t> || std::is_same_v<T, float>, "launch_morph_stream: u8 or float");
  if (!morph_stream_fits<T>(kr, kc, doubling))
    throw std::invalid_argument("devmat: launch_morph_stream: element " + std::to_string(kr) + "x" + std::to_string(kc) +
                                " (rows 1 .. " + std::to_string(morph_stream_max_rows(doubling)) + ", columns 1 .. " +
                                std::to_string(kMorphStreamStrip<T> / 2 + 1) + ")");
  if (rows > 0 && cols > 0 && !morph_stream_reads_rows(in, ld_in, cols))
    throw std::invalid_argument("devmat: launch_morph_stream: u8 rows must end on 4 bytes (ld and in + cols)");
  if (seg < 0) throw std::invalid_argument("devmat: launch_morph_stream: segment of " + std::to_string(seg) + " rows");
  if (rows == 0 || cols == 0) return;
  const auto run = [&](auto kmax, auto krc, auto kcc) {
    constexpr int KMAX = decltype(kmax)::value, KR = decltype(krc)::value, KC = decltype(kcc)::value;
    const std::size_t smem = doubling ? morph_doubling_smem_bytes<T>(KMAX) : morph_stream_smem_bytes<T>(kr);
    void (*kernel)(const T*, Index, T*, Index, Index, Index, int, int, int, int, unsigned) = nullptr;
    if constexpr (KMAX <= kMorphDoublingMaxRows && (KR == 0 || morph_stream_exact_rows(KR, true)) && KC == 0)
      kernel = &morph_stream_doubling_kernel<T, kErode, KMAX, KR, kPrefetch>;
    if constexpr (KMAX % 8 == 0 && (KR == 0 || morph_stream_exact_rows(KR, false)))  // morph_stream_kernel's 8, 16, 32
      if (!doubling) kernel = &morph_stream_kernel<T, kErode, KMAX, KR, KC, kPrefetch>;
    const int per_sm = blocks_per_sm(reinterpret_cast<const void*>(kernel), kMorphStreamThreads, static_cast<int>(smem), true);
    const int out_w = static_cast<int>(morph_stream_out_w<T>(morph_stream_max_out_w<T>(kr, kc, doubling), cols));
    const long long strips = static_cast<long long>(ceil_div(static_cast<unsigned long long>(cols), out_w));
    const int rows_a_block = seg ? seg : morph_stream_segment(rows, strips, per_sm, current_device_props().sm_count, kr);
    unsigned segs = 0;
    const dim3 grid = tile_grid(rows, cols, out_w, rows_a_block, &segs);
    launch(kernel, grid, dim3(kMorphStreamThreads), smem, s, in, ld_in, out, ld_out, rows, cols, kr, kc, out_w,
           rows_a_block, segs);
  };
  with_morph_stream_rows(kr, kc, doubling, run, exact);
}

/// Whether launch_morph_small has a kernel for a kr x kc element.
inline bool morph_small(int kr, int kc) { return (kr == 3 || kr == 5) && (kc == 3 || kc == 5); }

/// Whether erode/dilate take launch_morph_small's fused pass for a T image: its elements
/// (morph_small) but float 5 x 5, which runs faster on morph_stream_doubling_kernel at 6
/// register rows (H200, 4096^2 erode, us, same run: 55.8 against the fused 58.6 with its launch
/// bounds, 64.5 without).
/// u8 5 x 5 likewise where the doubling kernel reads the image's rows (morph_stream_default: rows
/// that end on 4 bytes; session 26, dilate 30.1 us against 34.0).
template <class T>
bool morph_fused(const T* in, Index ld, Index cols, int kr, int kc) {
  return morph_small(kr, kc) && !(kr == 5 && kc == 5 && morph_stream_default<T>(in, ld, cols, kr, kc));
}

/// Output rows a thread of the fused kernels, by the element's height (u8 on the H200, 4096^2: 3
/// rows 4, 5 rows 8 were the fastest of 4, 8 and 16; float takes the same).
inline int morph_rows_per_thread(int kr) { return kr == 3 ? 4 : 8; }

/// out (ld_out) = the erosion (kErode) or dilation of `in` (u8 or float) by a kr x kc element
/// (sides 3 or 5: morph_small; float also 7 x 7 and 9 x 9, as morph_f32_small_kernel loads 4
/// pixels either side of its 4: a candidate bench_image_small times, since erode/dilate take
/// morph_stream_kernel there from run T10: 7x7 79.0 us against 84.9, 9x9 78.3 against 101.5), one
/// fused pass (morph_u8_small_kernel, morph_f32_small_kernel); r output rows a thread (4, 8 or 16;
/// 0: the default). Throws std::logic_error for an element it has no kernel for.
template <bool kErode, class T>
void launch_morph_small(cudaStream_t s, const T* in, Index ld, T* out, Index ld_out, Index rows, Index cols, int kr,
                        int kc, int r = 0) {
  static_assert(std::is_same_v<T, std::uint8_t> || std::is_same_v<T, float>, "launch_morph_small: u8 or float");
  if (rows == 0 || cols == 0) return;
  with_rows_per_thread(r ? r : morph_rows_per_thread(kr), [&](auto rc) {
    constexpr int R = decltype(rc)::value;
    unsigned tiles_y = 0;
    const dim3 grid = tile_grid(rows, cols, kNbrTileW, kNbrTileH<R>, &tiles_y);
    const auto run = [&](auto kr_c, auto kc_c) {
      constexpr int KR = decltype(kr_c)::value, KC = decltype(kc_c)::value;
      if constexpr (std::is_same_v<T, std::uint8_t>)
        launch(&morph_u8_small_kernel<KR, KC, kErode, R>, grid, dim3(kNbrThreadsX, kNbrThreadsY), 0, s, in, ld, out,
               ld_out, rows, cols, tiles_y);
      else
        launch(&morph_f32_small_kernel<KR, KC, kErode, R>, grid, dim3(kNbrThreadsX, kNbrThreadsY), 0, s, in, ld, out,
               ld_out, rows, cols, tiles_y);
    };
    if constexpr (std::is_same_v<T, float>) {
      using C7 = std::integral_constant<int, 7>;
      using C9 = std::integral_constant<int, 9>;
      if (kr == 7 && kc == 7) return run(C7{}, C7{});
      if (kr == 9 && kc == 9) return run(C9{}, C9{});
    }
    with_small_sides(kr, kc, run);
  });
}

}  // namespace devmat::detail

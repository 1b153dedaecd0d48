// Launcher of the transpose (kernels/transpose.cuh): a copy when the transpose is one already,
// the few-rows / few-columns kernels measured fastest for the element size when a side is at
// most kTransposeFewMax, else the widest tile whose words fit the shape and the pointers (the
// vector tile, or for bytes the shift tile, where they do not); sizes the grid, launches. Also
// the alternatives each forced on every shape (TransposeTrials) for the bench and tests.
#pragma once

#include "dispatch/common.hpp"
#include "dispatch/device.hpp"
#include "dispatch/launch.cuh"
#include "kernels/transpose.cuh"

#include <devmat/error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace devmat::detail {

/// Whether the blocks of a tile transpose walk down (along output rows) rather than across
/// (along input rows): where output rows (`rows` elements) do not start on 128-byte lines, so
/// that the blocks whose runs meet inside a line run together (forced across there, f64
/// 16383x16385 measured 0.76 of a copy against 0.90 down; the other shapes of run V1 the same
/// either way).
template <class T>
bool transpose_walks_down(Index rows) {
  return (rows * static_cast<Index>(sizeof(T))) % 128 != 0;
}

/// transpose_kernel on Tile (a TransposeTile whose words fit the shape and pointers:
/// transpose_words_fit).
template <class T, class Tile>
void launch_transpose_tile(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  constexpr Index kTile = Tile::kTile;
  constexpr int kSmemBytes = static_cast<int>(kTile * Tile::kTW * Tile::kW * sizeof(T));
  static_assert(kSmemBytes <= 200 * 1024, "launch_transpose_tile: tile exceeds shared memory");
  const auto kernel = &transpose_kernel<T, Tile::kW, Tile::kTW, Tile::kBY>;
  if constexpr (kSmemBytes > 48 * 1024)  // opts in to more than 48 KiB (once per device)
    blocks_per_sm(reinterpret_cast<const void*>(kernel), 32 * Tile::kBY, kSmemBytes);
  // One-element words: where every row starts at the same offset m (elements) inside a 32-byte
  // sector (ld a multiple of a sector: a window of a matrix at a column off the sector), the
  // tile grid starts m columns left of column 0, so a warp's run of a row reads whole sectors
  // (f32: 8 sectors for 64 elements, not 9; the window's transpose read 12% more than a dense one).
  Index shift = 0;
  if constexpr (Tile::kW == 1) {
    constexpr Index kSector = 32 / static_cast<Index>(sizeof(T));
    if (ld % kSector == 0) shift = static_cast<Index>(reinterpret_cast<std::uintptr_t>(in) / sizeof(T)) % kSector;
  }
  const Index tiles_r = ceil_div(rows, kTile), tiles_c = ceil_div(cols + shift, kTile);
  const bool down = transpose_walks_down<T>(rows);
  launch(kernel, static_cast<unsigned>(tiles_r * tiles_c), dim3(32, Tile::kBY), kSmemBytes, stream, in, ld, out,
         rows, cols, tiles_r, tiles_c, down, shift);
}

/// transpose_shift_kernel on Tile (a ShiftTile of 4-byte words: any shape, stride and alignment
/// of bytes), its blocks walked as launch_transpose_tile's.
template <class T, class Tile>
void launch_transpose_shift(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  constexpr int kSmemBytes = Tile::kRows * 32 * Tile::kW * static_cast<int>(sizeof(T));
  static_assert(kSmemBytes <= 48 * 1024, "launch_transpose_shift: tile exceeds the default shared memory");
  const Index tiles_r = ceil_div(rows, Index(Tile::kRows)), tiles_c = ceil_div(cols, Index(Tile::kCols));
  launch(&transpose_shift_kernel<T, Tile::kW, Tile::kBY>, static_cast<unsigned>(tiles_r * tiles_c),
         dim3(32, Tile::kBY), kSmemBytes, stream, in, ld, out, rows, cols, tiles_r, tiles_c,
         transpose_walks_down<T>(rows));
}

/// The lanes of a vector-tile kernel on Tile for rows x ld of T (transpose_vec_lanes) and the
/// kernel `pick` gives for them: pick(std::true_type) the one compiled with turned loads
/// (kRotate) where the lanes turn them, bytes only (wider elements never turn, and their turned
/// kernels are not compiled), else pick(std::false_type).
template <class T, class Tile, class Pick>
auto transpose_vec_plan(Index rows, Index ld, Pick pick) {
  const TransposeVecLanes lanes = transpose_vec_lanes<Tile>(rows * static_cast<Index>(sizeof(T)),
                                                            ld * static_cast<Index>(sizeof(T)));
  auto kernel = pick(std::false_type{});
  if constexpr (sizeof(T) == 1)
    if (lanes.rot != 0) kernel = pick(std::true_type{});
  return std::pair{lanes, kernel};
}

/// Tile columns of one transpose_vec_kernel launch: CUDA's limit on grid y.
inline constexpr Index kTransposeVecMaxTileCols = 65535;

/// transpose_vec_kernel on Tile (a VecTile: any shape, stride and alignment of T; one aligned
/// 16-byte access a thread on both sides, tiles owning whole vectors of every output row), its
/// tiles walked down the grid's columns in bands (transpose_vec_grid's, or of `band_rows` tile
/// rows where that is given: transpose_vec_tall's; at most 65535 bands, grid z). The tile
/// columns go to grid y, at most `max_tile_cols` (kTransposeVecMaxTileCols) a launch: a wider
/// matrix is transposed in column windows, each into its own output rows.
template <class T, class Tile>
void launch_transpose_vec(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream,
                          Index max_tile_cols = kTransposeVecMaxTileCols, Index band_rows = 0) {
  if (rows == 0 || cols == 0) return;
  constexpr int kSmemBytes = Tile::kSmemBytes;
  static_assert(kSmemBytes <= 200 * 1024, "launch_transpose_vec: tile exceeds shared memory");
  const auto [lanes, kernel] = transpose_vec_plan<T, Tile>(
      rows, ld, [](auto turned) { return &transpose_vec_kernel<T, Tile, decltype(turned)::value>; });
  if constexpr (kSmemBytes > 48 * 1024)  // opts in to more than 48 KiB (once per device and kernel)
    blocks_per_sm(reinterpret_cast<const void*>(kernel), Tile::kThreads, kSmemBytes);
  const Index window = max_tile_cols * Tile::kCols;
  for (Index c = 0; c < cols; c += window) {
    const Index n = cols - c < window ? cols - c : window;
    T* const o = out + c * rows;  // output rows c .. c + n
    const Index tiles_r = transpose_vec_tile_rows<Tile>(rows, o);
    const TransposeVecGrid grid = transpose_vec_grid<Tile>(tiles_r, n, band_rows);  // grid z: its bands
    launch(kernel, dim3(grid.band, grid.tiles_c, grid.bands()), dim3(Tile::kThreads), kSmemBytes, stream, in + c, ld, o,
           rows, n, tiles_r, lanes);
  }
}

/// transpose_vec_pipe_kernel on Tile: transpose_vec_kernel's tiles in its block order (bands as
/// launch_transpose_vec's, or of `band_rows` tile rows), on as many persistent blocks as the
/// device holds at once (at most one a tile), each loading its next tile while it stores one.
/// A grid of 2^31 blocks or more (never on today's memory sizes; the kernel steps through them in
/// 32 bits) takes launch_transpose_vec.
template <class T, class Tile>
void launch_transpose_vec_pipe(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream,
                               Index band_rows = 0) {
  if (rows == 0 || cols == 0) return;
  constexpr int kSmemBytes = kTransposeVecPipeStages * transpose_vec_pipe_stage_bytes<Tile>();
  static_assert(kSmemBytes <= 227 * 1024, "launch_transpose_vec_pipe: stages exceed shared memory");
  const auto [lanes, kernel] = transpose_vec_plan<T, Tile>(
      rows, ld, [](auto turned) { return &transpose_vec_pipe_kernel<T, Tile, decltype(turned)::value>; });
  const Index tiles_r = transpose_vec_tile_rows<Tile>(rows, out);
  const TransposeVecGrid grid = transpose_vec_grid<Tile>(tiles_r, cols, band_rows);
  const Index blocks = static_cast<Index>(grid.band) * grid.tiles_c * grid.bands();
  if (blocks >= (Index(1) << 31))
    return launch_transpose_vec<T, Tile>(in, ld, out, rows, cols, stream, kTransposeVecMaxTileCols, band_rows);
  // Opts in to the stages' shared memory and the largest carveout (once per device and kernel),
  // and sizes the grid.
  const long long resident = static_cast<long long>(current_device_props().sm_count) *
                             blocks_per_sm(reinterpret_cast<const void*>(kernel), Tile::kThreads, kSmemBytes, true);
  launch(kernel, dim3(static_cast<unsigned>(std::min<long long>(blocks, resident))), dim3(Tile::kThreads), kSmemBytes,
         stream, in, ld, out, rows, cols, tiles_r, grid.tiles_c, grid.band, lanes);
}

/// Sides of at most this many elements take the few-rows / few-columns kernels.
inline constexpr Index kTransposeFewMax = 16;

/// Peak DRAM bandwidth (GB/s, DeviceProps::dram_gbps) from which launch_transpose takes its
/// fast-memory choices: the H200 (4.8 TB/s) against the H100 (3.35 TB/s), whose winners differ.
/// The H200's memory needs more bytes in flight an SM than the H100's to run at speed, and
/// several kernels that won on H100s lost there (run S31, session 44, one process, forced trials
/// beside the defaults, of a copy): u8 2164803x31 the run kernel 0.791 against VecNarrow's 0.668
/// (H100: 0.88 against 0.88, session 33); u8 16777216x16 the byte kernel at 4 blocks an SM
/// ("ours-bytes16-o4") 0.894 against the register kernel's 0.828; f32 4194304x16 the span at 4
/// blocks an SM 0.841 against 0.816 (16777216x3: 0.992 both); u8 odd matrices on the 128-byte
/// vector tile (n16c128) against Vec (n16c256-t512) / VecTall: 16385x16383 0.854 against 0.834,
/// 16383x16385 0.849 / 0.834, 10007x30011 0.842 / 0.823, 4097x65537 0.833 / 0.797, 65537x4097
/// 0.840 against VecTall's 0.714 (H100, session 41: n16c256-t512 and VecTall ahead by 0.03-0.05).
inline constexpr double kTransposeFastMemoryGBps = 4000;

/// Whether the current device's memory takes the fast-memory choices (kTransposeFastMemoryGBps).
/// launch_transpose reads it once and hands it to launch_transpose_few and
/// launch_transpose_short_side, the two other places that choose by it.
inline bool transpose_fast_memory() { return current_device_props().dram_gbps >= kTransposeFastMemoryGBps; }

/// Rows (or columns) of a few-columns (few-rows) chunk of `few` elements a row: as many as fill
/// the chunk, in multiples of 128.
template <class T, class Chunk = TransposeChunk<>>
int transpose_chunk_lines(Index few) {
  const Index lines = Chunk::kBytes / (few * static_cast<Index>(sizeof(T))) / 128 * 128;
  return static_cast<int>(lines < 128 ? 128 : lines);
}

/// The few-rows / few-columns chunk kernels with Chunk, where a side is at most
/// kTransposeFewMax and a chunk holds 128 lines of it (bytes of the few-rows kernel are stored
/// as aligned words: out aligned to 4, as a DeviceMatrix always is). Returns whether it launched.
template <class T, class Chunk>
bool launch_transpose_chunk(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  constexpr Index kFewMax = Chunk::kBytes / 128 / static_cast<Index>(sizeof(T)) < kTransposeFewMax
                                ? Chunk::kBytes / 128 / static_cast<Index>(sizeof(T))
                                : kTransposeFewMax;
  if (rows <= kFewMax && (sizeof(T) != 1 || is_aligned(out, 4))) {
    const int per_block = transpose_chunk_lines<T, Chunk>(rows);
    launch(&transpose_few_rows_kernel<T, Chunk>, static_cast<unsigned>(ceil_div(cols, per_block)),
           dim3(Chunk::kThreads), 0, stream, in, ld, out, static_cast<int>(rows), cols, per_block);
    return true;
  }
  if (cols <= kFewMax) {
    const int per_block = transpose_chunk_lines<T, Chunk>(cols);
    launch(&transpose_few_cols_kernel<T, Chunk>, static_cast<unsigned>(ceil_div(rows, per_block)),
           dim3(Chunk::kThreads), 0, stream, in, ld, out, rows, static_cast<int>(cols), per_block);
    return true;
  }
  return false;
}

/// The register kernels (transpose_few_rows_vec_kernel, transpose_few_cols_vec_kernel) of 1- or
/// 4-byte elements, where their 16-byte vectors line up: rows == kN (2 ... max_rows) with in,
/// out and ld on 16 bytes, or cols == kN (2 ... max_cols) dense with rows a multiple of a
/// vector. Returns whether it launched.
template <class T, int kN = 2>
bool launch_transpose_few_vec(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream,
                              int max_rows = 16, int max_cols = 16) {
  if constexpr (sizeof(T) <= 4 && kN <= 16) {
    constexpr Index kV = 16 / sizeof(T);
    const bool vectors = is_aligned(in, 16) && is_aligned(out, 16);
    if (rows == kN && kN <= max_rows && vectors && ld % kV == 0) {
      launch(&transpose_few_rows_vec_kernel<T, kN>, static_cast<unsigned>(ceil_div(ceil_div(cols, kV), Index(256))),
             dim3(256), 0, stream, in, ld, out, cols);
      return true;
    }
    if (cols == kN && kN <= max_cols && ld == kN && vectors && rows % kV == 0) {
      launch(&transpose_few_cols_vec_kernel<T, kN>, static_cast<unsigned>(ceil_div(ceil_div(rows, kV), Index(256))),
             dim3(256), 0, stream, in, out, rows);
      return true;
    }
    return launch_transpose_few_vec<T, kN + 1>(in, ld, out, rows, cols, stream, max_rows, max_cols);
  }
  return false;
}

/// transpose_few_rows_stage_kernel<T, kN> where rows == kN (2 .. 16), for 4- and 8-byte elements
/// with in, out and ld * sizeof(T) on 16 bytes. Returns whether it launched.
template <class T, int kN = 2>
bool launch_transpose_few_rows_stage(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if constexpr ((sizeof(T) == 4 || sizeof(T) == 8) && kN <= kTransposeFewMax) {
    constexpr Index kV = 16 / sizeof(T);
    if (rows == kN && is_aligned(in, 16) && is_aligned(out, 16) && ld % kV == 0) {
      launch(&transpose_few_rows_stage_kernel<T, kN>,
             static_cast<unsigned>(ceil_div(ceil_div(cols, kV), Index(kFewRowsStageThreads))), dim3(kFewRowsStageThreads),
             0, stream, in, ld, out, cols);
      return true;
    }
    return launch_transpose_few_rows_stage<T, kN + 1>(in, ld, out, rows, cols, stream);
  }
  return false;
}

/// The byte kernels of 2 to 16 rows or dense columns that move 16-byte vectors at any alignment
/// of the rows (transpose_few_rows_bytes_kernel: out on 16 bytes; transpose_few_cols_bytes_kernel:
/// ld == cols, in on 16 bytes; kMinBlocks its __launch_bounds__, 1 but in the "-o4" trials).
/// Returns whether it launched.
template <int kMinBlocks = 1, int kN = 2>
bool launch_transpose_few_bytes(const std::uint8_t* in, Index ld, std::uint8_t* out, Index rows, Index cols,
                                cudaStream_t stream) {
  if constexpr (kN <= kTransposeFewMax) {
    constexpr Index kRowsWarp = 512, kColsWarp = 496;  // a warp's lines
    if (rows == kN && is_aligned(out, 16)) {
      launch(&transpose_few_rows_bytes_kernel<kN>, static_cast<unsigned>(ceil_div(cols, kColsWarp * kFewBytesWarps)),
             dim3(32 * kFewBytesWarps), 0, stream, in, ld, out, cols);
      return true;
    }
    if (cols == kN && ld == kN && is_aligned(in, 16)) {
      launch(&transpose_few_cols_bytes_kernel<kN, kMinBlocks>, static_cast<unsigned>(ceil_div(rows, kRowsWarp * kFewBytesWarps)),
             dim3(32 * kFewBytesWarps), 0, stream, in, out, rows);
      return true;
    }
    return launch_transpose_few_bytes<kMinBlocks, kN + 1>(in, ld, out, rows, cols, stream);
  }
  return false;
}

/// transpose_few_rows_regs_kernel<kN, kPairs, kLaneExt> (pairs where kN is even) where rows ==
/// kN (2 .. 16), at any alignment of in and ld, out on 16 bytes. Returns whether it launched.
template <bool kPairs, bool kLaneExt = false, int kN = 2>
bool launch_transpose_few_rows_regs(const std::uint8_t* in, Index ld, std::uint8_t* out, Index rows, Index cols,
                                    cudaStream_t stream) {
  if constexpr (kN <= kTransposeFewMax) {
    if (rows == kN && is_aligned(out, 16)) {
      constexpr Index kThreads = 32 * kFewRowsRegsWarps;
      launch(&transpose_few_rows_regs_kernel<kN, kPairs && kN % 2 == 0, kLaneExt>,
             static_cast<unsigned>(ceil_div(cols, 16 * kThreads)), dim3(kThreads), 0, stream, in, ld, out, cols);
      return true;
    }
    return launch_transpose_few_rows_regs<kPairs, kLaneExt, kN + 1>(in, ld, out, rows, cols, stream);
  }
  return false;
}

/// transpose_few_rows_half_kernel<kN, kStage> where rows == kN (2 .. 16), at any alignment of
/// in and ld, out on 16 bytes. Returns whether it launched.
template <bool kStage = false, int kN = 2>
bool launch_transpose_few_rows_half(const std::uint8_t* in, Index ld, std::uint8_t* out, Index rows, Index cols,
                                    cudaStream_t stream) {
  if constexpr (kN <= kTransposeFewMax) {
    if (rows == kN && is_aligned(out, 16)) {
      constexpr Index kThreads = 32 * kFewRowsHalfWarps;
      launch(&transpose_few_rows_half_kernel<kN, kStage>, static_cast<unsigned>(ceil_div(cols, 8 * kThreads)),
             dim3(kThreads), 0, stream, in, ld, out, cols);
      return true;
    }
    return launch_transpose_few_rows_half<kStage, kN + 1>(in, ld, out, rows, cols, stream);
  }
  return false;
}

/// u8 with 2 to 16 rows (out on 16 bytes) takes transpose_few_rows_half_kernel with its run
/// staged through shared memory ("ours-rows16hs", kStage) by default, before the byte vectors.
/// Session 14's standalone harness (H200, best of 5 x 20 launches, us, against a device copy of
/// the same bytes; pair stores "ours-rows16h" / staged / byte vectors / copy): 3 x 2^26 114.7 /
/// 97.6 / 114.7 / 96.8; 5 x 40000001 116.6 / 97.6 / 115.8 / 98.3; 7 x 2^24 83.5 / 58.8 / 92.3
/// / 57.8; 9 x 2^24 127.6 / 75.3 / 112.1 / 73.8; 11 x 2^24 157.1 / 91.6 / 143.7 / 89.8; 13 x
/// 2^24 188.6 / 107.6 / 180.2 / 105.3; 15 x 2^24 221.2 / 125.5 / 256.7 / 120.8; even counts
/// 8 x 2^24 69.2 / 66.8 / 96.2 / 65.6, 12 x 2^24 105.4 / 99.2 / 159.8 / 96.8, 16 x 2^24 141.6 /
/// 131.8 (141.2 before the swizzle of kN = 16) / 212.5 / 128.0; odd strides, offsets and widths
/// alike (9 x (2^24 - 1) of 2^24 + 3 from byte 5: 76.4 against 106.4 paired). Before it, the
/// pair stores were the default at 8 to 16 rows (even counts, and 15) and the byte vectors
/// elsewhere (run T6, ratios to a copy: 9 rows 0.589, 11 0.593, 13 0.573 paired, 0.668 / 0.636 /
/// 0.597 as byte vectors): at odd counts every other pair's stores start half a vector into a
/// 32-byte sector. transpose_few_rows_regs_kernel (16 columns a thread, "ours-rows16") lost to
/// the half kernel at every count from 8 to 16 (run T6: 16 rows 0.638 against 0.922) and stays a
/// trial.
inline constexpr Index kTransposeFewRowsHalfMax = kTransposeFewMax;

/// transpose_few_cols_span_kernel<T, ld> where a few columns lie kL = ld (2 .. 16) elements
/// apart (cols <= ld: a window of a narrow matrix, or dense, at any alignment of in; every row
/// count), kMinBlocks its __launch_bounds__ (1 but in the "-o4" trials). Returns whether it
/// launched.
template <class T, int kMinBlocks = 1, int kL = 2>
bool launch_transpose_few_cols_span(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if constexpr (kL <= kTransposeFewMax) {
    if (ld == kL && cols <= kL) {
      const Index per_block = 512 / static_cast<Index>(sizeof(T)) * kFewBytesWarps;
      launch(&transpose_few_cols_span_kernel<T, kL, kMinBlocks>, static_cast<unsigned>(ceil_div(rows, per_block)),
             dim3(32 * kFewBytesWarps), 0, stream, in, out, rows, static_cast<int>(cols));
      return true;
    }
    return launch_transpose_few_cols_span<T, kMinBlocks, kL + 1>(in, ld, out, rows, cols, stream);
  }
  return false;
}

/// transpose_rows_run_kernel (rows, at most a few hundred, whole in each region) on regions of
/// about `tile_bytes` (RowsRunShape); kAhead: rows' loads ahead of their stores where that won
/// (transpose_rows_run_kernel).
template <class T, bool kAhead = true>
void launch_transpose_rows_run(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream,
                               int tile_bytes = 16384) {
  if (rows == 0 || cols == 0) return;
  const RowsRunShape shape(rows, cols, sizeof(T), tile_bytes);
  with_rows_run_kernel<T, kAhead>(shape, [&](auto kernel) {
    if (shape.smem > 48 * 1024)
      DEVMAT_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shape.smem));
    launch(kernel, dim3(shape.blocks), dim3(kTransposeRunThreads), static_cast<std::size_t>(shape.smem), stream, in,
           ld, out, static_cast<int>(rows), cols, shape.cb, shape.units, shape.g);
  });
}

/// transpose_cols_run_kernel (columns, at most a few hundred, whole in each region; ld at most
/// twice cols) on regions of about `tile_bytes` (ColsRunShape).
template <class T>
void launch_transpose_cols_run(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream,
                               int tile_bytes = 16384) {
  if (rows == 0 || cols == 0) return;
  const ColsRunShape shape(rows, cols, ld, sizeof(T), tile_bytes);
  with_cols_run_kernel<T>(shape, [&](auto kernel) {
    if (shape.smem > 48 * 1024)
      DEVMAT_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shape.smem));
    launch(kernel, dim3(shape.blocks), dim3(kTransposeRunThreads), static_cast<std::size_t>(shape.smem), stream, in,
           ld, out, rows, static_cast<int>(cols), shape.ra, shape.g);
  });
}

/// The few-rows / few-columns kernels that won on the H200 (bench_transpose's trials, runs A and
/// C of issue 13, U2a and V1), by element size. Ratios to a copy of the same bytes, before -> after:
/// - 1 byte: 2 to 16 rows the half kernel staging its runs (kTransposeFewRowsHalfMax; session
///   14: 0.96-0.99 of a copy, where the byte vectors of run C of issue 13 had 3 x 2^26 0.83, 8 x
///   2^24 0.66, 16 x 2^24 0.57, 5 x 40000001 0.84; the byte vectors' few-rows kernel needs out
///   on 16 bytes too, so it is a default of no shape since: an output off 16 bytes takes the
///   chunks where it is on 4 bytes, else the tiles); the register kernels up to 16
///   dense columns (2^26 x 3: 0.41 -> 0.99, 2^24 x 16: 0.35 -> 0.84; the byte kernels 0.99 and
///   0.78 there), the byte kernels for the dense columns they do not fit (40000001 x 5: 0.33 ->
///   0.83). Then few columns at most 16 bytes apart that neither takes (a window of a narrow
///   matrix, dense rows from an input off its vector) as one span of 16-byte vectors
///   (transpose_few_cols_span_kernel, "ours-span16"; run V1, against the 32 KiB chunks:
///   2^24 x 5 of 7 0.26 -> 0.69, 2^24 x 12 of 16 0.25 -> 0.71, (2^24 - 1) x 5 from row 1 0.22
///   -> 0.77). The register and byte kernels stay first where they won against the span
///   (2^24 x 16: 0.85 against 0.81; 40000001 x 5: 0.81 against 0.73; 2^26 x 3: 0.99 against
///   1.00, within noise). Else 32 KiB chunks of 256 threads.
/// - 4 bytes: few columns at most 16 elements apart (more than 16 rows) as a span first (run V1,
///   against the register kernels or the 8 / 32 KiB chunks: 2^24 x 8 0.84 -> 0.97, 2^22 x 16
///   0.67 -> 0.87, 9999991 x 7 0.73 -> 0.74, 2^24 x 3 0.98 -> 0.99, the window 2^24 x 3 of 5
///   0.68 -> 0.78); the register kernels at 2 rows (2 x 2^25: 0.83 -> 0.96) and up to 8 columns
///   of at most 16 rows; else 8 KiB chunks of 128 threads up to 8 rows or columns (3 x 2^24 0.80
///   -> 0.85, 7 x 9999991 0.82 -> 0.90), 32 KiB of 512 threads for 9 to 16 rows (16 x 2^22:
///   0.82 -> 0.89), of 256 for 9 to 16 columns of a wider stride.
/// - 8 bytes: few columns at most 16 apart as a span (2^23 x 3: 0.87 -> 1.00, run V1), else
///   32 KiB chunks of 256 threads (3 x 2^23: 0.71 -> 0.95).
/// The span takes no few-rows shape: the "ours-span16" rows of few rows in V1 (f32 3 x 2^24
/// 0.847 against 0.835) ran the default chunks, their difference noise.
/// - 4 and 8 bytes, 2 to 16 rows on 16 bytes (session 28): the register transpose with each
///   warp's stores staged through shared memory first (transpose_few_rows_stage_kernel,
///   "ours-rows16s"), against the register kernels and chunks above (H100, one run, the
///   ratios as above): f32 2 x 2^25 0.968 -> 0.994, 3 x 2^24 0.951 -> 0.980, 8 x 2^24 0.977 ->
///   0.992, 16 x 2^22 0.946 -> 0.987; f64 3 x 2^23 0.958 -> 0.992. Rows off 16 bytes (7 x
///   9999991) keep the kernels above.
/// `fast_memory`: transpose_fast_memory() of the device (launch_transpose reads it once).
/// Returns whether one of them launched (else the shape is not a few-rows / few-columns one).
template <class T>
bool launch_transpose_few(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream,
                          bool fast_memory = transpose_fast_memory()) {
  using Small = TransposeChunk<8192, 128>;
  using Large = TransposeChunk<32768, 256>;
  using Wide = TransposeChunk<32768, 512>;
  const auto span = [&] {
    if (rows <= kTransposeFewMax) return false;
    if constexpr (sizeof(T) == 4)  // 4 blocks an SM on fast memory (kTransposeFastMemoryGBps)
      if (fast_memory) return launch_transpose_few_cols_span<T, 4>(in, ld, out, rows, cols, stream);
    return launch_transpose_few_cols_span(in, ld, out, rows, cols, stream);
  };
  if constexpr (sizeof(T) == 1) {
    const auto* in_b = reinterpret_cast<const std::uint8_t*>(in);
    auto* out_b = reinterpret_cast<std::uint8_t*>(out);
    const auto bytes = [&] { return launch_transpose_few_bytes(in_b, ld, out_b, rows, cols, stream); };
    if (rows <= kTransposeFewRowsHalfMax && launch_transpose_few_rows_half<true>(in_b, ld, out_b, rows, cols, stream))
      return true;
    // Few rows (the half kernel did not take them: out off 16 bytes, where the byte vectors' rows
    // kernel does not run either): the byte vectors' dense-columns kernel first, for shapes
    // with few of both.
    if (rows <= kTransposeFewMax && bytes()) return true;
    // Fast memory (kTransposeFastMemoryGBps): dense columns past 8 by the byte kernels at 4 blocks
    // an SM before the register kernels (measured at 16 columns).
    if (rows > kTransposeFewMax && cols > 8 && fast_memory &&
        launch_transpose_few_bytes<4>(in_b, ld, out_b, rows, cols, stream))
      return true;
    if (launch_transpose_few_vec<T>(in, ld, out, rows, cols, stream, 8, 16)) return true;
    // Few dense columns the register kernels do not fit (with few rows the call above already
    // tried these arguments).
    if (rows > kTransposeFewMax && bytes()) return true;
    if (span()) return true;
    return launch_transpose_chunk<T, Large>(in, ld, out, rows, cols, stream);
  } else if constexpr (sizeof(T) == 4) {
    if (span()) return true;
    if (launch_transpose_few_rows_stage<T>(in, ld, out, rows, cols, stream)) return true;
    if (launch_transpose_few_vec<T>(in, ld, out, rows, cols, stream, 2, 8)) return true;
    if (rows <= 8 || cols <= 8) return launch_transpose_chunk<T, Small>(in, ld, out, rows, cols, stream);
    if (rows <= kTransposeFewMax) return launch_transpose_chunk<T, Wide>(in, ld, out, rows, cols, stream);
    return launch_transpose_chunk<T, Large>(in, ld, out, rows, cols, stream);
  } else {
    if (span()) return true;
    if (launch_transpose_few_rows_stage<T>(in, ld, out, rows, cols, stream)) return true;
    return launch_transpose_chunk<T, Large>(in, ld, out, rows, cols, stream);
  }
}

/// The tiles that move T fastest on the H200 (bench_transpose's "ours-w<W>t<TW>b<BY>", run A of
/// issue 13, 16384^2): Tile where rows, cols and ld are whole words of it and the pointers are
/// aligned to one; where they are not, from kVecMinSide rows where kVec, for bytes Sector where
/// transpose_sector_runs, else (transpose_vec_runs; transpose_vec_kernel) VecNarrow up to
/// kVecNarrowCols columns, bytes of odd output rows on fast memory VecFast
/// (transpose_fast_memory), VecTall in bands of kTransposeVecTallBand tile rows on tall matrices
/// (transpose_vec_tall), Vec on the rest; else Mid where its words fit, else Fallback (any shape:
/// for bytes the shift tile, else one element a word).
template <class T> struct DefaultTranspose;
template <> struct DefaultTranspose<std::uint8_t> {
  using Tile = TransposeTile<8, 32, 16>;     // 256 x 256 bytes, 8-byte words: 0.896 of a copy (4-byte words: 0.856)
  using Mid = TransposeTile<4, 32, 8>;       // 128 x 128 bytes, 4-byte words
  // transpose_vec_kernel where Tile's words do not fit (one aligned 16-byte access a thread both
  // ways, misalignment handled in shared memory; "ours-vec-*" in bench_transpose). Runs U2a and
  // V1 (H200), of a copy: Vec (n8c128) 0.82 against the shift tile's 0.60 on 16385x16383 and
  // 16383x16385, 0.82 against 0.59 on 10007x30011, 0.69-0.70 against 0.57-0.61 on 4097x65537,
  // 65537x4097, 0.82 against 0.59 on the 16382x16379 window; VecNarrow (n16c80, a tile holds
  // rows of up to 80 bytes whole) 0.89 against 0.44 on 1000003x67. Where Mid's 4-byte words fit
  // but not Tile's 8-byte ones, 0.692 (V1) and 0.695 (U2a) against Mid's 0.573 and 0.575 on
  // 4100x262144 (n16c128 0.708 and 0.675: no better over both runs). Rows from kVecMinSide (f32
  // 33x2000003 lost there; u8 127 and 100 rows 0.50 and 0.58 against 0.62 and 0.85). Vec past
  // kVecNarrowCols columns (forced "ours-vec-n8c128", session 19, same run): 528417x127 0.860 of
  // a copy against the few-columns run kernel's 0.563, 671088x100 0.861 against the 128-byte
  // tile's 0.808. With lanes free of bank conflicts (transpose_vec_lanes, session 20, run S2):
  // Vec 0.80-0.84 of a copy on 4100x262144, 4097x65537, 65537x4097, 16385x16383, 10007x30011;
  // VecNarrow 0.826 where it was 0.790 on 16385x16383, the same as before on 1000003x67 (0.90).
  // Session 23 (same run, forced trials, of a copy): with those lanes the 16-vector runs now win,
  // n16c128 against n8c128 0.845 / 0.797 on 16385x16383, 0.838 / 0.796 on 16383x16385, 0.824 /
  // 0.759 on 4097x65537, 0.821 / 0.756 on 65537x4097, 0.836 / 0.787 on 10007x30011, 0.844 /
  // 0.803 on the 16382x16379 window, 0.860 / 0.812 on 4100x262144, 0.780 / 0.774 on 262144x4100
  // (n8c256 0.817 there alone).
  // Session 33 (H100, two processes, of a copy): VecNarrow past kVecNarrowCols too where a tile
  // column reads at most a band's bytes (transpose_vec_column_fits): 10007x30011 0.885 / 0.888
  // against Vec's 0.840 / 0.847, 4097x65537 0.914 / 0.914 against 0.863 / 0.868, 4100x262144 0.870
  // / 0.871 against 0.857 / 0.856, 16385x16383 0.876 / 0.878 against 0.865 / 0.872, the
  // 16382x16379 window 0.868 / 0.876 against 0.850 / 0.854, 65537x4097 0.798 / 0.795 against 0.795
  // / 0.797 (257 tile rows of 642 a band); on taller matrices it lost (262144x4100, 1024 tile rows
  // in one band, 0.660 against 0.787; 671088x100 0.93 / 0.91 against 0.95 / 0.97 and 528417x127
  // 0.91 / 0.89 against 0.93 / 0.95 in bands): a narrower tile column shares more of its sectors
  // with the next one, read again from DRAM once a long column has passed.
  // Session 41 (H100, one process, forced, of a copy; the odd transposes are L2-bound, and a row's
  // run at any offset reads a vector past its columns: 1/8 more on 128 columns, 1/16 on 256):
  // Vec 256 columns, 512 threads (n16c256-t512) against n16c128 / VecNarrow: 16385x16383 0.903
  // against 0.871 / 0.876, 16383x16385 0.903 against 0.876 / 0.873, 10007x30011 0.890 against
  // 0.846 / 0.888, the 16382x16379 window 0.891 against 0.858 / 0.870, 65537x4097 0.826 against
  // 0.796 / 0.799, 4097x65537 0.909 against 0.877 / 0.911, 4100x262144 0.892 against 0.868 /
  // 0.897: Vec past kVecNarrowCols on every matrix that is not tall (VecNarrow where a tile column
  // fits a band, session 33's rule, is gone). 32 vectors (n32c256-t1024) 0.834 / 0.816 / 0.808.
  // Tall (bands): 32 vectors of 512 threads (n32c80-t512, 512 input rows a tile: half the halo
  // rows a byte and half the partial output vectors of 16): 65537x4097 0.848, 262145x4101 0.852
  // (n16c80 in bands: 0.814 and 0.807 in session 34); not where one tile column holds every
  // column (2164803x31: n32c80 0.758 against n16c80 0.866, hence VecNarrow stays n16c80).
  // A second process with these defaults, against the tiles before forced (call 10): 16385x16383
  // 0.901 against 0.868 / 0.875, 4097x65537 0.897 against 0.851 / 0.902, 65537x4097 0.849,
  // 262145x4101 0.850, 2164803x31 0.855, the 16382x16379 window 0.888 against 0.856 / 0.865.
  // ncu of 16383x16385: DRAM 76.4%, L2 82.9%, 205 us.
  static constexpr bool kVec = true;
  using Vec = VecTile<std::uint8_t, 16, 256, 512>;  // 256 input rows x 256 columns, 256-byte output runs
  // Fast memory (kTransposeFastMemoryGBps): past VecNarrow, where the output rows are not whole
  // 4-byte words, 128 columns of 256 threads instead of Vec and VecTall (run S31, H200; output
  // rows of whole words, 4100x262144, keep Vec: 0.876 against 0.841).
  using VecFast = VecTile<std::uint8_t, 16, 128>;
  using VecNarrow = VecTile<std::uint8_t, 16, 80>;
  using VecTall = VecTile<std::uint8_t, 32, 80, 512>;
  static constexpr Index kVecMinSide = 128;
  static constexpr Index kVecNarrowCols = 80;
  // Where Tile's 8-byte words do not fit but 4-byte words do and the output rows are whole 32-byte
  // sectors (rows a multiple of 32, out on 32 bytes), from 256 rows and columns: 256 x 256 bytes
  // in 4-byte words, its stores whole sectors (session 33, H100, two processes, of a copy):
  // 262144x4100 0.942 / 0.939 against Vec's 0.787 / 0.786, 8192x8196 0.922 / 0.936 against 0.903
  // / 0.913; with output rows off their sectors it lost (8196x8192 0.806 / 0.809 against 0.896 /
  // 0.911, 4100x262144 0.751 / 0.748 against 0.857 / 0.856). Mid there: 0.911 on 262144x4100.
  using Sector = TransposeTile<4, 64, 16>;
  // transpose_shift_kernel where Mid's words do not fit and Vec does not run (fewer than
  // kVecMinSide rows): the one-byte tile (TransposeTile<1, 64, 8>, gone since) measured 0.38 of
  // a copy where rows are not whole 4-byte words (16385x16383, 4097x65537, 10007x30011; run T2),
  // the shift tile 0.44-0.48 (it moves a word a load and a store, the one-byte tile a byte).
  using Fallback = ShiftTile<4, 8>;  // 128 x 124 bytes, 4-byte words
};
template <class T> struct DefaultTranspose {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "DefaultTranspose: 1-, 4- or 8-byte elements");
  // 4 bytes: 64 x 64 elements in 8-byte words, 0.948 (one element a word: 0.941 at 64 x 64, 0.793
  // at 32 x 32); 8 bytes: 64 x 64 in 16-byte words 0.913. The one-element fallback is 64 x 64 for
  // both: at f64 16383x16385 it measured 0.877 against 0.821 for 32 x 32 (runs A and C).
  using Tile = TransposeTile<2, 32, 8>;
  using Mid = Tile;
  using Fallback = TransposeTile<1, 64, 8>;
  // transpose_vec_kernel where Tile's words do not fit, as for bytes. Run U2a (H200), f32 of a
  // copy: Vec (n16c256, 64 x 64 elements) 0.86-0.88 against 0.73-0.75 for the shift tile on
  // 16383x16385, 16385x16383, 10007x30011 (i32 0.867 against 0.745), 0.85 against 0.86 on the
  // 16382x16379 window; VecNarrow (n16c144: rows of up to 36 elements whole) 0.886 against 0.742
  // on 2000003x33; 33x2000003 lost on every Vec (0.58 at best against 0.76), hence kVecMinSide.
  // 8-byte elements: n32c256 0.890 against the one-element tile's 0.890: off.
  // Session 41 (H100, one process, forced, of a copy): Vec of 32 vectors, 512 threads
  // (n32c256-t512, 128 input rows a tile: half the halo rows and half the partial output vectors
  // of 16) against n16c256 / VecNarrow (n16c144, session 33's rule below): 16383x16385 0.927
  // against 0.882 / 0.904, 16385x16383 0.924 against 0.882 / 0.900, 10007x30011 0.926 against
  // 0.873 / 0.911, i32 16383x16385 0.923 against 0.879 / 0.899, the 16382x16379 window 0.913
  // against 0.890 / 0.901 (n32c512-t1024 0.914-0.924, n16c512-t512 0.903-0.907): Vec past
  // kVecNarrowCols on every matrix that is not tall. Tall (bands): 32 vectors of 512 threads,
  // 131071x4097 0.889 (n16c144 in bands: 0.842, session 34). A second process (call 10):
  // 16383x16385 0.923 against 0.872 / 0.902, 131071x4097 0.892. ncu of 16383x16385: DRAM 83.4%
  // against 80.4%, L2 84.0% against 86.9%, 766 us against 791, 317M instructions against 379M.
  static constexpr bool kVec = sizeof(T) == 4;
  using Vec = VecTile<T, 32, 256, 512>;
  using VecNarrow = VecTile<T, 16, 144>;
  using VecTall = VecTile<T, 32, 144, 512>;
  static constexpr Index kVecMinSide = 128;
  // Until session 41: VecNarrow past kVecNarrowCols where a tile column fits a band, as for bytes (session 33, H100,
  // two processes, forced, of a copy): 16383x16385 0.892 / 0.898 against Vec's 0.871 / 0.872,
  // 16385x16383 0.901 / 0.900 against 0.875 / 0.874, 10007x30011 0.911 / 0.910 against 0.871 /
  // 0.865, i32 16383x16385 0.904 / 0.897 against 0.871 / 0.873, the 16382x16379 window 0.889 /
  // 0.893 against 0.873 / 0.878, 65537x4097 0.831 / 0.831 against 0.806 / 0.805 (1025 tile rows of
  // 1542 a band), 4097x65537 0.925 / 0.930 against 0.896 / 0.898. Not measured on longer columns.
  static constexpr Index kVecNarrowCols = 36;  // Vec past it: f32 266305x63 0.907 of a copy
  // (forced "ours-vec-n16c256") against the one-element tile's 0.802 (session 19, same run);
  // from session 34 that shape, tall, took VecNarrow in bands of 16 (transpose_vec_tall: 0.975
  // against Vec's 0.953), since session 41 VecTall
};

/// Whether the words of Tile fit the shape and pointers: rows, cols and ld whole words, in and
/// out aligned to one.
template <class T, class Tile>
bool transpose_words_fit(const T* in, Index ld, const T* out, Index rows, Index cols) {
  constexpr int W = Tile::kW;
  constexpr std::uintptr_t kWordBytes = W * sizeof(T);
  return rows % W == 0 && cols % W == 0 && ld % W == 0 && is_aligned(in, kWordBytes) && is_aligned(out, kWordBytes);
}

/// Whether launch_transpose runs a vector tile of DefaultTranspose<T> (kVec): from kVecMinSide
/// rows where Tile's words do not fit (which one: launch_transpose; VecNarrow up to
/// kVecNarrowCols columns, for bytes of odd output rows on fast memory VecFast, VecTall in bands
/// on tall matrices, else Vec).
template <class T>
bool transpose_vec_runs(const T* in, Index ld, const T* out, Index rows, Index cols) {
  using D = DefaultTranspose<T>;
  return D::kVec && rows >= D::kVecMinSide && !transpose_words_fit<T, typename D::Tile>(in, ld, out, rows, cols);
}

/// Whether launch_transpose runs DefaultTranspose<T>::Sector (bytes): where the vector tile would
/// run, 4-byte words fit, the output rows are whole 32-byte sectors and both sides hold a tile.
template <class T>
bool transpose_sector_runs(const T* in, Index ld, const T* out, Index rows, Index cols) {
  if constexpr (sizeof(T) == 1) {
    using D = DefaultTranspose<T>;
    constexpr Index kSide = D::Sector::kTile;
    return rows >= kSide && cols >= kSide && rows % 32 == 0 && is_aligned(out, 32) &&
           transpose_vec_runs<T>(in, ld, out, rows, cols) &&
           transpose_words_fit<T, typename D::Sector>(in, ld, out, rows, cols);
  }
  return false;
}

/// Tile rows of a band of DefaultTranspose's VecTall (VecNarrow until session 41) on tall matrices
/// (transpose_vec_tall).
/// Session 34 (H100, one process, forced, of a copy; "-b16": bands of 16 tile rows, the other
/// trials in transpose_vec_grid's bands): u8 VecNarrow-b16 against Vec (the default then) or
/// VecNarrow in its bands: 262145x4101 0.800 against 0.721 / 0.647, 131073x8195 0.781 against
/// 0.711 / 0.685, 200003x1999 0.810 against 0.705 / 0.656, 1048577x257 0.814 against 0.706 /
/// 0.658, 528417x127 0.938 against 0.914 / 0.892, 65537x4097 0.807 against 0.787 / 0.789; f32
/// VecNarrow-b16 against Vec / VecNarrow: 131071x4097 0.834 against 0.791 / 0.753, 300007x999
/// 0.847 against 0.771 / 0.785, 1000003x131 0.868 against 0.774 / 0.776, 65537x2049 0.853
/// against 0.802 / 0.847, 266305x63 0.975 against 0.953 / 0.902. Vec in bands of 4 to 64 tile
/// rows came between (u8 262145x4101 0.756-0.763). Where a tile column is short, bands of 16
/// lost: u8 32771x4099 0.844 against 0.873 / 0.846, 24593x4099 0.845 against 0.893 / 0.881,
/// 16387x4099 0.862 against 0.888 / 0.907, f32 16387x2049 0.893 against 0.915 / 0.936, 8195x4097
/// 0.888 against 0.951 (VecNarrow); on matrices that are not tall too (u8 4097x65537 0.818
/// against VecNarrow's 0.903, 10007x30011 0.779 against 0.885, f32 16383x16385 0.805 against
/// 0.897). A band of 16 tile rows and a few dozen tile columns is about what the SMs hold at once
/// (4 or 6 blocks an SM, 528 or 792 on 132 SMs): the blocks running together read whole input
/// rows and write neighbouring runs of the same output rows, where a long tile column walked down
/// reads a few sectors of every row (DRAM 70% busy on u8 65537x4097, ncu, session 33).
inline constexpr Index kTransposeVecTallBand = 16;
/// Bytes a tile column of VecNarrow reads past which a tall matrix takes the bands of 16: the wins
/// above read 6.7 MB a column (u8 65537x4097, 257 tile rows) and more, the losses 3.4 MB (u8
/// 32771x4099, 129 tile rows; f32 16387x2049, 257 tile rows, 2.8 MB) and less.
inline constexpr std::size_t kTransposeVecTallBytes = std::size_t(6) << 20;

/// Whether launch_transpose runs Tile (VecTall) in bands of kTransposeVecTallBand tile rows: a
/// matrix of more than one tile column, at least twice as many tile rows (the measured wins have
/// 4.9 to 3900 times as many, the losses of matrices that are not tall fewer rows than columns)
/// and tile columns that read more than kTransposeVecTallBytes.
template <class Tile>
bool transpose_vec_tall(Index rows, Index cols, const void* out) {
  const Index tiles_r = transpose_vec_tile_rows<Tile>(rows, out);
  const Index tiles_c = ceil_div(cols, Index(Tile::kCols));
  return tiles_c > 1 && tiles_r >= 2 * tiles_c &&
         tiles_r * transpose_vec_tile_read_bytes<Tile>() > static_cast<Index>(kTransposeVecTallBytes);
}

/// Short sides the run kernels take: more than kTransposeFewMax elements, at most this many.
inline constexpr Index kTransposeRunMax = 127;

/// The most rows of 4-byte elements launch_transpose_short_side gives the few-rows run kernel
/// (0.93 of a copy at 33 rows, 0.81 at 40 where the tiles reach 0.84).
inline constexpr Index kTransposeRunRowsMax4 = 36;

/// Whether a side of n elements is one the run kernels take.
inline bool transpose_run_side(Index n) { return n > kTransposeFewMax && n <= kTransposeRunMax; }

/// The region bytes of the few-rows run kernel for `rows`: 16 KiB up to 48 rows, else 32 KiB
/// (standalone harness, session 15: 16 KiB ahead at 17-40 rows, 32 KiB from 63).
inline int transpose_rows_run_bytes(Index rows) { return rows <= 48 ? 16384 : 32768; }

/// A matrix with one side of 17 to 127 elements (kTransposeRunMax) on the run kernels where they
/// won against the tiles (standalone harness on the H200, session 15, 2^26-byte matrices, dense
/// rows odd and whole 16 bytes, and windows through odd strides; ratios to a copy of the same
/// bytes, tile -> run):
/// - u8 few rows (any stride), regions of 16 KiB up to 48 rows, else 32 KiB: 17 rows 0.06 ->
///   0.85-0.88, 24 0.11-0.20 -> 0.78-0.86, 31 0.11 -> 0.86-0.89, 32 0.15-0.24 -> 0.79-0.81, 40
///   0.19-0.33 -> 0.77-0.87, 63 0.22 -> 0.78-0.80, 64 0.29-0.46 -> 0.77-0.78, 100 0.43 -> 0.60,
///   127 0.39-0.40 -> 0.65-0.68; the 128-byte tile keeps rows from 96 where its 4-byte words
///   fit (100 x 671088: 0.83 against 0.68).
/// - u8 few dense columns, regions of 32 KiB: 17 columns 0.38 -> 0.70-0.74, 24 0.26-0.51 ->
///   0.65-0.70, 31 0.61 -> 0.67-0.72, 32 0.32-0.56 -> 0.64-0.65, 40 (whole 8-byte words, the
///   256-byte tile) 0.42 -> 0.70, 64 likewise 0.55 -> 0.63, 100 odd 0.48 -> 0.50, 127 0.42-0.56
///   -> 0.54-0.69; the vector tiles keep 31 (33 before session 33) to 127 columns where they
///   run (from session 19 also 81 to 127, Vec: 127 columns 0.86 against 0.56; VecNarrow to 80:
///   40 odd rows 0.73 against 0.63, 63: 0.87-0.89 against 0.63-0.70), the 128-byte tile from 96 where its words
///   fit and Vec does not run (100 x 671088: 0.83 against 0.67). Windows (ld > cols) stay on the
///   tiles (the run kernel reads the gaps: 0.38-0.50 against 0.40-0.75). Session 21: the run
///   kernel's span read as 16-byte vectors (runs S3 of bench/RESULTS.md, against the word reads
///   in one run): 17 columns 0.74 -> 0.79, 24 0.74 -> 0.84, 31 0.70 -> 0.75, 40 0.72 -> 0.81.
///   Session 33 (H100, two processes, forced, run kernel against VecNarrow, odd rows): 25
///   columns 0.888 / 0.879 against 0.785 / 0.780, 27 0.90 / 0.90 against 0.84 / 0.85, 29 0.87 /
///   0.85 against 0.85 / 0.84, 30 0.88 / 0.87 against 0.87 / 0.86, 31 0.88 / 0.87 against 0.88 /
///   0.87 (a third process: 0.851 against 0.870), 32 0.84 / 0.83 against 0.88 / 0.89: the vector
///   tiles from 31 columns.
/// - f32 few rows up to 31, regions of 16 KiB (17 rows 0.48 -> 0.93-0.97, 24 0.64-0.77 ->
///   0.81-0.87, 31 0.79 -> 0.96); from 32 the 64-element tile as fast or faster (40: 0.91-1.00
///   against 0.80-0.84). Session 22 (bench_transpose, H200, ratio to a copy, default -> forced
///   run kernel): 33 x 2000003 0.724 -> 0.930, 40 x 1677721 0.837 -> 0.810, 48 x 1398101 0.853
///   -> 0.792, 63 x 1065221 0.904 -> 0.900: the run kernel to kTransposeRunRowsMax4 rows.
/// - f32 few dense columns up to 24, 32 KiB (17: 0.61 -> 0.82-0.86, 24: 0.80-0.84 ->
///   0.83-0.88); from 31 the tiles. 8-byte elements: the tiles (not measured on the
///   run kernels). `fast_memory` as for launch_transpose_few. Returns whether one launched.
template <class T>
bool launch_transpose_short_side(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream,
                                 bool fast_memory) {
  using D = DefaultTranspose<T>;
  if (transpose_run_side(rows) && rows <= cols) {
    if constexpr (sizeof(T) == 1) {
      if (rows >= 96 && transpose_words_fit<T, typename D::Mid>(in, ld, out, rows, cols)) return false;
    } else if constexpr (sizeof(T) == 4) {
      if (rows > kTransposeRunRowsMax4) return false;
    } else {
      return false;
    }
    launch_transpose_rows_run(in, ld, out, rows, cols, stream, transpose_rows_run_bytes(rows));
    return true;
  } else if (transpose_run_side(cols) && cols < rows && ld == cols) {
    if constexpr (sizeof(T) == 1) {
      // From 31 columns the vector tiles (32 on fast memory: kTransposeFastMemoryGBps).
      if (cols >= (fast_memory ? 32 : 31) && transpose_vec_runs<T>(in, ld, out, rows, cols)) return false;
      if (cols >= 96 && transpose_words_fit<T, typename D::Mid>(in, ld, out, rows, cols)) return false;
      launch_transpose_cols_run(in, ld, out, rows, cols, stream, 32768);
      return true;
    } else if constexpr (sizeof(T) == 4) {
      if (cols > 24) return false;
      launch_transpose_cols_run(in, ld, out, rows, cols, stream, 32768);
      return true;
    }
  }
  return false;
}

/// The tile transpose with Tile where its words fit, else Mid, else Fallback (any shape: a
/// ShiftTile, or a tile of one element a word).
template <class T, class Tile, class Mid, class Fallback>
void launch_transpose_words(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if (transpose_words_fit<T, Tile>(in, ld, out, rows, cols))
    launch_transpose_tile<T, Tile>(in, ld, out, rows, cols, stream);
  else if (transpose_words_fit<T, Mid>(in, ld, out, rows, cols))
    launch_transpose_tile<T, Mid>(in, ld, out, rows, cols, stream);
  else if constexpr (std::is_same_v<Fallback, ShiftTile<Fallback::kW, Fallback::kBY>>)
    launch_transpose_shift<T, Fallback>(in, ld, out, rows, cols, stream);
  else {
    static_assert(Fallback::kW == 1, "launch_transpose_words: the fallback tile moves single elements");
    launch_transpose_tile<T, Fallback>(in, ld, out, rows, cols, stream);
  }
}

/// out (dense, cols x rows) = transpose of in (rows x cols, ld elements between row starts),
/// on `stream`. A single row is already its own transpose in memory, and so is a dense single
/// column: a copy. A few rows or a few columns (at most kTransposeFewMax) take
/// launch_transpose_few, a short side (to kTransposeRunMax) launch_transpose_short_side where it
/// won (`few` = false skips both, for the bench); the rest the kernels of DefaultTranspose.
template <class T>
void launch_transpose(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream, bool few = true) {
  if (rows == 0 || cols == 0) return;
  if (rows == 1 || (cols == 1 && ld == 1)) {
    DEVMAT_CUDA_TRY(cudaMemcpyAsync(out, in, static_cast<std::size_t>(rows * cols) * sizeof(T),
                                    cudaMemcpyDeviceToDevice, stream));
    return;
  }
  const bool fast_memory = transpose_fast_memory();
  if (few && launch_transpose_few<T>(in, ld, out, rows, cols, stream, fast_memory)) return;
  if (few && launch_transpose_short_side<T>(in, ld, out, rows, cols, stream, fast_memory)) return;
  using D = DefaultTranspose<T>;
  if constexpr (D::kVec) {
    if constexpr (sizeof(T) == 1)
      if (transpose_sector_runs<T>(in, ld, out, rows, cols))
        return launch_transpose_tile<T, typename D::Sector>(in, ld, out, rows, cols, stream);
    if (transpose_vec_runs<T>(in, ld, out, rows, cols)) {
      if (cols <= D::kVecNarrowCols)
        return launch_transpose_vec<T, typename D::VecNarrow>(in, ld, out, rows, cols, stream);
      if constexpr (sizeof(T) == 1)
        if (rows % 4 != 0 && fast_memory)
          return launch_transpose_vec<T, typename D::VecFast>(in, ld, out, rows, cols, stream);
      using Tall = typename D::VecTall;
      if (transpose_vec_tall<Tall>(rows, cols, out))
        return launch_transpose_vec<T, Tall>(in, ld, out, rows, cols, stream, kTransposeVecMaxTileCols,
                                             kTransposeVecTallBand);
      return launch_transpose_vec<T, typename D::Vec>(in, ld, out, rows, cols, stream);
    }
  }
  launch_transpose_words<T, typename D::Tile, typename D::Mid, typename D::Fallback>(in, ld, out, rows, cols, stream);
}

/// An alternative kernel forced on every shape where it applies: its bench impl name and its
/// launch (the whole transpose of any shape, stride and alignment of in and out), for
/// bench_transpose and test_transpose_variants alike.
template <class T>
struct TransposeTrial {
  const char* name;
  void (*launch)(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream);
};

/// launch_transpose with transpose_shift_kernel on ShiftTile<W, BY> on every shape past the
/// few-rows / few-columns ones.
template <class T, int W, int BY>
void launch_transpose_shift_in(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (launch_transpose_few<T>(in, ld, out, rows, cols, stream)) return;
  launch_transpose_shift<T, ShiftTile<W, BY>>(in, ld, out, rows, cols, stream);
}

template <class T, int W, int BY>
constexpr TransposeTrial<T> shift_trial(const char* name) {
  return {name, &launch_transpose_shift_in<T, W, BY>};
}

/// launch_transpose with transpose_vec_kernel on VecTile<T, kNV, kColBytes, kThreads> on every
/// shape past the few-rows / few-columns ones, in column windows of kMaxTileCols tile columns, in
/// bands of kBand tile rows (0: transpose_vec_grid's).
template <class T, int kNV, int kColBytes, Index kMaxTileCols = kTransposeVecMaxTileCols, Index kBand = 0,
          int kThreads = 256>
void launch_transpose_vec_in(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (launch_transpose_few<T>(in, ld, out, rows, cols, stream)) return;
  launch_transpose_vec<T, VecTile<T, kNV, kColBytes, kThreads>>(in, ld, out, rows, cols, stream, kMaxTileCols, kBand);
}

template <class T, int kNV, int kColBytes, Index kMaxTileCols = kTransposeVecMaxTileCols, Index kBand = 0,
          int kThreads = 256>
constexpr TransposeTrial<T> vec_trial(const char* name) {
  return {name, &launch_transpose_vec_in<T, kNV, kColBytes, kMaxTileCols, kBand, kThreads>};
}

/// launch_transpose_vec_in with transpose_vec_pipe_kernel (launch_transpose_vec_pipe) on
/// VecTile<T, kNV, kColBytes, kThreads>, in bands of kBand tile rows (0: transpose_vec_grid's).
template <class T, int kNV, int kColBytes, int kThreads = 256, Index kBand = 0>
void launch_transpose_vec_pipe_in(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (launch_transpose_few<T>(in, ld, out, rows, cols, stream)) return;
  launch_transpose_vec_pipe<T, VecTile<T, kNV, kColBytes, kThreads>>(in, ld, out, rows, cols, stream, kBand);
}

template <class T, int kNV, int kColBytes, int kThreads = 256, Index kBand = 0>
constexpr TransposeTrial<T> vec_pipe_trial(const char* name) {
  return {name, &launch_transpose_vec_pipe_in<T, kNV, kColBytes, kThreads, kBand>};
}

/// Every shape with the given few-rows / few-columns chunk kernel where it applies (the rest as
/// launch_transpose).
template <class T, class Chunk>
void launch_transpose_chunk_in(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (launch_transpose_chunk<T, Chunk>(in, ld, out, rows, cols, stream)) return;
  launch_transpose<T>(in, ld, out, rows, cols, stream);
}

template <class T, int kBytes, int kThreads>
constexpr TransposeTrial<T> chunk_trial(const char* name) {
  return {name, &launch_transpose_chunk_in<T, TransposeChunk<kBytes, kThreads>>};
}

/// Every shape with the register kernels wherever their vectors line up (2 to 16 rows or
/// columns; the rest as launch_transpose).
template <class T>
void launch_transpose_few_vec_in(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (launch_transpose_few_vec<T>(in, ld, out, rows, cols, stream)) return;
  launch_transpose<T>(in, ld, out, rows, cols, stream);
}

/// Every shape with transpose_few_rows_stage_kernel where it applies: 2 to 16 rows of 4- or
/// 8-byte elements on 16 bytes (the rest as launch_transpose).
template <class T>
void launch_transpose_few_rows_stage_in(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (launch_transpose_few_rows_stage<T>(in, ld, out, rows, cols, stream)) return;
  launch_transpose<T>(in, ld, out, rows, cols, stream);
}

/// Every shape with the vector byte kernels of few rows / few columns where they apply (the rest
/// as launch_transpose).
template <class T, int kMinBlocks = 1>
void launch_transpose_few_bytes_in(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  static_assert(sizeof(T) == 1, "launch_transpose_few_bytes_in: bytes");
  if (rows == 0 || cols == 0) return;
  const auto* in_b = reinterpret_cast<const std::uint8_t*>(in);
  auto* out_b = reinterpret_cast<std::uint8_t*>(out);
  if (rows > 1 && launch_transpose_few_bytes<kMinBlocks>(in_b, ld, out_b, rows, cols, stream)) return;
  launch_transpose<T>(in, ld, out, rows, cols, stream);
}

/// Every shape with transpose_few_rows_regs_kernel (with or without pairs) where it applies: 2
/// to 16 rows of bytes (the rest as launch_transpose).
template <class T, bool kPairs, bool kLaneExt = false>
void launch_transpose_few_rows_regs_in(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  static_assert(sizeof(T) == 1, "launch_transpose_few_rows_regs_in: bytes");
  if (rows == 0 || cols == 0) return;
  if (launch_transpose_few_rows_regs<kPairs, kLaneExt>(reinterpret_cast<const std::uint8_t*>(in), ld,
                                                       reinterpret_cast<std::uint8_t*>(out), rows, cols, stream))
    return;
  launch_transpose<T>(in, ld, out, rows, cols, stream);
}

/// Every shape with transpose_few_rows_half_kernel<.., kStage> where it applies: 2 to 16 rows of
/// bytes (the rest as launch_transpose).
template <class T, bool kStage = false>
void launch_transpose_few_rows_half_in(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  static_assert(sizeof(T) == 1, "launch_transpose_few_rows_half_in: bytes");
  if (rows == 0 || cols == 0) return;
  if (launch_transpose_few_rows_half<kStage>(reinterpret_cast<const std::uint8_t*>(in), ld,
                                             reinterpret_cast<std::uint8_t*>(out), rows, cols, stream))
    return;
  launch_transpose<T>(in, ld, out, rows, cols, stream);
}

/// Every shape with transpose_few_cols_span_kernel where a few columns lie at most 16 elements
/// apart (any number of rows past one; the rest as launch_transpose).
template <class T, int kMinBlocks = 1>
void launch_transpose_few_cols_span_in(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (rows > 1 && launch_transpose_few_cols_span<T, kMinBlocks>(in, ld, out, rows, cols, stream)) return;
  launch_transpose<T>(in, ld, out, rows, cols, stream);
}

/// Every shape with a short side of 17 to kTransposeRunMax elements on the run kernels (few
/// rows: transpose_rows_run_bytes; few columns at most twice their count apart: 32 KiB),
/// whether or not launch_transpose_short_side takes it (the rest as launch_transpose).
template <class T, bool kAhead = true>
void launch_transpose_run_in(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (transpose_run_side(rows) && rows <= cols)
    return launch_transpose_rows_run<T, kAhead>(in, ld, out, rows, cols, stream, transpose_rows_run_bytes(rows));
  if (transpose_run_side(cols) && cols < rows && ld <= 2 * cols)
    return launch_transpose_cols_run(in, ld, out, rows, cols, stream, 32768);
  launch_transpose<T>(in, ld, out, rows, cols, stream);
}

/// The alternatives for T (by element size), each a default somewhere, forced so that one run
/// shows how close they come: the few-rows / few-columns kernels one at a time
/// ("ours-chunk<KiB>k-t<threads>"; "ours-regs16": the register kernels for 1- and 4-byte
/// elements where their vectors line up; "ours-bytes16": bytes of few rows / dense few columns
/// as 16-byte vectors at any alignment; "ours-span16": few columns at most 16 elements apart as
/// one span of 16-byte vectors at any alignment of in; "-o4": those two with __launch_bounds__
/// asking for 4 blocks an SM (128 registers at 16 columns, against 142-188); "ours-rows16":
/// bytes of 2 to 16 rows in registers, lanes trading vectors in pairs so that stores write
/// whole sectors, "-direct" without; "ours-rows16h": the same on 8 columns a thread,
/// transpose_few_rows_half_kernel; "ours-rows16hs": that kernel storing its run through shared
/// memory (kStage);
/// "ours-rows16e": pairs, lane 31's 33rd vectors loaded one a lane and shuffled, kLaneExt;
/// "ours-rows16s": 4- and 8-byte elements of 2 to 16 rows in registers, the stores staged
/// through shared memory, transpose_few_rows_stage_kernel),
/// the run kernels on every short side of 17 to 127 elements ("ours-run"), and past those shapes
/// transpose_vec_kernel ("ours-vec-n<kNV>c<column bytes>" on VecTile<T, kNV, column bytes>; "-w2":
/// in column windows of 2 tile columns, as a matrix past 65535 tile columns goes; "-t512": blocks
/// of 512 threads), transpose_vec_pipe_kernel ("ours-vecp-n<kNV>c<column bytes>": the same tiles on
/// persistent blocks that load the next tile while they store one; unmeasured when written, session
/// 45) and for bytes transpose_shift_kernel ("ours-shift-w4b8"). Dropped after runs U2a and V1,
/// below the defaults on every shape measured: transpose_any_kernel (0.13-0.65 of a copy),
/// transpose_sector_kernel (0.33-0.78), the shift tile's 8-byte words and its trials for 4-byte
/// elements, the tiles walked across, the vector tile on few rows / columns (0.21-0.74) and walked
/// in bands everywhere (0.54-0.87; since session 21 on tall matrices only, transpose_vec_grid), the
/// chunks reading strided byte columns as spans. Dropped in session 40: a TMA kernel (128-byte
/// swizzled boxes in and out, branch tma-transpose) whose phase maps gave odd shapes a tensor map
/// each, but at box coordinates whose innermost offset is not a multiple of 16 bytes, which the TMA
/// refuses (an illegal instruction); on an aligned f32 16384^2 (H100) it ran 0.81 of a copy against
/// this dispatch's 0.97.
#define DEVMAT_TRANSPOSE_CHUNK_TRIALS                                                                  \
  chunk_trial<T, 8192, 128>("ours-chunk8k-t128"), chunk_trial<T, 32768, 256>("ours-chunk32k-t256"), \
      chunk_trial<T, 32768, 512>("ours-chunk32k-t512")
template <class T, std::size_t kBytes = sizeof(T)>
struct TransposeTrials;
template <class T>
struct TransposeTrials<T, 1> {
  static constexpr int kCount = 36;
  static constexpr TransposeTrial<T> kAll[kCount] = {
      shift_trial<T, 4, 8>("ours-shift-w4b8"),
      TransposeTrial<T>{"ours-run", &launch_transpose_run_in<T>},
      DEVMAT_TRANSPOSE_CHUNK_TRIALS,
      TransposeTrial<T>{"ours-regs16", &launch_transpose_few_vec_in<T>},
      TransposeTrial<T>{"ours-bytes16", &launch_transpose_few_bytes_in<T>},
      TransposeTrial<T>{"ours-bytes16-o4", &launch_transpose_few_bytes_in<T, 4>},
      TransposeTrial<T>{"ours-span16", &launch_transpose_few_cols_span_in<T>},
      TransposeTrial<T>{"ours-span16-o4", &launch_transpose_few_cols_span_in<T, 4>},
      TransposeTrial<T>{"ours-rows16", &launch_transpose_few_rows_regs_in<T, true>},
      TransposeTrial<T>{"ours-rows16-direct", &launch_transpose_few_rows_regs_in<T, false>},
      TransposeTrial<T>{"ours-rows16h", &launch_transpose_few_rows_half_in<T>},
      TransposeTrial<T>{"ours-rows16hs", &launch_transpose_few_rows_half_in<T, true>},
      TransposeTrial<T>{"ours-rows16e", &launch_transpose_few_rows_regs_in<T, true, true>},
      vec_trial<T, 8, 128>("ours-vec-n8c128"),
      vec_trial<T, 8, 256>("ours-vec-n8c256"),
      vec_trial<T, 16, 128>("ours-vec-n16c128"),
      vec_trial<T, 8, 80>("ours-vec-n8c80"),
      vec_trial<T, 16, 80>("ours-vec-n16c80"),
      vec_trial<T, 8, 128, 2>("ours-vec-n8c128-w2"),
      vec_trial<T, 16, 128, kTransposeVecMaxTileCols, 4>("ours-vec-n16c128-b4"),
      vec_trial<T, 16, 128, kTransposeVecMaxTileCols, 8>("ours-vec-n16c128-b8"),
      vec_trial<T, 16, 128, kTransposeVecMaxTileCols, 16>("ours-vec-n16c128-b16"),
      vec_trial<T, 16, 128, kTransposeVecMaxTileCols, 32>("ours-vec-n16c128-b32"),
      vec_trial<T, 16, 128, kTransposeVecMaxTileCols, 64>("ours-vec-n16c128-b64"),
      vec_trial<T, 16, 80, kTransposeVecMaxTileCols, 16>("ours-vec-n16c80-b16"),
      vec_trial<T, 32, 128, kTransposeVecMaxTileCols, 0, 512>("ours-vec-n32c128-t512"),
      vec_trial<T, 32, 80, kTransposeVecMaxTileCols, 0, 512>("ours-vec-n32c80-t512"),
      vec_trial<T, 16, 256, kTransposeVecMaxTileCols, 0, 512>("ours-vec-n16c256-t512"),
      vec_trial<T, 32, 256, kTransposeVecMaxTileCols, 0, 1024>("ours-vec-n32c256-t1024"),
      vec_pipe_trial<T, 16, 128>("ours-vecp-n16c128"),
      vec_pipe_trial<T, 8, 128>("ours-vecp-n8c128"),
      vec_pipe_trial<T, 16, 256, 512>("ours-vecp-n16c256-t512"),
      vec_pipe_trial<T, 32, 80, 512, kTransposeVecTallBand>("ours-vecp-n32c80-t512-b16"),
      TransposeTrial<T>{"ours-run-a1", &launch_transpose_run_in<T, false>}};
};
template <class T>
struct TransposeTrials<T, 4> {
  static constexpr int kCount = 25;
  static constexpr TransposeTrial<T> kAll[kCount] = {
      DEVMAT_TRANSPOSE_CHUNK_TRIALS,
      TransposeTrial<T>{"ours-run", &launch_transpose_run_in<T>},
      TransposeTrial<T>{"ours-regs16", &launch_transpose_few_vec_in<T>},
      TransposeTrial<T>{"ours-rows16s", &launch_transpose_few_rows_stage_in<T>},
      TransposeTrial<T>{"ours-span16", &launch_transpose_few_cols_span_in<T>},
      TransposeTrial<T>{"ours-span16-o4", &launch_transpose_few_cols_span_in<T, 4>},
      vec_trial<T, 8, 128>("ours-vec-n8c128"),
      vec_trial<T, 8, 256>("ours-vec-n8c256"),
      vec_trial<T, 16, 256>("ours-vec-n16c256"),
      vec_trial<T, 16, 144>("ours-vec-n16c144"),
      vec_trial<T, 16, 256, 2>("ours-vec-n16c256-w2"),
      vec_trial<T, 16, 256, kTransposeVecMaxTileCols, 8>("ours-vec-n16c256-b8"),
      vec_trial<T, 16, 256, kTransposeVecMaxTileCols, 16>("ours-vec-n16c256-b16"),
      vec_trial<T, 16, 256, kTransposeVecMaxTileCols, 32>("ours-vec-n16c256-b32"),
      vec_trial<T, 16, 256, kTransposeVecMaxTileCols, 64>("ours-vec-n16c256-b64"),
      vec_trial<T, 16, 144, kTransposeVecMaxTileCols, 16>("ours-vec-n16c144-b16"),
      vec_trial<T, 32, 256, kTransposeVecMaxTileCols, 0, 512>("ours-vec-n32c256-t512"),
      vec_pipe_trial<T, 32, 256, 512>("ours-vecp-n32c256-t512"),
      vec_pipe_trial<T, 16, 256>("ours-vecp-n16c256"),
      vec_pipe_trial<T, 32, 144, 512, kTransposeVecTallBand>("ours-vecp-n32c144-t512-b16"),
      vec_trial<T, 32, 144, kTransposeVecMaxTileCols, 0, 512>("ours-vec-n32c144-t512"),
      vec_trial<T, 16, 512, kTransposeVecMaxTileCols, 0, 512>("ours-vec-n16c512-t512"),
      vec_trial<T, 32, 512, kTransposeVecMaxTileCols, 0, 1024>("ours-vec-n32c512-t1024")};
};
template <class T>
struct TransposeTrials<T, 8> {
  static constexpr int kCount = 9;
  static constexpr TransposeTrial<T> kAll[kCount] = {
      DEVMAT_TRANSPOSE_CHUNK_TRIALS,
      TransposeTrial<T>{"ours-run", &launch_transpose_run_in<T>},
      TransposeTrial<T>{"ours-rows16s", &launch_transpose_few_rows_stage_in<T>},
      TransposeTrial<T>{"ours-span16", &launch_transpose_few_cols_span_in<T>},
      vec_trial<T, 8, 128>("ours-vec-n8c128"),
      vec_trial<T, 16, 256>("ours-vec-n16c256"),
      vec_trial<T, 32, 256>("ours-vec-n32c256")};
};

#undef DEVMAT_TRANSPOSE_CHUNK_TRIALS

}  // namespace devmat::detail

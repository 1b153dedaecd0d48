// Launcher of the transpose (kernels/transpose.cuh): a copy when the transpose is one already,
// the few-rows / few-columns kernels measured fastest for the element size when a side is at
// most kTransposeFewMax, else the widest tile whose words fit the shape and the pointers; sizes
// the grid, launches. Also the kernels under trial (TransposeTrials) for the bench and tests.
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

namespace devmat::detail {

/// The order in which blocks walk the tiles: across (along input rows) or down (along output
/// rows); kAuto goes down when output rows do not start on 128-byte lines, so that the blocks
/// whose runs meet inside a line run together.
enum class TileOrder { kAuto, kAcross, kDown };

template <class T, class Tile>
void launch_transpose_tile(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream,
                           TileOrder order = TileOrder::kAuto) {
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
  const bool down = order == TileOrder::kDown ||
                    (order == TileOrder::kAuto && (rows * static_cast<Index>(sizeof(T))) % 128 != 0);
  launch(kernel, static_cast<unsigned>(tiles_r * tiles_c), dim3(32, Tile::kBY), kSmemBytes, stream, in, ld, out,
         rows, cols, tiles_r, tiles_c, down, shift);
}

/// transpose_any_kernel on an AnyTile (any shape, stride and alignment of the element type):
/// not taken by launch_transpose until measured faster; the bench times it beside the default
/// ("ours-any-r<rows>-t<threads>") and test_transpose_variants checks it. kAuto walks down where
/// output rows do not start on 128-byte lines, as the tile does.
template <class T, class Tile>
void launch_transpose_any(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream,
                          TileOrder order = TileOrder::kAuto) {
  if (rows == 0 || cols == 0) return;
  constexpr int kSmemBytes = Tile::kSmemBytes;
  static_assert(kSmemBytes <= 200 * 1024, "launch_transpose_any: tile exceeds shared memory");
  const auto kernel = &transpose_any_kernel<T, Tile>;
  if constexpr (kSmemBytes > 48 * 1024)  // opts in to more than 48 KiB (once per device)
    blocks_per_sm(reinterpret_cast<const void*>(kernel), Tile::kThreads, kSmemBytes);
  const Index tiles_r = ceil_div(rows, Index(Tile::kRows)), tiles_c = ceil_div(cols, Index(Tile::kCols));
  const bool down = order == TileOrder::kDown ||
                    (order == TileOrder::kAuto && (rows * static_cast<Index>(sizeof(T))) % 128 != 0);
  launch(kernel, static_cast<unsigned>(tiles_r * tiles_c), dim3(Tile::kThreads), kSmemBytes, stream, in, ld, out,
         rows, cols, tiles_r, tiles_c, down);
}

/// Launches kernel (transpose_shift_kernel or transpose_sector_kernel on Tile, a ShiftTile) with
/// tiles `step` input rows apart. kAuto walks down where output rows do not start on 128-byte
/// lines, as the tile does.
template <class T, class Tile, class Kernel>
void launch_shift_tiles(Kernel kernel, Index step, const T* in, Index ld, T* out, Index rows, Index cols,
                        cudaStream_t stream, TileOrder order) {
  if (rows == 0 || cols == 0) return;
  constexpr int kSmemBytes = Tile::kRows * 32 * Tile::kW * static_cast<int>(sizeof(T));
  static_assert(kSmemBytes <= 200 * 1024, "launch_shift_tiles: tile exceeds shared memory");
  if constexpr (kSmemBytes > 48 * 1024)  // opts in to more than 48 KiB (once per device)
    blocks_per_sm(reinterpret_cast<const void*>(kernel), 32 * Tile::kBY, kSmemBytes);
  const Index tiles_r = ceil_div(rows, step), tiles_c = ceil_div(cols, Index(Tile::kCols));
  const bool down = order == TileOrder::kDown ||
                    (order == TileOrder::kAuto && (rows * static_cast<Index>(sizeof(T))) % 128 != 0);
  launch(kernel, static_cast<unsigned>(tiles_r * tiles_c), dim3(32, Tile::kBY), kSmemBytes, stream, in, ld, out,
         rows, cols, tiles_r, tiles_c, down);
}

/// transpose_shift_kernel on Tile (a ShiftTile: any shape, stride and alignment of T, words of
/// Tile::kW elements, 4 or 8 bytes).
template <class T, class Tile>
void launch_transpose_shift(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream,
                            TileOrder order = TileOrder::kAuto) {
  launch_shift_tiles<T, Tile>(&transpose_shift_kernel<T, Tile::kW, Tile::kBY>, Index(Tile::kRows), in, ld, out, rows,
                              cols, stream, order);
}

/// transpose_sector_kernel on Tile (a SectorTile: as transpose_shift_kernel, the output written
/// as whole 32-byte sectors, tiles kStep rows apart). Under trial only.
template <class T, class Tile>
void launch_transpose_sector(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream,
                             TileOrder order = TileOrder::kAuto) {
  launch_shift_tiles<T, Tile>(&transpose_sector_kernel<T, Tile::kW, Tile::kBY>, Index(Tile::kStep), in, ld, out,
                              rows, cols, stream, order);
}

/// transpose_vec_kernel on Tile (a VecTile: any shape, stride and alignment of T; one aligned
/// 16-byte access a thread on both sides, tiles owning whole vectors of every output row), its
/// tiles walked down the whole grid, or in bands of `band` tile rows where band > 0
/// (transpose_vec_tile).
template <class T, class Tile>
void launch_transpose_vec(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream,
                          Index band = 0) {
  if (rows == 0 || cols == 0) return;
  constexpr int kSmemBytes = Tile::kSmemBytes;
  static_assert(kSmemBytes <= 200 * 1024, "launch_transpose_vec: tile exceeds shared memory");
  const auto kernel = &transpose_vec_kernel<T, Tile>;
  if constexpr (kSmemBytes > 48 * 1024)  // opts in to more than 48 KiB (once per device)
    blocks_per_sm(reinterpret_cast<const void*>(kernel), Tile::kThreads, kSmemBytes);
  const Index tiles_r = transpose_vec_tiles_r(rows * static_cast<Index>(sizeof(T)),
                                              static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(out)), Tile::kNV);
  const Index tiles_c = ceil_div(cols, Index(Tile::kCols));
  launch(kernel, static_cast<unsigned>(tiles_r * tiles_c), dim3(Tile::kThreads), kSmemBytes, stream, in, ld, out,
         rows, cols, tiles_r, band > 0 && band < tiles_r ? band : tiles_r);
}

/// Sides of at most this many elements take the few-rows / few-columns kernels.
inline constexpr Index kTransposeFewMax = 16;

/// Rows (or columns) of a few-columns (few-rows) chunk of `few` elements a row: as many as fill
/// the chunk, in multiples of 128.
template <class T, class Chunk = TransposeChunk<>>
int transpose_chunk_lines(Index few) {
  const Index lines = Chunk::kBytes / (few * static_cast<Index>(sizeof(T))) / 128 * 128;
  return static_cast<int>(lines < 128 ? 128 : lines);
}

/// The few-rows / few-columns chunk kernels with Chunk, where a side is at most
/// kTransposeFewMax and a chunk holds 128 lines of it (bytes of the few-rows kernel are stored
/// as aligned words: out aligned to 4, as a DeviceMatrix always is). With kSpan, few strided
/// columns of bytes (ld up to twice cols) take chunks of rows as whole as their stride, so the
/// kernel reads each block's rows, gaps included, as one span of words instead of byte by byte.
/// Returns whether it launched.
template <class T, class Chunk, bool kSpan = false>
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
    const bool span = kSpan && sizeof(T) == 1 && ld != cols && ld <= 2 * cols;  // ld <= 32: 128 lines fit
    const int per_block = transpose_chunk_lines<T, Chunk>(span ? ld : cols);
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

/// The byte kernels of 2 to 16 rows or dense columns that move 16-byte vectors at any alignment
/// of the rows (transpose_few_rows_bytes_kernel: out on 16 bytes; transpose_few_cols_bytes_kernel:
/// ld == cols, in on 16 bytes). Returns whether it launched.
template <int kN = 2>
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
      launch(&transpose_few_cols_bytes_kernel<kN>, static_cast<unsigned>(ceil_div(rows, kRowsWarp * kFewBytesWarps)),
             dim3(32 * kFewBytesWarps), 0, stream, in, out, rows);
      return true;
    }
    return launch_transpose_few_bytes<kN + 1>(in, ld, out, rows, cols, stream);
  }
  return false;
}

/// transpose_few_cols_span_kernel<T, ld> where a few columns lie kL = ld (2 .. 16) elements
/// apart (cols <= ld: a window of a narrow matrix, or dense, at any alignment of in; every row
/// count). Returns whether it launched.
template <class T, int kL = 2>
bool launch_transpose_few_cols_span(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if constexpr (kL <= kTransposeFewMax) {
    if (ld == kL && cols <= kL) {
      const Index per_block = 512 / static_cast<Index>(sizeof(T)) * kFewBytesWarps;
      launch(&transpose_few_cols_span_kernel<T, kL>, static_cast<unsigned>(ceil_div(rows, per_block)),
             dim3(32 * kFewBytesWarps), 0, stream, in, out, rows, static_cast<int>(cols));
      return true;
    }
    return launch_transpose_few_cols_span<T, kL + 1>(in, ld, out, rows, cols, stream);
  }
  return false;
}

/// Few columns (more than kTransposeFewMax rows) through a stride of at most kTransposeFewMax
/// elements that the register (and, for bytes, byte vector) kernels do not take (a window of a
/// narrow matrix, dense rows from an input off its vector, dense rows the register kernels do
/// not fit) go to transpose_few_cols_span_kernel instead of the chunks, by element size
/// ("ours-span16"; run U2a, the default there of a copy: u8 window 16777216x5 of a matrix 7
/// wide 0.26 (ceiling ~0.83), f32 window 16777216x3 of 5 wide 0.68 (ceiling ~0.75), f32 dense
/// 9999991x7 0.74, 4194304x16 0.67). THE SWITCHES (issue 13, branch transpose7): a
/// specialization `template <> inline constexpr bool kTransposeFewColsSpan<1> = true;` once
/// measured faster for that size.
template <std::size_t kBytes>
inline constexpr bool kTransposeFewColsSpan = false;

/// The few-rows / few-columns kernels that won on the H200 (bench_transpose's trials, run A of
/// issue 13), by element size. Ratios to a copy of the same bytes, before -> after:
/// - 1 byte: up to 16 rows the byte vector kernels (launch_transpose_few_bytes; run C of issue
///   13, against the register kernels or the chunks: 3 x 2^26 0.78 -> 0.83, 8 x 2^24 0.37 ->
///   0.66, 16 x 2^24 0.44 -> 0.57, 5 x 40000001 0.33 -> 0.84); the register kernels up to 16
///   dense columns (2^26 x 3: 0.41 -> 0.99, 2^24 x 16: 0.35 -> 0.84; the byte kernels 0.99 and
///   0.78 there), the byte kernels for the dense columns they do not fit (40000001 x 5: 0.33 ->
///   0.83); else 32 KiB chunks of 256 threads.
/// - 4 bytes: the register kernels at 2 rows (2 x 2^25: 0.83 -> 0.96) and up to 8 columns
///   (2^24 x 3: 0.72 -> 0.97; 16 columns lose: 0.49); else 8 KiB chunks of 128 threads up to 8
///   (3 x 2^24 0.80 -> 0.85, 7 x 9999991 0.82 -> 0.90, 9999991 x 7 0.65 -> 0.73), 32 KiB of 512
///   threads for 9 to 16 rows (16 x 2^22: 0.82 -> 0.89), of 256 for 9 to 16 columns (2^22 x 16:
///   0.59 -> 0.68).
/// - 8 bytes: 32 KiB chunks of 256 threads (3 x 2^23: 0.71 -> 0.95, 2^23 x 3: 0.75 -> 0.88).
/// Returns whether one of them launched (else the shape is not a few-rows / few-columns one).
template <class T>
bool launch_transpose_few(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  using Small = TransposeChunk<8192, 128>;
  using Large = TransposeChunk<32768, 256>;
  using Wide = TransposeChunk<32768, 512>;
  if constexpr (sizeof(T) == 1) {
    const auto bytes = [&] {
      return launch_transpose_few_bytes(reinterpret_cast<const std::uint8_t*>(in), ld,
                                        reinterpret_cast<std::uint8_t*>(out), rows, cols, stream);
    };
    if (rows <= kTransposeFewMax && bytes()) return true;  // few rows: the byte vectors first
    if (launch_transpose_few_vec<T>(in, ld, out, rows, cols, stream, 8, 16)) return true;
    // Few dense columns the register kernels do not fit (with few rows the call above already
    // tried these arguments).
    if (rows > kTransposeFewMax && bytes()) return true;
    if constexpr (kTransposeFewColsSpan<1>) {
      if (rows > kTransposeFewMax && launch_transpose_few_cols_span(in, ld, out, rows, cols, stream)) return true;
    }
    return launch_transpose_chunk<T, Large>(in, ld, out, rows, cols, stream);
  } else if constexpr (sizeof(T) == 4) {
    if (launch_transpose_few_vec<T>(in, ld, out, rows, cols, stream, 2, 8)) return true;
    if constexpr (kTransposeFewColsSpan<4>) {
      if (rows > kTransposeFewMax && launch_transpose_few_cols_span(in, ld, out, rows, cols, stream)) return true;
    }
    if (rows <= 8 || cols <= 8) return launch_transpose_chunk<T, Small>(in, ld, out, rows, cols, stream);
    if (rows <= kTransposeFewMax) return launch_transpose_chunk<T, Wide>(in, ld, out, rows, cols, stream);
    return launch_transpose_chunk<T, Large>(in, ld, out, rows, cols, stream);
  } else {
    if constexpr (kTransposeFewColsSpan<8>) {
      if (rows > kTransposeFewMax && launch_transpose_few_cols_span(in, ld, out, rows, cols, stream)) return true;
    }
    return launch_transpose_chunk<T, Large>(in, ld, out, rows, cols, stream);
  }
}

/// The tiles that move T fastest on the H200 (bench_transpose's "ours-w<W>t<TW>b<BY>", run A of
/// issue 13, 16384^2): Tile where rows, cols and ld are whole words of it and the pointers are
/// aligned to one, else Mid where its words fit, else Fallback (one element a word, any shape).
/// Any (transpose_any_kernel) is under trial as the fallback's replacement: kAnyPastMid = true
/// sends every shape that Mid's words do not fit to it instead of Fallback (it measured 0.38-0.65
/// of a copy in run S3: false); kShiftPastMid = true sends them to transpose_shift_kernel on
/// Shift instead (first, where both are set).
template <class T> struct DefaultTranspose;
template <> struct DefaultTranspose<std::uint8_t> {
  using Tile = TransposeTile<8, 32, 16>;     // 256 x 256 bytes, 8-byte words: 0.896 of a copy (4-byte words: 0.856)
  using Mid = TransposeTile<4, 32, 8>;       // 128 x 128 bytes, 4-byte words
  using Fallback = TransposeTile<1, 64, 8>;  // 64 x 64 bytes
  using Any = AnyTile<std::uint8_t, 128, 256>;
  static constexpr bool kAnyPastMid = false;
  // transpose_shift_kernel where Mid's words do not fit (the one-byte fallback measured 0.38 of
  // a copy on every such shape: 16385x16383, 4097x65537, 10007x30011, the 16382x16379 window;
  // it moves a byte a load and a store, the shift kernel a word).
  static constexpr bool kShiftPastMid = true;
  static constexpr Index kShiftMinSide = 0;  // every such shape
  using Shift = ShiftTile<4, 8>;             // 128 x 124 bytes, 4-byte words
  // 8-byte words where both sides reach kShiftWideMinSide (run T2: 0.55-0.58 of a copy against
  // 0.46-0.48 for 4-byte words on 16385x16383, 16383x16385, 4097x65537, 65537x4097, 10007x30011,
  // the 16382x16379 window; 0.34 against 0.44 on 1000003x67, whose 67 columns are one tile).
  using ShiftWide = ShiftTile<8, 16>;
  static constexpr Index kShiftWideMinSide = 1024;
  // transpose_vec_kernel where Mid's words do not fit, before the shift tile (one aligned 16-byte
  // access a thread both ways, misalignment handled in shared memory; "ours-vec-*" in
  // bench_transpose). Run U2a (H200), of a copy: Vec (n8c128) 0.82 against the shift tile's 0.60
  // on 16385x16383 and 16383x16385, 0.82 against 0.59 on 10007x30011, 0.69-0.70 against
  // 0.57-0.61 on 4097x65537, 65537x4097, 4100x262144, 0.82 against 0.59 on the 16382x16379
  // window; VecNarrow (n16c80, a tile holds rows of up to 80 bytes whole) 0.89 against 0.44 on
  // 1000003x67. Both sides from kVecMinSide (a side of 17-127 elements was not measured on Vec;
  // f32 33x2000003 lost there), narrow: up to kVecNarrowCols columns and kVecMinSide rows.
  static constexpr bool kVecPastMid = true;
  using Vec = VecTile<std::uint8_t, 8, 128>;  // 128 input rows x 128 columns, 128-byte output runs
  using VecNarrow = VecTile<std::uint8_t, 16, 80>;
  static constexpr Index kVecMinSide = 128;
  static constexpr Index kVecNarrowCols = 80;
  // Vec (and VecNarrow) also where Mid's 4-byte words fit but Tile's 8-byte words do not, same
  // sides (run U2a: "ours-vec-n8c128" 0.695 of a copy against Mid's 0.575 on 4100x262144, the
  // only such shape measured). THE SWITCH (issue 13, branch transpose7): true once the
  // next run confirms it there and on the view rows it would take.
  static constexpr bool kVecPastTile = false;
  // Vec's tiles walked in bands of kVecBand tile rows (transpose_vec_tile; 0: down the whole
  // grid, as measured in U2a). Trials "ours-vec-n8c128-band<kVecBand>" (1, 4, 16): for the
  // one-side-long shapes 4097x65537, 65537x4097, 4100x262144 (0.69-0.70 against 0.82 on
  // 16385x16383 walked down). THE SWITCH: the band that wins on every Vec shape, else 0.
  static constexpr Index kVecBand = 0;
  // transpose_vec_kernel instead of launch_transpose_few on few rows (2 .. kTransposeFewMax) /
  // few columns ("ours-vec-n1c256-all", "ours-vec-n16c16-all"). THE SWITCHES: true once measured.
  static constexpr bool kVecFewRows = false;
  using VecFewRows = VecTile<std::uint8_t, 1, 256>;  // an output run of one vector: 16 rows
  static constexpr bool kVecFewCols = false;
  using VecFewCols = VecTile<std::uint8_t, 16, 16>;  // 256 rows x 16 columns
};
template <class T> struct DefaultTranspose {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "DefaultTranspose: 1-, 4- or 8-byte elements");
  // 4 bytes: 64 x 64 elements in 8-byte words, 0.948 (one element a word: 0.941 at 64 x 64, 0.793
  // at 32 x 32); 8 bytes: 64 x 64 in 16-byte words 0.913. The one-element fallback is 64 x 64 for
  // both: at f64 16383x16385 it measured 0.877 against 0.821 for 32 x 32 (runs A and C).
  using Tile = TransposeTile<2, 32, 8>;
  using Mid = Tile;
  using Fallback = TransposeTile<1, 64, 8>;
  using Any = AnyTile<T, sizeof(T) == 4 ? 64 : 32, 256>;
  static constexpr bool kAnyPastMid = false;
  // transpose_shift_kernel where Mid's words do not fit, for 4-byte elements with both sides at
  // least kShiftMinSide (run T2, 8-byte words: 0.75 of a copy against the one-element tile's 0.72
  // on 16383x16385, 16385x16383, 10007x30011, 0.87 against 0.80 on the 16382x16379 window; but
  // 0.61 against 0.74 on 2000003x33 and 0.36 against 0.75 on 33x2000003). 8-byte elements: not
  // measured, off.
  static constexpr bool kShiftPastMid = sizeof(T) == 4;
  static constexpr Index kShiftMinSide = 4096;
  using Shift = ShiftTile<sizeof(T) == 4 ? 2 : 1, 8>;  // 8-byte words
  using ShiftWide = Shift;
  static constexpr Index kShiftWideMinSide = 0;
  // transpose_vec_kernel where Mid's words do not fit, as for bytes. Run U2a (H200), f32 of a
  // copy: Vec (n16c256, 64 x 64 elements) 0.86-0.88 against 0.73-0.75 for the shift tile on
  // 16383x16385, 16385x16383, 10007x30011 (i32 0.867 against 0.745), 0.85 against 0.86 on the
  // 16382x16379 window; VecNarrow (n16c144: rows of up to 36 elements whole) 0.886 against 0.742
  // on 2000003x33; 33x2000003 lost on every Vec (0.58 at best against 0.76), hence kVecMinSide.
  // 8-byte elements: n32c256 0.890 against the one-element tile's 0.890: off.
  static constexpr bool kVecPastMid = sizeof(T) == 4;
  using Vec = VecTile<T, 16, 256>;
  using VecNarrow = VecTile<T, 16, 144>;
  static constexpr Index kVecMinSide = 128;
  static constexpr Index kVecNarrowCols = 36;
  static constexpr bool kVecPastTile = false;  // Mid is Tile: nothing between them
  static constexpr Index kVecBand = 0;         // not measured in bands
  // Few rows / few columns, as for bytes ("ours-vec-n4c256-all", "ours-vec-n16c64-all" for 4 bytes).
  static constexpr bool kVecFewRows = false;
  using VecFewRows = VecTile<T, 4, 256>;
  static constexpr bool kVecFewCols = false;
  using VecFewCols = VecTile<T, 16, 64>;
};

/// Whether the words of Tile fit the shape and pointers: rows, cols and ld whole words, in and
/// out aligned to one.
template <class T, class Tile>
bool transpose_words_fit(const T* in, Index ld, const T* out, Index rows, Index cols) {
  constexpr int W = Tile::kW;
  constexpr std::uintptr_t kWordBytes = W * sizeof(T);
  return rows % W == 0 && cols % W == 0 && ld % W == 0 && is_aligned(in, kWordBytes) && is_aligned(out, kWordBytes);
}

/// The tile transpose with Tile where its words fit, else Mid, else Fallback (one element a word).
template <class T, class Tile, class Mid = Tile, class Fallback = TransposeTile<1, 64, 8>>
void launch_transpose_words(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream,
                            TileOrder order = TileOrder::kAuto) {
  static_assert(Fallback::kW == 1, "launch_transpose_words: the fallback tile moves single elements");
  if (transpose_words_fit<T, Tile>(in, ld, out, rows, cols))
    launch_transpose_tile<T, Tile>(in, ld, out, rows, cols, stream, order);
  else if (transpose_words_fit<T, Mid>(in, ld, out, rows, cols))
    launch_transpose_tile<T, Mid>(in, ld, out, rows, cols, stream, order);
  else
    launch_transpose_tile<T, Fallback>(in, ld, out, rows, cols, stream, order);
}

/// out (dense, cols x rows) = transpose of in (rows x cols, ld elements between row starts),
/// on `stream`. A single row is already its own transpose in memory, and so is a dense single
/// column: a copy. A few rows or a few columns (at most kTransposeFewMax) take
/// launch_transpose_few (`few` = false skips it, for the bench); the rest the tile, in `order`.
/// Shapes whose rows are not whole words of the tile take transpose_shift_kernel where
/// DefaultTranspose says so (kShiftPastMid, kShiftMinSide; bytes: the one-byte tile measured
/// 0.38-0.41 of a copy there), else the one-element tile.
template <class T>
void launch_transpose(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream,
                      TileOrder order = TileOrder::kAuto, bool few = true) {
  if (rows == 0 || cols == 0) return;
  if (rows == 1 || (cols == 1 && ld == 1)) {
    DEVMAT_CUDA_TRY(cudaMemcpyAsync(out, in, static_cast<std::size_t>(rows * cols) * sizeof(T),
                                    cudaMemcpyDeviceToDevice, stream));
    return;
  }
  using D = DefaultTranspose<T>;
  if constexpr (D::kVecFewRows) {
    if (few && rows <= kTransposeFewMax) return launch_transpose_vec<T, typename D::VecFewRows>(in, ld, out, rows, cols, stream);
  }
  if constexpr (D::kVecFewCols) {
    if (few && cols <= kTransposeFewMax) return launch_transpose_vec<T, typename D::VecFewCols>(in, ld, out, rows, cols, stream);
  }
  if (few && launch_transpose_few<T>(in, ld, out, rows, cols, stream)) return;
  if constexpr (D::kVecPastMid) {
    const bool vec = D::kVecPastTile ? !transpose_words_fit<T, typename D::Tile>(in, ld, out, rows, cols)
                                     : !transpose_words_fit<T, typename D::Mid>(in, ld, out, rows, cols);
    if (vec && rows >= D::kVecMinSide) {
      if (cols <= D::kVecNarrowCols)
        return launch_transpose_vec<T, typename D::VecNarrow>(in, ld, out, rows, cols, stream, D::kVecBand);
      if (cols >= D::kVecMinSide)
        return launch_transpose_vec<T, typename D::Vec>(in, ld, out, rows, cols, stream, D::kVecBand);
    }
  }
  if constexpr (D::kShiftPastMid) {
    const Index side = std::min(rows, cols);
    if (side >= D::kShiftMinSide && !transpose_words_fit<T, typename D::Mid>(in, ld, out, rows, cols)) {
      if (side >= D::kShiftWideMinSide)
        launch_transpose_shift<T, typename D::ShiftWide>(in, ld, out, rows, cols, stream, order);
      else
        launch_transpose_shift<T, typename D::Shift>(in, ld, out, rows, cols, stream, order);
      return;
    }
  }
  if constexpr (D::kAnyPastMid) {
    if (!transpose_words_fit<T, typename D::Mid>(in, ld, out, rows, cols)) {
      launch_transpose_any<T, typename D::Any>(in, ld, out, rows, cols, stream, order);
      return;
    }
  }
  launch_transpose_words<T, typename D::Tile, typename D::Mid, typename D::Fallback>(in, ld, out, rows, cols, stream,
                                                                                     order);
}

/// A kernel under trial: its bench impl name and its launch (the whole transpose of any shape,
/// stride and alignment of in and out), for bench_transpose and test_transpose_variants alike.
template <class T>
struct TransposeTrial {
  const char* name;
  void (*launch)(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream);
};

/// launch_transpose with transpose_any_kernel instead of the tile (few rows / few columns as
/// by default, so the trial runs on every shape).
template <class T, int kRows, int kThreads, TileOrder kOrder = TileOrder::kAuto>
void launch_transpose_any_in(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (launch_transpose_few<T>(in, ld, out, rows, cols, stream)) return;
  launch_transpose_any<T, AnyTile<T, kRows, kThreads>>(in, ld, out, rows, cols, stream, kOrder);
}

template <class T, int kRows, int kThreads, TileOrder kOrder = TileOrder::kAuto>
constexpr TransposeTrial<T> any_trial(const char* name) {
  return {name, &launch_transpose_any_in<T, kRows, kThreads, kOrder>};
}

/// launch_transpose with transpose_shift_kernel on ShiftTile<W, BY> instead of the tile on every
/// shape past the few-rows / few-columns ones, in kOrder.
template <class T, int W, int BY, TileOrder kOrder = TileOrder::kAuto>
void launch_transpose_shift_in(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (launch_transpose_few<T>(in, ld, out, rows, cols, stream)) return;
  launch_transpose_shift<T, ShiftTile<W, BY>>(in, ld, out, rows, cols, stream, kOrder);
}

template <class T, int W, int BY, TileOrder kOrder = TileOrder::kAuto>
constexpr TransposeTrial<T> shift_trial(const char* name) {
  return {name, &launch_transpose_shift_in<T, W, BY, kOrder>};
}

/// launch_transpose with transpose_sector_kernel on SectorTile<T, W, BY> on every shape past the
/// few-rows / few-columns ones, in kOrder.
template <class T, int W, int BY, TileOrder kOrder = TileOrder::kAuto>
void launch_transpose_sector_in(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (launch_transpose_few<T>(in, ld, out, rows, cols, stream)) return;
  launch_transpose_sector<T, SectorTile<T, W, BY>>(in, ld, out, rows, cols, stream, kOrder);
}

template <class T, int W, int BY, TileOrder kOrder = TileOrder::kAuto>
constexpr TransposeTrial<T> sector_trial(const char* name) {
  return {name, &launch_transpose_sector_in<T, W, BY, kOrder>};
}

/// launch_transpose with transpose_vec_kernel on VecTile<T, kNV, kColBytes> on every shape past
/// the few-rows / few-columns ones (kFew = false: on every shape).
template <class T, int kNV, int kColBytes, bool kFew = true, int kBand = 0>
void launch_transpose_vec_in(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (kFew && launch_transpose_few<T>(in, ld, out, rows, cols, stream)) return;
  launch_transpose_vec<T, VecTile<T, kNV, kColBytes>>(in, ld, out, rows, cols, stream, kBand);
}

/// kBand > 0: the tiles walked in bands of kBand tile rows (launch_transpose_vec).
template <class T, int kNV, int kColBytes, bool kFew = true, int kBand = 0>
constexpr TransposeTrial<T> vec_trial(const char* name) {
  return {name, &launch_transpose_vec_in<T, kNV, kColBytes, kFew, kBand>};
}

/// Every shape with the given few-rows / few-columns chunk kernel where it applies (the rest as
/// launch_transpose).
template <class T, class Chunk, bool kSpan = false>
void launch_transpose_chunk_in(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (launch_transpose_chunk<T, Chunk, kSpan>(in, ld, out, rows, cols, stream)) return;
  launch_transpose<T>(in, ld, out, rows, cols, stream);
}

template <class T, int kBytes, int kThreads, bool kSpan = false>
constexpr TransposeTrial<T> chunk_trial(const char* name) {
  return {name, &launch_transpose_chunk_in<T, TransposeChunk<kBytes, kThreads>, kSpan>};
}

/// Every shape with the register kernels wherever their vectors line up (2 to 16 rows or
/// columns; the rest as launch_transpose).
template <class T>
void launch_transpose_few_vec_in(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (launch_transpose_few_vec<T>(in, ld, out, rows, cols, stream)) return;
  launch_transpose<T>(in, ld, out, rows, cols, stream);
}

/// Every shape with the vector byte kernels of few rows / few columns where they apply (the rest
/// as launch_transpose).
template <class T>
void launch_transpose_few_bytes_in(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  static_assert(sizeof(T) == 1, "launch_transpose_few_bytes_in: bytes");
  if (rows == 0 || cols == 0) return;
  const auto* in_b = reinterpret_cast<const std::uint8_t*>(in);
  auto* out_b = reinterpret_cast<std::uint8_t*>(out);
  if (rows > 1 && launch_transpose_few_bytes(in_b, ld, out_b, rows, cols, stream)) return;
  launch_transpose<T>(in, ld, out, rows, cols, stream);
}

/// Every shape with transpose_few_cols_span_kernel where a few columns lie at most 16 elements
/// apart (the rest as launch_transpose).
template <class T>
void launch_transpose_few_cols_span_in(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (rows > 1 && launch_transpose_few_cols_span(in, ld, out, rows, cols, stream)) return;
  launch_transpose<T>(in, ld, out, rows, cols, stream);
}

/// The kernels under trial for T (by element size): transpose_any_kernel ("ours-any-r<rows>-
/// t<threads>", on every shape past the few-rows / few-columns ones), for 1- and 4-byte elements
/// transpose_shift_kernel ("ours-shift-w<W>b<BY>": ShiftTile<W, BY>, likewise; "-across" walks
/// the tiles along input rows), then the few-rows / few-columns kernels one at a time so one run
/// can check that launch_transpose_few picks the best ("ours-chunk<KiB>k-t<threads>"; "-span":
/// few strided byte columns read as spans, gaps included; "ours-span16": few columns at most 16
/// elements apart de-interleaved as one span of 16-byte vectors at any alignment of in
/// (transpose_few_cols_span_kernel); "ours-regs16": the register kernels for
/// 1- and 4-byte elements where their vectors line up; "ours-bytes16": bytes of few rows / dense
/// few columns as 16-byte vectors at any alignment). transpose_runs_kernel (the word tile with
/// byte-exact run ends) and the any kernel's 512-thread and "-across" forms were dropped after
/// run S3 (0.20-0.30 and 0.27-0.47 of a copy, below the defaults on every shape).
/// transpose_vec_kernel: "ours-vec-n<kNV>c<column bytes>" on VecTile<T, kNV, column bytes> past
/// the few-rows / few-columns shapes; "-all" on every shape, few rows or columns included (the
/// bench runs those on both kinds of shape); "-band<B>" its tiles walked in bands of B tile rows
/// (band 1: along input rows).
#define DEVMAT_TRANSPOSE_CHUNK_TRIALS                                                                  \
  chunk_trial<T, 8192, 128>("ours-chunk8k-t128"), chunk_trial<T, 32768, 256>("ours-chunk32k-t256"), \
      chunk_trial<T, 32768, 512>("ours-chunk32k-t512")
template <class T, std::size_t kBytes = sizeof(T)>
struct TransposeTrials;
template <class T>
struct TransposeTrials<T, 1> {
  static constexpr int kCount = 27;
  static constexpr TransposeTrial<T> kAll[kCount] = {
      any_trial<T, 128, 256>("ours-any-r128-t256"), shift_trial<T, 4, 8>("ours-shift-w4b8"),
      shift_trial<T, 4, 16>("ours-shift-w4b16"), shift_trial<T, 4, 8, TileOrder::kAcross>("ours-shift-w4b8-across"),
      shift_trial<T, 8, 16>("ours-shift-w8b16"), shift_trial<T, 8, 32>("ours-shift-w8b32"),
      sector_trial<T, 8, 16>("ours-sector-w8b16"), sector_trial<T, 8, 32>("ours-sector-w8b32"),
      sector_trial<T, 8, 16, TileOrder::kAcross>("ours-sector-w8b16-across"), sector_trial<T, 4, 8>("ours-sector-w4b8"),
      DEVMAT_TRANSPOSE_CHUNK_TRIALS, chunk_trial<T, 32768, 256, true>("ours-chunk32k-t256-span"),
      TransposeTrial<T>{"ours-regs16", &launch_transpose_few_vec_in<T>},
      TransposeTrial<T>{"ours-bytes16", &launch_transpose_few_bytes_in<T>},
      TransposeTrial<T>{"ours-span16", &launch_transpose_few_cols_span_in<T>},
      vec_trial<T, 8, 128>("ours-vec-n8c128"), vec_trial<T, 8, 256>("ours-vec-n8c256"),
      vec_trial<T, 16, 128>("ours-vec-n16c128"), vec_trial<T, 8, 80>("ours-vec-n8c80"),
      vec_trial<T, 16, 80>("ours-vec-n16c80"),
      vec_trial<T, 1, 256, false>("ours-vec-n1c256-all"), vec_trial<T, 16, 16, false>("ours-vec-n16c16-all"),
      vec_trial<T, 8, 128, true, 1>("ours-vec-n8c128-band1"), vec_trial<T, 8, 128, true, 4>("ours-vec-n8c128-band4"),
      vec_trial<T, 8, 128, true, 16>("ours-vec-n8c128-band16")};
};
template <class T>
struct TransposeTrials<T, 4> {
  static constexpr int kCount = 18;
  static constexpr TransposeTrial<T> kAll[kCount] = {
      any_trial<T, 64, 256>("ours-any-r64-t256"), any_trial<T, 32, 256>("ours-any-r32-t256"),
      shift_trial<T, 2, 8>("ours-shift-w2b8"), shift_trial<T, 2, 16>("ours-shift-w2b16"),
      sector_trial<T, 2, 8>("ours-sector-w2b8"), sector_trial<T, 2, 16>("ours-sector-w2b16"),
      DEVMAT_TRANSPOSE_CHUNK_TRIALS, TransposeTrial<T>{"ours-regs16", &launch_transpose_few_vec_in<T>},
      vec_trial<T, 8, 128>("ours-vec-n8c128"), vec_trial<T, 8, 256>("ours-vec-n8c256"),
      vec_trial<T, 16, 256>("ours-vec-n16c256"), vec_trial<T, 16, 144>("ours-vec-n16c144"),
      vec_trial<T, 4, 256, false>("ours-vec-n4c256-all"), vec_trial<T, 8, 64, false>("ours-vec-n8c64-all"),
      vec_trial<T, 16, 64, false>("ours-vec-n16c64-all"),
      TransposeTrial<T>{"ours-span16", &launch_transpose_few_cols_span_in<T>}};
};
template <class T>
struct TransposeTrials<T, 8> {
  static constexpr int kCount = 9;
  static constexpr TransposeTrial<T> kAll[kCount] = {
      any_trial<T, 32, 256>("ours-any-r32-t256"),   any_trial<T, 16, 128>("ours-any-r16-t128"),
      DEVMAT_TRANSPOSE_CHUNK_TRIALS,                vec_trial<T, 8, 128>("ours-vec-n8c128"),
      vec_trial<T, 16, 256>("ours-vec-n16c256"), vec_trial<T, 32, 256>("ours-vec-n32c256"),
      TransposeTrial<T>{"ours-span16", &launch_transpose_few_cols_span_in<T>}};
};

#undef DEVMAT_TRANSPOSE_CHUNK_TRIALS

}  // namespace devmat::detail

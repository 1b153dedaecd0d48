// Launcher of the transpose (kernels/transpose.cuh): a copy when the transpose is one already,
// the few-rows / few-columns chunk kernels when a side is at most kTransposeFewMax, else the tile
// whose words fit the shape and the pointers; sizes the grid, launches.
#pragma once

#include "dispatch/common.hpp"
#include "dispatch/device.hpp"
#include "dispatch/launch.cuh"
#include "kernels/transpose.cuh"

#include <devmat/error.hpp>

#include <cstddef>
#include <cstdint>

namespace devmat::detail {

/// The order in which blocks walk the tiles: across (along input rows) or down (along output
/// rows); kAuto goes down when output rows do not start on 128-byte lines, so that the blocks
/// whose runs meet inside a line run together.
enum class TileOrder { kAuto, kAcross, kDown };

template <class T, class Tile, bool Realign = false>
void launch_transpose_tile(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream,
                           TileOrder order = TileOrder::kAuto) {
  constexpr Index kTile = Tile::kTile;
  constexpr int kSmemBytes = static_cast<int>(kTile * Tile::kTW * Tile::kW * sizeof(T));
  static_assert(kSmemBytes <= 200 * 1024, "launch_transpose_tile: tile exceeds shared memory");
  const auto kernel = &transpose_kernel<T, Tile::kW, Tile::kTW, Tile::kBY, Realign>;
  if constexpr (kSmemBytes > 48 * 1024)  // opts in to more than 48 KiB (once per device)
    blocks_per_sm(reinterpret_cast<const void*>(kernel), 32 * Tile::kBY, kSmemBytes);
  // One-element words: where every row starts at the same offset m (elements) inside a 32-byte
  // sector (ld a multiple of a sector: a window of a matrix at a column off the sector), the
  // tile grid starts m columns left of column 0, so a warp's run of a row reads whole sectors
  // (f32: 8 sectors for 64 elements, not 9; the window's transpose read 12% more than a dense one).
  Index shift = 0;
  if constexpr (Tile::kW == 1 && !Realign) {
    constexpr Index kSector = 32 / static_cast<Index>(sizeof(T));
    if (ld % kSector == 0) shift = static_cast<Index>(reinterpret_cast<std::uintptr_t>(in) / sizeof(T)) % kSector;
  }
  const Index tiles_r = ceil_div(rows, kTile), tiles_c = ceil_div(cols + shift, kTile);
  const bool down = order == TileOrder::kDown ||
                    (order == TileOrder::kAuto && (rows * static_cast<Index>(sizeof(T))) % 128 != 0);
  launch(kernel, static_cast<unsigned>(tiles_r * tiles_c), dim3(32, Tile::kBY), kSmemBytes, stream, in, ld, out,
         rows, cols, tiles_r, tiles_c, down, shift);
}

/// The sector tile (transpose_sector_kernel, any shape, stride and alignment): not taken by
/// launch_transpose yet; the bench measures it beside the default ("ours-sector<R>x<C>") and
/// test_transpose_variants checks it. kAuto walks down (the next block re-reads the lead rows
/// of this one while they are still in L2).
template <class T, class Tile>
void launch_transpose_sector(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream,
                             TileOrder order = TileOrder::kAuto) {
  if (rows == 0 || cols == 0) return;
  constexpr int kSmemBytes = Tile::kSmemBytes;
  static_assert(kSmemBytes <= 200 * 1024, "launch_transpose_sector: tile exceeds shared memory");
  const auto kernel = &transpose_sector_kernel<T, Tile>;
  if constexpr (kSmemBytes > 48 * 1024)  // opts in to more than 48 KiB (once per device)
    blocks_per_sm(reinterpret_cast<const void*>(kernel), Tile::kThreads, kSmemBytes);
  // Windows start up to a sector before their tile (s_c <= lead elements): one more tile row
  // where they run past rows. Output rows a whole number of sectors long all start s_c = out's
  // offset into its sector before a sector boundary.
  const bool whole_sectors = (rows * static_cast<Index>(sizeof(T))) % 32 == 0;
  const int out_in_sector = static_cast<int>((reinterpret_cast<std::uintptr_t>(out) & 31u) / sizeof(T));
  const int lead = whole_sectors ? out_in_sector : Tile::kLead;  // every s_c <= lead
  const Index tiles_r = ceil_div(rows + (whole_sectors ? out_in_sector : Tile::kLead - 1), Index(Tile::kRows));
  const Index tiles_c = ceil_div(cols, Index(Tile::kCols));
  launch(kernel, static_cast<unsigned>(tiles_r * tiles_c), dim3(Tile::kThreads), kSmemBytes, stream, in, ld, out, rows,
         cols, tiles_r, tiles_c, order != TileOrder::kAcross, lead);
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

/// The tile that moves T fastest (the bench compares the others), and the one used when rows
/// or cols is not a multiple of its word (words of one element, always aligned) and the tile
/// cannot realign its words.
template <class T> struct DefaultTranspose;
template <> struct DefaultTranspose<std::uint8_t> {
  using Tile = TransposeTile<4, 32, 8>;      // 128 x 128 bytes, 4-byte words (realigned where rows are not)
  using Fallback = TransposeTile<1, 64, 8>;  // 64 x 64 bytes (for the bench's other word sizes)
};
template <class T> struct DefaultTranspose {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "DefaultTranspose: 1-, 4- or 8-byte elements");
  using Tile = TransposeTile<1, 64, 8>;      // 64 x 64 elements, one element a word
  using Fallback = TransposeTile<1, 64, 8>;  // used if Tile's words do not fit the shape
};

/// out (dense, cols x rows) = transpose of in (rows x cols, ld elements between row starts),
/// on `stream`. A single row is already its own transpose in memory, and so is a dense single
/// column: a copy. A few rows or a few columns (at most kTransposeFewMax) take the chunk kernels
/// (`few` = false skips them, for the bench); the rest the tile, in `order`. Bytes whose rows
/// are not whole aligned words take the one-byte tile: the tile that realigns 4-byte words
/// (`realign`, for the bench) measured 0.18 of a copy at u8 16385x16383 on the H200, against
/// the one-byte tile's 0.34; it stays a benchmark variant until it is faster.
template <class T, class Tile = typename DefaultTranspose<T>::Tile,
          class Fallback = typename DefaultTranspose<T>::Fallback, class Chunk = TransposeChunk<>>
void launch_transpose(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream,
                      TileOrder order = TileOrder::kAuto, bool few = true, bool realign = false) {
  if (rows == 0 || cols == 0) return;
  if (rows == 1 || (cols == 1 && ld == 1)) {
    DEVMAT_CUDA_TRY(cudaMemcpyAsync(out, in, static_cast<std::size_t>(rows * cols) * sizeof(T),
                                    cudaMemcpyDeviceToDevice, stream));
    return;
  }
  // Bytes of the few-rows kernel are stored as aligned words; a DeviceMatrix always is.
  // Sides up to kTransposeFewMax, as long as a chunk holds 128 lines of them.
  constexpr Index kFewMax = Chunk::kBytes / 128 / static_cast<Index>(sizeof(T)) < kTransposeFewMax
                                ? Chunk::kBytes / 128 / static_cast<Index>(sizeof(T))
                                : kTransposeFewMax;
  if (few && rows <= kFewMax && (sizeof(T) != 1 || is_aligned(out, 4))) {
    const int per_block = transpose_chunk_lines<T, Chunk>(rows);
    launch(&transpose_few_rows_kernel<T, Chunk>, static_cast<unsigned>(ceil_div(cols, per_block)),
           dim3(Chunk::kThreads), 0, stream, in, ld, out, static_cast<int>(rows), cols, per_block);
    return;
  }
  if (few && cols <= kFewMax) {
    const int per_block = transpose_chunk_lines<T, Chunk>(cols);
    launch(&transpose_few_cols_kernel<T, Chunk>, static_cast<unsigned>(ceil_div(rows, per_block)),
           dim3(Chunk::kThreads), 0, stream, in, ld, out, rows, static_cast<int>(cols), per_block);
    return;
  }
  static_assert(Fallback::kW == 1, "launch_transpose: the fallback tile moves single elements");
  constexpr int W = Tile::kW;
  constexpr std::uintptr_t kWordBytes = W * sizeof(T);
  const bool whole_words = rows % W == 0 && cols % W == 0 && ld % W == 0 && is_aligned(in, kWordBytes) &&
                           is_aligned(out, kWordBytes);
  if (whole_words) {
    launch_transpose_tile<T, Tile>(in, ld, out, rows, cols, stream, order);
    return;
  }
  if constexpr (kTransposeCanRealign<T, W>) {
    if (realign) {
      launch_transpose_tile<T, Tile, true>(in, ld, out, rows, cols, stream, order);
      return;
    }
  }
  launch_transpose_tile<T, Fallback>(in, ld, out, rows, cols, stream, order);
}

/// A kernel under trial: its bench impl name and its launch (the whole transpose of any shape,
/// stride and alignment of in and out), for bench_transpose and test_transpose_variants alike.
template <class T>
struct TransposeTrial {
  const char* name;
  void (*launch)(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream);
};

template <class T, class Tile, TileOrder kOrder>
void launch_transpose_sector_in(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  launch_transpose_sector<T, Tile>(in, ld, out, rows, cols, stream, kOrder);
}

template <class T, int R, int C, TileOrder O = TileOrder::kAuto>
constexpr TransposeTrial<T> sector_trial(const char* name) {
  return {name, &launch_transpose_sector_in<T, SectorTile<T, R, C>, O>};
}

/// launch_transpose with another few-rows / few-columns chunk (the rest as by default).
template <class T, class Chunk>
void launch_transpose_chunk_in(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  launch_transpose<T, typename DefaultTranspose<T>::Tile, typename DefaultTranspose<T>::Fallback, Chunk>(
      in, ld, out, rows, cols, stream);
}

/// 2 to 16 rows (or dense columns) of 1- or 4-byte elements whose 16-byte vectors line up: the
/// register kernels (transpose_few_rows_vec_kernel, transpose_few_cols_vec_kernel); other shapes
/// and types as launch_transpose.
template <class T, int kN = 2>
void launch_transpose_few_in_registers(const T* in, Index ld, T* out, Index rows, Index cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if constexpr (sizeof(T) <= 4 && kN <= 16) {
    constexpr Index kV = 16 / sizeof(T);
    const bool vectors = is_aligned(in, 16) && is_aligned(out, 16);
    if (rows == kN && vectors && ld % kV == 0) {
      launch(&transpose_few_rows_vec_kernel<T, kN>, static_cast<unsigned>(ceil_div(ceil_div(cols, kV), Index(256))),
             dim3(256), 0, stream, in, ld, out, cols);
      return;
    }
    if (cols == kN && ld == kN && vectors && rows % kV == 0) {
      launch(&transpose_few_cols_vec_kernel<T, kN>, static_cast<unsigned>(ceil_div(ceil_div(rows, kV), Index(256))),
             dim3(256), 0, stream, in, out, rows);
      return;
    }
    launch_transpose_few_in_registers<T, kN + 1>(in, ld, out, rows, cols, stream);
    return;
  }
  launch_transpose<T>(in, ld, out, rows, cols, stream);
}

template <class T, int kBytes, int kThreads>
constexpr TransposeTrial<T> chunk_trial(const char* name) {
  return {name, &launch_transpose_chunk_in<T, TransposeChunk<kBytes, kThreads>>};
}

/// The kernels under trial for T (by element size): sector tiles of a few shapes (input rows x
/// columns), walked down, and the first one walked across; then launch_transpose with other
/// chunks for the few-rows / few-columns kernels ("ours-chunk<KiB>k-t<threads>": smaller ones
/// put more blocks, whose load and store phases overlap, on an SM; larger ones more bytes in
/// flight a block), which is the default transpose on every other shape; for 1- and 4-byte
/// elements, the register kernels of few rows / few columns ("ours-regs16": 16-byte vectors,
/// where they line up).
#define DEVMAT_TRANSPOSE_CHUNK_TRIALS                                                                  \
  chunk_trial<T, 8192, 128>("ours-chunk8k-t128"), chunk_trial<T, 32768, 256>("ours-chunk32k-t256"), \
      chunk_trial<T, 32768, 512>("ours-chunk32k-t512")
template <class T, std::size_t kBytes = sizeof(T)>
struct TransposeTrials;
template <class T>
struct TransposeTrials<T, 1> {
  static constexpr int kCount = 8;
  static constexpr TransposeTrial<T> kAll[kCount] = {
      sector_trial<T, 128, 128>("ours-sector128x128"), sector_trial<T, 128, 64>("ours-sector128x64"),
      sector_trial<T, 256, 64>("ours-sector256x64"),
      sector_trial<T, 128, 128, TileOrder::kAcross>("ours-sector128x128-across"), DEVMAT_TRANSPOSE_CHUNK_TRIALS,
      TransposeTrial<T>{"ours-regs16", &launch_transpose_few_in_registers<T>}};
};
template <class T>
struct TransposeTrials<T, 4> {
  static constexpr int kCount = 8;
  static constexpr TransposeTrial<T> kAll[kCount] = {
      sector_trial<T, 64, 64>("ours-sector64x64"), sector_trial<T, 128, 32>("ours-sector128x32"),
      sector_trial<T, 32, 64>("ours-sector32x64"), sector_trial<T, 64, 64, TileOrder::kAcross>("ours-sector64x64-across"), DEVMAT_TRANSPOSE_CHUNK_TRIALS,
      TransposeTrial<T>{"ours-regs16", &launch_transpose_few_in_registers<T>}};
};
template <class T>
struct TransposeTrials<T, 8> {
  static constexpr int kCount = 5;
  static constexpr TransposeTrial<T> kAll[kCount] = {sector_trial<T, 32, 64>("ours-sector32x64"),
                                               sector_trial<T, 64, 32>("ours-sector64x32"), DEVMAT_TRANSPOSE_CHUNK_TRIALS};
};

#undef DEVMAT_TRANSPOSE_CHUNK_TRIALS

}  // namespace devmat::detail

// Launchers of the reductions (kernels/reduce.cuh): each picks a configuration and a grid from
// the shape and the device (its SM count and the kernel's occupancy there, both cached, so a
// grid never depends on timing and results are bitwise reproducible), sizes the workspace for
// partial results, and launches. The bench instantiates other configurations.
#pragma once

#include "dispatch/common.hpp"
#include "dispatch/device.hpp"
#include "dispatch/launch.cuh"
#include "dispatch/workspace.hpp"
#include "kernels/reduce.cuh"
#include "kernels/reduce_narrow.cuh"

#include <devmat/device_matrix.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

namespace devmat::detail {

static_assert(std::is_same_v<sum_acc_t<std::int32_t>, sum_t<std::int32_t>> &&
                  std::is_same_v<sum_acc_t<std::uint8_t>, sum_t<std::uint8_t>>,
              "integer sums accumulate in their result type");

// ================================================================== whole matrix
/// How the strided window kernel reads each row's partial first and last 16-byte chunks:
/// inline with the whole ones (reduce_window_kernel), apart (reduce_window_split_kernel), or the
/// default: apart for 1-byte elements (u8 16384x4095 at odd stride: 0.46 of the dense sum
/// inline), inline otherwise (the order floats are added in stays as it was).
enum class WindowEdges { automatic, inline_, apart };

/// Threads per block, 16-byte vectors in flight per thread, blocks per resident slot; for the
/// strided window kernels also where row edges are read.
template <int Threads, int Unroll, int Oversub = 1, WindowEdges Edges = WindowEdges::automatic>
struct ReduceConfig {
  static constexpr int kThreads = Threads;
  static constexpr int kUnroll = Unroll;
  static constexpr int kOversub = Oversub;
  static constexpr WindowEdges kEdges = Edges;
};
using DefaultReduceConfig = ReduceConfig<256, 4, 1>;
/// The strided window kernel's: 512 threads summed a 4096x4096 f32 window at offset (1,3) at
/// 0.99 of the dense sum on the H200, 256 threads at 0.97 (bench_views' view-sum variants).
using DefaultWindowReduceConfig = ReduceConfig<512, 4, 1>;

constexpr int kFinalThreads = 256;  // the one block of a second pass

/// out[0] = fin(reduction of in[0, n)) on `stream`; n may be 0 (then fin(identity)). One pass
/// when one block is enough, else a fixed grid of resident blocks and a one-block second pass.
template <class R, class Cfg = DefaultReduceConfig, class Final>
void launch_reduce(const Stream& stream, const typename R::Value* in, Index n, typename Final::Out* out,
                   Final fin) {
  using T = typename R::Value;
  using Acc = typename R::Acc;
  using ToAcc = CastTo<Acc, Acc>;
  constexpr int kThreads = Cfg::kThreads;
  constexpr Index kPerBlock = Index(kThreads) * Cfg::kUnroll * kVec16<T>;
  const cudaStream_t s = stream.native();
  const Index cap =
      resident_blocks(reinterpret_cast<const void*>(&reduce_kernel<R, kThreads, Cfg::kUnroll, ToAcc>), kThreads) *
      Cfg::kOversub;
  const Index grid = std::min(std::max<Index>(ceil_div(n, kPerBlock), 1), cap);
  if (grid == 1) {
    launch(&reduce_kernel<R, kThreads, Cfg::kUnroll, Final>, 1, kThreads, 0, s, in, n, out, fin);
    return;
  }
  const auto partials = Workspace::of<Acc>(static_cast<std::size_t>(grid), stream);
  launch(&reduce_kernel<R, kThreads, Cfg::kUnroll, ToAcc>, static_cast<unsigned>(grid), kThreads, 0, s, in, n,
         partials.template as<Acc>(), ToAcc{});
  launch(&reduce_partials_kernel<R, kFinalThreads, Final>, 1, kFinalThreads, 0, s, partials.template as<const Acc>(), grid,
         out, fin);
}

/// The most 16-byte-aligned chunks that one row of a rows x cols window at `in` (ld elements
/// between row starts) touches: exact when every row starts at the same offset within 16
/// bytes, else the bound for the worst offset.
template <class T>
Index row_chunks(const T* in, Index rows, Index cols, Index ld) {
  constexpr Index V = kVec16<T>;
  const bool same_head = rows <= 1 || (ld * static_cast<Index>(sizeof(T))) % 16 == 0;
  const Index head = same_head ? static_cast<Index>(reinterpret_cast<std::uintptr_t>(in) % 16 / sizeof(T)) : V - 1;
  return ceil_div(head + cols, V);
}

/// The strided form: out[0] = fin(reduction of the rows x cols window at `in`, ld elements
/// between row starts). A window whose rows follow each other with no gap takes the flat
/// kernel above; otherwise reduce_window_kernel strides over every row's 16-byte-aligned
/// chunks with a grid of resident blocks (Cfg: threads, chunks in flight per thread, blocks
/// per resident slot), and one block combines the partials.
/// A contiguous window takes launch_reduce (its default configuration).
template <class R, class Cfg = DefaultWindowReduceConfig, class Final>
void launch_reduce_2d(const Stream& stream, const typename R::Value* in, Index rows, Index cols, Index ld,
                      typename Final::Out* out, Final fin) {
  if (rows <= 1 || ld == cols || cols == 0) return launch_reduce<R>(stream, in, rows * cols, out, fin);
  using T = typename R::Value;
  using Acc = typename R::Acc;
  using ToAcc = CastTo<Acc, Acc>;
  constexpr int kThreads = Cfg::kThreads, U = Cfg::kUnroll;
  constexpr bool kApart =
      Cfg::kEdges == WindowEdges::apart || (Cfg::kEdges == WindowEdges::automatic && sizeof(T) == 1);
  // The kernel for `fin` (F = ToAcc: pass 1 of two); both forms take the same arguments.
  const auto kernel_for = [](auto f) {
    using F = decltype(f);
    if constexpr (kApart) return &reduce_window_split_kernel<R, kThreads, U, F>;
    else return &reduce_window_kernel<R, kThreads, U, F>;
  };
  const auto kernel = kernel_for(ToAcc{});
  // Chunks a thread's index runs over per row: every 16-byte chunk a row touches (inline), or
  // the most whole chunks a row has (apart: a row starting past a boundary loses one, and its
  // end lands on a boundary or not).
  const Index chunks = kApart ? std::max<Index>(cols / kVec16<T>, 1) : row_chunks(in, rows, cols, ld);
  const Index cap = resident_blocks(reinterpret_cast<const void*>(kernel), kThreads) * Cfg::kOversub;
  const Index grid = std::min(ceil_div(rows * chunks, Index(kThreads) * U), cap);
  const Index step = grid * kThreads;
  const cudaStream_t s = stream.native();
  if (grid == 1) {
    launch(kernel_for(fin), 1, kThreads, 0, s, in, rows, cols, ld, chunks, step / chunks, step % chunks, out, fin);
    return;
  }
  const auto partials = Workspace::of<Acc>(static_cast<std::size_t>(grid), stream);
  launch(kernel, static_cast<unsigned>(grid), kThreads, 0, s, in, rows, cols, ld, chunks, step / chunks,
         step % chunks, partials.template as<Acc>(), ToAcc{});
  launch(&reduce_partials_kernel<R, kFinalThreads, Final>, 1, kFinalThreads, 0, s, partials.template as<const Acc>(),
         grid, out, fin);
}

// ================================================================== row sums
/// Rows of at least kBlockMinCols elements get a block each (split into chunks when there are
/// too few rows to fill the GPU); shorter rows a warp, very short rows a team of 1..16 lanes.
template <int BlockThreads, int Unroll, Index BlockMinCols>
struct RowSumsConfig {
  static constexpr int kBlockThreads = BlockThreads;
  static constexpr int kUnroll = Unroll;
  static constexpr Index kBlockMinCols = BlockMinCols;
};
using DefaultRowSumsConfig = RowSumsConfig<256, 4, 8192>;

constexpr Index kMinRowChunk = 8192;  // elements: a block's share of a split row

/// Teams of L lanes, G rows per team at a time, K chunks per lane per row and round
/// (row_sums_team_kernel), over at most the resident blocks: a persistent grid, so a short row
/// costs a few instructions, not a block.
template <class T, int L, int G, int K>
void launch_row_team(cudaStream_t s, const T* in, Index rows, Index cols, Index ld, Index chunks, sum_t<T>* out) {
  const auto kernel = &row_sums_team_kernel<T, sum_t<T>, L, G, K>;
  const Index cap = resident_blocks(reinterpret_cast<const void*>(kernel), kTeamThreads);
  const Index blocks = std::min(ceil_div(ceil_div(rows, G) * L, kTeamThreads), cap);
  launch(kernel, static_cast<unsigned>(blocks), kTeamThreads, 0, s, in, rows, cols, ld, chunks, out);
}

/// Row sums by a warp per 32 rows (row_sums_butterfly_kernel: L lanes a row, K chunks a lane,
/// G tiles of 32 rows a warp at a time), over at most the resident blocks. Rows of at most
/// L * K 16-byte chunks (row_chunks). launch_row_sums takes <4, 1, 2> for rows of 3 or 4 chunks.
template <class T, int L, int K, int G>
void launch_row_butterfly(cudaStream_t s, const T* in, Index rows, Index cols, Index ld, sum_t<T>* out) {
  const auto kernel = &row_sums_butterfly_kernel<T, sum_t<T>, L, K, G>;
  const Index cap = resident_blocks(reinterpret_cast<const void*>(kernel), kTeamThreads);
  const Index warps = ceil_div(ceil_div(rows, 32), G);
  const Index blocks = std::min(ceil_div(warps, kTeamThreads / 32), cap);
  launch(kernel, static_cast<unsigned>(blocks), kTeamThreads, 0, s, in, rows, cols, ld, out);
}

/// The shared memory a tile of row_sums_staged_kernel may take: the static limit, so that no
/// launch needs an opt-in (blocks_per_sm opts a kernel in only on its first call).
constexpr Index kRowStageMaxSmem = 48 * 1024;
/// The bytes of matrix a tile of row_sums_staged_kernel aims at (whole multiples of Threads rows).
constexpr Index kRowStageBytes = 16 * 1024;

/// Whether row_sums_staged_kernel<T, Threads> takes rows of `cols` elements: one row a thread
/// fits the shared memory.
template <class T, int Threads>
constexpr bool row_staged_fits(Index cols) {
  return round_up(Index(Threads) * cols * static_cast<Index>(sizeof(T)), 16) + 16 <= kRowStageMaxSmem;
}

/// Row sums of a dense matrix (ld == cols) of short rows through shared memory
/// (row_sums_staged_kernel): tiles of Threads * k rows, k the most that keeps a tile within
/// tile_bytes (at least 1), over at most the resident blocks. Needs row_staged_fits<T, Threads>.
template <class T, int Threads>
void launch_row_sums_staged(cudaStream_t s, const T* in, Index rows, Index cols, sum_t<T>* out,
                            Index tile_bytes = kRowStageBytes) {
  const Index row_bytes = cols * static_cast<Index>(sizeof(T));
  const Index budget = std::min(tile_bytes, kRowStageMaxSmem - 32);
  const Index tile_rows = Index(Threads) * std::max<Index>(1, budget / (Index(Threads) * row_bytes));
  const auto smem = static_cast<int>(round_up(tile_rows * row_bytes, 16) + 16);
  const auto kernel = &row_sums_staged_kernel<T, sum_t<T>, Threads>;
  const Index grid =
      std::min<Index>(ceil_div(rows, tile_rows), resident_blocks(reinterpret_cast<const void*>(kernel), Threads, smem));
  launch(kernel, static_cast<unsigned>(grid), Threads, static_cast<std::size_t>(smem), s, in, rows, cols, tile_rows,
         out);
}

/// The bytes of matrix a tile of row_sums_piped_kernel aims at (whole multiples of Threads rows).
constexpr Index kRowPipeTileBytes = 32 * 1024;

/// The tile of row_sums_piped_kernel for rows of `row_bytes` bytes summed in passes of `pass`
/// rows (Threads / L): k passes, k the most that keeps it within tile_bytes (at least 1), and the
/// 16-byte chunks of a ring slot (the tile's chunks and the two it may share with its neighbours).
struct RowPipeTile {
  Index rows;
  Index buf_chunks;
  /// Bytes of dynamic shared memory of a ring of `stages` such slots.
  constexpr Index smem(int stages) const { return stages * buf_chunks * 16; }
};
constexpr RowPipeTile row_pipe_tile(Index pass, Index row_bytes, Index tile_bytes = kRowPipeTileBytes) {
  const Index k = tile_bytes / (pass * row_bytes);
  const Index rows = pass * (k > 1 ? k : 1);
  return {rows, rows * row_bytes / 16 + 2};
}
template <class T, int Threads, int L = 1>
constexpr RowPipeTile row_pipe_tile(Index cols) {
  return row_pipe_tile(Threads / L, cols * static_cast<Index>(sizeof(T)));
}

/// Whether a ring of `stages` tiles of rows of `row_bytes` bytes summed in passes of `pass` rows
/// fits the shared memory a block of the current device may opt in to.
inline bool row_pipe_ring_fits(Index pass, Index row_bytes, int stages) {
  return row_pipe_tile(pass, row_bytes).smem(stages) <= current_device_props().smem_per_block_optin;
}

/// Whether row_sums_piped_kernel<T, Threads, Stages, L> takes rows of `cols` elements on the
/// current device (row_pipe_ring_fits).
template <class T, int Threads, int Stages, int L = 1>
bool row_piped_fits(Index cols) {
  return cols >= 1 && row_pipe_ring_fits(Threads / L, cols * static_cast<Index>(sizeof(T)), Stages);
}

/// Row sums of a dense matrix (ld == cols, or one row) through a ring of Stages shared tiles
/// filled by cp.async, summed by a thread (L = 1) or L lanes a row (row_sums_piped_kernel), over
/// at most the resident blocks. Needs row_piped_fits<T, Threads, Stages, L>(cols).
template <class T, int Threads, int Stages, int L = 1>
void launch_row_sums_piped(cudaStream_t s, const T* in, Index rows, Index cols, sum_t<T>* out) {
  const RowPipeTile tile = row_pipe_tile<T, Threads, L>(cols);
  const auto smem = static_cast<int>(tile.smem(Stages));
  const auto kernel = &row_sums_piped_kernel<T, sum_t<T>, Threads, Stages, L>;
  const int per_sm = blocks_per_sm(reinterpret_cast<const void*>(kernel), Threads, smem);  // opts in past 48 KiB
  const Index grid =
      std::min<Index>(ceil_div(rows, tile.rows), Index(per_sm) * current_device_props().sm_count);
  launch(kernel, static_cast<unsigned>(grid), Threads, static_cast<std::size_t>(smem), s, in, rows, cols, tile.rows,
         tile.buf_chunks, out);
}

/// THE SWITCH (issue 13): whether launch_row_sums sends dense rows off 16-byte boundaries (and
/// rows of 5 to 8 whole chunks that the flat stream leaves: 5 to 7, or 8 from an unaligned
/// start) to the cp.async ring (launch_row_sums_piped_default) instead of the staged tiles and
/// the teams, where row_piped_default_takes says so. H200, session 22 (ratio to a
/// CUB sum of the same bytes, staged tiles or teams -> the ring; runs 1 and 2, each pair from one
/// run): f32 1000003x67 0.867 -> 0.959, 1000003x50 0.834 -> 0.969, 1048576x33 0.965 -> 0.988,
/// 1000003x101 0.632 -> 0.934, 500009x203 0.635 -> 0.972 (2 lanes a row), 1000003x509 0.898 (8
/// lanes), i32 1000003x67 0.888 -> 0.969, u8 4000037x67 0.350 -> 0.735, 1000003x203 0.427 ->
/// 0.789, 4000037x13 0.435 -> 0.745 (256 threads), f64 1000003x67 0.32 -> 0.932 (2 lanes),
/// 4000037x13 0.917 -> 0.931; but f32 2000003x29 0.941 -> 0.914 and 4000037x13 0.922 -> 0.876
/// (the staged tiles keep 4-byte rows shorter than 128 bytes).
constexpr bool kRowPipedDefault = true;
constexpr int kRowPipeStages = 2;  // three (128 threads) and four (64) lost everywhere (run 1)
/// The most bytes of a pass of launch_row_sums_piped_default's tile (Threads / L rows): two
/// stages of it leave room for two blocks an SM (f32 1000003x509: 4 lanes, 65 KB passes, 0.49 of
/// a CUB sum; 8 lanes, 33 KB, 0.90).
constexpr Index kRowPipePassMaxBytes = 56 * 1024;

/// Threads of launch_row_sums_piped_default's blocks for rows of `cols` elements of T: 256 for
/// rows of at most 64 bytes, each thread its own row (u8 4000037x13: 0.745 against 0.583 for 128),
/// else 128.
template <class T>
constexpr int row_pipe_threads(Index cols) {
  return cols * static_cast<Index>(sizeof(T)) <= 64 ? 256 : 128;
}

/// Lanes a row of launch_row_sums_piped_default for rows of `cols` elements of T: 1 (a thread a
/// row), 2 for doubles from 32 columns (Neumaier's sum costs several instructions an element:
/// f64 1000003x67 0.932 against 0.668) and 4-byte elements from 160 (f32 500009x203 0.972 against
/// 0.738); then doubled while a pass of the tile exceeds kRowPipePassMaxBytes, up to 8; bytes a
/// thread a row (u8 4000037x67, words through __dp4a: 0.885 of a CUB sum, 2 lanes 0.683). 0: no
/// pass fits.
template <class T>
constexpr int row_pipe_lanes(Index cols) {
  const Index row_bytes = cols * static_cast<Index>(sizeof(T));
  int lanes = (sizeof(T) == 8 && cols >= 32) || (sizeof(T) == 4 && cols >= 160) ? 2 : 1;
  while (Index(row_pipe_threads<T>(cols) / lanes) * row_bytes > kRowPipePassMaxBytes) {
    if (lanes == 8) return 0;
    lanes *= 2;
  }
  return lanes;
}

/// Whether launch_row_sums_piped_default takes the dense rows of `cols` elements of T that the
/// staged tiles or the teams would: 4-byte rows of at least 128 bytes, other rows of any length,
/// while a pass of at most 8 lanes a row fits kRowPipePassMaxBytes and the ring the device.
template <class T>
bool row_piped_default_takes(Index cols) {
  if (cols < 1 || (sizeof(T) == 4 && cols * 4 < 128)) return false;
  const int lanes = row_pipe_lanes<T>(cols);
  if (lanes == 0) return false;
  return row_pipe_ring_fits(row_pipe_threads<T>(cols) / lanes, cols * static_cast<Index>(sizeof(T)), kRowPipeStages);
}

/// launch_row_sums_piped in the library's configuration (row_pipe_threads threads, row_pipe_lanes
/// lanes a row). Needs row_piped_default_takes<T>(cols).
template <class T>
void launch_row_sums_piped_default(cudaStream_t s, const T* in, Index rows, Index cols, sum_t<T>* out) {
  constexpr int kS = kRowPipeStages;
  if (row_pipe_threads<T>(cols) == 256) return launch_row_sums_piped<T, 256, kS, 1>(s, in, rows, cols, out);
  switch (row_pipe_lanes<T>(cols)) {
    case 1: return launch_row_sums_piped<T, 128, kS, 1>(s, in, rows, cols, out);
    case 2: return launch_row_sums_piped<T, 128, kS, 2>(s, in, rows, cols, out);
    case 4: return launch_row_sums_piped<T, 128, kS, 4>(s, in, rows, cols, out);
    default: return launch_row_sums_piped<T, 128, kS, 8>(s, in, rows, cols, out);
  }
}

/// The most 16-byte chunks a row of row_sums_flat_kernel may have (its instantiations: 1, 2, 4, 8).
constexpr Index kRowFlatMaxChunks = 8;

/// The chunks a row of the rows x cols window at `in` (ld elements between row starts) is for
/// row_sums_flat_kernel, or 0 when the kernel does not take it: a dense window (ld == cols, or one
/// row) starting on a 16-byte boundary, whose rows are whole chunks, a power of two of them up to
/// kRowFlatMaxChunks.
template <class T>
Index row_flat_chunks(const T* in, Index rows, Index cols, Index ld) {
  const Index bytes = cols * static_cast<Index>(sizeof(T));
  if (rows < 1 || cols < 1 || !(ld == cols || rows == 1) || reinterpret_cast<std::uintptr_t>(in) % 16 != 0 ||
      bytes % 16 != 0)
    return 0;
  const Index c = bytes / 16;
  return c <= kRowFlatMaxChunks && (c & (c - 1)) == 0 ? c : 0;
}

/// Row sums of a dense matrix of rows of C whole chunks (row_flat_chunks(...) == C) as one flat
/// stream (row_sums_flat_kernel, U chunks in flight a thread) over at most the resident blocks.
template <class T, int C, int U>
void launch_row_sums_flat_c(cudaStream_t s, const T* in, Index rows, sum_t<T>* out) {
  static_assert(kTeamThreads == 256, "row_sums_flat_kernel: blocks of 256 threads");
  const auto kernel = &row_sums_flat_kernel<T, sum_t<T>, C, U>;
  const Index cap = resident_blocks(reinterpret_cast<const void*>(kernel), kTeamThreads);
  const Index blocks = std::min(ceil_div(rows * C, Index(kTeamThreads) * U), cap);
  launch(kernel, static_cast<unsigned>(blocks), kTeamThreads, 0, s, in, rows, out);
}

/// Row sums of the same matrices by warp tiles of 32 rows stored as one run a warp
/// (row_sums_lines_kernel, UT tiles in flight a warp) over at most the resident blocks.
template <class T, int C, int UT>
void launch_row_sums_lines_c(cudaStream_t s, const T* in, Index rows, sum_t<T>* out) {
  const auto kernel = &row_sums_lines_kernel<T, sum_t<T>, C, UT>;
  const Index cap = resident_blocks(reinterpret_cast<const void*>(kernel), kTeamThreads);
  const Index blocks = std::min(ceil_div(ceil_div(rows, Index(32)), Index(kTeamThreads / 32) * UT), cap);
  launch(kernel, static_cast<unsigned>(blocks), kTeamThreads, 0, s, in, rows, out);
}

/// Calls f(std::integral_constant<int, C>) for C = `chunks`, a window's chunks a row
/// (row_flat_chunks(in, rows, cols, ld): 1, 2, 4 or 8).
template <class F>
void with_row_flat_chunks(Index chunks, F&& f) {
  switch (chunks) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 8: return f(std::integral_constant<int, 8>{});
    default: throw std::logic_error("devmat: row sums of flat rows: the window is not rows of 1, 2, 4 or 8 whole chunks");
  }
}

/// launch_row_sums_flat_c for the window's chunks a row (row_flat_chunks(in, rows, cols, ld) > 0).
template <class T, int U>
void launch_row_sums_flat(cudaStream_t s, const T* in, Index rows, Index cols, Index ld, sum_t<T>* out) {
  with_row_flat_chunks(row_flat_chunks(in, rows, cols, ld),
                       [&](auto c) { launch_row_sums_flat_c<T, decltype(c)::value, U>(s, in, rows, out); });
}

/// launch_row_sums_lines_c for the window's chunks a row (row_flat_chunks(in, rows, cols, ld) > 0).
template <class T, int UT>
void launch_row_sums_lines(cudaStream_t s, const T* in, Index rows, Index cols, Index ld, sum_t<T>* out) {
  with_row_flat_chunks(row_flat_chunks(in, rows, cols, ld),
                       [&](auto c) { launch_row_sums_lines_c<T, decltype(c)::value, UT>(s, in, rows, out); });
}

/// THE SWITCH (issue 13): whether launch_row_sums sends dense, 16-byte aligned matrices whose rows
/// are 1, 2, 4 or 8 whole 16-byte chunks (u8 16 .. 128 columns, f32/i32 4 .. 32, f64 2 .. 16) to
/// row_sums_flat_kernel<kRowFlatU> instead of the teams, the butterfly and the staged kernel, which
/// compute a row pointer and bounds per row. On since run V2 (bench rows ours-rowflat-u4/u8/u16, of
/// a CUB sum of the bytes read): u8 16777216x16 0.698 against 0.228 (the 1-lane team; the 8-byte
/// integer sums written cap it near 0.67-0.70), f64 8388608x16 0.908 against 0.871 (staged), i32
/// 16777216x16 0.866 against 0.858 (butterfly); f32 16777216x16 tied in run V1 (0.888 against
/// 0.888). U = 4 led u8/u16 on every typed row (f64: u8 0.760, u16 0.475).
constexpr bool kRowFlatDefault = true;
constexpr int kRowFlatU = 4;

/// THE SWITCH (issue 13): the fewest chunks a row of the flat rows must have for launch_row_sums to
/// take row_sums_lines_kernel (warp tiles of 32 rows, a warp's sums stored as one run, one tile in
/// flight a warp) instead of row_sums_flat_kernel<kRowFlatU>. Run S29 (session 43, an H100, two
/// runs of each, of a CUB sum of the bytes read; "ours-rowflat-l1" against "ours-rowflat-u4"): f32
/// 16777216x16 (4 chunks) 0.911, 0.905 against 0.892, 0.884; i32 16777216x16 0.873, 0.873 against
/// 0.854, 0.851; f64 8388608x16 (8 chunks) 0.907, 0.894 against 0.893, 0.897. Rows of 1 or 2
/// chunks (u8 16777216x16: one) keep the flat stream: one tile in flight there is 1 or 2 chunks
/// a lane against 4 (u8 0.665, 0.646 against 0.672, 0.659); two tiles ("-l2") lost on 4 chunks.
constexpr Index kRowLinesMinChunks = 4;

/// Row sums of a dense matrix of rows of C elements shorter than a chunk (row_sums_vec_kernel:
/// kVec16<T> rows a thread, as C whole 16-byte chunks). `in` aligned to 16 bytes.
template <class T, int C>
void launch_row_sums_vec(cudaStream_t s, const T* in, Index rows, sum_t<T>* out) {
  static_assert(kTeamThreads == 256, "row_sums_vec_kernel: blocks of 256 threads");
  const Index threads = ceil_div(rows, Index(kVec16<T>));
  launch(&row_sums_vec_kernel<T, sum_t<T>, C>, static_cast<unsigned>(ceil_div(threads, kTeamThreads)), kTeamThreads, 0,
         s, in, rows, out);
}

/// Whether row_sums_vec_kernel takes the rows x cols window at `in`: dense (ld == cols, or one
/// row), 16-byte aligned, rows of 3 elements shorter than a chunk (its one instantiation: the
/// issue's 3-column shapes, which the staged tiles take today).
template <class T>
bool row_vec_fits(const T* in, Index rows, Index cols, Index ld) {
  return rows >= 1 && cols == 3 && 3 * sizeof(T) < 16 && (ld == cols || rows == 1) &&
         reinterpret_cast<std::uintptr_t>(in) % 16 == 0;
}

/// Whether launch_row_sums sends the windows row_vec_fits takes to row_sums_vec_kernel instead of
/// the staged tiles: for 4-byte elements. H200, ratio to a CUB sum of the same bytes, staged ->
/// row_sums_vec_kernel: f32 4194304x3 0.888 -> 0.977, 16777216x3 0.780 -> 0.818 (the same run);
/// int32 moves the same bytes; bytes were not timed, so they keep the staged tiles.
template <class T> constexpr bool kRowVecDefault = sizeof(T) == 4;

/// out[r] = sum of row r of the rows x cols row-major `in` (ld elements between row starts)
/// on `stream`. `block_min_cols` overrides the configuration's switch from a warp to a block
/// per row (for the bench).
template <class T, class Cfg = DefaultRowSumsConfig>
void launch_row_sums(const Stream& stream, const T* in, Index rows, Index cols, Index ld, sum_t<T>* out,
                     Index block_min_cols = Cfg::kBlockMinCols) {
  using Acc = sum_acc_t<T>;
  using Out = sum_t<T>;
  const cudaStream_t s = stream.native();
  if (rows == 0) return;
  if (cols == 0) {
    DEVMAT_CUDA_TRY(cudaMemsetAsync(out, 0, static_cast<std::size_t>(rows) * sizeof(Out), s));
    return;
  }
  // Dense rows of 1, 2, 4 or 8 whole chunks (kRowFlatDefault): one flat stream, a row's chunks in
  // adjacent lanes; from kRowLinesMinChunks chunks by warp tiles, a warp's sums stored as one run.
  // The choice is made per chunk count at compile time, so the library holds one kernel a count.
  if (const Index flat = kRowFlatDefault ? row_flat_chunks(in, rows, cols, ld) : 0; flat > 0)
    return with_row_flat_chunks(flat, [&](auto c) {
      constexpr int C = decltype(c)::value;
      if constexpr (C >= kRowLinesMinChunks) launch_row_sums_lines_c<T, C, 1>(s, in, rows, out);
      else launch_row_sums_flat_c<T, C, kRowFlatU>(s, in, rows, out);
    });
  // Dense rows of 3 elements (kRowVecDefault): a thread per kVec16<T> rows, whole chunks.
  if constexpr (3 * sizeof(T) < 16)
    if (kRowVecDefault<T> && row_vec_fits(in, rows, cols, ld)) return launch_row_sums_vec<T, 3>(s, in, rows, out);
  const Index row_chunk_count = row_chunks(in, rows, cols, ld);
  // The rest (windows, rows off 16-byte boundaries, dense rows of 3, 5, 6 or 7 chunks; the
  // figures below were measured on dense rows of 4 and 8 chunks before the flat stream took them).
  // Dense rows read flat through shared memory, when a tile of a row per thread fits it: rows
  // that do not start on 16-byte boundaries (cols not a multiple of a vector), and rows of 5 to 8
  // chunks, which the 4-lane teams below read at 0.51 of a CUB sum of the same bytes (f64
  // 8388608x16, run V1) against 0.85 staged (f32 rows of 3 or 4 chunks: the butterfly, 0.89,
  // against 0.75 staged).
  const bool staged_rows = (ld == cols || rows == 1) &&
                           (cols % kVec16<T> != 0 || (row_chunk_count > 4 && row_chunk_count <= 8));
  // Of those, the ones the cp.async ring takes (kRowPipedDefault).
  if (kRowPipedDefault && staged_rows && row_piped_default_takes<T>(cols))
    return launch_row_sums_piped_default(s, in, rows, cols, out);
  if (staged_rows) {
    if (row_staged_fits<T, 256>(cols)) return launch_row_sums_staged<T, 256>(s, in, rows, cols, out);
    if (row_staged_fits<T, 128>(cols)) return launch_row_sums_staged<T, 128>(s, in, rows, cols, out);
  }
  // Rows of up to 32 chunks: a team of 1..16 lanes, two chunks a lane, four rows at a time;
  // longer rows a warp, up to block_min_cols.
  if (row_chunk_count <= 2) return launch_row_team<T, 1, 4, 2>(s, in, rows, cols, ld, row_chunk_count, out);
  // Up to 4 chunks: a warp per 32 rows, 4 lanes a row, two tiles at a time (8 chunks in flight a
  // lane, as the 2-lane teams it replaces, but every load instruction reads 512 contiguous bytes
  // of a dense matrix, a store 128, and 3 shuffles serve 4 rows: f32 16777216x16 at 0.89 of a CUB
  // sum, run V1; its other forms lost everywhere, runs U2a and V1, and were removed).
  if (row_chunk_count <= 4) return launch_row_butterfly<T, 4, 1, 2>(s, in, rows, cols, ld, out);
  if (row_chunk_count <= 8) return launch_row_team<T, 4, 4, 2>(s, in, rows, cols, ld, row_chunk_count, out);
  if (row_chunk_count <= 16) return launch_row_team<T, 8, 4, 2>(s, in, rows, cols, ld, row_chunk_count, out);
  if (row_chunk_count <= 32) return launch_row_team<T, 16, 4, 2>(s, in, rows, cols, ld, row_chunk_count, out);
  if (cols < block_min_cols) {
    if (row_chunk_count <= 64) return launch_row_team<T, 32, 4, 2>(s, in, rows, cols, ld, row_chunk_count, out);
    return launch_row_team<T, 32, 2, 4>(s, in, rows, cols, ld, row_chunk_count, out);
  }

  constexpr int U = Cfg::kUnroll;
  constexpr int kThreads = Cfg::kBlockThreads;
  using ToAcc = CastTo<Acc, Acc>;
  using ToOut = CastTo<Acc, Out>;
  const Index resident = resident_blocks(reinterpret_cast<const void*>(&row_sums_block_kernel<T, kThreads, U, ToAcc>),
                                         kThreads);
  // Split rows only when there are too few of them to give every resident slot a block.
  Index chunks = rows < resident ? std::min(resident / rows, ceil_div(cols, kMinRowChunk)) : 1;
  chunks = std::max<Index>(chunks, 1);
  // Chunk starts stay 16-byte aligned relative to the row start.
  const Index chunk_len = round_up(ceil_div(cols, chunks), kVec16<T>);
  chunks = ceil_div(cols, chunk_len);
  if (chunks == 1) {
    launch(&row_sums_block_kernel<T, kThreads, U, ToOut>, static_cast<unsigned>(rows), kThreads, 0, s, in, cols, ld,
           Index(1), cols, out, ToOut{});
    return;
  }
  const auto partials = Workspace::of<Acc>(static_cast<std::size_t>(rows * chunks), stream);
  launch(&row_sums_block_kernel<T, kThreads, U, ToAcc>, static_cast<unsigned>(rows * chunks), kThreads, 0, s, in,
         cols, ld, chunks, chunk_len, partials.template as<Acc>(), ToAcc{});
  launch(&segment_sums_kernel<SumReducer<T>, Out>, static_cast<unsigned>(ceil_div(rows * 32, kTeamThreads)),
         kTeamThreads, 0, s, partials.template as<const Acc>(), rows, chunks, out);
}

// ================================================================== column sums
/// A block is WY warps down by WX warps across: TX = 32 * WX threads read V-element vectors
/// side by side along a row, the WY warp rows step down the rows.
template <int WX, int WY, int Unroll>
struct ColSumsConfig {
  static constexpr int kWX = WX;
  static constexpr int kWY = WY;
  static constexpr int kUnroll = Unroll;
};
using DefaultColSumsConfig = ColSumsConfig<1, 8, 4>;

/// Rows in flight per thread of col_sums_wide_kernel for Bytes bytes in flight with vectors of V
/// elements (at least 4, at most 32): 4 rows of 16-byte vectors, 8 of 8-byte ones, 16 of single
/// f32 (columns that are not a whole vector), 32 of single bytes.
template <class T, int V, int Bytes>
inline constexpr int kColWideRows = std::clamp(Bytes / (V * static_cast<int>(sizeof(T))), 4, 32);
/// The bytes in flight per thread of the short-wide column sums (col_sums_wide_kernel), shared by
/// its kColWideVectors vectors.
constexpr int kColWideBytes = 64;
/// The vectors a thread of col_sums_wide_kernel takes where a vector is at most 4 bytes (single
/// elements of unaligned rows): 4, so each thread keeps kColWideBytes / 4 = 16 bytes of each in
/// flight, 4 rows of f32, the total in flight over the window the same as one vector of 4 rows a
/// thread but with 4 times fewer threads. Run V1 (ratio to a CUB sum of the same bytes): f32
/// 67x1000003 0.974 against 0.759 with one vector of 4 rows (one vector of 16 rows: 0.924),
/// 3x16777215 0.840 against 0.465 (0.304: 3 rows leave 16 in flight empty). Wider vectors keep 1:
/// 16-byte vectors 4 rows (the kernel as before), 8-byte vectors 8 rows.
constexpr int kColWideVectors = 4;

/// Whether V-element vectors tile the rows x cols window at `in` (ld elements between row
/// starts): V divides cols and ld (one row: any ld), and `in` is aligned to a vector.
template <class T>
bool col_vec_fits(const T* in, Index rows, Index cols, Index ld, int v) {
  return cols % v == 0 && (rows == 1 || ld % v == 0) && reinterpret_cast<std::uintptr_t>(in) % (v * sizeof(T)) == 0;
}

/// The short-wide column sums' vectors a thread (kColWideVectors where a V-element vector is at
/// most 4 bytes, else 1) and rows in flight of each (kColWideBytes in flight a thread).
template <class T, int V>
inline constexpr int kColWideM = V * sizeof(T) <= 4 ? kColWideVectors : 1;
template <class T, int V>
inline constexpr int kColWideU = kColWideRows<T, V, kColWideBytes / kColWideM<T, V>>;
static_assert(kColWideM<float, 4> == 1 && kColWideU<float, 4> == 4 && kColWideU<std::uint8_t, 16> == 4 &&
                  kColWideU<double, 2> == 4,
              "16-byte vectors: one a thread, 4 rows in flight (the kernel before the switch)");
static_assert(kColWideM<float, 1> == 4 && kColWideU<float, 1> == 4 && kColWideM<std::uint8_t, 1> == 4 &&
                  kColWideU<std::uint8_t, 1> == 16 && kColWideM<double, 1> == 1 && kColWideU<double, 1> == 8,
              "test_reduce_emulation checks these configurations");

/// Column sums of a short-wide window (1 .. kMaxColChunkRows rows, col_vec_fits(in, rows, cols,
/// ld, V)) by col_sums_wide_kernel in the library's configuration: a thread per kColWideM<T, V>
/// vectors of columns down every row, no partials.
template <class T, int V>
void launch_col_sums_wide(cudaStream_t s, const T* in, Index rows, Index cols, Index ld, sum_t<T>* out) {
  constexpr int M = kColWideM<T, V>;
  launch(&col_sums_wide_kernel<T, V, kColWideU<T, V>, sum_t<T>, M>,
         static_cast<unsigned>(ceil_div(cols / V, Index(kTeamThreads) * M)), kTeamThreads, 0, s, in, rows, cols, ld,
         out);
}

/// f(std::integral_constant<int, V>{}) for the widest V (a power of two up to kVec16<T>) whose
/// vectors tile the rows x cols window at `in` (col_vec_fits; V = 1 always does).
template <class T, class F>
decltype(auto) with_col_vec(const T* in, Index rows, Index cols, Index ld, F&& f) {
  constexpr int VMax = kVec16<T>;
  const auto fits = [&](int v) { return col_vec_fits(in, rows, cols, ld, v); };
  if constexpr (VMax >= 16) if (fits(16)) return f(std::integral_constant<int, 16>{});
  if constexpr (VMax >= 8) if (fits(8)) return f(std::integral_constant<int, 8>{});
  if constexpr (VMax >= 4) if (fits(4)) return f(std::integral_constant<int, 4>{});
  if constexpr (VMax >= 2) if (fits(2)) return f(std::integral_constant<int, 2>{});
  return f(std::integral_constant<int, 1>{});
}

/// How launch_col_sums_v (and launch_col_sums_bytes) split rows x (strips of columns): into as many
/// row chunks as there are free resident slots per strip (`resident` blocks), each at least
/// min_chunk_rows rows (one chunk where the rows are fewer) and at most kMaxColChunkRows (the
/// 32-bit byte sums). Returns {chunks, chunk_rows}: chunks * chunk_rows >= rows, and the last
/// chunk is not empty.
inline std::pair<Index, Index> col_row_chunks(Index resident, Index strips, Index rows, Index min_chunk_rows) {
  Index chunks = std::max<Index>(resident / strips, 1);
  chunks = std::min(chunks, std::max<Index>(rows / min_chunk_rows, 1));
  chunks = std::max(chunks, ceil_div(rows, kMaxColChunkRows));
  const Index chunk_rows = ceil_div(rows, chunks);
  return {ceil_div(rows, chunk_rows), chunk_rows};
}

/// Column sums by chunks of rows: launch_chunks(fin, dst) writes fin(the sum of column c over
/// chunk k's rows) to dst[k * cols + c]. One chunk writes `out` directly (fin: a cast to Out);
/// more write Acc partials to a workspace, which col_chunks_kernel combines in chunk order.
template <class Acc, class Out, class LaunchChunks>
void col_sums_by_chunks(const Stream& stream, Index cols, Index chunks, Out* out, LaunchChunks&& launch_chunks) {
  if (chunks == 1) return launch_chunks(CastTo<Acc, Out>{}, out);
  const auto partials = Workspace::of<Acc>(static_cast<std::size_t>(chunks * cols), stream);
  launch_chunks(CastTo<Acc, Acc>{}, partials.template as<Acc>());
  launch(&col_chunks_kernel<Acc, Out>, static_cast<unsigned>(ceil_div(cols, 32)), dim3(32, 32), 0, stream.native(),
         partials.template as<const Acc>(), cols, chunks, out);
}

/// Groups of V rows a round of col_sums_phase_kernel (a warp's next round in flight while it adds
/// one), and its warps across a block (WX: strips of the same rows side by side); bench_reduce
/// times "ours-phase-x<WX>u<U>".
constexpr int kColPhaseU = 2;
constexpr int kColPhaseWX = 4;
/// Whether windows of 4- or 8-byte elements whose rows do not all start on 16 bytes, past the
/// short-wide ones and at least a block of the phase kernel wide, take col_sums_phase_kernel
/// (aligned vectors, a lane's rows kept apart by phase) instead of col_sums_kernel on narrower
/// vectors (one element a lane at odd widths). Run T13 (H200, of a CUB sum of the same bytes,
/// col_sums_kernel -> phase x4u2): f32 16385x16383 0.835 -> 0.971, 5003x4001 0.943 -> 1.047, i32
/// 16385x16383 0.730 -> 0.984, f64 16383x16385 0.945 -> 0.967 (ncu, f32: DRAM 93% of peak, from
/// the element tiles' 82%).
constexpr bool kColPhaseDefault = true;

/// Column sums of a window of 4- or 8-byte elements at any alignment by
/// col_sums_phase_kernel<T, WX, U>: strips of WX kColPhaseWarpCols columns, chunks of
/// rows that fill the resident blocks (at least 4 groups of V rows a warp row), combined by
/// col_chunks_kernel where there are several.
template <class T, int WX = kColPhaseWX, int U = kColPhaseU>
void launch_col_sums_phase(const Stream& stream, const T* in, Index rows, Index cols, Index ld, sum_t<T>* out) {
  using Acc = sum_acc_t<T>;
  constexpr int WY = kColPhaseThreads / 32 / WX;
  const Index strips = ceil_div(cols, Index(WX) * kColPhaseWarpCols<T>);
  const Index resident = resident_blocks(
      reinterpret_cast<const void*>(&col_sums_phase_kernel<T, WX, U, CastTo<Acc, Acc>>), kColPhaseThreads);
  Index chunks = 0, chunk_rows = 0;  // (not a structured binding: the lambda below captures them)
  std::tie(chunks, chunk_rows) = col_row_chunks(resident, strips, rows, Index(4) * kVec16<T> * WY);
  const auto grid = static_cast<unsigned>(strips * chunks);
  col_sums_by_chunks<Acc>(stream, cols, chunks, out, [&](auto fin, auto* dst) {
    launch(&col_sums_phase_kernel<T, WX, U, decltype(fin)>, grid, kColPhaseThreads, 0, stream.native(), in,
           rows, cols, ld, strips, chunk_rows, dst, fin);
  });
}

/// Column sums on V-element vectors (col_vec_fits(in, rows, cols, ld, V)): short-wide windows by
/// col_sums_wide_kernel; else, where V is narrower than 16 bytes and kPhase (4- and 8-byte
/// elements), by col_sums_phase_kernel; else by col_sums_kernel in Cfg.
template <class T, int V, class Cfg, bool kPhase = kColPhaseDefault>
void launch_col_sums_v(const Stream& stream, const T* in, Index rows, Index cols, Index ld, sum_t<T>* out) {
  using Acc = sum_acc_t<T>;
  using Out = sum_t<T>;
  using ToAcc = CastTo<Acc, Acc>;
  constexpr int WX = Cfg::kWX, WY = Cfg::kWY;
  constexpr int TX = 32 * WX, kThreads = TX * WY;
  // Enough rows in flight per thread for 64 bytes, whatever the vector width.
  constexpr int U = std::min(16, std::max(Cfg::kUnroll, static_cast<int>(64 / (V * sizeof(T)))));
  const cudaStream_t s = stream.native();

  const Index units = cols / V;
  // Short and wide: enough vectors of columns to give half the resident threads one each, so
  // a thread per kColWideM vectors sums their columns down every row; no partials, no second pass.
  const auto wide = &col_sums_wide_kernel<T, V, kColWideU<T, V>, Out, kColWideM<T, V>>;
  if (rows <= kMaxColChunkRows &&
      units * 2 >= resident_blocks(reinterpret_cast<const void*>(wide), kTeamThreads) * kTeamThreads)
    return launch_col_sums_wide<T, V>(s, in, rows, cols, ld, out);
  // The phase kernel from a block's worth of columns (kColPhaseWX strips of kColPhaseWarpCols):
  // narrower windows would leave warps of every block idle (measured on 4001 to 16385 columns).
  if constexpr (kPhase && V < kVec16<T> && sizeof(T) >= 4)
    if (cols >= kColPhaseWX * kColPhaseWarpCols<T>) return launch_col_sums_phase<T>(stream, in, rows, cols, ld, out);
  const int W = static_cast<int>(std::min<Index>(units, TX));
  const int rows_side = TX / W;
  const Index strips = ceil_div(units, W);
  const Index resident =
      resident_blocks(reinterpret_cast<const void*>(&col_sums_kernel<T, V, WX, WY, U, ToAcc>), kThreads);
  // One wave, each row chunk at least 4 row steps of every warp.
  Index chunks = 0, chunk_rows = 0;  // (not a structured binding: the lambda below captures them)
  std::tie(chunks, chunk_rows) = col_row_chunks(resident, strips, rows, Index(4) * WY * rows_side);
  const auto grid = static_cast<unsigned>(strips * chunks);
  col_sums_by_chunks<Acc>(stream, cols, chunks, out, [&](auto fin, auto* dst) {
    launch(&col_sums_kernel<T, V, WX, WY, U, decltype(fin)>, grid, kThreads, 0, s, in, rows, cols, ld, strips,
           chunk_rows, W, dst, fin);
  });
}

/// Rows in flight a warp of col_sums_bytes_kernel by default (bench_reduce times the trials
/// "ours-bytes-u4/u8/u16").
constexpr int kColBytesU = 8;
/// Whether launch_col_sums sends u8 windows whose rows do not all start on 16 bytes (other than
/// the dense narrow ones of the flat kernel) to col_sums_bytes_kernel instead of the element
/// and narrow-vector tiles, which read 1 to 8 bytes a lane: a warp a strip where those warps
/// fill at least half the resident ones (ColBytesPlan::fills), else a block a strip
/// (kColBytesBlockDefault). Run T6 (H200, ratio to a CUB sum of the same bytes), a warp a strip:
/// 67 x 1000003 0.54 -> 0.75 (2017 warps); 4097 x 4095 0.22 against the tiles' 0.77 (9 strips of
/// 496 columns, chunks of at least 256 rows: 144 warps).
constexpr bool kColBytesDefault = true;
/// Whether the windows whose warp-a-strip plan does not fill the GPU take col_sums_bytes_kernel
/// with a block a strip ("ours-bytes-b8"), else the element tiles.
constexpr bool kColBytesBlockDefault = true;

/// How col_sums_bytes_kernel<U, kWY> cuts a rows x cols window: strips of 496 columns, chunks of
/// chunk_rows rows (as many as fill the resident warps (kWY = 1) or blocks (kWY = 8), each at
/// least kColBytesFlushRows rows a warp (kWY = 1) or 8 a warp (kWY = 8)); `units` warps or blocks.
struct ColBytesPlan {
  Index strips, chunks, chunk_rows, resident, units;
  /// Whether the units fill at least half the resident warps or blocks.
  bool fills() const { return 2 * units >= resident; }
};
template <int U, int kWY>
ColBytesPlan plan_col_bytes(Index rows, Index cols) {
  using Acc = sum_acc_t<std::uint8_t>;
  ColBytesPlan p{ceil_div(cols, kColBytesWarpCols), 0, 0, 0, 0};
  const Index blocks =
      resident_blocks(reinterpret_cast<const void*>(&col_sums_bytes_kernel<U, kWY, CastTo<Acc, Acc>>), kColBytesThreads);
  p.resident = kWY == 1 ? blocks * (kColBytesThreads / 32) : blocks;
  const Index min_chunk_rows = kWY == 1 ? kColBytesFlushRows : Index(8) * kWY;
  std::tie(p.chunks, p.chunk_rows) = col_row_chunks(p.resident, p.strips, rows, min_chunk_rows);
  p.units = p.strips * p.chunks;
  return p;
}

/// Column sums of a u8 window of any alignment by col_sums_bytes_kernel<U, kWY> cut as `p`
/// (plan_col_bytes<U, kWY>(rows, cols), by default), the chunks combined by col_chunks_kernel
/// where there are several.
template <int U, int kWY>
void launch_col_sums_bytes(const Stream& stream, const std::uint8_t* in, Index rows, Index cols, Index ld,
                           sum_t<std::uint8_t>* out, const ColBytesPlan& p) {
  using Acc = sum_acc_t<std::uint8_t>;
  const auto grid = static_cast<unsigned>(kWY == 1 ? ceil_div(p.units, Index(kColBytesThreads / 32)) : p.units);
  col_sums_by_chunks<Acc>(stream, cols, p.chunks, out, [&](auto fin, auto* dst) {
    launch(&col_sums_bytes_kernel<U, kWY, decltype(fin)>, grid, kColBytesThreads, 0, stream.native(), in, rows, cols,
           ld, p.strips, p.chunk_rows, dst, fin);
  });
}
template <int U, int kWY>
void launch_col_sums_bytes(const Stream& stream, const std::uint8_t* in, Index rows, Index cols, Index ld,
                           sum_t<std::uint8_t>* out) {
  launch_col_sums_bytes<U, kWY>(stream, in, rows, cols, ld, out, plan_col_bytes<U, kWY>(rows, cols));
}

/// Column sums of a dense (ld == cols, or one row) matrix of 1..Threads columns read as one flat
/// stream (col_sums_flat_kernel), then its block partials combined by col_chunks_kernel. The
/// grid is a multiple of cols / gcd(cols, Threads * V), so that every thread's lanes keep
/// their columns, near the resident blocks.
template <class T, int Threads = 256, int U = 4>
void launch_col_sums_flat(const Stream& stream, const T* in, Index rows, Index cols, sum_t<T>* out) {
  using Acc = sum_acc_t<T>;
  constexpr Index kLanes = Index(Threads) * kVec16<T>;
  const auto kernel = &col_sums_flat_kernel<T, Threads, U>;
  const Index n = rows * cols;
  const Index period = cols / std::gcd(cols, kLanes);
  const Index want = std::min<Index>(resident_blocks(reinterpret_cast<const void*>(kernel), Threads),
                                     ceil_div(ceil_div(n, kVec16<T>), Index(Threads) * U));
  const Index grid = std::max<Index>(1, want / period) * period;
  const auto partials = Workspace::of<Acc>(static_cast<std::size_t>(grid * cols), stream);
  const cudaStream_t s = stream.native();
  launch(kernel, static_cast<unsigned>(grid), Threads, 0, s, in, n, cols, partials.template as<Acc>());
  launch(&col_chunks_kernel<Acc, sum_t<T>>, static_cast<unsigned>(ceil_div(cols, 32)), dim3(32, 32), 0, s,
         partials.template as<const Acc>(), cols, grid, out);
}

constexpr int kColFlatThreads = 256;  // the most columns the flat kernel takes, too

/// out[c] = sum of column c of the rows x cols row-major `in` (ld elements between row starts)
/// on `stream`. Dense narrow windows whose rows are off 16 bytes: one flat stream of vectors
/// (launch_col_sums_flat); other u8 windows off 16 bytes: aligned 16-byte chunks cut by shuffles
/// (launch_col_sums_bytes); else V-element vectors, V the widest power of two up to 16 bytes that
/// divides cols and ld and aligns `in` (so every row start is aligned to it).
template <class T, class Cfg = DefaultColSumsConfig>
void launch_col_sums(const Stream& stream, const T* in, Index rows, Index cols, Index ld, sum_t<T>* out) {
  using Out = sum_t<T>;
  if (cols == 0) return;
  if (rows == 0) {
    DEVMAT_CUDA_TRY(cudaMemsetAsync(out, 0, static_cast<std::size_t>(cols) * sizeof(Out), stream.native()));
    return;
  }
  if (!col_vec_fits(in, rows, cols, ld, kVec16<T>)) {  // rows that do not all start on 16-byte boundaries
    // Narrow and dense: one flat stream of vectors.
    if ((ld == cols || rows == 1) && cols <= kColFlatThreads)
      return launch_col_sums_flat<T, kColFlatThreads>(stream, in, rows, cols, out);
    // Other bytes: aligned chunks, a warp a strip where those fill the GPU, else a block a strip.
    if constexpr (std::is_same_v<T, std::uint8_t>) {
      if (kColBytesDefault) {
        const ColBytesPlan warps = plan_col_bytes<kColBytesU, 1>(rows, cols);
        if (warps.fills()) return launch_col_sums_bytes<kColBytesU, 1>(stream, in, rows, cols, ld, out, warps);
        if (kColBytesBlockDefault) return launch_col_sums_bytes<kColBytesU, 8>(stream, in, rows, cols, ld, out);
      }
    }
  }
  with_col_vec(in, rows, cols, ld, [&](auto v) {
    launch_col_sums_v<T, decltype(v)::value, Cfg>(stream, in, rows, cols, ld, out);
  });
}

// ================================================================== configurations under trial
/// What a narrow-reduction trial computes and which bench rows it belongs to: row sums of
/// narrow matrices, column sums of tall-narrow ones, column sums of any window (unaligned rows).
enum class NarrowKind : int { row_sums, col_sums_tall, col_sums_any };

/// One kernel configuration of the narrow row or column sums, by its bench impl name
/// ("ours-<name>"): `takes` says whether its preconditions hold for a rows x cols window at
/// `in` (ld elements between row starts), `launch` writes the rows (or cols) sums to `out` on
/// `stream`. The bench times every one beside the dispatch's choice; the tests check every one
/// on the shapes it takes.
template <class T>
struct NarrowTrial {
  const char* name;
  NarrowKind kind;
  bool (*takes)(const T* in, Index rows, Index cols, Index ld);
  void (*launch)(const Stream& stream, const T* in, Index rows, Index cols, Index ld, sum_t<T>* out);
};

template <class T>
bool dense_window(const T*, Index rows, Index cols, Index ld) {
  return rows >= 1 && cols >= 1 && (ld == cols || rows == 1);
}

template <class T, int Threads, Index TileBytes>
struct StagedTrial {
  static bool takes(const T* in, Index rows, Index cols, Index ld) {
    return dense_window(in, rows, cols, ld) && row_staged_fits<T, Threads>(cols);
  }
  static void launch(const Stream& stream, const T* in, Index rows, Index cols, Index, sum_t<T>* out) {
    launch_row_sums_staged<T, Threads>(stream.native(), in, rows, cols, out, TileBytes);
  }
};

template <class T, int Threads, int Stages, int L>
struct PipedTrial {
  static bool takes(const T* in, Index rows, Index cols, Index ld) {
    return dense_window(in, rows, cols, ld) && row_piped_fits<T, Threads, Stages, L>(cols);
  }
  static void launch(const Stream& stream, const T* in, Index rows, Index cols, Index, sum_t<T>* out) {
    launch_row_sums_piped<T, Threads, Stages, L>(stream.native(), in, rows, cols, out);
  }
};

template <class T, int Threads, int U>
struct FlatTrial {
  static bool takes(const T* in, Index rows, Index cols, Index ld) {
    return dense_window(in, rows, cols, ld) && cols <= Threads;
  }
  static void launch(const Stream& stream, const T* in, Index rows, Index cols, Index, sum_t<T>* out) {
    launch_col_sums_flat<T, Threads, U>(stream, in, rows, cols, out);
  }
};

template <class T>
struct RowVecTrial {
  static bool takes(const T* in, Index rows, Index cols, Index ld) { return row_vec_fits(in, rows, cols, ld); }
  static void launch(const Stream& stream, const T* in, Index rows, Index, Index, sum_t<T>* out) {
    if constexpr (3 * sizeof(T) < 16) launch_row_sums_vec<T, 3>(stream.native(), in, rows, out);
  }
};

template <class T, class Cfg = DefaultColSumsConfig>
struct ColElementTrial {
  static bool takes(const T*, Index rows, Index cols, Index) { return rows >= 1 && cols >= 1; }
  static void launch(const Stream& stream, const T* in, Index rows, Index cols, Index ld, sum_t<T>* out) {
    launch_col_sums_v<T, 1, Cfg, false>(stream, in, rows, cols, ld, out);
  }
};

template <class T, int U>
struct RowFlatTrial {
  static bool takes(const T* in, Index rows, Index cols, Index ld) { return row_flat_chunks(in, rows, cols, ld) > 0; }
  static void launch(const Stream& stream, const T* in, Index rows, Index cols, Index ld, sum_t<T>* out) {
    launch_row_sums_flat<T, U>(stream.native(), in, rows, cols, ld, out);
  }
};

template <class T, int UT>
struct RowLinesTrial {
  static bool takes(const T* in, Index rows, Index cols, Index ld) { return row_flat_chunks(in, rows, cols, ld) > 0; }
  static void launch(const Stream& stream, const T* in, Index rows, Index cols, Index ld, sum_t<T>* out) {
    launch_row_sums_lines<T, UT>(stream.native(), in, rows, cols, ld, out);
  }
};

/// The most rows the short-wide column trial takes (a thread walks every row of its columns).
constexpr Index kColWideTrialMaxRows = 4096;

template <class T>
struct ColWideTrial {
  static bool takes(const T*, Index rows, Index cols, Index) {
    return rows >= 1 && rows <= kColWideTrialMaxRows && cols >= 1;
  }
  static void launch(const Stream& stream, const T* in, Index rows, Index cols, Index ld, sum_t<T>* out) {
    with_col_vec(in, rows, cols, ld, [&](auto v) {
      launch_col_sums_wide<T, decltype(v)::value>(stream.native(), in, rows, cols, ld, out);
    });
  }
};

template <class T, int U, int kWY>
struct ColBytesTrial {
  static bool takes(const T*, Index rows, Index cols, Index) {
    return std::is_same_v<T, std::uint8_t> && rows >= 1 && cols >= 1;
  }
  static void launch(const Stream& stream, const T* in, Index rows, Index cols, Index ld, sum_t<T>* out) {
    if constexpr (std::is_same_v<T, std::uint8_t>) launch_col_sums_bytes<U, kWY>(stream, in, rows, cols, ld, out);
  }
};

template <class T, int WX, int U>
struct ColPhaseTrial {
  static bool takes(const T*, Index rows, Index cols, Index) { return sizeof(T) >= 4 && rows >= 1 && cols >= 1; }
  static void launch(const Stream& stream, const T* in, Index rows, Index cols, Index ld, sum_t<T>* out) {
    if constexpr (sizeof(T) >= 4) launch_col_sums_phase<T, WX, U>(stream, in, rows, cols, ld, out);
  }
};

template <class Trial, class T>
constexpr NarrowTrial<T> narrow_trial(const char* name, NarrowKind kind) {
  return NarrowTrial<T>{name, kind, &Trial::takes, &Trial::launch};
}

template <class T>
struct NarrowTrials {
  static constexpr int kCount = 28;
  static constexpr NarrowTrial<T> kAll[kCount] = {
      narrow_trial<StagedTrial<T, 256, kRowStageBytes>, T>("ours-staged256", NarrowKind::row_sums),
      narrow_trial<StagedTrial<T, 128, kRowStageBytes>, T>("ours-staged128", NarrowKind::row_sums),
      narrow_trial<StagedTrial<T, 256, 2 * kRowStageBytes>, T>("ours-staged256-32k", NarrowKind::row_sums),
      // Row tiles through a ring of shared buffers filled by cp.async, a thread or L lanes a row
      // (launch_row_sums_piped<T, Threads, Stages, L>; kRowPipedDefault). Three stages (128
      // threads) and four (64) lost to two on every shape of session 22's run 1 and were removed.
      narrow_trial<PipedTrial<T, 256, 2, 1>, T>("ours-piped256s2", NarrowKind::row_sums),
      narrow_trial<PipedTrial<T, 128, 2, 1>, T>("ours-piped128s2", NarrowKind::row_sums),
      narrow_trial<PipedTrial<T, 128, 2, 2>, T>("ours-piped128s2l2", NarrowKind::row_sums),
      narrow_trial<PipedTrial<T, 128, 2, 4>, T>("ours-piped128s2l4", NarrowKind::row_sums),
      narrow_trial<PipedTrial<T, 128, 2, 8>, T>("ours-piped128s2l8", NarrowKind::row_sums),
      narrow_trial<FlatTrial<T, 256, 4>, T>("ours-flat256u4", NarrowKind::col_sums_tall),
      narrow_trial<FlatTrial<T, 256, 8>, T>("ours-flat256u8", NarrowKind::col_sums_tall),
      narrow_trial<FlatTrial<T, 128, 8>, T>("ours-flat128u8", NarrowKind::col_sums_tall),
      // Dense rows of 1, 2, 4 or 8 whole chunks as one flat stream (launch_row_sums_flat<U>: U
      // chunks in flight a thread); u4 (kRowFlatU) is the default (kRowFlatDefault).
      narrow_trial<RowFlatTrial<T, 4>, T>("ours-rowflat-u4", NarrowKind::row_sums),
      narrow_trial<RowFlatTrial<T, 8>, T>("ours-rowflat-u8", NarrowKind::row_sums),
      narrow_trial<RowFlatTrial<T, 16>, T>("ours-rowflat-u16", NarrowKind::row_sums),
      // The same rows by warp tiles of 32 rows, each warp's 32 sums stored as one run
      // (launch_row_sums_lines<UT>: UT tiles in flight a warp; l1 the default from
      // kRowLinesMinChunks chunks a row). Loads that keep no L1 line and fetch 256 bytes into L2
      // (ld.global.nc.L1::no_allocate.L2::256B) lost 1-4% on every row of run S29 and were removed.
      narrow_trial<RowLinesTrial<T, 1>, T>("ours-rowflat-l1", NarrowKind::row_sums),
      narrow_trial<RowLinesTrial<T, 2>, T>("ours-rowflat-l2", NarrowKind::row_sums),
      // Dense rows of 3 elements, kVec16<T> rows a thread as whole chunks (launch_row_sums_vec,
      // kRowVecDefault).
      narrow_trial<RowVecTrial<T>, T>("ours-rowvec", NarrowKind::row_sums),
      // What unaligned rows take by default where the window is not short-wide: the element-wise
      // tiles (or a thread per vector of columns, the short-wide kernel), forced.
      narrow_trial<ColElementTrial<T>, T>("ours-v1", NarrowKind::col_sums_any),
      // The short-wide column kernel in the library's configuration (launch_col_sums_wide: 4
      // vectors of at most 4 bytes a thread, 64 bytes in flight), forced where the rows are few.
      narrow_trial<ColWideTrial<T>, T>("ours-wide-b64m4", NarrowKind::col_sums_any),
      // u8 windows of any alignment as aligned chunks cut by shuffles (launch_col_sums_bytes<U, kWY>:
      // U rows in flight a warp, a warp a strip or a block (b8); kColBytesU the default, for the
      // rows col_vec_fits(.., 16) refuses).
      narrow_trial<ColBytesTrial<T, 4, 1>, T>("ours-bytes-u4", NarrowKind::col_sums_any),
      narrow_trial<ColBytesTrial<T, 8, 1>, T>("ours-bytes-u8", NarrowKind::col_sums_any),
      narrow_trial<ColBytesTrial<T, 16, 1>, T>("ours-bytes-u16", NarrowKind::col_sums_any),
      narrow_trial<ColBytesTrial<T, 8, 8>, T>("ours-bytes-b8", NarrowKind::col_sums_any),
      // 4- and 8-byte windows of any alignment as aligned vectors, a lane's rows kept apart by
      // phase (launch_col_sums_phase<T, WX, U>: WX warps across a block, rounds of U groups of
      // rows; kColPhaseWX, kColPhaseU the default, kColPhaseDefault, past the short-wide windows).
      narrow_trial<ColPhaseTrial<T, 2, 2>, T>("ours-phase-x2u2", NarrowKind::col_sums_any),
      narrow_trial<ColPhaseTrial<T, 4, 2>, T>("ours-phase-x4u2", NarrowKind::col_sums_any),
      narrow_trial<ColPhaseTrial<T, 8, 2>, T>("ours-phase-x8u2", NarrowKind::col_sums_any),
      narrow_trial<ColPhaseTrial<T, 4, 1>, T>("ours-phase-x4u1", NarrowKind::col_sums_any),
      narrow_trial<ColPhaseTrial<T, 8, 1>, T>("ours-phase-x8u1", NarrowKind::col_sums_any)};
};

}  // namespace devmat::detail

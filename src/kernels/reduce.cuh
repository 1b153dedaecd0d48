// Reductions: whole matrix (sum, min, max, mean), row sums and column sums. Device code only;
// dispatch/reduce.cuh sizes their grids and launches them.
//
// Determinism: every combination order below depends only on the launch shape, never on timing,
// and partial results are combined in a fixed order by a second pass, so a given input gives
// bitwise the same result on every run.
#pragma once

#include "reduce_block.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace devmat::detail {

constexpr int kTeamThreads = 256;  // the block size of the team kernels (a team or warp per row)

// ================================================================== whole matrix
/// Pass 1 (or the only pass): the grid strides over in[0, n) in 16-byte vectors; block b
/// writes fin(its combined value) to out[b].
template <class R, int Threads, int U, class Final>
__global__ void __launch_bounds__(Threads)
reduce_kernel(const typename R::Value* __restrict__ in, Index n, typename Final::Out* __restrict__ out,
              Final fin) {
  typename R::State s;
  reduce_range<R, U, false>(s, in, n, static_cast<Index>(blockIdx.x) * Threads + threadIdx.x,
                            static_cast<Index>(gridDim.x) * Threads);
  const typename R::Acc v = block_reduce<R, Threads>(R::finish(s));
  if (threadIdx.x == 0) out[blockIdx.x] = fin(v);
}

/// Pass 2: one block combines `count` partials (any count, 0 included) in a fixed order.
template <class R, int Threads, class Final>
__global__ void __launch_bounds__(Threads)
reduce_partials_kernel(const typename R::Acc* __restrict__ partials, Index count,
                       typename Final::Out* __restrict__ out, Final fin) {
  typename R::Acc v = R::identity();
  for (Index i = threadIdx.x; i < count; i += Threads) v = R::combine(v, partials[i]);
  v = block_reduce<R, Threads>(v);
  if (threadIdx.x == 0) *out = fin(v);
}

/// Pass 1 over a strided rows x cols window (ld elements between row starts). Row r is read
/// as the `chunks` 16-byte-aligned chunks that cover it (load_chunk: whole chunks as vectors,
/// the partial first and last element by element, all loads of a round issued before any
/// add); `chunks` is the most any row needs, a row that needs fewer pads the rest. The
/// rows * chunks chunks form one index space that the grid strides over, U chunks in flight
/// per thread, consecutive lanes on consecutive chunks; a thread steps by the grid's size,
/// which is step_rows rows and step_chunks chunks (step_chunks < chunks). Block b writes
/// fin(its combined value) to out[b].
template <class R, int Threads, int U, class Final>
__global__ void __launch_bounds__(Threads)
reduce_window_kernel(const typename R::Value* __restrict__ in, Index rows, Index cols, Index ld, Index chunks,
                     Index step_rows, Index step_chunks, typename Final::Out* __restrict__ out, Final fin) {
  using T = typename R::Value;
  using P = Pack<T, kVec16<T>>;
  const Index t = static_cast<Index>(blockIdx.x) * Threads + threadIdx.x;
  Index r = t / chunks, c = t % chunks;  // this thread's next chunk
  typename R::State s;
  while (r < rows) {
    P v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (r < rows) {
        const T* row = in + r * ld;
        const Index head = head_of(row);
        v[u] = load_chunk(row - head, head, cols, c, R::pad());
      } else {
#pragma unroll
        for (int k = 0; k < kVec16<T>; ++k) v[u].v[k] = R::pad();
      }
      c += step_chunks;
      r += step_rows;
      if (c >= chunks) c -= chunks, ++r;
    }
    R::add_packs(s, v);
  }
  const typename R::Acc v = block_reduce<R, Threads>(R::finish(s));
  if (threadIdx.x == 0) out[blockIdx.x] = fin(v);
}

/// Pass 1 over a strided window with each row's partial chunks set apart: first the rows x
/// `inner` index space of whole 16-byte chunks (row r's whole chunks run from chunk `first`,
/// 1 when the row does not start on a boundary, to chunk (head + cols) / V; `inner` is the most
/// any row has, a row with fewer pads), vector loads only, U in flight per thread, stepped as
/// reduce_window_kernel; then the rows x 2(V-1) index space of the elements before the first
/// whole chunk (slots 0 .. V-2) and after the last (slots V-1 ..), element by element. For
/// 1-byte elements, whose 4095-byte rows have a partial chunk every 128 vectors (against every
/// 512 for floats), so that no warp waits on a row edge in the streaming loop. Block b writes
/// fin(its combined value) to out[b].
template <class R, int Threads, int U, class Final>
__global__ void __launch_bounds__(Threads)
reduce_window_split_kernel(const typename R::Value* __restrict__ in, Index rows, Index cols, Index ld, Index inner,
                           Index step_rows, Index step_chunks, typename Final::Out* __restrict__ out, Final fin) {
  using T = typename R::Value;
  constexpr int V = kVec16<T>;
  using P = Pack<T, V>;
  P padding;
#pragma unroll
  for (int k = 0; k < V; ++k) padding.v[k] = R::pad();
  const Index t = static_cast<Index>(blockIdx.x) * Threads + threadIdx.x;
  Index r = t / inner, c = t % inner;  // this thread's next whole chunk
  typename R::State s;
  while (r < rows) {
    P v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      v[u] = padding;
      if (r < rows) {
        const T* row = in + r * ld;
        const Index head = head_of(row);
        const Index chunk = (head != 0) + c;
        if (chunk < (head + cols) / V) v[u] = load_pack(reinterpret_cast<const P*>(row - head) + chunk);
      }
      c += step_chunks;
      r += step_rows;
      if (c >= inner) c -= inner, ++r;
    }
    R::add_packs(s, v);
  }
  constexpr Index kSlots = 2 * (V - 1);
  const Index nthreads = static_cast<Index>(gridDim.x) * Threads;
  for (Index i = t; i < rows * kSlots; i += nthreads) {
    const Index rr = i / kSlots, e = i % kSlots;
    const T* row = in + rr * ld;
    const Index head = head_of(row);
    const Index first = head != 0, last = (head + cols) / V;
    Index k = e;  // the element of the row this slot reads, if any
    if (last > first) {  // whole chunks: the elements before them, then those after
      if (e < V - 1) {
        if (e >= first * V - head) continue;
      } else {
        k = last * V - head + (e - (V - 1));
      }
    }
    if (k < cols) R::add(s, load_one(row + k));  // no whole chunk: cols <= 2(V-1), all slots
  }
  const typename R::Acc v = block_reduce<R, Threads>(R::finish(s));
  if (threadIdx.x == 0) out[blockIdx.x] = fin(v);
}

// ================================================================== row sums
/// Teams of L lanes over rows (rows ld elements apart), G rows at a time: team k of the grid
/// takes rows k, k + teams, ..., k + (G - 1) teams, then moves on by G * teams. A row is read
/// as the 16-byte-aligned chunks that cover it (at most `chunks`, load_chunk), lane l taking
/// chunks l, l + L, ..., K of them per round; every lane issues the loads of its G rows'
/// round before it adds any, so even rows of a few bytes keep G * K vectors in flight per
/// lane. Each row is summed by one team in an order fixed by (L, K) alone, whatever the grid.
/// Every round count is the same for the whole grid, so all 32 lanes of a warp reach the
/// team shuffles together.
template <class T, class Out, int L, int G, int K>
__global__ void __launch_bounds__(kTeamThreads, 3)
row_sums_team_kernel(const T* __restrict__ in, Index rows, Index cols, Index ld, Index chunks, Out* __restrict__ out) {
  static_assert(L >= 1 && L <= 32 && kTeamThreads % L == 0, "row_sums_team_kernel: teams of at most a warp");
  using R = SumReducer<T>;
  using P = Pack<T, kVec16<T>>;
  constexpr Index kTeams = kTeamThreads / L;
  const int lane = static_cast<int>(threadIdx.x % L);
  const Index team = static_cast<Index>(blockIdx.x) * kTeams + threadIdx.x / L;
  const Index teams = static_cast<Index>(gridDim.x) * kTeams;
  const Index rounds = (rows + teams * G - 1) / (teams * G);
  for (Index round = 0; round < rounds; ++round) {
    const Index row0 = round * teams * G + team;  // row g: row0 + g * teams
    const T* base[G];
    Index head[G];
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const T* row = row0 + g * teams < rows ? in + (row0 + g * teams) * ld : in;
      head[g] = head_of(row);
      base[g] = row - head[g];
    }
    typename R::State s[G];
    for (Index c0 = 0; c0 < chunks; c0 += K * L) {  // the same bounds for every lane
      P v[G][K];
#pragma unroll
      for (int g = 0; g < G; ++g)
#pragma unroll
        for (int k = 0; k < K; ++k) {
          if (row0 + g * teams < rows) {
            v[g][k] = load_chunk(base[g], head[g], cols, c0 + lane + k * L, T(0));
          } else {
#pragma unroll
            for (int e = 0; e < kVec16<T>; ++e) v[g][k].v[e] = T(0);
          }
        }
#pragma unroll
      for (int g = 0; g < G; ++g) R::add_packs(s[g], v[g]);
    }
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const typename R::Acc v = team_reduce<R, L>(R::finish(s[g]));  // every lane takes part
      if (row0 + g * teams < rows && lane == 0) out[row0 + g * teams] = static_cast<Out>(v);
    }
  }
}

/// Row sums of short rows (at most L * K 16-byte chunks each, any ld and alignment) by a warp
/// per tile of 32 rows: lane l = L g + j of the warp reads, for u < L, chunks j, j + L, ..
/// (K of them) of the tile's row u * (32 / L) + g, so that each load instruction of the warp
/// reads 32 / L consecutive rows (512 contiguous bytes when a row is L whole chunks); G tiles
/// a warp at a time (tiles warp, warp + warps, ..), all loads issued before any add. A lane's
/// L partial sums then meet by a butterfly over its group of L lanes (reduce-scatter: log2 L
/// steps, L - 1 values sent in all, against L log2 L for a shuffle reduction per row), after
/// which lane j holds the whole sum of row j * (32 / L) + g: the 32 lanes store 32 consecutive
/// rows, one 128-byte line. Each sum is formed in an order fixed by (L, K) alone; every lane
/// of a warp runs the same rounds, so all reach the shuffles together.
template <class T, class Out, int L, int K, int G>
__global__ void __launch_bounds__(kTeamThreads)
row_sums_butterfly_kernel(const T* __restrict__ in, Index rows, Index cols, Index ld, Out* __restrict__ out) {
  static_assert(L >= 1 && L <= 8 && (L & (L - 1)) == 0, "row_sums_butterfly_kernel: 1, 2, 4 or 8 lanes a row");
  static_assert(G * L * K <= 16, "row_sums_butterfly_kernel: at most 16 chunks in flight a lane");
  using R = SumReducer<T>;
  using Acc = typename R::Acc;
  using P = Pack<T, kVec16<T>>;
  constexpr int kGroups = 32 / L;  // rows a load instruction of the warp reads
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int j = lane % L, g = lane / L;
  const Index warp = (static_cast<Index>(blockIdx.x) * kTeamThreads + threadIdx.x) / 32;
  const Index warps = static_cast<Index>(gridDim.x) * (kTeamThreads / 32);
  const Index tiles = (rows + 31) / 32;
  for (Index tile0 = warp; tile0 < tiles; tile0 += warps * G) {  // the same bounds for the whole warp
    P v[G][L][K];  // (tile, row of the lane, chunk)
#pragma unroll
    for (int t = 0; t < G; ++t)
#pragma unroll
      for (int u = 0; u < L; ++u) {
        const Index row = (tile0 + t * warps) * 32 + u * kGroups + g;
        const T* row_g = row < rows ? in + row * ld : in;
        const Index head = head_of(row_g);
#pragma unroll
        for (int k = 0; k < K; ++k) {
          if (row < rows) {
            v[t][u][k] = load_chunk(row_g - head, head, cols, j + k * L, T(0));
          } else {
#pragma unroll
            for (int e = 0; e < kVec16<T>; ++e) v[t][u][k].v[e] = T(0);
          }
        }
      }
#pragma unroll
    for (int t = 0; t < G; ++t) {
      Acc x[L];  // x[u]: this lane's share of row u * kGroups + g of the tile
#pragma unroll
      for (int u = 0; u < L; ++u) {
        typename R::State s;
        R::add_packs(s, v[t][u]);
        x[u] = R::finish(s);
      }
      // Butterfly: at the step of width w the lanes with bit w set keep the upper w of their
      // 2w values, the others the lower w, and each adds its partner's share of what it keeps.
#pragma unroll
      for (int w = L / 2; w >= 1; w /= 2) {
        const bool upper = (j & w) != 0;
#pragma unroll
        for (int i = 0; i < w; ++i) {
          const Acc keep = upper ? x[w + i] : x[i];
          const Acc send = upper ? x[i] : x[w + i];
          x[i] = R::combine(keep, __shfl_xor_sync(0xffffffffu, send, w));
        }
      }
      const Index row = (tile0 + t * warps) * 32 + j * kGroups + g;
      if (row < rows) out[row] = static_cast<Out>(x[0]);
    }
  }
}

/// A block per (row, chunk): block b reduces chunk b % chunks of row b / chunks and writes
/// fin(sum) to out[b] (so with one chunk, out[row]).
template <class T, int Threads, int U, class Final>
__global__ void __launch_bounds__(Threads)
row_sums_block_kernel(const T* __restrict__ in, Index cols, Index ld, Index chunks, Index chunk_len,
                      typename Final::Out* __restrict__ out, Final fin) {
  using R = SumReducer<T>;
  const Index row = blockIdx.x / chunks, chunk = blockIdx.x % chunks;
  const Index c0 = chunk * chunk_len;
  const Index len = std::min(chunk_len, cols - c0);
  typename R::State s;
  reduce_range<R, U, true>(s, in + row * ld + c0, len, threadIdx.x, Threads);
  const typename R::Acc v = block_reduce<R, Threads>(R::finish(s));
  if (threadIdx.x == 0) out[blockIdx.x] = fin(v);
}

/// out[seg] = combination by R of partials[seg * len, (seg + 1) * len): a warp per segment,
/// in a fixed order.
template <class R, class Out>
__global__ void __launch_bounds__(kTeamThreads)
segment_sums_kernel(const typename R::Acc* __restrict__ partials, Index segments, Index len, Out* __restrict__ out) {
  const Index seg = (static_cast<Index>(blockIdx.x) * kTeamThreads + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  typename R::Acc v = R::identity();
  if (seg < segments)
    for (Index k = lane; k < len; k += 32) v = R::combine(v, partials[seg * len + k]);
  v = team_reduce<R>(v);  // every lane takes part
  if (seg < segments && lane == 0) out[seg] = static_cast<Out>(v);
}

// ================================================================== column sums
/// What one thread sums a column in: sum_acc_t<T>, except uint8_t, which uses 32 bits
/// (a chunk has at most kMaxColChunkRows rows, so 255 * rows fits).
template <class T> struct col_accumulator { using type = sum_acc_t<T>; };
template <> struct col_accumulator<std::uint8_t> { using type = unsigned; };
constexpr Index kMaxColChunkRows = Index(1) << 24;

/// Column sums of a block's tile: columns [strip * W * V, (strip + 1) * W * V), rows of chunk
/// `chunk`. A unit is V adjacent columns (one vector); W = min(units per row, TX) units per
/// strip, and when a row has fewer units than TX, P = TX / W rows are read side by side, so a
/// warp still reads a contiguous stretch. Rows are ld elements apart (V divides ld, and `in`
/// is aligned to a vector). Block b = chunk * strips + strip writes
/// fin(sum) of column c to out[chunk * cols + c].
template <class T, int V, int WX, int WY, int U, class Final>
__global__ void __launch_bounds__(32 * WX * WY)
col_sums_kernel(const T* __restrict__ in, Index rows, Index cols, Index ld, Index strips, Index chunk_rows, int W,
                typename Final::Out* __restrict__ out, Final fin) {
  constexpr int TX = 32 * WX;
  constexpr int kThreads = TX * WY;
  using Acc = sum_acc_t<T>;
  using ColAcc = typename col_accumulator<T>::type;
  using P = Pack<T, V>;
  static_assert(kThreads * V * sizeof(Acc) <= 48 * 1024, "col_sums_kernel: tile partials exceed 48 KiB");
  __shared__ Acc red_smem[WY][TX][V];  // (WY, TX, V) each thread's column sums

  const Index strip = blockIdx.x % strips, chunk = blockIdx.x / strips;
  const int tx = threadIdx.x % TX, ty = threadIdx.x / TX;
  const int rows_side = TX / W;  // P in the comment above
  const int u_local = tx % W, prow = tx / W;
  const Index units = cols / V;
  const Index unit = strip * W + u_local;
  const Index r_begin = chunk * chunk_rows;
  const Index r_end = std::min(rows, r_begin + chunk_rows);

  ColAcc acc[V];
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = ColAcc(0);
  if (prow < rows_side && unit < units) {
    const Index ld_units = ld / V;                            // V divides ld
    const P* col_g = reinterpret_cast<const P*>(in) + unit;  // row r's vector at col_g[r * ld_units]
    const Index step = static_cast<Index>(WY) * rows_side;
    Index r = r_begin + static_cast<Index>(ty) * rows_side + prow;
    for (; r + (U - 1) * step < r_end; r += U * step) {
      P v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) v[u] = load_pack(col_g + (r + u * step) * ld_units);
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < V; ++k) acc[k] += static_cast<ColAcc>(v[u].v[k]);
    }
    if (r < r_end) {  // fewer than U rows left: load them all, then add
      P v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if (r + u * step < r_end) {
          v[u] = load_pack(col_g + (r + u * step) * ld_units);
        } else {
#pragma unroll
          for (int k = 0; k < V; ++k) v[u].v[k] = T(0);
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < V; ++k) acc[k] += static_cast<ColAcc>(v[u].v[k]);
    }
  }
#pragma unroll
  for (int k = 0; k < V; ++k) red_smem[ty][tx][k] = static_cast<Acc>(acc[k]);
  __syncthreads();

  // Thread idx sums column strip * W * V + idx over the WY warp rows and the P rows side by
  // side, in that fixed order; consecutive threads write consecutive columns.
  const Index col0 = strip * W * V;
  for (int idx = threadIdx.x; idx < W * V; idx += kThreads) {
    const int ul = idx / V, k = idx % V;
    if (strip * W + ul >= units) break;
    Acc v = Acc(0);
    for (int y = 0; y < WY; ++y)
      for (int p = 0; p < rows_side; ++p) v += red_smem[y][p * W + ul][k];
    out[chunk * cols + col0 + idx] = fin(v);
  }
}

// ------------------------------------------------------------------ 4- and 8-byte elements of unaligned rows
// col_sums_phase_kernel: column sums of a window of 4- or 8-byte elements whose rows do not all
// start on 16 bytes (an odd width or stride, or an odd offset: col_vec_fits(.., kVec16) false),
// which col_sums_kernel could only read an element a lane at a time. Here every row is read as
// aligned 16-byte vectors of V = kVec16<T> elements and no lane shuffles: a row's offset into
// its first vector (its phase, 0 .. V - 1 elements) repeats every V rows (V rows are V ld
// elements, whole vectors), so a lane adds the rows r = j (mod V) of its chunk into accumulators
// of their own, acc[j], whose V components hold the same V columns on every such row. The phases
// are lined up with the columns once, at the end, in shared memory. A warp takes
// kColPhaseWarpCols = 31 V columns (the 32 aligned vectors under them cover them at any phase);
// a block's WX warps take WX neighbouring strips of the same rows, its WY = 8 / WX warp rows
// every WY-th group of V rows.

constexpr int kColPhaseThreads = 256;

/// Columns a warp of col_sums_phase_kernel<T, ..> takes: 31 vectors' worth.
template <class T>
inline constexpr int kColPhaseWarpCols = 31 * kVec16<T>;

/// Column sums of the rows x cols window at `in` (4- or 8-byte T, ld elements between row
/// starts, any alignment of T): block b takes columns [s, s + WX kColPhaseWarpCols) for strip s =
/// b % strips (warp w the w % WX-th kColPhaseWarpCols of them) and rows [k chunk_rows, (k + 1)
/// chunk_rows) for chunk k = b / strips (warp row y = w / WX the groups of V rows y, y + WY, ..,
/// in rounds of U groups, the next round in flight while it adds one); writes fin(sum) of column
/// c over chunk k to out[k * cols + c], adding the warp rows and phases in a fixed order. Loads
/// only aligned vectors that hold one of the window's elements and end within it (the rows at its
/// end are read element by element), so nothing past the window's last element; elements of such
/// a vector outside the warp's columns are added into accumulators that are never read.
template <class T, int WX, int U, class Final>
__global__ void __launch_bounds__(kColPhaseThreads, 2)
col_sums_phase_kernel(const T* __restrict__ in, Index rows, Index cols, Index ld, Index strips, Index chunk_rows,
                      typename Final::Out* __restrict__ out, Final fin) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "col_sums_phase_kernel: 4- or 8-byte elements");
  static_assert(WX >= 1 && (kColPhaseThreads / 32) % WX == 0, "col_sums_phase_kernel: WX divides the 8 warps");
  constexpr int V = kVec16<T>;
  constexpr int WY = kColPhaseThreads / 32 / WX;
  constexpr int kWarpCols = kColPhaseWarpCols<T>;
  constexpr int kBlockCols = WX * kWarpCols;
  using Acc = sum_acc_t<T>;
  using P = Pack<T, V>;
  static_assert(WY * V * WX * 32 * V * sizeof(Acc) <= 48 * 1024, "col_sums_phase_kernel: partials exceed 48 KiB");
  __shared__ Acc part_smem[WY][V][WX * 32 * V];  // (warp row, phase, warp's aligned position)

  const Index strip = blockIdx.x % strips, chunk = blockIdx.x / strips;
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  const int wx = warp % WX, wy = warp / WX;
  const Index r_begin = chunk * chunk_rows;
  const Index r_end = rows - r_begin < chunk_rows ? rows : r_begin + chunk_rows;
  // A lane's vector may run up to V - 1 elements past a row's last column: inside the window
  // (so its allocation) but for its last rows, those within V - 1 elements of its end (the last
  // row; with ld < V - 1, the last ceil((V - 1) / ld)). Those rows are added element by element
  // at the end (r_vec_end .. r_end).
  const Index tail_rows = (V - 1 + ld - 1) / ld;
  const Index r_safe = rows - tail_rows > r_begin ? rows - tail_rows : r_begin;
  const Index r_vec_end = r_end < r_safe ? r_end : r_safe;
  const Index c_block = strip * kBlockCols;
  const Index c0 = c_block + static_cast<Index>(wx) * kWarpCols;  // the warp's first column
  const Index width = cols - c0 < kWarpCols ? cols - c0 : kWarpCols;  // may be <= 0: the warp loads nothing
  // Phase of rows r_begin + j + V g: the element offset of (r_begin + j, c_block) in its vector
  // (the same for every warp of the block: a warp's columns are whole vectors apart).
  const unsigned base = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(in) / sizeof(T)) +
                        static_cast<unsigned>(r_begin * ld + c_block);
  int phase[V];
#pragma unroll
  for (int j = 0; j < V; ++j) phase[j] = static_cast<int>((base + static_cast<unsigned>(j) * static_cast<unsigned>(ld)) & (V - 1));

  Acc acc[V][V];
#pragma unroll
  for (int j = 0; j < V; ++j)
#pragma unroll
    for (int k = 0; k < V; ++k) acc[j][k] = Acc(0);
  // Lane l's vector of phase j: elements V l - phase[j] .. of the warp's row run, where it holds
  // one of the warp's columns; else lane 0's (which holds column c0), read again into
  // accumulators that are never read, so that every load is unconditional.
  if (width <= 0) goto combine;  // the whole warp: no columns here
  {
    const P* p[V];
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const int l = V * lane - phase[j] < width ? lane : 0;
      p[j] = reinterpret_cast<const P*>(in + (r_begin + j + static_cast<Index>(V) * wy) * ld + c0 - phase[j]) + l;
    }
    const Index group_step = static_cast<Index>(V) * WY;  // rows between a warp's groups
    const Index p_step = static_cast<Index>(WY) * ld;     // vectors between them (V WY rows)
    Index r = r_begin + static_cast<Index>(V) * wy;      // first row of the warp's next group
    // Rounds of U groups, the next round's loads issued before the current round's adds (with the
    // adds of a round after its own loads, the compiler placed each add by its load and a warp had
    // one load in flight: 0.67 of a CUB sum, f32 16385x16383, against 0.82 for the element tiles).
    const auto full_round = [&] { return r + (U - 1) * group_step + V <= r_vec_end; };
    const auto load_round = [&](P (&v)[U][V]) {
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < V; ++j) v[u][j] = load_pack(p[j] + u * p_step);
#pragma unroll
      for (int j = 0; j < V; ++j) p[j] += U * p_step;
      r += U * group_step;
    };
    const auto add_round = [&](const P (&v)[U][V]) {
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < V; ++j)
#pragma unroll
          for (int k = 0; k < V; ++k) acc[j][k] += static_cast<Acc>(v[u][j].v[k]);
    };
    if (full_round()) {
      P cur[U][V];
      load_round(cur);
      while (full_round()) {
        P next[U][V];
        load_round(next);
        add_round(cur);
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
          for (int j = 0; j < V; ++j) cur[u][j] = next[u][j];
      }
      add_round(cur);
    }
    for (; r < r_vec_end; r += group_step) {  // the last groups, each row checked
#pragma unroll
      for (int j = 0; j < V; ++j) {
        if (r + j < r_vec_end) {
          const P v = load_pack(p[j]);
#pragma unroll
          for (int k = 0; k < V; ++k) acc[j][k] += static_cast<Acc>(v.v[k]);
        }
        p[j] += p_step;
      }
    }
  }
combine:
  // acc[j][k] is column V lane + k - phase[j] of the warp's (one of its columns where 0 <= that <
  // width). To shared memory by aligned position, then a thread a column of the block.
#pragma unroll
  for (int j = 0; j < V; ++j)
#pragma unroll
    for (int k = 0; k < V; ++k) part_smem[wy][j][wx * 32 * V + V * lane + k] = acc[j][k];
  __syncthreads();
  for (int t = static_cast<int>(threadIdx.x); t < kBlockCols; t += kColPhaseThreads) {
    if (c_block + t >= cols) break;
    const int at = (t / kWarpCols) * 32 * V + t % kWarpCols;  // warp t / kWarpCols, phase 0's position
    Acc sum = Acc(0);
    for (int y = 0; y < WY; ++y)
#pragma unroll
      for (int j = 0; j < V; ++j) sum += part_smem[y][j][at + phase[j]];
    for (Index r = r_vec_end; r < r_end; ++r) sum += static_cast<Acc>(load_one(in + r * ld + c_block + t));
    out[chunk * cols + c_block + t] = fin(sum);
  }
}

/// Column sums of a short, wide matrix: a thread sums the V adjacent columns of each of its M
/// vectors (block b, thread i: vectors b M Threads + i + m Threads, m < M) down every row, in row
/// order, U rows of each in flight, and writes the V sums (as 16-byte stores where `out` is
/// aligned to them). Rows are ld elements apart (V divides ld unless rows == 1; `in` aligned to a
/// vector); at most kMaxColChunkRows rows (the 32-bit byte sums). M > 1 keeps M U loads in flight
/// where the rows are few (3 rows: 3 M); M = 1 is the library's form.
template <class T, int V, int U, class Out, int M = 1>
__global__ void __launch_bounds__(kTeamThreads)
col_sums_wide_kernel(const T* __restrict__ in, Index rows, Index cols, Index ld, Out* __restrict__ out) {
  static_assert(M >= 1, "col_sums_wide_kernel: at least one vector a thread");
  using Acc = sum_acc_t<T>;
  using ColAcc = typename col_accumulator<T>::type;
  using P = Pack<T, V>;
  const Index units = cols / V;
  const Index unit0 = static_cast<Index>(blockIdx.x) * (Index(kTeamThreads) * M) + threadIdx.x;
  if (unit0 >= units) return;
  const Index ld_units = ld / V;
  ColAcc acc[M][V];  // (M, V) the sums of this thread's columns
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int k = 0; k < V; ++k) acc[m][k] = ColAcc(0);
  for (Index r = 0; r < rows; r += U) {
    P v[M][U];
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const Index unit = unit0 + Index(m) * kTeamThreads;
      const P* col_g = reinterpret_cast<const P*>(in) + unit;  // row r's vector at col_g[r * ld_units]
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if (unit < units && r + u < rows) {
          v[m][u] = load_pack(col_g + (r + u) * ld_units);
        } else {
#pragma unroll
          for (int k = 0; k < V; ++k) v[m][u].v[k] = T(0);
        }
      }
    }
#pragma unroll
    for (int m = 0; m < M; ++m)
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < V; ++k) acc[m][k] += static_cast<ColAcc>(v[m][u].v[k]);
  }
  constexpr int kOutVec = V < kVec16<Out> ? V : kVec16<Out>;  // sums per store
  using OutPack = Pack<Out, kOutVec>;
  const bool out_aligned = reinterpret_cast<std::uintptr_t>(out) % sizeof(OutPack) == 0;
#pragma unroll
  for (int m = 0; m < M; ++m) {
    const Index unit = unit0 + Index(m) * kTeamThreads;
    if (unit >= units) break;
    Out* dst = out + unit * V;
    if (out_aligned) {
#pragma unroll
      for (int k0 = 0; k0 < V; k0 += kOutVec) {
        OutPack o;
#pragma unroll
        for (int k = 0; k < kOutVec; ++k) o.v[k] = static_cast<Out>(static_cast<Acc>(acc[m][k0 + k]));
        *reinterpret_cast<OutPack*>(dst + k0) = o;
      }
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k) dst[k] = static_cast<Out>(static_cast<Acc>(acc[m][k]));
    }
  }
}

// ------------------------------------------------------------------ bytes of unaligned rows
// col_sums_bytes_kernel: column sums of u8 windows whose rows do not all start on 16 bytes (an
// odd width or stride: col_vec_fits(.., 16) false), which col_sums_kernel and
// col_sums_wide_kernel could only read a byte (or 2, 4, 8) a lane at a time. Here every row is
// still read as aligned 16-byte chunks: a warp takes kColBytesWarpCols = 496 columns (31 lanes of
// 16; lane 31 only loads), and per row lane l loads the l-th aligned chunk from the one that holds
// the warp's first column, takes chunk l + 1 from lane l + 1 (shuffles), and cuts its 16 columns
// out of the pair at the row's offset within 16 bytes (the same for the whole warp: a row start
// plus the warp's first column). Bytes add in 16-bit lanes (two columns a word), flushed to
// 32-bit sums every kColBytesFlushRows rows of the warp. A block's 8 warps take 8 (strip, chunk)
// units of their own (kWY = 1: many strips) or share one strip's rows, every 8th row each, and add
// their sums in shared memory in warp order (kWY = 8: few strips, so that more chunks of fewer
// rows fill the GPU with fewer partial sums to combine).

constexpr int kColBytesThreads = 256;                // 8 warps a block
constexpr Index kColBytesWarpCols = 31 * 16;         // columns a warp: 16 a lane, lane 31 loads only
constexpr Index kColBytesFlushRows = 256;            // rows of a warp; 256 * 255 fits a 16-bit lane

/// The aligned 16 bytes at `a`, those outside [lo, hi) read as 0 (byte by byte where the chunk
/// crosses either end: the window's first and last rows may start or end inside a chunk that
/// the allocation does not cover).
__device__ __forceinline__ uint4 col_bytes_chunk(std::uintptr_t a, std::uintptr_t lo, std::uintptr_t hi) {
  if (a >= lo && a + 16 <= hi) return __ldg(reinterpret_cast<const uint4*>(a));
  unsigned w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
  for (int b = 0; b < 16; ++b)
    if (a + b >= lo && a + b < hi) w[b / 4] |= static_cast<unsigned>(*reinterpret_cast<const std::uint8_t*>(a + b)) << (8 * (b % 4));
  return make_uint4(w[0], w[1], w[2], w[3]);
}

/// Column sums of the rows x cols u8 window at `in` (ld bytes between row starts, any alignment).
/// kWY = 1: warp g of the grid takes strip s = g % strips (columns [s * kColBytesWarpCols, ..))
/// and chunk k = g / strips (rows [k * chunk_rows, (k + 1) * chunk_rows)). kWY = 8: block b takes
/// strip b % strips and chunk b / strips, its warp w rows w, w + 8, .. of the chunk. U rows in
/// flight a warp; chunk_rows <= kMaxColChunkRows. Writes fin(sum) of column c over chunk k to
/// out[k * cols + c]. Reads only chunks that hold one of the warp's columns, and no byte outside
/// [in, the window's last byte] (col_bytes_chunk).
template <int U, int kWY, class Final>
__global__ void __launch_bounds__(kColBytesThreads)
col_sums_bytes_kernel(const std::uint8_t* __restrict__ in, Index rows, Index cols, Index ld, Index strips,
                      Index chunk_rows, typename Final::Out* __restrict__ out, Final fin) {
  static_assert(U >= 1 && kColBytesFlushRows % U == 0, "col_sums_bytes_kernel: U rows divide a flush");
  static_assert(kWY == 1 || kWY == kColBytesThreads / 32, "col_sums_bytes_kernel: a warp a strip, or a block");
  using Acc = sum_acc_t<std::uint8_t>;
  using Out = typename Final::Out;
  constexpr unsigned kAll = 0xffffffffu;
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  const Index g = kWY == 1 ? static_cast<Index>(blockIdx.x) * (kColBytesThreads / 32) + warp : static_cast<Index>(blockIdx.x);
  const Index strip = g % strips, chunk = g / strips;
  const Index r_begin = chunk * chunk_rows;
  if (r_begin >= rows) return;  // the whole warp (kWY = 1) or block (kWY = 8)
  const Index r_end = rows - r_begin < chunk_rows ? rows : r_begin + chunk_rows;
  const Index c0 = strip * kColBytesWarpCols;
  const int width = static_cast<int>(cols - c0 < kColBytesWarpCols ? cols - c0 : kColBytesWarpCols);
  const std::uintptr_t lo = reinterpret_cast<std::uintptr_t>(in);
  const std::uintptr_t hi = lo + static_cast<std::uintptr_t>((rows - 1) * ld + cols);  // past the last byte
  constexpr Index kStep = kWY;  // between a warp's rows

  unsigned sums[16];  // columns c0 + 16 lane + j
#pragma unroll
  for (int j = 0; j < 16; ++j) sums[j] = 0u;
  for (Index r0 = r_begin + (kWY == 1 ? 0 : warp); r0 < r_end; r0 += kColBytesFlushRows * kStep) {
    const Index r1 = r_end - r0 < kColBytesFlushRows * kStep ? r_end : r0 + kColBytesFlushRows * kStep;
    unsigned pairs[8];  // word q of the 16 columns: bytes 0 and 2 in pairs[2q], 1 and 3 in pairs[2q + 1]
#pragma unroll
    for (int k = 0; k < 8; ++k) pairs[k] = 0u;
    for (Index r = r0; r < r1; r += U * kStep) {
      uint4 v[U];
      int shift[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        v[u] = make_uint4(0u, 0u, 0u, 0u);
        shift[u] = 0;
        const Index ru = r + u * kStep;
        if (ru < r1) {
          const std::uintptr_t base = lo + static_cast<std::uintptr_t>(ru * ld + c0);  // the warp's first column
          shift[u] = static_cast<int>(base & 15);
          const std::uintptr_t a = (base & ~std::uintptr_t(15)) + 16 * static_cast<std::uintptr_t>(lane);
          if (16 * lane <= shift[u] + width - 1) v[u] = col_bytes_chunk(a, lo, hi);
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        // Bytes shift .. shift + 15 of this lane's chunk and the next lane's: its 16 columns.
        const unsigned w[8] = {v[u].x, v[u].y, v[u].z, v[u].w, __shfl_down_sync(kAll, v[u].x, 1),
                               __shfl_down_sync(kAll, v[u].y, 1), __shfl_down_sync(kAll, v[u].z, 1),
                               __shfl_down_sync(kAll, v[u].w, 1)};
        const int q = shift[u] >> 2;
        unsigned t[6], y[5];
#pragma unroll
        for (int k = 0; k < 6; ++k) t[k] = (q & 2) ? w[k + 2] : w[k];
#pragma unroll
        for (int k = 0; k < 5; ++k) y[k] = (q & 1) ? t[k + 1] : t[k];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const unsigned o = __funnelshift_r(y[k], y[k + 1], 8 * (shift[u] & 3));
          pairs[2 * k] += o & 0x00ff00ffu;
          pairs[2 * k + 1] += (o >> 8) & 0x00ff00ffu;
        }
      }
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      sums[4 * k] += pairs[2 * k] & 0xffffu;
      sums[4 * k + 2] += pairs[2 * k] >> 16;
      sums[4 * k + 1] += pairs[2 * k + 1] & 0xffffu;
      sums[4 * k + 3] += pairs[2 * k + 1] >> 16;
    }
  }
  const int first = 16 * lane;  // this lane's first column within the warp's
  Out* const dst = out + chunk * cols + c0;
  if constexpr (kWY > 1) {
    // The warps' sums of each column, added in warp order; a thread a column at a time.
    __shared__ unsigned sum_smem[kWY][kColBytesWarpCols];
    if (lane < 31)
#pragma unroll
      for (int j = 0; j < 16; ++j) sum_smem[warp][first + j] = sums[j];
    __syncthreads();
    for (int c = static_cast<int>(threadIdx.x); c < width; c += kColBytesThreads) {
      Acc t = Acc(0);
#pragma unroll
      for (int y = 0; y < kWY; ++y) t += sum_smem[y][c];
      dst[c] = fin(t);
    }
  } else {
    if (lane == 31 || first >= width) return;
    constexpr int kOutVec = kVec16<Out>;
    using OutPack = Pack<Out, kOutVec>;
    if (first + 16 <= width && reinterpret_cast<std::uintptr_t>(dst + first) % sizeof(OutPack) == 0) {
#pragma unroll
      for (int j0 = 0; j0 < 16; j0 += kOutVec) {
        OutPack o;
#pragma unroll
        for (int k = 0; k < kOutVec; ++k) o.v[k] = fin(static_cast<Acc>(sums[j0 + k]));
        *reinterpret_cast<OutPack*>(dst + first + j0) = o;
      }
    } else {
#pragma unroll
      for (int j = 0; j < 16; ++j)
        if (first + j < width) dst[first + j] = fin(static_cast<Acc>(sums[j]));
    }
  }
}

/// out[c] = sum over k < chunks of partials[k * cols + c]: 32 columns by 32 chunk lanes per
/// block, combined in a fixed order.
template <class Acc, class Out>
__global__ void __launch_bounds__(1024)
col_chunks_kernel(const Acc* __restrict__ partials, Index cols, Index chunks, Out* __restrict__ out) {
  __shared__ Acc sum_smem[32][33];  // (chunk lane, column)
  const Index c = static_cast<Index>(blockIdx.x) * 32 + threadIdx.x;
  Acc v = Acc(0);
  if (c < cols)
    for (Index k = threadIdx.y; k < chunks; k += 32) v += partials[k * cols + c];
  sum_smem[threadIdx.y][threadIdx.x] = v;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    Acc t = Acc(0);
    for (int y = 0; y < 32; ++y) t += sum_smem[y][threadIdx.x];
    out[c] = static_cast<Out>(t);
  }
}

}  // namespace devmat::detail

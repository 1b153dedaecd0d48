// Reductions: whole matrix (sum, min, max, mean), row sums and column sums. Kernels and the
// launchers that pick a grid for them; the bench instantiates other configurations.
//
// Determinism: every grid below depends only on the shape and the device (its SM count and
// the kernel's occupancy there), never on timing, and partial results are combined in a fixed
// order by a second pass, so a given input gives bitwise the same result on every run.
#pragma once

#include "../detail/runtime.hpp"
#include "reduce_block.cuh"

#include <devmat/device_matrix.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

namespace devmat::detail {

// ------------------------------------------------------------------ launch helpers
/// How many blocks of `kernel` (at `threads` per block) the current device runs at once:
/// SMs x blocks per SM. Cached per (kernel, device), so a grid sized from it is the same on
/// every call.
inline Index resident_blocks(const void* kernel, int threads) {
  static std::mutex mu;
  static std::map<std::pair<const void*, int>, Index> cache;
  int dev = 0;
  DEVMAT_CUDA_TRY(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(kernel, dev);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  int sms = 0, per_sm = 0;
  DEVMAT_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  DEVMAT_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
  const Index r = static_cast<Index>(std::max(sms, 1)) * std::max(per_sm, 1);
  cache.emplace(key, r);
  return r;
}

inline Index div_up(Index a, Index b) { return (a + b - 1) / b; }

// ================================================================== whole matrix
/// Threads per block, 16-byte vectors in flight per thread, blocks per resident slot.
template <int Threads, int Unroll, int Oversub = 1>
struct ReduceConfig {
  static constexpr int kThreads = Threads;
  static constexpr int kUnroll = Unroll;
  static constexpr int kOversub = Oversub;
};
using DefaultReduceConfig = ReduceConfig<256, 4, 1>;

constexpr int kFinalThreads = 256;  // the one block of a second pass

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
  const void* pass1 = reinterpret_cast<const void*>(&reduce_kernel<R, kThreads, Cfg::kUnroll, ToAcc>);
  const Index cap = resident_blocks(pass1, kThreads) * Cfg::kOversub;
  const Index grid = std::min(std::max<Index>(div_up(n, kPerBlock), 1), cap);
  if (grid == 1) {
    reduce_kernel<R, kThreads, Cfg::kUnroll><<<1, kThreads, 0, s>>>(in, n, out, fin);
    DEVMAT_CUDA_TRY(cudaGetLastError());
    return;
  }
  DeviceMatrix<Acc> partials(1, grid, stream);
  reduce_kernel<R, kThreads, Cfg::kUnroll><<<static_cast<unsigned>(grid), kThreads, 0, s>>>(
      in, n, partials.data(), ToAcc{});
  DEVMAT_CUDA_TRY(cudaGetLastError());
  reduce_partials_kernel<R, kFinalThreads><<<1, kFinalThreads, 0, s>>>(partials.data(), grid, out, fin);
  DEVMAT_CUDA_TRY(cudaGetLastError());
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

constexpr int kTeamThreads = 256;
constexpr Index kMinRowChunk = 8192;  // elements: a block's share of a split row

/// Teams of L lanes, one row each (L = 32: a warp per row); each team reads its row as
/// 16-byte vectors, with the unaligned ends element by element.
template <class T, int L, int U>
__global__ void __launch_bounds__(kTeamThreads)
row_sums_team_kernel(const T* __restrict__ in, Index rows, Index cols, sum_t<T>* __restrict__ out) {
  using R = SumReducer<T>;
  const Index row = (static_cast<Index>(blockIdx.x) * kTeamThreads + threadIdx.x) / L;
  const int lane = static_cast<int>(threadIdx.x % L);
  typename R::State s;
  if (row < rows) reduce_range<R, U, true>(s, in + row * cols, cols, lane, L);
  const typename R::Acc v = team_reduce<R, L>(R::finish(s));  // every lane takes part
  if (row < rows && lane == 0) out[row] = static_cast<sum_t<T>>(v);
}

/// A block per (row, chunk): block b reduces chunk b % chunks of row b / chunks and writes
/// fin(sum) to out[b] (so with one chunk, out[row]).
template <class T, int Threads, int U, class Final>
__global__ void __launch_bounds__(Threads)
row_sums_block_kernel(const T* __restrict__ in, Index cols, Index chunks, Index chunk_len,
                      typename Final::Out* __restrict__ out, Final fin) {
  using R = SumReducer<T>;
  const Index row = blockIdx.x / chunks, chunk = blockIdx.x % chunks;
  const Index c0 = chunk * chunk_len;
  const Index len = std::min(chunk_len, cols - c0);
  typename R::State s;
  reduce_range<R, U, true>(s, in + row * cols + c0, len, threadIdx.x, Threads);
  const typename R::Acc v = block_reduce<R, Threads>(R::finish(s));
  if (threadIdx.x == 0) out[blockIdx.x] = fin(v);
}

/// out[seg] = sum of partials[seg * len, (seg + 1) * len): a warp per segment, fixed order.
template <class Acc, class Out>
__global__ void __launch_bounds__(kTeamThreads)
segment_sums_kernel(const Acc* __restrict__ partials, Index segments, Index len, Out* __restrict__ out) {
  const Index seg = (static_cast<Index>(blockIdx.x) * kTeamThreads + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  Acc v = Acc(0);
  if (seg < segments)
    for (Index k = lane; k < len; k += 32) v += partials[seg * len + k];
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += shfl_down(v, offset);
  if (seg < segments && lane == 0) out[seg] = static_cast<Out>(v);
}

template <class T, int L, int U>
void launch_row_team(cudaStream_t s, const T* in, Index rows, Index cols, sum_t<T>* out) {
  const Index blocks = div_up(rows * L, kTeamThreads);
  row_sums_team_kernel<T, L, U><<<static_cast<unsigned>(blocks), kTeamThreads, 0, s>>>(in, rows, cols, out);
  DEVMAT_CUDA_TRY(cudaGetLastError());
}

/// out[r] = sum of row r of the rows x cols row-major `in` on `stream`. `block_min_cols`
/// overrides the configuration's switch from a warp to a block per row (for the bench).
template <class T, class Cfg = DefaultRowSumsConfig>
void launch_row_sums(const Stream& stream, const T* in, Index rows, Index cols, sum_t<T>* out,
                     Index block_min_cols = Cfg::kBlockMinCols) {
  using Acc = sum_acc_t<T>;
  using Out = sum_t<T>;
  const cudaStream_t s = stream.native();
  if (rows == 0) return;
  if (cols == 0) {
    DEVMAT_CUDA_TRY(cudaMemsetAsync(out, 0, static_cast<std::size_t>(rows) * sizeof(Out), s));
    return;
  }
  // About two 16-byte vectors per lane for short rows, a warp up to block_min_cols.
  constexpr int U = Cfg::kUnroll;
  const Index row_bytes = cols * static_cast<Index>(sizeof(T));
  if (row_bytes < 32) return launch_row_team<T, 1, U>(s, in, rows, cols, out);
  if (row_bytes < 64) return launch_row_team<T, 2, U>(s, in, rows, cols, out);
  if (row_bytes < 128) return launch_row_team<T, 4, U>(s, in, rows, cols, out);
  if (row_bytes < 256) return launch_row_team<T, 8, U>(s, in, rows, cols, out);
  if (row_bytes < 512) return launch_row_team<T, 16, U>(s, in, rows, cols, out);
  if (cols < block_min_cols) return launch_row_team<T, 32, U>(s, in, rows, cols, out);

  constexpr int kThreads = Cfg::kBlockThreads;
  using ToAcc = CastTo<Acc, Acc>;
  using ToOut = CastTo<Acc, Out>;
  const void* split = reinterpret_cast<const void*>(&row_sums_block_kernel<T, kThreads, U, ToAcc>);
  const Index resident = resident_blocks(split, kThreads);
  // Split rows only when there are too few of them to give every resident slot a block.
  Index chunks = rows < resident ? std::min(resident / rows, div_up(cols, kMinRowChunk)) : 1;
  chunks = std::max<Index>(chunks, 1);
  // Chunk starts stay 16-byte aligned relative to the row start.
  const Index chunk_len = div_up(div_up(cols, chunks), kVec16<T>) * kVec16<T>;
  chunks = div_up(cols, chunk_len);
  if (chunks == 1) {
    row_sums_block_kernel<T, kThreads, U><<<static_cast<unsigned>(rows), kThreads, 0, s>>>(
        in, cols, 1, cols, out, ToOut{});
    DEVMAT_CUDA_TRY(cudaGetLastError());
    return;
  }
  DeviceMatrix<Acc> partials(rows, chunks, stream);
  row_sums_block_kernel<T, kThreads, U><<<static_cast<unsigned>(rows * chunks), kThreads, 0, s>>>(
      in, cols, chunks, chunk_len, partials.data(), ToAcc{});
  DEVMAT_CUDA_TRY(cudaGetLastError());
  segment_sums_kernel<<<static_cast<unsigned>(div_up(rows * 32, kTeamThreads)), kTeamThreads, 0, s>>>(
      partials.data(), rows, chunks, out);
  DEVMAT_CUDA_TRY(cudaGetLastError());
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

/// What one thread sums a column in: sum_acc_t<T>, except uint8_t, which uses 32 bits
/// (a chunk has at most kMaxColChunkRows rows, so 255 * rows fits).
template <class T> struct col_accumulator { using type = sum_acc_t<T>; };
template <> struct col_accumulator<std::uint8_t> { using type = unsigned; };
constexpr Index kMaxColChunkRows = Index(1) << 24;

/// Column sums of a block's tile: columns [strip * W * V, (strip + 1) * W * V), rows of chunk
/// `chunk`. A unit is V adjacent columns (one vector); W = min(units per row, TX) units per
/// strip, and when a row has fewer units than TX, P = TX / W rows are read side by side, so a
/// warp still reads a contiguous stretch. Block b = chunk * strips + strip writes
/// fin(sum) of column c to out[chunk * cols + c].
template <class T, int V, int WX, int WY, int U, class Final>
__global__ void __launch_bounds__(32 * WX * WY)
col_sums_kernel(const T* __restrict__ in, Index rows, Index cols, Index strips, Index chunk_rows, int W,
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
    const P* col_g = reinterpret_cast<const P*>(in) + unit;  // row r's vector at col_g[r * units]
    const Index step = static_cast<Index>(WY) * rows_side;
    Index r = r_begin + static_cast<Index>(ty) * rows_side + prow;
    for (; r + (U - 1) * step < r_end; r += U * step) {
      P v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) v[u] = load_pack(col_g + (r + u * step) * units);
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
          v[u] = load_pack(col_g + (r + u * step) * units);
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

template <class T, int V, class Cfg>
void launch_col_sums_v(const Stream& stream, const T* in, Index rows, Index cols, sum_t<T>* out) {
  using Acc = sum_acc_t<T>;
  using Out = sum_t<T>;
  using ToAcc = CastTo<Acc, Acc>;
  using ToOut = CastTo<Acc, Out>;
  constexpr int WX = Cfg::kWX, WY = Cfg::kWY;
  constexpr int TX = 32 * WX, kThreads = TX * WY;
  // Enough rows in flight per thread for 64 bytes, whatever the vector width.
  constexpr int U = std::min(16, std::max(Cfg::kUnroll, static_cast<int>(64 / (V * sizeof(T)))));
  const cudaStream_t s = stream.native();

  const Index units = cols / V;
  const int W = static_cast<int>(std::min<Index>(units, TX));
  const int rows_side = TX / W;
  const Index strips = div_up(units, W);
  const void* k = reinterpret_cast<const void*>(&col_sums_kernel<T, V, WX, WY, U, ToAcc>);
  const Index resident = resident_blocks(k, kThreads);
  // One wave: as many row chunks as there are free resident slots per strip, each chunk at
  // least 4 row steps of every warp, and short enough for 32-bit byte sums.
  Index chunks = std::max<Index>(resident / strips, 1);
  chunks = std::min(chunks, std::max<Index>(rows / (Index(4) * WY * rows_side), 1));
  chunks = std::max(chunks, div_up(rows, kMaxColChunkRows));
  const Index chunk_rows = div_up(rows, chunks);
  chunks = div_up(rows, chunk_rows);
  const auto grid = static_cast<unsigned>(strips * chunks);
  if (chunks == 1) {
    col_sums_kernel<T, V, WX, WY, U><<<grid, kThreads, 0, s>>>(in, rows, cols, strips, chunk_rows, W, out,
                                                                ToOut{});
    DEVMAT_CUDA_TRY(cudaGetLastError());
    return;
  }
  DeviceMatrix<Acc> partials(chunks, cols, stream);
  col_sums_kernel<T, V, WX, WY, U><<<grid, kThreads, 0, s>>>(in, rows, cols, strips, chunk_rows, W,
                                                              partials.data(), ToAcc{});
  DEVMAT_CUDA_TRY(cudaGetLastError());
  col_chunks_kernel<<<static_cast<unsigned>(div_up(cols, 32)), dim3(32, 32), 0, s>>>(partials.data(), cols,
                                                                                     chunks, out);
  DEVMAT_CUDA_TRY(cudaGetLastError());
}

/// out[c] = sum of column c of the rows x cols row-major `in` on `stream`. Reads V-element
/// vectors, V the widest power of two up to 16 bytes that divides cols (so every row start is
/// aligned to it).
template <class T, class Cfg = DefaultColSumsConfig>
void launch_col_sums(const Stream& stream, const T* in, Index rows, Index cols, sum_t<T>* out) {
  using Out = sum_t<T>;
  if (cols == 0) return;
  if (rows == 0) {
    DEVMAT_CUDA_TRY(cudaMemsetAsync(out, 0, static_cast<std::size_t>(cols) * sizeof(Out), stream.native()));
    return;
  }
  const auto fits = [&](int v) {
    return cols % v == 0 && reinterpret_cast<std::uintptr_t>(in) % (v * sizeof(T)) == 0;
  };
  constexpr int VMax = kVec16<T>;
  if constexpr (VMax >= 16) if (fits(16)) return launch_col_sums_v<T, 16, Cfg>(stream, in, rows, cols, out);
  if constexpr (VMax >= 8) if (fits(8)) return launch_col_sums_v<T, 8, Cfg>(stream, in, rows, cols, out);
  if constexpr (VMax >= 4) if (fits(4)) return launch_col_sums_v<T, 4, Cfg>(stream, in, rows, cols, out);
  if constexpr (VMax >= 2) if (fits(2)) return launch_col_sums_v<T, 2, Cfg>(stream, in, rows, cols, out);
  launch_col_sums_v<T, 1, Cfg>(stream, in, rows, cols, out);
}

}  // namespace devmat::detail

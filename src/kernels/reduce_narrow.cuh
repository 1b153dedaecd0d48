// Row and column sums of narrow matrices (a few columns, many rows) whose rows are not 16-byte
// aligned: the shapes where a row is too short for vector loads of its own. Each kernel reads the matrix as one flat, coalesced stream of 16-byte chunks and sorts
// the elements into rows or columns afterwards. Device code only; dispatch/reduce.cuh launches.
//
// Determinism: every sum below is formed in an order fixed by the shape and the template
// configuration (never by timing or by the grid of a row sum), and block partials are combined
// by a second pass in a fixed order, so the same input gives the same bits on every run.
#pragma once

#include "reduce_block.cuh"

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace devmat::detail {

// ================================================================== row sums
/// The row loop of sum_tile_rows over a tile of `nrows` rows, by a block of Threads: L = 1, thread
/// t rows t, t + Threads, ..., storing store(r, sum(r, 0, 1)); L = 2, 4, 8, ..., groups of L
/// adjacent lanes a row (group g rows g, g + Threads / L, ...), lane i sum(r, i, L), then a
/// shuffle tree of combine over the group, whose first lane stores store(r, v). Lanes past the
/// last row bring `zero`; the passes are uniform over the block, so every lane reaches the shuffles.
template <int Threads, int L, class V, class Sum, class Combine, class Store>
__device__ __forceinline__ void for_tile_rows(Index nrows, V zero, Sum sum, Combine combine, Store store) {
  static_assert(L >= 1 && L <= 32 && (L & (L - 1)) == 0 && Threads % 32 == 0, "for_tile_rows: L a power of two <= 32");
  if constexpr (L == 1) {
    for (Index r = threadIdx.x; r < nrows; r += Threads) store(r, sum(r, 0, 1));
  } else {
    constexpr int G = Threads / L;  // rows a pass
    const int sub = static_cast<int>(threadIdx.x % L);
    const Index grp = threadIdx.x / L;
    for (Index r0 = 0; r0 < nrows; r0 += G) {
      const Index r = r0 + grp;
      V v = r < nrows ? sum(r, sub, L) : zero;
#pragma unroll
      for (int o = L / 2; o >= 1; o /= 2) v = combine(v, __shfl_xor_sync(0xffffffffu, v, o));
      if (sub == 0 && r < nrows) store(r, v);
    }
  }
}

/// Sums the `nrows` x `cols` dense tile at `tile_s` in shared memory into out[r] (coalesced), a
/// thread or L lanes a row (for_tile_rows): lane i of L elements i, i + L, ...; a thread alone
/// (L = 1) takes odd rows in column order (read without bank conflicts) and even ones from column
/// r % cols around to r % cols - 1, which spreads a warp's reads over the banks. Each sum's order
/// is fixed by (L, cols).
/// Bytes: a row is the aligned 4-byte words that cover it, each summed by one __dp4a (a load and
/// a multiply-add for four bytes, where a byte at a time took a load and an add each: u8
/// 4000037x67 0.73 of a CUB sum, now 0.89), less the bytes of its first and last word that lie
/// outside it; a thread alone takes the words of rows of even length from word r % words around
/// (64-byte rows would otherwise put a warp's 32 rows on 2 banks). The words lie inside the 16-byte
/// chunks the tile was copied in, so nothing outside the copied tile is read. The sums are exact
/// in 32 bits (a row of fewer than 2^24 bytes), so their order does not change a bit.
template <class T, class Out, int Threads, int L = 1>
__device__ __forceinline__ void sum_tile_rows(const T* tile_s, Index nrows, Index cols, Out* __restrict__ out) {
  const bool rotate = cols % 2 == 0;
  if constexpr (std::is_same_v<T, std::uint8_t>) {
    constexpr unsigned kOnes = 0x01010101u;
    const int ncols = static_cast<int>(cols);  // a tile in shared memory: fewer than 2^31 bytes
    // Row r's words: its first at `w`, `b` bytes of which precede the row; `e` bytes of the last
    // inside the row (0: all four).
    struct RowWords {
      const unsigned* w;
      int words;
      unsigned b, e;
    };
    const auto row_words = [&](Index r) {
      const std::uint8_t* row = tile_s + r * cols;
      const unsigned b = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(row) & 3u);
      return RowWords{reinterpret_cast<const unsigned*>(row - b), static_cast<int>((b + ncols + 3) / 4), b,
                      (b + ncols) & 3u};
    };
    const auto sum = [&](Index r, int k0, int step) {
      const RowWords rw = row_words(r);
      unsigned t = 0;
      if (step == 1 && rotate) {
        int j = static_cast<int>(r % rw.words);
        for (int k = 0; k < rw.words; ++k) {
          t = __dp4a(rw.w[j], kOnes, t);
          if (++j == rw.words) j = 0;
        }
      } else {
        for (int k = k0; k < rw.words; k += step) t = __dp4a(rw.w[k], kOnes, t);
      }
      return t;
    };
    // Less the bytes of the first and last word outside the row.
    const auto store = [&](Index r, unsigned t) {
      const RowWords rw = row_words(r);
      t -= __dp4a(rw.w[0], kOnes & ((1u << (8 * rw.b)) - 1u), 0u);
      if (rw.e != 0) t -= __dp4a(rw.w[rw.words - 1], kOnes << (8 * rw.e), 0u);
      out[r] = static_cast<Out>(t);
    };
    for_tile_rows<Threads, L>(nrows, 0u, sum, [](unsigned a, unsigned b) { return a + b; }, store);
  } else {
    using R = SumReducer<T>;
    using Acc = typename R::Acc;
    const auto sum = [&](Index r, Index k0, Index step) -> Acc {
      const T* row_s = tile_s + r * cols;
      typename R::State s;
      if (step == 1 && rotate) {
        // Columns j, j + 1, .., cols - 1, 0, .., j - 1, as one loop with a wrap: two loops, one
        // each side of j, ran f32 1000003x50 at 0.82 of a CUB sum (session 22, run 2) where this
        // form ran 0.97 (run 1; the staged tiles 0.74 against 0.83).
        Index j = r % cols;
        for (Index k = 0; k < cols; ++k) {
          R::add(s, row_s[j]);
          if (++j == cols) j = 0;
        }
      } else {
        for (Index k = k0; k < cols; k += step) R::add(s, row_s[k]);
      }
      return R::finish(s);
    };
    for_tile_rows<Threads, L>(nrows, R::identity(), sum, [](Acc a, Acc b) { return R::combine(a, b); },
                              [&](Index r, Acc v) { out[r] = static_cast<Out>(v); });
  }
}

/// Row sums of a dense matrix (rows follow each other with no gap) of short rows. A block
/// takes a tile of `tile_rows` whole rows at a time (tiles blockIdx.x, + gridDim.x, ...): it
/// copies the tile's 16-byte chunks into shared memory with coalesced vector loads (U in
/// flight per thread, the partial first and last chunk element by element), then sums its rows
/// (sum_tile_rows). Dynamic shared memory: tile_rows * cols elements rounded up to 16 bytes,
/// plus 16 (the head).
template <class T, class Out, int Threads>
__global__ void __launch_bounds__(Threads)
row_sums_staged_kernel(const T* __restrict__ in, Index rows, Index cols, Index tile_rows, Out* __restrict__ out) {
  static_assert(Threads % 32 == 0, "row_sums_staged_kernel: whole warps");
  constexpr int V = kVec16<T>;
  constexpr int U = 4;  // chunks in flight per thread
  using P = Pack<T, V>;
  DEVMAT_DYNAMIC_SHARED(unsigned char, stage_raw);
  P* tile_smem = reinterpret_cast<P*>(stage_raw);               // (chunks) the tile's 16-byte chunks
  const T* tile_elems = reinterpret_cast<const T*>(stage_raw);  // (head + tile_rows * cols)
  const Index tiles = (rows + tile_rows - 1) / tile_rows;
  for (Index tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const Index row0 = tile * tile_rows;
    const Index nrows = rows - row0 < tile_rows ? rows - row0 : tile_rows;
    const T* tile_g = in + row0 * cols;  // (nrows * cols) contiguous
    const Index len = nrows * cols;
    const Index head = head_of(tile_g);
    const T* base_g = tile_g - head;
    const Index chunks = (head + len + V - 1) / V;
    for (Index c = threadIdx.x; c < chunks; c += Index(U) * Threads) {
      P v[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (c + u * Threads < chunks) v[u] = load_chunk(base_g, head, len, c + u * Threads, T(0));
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (c + u * Threads < chunks) tile_smem[c + u * Threads] = v[u];
    }
    __syncthreads();
    sum_tile_rows<T, Out, Threads>(tile_elems + head, nrows, cols, out + row0);
    __syncthreads();  // the next tile overwrites the shared chunks
  }
}

/// Row sums of dense matrices in the same layout as row_sums_staged_kernel (a tile of `tile_rows`
/// whole rows at a time, summed from shared memory by sum_tile_rows<.., L>: a thread, or L lanes,
/// a row), but the tiles stream through a ring of Stages shared buffers of `buf_chunks` 16-byte
/// chunks each, filled by cp.async Stages - 1 tiles ahead of the one being summed: the copies wait
/// in no register and the memory system always has whole tiles in flight, while the staged kernel
/// holds U chunks a thread and stops loading while it sums. A tile is the 16-byte chunks that
/// cover its rows (its first and last shared with the neighbouring tiles, read twice); only the
/// matrix's own first and last chunk, when partial, are read element by element (load_chunk),
/// so nothing outside the matrix is read. buf_chunks >= tile_rows * cols / kVec16<T> + 2.
template <class T, class Out, int Threads, int Stages, int L = 1>
__global__ void __launch_bounds__(Threads)
row_sums_piped_kernel(const T* __restrict__ in, Index rows, Index cols, Index tile_rows, Index buf_chunks,
                      Out* __restrict__ out) {
  static_assert(Threads % 32 == 0 && Stages >= 2, "row_sums_piped_kernel: whole warps, two stages or more");
  constexpr int V = kVec16<T>;
  using P = Pack<T, V>;
  DEVMAT_DYNAMIC_SHARED(unsigned char, stage_raw);
  P* ring = reinterpret_cast<P*>(stage_raw);  // (Stages, buf_chunks)
  const Index head = head_of(in);              // the matrix starts `head` elements past `base`
  const T* base = in - head;
  const Index total = rows * cols;
  const Index tiles = (rows + tile_rows - 1) / tile_rows;
  // Copies tile t's covering chunks into ring slot `slot`.
  auto fill = [&](Index t, int slot) {
    const Index row_end = (t + 1) * tile_rows < rows ? (t + 1) * tile_rows : rows;
    const Index first = (head + t * tile_rows * cols) / V, end = (head + row_end * cols + V - 1) / V;
    P* buf = ring + slot * buf_chunks;
    for (Index g = first + threadIdx.x; g < end; g += Threads) {
      const Index e0 = g * V - head;  // the chunk's first element, relative to `in`
      if (e0 >= 0 && e0 + V <= total)
        cp_async<16>(buf + (g - first), reinterpret_cast<const P*>(base) + g, 16);
      else
        buf[g - first] = load_chunk(base, head, total, g, T(0));
    }
  };
#pragma unroll
  for (int k = 0; k < Stages - 1; ++k) {
    if (blockIdx.x + Index(k) * gridDim.x < tiles) fill(blockIdx.x + Index(k) * gridDim.x, k);
    cp_async_commit();
  }
  int slot = 0;
  for (Index t = blockIdx.x; t < tiles; t += gridDim.x) {
    const Index ahead = t + Index(Stages - 1) * gridDim.x;
    if (ahead < tiles) fill(ahead, slot == 0 ? Stages - 1 : slot - 1);
    cp_async_commit();  // every thread commits a group every round, empty or not: the wait is exact
    cp_async_wait<Stages - 1>();
    __syncthreads();
    const Index row0 = t * tile_rows;
    const Index nrows = rows - row0 < tile_rows ? rows - row0 : tile_rows;
    const T* tile_s = reinterpret_cast<const T*>(ring + slot * buf_chunks) + (head + row0 * cols) % V;
    sum_tile_rows<T, Out, Threads, L>(tile_s, nrows, cols, out + row0);
    __syncthreads();  // the next round's copies overwrite this slot
    slot = slot + 1 == Stages ? 0 : slot + 1;
  }
}

/// What row_sums_flat_kernel and row_sums_lines_kernel hold a 16-byte chunk of T in: bytes stay
/// four 32-bit words from load to __dp4a (held as a Pack of 16 bytes, every byte took a register:
/// ptxas, 255 registers and spills at U = 16); other types a Pack.
template <class T>
using FlatChunk = std::conditional_t<std::is_same_v<T, std::uint8_t>, uint4, Pack<T, kVec16<T>>>;

/// Chunk c of the flat stream at `in_g` (always inside it).
template <class T>
__device__ __forceinline__ FlatChunk<T> load_flat_chunk(const FlatChunk<T>* in_g, Index c) {
  if constexpr (std::is_same_v<T, std::uint8_t>) return __ldg(in_g + c);
  else return load_pack(in_g + c);
}

/// The sum of one chunk's elements (bytes: four __dp4a), in the order every flat row sum uses.
template <class T>
__device__ __forceinline__ typename SumReducer<T>::Acc flat_chunk_sum(const FlatChunk<T>& v) {
  using R = SumReducer<T>;
  if constexpr (std::is_same_v<T, std::uint8_t>) {
    constexpr unsigned kOnes = 0x01010101u;
    return static_cast<typename R::Acc>(__dp4a(v.w, kOnes, __dp4a(v.z, kOnes, __dp4a(v.y, kOnes, __dp4a(v.x, kOnes, 0u)))));
  } else {
    typename R::State s;
    const FlatChunk<T> one[1] = {v};
    R::add_packs(s, one);
    return R::finish(s);
  }
}

/// Row sums of a dense matrix (rows follow each other with no gap) whose rows are C whole 16-byte
/// chunks (C a power of two up to 32) from a 16-byte aligned start: the matrix is one flat stream
/// of rows * C chunks, and chunk c belongs to row c / C. Thread t of the grid reads chunks t,
/// t + S, t + 2 S, ... (S the grid's thread count, a multiple of 32), U of them in flight, so each
/// load instruction of a warp reads 512 contiguous bytes and a row's C chunks lie in C adjacent
/// lanes (lane % C = chunk % C). Per chunk: the sum of its elements (flat_chunk_sum), then a
/// shuffle tree over the C lanes (none for rows of one chunk), whose first lane stores the row's
/// sum. No row index math beyond a shift, no per-row pointer, no partial chunks: the work a row
/// costs is what its bytes cost. Each sum is formed in an order fixed by C alone; the loop bounds
/// are uniform over a warp (lanes past the end add zeros), so all reach the shuffles together.
template <class T, class Out, int C, int U>
__global__ void __launch_bounds__(256)
row_sums_flat_kernel(const T* __restrict__ in, Index rows, Out* __restrict__ out) {
  static_assert(C >= 1 && C <= 32 && (C & (C - 1)) == 0, "row_sums_flat_kernel: rows of 1, 2, 4, .. 32 chunks");
  constexpr int kThreads = 256;
  using R = SumReducer<T>;
  using Raw = FlatChunk<T>;
  const Raw* in_g = reinterpret_cast<const Raw*>(in);  // (rows * C) chunks
  const Index chunks = rows * C;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const Index t = static_cast<Index>(blockIdx.x) * kThreads + threadIdx.x;
  const Index warp_t = t - lane;  // the warp's first thread: the loop bounds use it alone
  const Index step = static_cast<Index>(gridDim.x) * kThreads;
  for (Index c0 = 0; c0 + warp_t < chunks; c0 += Index(U) * step) {
    Raw v[U];  // (U) this lane's chunks c0 + t + u * step
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const Index c = c0 + t + u * step;
      v[u] = Raw{};
      if (c < chunks) v[u] = load_flat_chunk<T>(in_g, c);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (c0 + warp_t + u * step >= chunks) break;  // uniform over the warp
      const auto x = team_reduce<R, C>(flat_chunk_sum<T>(v[u]));  // lane % C == 0 holds the row's sum
      const Index c = c0 + t + u * step;
      if (lane % C == 0 && c < chunks) out[c / C] = static_cast<Out>(x);
    }
  }
}

/// row_sums_flat_kernel's rows (C whole chunks each, a dense, 16-byte aligned stream) by warp
/// tiles of 32 rows (32 C chunks, 512 C contiguous bytes): warp w of the grid takes tiles w,
/// w + Wg, w + 2 Wg, ... (Wg the grid's warps), UT of them in flight, C loads a tile of 512
/// contiguous bytes each. Load k of a tile holds rows k 32 / C .. (k + 1) 32 / C - 1, summed as
/// row_sums_flat_kernel sums them (the same bits); then row i moves to lane i (a shuffle a load)
/// and the warp stores its 32 sums as one contiguous run (128 bytes of f32) where the flat kernel
/// stores C runs of 32 / C lanes (H100: f32 16777216x16 0.91 of a CUB sum of its bytes against
/// 0.89). Rows past the last are read as zeros and not stored; the tile loop is uniform over a
/// warp.
template <class T, class Out, int C, int UT>
__global__ void __launch_bounds__(256)
row_sums_lines_kernel(const T* __restrict__ in, Index rows, Out* __restrict__ out) {
  static_assert(C >= 1 && C <= 32 && (C & (C - 1)) == 0, "row_sums_lines_kernel: rows of 1, 2, 4, .. 32 chunks");
  constexpr int kThreads = 256, kRowsALoad = 32 / C;
  using R = SumReducer<T>;
  using Acc = typename R::Acc;
  using Raw = FlatChunk<T>;
  const Raw* in_g = reinterpret_cast<const Raw*>(in);
  const Index chunks = rows * C, tiles = (rows + 31) / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const Index warp = (static_cast<Index>(blockIdx.x) * kThreads + threadIdx.x) / 32;
  const Index warps = static_cast<Index>(gridDim.x) * (kThreads / 32);
  for (Index t0 = warp; t0 < tiles; t0 += Index(UT) * warps) {
    Raw v[UT][C];  // tile t0 + u warps, load k: this lane's chunk (t0 + u warps) 32 C + 32 k + lane
#pragma unroll
    for (int u = 0; u < UT; ++u)
#pragma unroll
      for (int k = 0; k < C; ++k) {
        const Index c = (t0 + u * warps) * (32 * C) + 32 * k + lane;
        v[u][k] = Raw{};
        if (c < chunks) v[u][k] = load_flat_chunk<T>(in_g, c);
      }
#pragma unroll
    for (int u = 0; u < UT; ++u) {
      const Index tile = t0 + u * warps;
      if (tile >= tiles) break;  // uniform over the warp
      Acc mine = Acc(0);  // the sum of row tile 32 + lane
#pragma unroll
      for (int k = 0; k < C; ++k) {
        const Acc x = team_reduce<R, C>(flat_chunk_sum<T>(v[u][k]));  // row k 32 / C + lane / C on lane % C == 0
        const Acc y = C == 1 ? x : __shfl_sync(0xffffffffu, x, (lane % kRowsALoad) * C);
        if (lane / kRowsALoad == k) mine = y;
      }
      const Index r = tile * 32 + lane;
      if (r < rows) out[r] = static_cast<Out>(mine);
    }
  }
}

/// Row sums of a dense matrix of rows of C elements (C < 16 bytes a row, rows not whole chunks:
/// 3 floats are 12 bytes) from a 16-byte aligned start. V = kVec16<T> rows are exactly C chunks,
/// so thread g reads chunks g C .. g C + C - 1 of the flat stream, all aligned and whole, sums its
/// V rows in registers in column order (the same bits every run) and stores the V sums as
/// 16-byte vectors (out is aligned: g V sums precede them). No row straddles two threads, so no
/// shuffles or shared memory; the last thread's partial group (rows % V rows) reads elements.
template <class T, class Out, int C>
__global__ void __launch_bounds__(256)
row_sums_vec_kernel(const T* __restrict__ in, Index rows, Out* __restrict__ out) {
  constexpr int V = kVec16<T>;
  static_assert(C >= 1 && C * sizeof(T) < 16, "row_sums_vec_kernel: rows shorter than a chunk");
  constexpr int W = 16 / sizeof(Out) < V ? 16 / sizeof(Out) : V;  // sums a store
  static_assert(V % W == 0, "row_sums_vec_kernel: whole stores");
  using Acc = sum_acc_t<T>;
  using P = Pack<T, V>;
  using OutP = Pack<Out, W>;
  const Index g = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
  const Index r0 = g * V;
  if (r0 >= rows) return;
  T x[C * V];  // (V, C) rows r0 .. r0 + V - 1
  if (r0 + V <= rows) {
    const P* chunk_g = reinterpret_cast<const P*>(in) + g * C;
#pragma unroll
    for (int k = 0; k < C; ++k) {
      const P v = load_pack(chunk_g + k);
#pragma unroll
      for (int j = 0; j < V; ++j) x[k * V + j] = v.v[j];
    }
  } else {
#pragma unroll
    for (int e = 0; e < C * V; ++e) x[e] = r0 * C + e < rows * C ? load_one(in + r0 * C + e) : T(0);
  }
  OutP sums[V / W];  // (V / W, W) the sums of rows r0 .. r0 + V - 1
#pragma unroll
  for (int j = 0; j < V; ++j) {
    Acc a = Acc(0);
#pragma unroll
    for (int k = 0; k < C; ++k) a += static_cast<Acc>(x[j * C + k]);
    sums[j / W].v[j % W] = static_cast<Out>(a);
  }
  if (r0 + V <= rows) {
    OutP* out_g = reinterpret_cast<OutP*>(out + r0);
#pragma unroll
    for (int q = 0; q < V / W; ++q) out_g[q] = sums[q];
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j)
      if (r0 + j < rows) out[r0 + j] = sums[j / W].v[j % W];
  }
}

/// Column sums of a dense, tall, narrow matrix (n = rows * cols elements, cols <= Threads) read
/// as one flat stream of 16-byte chunks: thread i of the grid reads chunks i, i + S, ... (S the
/// grid's thread count, U in flight), and since the launcher makes S * V a multiple of cols,
/// lane k of its chunks always holds the same column: V running sums per thread, no index
/// math in the loop. The block then writes its lane sums to shared memory in flat order and
/// sums each column's lanes in a fixed order (groups of cols threads, then a tree over the
/// groups); block b writes partials[b * cols + c], which col_chunks_kernel combines.
template <class T, int Threads, int U>
__global__ void __launch_bounds__(Threads)
col_sums_flat_kernel(const T* __restrict__ in, Index n, Index cols, sum_acc_t<T>* __restrict__ partials) {
  using Acc = sum_acc_t<T>;
  constexpr int V = kVec16<T>;
  constexpr Index kLanes = Index(Threads) * V;  // lane sums per block
  using P = Pack<T, V>;
  __shared__ Acc lane_smem[kLanes];    // (Threads * V) the block's lane sums, in flat order
  __shared__ Acc group_smem[Threads];  // (groups, cols) the groups' column sums

  const Index head = head_of(in);
  const T* base_g = in - head;
  const Index chunks = (head + n + V - 1) / V;
  const Index step = static_cast<Index>(gridDim.x) * Threads;
  Acc acc[V];
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = Acc(0);
  Index c = static_cast<Index>(blockIdx.x) * Threads + threadIdx.x;
  for (; c + (U - 1) * step < chunks; c += U * step) {
    P v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = load_chunk(base_g, head, n, c + u * step, T(0));
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] += static_cast<Acc>(v[u].v[k]);
  }
  for (; c < chunks; c += step) {
    const P v = load_chunk(base_g, head, n, c, T(0));
#pragma unroll
    for (int k = 0; k < V; ++k) acc[k] += static_cast<Acc>(v.v[k]);
  }
#pragma unroll
  for (int k = 0; k < V; ++k) lane_smem[threadIdx.x * V + k] = acc[k];
  __syncthreads();

  // Flat lane p of the block holds column (first + p) % cols.
  const Index first = ((static_cast<Index>(blockIdx.x) * kLanes) % cols + cols - head % cols) % cols;
  const int groups = static_cast<int>(Threads / cols);  // >= 1
  const int g = static_cast<int>(threadIdx.x / cols), col = static_cast<int>(threadIdx.x % cols);
  Acc part = Acc(0);
  if (g < groups) {
    const Index stride = static_cast<Index>(groups) * cols;
    for (Index p = (col - first + cols) % cols + g * cols; p < kLanes; p += stride) part += lane_smem[p];
  }
  group_smem[threadIdx.x] = part;
  __syncthreads();
  int w = 1;
  while (w * 2 < groups) w *= 2;
  for (; w >= 1; w /= 2) {  // the same steps for every thread
    if (g < w && g + w < groups) group_smem[threadIdx.x] += group_smem[threadIdx.x + w * cols];
    __syncthreads();
  }
  if (g == 0) partials[static_cast<Index>(blockIdx.x) * cols + col] = group_smem[col];
}

}  // namespace devmat::detail

// Device helpers shared by the GEMM kernels: tile shapes, the kernel arguments, cp.async, the
// multistage main loop, the tile order, and the epilogue / split-K reduction. Device code only.
#pragma once

#include "common.cuh"

#ifndef DEVMAT_EMULATION  // the CPU emulation (test/expr_emu) has no clusters
#include <cooperative_groups.h>
#endif
#include <cuda_runtime.h>

#include <cstdint>

namespace devmat::detail {

// ------------------------------------------------------------------ shapes
/// A tile shape in elements, (M, N, K) as CUTLASS's GemmShape: the block tile of a kernel, or
/// the m x n x k of one MMA instruction.
template <int M, int N, int K>
struct Shape {
  static constexpr int kM = M, kN = N, kK = K;
};

/// How a block's warps tile its output: M warps down, N across.
template <int M, int N>
struct Warps {
  static constexpr int kM = M, kN = N, kCount = M * N;
};

// ------------------------------------------------------------------ arguments
/// One operand as the kernels read it: element (x, k) of op(X), where x is the row of op(A)
/// (m) or the column of op(B) (n), lives at ptr[x*ld + k] when `kcontig`, else at ptr[k*ld + x].
/// `vec`: ptr and ld allow 16-byte copies along the contiguous direction.
template <class T>
struct GemmOperand {
  const T* ptr;
  long long ld;
  bool kcontig;
  bool vec;
};

/// C = alpha * op(A) op(B) + beta * C over the output tile of one CTA; with split-K, slice z
/// writes its raw partial sum to c + z*split_stride (alpha = 1, read_c = false).
template <class T>
struct GemmArgs {
  int m, n, k;
  GemmOperand<T> a;  // x = m
  GemmOperand<T> b;  // x = n
  T* c;
  long long ldc;
  bool c_vec;    // c and ldc allow 16-byte stores of a thread's consecutive columns
  bool read_c;   // beta != 0: C is read (never when beta == 0: C may hold NaN)
  T alpha, beta;
  int k_per_split;          // a multiple of the tile's BK; slice z covers [z*k_per_split, ...)
  long long split_stride;   // elements between the partial outputs of two slices
  int tiles_m, tiles_n;
  // Tiles (in the grouped order) before this launch's first: nonzero in the second launch of a
  // tail split (gemm_tail_plan), which runs the last tiles of the order only.
  int tile_offset;
};

// ------------------------------------------------------------------ main loop
/// The multistage cp.async main loop that every tiled kernel runs: `load_stage(stage, k_tile)`
/// issues the copies of k tile `k_tile` into shared-memory stage `stage`, and
/// `compute_stage(stage)` consumes a stage whose copies have landed for every thread.
/// STAGES - 1 tiles are in flight while one is computed; each tile is one commit group, empty
/// groups included, so the group count stays uniform and the wait below is exact.
template <int kStages, class LoadStage, class ComputeStage>
__device__ __forceinline__ void gemm_mainloop(int k_tiles, LoadStage&& load_stage, ComputeStage&& compute_stage) {
  static_assert(kStages >= 2, "a pipeline has at least two stages");
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) load_stage(s, s);
    cp_async_commit();
  }
  int read_stage = 0, write_stage = kStages - 1;
  for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
    // Groups committed so far: (STAGES-1) + k_tile; allowing STAGES-2 in flight means groups
    // 0..k_tile have landed, i.e. tile k_tile, for this thread; the barrier makes every
    // thread's copies visible, and tells that all threads are done with the stage computed in
    // the previous iteration, which the next load overwrites.
    cp_async_wait<kStages - 2>();
    __syncthreads();
    if (k_tile + kStages - 1 < k_tiles) load_stage(write_stage, k_tile + kStages - 1);
    cp_async_commit();
    compute_stage(read_stage);
    read_stage = read_stage + 1 == kStages ? 0 : read_stage + 1;
    write_stage = write_stage + 1 == kStages ? 0 : write_stage + 1;
  }
  cp_async_wait<0>();
}

/// The part of the product one CTA computes: its output tile's origin and its k slice.
struct GemmTileRange {
  int m0, n0;          // first row and column of the output tile
  int k_begin, k_end;  // this CTA's k slice (blockIdx.z)
  int k_tiles;         // BK-deep tiles in the slice
};

// ------------------------------------------------------------------ tile order
/// The (tile_m, tile_n) of tile `bid`: the order walks groups of 8 tile rows column by column,
/// so CTAs running at the same time share A panels and B panels in L2.
__device__ __forceinline__ void gemm_tile_coords(int bid, int tiles_m, int tiles_n, int& tile_m, int& tile_n) {
  constexpr int kGroup = 8;
  const int per_group = kGroup * tiles_n;
  const int group = bid / per_group;
  const int first_m = group * kGroup;
  const int rows = ::min(tiles_m - first_m, kGroup);
  const int in_group = bid - group * per_group;
  tile_m = first_m + in_group % rows;
  tile_n = in_group / rows;
}

/// This CTA's output tile (tile p.tile_offset + blockIdx.x in the grouped order above) and k
/// slice, for a BM x BN x BK tile.
template <int BM, int BN, int BK, class T>
__device__ __forceinline__ GemmTileRange gemm_tile_range(const GemmArgs<T>& p) {
  int tile_m, tile_n;
  gemm_tile_coords(p.tile_offset + static_cast<int>(blockIdx.x), p.tiles_m, p.tiles_n, tile_m, tile_n);
  GemmTileRange r;
  r.m0 = tile_m * BM;
  r.n0 = tile_n * BN;
  r.k_begin = static_cast<int>(blockIdx.z) * p.k_per_split;
  r.k_end = static_cast<int>(::min(static_cast<long long>(p.k), static_cast<long long>(r.k_begin) + p.k_per_split));
  r.k_tiles = (r.k_end - r.k_begin + BK - 1) / BK;
  return r;
}

/// Copies one (OUTER, INNER) tile whose INNER direction is contiguous in global memory into
/// shared memory laid out the same way (row stride `kStride`), zero-filling outside
/// [.., o_lim) x [.., i_lim). Element (o, i) is at ptr[(o0 + o)*ld + i0 + i]. Each thread moves
/// chunks of 16 bytes: one 16-byte copy when `vec` (ptr, ld and i0 allow it), else one copy per
/// element of the chunk from the same addresses, so both paths share their address arithmetic.
/// A tile of fewer chunks than threads (a 16-wide SIMT tile's) leaves the last threads idle.
template <class T, int OUTER, int INNER, int kStride, int kThreads>
__device__ __forceinline__ void gemm_copy_tile(T* s, const T* ptr, long long ld, int o0, int o_lim, int i0, int i_lim,
                                               bool vec, int tid) {
  constexpr int kPer = 16 / static_cast<int>(sizeof(T));
  constexpr int kChunksPerRow = INNER / kPer;
  constexpr int kChunks = OUTER * kChunksPerRow;
  static_assert(INNER % kPer == 0 && (kChunks % kThreads == 0 || kChunks < kThreads),
                "tile does not split into 16-byte chunks");
#pragma unroll
  for (int it = 0; it < (kChunks + kThreads - 1) / kThreads; ++it) {
    const int c = tid + it * kThreads;
    if (kChunks < kThreads && c >= kChunks) break;
    const int o = c / kChunksPerRow, i = (c % kChunksPerRow) * kPer;
    const int go = o0 + o, gi = i0 + i;
    const int n = go < o_lim ? ::max(0, ::min(kPer, i_lim - gi)) : 0;  // elements in range
    const T* src = n > 0 ? ptr + go * ld + gi : ptr;
    T* dst = s + o * kStride + i;
    if (vec) {
      cp_async<16>(dst, src, n * static_cast<int>(sizeof(T)));
    } else {
#pragma unroll
      for (int e = 0; e < kPer; ++e)
        cp_async<static_cast<int>(sizeof(T))>(dst + e, e < n ? src + e : ptr,
                                              e < n ? static_cast<int>(sizeof(T)) : 0);
    }
  }
}

/// How many elements past the start of its aligned 16-byte chunk element i of row o of the
/// operand at ptr (ld elements a row) lies: where gemm_copy_tile_shifted lands the row's first
/// element of a tile that starts at column i. Rows kPer apart (kPer = 16 / sizeof(T)) share it
/// whatever ld is, and so do columns kPer apart.
template <class T>
__device__ __forceinline__ int gemm_row_shift(const T* ptr, long long ld, int o, int i) {
  constexpr long long kPer = 16 / static_cast<long long>(sizeof(T));
  const long long base = static_cast<long long>(reinterpret_cast<std::uintptr_t>(ptr) % 16) / static_cast<long long>(sizeof(T));
  return static_cast<int>((base + o * (ld % kPer) + i) % kPer);
}

/// gemm_copy_tile for rows that 16-byte copies cannot take as they are (ptr or ld off 16-byte
/// chunks): row o's INNER elements land at s[o*kStride + sh .. o*kStride + sh + INNER), sh =
/// gemm_row_shift(ptr, ld, o0 + o, i0), copied as the INNER/kPer + 1 aligned 16-byte chunks that
/// cover them at any shift (so kStride >= INNER + kPer). The copies read only elements inside
/// [.., o_lim) x [.., i_lim) of the operand, plus, where the tile does not start the operand's
/// row (i0 >= sh), the sh elements before it in the row's first chunk, which are the operand's
/// too; where it does (i0 < sh), that chunk goes element by element, skipping the elements
/// before column 0. So does a chunk that i_lim cuts: a 16-byte copy of fewer source bytes still
/// names all 16 (compute-sanitizer's initcheck reads them so, and past the operand's last
/// element they were never written). The rest of the row's chunks is zero.
/// Each thread moves chunks (o, q) in order o-major, like gemm_copy_tile.
template <class T, int OUTER, int INNER, int kStride, int kThreads>
__device__ __forceinline__ void gemm_copy_tile_shifted(T* s, const T* ptr, long long ld, int o0, int o_lim, int i0,
                                                       int i_lim, int tid) {
  constexpr int kPer = 16 / static_cast<int>(sizeof(T));
  constexpr int kChunksPerRow = INNER / kPer + 1;
  constexpr int kChunks = OUTER * kChunksPerRow;
  static_assert(INNER % kPer == 0 && kStride >= INNER + kPer && kStride % kPer == 0,
                "a shifted tile row needs a chunk more than the row");
  // An aligned address to name in copies of nothing (cp.async of 16 bytes needs one).
  const T* aligned = ptr - gemm_row_shift(ptr, 0, 0, 0);
#pragma unroll
  for (int it = 0; it < (kChunks + kThreads - 1) / kThreads; ++it) {
    const int c = tid + it * kThreads;
    if (kChunks % kThreads != 0 && c >= kChunks) break;
    const int o = c / kChunksPerRow, q = c % kChunksPerRow;
    const int go = o0 + o;
    const int first = q * kPer - gemm_row_shift(ptr, ld, go, i0);  // the chunk's first column - i0
    // Elements of the chunk before the operand's end (none past its last row).
    const int n = go < o_lim ? ::max(0, ::min(kPer, i_lim - (i0 + first))) : 0;
    T* dst = s + o * kStride + q * kPer;
    const T* src = ptr + go * ld + (i0 + first);  // 16-byte aligned
    if (i0 + first >= 0 && (n == kPer || n == 0)) {
      cp_async<16>(dst, n > 0 ? src : aligned, n * static_cast<int>(sizeof(T)));
    } else {
      // The operand's first chunk of the row (its elements before column 0 are not the
      // operand's) or a chunk cut at i_lim.
#pragma unroll
      for (int e = 0; e < kPer; ++e) {
        const bool in = i0 + first + e >= 0 && e < n;
        cp_async<static_cast<int>(sizeof(T))>(dst + e, in ? src + e : ptr, in ? static_cast<int>(sizeof(T)) : 0);
      }
    }
  }
}

// ------------------------------------------------------------------ epilogue
/// Writes V consecutive results of row `r` starting at column `c`: out = alpha*acc + beta*out
/// (out read only when read_c), or the raw acc for a split-K partial. `vec`: one V-wide store
/// (c is a multiple of V, and ldc and the pointer allow it); else guarded scalar stores.
template <class T, int V>
__device__ __forceinline__ void gemm_store_results(const GemmArgs<T>& p, T* out, int r, int c, const T (&acc)[V]) {
  if (r >= p.m) return;
  T* row = out + static_cast<long long>(r) * p.ldc;
  if (p.c_vec && c + V <= p.n) {
    Pack<T, V> v;
    if (p.read_c) {
      const Pack<T, V> old = *reinterpret_cast<const Pack<T, V>*>(row + c);
#pragma unroll
      for (int j = 0; j < V; ++j) v.v[j] = p.alpha * acc[j] + p.beta * old.v[j];
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) v.v[j] = p.alpha * acc[j];
    }
    *reinterpret_cast<Pack<T, V>*>(row + c) = v;
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) {
      if (c + j < p.n) row[c + j] = p.read_c ? p.alpha * acc[j] + p.beta * row[c + j] : p.alpha * acc[j];
    }
  }
}

/// Split-K summed inside the kernel, across a thread-block cluster (1, 1, S) of the S =
/// gridDim.z k slices of one output tile (sm_90 on; the cluster rank of slice z is z): every
/// thread of every CTA that has not exited calls it after writing its share of the CTA's
/// partial tile to `sum_smem` (BM x BN, row stride kStride, rows 16-byte aligned). CTA z then
/// takes the 16-byte chunks (V elements) z*kThreads + thread, stepping S*kThreads, adds them
/// over the slices in order 0..S-1 through distributed shared memory (gemm_finalize_kernel's
/// order, so its bits) and stores alpha*sum (+ beta*C) into p.c; the last barrier keeps every
/// CTA's shared memory alive until the others have read it. Elements outside C are never
/// stored (their staged values may be anything).
template <class T, int BM, int BN, int kThreads, int kStride>
__device__ __forceinline__ void gemm_cluster_sum(const GemmArgs<T>& p, const T* sum_smem, int m0, int n0, int thread) {
  constexpr int V = kVec16<T>;
  static_assert(BN % V == 0 && kStride % V == 0, "16-byte chunks on 16-byte boundaries");
#if (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900) && !defined(DEVMAT_EMULATION)
  using Chunk = Pack<T, V>;
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();  // every slice's partial tile is in its CTA's shared memory
  const int slices = static_cast<int>(gridDim.z), rank = static_cast<int>(blockIdx.z);
  constexpr int kChunksPerRow = BN / V, kChunks = BM * kChunksPerRow;
  for (int chunk = rank * kThreads + thread; chunk < kChunks; chunk += slices * kThreads) {
    const int r = chunk / kChunksPerRow, c = (chunk % kChunksPerRow) * V;
    if (m0 + r >= p.m || n0 + c >= p.n) continue;  // outside C: nothing to store
    const int offset = r * kStride + c;
    Chunk sum = *reinterpret_cast<const Chunk*>(cluster.map_shared_rank(sum_smem, 0) + offset);
    for (int z = 1; z < slices; ++z) {
      const Chunk v = *reinterpret_cast<const Chunk*>(cluster.map_shared_rank(sum_smem, z) + offset);
#pragma unroll
      for (int q = 0; q < V; ++q) sum.v[q] += v.v[q];
    }
    gemm_store_results<T, V>(p, p.c, m0 + r, n0 + c, sum.v);
  }
  cluster.sync();  // no CTA leaves while another still reads its shared memory
#else
  (void)p, (void)sum_smem, (void)m0, (void)n0, (void)thread;
  __trap();  // clusters need sm_90 (not the CPU emulation); the registry never launches this elsewhere
#endif
}

/// Split-K reduction and the k == 0 / alpha == 0 case: c[i] = alpha * sum_z ws[z*len + i] + beta*c[i]
/// (c read only when read_c; with splits == 0 the sum is absent, so C = beta*C or 0).
/// Slices are summed in order, so the result is deterministic.
template <class T>
__global__ void __launch_bounds__(256)
gemm_finalize_kernel(long long len, int splits, const T* __restrict__ ws, T* c, T alpha, T beta, bool read_c) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < len; i += stride) {
    T v = T(0);
    if (splits > 0) {
      T sum = ws[i];
      for (int z = 1; z < splits; ++z) sum += ws[z * len + i];
      v = alpha * sum;
    }
    if (read_c) v += beta * c[i];
    c[i] = v;
  }
}

}  // namespace devmat::detail

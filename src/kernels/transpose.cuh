// Transpose through a swizzled shared-memory tile, moving whole words: a word is W adjacent
// elements of a row (W * sizeof(T) = 4, 8 or 16 bytes), each thread loads W x W sub-blocks as
// W words, transposes them in registers (__byte_perm for bytes) and stores them as W words of
// the output. Bytes are moved as 4-byte words whatever the alignment of the rows: a warp reads
// the aligned words that cover its 128-byte run of a row and shifts them into place with
// __funnelshift (warp_load_row_bytes / warp_store_row_bytes), so odd strides and ragged edges stay
// on the word path. A matrix with a few rows or a few columns (an interleave or de-interleave)
// goes through a shared-memory chunk that is contiguous on the dense side instead of a square
// tile (transpose_few_rows_kernel / transpose_few_cols_kernel). Device code only;
// dispatch/transpose.cuh picks the kernel and launches it.
#pragma once

#include "common.cuh"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

namespace devmat::detail {

/// A tile of (TW * W) x (TW * W) elements, TW words a side, for a block of 32 x BY threads.
template <int W, int TW, int BY>
struct TransposeTile {
  static_assert(W == 1 || W == 2 || W == 4 || W == 8 || W == 16, "TransposeTile: W is 1, 2, 4, 8 or 16");
  static_assert(TW == 32 || TW == 64, "TransposeTile: TW is 32 or 64 words");
  static_assert(BY >= 1 && 32 * BY <= 1024 && TW % BY == 0, "TransposeTile: BY divides TW");
  static constexpr int kW = W;          // elements per word
  static constexpr int kTW = TW;        // words per tile side
  static constexpr int kBY = BY;        // warps per block
  static constexpr int kTile = TW * W;  // elements per tile side
};

/// A word of B bytes as a plain integer (or uint4), so it lives in whole registers.
template <int B> struct RawWord;
template <> struct RawWord<1> { using type = unsigned char; };
template <> struct RawWord<2> { using type = unsigned short; };
template <> struct RawWord<4> { using type = unsigned; };
template <> struct RawWord<8> { using type = unsigned long long; };
template <> struct RawWord<16> { using type = uint4; };

/// Bytes [lo, hi) of the aligned 4-byte word at p (0 <= lo < hi <= 4); the others read as 0.
__device__ __forceinline__ unsigned load_word_bytes(const unsigned char* p, int lo, int hi) {
  if (lo == 0 && hi == 4) return __ldg(reinterpret_cast<const unsigned*>(p));
  unsigned w = 0;
  for (int t = lo; t < hi; ++t) w |= static_cast<unsigned>(__ldg(p + t)) << (8 * t);
  return w;
}

/// Stores bytes [lo, hi) of w into the aligned 4-byte word at p (0 <= lo < hi <= 4), touching no
/// other byte: one word, or at most a byte, a 2-byte half and a byte.
__device__ __forceinline__ void store_word_bytes(unsigned char* p, unsigned w, int lo, int hi) {
  if (lo == 0 && hi == 4) {
    *reinterpret_cast<unsigned*>(p) = w;
    return;
  }
  if (lo & 1) {
    p[lo] = static_cast<unsigned char>(w >> (8 * lo));
    ++lo;
  }
  if (hi - lo >= 2) {
    *reinterpret_cast<unsigned short*>(p + lo) = static_cast<unsigned short>(w >> (8 * lo));
    lo += 2;
  }
  if (lo < hi) p[lo] = static_cast<unsigned char>(w >> (8 * lo));
}

/// The bytes [lo, hi) of aligned word k (k = 0..32) that hold bytes of the range [from, to) of a
/// run that starts m bytes into word 0 (word k holds run bytes [4k - m, 4k - m + 4)).
struct WordBytes {
  int lo, hi;
  __device__ __forceinline__ WordBytes(int k, int m, Index from, Index to) {
    const Index s = 4 * k - m;  // the run byte in the word's byte 0
    lo = static_cast<int>(s >= from ? 0 : (from - s < 4 ? from - s : 4));
    hi = static_cast<int>(to - s >= 4 ? 4 : (to - s > 0 ? to - s : 0));
  }
};

/// A warp-wide call (all 32 lanes, the same arguments): lane L gets bytes [begin + 4L,
/// begin + 4L + 4) of `row` as a word, bytes at or past `valid` as 0. Whatever row + begin's
/// alignment, it reads the aligned words that cover the run (one more than 32 when misaligned,
/// by lane 31) and shifts each lane's pair into place; it reads no byte outside [row, row + valid).
__device__ __forceinline__ unsigned warp_load_row_bytes(const unsigned char* row, Index begin, Index valid) {
  const unsigned char* run = row + begin;
  const int m = static_cast<int>(reinterpret_cast<std::uintptr_t>(run) & 3);
  const unsigned char* base = run - m;  // aligned: word k holds run bytes [4k - m, 4k - m + 4)
  const int lane = static_cast<int>(threadIdx.x & 31);
  const auto word = [&](int k) {
    const WordBytes b(k, m, -begin, valid - begin);
    return b.lo < b.hi ? load_word_bytes(base + 4 * k, b.lo, b.hi) : 0u;
  };
  const unsigned w0 = word(lane);
  unsigned w1 = __shfl_down_sync(0xffffffffu, w0, 1);
  if (lane == 31 && m != 0) w1 = word(32);
  return __funnelshift_r(w0, w1, 8 * m);  // bytes m..m+3 of (w1:w0)
}

/// A warp-wide call (all 32 lanes, the same arguments): lane L's word y holds bytes
/// [begin + 4L, begin + 4L + 4) of `row`; stores the run [begin, min(begin + 128, valid)) and no
/// other byte, as aligned words whatever row + begin's alignment (each lane joins its word to its
/// lower neighbour's with __funnelshift; lane 31 also stores the last, partial word).
__device__ __forceinline__ void warp_store_row_bytes(unsigned char* row, Index begin, Index valid, unsigned y) {
  unsigned char* run = row + begin;
  const int m = static_cast<int>(reinterpret_cast<std::uintptr_t>(run) & 3);
  unsigned char* base = run - m;
  const int lane = static_cast<int>(threadIdx.x & 31);
  const Index to = valid - begin < 128 ? valid - begin : 128;
  const unsigned prev = __shfl_up_sync(0xffffffffu, y, 1);
  const auto put = [&](int k, unsigned w) {
    const WordBytes b(k, m, 0, to);
    if (b.lo < b.hi) store_word_bytes(base + 4 * k, w, b.lo, b.hi);
  };
  put(lane, __funnelshift_l(prev, y, 8 * m));  // run bytes [4L - m, 4L - m + 4)
  if (lane == 31 && m != 0) put(32, __funnelshift_l(y, 0u, 8 * m));
}

/// x[i] holds row i of a W x W block of T (W elements a word); y[j] gets its column j.
template <class T, int W, class Word>
__device__ __forceinline__ void transpose_in_registers(const Word (&x)[W], Word (&y)[W]) {
  static_assert(sizeof(Word) == W * sizeof(T), "transpose_in_registers: a word is W elements");
  if constexpr (W == 1) {
    y[0] = x[0];
  } else if constexpr (sizeof(T) == 1 && W == 4) {
    const unsigned t0 = __byte_perm(x[0], x[1], 0x5140);  // x0.b0 x1.b0 x0.b1 x1.b1
    const unsigned t1 = __byte_perm(x[0], x[1], 0x7362);  // x0.b2 x1.b2 x0.b3 x1.b3
    const unsigned t2 = __byte_perm(x[2], x[3], 0x5140);  // x2.b0 x3.b0 x2.b1 x3.b1
    const unsigned t3 = __byte_perm(x[2], x[3], 0x7362);  // x2.b2 x3.b2 x2.b3 x3.b3
    y[0] = __byte_perm(t0, t2, 0x5410);                   // x0.b0 x1.b0 x2.b0 x3.b0
    y[1] = __byte_perm(t0, t2, 0x7632);                   // x0.b1 x1.b1 x2.b1 x3.b1
    y[2] = __byte_perm(t1, t3, 0x5410);
    y[3] = __byte_perm(t1, t3, 0x7632);
  } else {
    Pack<T, W> px[W], py[W];
#pragma unroll
    for (int i = 0; i < W; ++i) std::memcpy(&px[i], &x[i], sizeof(Word));
#pragma unroll
    for (int j = 0; j < W; ++j)
#pragma unroll
      for (int i = 0; i < W; ++i) py[j].v[i] = px[i].v[j];
#pragma unroll
    for (int j = 0; j < W; ++j) std::memcpy(&y[j], &py[j], sizeof(Word));
  }
}

/// Whether transpose_kernel<T, W> moves words at any alignment (bytes in 4-byte words, through
/// warp_load_row_bytes / warp_store_row_bytes) rather than requiring whole aligned words.
template <class T, int W>
inline constexpr bool kTransposeRealigns = sizeof(T) == 1 && W == 4;

/// Transposes the rows x cols row-major `in` (ld elements between row starts) into the dense
/// cols x rows `out`. Block b handles tile (b / tiles_c, b % tiles_c), or with `down` tile
/// (b % tiles_r, b / tiles_r): consecutive blocks then write consecutive runs of the same output
/// rows, so the partial sectors where their runs meet are completed while still in L2. Unless
/// kTransposeRealigns<T, W>, requires rows, cols and ld multiples of W and both pointers aligned
/// to a word, so every word lies wholly inside or wholly outside the matrix; with it, any shape,
/// stride and alignment.
///
/// Sub-block (a, b) of a tile is rows [a*W, a*W+W) and word column b. Its transposed words
/// go to shared row b*W + j (an output row of the tile), word column a ^ b: the XOR swizzle
/// puts the 32 words that a warp stores (b = lane, a fixed) and the 32 words it loads (one
/// shared row, 32 consecutive word columns) in 32 different banks (or, for 8- and 16-byte
/// words, in different banks within each half- or quarter-warp), with no padding.
template <class T, int W, int TW, int BY>
__global__ void __launch_bounds__(32 * BY)
transpose_kernel(const T* __restrict__ in, Index ld, T* __restrict__ out, Index rows, Index cols, Index tiles_r,
                 Index tiles_c, bool down) {
  static_assert((TW == 32 || TW == 64) && TW % BY == 0, "transpose_kernel: TW is 32 or 64 words, BY divides it");
  using Word = typename RawWord<W * sizeof(T)>::type;
  constexpr int kTile = TW * W;
  constexpr int kBX = TW / 32;  // word columns per lane
  constexpr int kAY = TW / BY;  // sub-block rows per warp row
  extern __shared__ uint4 transpose_smem[];  // dynamic: tiles may pass 48 KiB
  auto& tile_smem = *reinterpret_cast<Word(*)[kTile][TW]>(transpose_smem);  // (out rows, out word cols), swizzled

  constexpr bool kRealign = kTransposeRealigns<T, W>;
  const Index tile_r = down ? blockIdx.x % tiles_r : blockIdx.x / tiles_c;
  const Index tile_c = down ? blockIdx.x / tiles_r : blockIdx.x % tiles_c;
  const Index r0 = tile_r * kTile, c0 = tile_c * kTile;
  const Index in_words = cols / W, out_words = rows / W;  // words per row of in and out
  const Index ld_words = ld / W;                            // between row starts of in
  const Word* in_w = reinterpret_cast<const Word*>(in);
  Word* out_w = reinterpret_cast<Word*>(out);
  const int tx = threadIdx.x, ty = threadIdx.y;

  // Load: each warp reads whole rows of word columns, all loads issued before any store.
  Word x_reg[kAY][kBX][W];  // (sub-block row, word column, row within sub-block)
#pragma unroll
  for (int k = 0; k < kAY; ++k)
#pragma unroll
    for (int bx = 0; bx < kBX; ++bx) {
      const int a = ty + BY * k, b = tx + 32 * bx;
      const Index wc = c0 / W + b;
#pragma unroll
      for (int i = 0; i < W; ++i) {
        const Index r = r0 + a * W + i;  // the same for the whole warp
        if constexpr (kRealign) {
          const auto* row = reinterpret_cast<const unsigned char*>(in + r * ld);
          x_reg[k][bx][i] = r < rows ? warp_load_row_bytes(row, c0 + 128 * bx, cols) : 0u;
        } else {
          x_reg[k][bx][i] = r < rows && wc < in_words ? __ldg(in_w + r * ld_words + wc) : Word{};
        }
      }
    }

#pragma unroll
  for (int k = 0; k < kAY; ++k)
#pragma unroll
    for (int bx = 0; bx < kBX; ++bx) {
      const int a = ty + BY * k, b = tx + 32 * bx;
      Word y[W];
      transpose_in_registers<T, W>(x_reg[k][bx], y);
#pragma unroll
      for (int j = 0; j < W; ++j) tile_smem[b * W + j][a ^ b] = y[j];
    }
  __syncthreads();

  // Store: each warp writes 32 consecutive words of one output row. Shared row o holds the
  // words of sub-block column o / W, so word column oc sits at oc ^ (o / W).
#pragma unroll
  for (int k = 0; k < kTile / BY; ++k)
#pragma unroll
    for (int bx = 0; bx < kBX; ++bx) {
      const int o = ty + BY * k, oc = tx + 32 * bx;
      const Index out_r = c0 + o, out_wc = r0 / W + oc;  // out_r: the same for the whole warp
      if constexpr (kRealign) {
        if (out_r < cols)
          warp_store_row_bytes(reinterpret_cast<unsigned char*>(out + out_r * rows), r0 + 128 * bx, rows,
                               tile_smem[o][oc ^ (o / W)]);
      } else if (out_r < cols && out_wc < out_words) {
        out_w[out_r * out_words + out_wc] = tile_smem[o][oc ^ (o / W)];
      }
    }
}

/// Shared memory of one few-rows / few-columns chunk: kTransposeChunkBytes of elements plus a
/// pad of 4 bytes after every 128 (so lanes that write with a stride of a power of two elements
/// still spread over the banks).
inline constexpr int kTransposeChunkBytes = 16384;
inline constexpr int kTransposeChunkSmem = kTransposeChunkBytes / 32 * 33;
inline constexpr int kTransposeChunkThreads = 256;

/// Where element e of a chunk lives in shared memory (in elements of T).
template <class T>
__device__ __forceinline__ int chunk_slot(int e) {
  if constexpr (sizeof(T) == 1) return e + ((e >> 7) << 2);
  else return e + (e >> 5);
}

/// The transpose of a matrix with few rows (an interleave): out (dense, cols x rows) holds
/// out[j * rows + i] = in[i * ld + j]. Block b takes input columns [b * cols_per_block, ...),
/// whose transpose is one contiguous run of out: it gathers the run into shared memory in output
/// order (bytes: each warp reads 128-byte runs of a row as words), then stores it linearly.
/// Requires rows * cols_per_block * sizeof(T) <= kTransposeChunkBytes, cols_per_block a multiple
/// of 128 and, for bytes, out aligned to 4.
template <class T>
__global__ void __launch_bounds__(kTransposeChunkThreads)
transpose_few_rows_kernel(const T* __restrict__ in, Index ld, T* __restrict__ out, int rows, Index cols,
                          int cols_per_block) {
  __shared__ uint4 chunk_raw[kTransposeChunkSmem / 16];
  T* chunk_smem = reinterpret_cast<T*>(chunk_raw);  // (cols_per_block, rows) in output order, padded
  const Index j0 = blockIdx.x * static_cast<Index>(cols_per_block);
  const int n = static_cast<int>(cols - j0 < cols_per_block ? cols - j0 : cols_per_block);  // columns here
  const int tid = threadIdx.x;

  if constexpr (sizeof(T) == 1) {
    const int lane = tid & 31, warp = tid >> 5;
    constexpr int kWarps = kTransposeChunkThreads / 32;
    for (int i = 0; i < rows; ++i)
      for (int s = warp * 128; s < n; s += kWarps * 128) {  // the same for the whole warp
        const unsigned w = warp_load_row_bytes(reinterpret_cast<const unsigned char*>(in + i * ld), j0 + s, cols);
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          const int jj = s + 4 * lane + t;
          if (jj < n) chunk_smem[chunk_slot<T>(jj * rows + i)] = static_cast<T>(w >> (8 * t));
        }
      }
  } else {
#pragma unroll 4
    for (int jj = tid; jj < n; jj += kTransposeChunkThreads)
      for (int i = 0; i < rows; ++i) chunk_smem[chunk_slot<T>(jj * rows + i)] = __ldg(in + i * ld + j0 + jj);
  }
  __syncthreads();

  const int total = n * rows;
  T* out_run = out + j0 * rows;  // (n, rows) dense
  if constexpr (sizeof(T) == 1) {
    // 4-byte words: out_run is aligned to 4 (out is, and j0 * rows is a multiple of 128), and a
    // word's 4 bytes never straddle a pad (pads fall every 128 bytes).
    for (int e = 4 * tid; e < total; e += 4 * kTransposeChunkThreads) {
      const unsigned w = *reinterpret_cast<const unsigned*>(chunk_smem + chunk_slot<T>(e));
      store_word_bytes(reinterpret_cast<unsigned char*>(out_run + e), w, 0, total - e < 4 ? total - e : 4);
    }
  } else {
    for (int e = tid; e < total; e += kTransposeChunkThreads) out_run[e] = chunk_smem[chunk_slot<T>(e)];
  }
}

/// The transpose of a matrix with few columns (a de-interleave): out (dense, cols x rows) holds
/// out[i * rows + r] = in[r * ld + i]. Block b takes input rows [b * rows_per_block, ...): it
/// reads them into shared memory in input order (one contiguous run when ld == cols; bytes as
/// words), then writes each output row's run (bytes as words at any alignment). Requires
/// cols * rows_per_block * sizeof(T) <= kTransposeChunkBytes and rows_per_block a multiple of 128.
template <class T>
__global__ void __launch_bounds__(kTransposeChunkThreads)
transpose_few_cols_kernel(const T* __restrict__ in, Index ld, T* __restrict__ out, Index rows, int cols,
                          int rows_per_block) {
  __shared__ uint4 chunk_raw[kTransposeChunkSmem / 16];
  T* chunk_smem = reinterpret_cast<T*>(chunk_raw);  // (rows_per_block, cols) in input order, padded
  const Index r0 = blockIdx.x * static_cast<Index>(rows_per_block);
  const int n = static_cast<int>(rows - r0 < rows_per_block ? rows - r0 : rows_per_block);  // rows here
  const int total = n * cols;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  constexpr int kWarps = kTransposeChunkThreads / 32;

  if constexpr (sizeof(T) == 1) {
    if (ld == cols) {  // the block's rows are one run of bytes: read it as words
      for (int s = warp * 128; s < total; s += kWarps * 128) {
        const unsigned w =
            warp_load_row_bytes(reinterpret_cast<const unsigned char*>(in), r0 * cols + s, rows * cols);
        // Bytes past `total` land in the chunk's spare room (s + 128 <= the capacity), never read.
        *reinterpret_cast<unsigned*>(chunk_smem + chunk_slot<T>(s + 4 * lane)) = w;
      }
    } else {
      for (int e = tid; e < total; e += kTransposeChunkThreads)
        chunk_smem[chunk_slot<T>(e)] = __ldg(in + (r0 + e / cols) * ld + e % cols);
    }
  } else {
    for (int e = tid; e < total; e += kTransposeChunkThreads)
      chunk_smem[chunk_slot<T>(e)] = __ldg(in + (r0 + e / cols) * ld + e % cols);
  }
  __syncthreads();

  for (int i = 0; i < cols; ++i) {
    T* out_row = out + i * rows;
    if constexpr (sizeof(T) == 1) {
      for (int s = warp * 128; s < n; s += kWarps * 128) {  // the same for the whole warp
        unsigned w = 0;
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          const int rr = s + 4 * lane + t;
          if (rr < n) w |= static_cast<unsigned>(chunk_smem[chunk_slot<T>(rr * cols + i)]) << (8 * t);
        }
        warp_store_row_bytes(reinterpret_cast<unsigned char*>(out_row), r0 + s, rows, w);
      }
    } else {
      for (int rr = tid; rr < n; rr += kTransposeChunkThreads) out_row[r0 + rr] = chunk_smem[chunk_slot<T>(rr * cols + i)];
    }
  }
}

}  // namespace devmat::detail

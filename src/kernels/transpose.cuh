// Transpose through a swizzled shared-memory tile, moving whole words: a word is W adjacent
// elements of a row (W * sizeof(T) = 4, 8 or 16 bytes), each thread loads W x W sub-blocks as
// W words, transposes them in registers (__byte_perm for bytes) and stores them as W words of
// the output (transpose_kernel: rows whose words line up). transpose_shift_kernel moves the same
// words at any alignment: a warp reads the aligned words under each 31-word run of a row and
// shifts them into place, and writes the aligned words an output run covers (byte-exact at its
// ends), around transpose_kernel's shared tile (bytes in 4-byte words).
// transpose_vec_kernel keeps rows in shared memory as loaded (aligned vectors, each
// row at its own offset) and gathers each aligned output vector from there: one 16-byte access a
// thread both ways, no shuffles, tiles owning whole vectors of every output row. A matrix
// with a few rows or a few columns (an interleave or de-interleave) goes through a
// shared-memory chunk that is contiguous on the dense side instead of a square tile
// (transpose_few_rows_kernel / transpose_few_cols_kernel; bytes read and written as 4-byte words
// at any alignment through warp_read_run / warp_align_run / warp_store_run), through registers
// where 16-byte vectors line up (transpose_few_rows_vec_kernel / transpose_few_cols_vec_kernel),
// or, for bytes, as realigned 16-byte vectors (transpose_few_rows_bytes_kernel /
// transpose_few_cols_bytes_kernel), or in registers at any alignment, byte permutes and no
// shared memory (transpose_few_rows_regs_kernel; transpose_few_rows_half_kernel on half the
// columns a thread, for more warps in flight), and few columns at most 16 elements apart as
// one span of 16-byte vectors (transpose_few_cols_span_kernel). One side of 17 to a few hundred
// elements goes through a region that holds it whole (transpose_rows_run_kernel /
// transpose_cols_run_kernel). Device code, and the run kernels' region shapes (RowsRunShape,
// ColsRunShape) that their launchers and the emulation share; dispatch/transpose.cuh picks the
// kernel and launches it.
#pragma once

#include "common.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

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
  __device__ __forceinline__ WordBytes(int k, int m, int from, int to) {
    const int s = 4 * k - m;  // the run byte in the word's byte 0
    lo = s >= from ? 0 : (from - s < 4 ? from - s : 4);
    hi = to - s >= 4 ? 4 : (to - s > 0 ? to - s : 0);
  }
};

/// `bytes` clamped to [-4, 132]: the part of a run's neighbourhood that a word can reach.
__device__ __forceinline__ int clamp_run(Index bytes) {
  return static_cast<int>(bytes < -4 ? -4 : (bytes > 132 ? 132 : bytes));
}

/// The aligned words under a 128-byte run of a row: lane L's word k = L and, on lane 31 when
/// the run is not aligned, word 32. Reading them (warp_read_run) and shifting them into place
/// (warp_align_run) are separate steps so that a thread issues all its loads before the first
/// shuffle waits for one.
struct RunWords {
  unsigned word, word32;
};

/// Step 1 of a warp's read of bytes [begin, begin + 128) of `row` (valid bytes [0, valid)):
/// loads the aligned words that cover them, whatever row + begin's alignment, reading no byte
/// outside the valid ones. A warp-wide call: every lane, the same arguments.
__device__ __forceinline__ RunWords warp_read_run(const unsigned char* row, Index begin, Index valid) {
  const unsigned char* run = row + begin;
  const int m = static_cast<int>(reinterpret_cast<std::uintptr_t>(run) & 3);
  const int lane = static_cast<int>(threadIdx.x & 31);
  RunWords w{0u, 0u};
  if (m == 0 && valid - begin >= 128) {  // aligned and whole: one word a lane
    w.word = __ldg(reinterpret_cast<const unsigned*>(run) + lane);
    return w;
  }
  const unsigned char* base = run - m;  // aligned: word k holds run bytes [4k - m, 4k - m + 4)
  const int from = clamp_run(-begin), to = clamp_run(valid - begin);
  const WordBytes b(lane, m, from, to);
  if (b.lo < b.hi) w.word = load_word_bytes(base + 4 * lane, b.lo, b.hi);
  if (lane == 31 && m != 0) {
    const WordBytes b32(32, m, from, to);
    if (b32.lo < b32.hi) w.word32 = load_word_bytes(base + 128, b32.lo, b32.hi);
  }
  return w;
}

/// Step 2: lane L gets bytes [begin + 4L, begin + 4L + 4) of the run read by warp_read_run(row,
/// begin, ...) (bytes past the valid ones as 0). A warp-wide call.
__device__ __forceinline__ unsigned warp_align_run(const RunWords& w, const unsigned char* row, Index begin) {
  const int m = static_cast<int>(reinterpret_cast<std::uintptr_t>(row + begin) & 3);
  if (m == 0) return w.word;
  const unsigned next = __shfl_down_sync(0xffffffffu, w.word, 1);
  return __funnelshift_r(w.word, (threadIdx.x & 31) == 31 ? w.word32 : next, 8 * m);  // bytes m..m+3
}

/// A warp-wide call (every lane, the same arguments): lane L's word y holds bytes
/// [begin + 4L, begin + 4L + 4) of `row`; stores the run [begin, min(begin + 128, valid)) and no
/// other byte, as aligned words whatever row + begin's alignment (each lane joins its word to its
/// lower neighbour's with __funnelshift; lane 31 also stores the last, partial word).
__device__ __forceinline__ void warp_store_run(unsigned char* row, Index begin, Index valid, unsigned y) {
  unsigned char* run = row + begin;
  const int m = static_cast<int>(reinterpret_cast<std::uintptr_t>(run) & 3);
  const int lane = static_cast<int>(threadIdx.x & 31);
  if (m == 0 && valid - begin >= 128) {  // aligned and whole: one word a lane
    reinterpret_cast<unsigned*>(run)[lane] = y;
    return;
  }
  unsigned char* base = run - m;
  const int to = clamp_run(valid - begin < 128 ? valid - begin : 128);
  const unsigned prev = __shfl_up_sync(0xffffffffu, y, 1);
  const WordBytes b(lane, m, 0, to);
  if (b.lo < b.hi) store_word_bytes(base + 4 * lane, __funnelshift_l(prev, y, 8 * m), b.lo, b.hi);
  if (lane == 31 && m != 0) {  // run bytes [128 - m, 128): the top of y
    const WordBytes b32(32, m, 0, to);
    if (b32.lo < b32.hi) store_word_bytes(base + 128, __funnelshift_l(y, 0u, 8 * m), b32.lo, b32.hi);
  }
}

/// The 4 x 4 bytes x0 x1 x2 x3 (x_i: row i) transposed into y0 .. y3 (y_j: column j): 8 byte
/// permutes.
__device__ __forceinline__ void transpose_bytes_4x4(unsigned x0, unsigned x1, unsigned x2, unsigned x3, unsigned& y0,
                                                    unsigned& y1, unsigned& y2, unsigned& y3) {
  const unsigned t0 = __byte_perm(x0, x1, 0x5140);  // x0.b0 x1.b0 x0.b1 x1.b1
  const unsigned t1 = __byte_perm(x0, x1, 0x7362);  // x0.b2 x1.b2 x0.b3 x1.b3
  const unsigned t2 = __byte_perm(x2, x3, 0x5140);  // x2.b0 x3.b0 x2.b1 x3.b1
  const unsigned t3 = __byte_perm(x2, x3, 0x7362);  // x2.b2 x3.b2 x2.b3 x3.b3
  y0 = __byte_perm(t0, t2, 0x5410);                 // x0.b0 x1.b0 x2.b0 x3.b0
  y1 = __byte_perm(t0, t2, 0x7632);                 // x0.b1 x1.b1 x2.b1 x3.b1
  y2 = __byte_perm(t1, t3, 0x5410);
  y3 = __byte_perm(t1, t3, 0x7632);
}

/// x[i] holds row i of a W x W block of T (W elements a word); y[j] gets its column j.
template <class T, int W, class Word>
__device__ __forceinline__ void transpose_in_registers(const Word (&x)[W], Word (&y)[W]) {
  static_assert(sizeof(Word) == W * sizeof(T), "transpose_in_registers: a word is W elements");
  if constexpr (W == 1) {
    y[0] = x[0];
  } else if constexpr (sizeof(T) == 1 && W == 4) {
    transpose_bytes_4x4(x[0], x[1], x[2], x[3], y[0], y[1], y[2], y[3]);
  } else if constexpr (sizeof(T) == 1 && W == 8) {
    // Four 4 x 4 blocks (32 byte permutes, no byte-by-byte assembly): rows 0-3 / 4-7 and columns
    // 0-3 (the words' low halves) / 4-7 (high halves); block (rows R, columns C) lands in the
    // columns C's words, the half of rows R.
    unsigned lo[8], hi[8];  // (rows 0-3 of a column: lo, rows 4-7: hi) of the output words
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // h = 0: columns 0-3, 1: columns 4-7
      const int sh = 32 * h;
      transpose_bytes_4x4(static_cast<unsigned>(x[0] >> sh), static_cast<unsigned>(x[1] >> sh),
                          static_cast<unsigned>(x[2] >> sh), static_cast<unsigned>(x[3] >> sh), lo[4 * h],
                          lo[4 * h + 1], lo[4 * h + 2], lo[4 * h + 3]);
      transpose_bytes_4x4(static_cast<unsigned>(x[4] >> sh), static_cast<unsigned>(x[5] >> sh),
                          static_cast<unsigned>(x[6] >> sh), static_cast<unsigned>(x[7] >> sh), hi[4 * h],
                          hi[4 * h + 1], hi[4 * h + 2], hi[4 * h + 3]);
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) y[j] = (static_cast<Word>(hi[j]) << 32) | lo[j];
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

/// Transposes the rows x cols row-major `in` (ld elements between row starts) into the dense
/// cols x rows `out`. Block b handles tile (b / tiles_c, b % tiles_c), or with `down` tile
/// (b % tiles_r, b / tiles_r): consecutive blocks then write consecutive runs of the same output
/// rows, so the partial sectors where their runs meet are completed while still in L2. Requires
/// rows, cols and ld multiples of W and both pointers aligned to a word, so every word lies
/// wholly inside or wholly outside the matrix (transpose_vec_kernel and transpose_shift_kernel
/// take the other shapes). With
/// one-element words (W == 1), the tile grid may start c_shift (< a tile) columns left of column
/// 0: tile column t covers input columns [t * kTile - c_shift, (t + 1) * kTile - c_shift), so
/// that rows whose starts share an offset inside a sector read whole sectors; columns outside
/// [0, cols) are neither read nor written.
///
/// Sub-block (a, b) of a tile is rows [a*W, a*W+W) and word column b. Its transposed words
/// go to shared row b*W + j (an output row of the tile), word column a ^ b: the XOR swizzle
/// puts the 32 words that a warp stores (b = lane, a fixed) and the 32 words it loads (one
/// shared row, 32 consecutive word columns) in 32 different banks (or, for 8- and 16-byte
/// words, in different banks within each half- or quarter-warp), with no padding.
template <class T, int W, int TW, int BY>
__global__ void __launch_bounds__(32 * BY)
transpose_kernel(const T* __restrict__ in, Index ld, T* __restrict__ out, Index rows, Index cols, Index tiles_r,
                 Index tiles_c, bool down, Index c_shift) {
  static_assert((TW == 32 || TW == 64) && TW % BY == 0, "transpose_kernel: TW is 32 or 64 words, BY divides it");
  using Word = typename RawWord<W * sizeof(T)>::type;
  constexpr int kTile = TW * W;
  constexpr int kBX = TW / 32;  // word columns per lane
  constexpr int kAY = TW / BY;  // sub-block rows per warp row
  DEVMAT_DYNAMIC_SHARED(uint4, transpose_smem);  // dynamic: tiles may pass 48 KiB
  auto& tile_smem = *reinterpret_cast<Word(*)[kTile][TW]>(transpose_smem);  // (out rows, out word cols), swizzled

  const Index tile_r = down ? blockIdx.x % tiles_r : blockIdx.x / tiles_c;
  const Index tile_c = down ? blockIdx.x / tiles_r : blockIdx.x % tiles_c;
  const Index r0 = tile_r * kTile, c0 = tile_c * kTile - c_shift;  // c_shift: 0 unless W == 1
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
        const Index r = r0 + a * W + i;
        x_reg[k][bx][i] = r < rows && wc >= 0 && wc < in_words ? __ldg(in_w + r * ld_words + wc) : Word{};
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
      if (out_r >= 0 && out_r < cols && out_wc < out_words) out_w[out_r * out_words + out_wc] = tile_smem[o][oc ^ (o / W)];
    }
}

/// A tile of transpose_shift_kernel: kRows = 32 W input rows by kCols = 31 W input columns (31
/// words of W elements: the 32 aligned words a warp reads under a row's run cover 31 words'
/// worth at any offset of the row into a word), in transpose_kernel's swizzled shared tile of
/// 32 W x 32 words, for a block of 32 x BY threads.
template <int W, int BY>
struct ShiftTile {
  static_assert(W == 1 || W == 2 || W == 4 || W == 8, "ShiftTile: W is 1, 2, 4 or 8");
  static_assert(BY >= 1 && BY <= 32 && 32 % BY == 0, "ShiftTile: BY divides 32");
  static constexpr int kW = W;            // elements a word
  static constexpr int kBY = BY;          // warps a block
  static constexpr int kRows = 32 * W;    // input rows a tile: one output run of 32 words
  static constexpr int kCols = 31 * W;    // input columns a tile (output rows)
};

/// The aligned word of Word at p whose bytes from `end` on are neither read nor used (read as 0):
/// only where the word runs past the matrix's last byte.
template <class Word>
__device__ __forceinline__ Word load_word_before(const unsigned char* p, const unsigned char* end) {
  if (p + sizeof(Word) <= end) return __ldg(reinterpret_cast<const Word*>(p));
  Word w = 0;
  for (int t = 0; t < static_cast<int>(sizeof(Word)) && p + t < end; ++t) w |= static_cast<Word>(__ldg(p + t)) << (8 * t);
  return w;
}

/// Bytes [m, m + sizeof(Word)) of the two words lo then hi (0 <= m < sizeof(Word)).
__device__ __forceinline__ unsigned shift_word(unsigned lo, unsigned hi, int m) {
  return __funnelshift_r(lo, hi, 8 * m);  // m == 0: lo
}

/// Loads of transpose_shift_kernel: raw[k][i] = lane L's aligned word under the run of the
/// tile's row (ty + BY k) W + i (`first`: that run's first byte for k = i = 0; rows ld_b bytes
/// apart): the kB-byte word at p - m + kB L, p the run's first byte and m = p mod kB, loaded
/// where its first byte lies before the row's end (row_left bytes from p on; else 0). Such a
/// word never leaves [in - (kB - 1), row end + kB - 1). With kClamp, rows from `rows_here` on
/// (past the matrix) read as 0 and bytes from in_end on (past its last byte) are not read.
/// Every load of the thread is issued before the first use.
template <int W, int BY, bool kClamp, class Word>
__device__ __forceinline__ void shift_load(const unsigned char* first, Index ld_b, int row_left, int rows_here,
                                           const unsigned char* in_end, Word (&raw)[32 / BY][W]) {
  constexpr int kB = static_cast<int>(sizeof(Word));
  const int lane = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
#pragma unroll
  for (int k = 0; k < 32 / BY; ++k)
#pragma unroll
    for (int i = 0; i < W; ++i) {
      const unsigned char* p = first + (BY * W * k + i) * ld_b;
      const int m = static_cast<int>(reinterpret_cast<std::uintptr_t>(p) & (kB - 1));
      const unsigned char* a = p - m + kB * lane;
      const bool in_row = kB * lane - m < row_left;
      raw[k][i] = 0;
      if constexpr (kClamp) {
        if (in_row && (ty + BY * k) * W + i < rows_here) raw[k][i] = load_word_before<Word>(a, in_end);
      } else {
        if (in_row) raw[k][i] = __ldg(reinterpret_cast<const Word*>(a));
      }
    }
}

/// Stores bytes [lo, hi) of w into the aligned 4-byte word at p, where they are its head
/// (hi == 4) or its tail (lo == 0): at most one 1- and one 2-byte store, each under a per-lane
/// condition, so that lanes storing a head and lanes storing a tail share the same two
/// (predicated) instructions instead of diverging.
__device__ __forceinline__ void store_word_end(unsigned char* p, unsigned w, int lo, int hi) {
  const bool head = lo > 0;
  const int a2 = (lo + 1) & ~1;       // a head's first even byte
  const int t2 = hi & ~1;             // a tail's last even end
  const int o1 = head ? lo : hi - 1;  // the odd byte
  const int o2 = head ? a2 : t2 - 2;  // the 2-byte piece
  const bool s1 = head ? (lo & 1) != 0 : (hi & 1) != 0;
  const bool s2 = head ? (a2 & 2) != 0 && a2 < 4 : (t2 & 2) != 0;
  if (s1) p[o1] = static_cast<unsigned char>(w >> (8 * o1));
  if (s2) *reinterpret_cast<unsigned short*>(p + o2) = static_cast<unsigned short>(w >> (8 * o2));
}

/// warp_store_run where the run is whole (32 words of `row` from byte `begin`, all inside the
/// row: three store instructions a warp, lane 0's head and lane 31's tail word stored by the
/// same predicated sub-word stores), else warp_store_run itself (byte-exact). Lane L's word y
/// holds the run's bytes [4 L, 4 L + 4). Warp-wide.
__device__ __forceinline__ void warp_store_words(unsigned char* row, Index begin, Index valid, unsigned y) {
  if (valid - begin < 128) {  // the run's end is ragged: the general form (the same for the warp)
    warp_store_run(row, begin, valid, y);
    return;
  }
  unsigned char* run = row + begin;
  const int mo = static_cast<int>(reinterpret_cast<std::uintptr_t>(run) & 3);
  const int lane = static_cast<int>(threadIdx.x & 31);
  unsigned char* base = run - mo;  // aligned word k holds run bytes [4 k - mo, 4 k - mo + 4)
  const unsigned prev = __shfl_up_sync(0xffffffffu, y, 1);  // lane 0: its own (only its top bytes stored)
  const unsigned word = mo == 0 ? y : (y << (8 * mo)) | (prev >> (8 * (4 - mo)));
  if (lane > 0 || mo == 0) reinterpret_cast<unsigned*>(base)[lane] = word;
  if (mo != 0 && (lane == 0 || lane == 31)) {
    // Lane 0: bytes [mo, 4) of word 0; lane 31: bytes [0, mo) of word 32, y's top mo bytes.
    const bool head = lane == 0;
    store_word_end(head ? base : base + 128, head ? word : y >> (8 * (4 - mo)), head ? mo : 0, head ? 4 : mo);
  }
}

/// Transposes the rows x cols row-major `in` (ld elements between row starts) into the dense
/// cols x rows `out` at any shape, stride and alignment (of T), moving words of W elements
/// (kB = W sizeof(T) = 4 or 8 bytes) on both sides, the fast tile's layout with a shift at each
/// end:
/// - load (shift_load): a warp reads each input row's run of the tile as the 32 aligned words
///   that cover it, all loads of a thread issued first, then lane L takes bytes [m, m + kB) of
///   its word and lane L + 1's (a shuffle and a funnel shift: row offset m, the same for the
///   warp) = word L of the row's run from column c0. Lane 31's (word 31 of the run, past the
///   tile's 31) is not used. So one ld.32/ld.64 a lane a row, no byte loads but at the
///   matrix's very end (kClamp tiles, whose words may reach past its last byte).
/// - W x W blocks transposed in registers into transpose_kernel's swizzled tile (no padding, no
///   bank conflicts);
/// - store: a warp writes 32 words of one output row (input rows [r0, r0 + 32 W)) as the aligned
///   words they cover (warp_store_words: each lane joins its word to its lower neighbour's;
///   whole words inside, the two ragged ends by at most three predicated sub-word stores).
/// Elements outside the matrix are not written; bytes read outside it lie in the aligned words
/// that hold its elements (the word holding in's first byte starts in its allocation, which
/// starts on 256 bytes), never past its last byte. Block b is tile (b / tiles_c, b % tiles_c),
/// or with `down` (b % tiles_r, b / tiles_r), as transpose_kernel.
/// The load half of transpose_shift_kernel: fills tile_smem
/// (kRows output rows of 32 words, swizzled: word column oc of shared row o at oc ^ (o / W))
/// with the transpose of input rows [r0, r0 + 32 W) x columns [c0, c0 + 31 W) (bytes outside
/// the matrix as 0; shared rows from 31 W on hold lane 31's unused words), and waits for the
/// block. See transpose_shift_kernel for the loads and the shift.
template <class T, int W, int BY, class Word>
__device__ __forceinline__ void shift_fill_tile(const T* __restrict__ in, Index ld, Index rows, Index cols, Index r0,
                                                Index c0, Word (&tile_smem)[32 * W][32]) {
  constexpr int kB = W * static_cast<int>(sizeof(T));  // bytes a word
  constexpr int kAY = 32 / BY;                          // sub-block rows (of W input rows) a warp
  constexpr int kRows = 32 * W;
  constexpr Index kSize = sizeof(T);
  const int lane = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const auto* in_b = reinterpret_cast<const unsigned char*>(in);
  const Index ld_b = ld * kSize;                               // bytes between row starts
  const Index left = (cols - c0) * kSize;                      // bytes of a row from c0 on
  const int row_left = static_cast<int>(left < 33 * kB ? left : 33 * kB);  // as far as a word reaches
  const int rows_here = static_cast<int>(rows - r0 < kRows ? rows - r0 : kRows);
  const Index end_off = ((rows - 1) * ld + cols) * kSize;      // in_b + end_off: past the last byte
  // Rows all inside the matrix, and words that start before byte (r0 + kRows - 1) ld_b + c0 kSize
  // + 32 kB (the last row's run) all end before its last byte: no checks (kClamp false).
  const bool clamp = rows_here < kRows || (r0 + kRows - 1) * ld_b + c0 * kSize + 32 * kB > end_off;
  const unsigned char* first = in_b + (r0 + ty * W) * ld_b + c0 * kSize;  // (r0 + ty W, c0)

  Word raw[kAY][W];
  if (clamp) shift_load<W, BY, true>(first, ld_b, row_left, rows_here, in_b + end_off, raw);
  else shift_load<W, BY, false>(first, ld_b, row_left, rows_here, in_b + end_off, raw);

  // A row's offset into its first word: the low bits of its first byte's address (32-bit).
  const unsigned first_lo = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(first));
  const unsigned ld_lo = static_cast<unsigned>(ld_b);
#pragma unroll
  for (int k = 0; k < kAY; ++k) {
    const int a = ty + BY * k;  // sub-block row
    Word x[W], y[W];            // x[i]: row a W + i, word column `lane` of the run
#pragma unroll
    for (int i = 0; i < W; ++i) {
      const int m = static_cast<int>((first_lo + static_cast<unsigned>(BY * W * k + i) * ld_lo) & (kB - 1));
      const Word next = __shfl_down_sync(0xffffffffu, raw[k][i], 1);  // lane 31: its own (not used)
      x[i] = shift_word(raw[k][i], next, m);
    }
    transpose_in_registers<T, W>(x, y);
    // Lane 31's words (columns 31 W .. 32 W - 1 of the tile, past kCols) land in shared rows
    // that are never read.
#pragma unroll
    for (int j = 0; j < W; ++j) tile_smem[lane * W + j][a ^ lane] = y[j];
  }
  __syncthreads();
}

template <class T, int W, int BY>
__global__ void __launch_bounds__(32 * BY)
transpose_shift_kernel(const T* __restrict__ in, Index ld, T* __restrict__ out, Index rows, Index cols, Index tiles_r,
                       Index tiles_c, bool down) {
  using Tile = ShiftTile<W, BY>;
  constexpr int kB = W * static_cast<int>(sizeof(T));  // bytes a word
  static_assert(kB == 4, "transpose_shift_kernel: 4-byte words");
  using Word = typename RawWord<kB>::type;
  constexpr Index kSize = sizeof(T);
  DEVMAT_DYNAMIC_SHARED(uint4, transpose_smem);
  auto& tile_smem = *reinterpret_cast<Word(*)[Tile::kRows][32]>(transpose_smem);  // (out rows, out words), swizzled

  const Index tile_r = down ? blockIdx.x % tiles_r : blockIdx.x / tiles_c;
  const Index tile_c = down ? blockIdx.x / tiles_r : blockIdx.x % tiles_c;
  const Index r0 = tile_r * Tile::kRows, c0 = tile_c * Tile::kCols;
  const int lane = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  shift_fill_tile<T, W, BY>(in, ld, rows, cols, r0, c0, tile_smem);

  // Store: warp ty writes output rows c0 + o, o = ty + BY k < kCols, input rows [r0, r0 + 32 W):
  // word column oc = lane sits at oc ^ (o / W) of shared row o.
  auto* out_b = reinterpret_cast<unsigned char*>(out);
  const Index begin = r0 * kSize, valid = rows * kSize;  // bytes of an output row
#pragma unroll 4
  for (int k = 0; k < Tile::kRows / BY; ++k) {
    const int o = ty + BY * k;
    const Index out_r = c0 + o;  // the same for the whole warp
    if (o >= Tile::kCols || out_r >= cols) break;
    unsigned char* row = out_b + out_r * valid;
    const Word y = tile_smem[o][lane ^ (o / W)];
    warp_store_words(row, begin, valid, y);
  }
}

/// Bytes [m, m + 16) of the 32 bytes lo then hi (0 <= m < 16), for an m that is the same across
/// the warp (no divergence): a branch on m / 4 to four funnel shifts by m % 4. Picking the words
/// with selects instead (r_i = the word m / 4 + i) took 15 SEL beside the 4 shifts (ptxas,
/// sm_90: transpose_few_cols_span_kernel's stores).
__device__ __forceinline__ uint4 bytes_from(const uint4& lo, const uint4& hi, int m) {
  const unsigned s = 8u * static_cast<unsigned>(m & 3);
  const auto join = [s](unsigned a, unsigned b, unsigned c, unsigned d, unsigned e) {
    return make_uint4(__funnelshift_r(a, b, s), __funnelshift_r(b, c, s), __funnelshift_r(c, d, s), __funnelshift_r(d, e, s));
  };
  switch (m >> 2) {
    case 0: return join(lo.x, lo.y, lo.z, lo.w, hi.x);
    case 1: return join(lo.y, lo.z, lo.w, hi.x, hi.y);
    case 2: return join(lo.z, lo.w, hi.x, hi.y, hi.z);
    default: return join(lo.w, hi.x, hi.y, hi.z, hi.w);
  }
}

/// __shfl_down_sync / __shfl_up_sync of a vector (every lane of the warp calls it).
__device__ __forceinline__ uint4 shfl_down_vec(const uint4& v, int width) {
  return make_uint4(__shfl_down_sync(0xffffffffu, v.x, 1, width), __shfl_down_sync(0xffffffffu, v.y, 1, width),
                    __shfl_down_sync(0xffffffffu, v.z, 1, width), __shfl_down_sync(0xffffffffu, v.w, 1, width));
}
__device__ __forceinline__ uint4 shfl_up_vec(const uint4& v, int width) {
  return make_uint4(__shfl_up_sync(0xffffffffu, v.x, 1, width), __shfl_up_sync(0xffffffffu, v.y, 1, width),
                    __shfl_up_sync(0xffffffffu, v.z, 1, width), __shfl_up_sync(0xffffffffu, v.w, 1, width));
}
/// c ? a : b, component by component.
__device__ __forceinline__ uint4 select_vec(bool c, uint4 a, uint4 b) {
  return make_uint4(c ? a.x : b.x, c ? a.y : b.y, c ? a.z : b.z, c ? a.w : b.w);
}
/// Lane src's vector (every lane of the warp calls it).
__device__ __forceinline__ uint4 shfl_vec(const uint4& v, int src) {
  return make_uint4(__shfl_sync(0xffffffffu, v.x, src), __shfl_sync(0xffffffffu, v.y, src),
                    __shfl_sync(0xffffffffu, v.z, src), __shfl_sync(0xffffffffu, v.w, src));
}
/// Lane ^ 1's vector (every lane of the warp calls it).
__device__ __forceinline__ uint4 shfl_pair_vec(const uint4& v) {
  return shfl_vec(v, static_cast<int>(threadIdx.x & 31) ^ 1);
}

/// The aligned 16-byte vector at p (p < end); its bytes from `end` on are neither read nor used
/// (read as 0), so a vector that runs past the end of an allocation reads only what is inside.
__device__ __forceinline__ uint4 load_vec_before(const unsigned char* p, const unsigned char* end) {
  if (end - p >= 16) return __ldg(reinterpret_cast<const uint4*>(p));
  unsigned w[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const Index n = end - (p + 4 * k);
    w[k] = n <= 0 ? 0u : load_word_bytes(p + 4 * k, 0, n < 4 ? static_cast<int>(n) : 4);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

/// Stores bytes [lo, hi) of v into the aligned 16-byte vector at p, touching no other byte: one
/// vector when whole, else word by word (store_word_bytes).
__device__ __forceinline__ void store_vec_bytes(unsigned char* p, const uint4& v, int lo, int hi) {
  if (lo <= 0 && hi >= 16) {
    *reinterpret_cast<uint4*>(p) = v;
    return;
  }
  const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int a = lo > 4 * k ? lo - 4 * k : 0, b = hi < 4 * k + 4 ? hi - 4 * k : 4;
    if (a < b) store_word_bytes(p + 4 * k, w[k], a, b);
  }
}

/// A warp-wide call (every lane, the same run and valid): lane L's y holds bytes [16 L, 16 L +
/// 16) of a run of `valid` (at most 512) bytes at `run`, at any alignment; stores the run as
/// the aligned vectors of out that it covers, whole inside it and byte-exact at its two ends:
/// each lane joins its vector to its lower neighbour's (bytes_from), lane 31 also stores the
/// last, partial one.
__device__ __forceinline__ void warp_store_vec_run(unsigned char* run, const uint4& y, int valid) {
  const int s_lane = 16 * static_cast<int>(threadIdx.x & 31);
  const uint4 prev = shfl_up_vec(y, 32);  // lane 0 gets its own: not stored
  const int mo = static_cast<int>(reinterpret_cast<std::uintptr_t>(run) & 15u);
  unsigned char* base = run - mo;  // aligned vector v holds run bytes [16 v - mo, 16 v - mo + 16)
  if (mo == 0) {
    store_vec_bytes(base + s_lane, y, 0, valid - s_lane);
  } else {
    const int s = s_lane - mo;
    store_vec_bytes(base + s_lane, bytes_from(prev, y, 16 - mo), -s, valid - s);
    if (s_lane == 16 * 31 && valid > 512 - mo) store_vec_bytes(base + 512, bytes_from(y, y, 16 - mo), 0, valid - (512 - mo));
  }
}

/// How transpose_vec_kernel's lanes gather: a warp's groups of kNV lanes (one output row's run
/// each) write output rows d apart, and group j loads its vector's elements starting at
/// element j rot (0 unless the kernel's kRotate). Shared rows start on 16 bytes (but the odd
/// row groups of a 16-vector byte tile, on 8: VecTile::kSkew, the same for the lanes of every
/// group that gather vector k), so the byte a lane gathers lies in the quarter ((m + c) mod 16)
/// / 4 of the banks (m: its input row's offset into a vector, c: its byte column), the vectors
/// of a group spread over the 8 banks of that quarter (two ways for 16 vectors on a skew of
/// 16), and two groups in the same quarter conflict. With
/// consecutive rows and no turn that cost bytes up to 4-way conflicts (ncu, H200: u8
/// 4100x262144, 102.6M conflicts, mio throttle the first stall, 0.69 of a copy against 0.90
/// where the rows are whole vectors). transpose_vec_lanes picks d and rot so that the groups
/// fall in distinct quarters.
struct TransposeVecLanes {
  int d;    // output rows between a warp's groups: a power of two dividing the tile's kSets
  int rot;  // elements group j's loads are turned by, times j (a multiple of 4 bytes)
};

/// The lanes of transpose_vec_kernel on Tile for output rows of row_bytes and input rows ld_bytes
/// apart (TransposeVecLanes). Between a warp's groups, output rows d apart, the quarter moves by
/// x = d s + rot lb (mod 16; s = 1 - (row_bytes mod 16) lb, lb = ld_bytes mod 16: an output row
/// d further starts d row_bytes later in its vector, so it reads rows d row_bytes earlier,
/// whose offsets m are that many lb lower, at a column d further). 4 groups (8 vectors a run)
/// take 4 quarters wherever x is 4 or 12, 2 groups (16 vectors) 2 quarters wherever x is a
/// nonzero multiple of 4. With rot = 0 some d gives that unless s is a multiple of 8 (s odd:
/// d = 4, s = 2 mod 4: d = 2, s = 4 mod 8: d = 1), and there lb is odd, so rot = 4, d = 1
/// does. A bank-conflict model of the store phase (every load of a warp; 37 dense shapes and
/// 50 random windows at every offset) found none left on the 8-vector tiles (1.8-2.1
/// wavefronts a load on average before, 4 at worst) and the 16-vector tiles' two ways alone
/// (2.4-2.6 before), which VecTile::kSkew removes since (the vectors of a group, not the
/// groups: the 16-vector tiles' row groups start 8 bytes apart mod 16, the plans unchanged).
/// Bytes only: on floats (two ways at most, no mio throttle) lanes of 8
/// vectors and 4 groups measured 1-8% slower (H200, two runs minutes apart: f32 541201x31
/// 0.855 of a copy against 0.930, 16383x16385 0.856 against 0.873), so floats keep consecutive
/// rows (d = 1, rot = 0), as do tiles of other run lengths.
template <class Tile>
TransposeVecLanes transpose_vec_lanes(Index row_bytes, Index ld_bytes) {
  constexpr int kGroups = Tile::kGroups;
  if (Tile::kSize != 1 || (kGroups != 2 && kGroups != 4)) return {1, 0};
  const int rb = static_cast<int>(row_bytes & 15), lb = static_cast<int>(ld_bytes & 15);
  const int s = (1 - rb * lb) & 15;
  for (int rot = 0; rot < Tile::kHalo; rot += 4)
    for (int d = 1; d <= Tile::kSets; d *= 2) {
      const int x = (d * s + rot * lb) & 15;
      if (Tile::kSets % d == 0 && (x == 4 || x == 12 || (kGroups == 2 && x == 8))) return {d, rot};
    }
  return {1, 0};
}

/// The 16 bytes of v turned by r 4-byte words: word q of the result is word (q - r) mod 4 of v.
__device__ __forceinline__ uint4 rotate_words(uint4 v, int r) {
  if (r & 1) v = make_uint4(v.w, v.x, v.y, v.z);
  if (r & 2) v = make_uint4(v.z, v.w, v.x, v.y);
  return v;
}

/// A tile of transpose_vec_kernel: every output row's run is kNV aligned 16-byte vectors of out
/// (kRows = 16 kNV / sizeof(T) input rows' worth), wherever that row starts in its vector, so
/// the tile loads kHalo = 16 / sizeof(T) input rows more above them (the rows an output row
/// off its vector reaches back into), by kCols = kColBytes / sizeof(T) input columns, read as
/// the kLV = kColBytes / 16 + 1 aligned vectors that cover them at any offset of the row. In
/// shared memory: kLoadRows rows of kPitch bytes as loaded (each at its own offset into its
/// first vector), row rl at rl kPitch + kSkew (rl / kHalo) (the skew sends the kNV lanes of an
/// output run, kHalo rows apart, to different banks), then a table of 2 kHalo ints.
template <class T, int kNVv, int kColBytes, int kThreadsV = 256>
struct VecTile {
  static_assert(sizeof(T) == 1 || sizeof(T) == 4 || sizeof(T) == 8, "VecTile: 1-, 4- or 8-byte elements");
  static_assert(kNVv >= 1 && kNVv <= 32 && 32 % kNVv == 0, "VecTile: an output run is 1, 2, 4 ... 32 vectors");
  static_assert(kColBytes % 16 == 0 && kColBytes >= 16, "VecTile: columns of whole vectors");
  static_assert(kThreadsV % 32 == 0 && kThreadsV <= 1024, "VecTile: whole warps");
  static constexpr int kSize = static_cast<int>(sizeof(T));
  static constexpr int kNV = kNVv;                    // vectors of an output run
  static constexpr int kHalo = 16 / kSize;            // elements of a vector
  static constexpr int kRows = 16 * kNV / kSize;      // input rows a tile (an output run)
  static constexpr int kLoadRows = kRows + kHalo;     // input rows loaded
  static constexpr int kCols = kColBytes / kSize;     // input columns a tile (output rows)
  static constexpr int kLV = kColBytes / 16 + 1;      // vectors loaded of a row
  static constexpr int kPitch = 16 * kLV;             // bytes of a shared row
  static constexpr int kThreads = kThreadsV;
  static constexpr int kLoads = (kLoadRows * kLV + kThreads - 1) / kThreads;  // vectors a thread loads
  static constexpr int kStep = kThreads / kNV;  // output rows apart that a thread writes
  // The store phase's lanes: a warp is kGroups groups of kNV lanes, the run of one output row
  // each, and the kStep output rows a block writes at once are kSets sets of kGroups, a warp's
  // (TransposeVecLanes).
  static constexpr int kGroups = 32 / kNV;
  static constexpr int kSets = kStep / kGroups;
  // Blocks an SM holds by registers (ptxas alone spilled bytes at 48 registers, and took 80 for
  // a 256-byte row of bytes): 64 registers a thread for bytes, 40 for wider elements.
  static constexpr int kMinBlocks = 65536 / kThreads / (kSize == 1 ? 64 : 40);
  static_assert(kStep * kSize % 16 == 0, "VecTile: a thread's output rows start at the same offset into a vector");
  // Bytes between consecutive groups of kHalo shared rows beyond their pitch (the skew). A
  // lane of the store phase gathers bytes of row group k, so the kNV lanes of a run sit
  // kHalo kPitch + kSkew bytes apart: with 16 (every stride a multiple of 16 bytes) the 16
  // lanes of a 16-vector byte tile fell on 8 banks, k and k + 8 two ways apart (2320 bytes =
  // 580 words, 4 mod 32; ncu, H200, session 26, u8 16385x16383: 9.4M conflicts in 19.2M
  // shared-load wavefronts, the L1 pipe 93% busy). 24 (2328 bytes, 6 mod 32 words) spreads
  // them over 16 banks: a bank model of every gather load (dense shapes and 300 random
  // windows, with transpose_vec_lanes' plans) gives 1.03 wavefronts a load against 2.0. The
  // 8-vector byte tiles' 8 lanes were conflict-free with 16 and would conflict with 24 (2.0),
  // so they, and wider elements, keep 16. Rows of a group then start on 8 bytes (two 8-byte
  // stores a vector). 32-vector tiles of 1- and 4-byte elements take 24 too: their 32 lanes sit
  // 16 kPitch + 16 or 4 kPitch + 16 bytes apart with 16 (0 or 4 mod 32 words: 4 ways or more),
  // 2 ways with 24.
  static constexpr int kSkew = (kSize == 1 && kNV == 16) || (kSize <= 4 && kNV == 32) ? 24 : 16;
  static constexpr int kTableOff = kLoadRows * kPitch + kSkew * (kLoadRows / kHalo);
  static constexpr int kSmemBytes = kTableOff + 4 * 2 * kHalo;
};

/// Tile rows of transpose_vec_kernel with kNV-vector runs for rows of `row_bytes` bytes of `out`
/// (`out_lo`: its address's low bits): enough that every output row's last vector is in one.
/// Output row o starts n_o = (out_lo + o row_bytes) mod 16 bytes into its vector; those offsets
/// are out_lo modulo g = gcd(row_bytes, 16), so at most 16 - g + out_lo mod g (0 for rows of whole
/// vectors from an aligned out: no tile row of empty runs).
inline Index transpose_vec_tiles_r(Index row_bytes, unsigned out_lo, int nv) {
  const Index g = (row_bytes & 15) == 0 ? 16 : (row_bytes & 7) == 0 ? 8 : (row_bytes & 3) == 0 ? 4 : (row_bytes & 1) == 0 ? 2 : 1;
  const Index n_max = 16 - g + static_cast<Index>(out_lo) % g;
  return (row_bytes + n_max + 16 * nv - 1) / (16 * nv);
}

/// transpose_vec_tiles_r for Tile on `rows` input rows (the output rows' elements) into `out`.
template <class Tile>
Index transpose_vec_tile_rows(Index rows, const void* out) {
  return transpose_vec_tiles_r(rows * static_cast<Index>(Tile::kSize),
                               static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(out)), Tile::kNV);
}

/// The tiles of transpose_vec_kernel's grid (tiles_r x tiles_c) and their order: bands of
/// `band` tile rows, band z the blocks (x, y, z), tile (z band + x, y) (none where that row is
/// past tiles_r: a short last band), so that each band runs column by column and down each column
/// within it, without a division. With band = tiles_r (one band) neighbouring blocks write
/// neighbouring runs of the same output rows; a band shorter than a tall matrix's tile columns
/// brings the next tile column, which reads the same sectors where rows are off their vectors,
/// while those are still in L2 (transpose_vec_grid). The kernel is bound by its issue rate (ncu:
/// issue-active 70-78%): a first version that found a block's tile on a grid of one dimension by
/// dividing (by the band, then by the band's tile rows) ran 11% more instructions than one
/// division (u8 1048576x1000) and 0.80 against 0.87 of a copy on u8 528417x127. On u8
/// 4100x262144 (one band): one division a thread 424.7M instructions, none 412.1M, session 20's
/// kernel (the previous bench binary's, one division, a grid of one dimension) 383.0M in the same
/// run; where the rest comes from is not found.
struct TransposeVecGrid {
  unsigned tiles_r, tiles_c, band;
  struct At {
    unsigned r, c;
  };
  __host__ __device__ At tile(unsigned x, unsigned y, unsigned z) const { return {z * band + x, y}; }
  unsigned bands() const { return (tiles_r + band - 1) / band; }
};

/// Bytes of input the tiles of one tile column may read before the next column reads their
/// shared sectors (transpose_vec_grid's band): ncu, u8 262144x4100 in one band (2048 tile rows,
/// about 42 MB a column) read 1.48 times its bytes from DRAM; 65537x4097 (512, 10.6 MB) 1.035;
/// 16385x16383 (128, 2.6 MB) 1.00 (ncu after: 1.23 GB in three bands). Bands of 4 MiB (an early
/// trial: session 21, same run, of a copy) took 262144x4100 from 0.75 to 0.78 but 65537x4097
/// from 0.81 to 0.73 and f32 16383x16385 from 0.87 to 0.78: bands only where one column's reads
/// pass what L2 keeps.
inline constexpr std::size_t kTransposeVecBandBytes = std::size_t(16) << 20;

/// Bytes one tile of Tile reads (its rows and their halo, a vector more than its columns each).
template <class Tile>
constexpr Index transpose_vec_tile_read_bytes() {
  return static_cast<Index>(Tile::kLoadRows) * (Tile::kCols * Tile::kSize + 16);
}

/// Tile rows of Tile whose reads make kTransposeVecBandBytes (at least one): a band's height.
template <class Tile>
Index transpose_vec_band_fit() {
  const Index fit = static_cast<Index>(kTransposeVecBandBytes) / transpose_vec_tile_read_bytes<Tile>();
  return fit < 1 ? 1 : fit;
}

/// transpose_vec_kernel's grid for a rows x cols matrix on Tile whose output rows need `tiles_r`
/// tile rows (transpose_vec_tiles_r): one band where there is one tile column or a tile column
/// reads at most twice kTransposeVecBandBytes, else the fewest bands of at most that much, as
/// even as whole tile rows allow (so that the last band's empty blocks are fewer than the bands).
/// Two bands lost (session 21, same run, of a copy, against one: f32 65537x4097 0.78 against
/// 0.80, u8 104001x131 0.66 against 0.72, 131071x8195 0.62 against 0.62); from three they won
/// (u8 262144x4100 0.75 against 0.73, 1048576x1000 0.91 against 0.73, f32 262144x1001 0.82
/// against 0.79). Where `band_rows` is given (and fewer than tiles_r), bands of that many tile
/// rows instead (transpose_vec_tall's, and the bench's "-bN" trials), at most 65535 of them
/// (grid z).
template <class Tile>
TransposeVecGrid transpose_vec_grid(Index tiles_r, Index cols, Index band_rows = 0) {
  const Index tiles_c = (cols + Tile::kCols - 1) / Tile::kCols;
  const Index fit = transpose_vec_band_fit<Tile>();
  Index band = tiles_r;
  if (band_rows > 0 && band_rows < tiles_r) {
    constexpr Index kMaxBands = 65535;
    const Index least = (tiles_r + kMaxBands - 1) / kMaxBands;
    band = band_rows > least ? band_rows : least;
  } else if (tiles_c > 1 && tiles_r > 2 * fit) {
    const Index bands = (tiles_r + fit - 1) / fit;
    band = (tiles_r + bands - 1) / bands;
  }
  return {static_cast<unsigned>(tiles_r), static_cast<unsigned>(tiles_c), static_cast<unsigned>(band)};
}

/// The start of shared row f (kHalo k + f for every k: the rows' offsets into their vectors
/// repeat every kHalo rows) of a transpose_vec tile whose shared row 0 is input row r_load,
/// (r_load, c0) at an address whose low 32 bits are a0_lo: row_at[f], written by threads 0 ..
/// 2 kHalo - 1 of the block (transpose_vec_kernel's table).
template <class Tile>
__device__ __forceinline__ void vec_tile_row_at(int* row_at, int tid, unsigned a0_lo, Index ld_b) {
  constexpr int kH = Tile::kHalo;
  if (tid < 2 * kH)
    row_at[tid] = tid * Tile::kPitch + Tile::kSkew * (tid / kH) +
                  static_cast<int>((a0_lo + static_cast<unsigned>(tid) * static_cast<unsigned>(ld_b)) & 15u);
}

/// Where loaded vector v of shared row rl lies in a transpose_vec tile at `tile` (rows kPitch
/// bytes apart, each group of kHalo rows kSkew bytes further).
template <class Tile>
__device__ __forceinline__ unsigned char* vec_tile_slot(unsigned char* tile, int rl, int v) {
  return tile + rl * Tile::kPitch + Tile::kSkew * (rl / Tile::kHalo) + 16 * v;
}

/// Writes a loaded vector to its slot (vec_tile_slot): one 16-byte store where Tile's row groups
/// lie on 16 bytes, else two of 8 (VecTile::kSkew).
template <class Tile>
__device__ __forceinline__ void vec_tile_put(unsigned char* slot, const uint4& vec) {
  if constexpr (Tile::kSkew % 16 == 0) {
    *reinterpret_cast<uint4*>(slot) = vec;
  } else {  // on 8 bytes
    reinterpret_cast<uint2*>(slot)[0] = make_uint2(vec.x, vec.y);
    reinterpret_cast<uint2*>(slot)[1] = make_uint2(vec.z, vec.w);
  }
}

/// Where a transpose_vec tile reads: input row r_load of its shared row 0 (tile_r kRows - kHalo,
/// below 0 in tile row 0), its first column c0, the bytes run_b of a row it holds, and the low 32
/// bits a0_lo of (r_load, c0)'s address (r_load may be negative: arithmetic modulo 2^32).
struct VecTilePlace {
  Index r_load, c0;
  int run_b;
  unsigned a0_lo;
  /// Shared row rl's offset into its first vector (its first byte's address modulo 16).
  __device__ __forceinline__ int lead(int rl, Index ld_b) const {
    return static_cast<int>((a0_lo + static_cast<unsigned>(rl) * static_cast<unsigned>(ld_b)) & 15u);
  }
};

/// The place of tile (tile_r, tile_c) of Tile in the rows x cols matrix at in_b (ld_b bytes
/// between row starts).
template <class Tile>
__device__ __forceinline__ VecTilePlace vec_tile_place(const unsigned char* in_b, Index ld_b, Index cols, Index tile_r,
                                                       Index tile_c) {
  constexpr int kSize = Tile::kSize;
  const Index r_load = tile_r * Tile::kRows - Tile::kHalo, c0 = tile_c * Tile::kCols;
  const int run_b = static_cast<int>((cols - c0 < Tile::kCols ? cols - c0 : Tile::kCols) * kSize);
  const unsigned a0_lo = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(in_b)) +
                         static_cast<unsigned>(c0 * kSize) + static_cast<unsigned>(r_load) * static_cast<unsigned>(ld_b);
  return {r_load, c0, run_b, a0_lo};
}

/// The store phase of a transpose_vec tile (tile row tile_r, its output rows from c0) whose
/// shared rows and table (vec_tile_row_at) are in place: see transpose_vec_kernel.
template <class T, class Tile, bool kRotate>
__device__ __forceinline__ void vec_tile_store(const unsigned char* smem_b, const int* row_at, Index tile_r,
                                               Index c0, T* __restrict__ out, Index rows, Index cols,
                                               TransposeVecLanes lanes) {
  constexpr int kSize = Tile::kSize, kH = Tile::kHalo, kNV = Tile::kNV, kP = Tile::kPitch;
  using Word = typename RawWord<kSize>::type;
  const int tid = static_cast<int>(threadIdx.x);
  // Store: thread tid writes vector k of output rows c0 + o, o = o_first + kStep it. Output
  // rows kStep apart start at the same offset n into their vectors (kStep rows sizeof(T) is a
  // multiple of 16), so a thread's kH shared-row starts are computed once, and its loads from
  // shared memory take the row as an immediate offset (the loop is unrolled). A warp is the kNV
  // vectors (k) of kGroups output rows (groups j, lanes.d rows apart), its element loads
  // turned by j lanes.rot (kRotate) so that the groups read distinct banks (TransposeVecLanes).
  constexpr int kStep = Tile::kStep, kIters = (Tile::kCols + kStep - 1) / kStep;
  const int lane = tid % 32, warp = tid / 32, k = lane % kNV, j = lane / kNV;
  const int o_first = warp % lanes.d + Tile::kGroups * lanes.d * (warp / lanes.d) + j * lanes.d;
  const int rot = kRotate ? j * lanes.rot % kH : 0;  // position e gathers element e + rot (mod kH)
  const Index row_b = rows * kSize;  // bytes of an output row
  const Index q_tile = 16 * (tile_r * kNV + k);
  auto* out_b = reinterpret_cast<unsigned char*>(out);
  const int n = static_cast<int>(reinterpret_cast<std::uintptr_t>(out_b + (c0 + o_first) * row_b) & 15u);
  const Index q0 = q_tile - n;  // each of the thread's output rows' byte at its vector's byte 0
  if (q0 >= row_b) return;      // past the rows' end (q0 >= -15 always); leaves this helper only
  const int f0 = kH - n / kSize;
  // Element (kH k + f0 + e, o_first) of the shared tile: shared row kH k + f at row_at[f] + k (kH kP + kSkew).
  int at[kH];
#pragma unroll
  for (int e = 0; e < kH; ++e) at[e] = row_at[f0 + ((e + rot) & (kH - 1))] + k * (kH * kP + Tile::kSkew) + o_first * kSize;
  const bool whole = q0 >= 0 && q0 + 16 <= row_b;
  const int lo = q0 < 0 ? static_cast<int>(-q0) : 0, hi = row_b - q0 < 16 ? static_cast<int>(row_b - q0) : 16;
  // The thread's output rows inside the tile and the matrix: o_first + kStep it for it < n_it.
  const int o_end = static_cast<int>(cols - c0 < Tile::kCols ? cols - c0 : Tile::kCols);
  const int n_it = o_end > o_first ? (o_end - o_first + kStep - 1) / kStep : 0;
  // Iteration it's vector: its kH elements gathered from shared memory (turned back where
  // kRotate).
  const auto gather = [&](int it) {
    uint4 vec;
    if constexpr (kSize == 1) {
      unsigned w[4];  // bytes packed with shifts: a byte array would live on the stack
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        w[q] = 0;
#pragma unroll
        for (int b = 0; b < 4; ++b) w[q] |= static_cast<unsigned>(smem_b[at[4 * q + b] + kStep * it]) << (8 * b);
      }
      vec = make_uint4(w[0], w[1], w[2], w[3]);
    } else {
      Word w[kH];
#pragma unroll
      for (int e = 0; e < kH; ++e) w[e] = *reinterpret_cast<const Word*>(smem_b + at[e] + kStep * kSize * it);
      std::memcpy(&vec, w, 16);
    }
    if constexpr (kRotate) vec = rotate_words(vec, rot * kSize / 4);  // each element to its position
    return vec;
  };
  // The stores, one loop for whole vectors and one for a row's first or last (the same for every
  // output row of the thread): the destination advances by a fixed step and the loop ends at
  // n_it. Written as one loop that tested `whole` and the tile's and the matrix's last row at
  // each vector, and remade the destination with a 64-bit multiply, ptxas (sm_90, u8
  // VecTile<16, 128>) gave about 45 instructions a vector, 11 of them that bookkeeping and 28
  // the gather.
  unsigned char* dst = out_b + (c0 + o_first) * row_b - n + q_tile;
  const Index dst_step = kStep * row_b;
  if (whole) {
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      if (it >= n_it) break;
      *reinterpret_cast<uint4*>(dst) = gather(it);
      dst += dst_step;
    }
  } else {
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      if (it >= n_it) break;
      store_vec_bytes(dst, gather(it), lo, hi);
      dst += dst_step;
    }
  }
}

/// Transposes the rows x cols row-major `in` (ld elements between row starts) into the dense
/// cols x rows `out` at any shape, stride and alignment (of T), with one aligned 16-byte access
/// a thread on both sides and every misalignment handled in shared memory:
/// - load: input rows [r_load, r_load + kLoadRows) (r_load = tile_r kRows - kHalo) x columns
///   [c0, c0 + kCols): each row as the kLV aligned vectors that cover its run from its first
///   byte rounded down (those that start before the run's end), stored as loaded; the row's
///   offset m into its first vector depends only on the row modulo kHalo (kHalo ld sizeof(T) is
///   16 ld), so a table of 2 kHalo entries gives a shared row's start: entry f (shared rows
///   kHalo k + f) = f kPitch + 16 (f / kHalo) + m_f.
/// - store: lane k of a group of kNV writes aligned vector tile_r kNV + k of an output row
///   (counted from the vector that holds the row's first byte, n bytes into it): its kHalo
///   elements are input rows tile_r kRows + kHalo k - n / sizeof(T) + e, shared rows kHalo k +
///   f0 + e (f0 = kHalo - n / sizeof(T), 1 .. kHalo), gathered from shared memory and stored
///   as one vector, byte-exact (store_vec_bytes) only where the vector holds bytes of the
///   neighbouring output rows (the first and last of a row). So tiles own whole vectors of out
///   and no two blocks write one. Which lanes take which output rows, and the order of their
///   element loads, is `lanes` (transpose_vec_lanes: free of bank conflicts); kRotate compiles
///   the turned loads.
/// Elements outside the matrix are not written; bytes read outside it lie in the aligned vectors
/// that hold its elements, never past its last byte (load_vec_before). Block (x, y, z) is tile
/// TransposeVecGrid{tiles_r, tiles_c, gridDim.x}.tile(x, y, z) (transpose_vec_grid: bands on
/// tall matrices only). The grid comes as plain arguments: taken as one struct, ptxas spilled 24
/// bytes of the float tile's 40 registers where it spills 8 (and f32 16383x16385 ran at 0.80 of
/// a copy against 0.87, session 21).
template <class T, class Tile, bool kRotate = false>
__global__ void __launch_bounds__(Tile::kThreads, Tile::kMinBlocks)
transpose_vec_kernel(const T* __restrict__ in, Index ld, T* __restrict__ out, Index rows, Index cols,
                     Index tiles_r, TransposeVecLanes lanes) {
  constexpr int kSize = Tile::kSize, kLV = Tile::kLV;
  constexpr int kLoadRows = Tile::kLoadRows, kThreads = Tile::kThreads;
  DEVMAT_DYNAMIC_SHARED(uint4, transpose_smem);
  auto* smem_b = reinterpret_cast<unsigned char*>(transpose_smem);  // (kLoadRows, kPitch) bytes, skewed
  int* row_at = reinterpret_cast<int*>(smem_b + Tile::kTableOff);   // (2 kH)

  // Block (x, y, z)'s tile: TransposeVecGrid::tile with band = gridDim.x (here in 64-bit
  // arithmetic, as the one-band kernel before it: ptxas spilled more of the float tile's 40
  // registers in 32 bits).
  const Index tile_r = static_cast<Index>(blockIdx.z) * gridDim.x + blockIdx.x, tile_c = blockIdx.y;
  if (tile_r >= tiles_r) return;  // an empty block of a short last band (before any barrier)
  const int tid = static_cast<int>(threadIdx.x);
  const auto* in_b = reinterpret_cast<const unsigned char*>(in);
  const Index ld_b = ld * kSize;
  const unsigned char* in_end = in_b + ((rows - 1) * ld + cols) * kSize;  // past the last element
  const VecTilePlace pl = vec_tile_place<Tile>(in_b, ld_b, cols, tile_r, tile_c);

  // Load: vector v of shared row rl, (rl, v) = divmod(tid + kThreads i, kLV); all loads issued
  // before the first store to shared memory. Where the block's rows all lie inside the matrix
  // and before its last row (every tile row but the first and the last two or so) no row needs
  // a bound, and no vector can reach past the matrix's end (one reaches at most 15 bytes past
  // its row's last element, still before the next row's with ld >= 16 bytes; only the last
  // row's could pass the end): one LDG.128 each. The general loop (bounds and load_vec_before)
  // took about 40 instructions a vector (ptxas, sm_90, u8 VecTile<16, 128>: 10 of them a
  // thread, more than its stores).
  // The loads (one of the two loops below) then the stores to shared memory, in each branch:
  // with the stores after the branches, ptxas (64 registers) spilled 112 bytes of addresses.
  const auto to_shared = [&](const uint4 (&buf)[Tile::kLoads]) {
    vec_tile_row_at<Tile>(row_at, tid, pl.a0_lo, ld_b);
#pragma unroll
    for (int i = 0; i < Tile::kLoads; ++i) {
      const int idx = tid + kThreads * i, rl = idx / kLV, v = idx % kLV;
      if (idx < kLoadRows * kLV) vec_tile_put<Tile>(vec_tile_slot<Tile>(smem_b, rl, v), buf[i]);
    }
  };
  // Bytes only: the float tile (40 registers) spilled 20 bytes with it where it spills 8 without.
  const bool inside = kSize == 1 && pl.r_load >= 0 && pl.r_load + kLoadRows < rows && ld_b >= 16 &&
                      ld_b < (Index(1) << 31) / kLoadRows;
  if (inside) {
    // Offsets from the tile's corner in 32 bits (a tile's rows span under 2^31 bytes here).
    const unsigned char* const first = in_b + pl.r_load * ld_b + pl.c0 * kSize;  // (r_load, c0)
    const int ld32 = static_cast<int>(ld_b);
    uint4 buf[Tile::kLoads];
#pragma unroll
    for (int i = 0; i < Tile::kLoads; ++i) {
      const int idx = tid + kThreads * i, rl = idx / kLV, v = idx % kLV;
      const int m = pl.lead(rl, ld_b);
      buf[i] = make_uint4(0u, 0u, 0u, 0u);
      if ((kLoadRows * kLV % kThreads == 0 || idx < kLoadRows * kLV) && 16 * v < m + pl.run_b)
        buf[i] = __ldg(reinterpret_cast<const uint4*>(first + (rl * ld32 - m + 16 * v)));
    }
    to_shared(buf);
  } else {
    uint4 buf[Tile::kLoads];
#pragma unroll
    for (int i = 0; i < Tile::kLoads; ++i) {
      const int idx = tid + kThreads * i, rl = idx / kLV, v = idx % kLV;
      const Index r = pl.r_load + rl;
      buf[i] = make_uint4(0u, 0u, 0u, 0u);
      if (idx < kLoadRows * kLV && r >= 0 && r < rows) {
        const int m = pl.lead(rl, ld_b);
        if (16 * v < m + pl.run_b) buf[i] = load_vec_before(in_b + r * ld_b + pl.c0 * kSize - m + 16 * v, in_end);
      }
    }
    to_shared(buf);
  }
  __syncthreads();

  vec_tile_store<T, Tile, kRotate>(smem_b, row_at, tile_r, pl.c0, out, rows, cols, lanes);
}

/// Shared bytes of one stage of Tile in transpose_vec_pipe_kernel: its tile and table (Tile::
/// kSmemBytes), rounded up to 16.
template <class Tile>
constexpr int transpose_vec_pipe_stage_bytes() {
  return (Tile::kSmemBytes + 15) / 16 * 16;
}

/// transpose_vec_pipe_kernel's stages: the tile a block gathers and stores, and the next one,
/// whose loads are in flight meanwhile.
inline constexpr int kTransposeVecPipeStages = 2;

/// Blocks an SM that transpose_vec_pipe_kernel on Tile asks registers for: two where two blocks'
/// stages and the 1 KiB each block reserves fit the H100's and H200's 228 KiB of shared memory
/// an SM, else one.
template <class Tile>
constexpr int transpose_vec_pipe_min_blocks() {
  return 2 * (kTransposeVecPipeStages * transpose_vec_pipe_stage_bytes<Tile>() + 1024) <= 228 * 1024 ? 2 : 1;
}

/// transpose_vec_kernel's tiles (the same loads, shared layout and stores) on a persistent grid
/// whose blocks keep loads in flight while they store: block b takes tiles b, b + gridDim.x, ...
/// in transpose_vec_kernel's block order (TransposeVecGrid{tiles_r, tiles_c, band}: blocks (x,
/// y, z) numbered x + band (y + tiles_c z), the empty ones of a short last band skipped), and
/// copies the next tile's vectors into the other of two shared stages with cp.async (16 bytes,
/// or 8 twice where Tile's row groups lie on 8 bytes: VecTile::kSkew) before it gathers and
/// stores the one before. transpose_vec_kernel's blocks load, wait, then store; on the H200
/// (4.8 TB/s) its smaller tiles won against its larger ones where the H100 measured the
/// opposite (run S31), a sign that its memory wants more bytes in flight an SM. The vector that
/// reaches past the matrix's last byte is read as load_vec_before reads it, synchronously, and
/// vectors outside the matrix are stored as zeros, as transpose_vec_kernel stores them. Forced
/// only ("ours-vecp-*") until a device measures it.
template <class T, class Tile, bool kRotate = false>
__global__ void __launch_bounds__(Tile::kThreads, transpose_vec_pipe_min_blocks<Tile>())
transpose_vec_pipe_kernel(const T* __restrict__ in, Index ld, T* __restrict__ out, Index rows, Index cols,
                          Index tiles_r, unsigned tiles_c, unsigned band, TransposeVecLanes lanes) {
  constexpr int kSize = Tile::kSize, kLV = Tile::kLV;
  constexpr int kLoadRows = Tile::kLoadRows, kThreads = Tile::kThreads;
  constexpr int kStageBytes = transpose_vec_pipe_stage_bytes<Tile>();
  DEVMAT_DYNAMIC_SHARED(uint4, transpose_smem);
  auto* smem_b = reinterpret_cast<unsigned char*>(transpose_smem);  // kTransposeVecPipeStages stages
  const int tid = static_cast<int>(threadIdx.x);
  const auto* in_b = reinterpret_cast<const unsigned char*>(in);
  const Index ld_b = ld * kSize;
  const unsigned char* in_end = in_b + ((rows - 1) * ld + cols) * kSize;  // past the last element
  // Blocks of transpose_vec_kernel's grid (the launcher keeps them under 2^31, so that
  // t + gridDim.x stays in 32 bits).
  const unsigned per_band = band * tiles_c;
  const unsigned n_blocks = per_band * static_cast<unsigned>((tiles_r + band - 1) / band);
  // The first block from t (in steps of gridDim.x) whose tile is not empty: its tile, or false.
  const auto next_tile = [&](unsigned& t, Index& tile_r, Index& tile_c) {
    for (; t < n_blocks; t += gridDim.x) {
      const unsigned z = t / per_band, rem = t - z * per_band, y = rem / band;
      tile_r = static_cast<Index>(z) * band + (rem - y * band);
      tile_c = y;
      if (tile_r < tiles_r) return true;
    }
    return false;
  };
  // Issues the loads of tile (tile_r, tile_c) into stage `stage` and writes its table.
  const auto load = [&](int stage, Index tile_r, Index tile_c) {
    unsigned char* const st = smem_b + stage * kStageBytes;
    const VecTilePlace pl = vec_tile_place<Tile>(in_b, ld_b, cols, tile_r, tile_c);
    vec_tile_row_at<Tile>(reinterpret_cast<int*>(st + Tile::kTableOff), tid, pl.a0_lo, ld_b);
#pragma unroll
    for (int i = 0; i < Tile::kLoads; ++i) {
      const int idx = tid + kThreads * i, rl = idx / kLV, v = idx % kLV;
      if (kLoadRows * kLV % kThreads != 0 && idx >= kLoadRows * kLV) break;
      unsigned char* const at = vec_tile_slot<Tile>(st, rl, v);
      uint4 zero_or_tail = make_uint4(0u, 0u, 0u, 0u);
      const Index r = pl.r_load + rl;
      const int m = pl.lead(rl, ld_b);
      if (r >= 0 && r < rows && 16 * v < m + pl.run_b) {
        const unsigned char* const p = in_b + r * ld_b + pl.c0 * kSize - m + 16 * v;
        if (in_end - p >= 16) {
          if constexpr (Tile::kSkew % 16 == 0) {
            cp_async<16>(reinterpret_cast<uint4*>(at), reinterpret_cast<const uint4*>(p), 16);
          } else {  // on 8 bytes
            cp_async<8>(reinterpret_cast<uint2*>(at), reinterpret_cast<const uint2*>(p), 8);
            cp_async<8>(reinterpret_cast<uint2*>(at) + 1, reinterpret_cast<const uint2*>(p) + 1, 8);
          }
          continue;
        }
        zero_or_tail = load_vec_before(p, in_end);
      }
      vec_tile_put<Tile>(at, zero_or_tail);
    }
  };

  unsigned t = blockIdx.x;
  Index tile_r = 0, tile_c = 0;
  if (!next_tile(t, tile_r, tile_c)) return;  // before any barrier: every thread alike
  load(0, tile_r, tile_c);
  cp_async_commit();
  for (int stage = 0;; stage ^= 1) {
    // The next tile's loads into the other stage (its last reader, the tile before, passed the
    // barrier at the end of the last iteration), then this one's wait (a group a thread each
    // iteration, empty past the last tile, so that one group may stay in flight).
    unsigned t_next = t + gridDim.x;
    Index next_r = 0, next_c = 0;
    const bool more = next_tile(t_next, next_r, next_c);
    if (more) load(stage ^ 1, next_r, next_c);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    const unsigned char* const st = smem_b + stage * kStageBytes;
    vec_tile_store<T, Tile, kRotate>(st, reinterpret_cast<const int*>(st + Tile::kTableOff), tile_r,
                                     tile_c * Tile::kCols, out, rows, cols, lanes);
    if (!more) break;
    __syncthreads();  // this stage is read: the next iteration's loads may refill it
    t = t_next;
    tile_r = next_r;
    tile_c = next_c;
  }
}

/// Shared memory of one few-rows / few-columns chunk: kTransposeChunkBytes of elements plus a
/// pad of 4 bytes after every 128 (so lanes that write with a stride of a power of two elements
/// still spread over the banks).
inline constexpr int kTransposeChunkBytes = 16384;
inline constexpr int kTransposeChunkThreads = 256;

/// A few-rows / few-columns chunk: kBytes of elements (a multiple of 128, at most 32 KiB: static
/// shared memory) for a block of kThreads.
template <int kBytesV = kTransposeChunkBytes, int kThreadsV = kTransposeChunkThreads>
struct TransposeChunk {
  static_assert(kBytesV % 128 == 0 && kBytesV <= 32768, "TransposeChunk: 128-byte lines, at most 32 KiB");
  static_assert(kThreadsV % 32 == 0 && kThreadsV <= 1024, "TransposeChunk: whole warps");
  static constexpr int kBytes = kBytesV, kThreads = kThreadsV;
  static constexpr int kSmem = kBytes / 32 * 33;  // bytes, with the pads
};

/// Where element e of a chunk lives in shared memory (in elements of T).
template <class T>
__device__ __forceinline__ int chunk_slot(int e) {
  if constexpr (sizeof(T) == 1) return e + ((e >> 7) << 2);
  else return e + (e >> 5);
}

/// Loads of one thread that a chunk kernel issues before it stores any (enough bytes in flight).
inline constexpr int kTransposeChunkBatch = 16;

/// The transpose of a matrix with few rows (an interleave): out (dense, cols x rows) holds
/// out[j * rows + i] = in[i * ld + j]. Block b takes input columns [b * cols_per_block, ...),
/// whose transpose is one contiguous run of out: it gathers the run into shared memory in output
/// order (bytes: each warp reads 128-byte runs of a row as words), then stores it linearly.
/// Requires rows * cols_per_block * sizeof(T) <= Chunk::kBytes, cols_per_block a multiple
/// of 128 and, for bytes, out aligned to 4.
template <class T, class Chunk = TransposeChunk<>>
__global__ void __launch_bounds__(Chunk::kThreads)
transpose_few_rows_kernel(const T* __restrict__ in, Index ld, T* __restrict__ out, int rows, Index cols,
                          int cols_per_block) {
  constexpr int kThreads = Chunk::kThreads, kWarps = kThreads / 32, kBatch = kTransposeChunkBatch;
  __shared__ uint4 chunk_raw[Chunk::kSmem / 16];
  T* chunk_smem = reinterpret_cast<T*>(chunk_raw);  // (cols_per_block, rows) in output order, padded
  const Index j0 = blockIdx.x * static_cast<Index>(cols_per_block);
  const int n = static_cast<int>(cols - j0 < cols_per_block ? cols - j0 : cols_per_block);  // columns here
  const int tid = threadIdx.x;

  if constexpr (sizeof(T) == 1) {
    // Runs of 128 columns of one row, u = i * runs + run; warp w takes u = w, w + kWarps, ...
    const int lane = tid & 31, warp = tid >> 5;
    const int runs = (n + 127) / 128, all_runs = rows * runs;
    constexpr int kRuns = kBatch / 2;
    for (int u0 = warp; u0 < all_runs; u0 += kWarps * kRuns) {  // the same for the whole warp
      RunWords raw[kRuns];
#pragma unroll
      for (int b = 0; b < kRuns; ++b) {
        const int u = u0 + kWarps * b, i = u / runs, s = (u - i * runs) * 128;
        if (u < all_runs) raw[b] = warp_read_run(reinterpret_cast<const unsigned char*>(in + i * ld), j0 + s, cols);
      }
#pragma unroll
      for (int b = 0; b < kRuns; ++b) {
        const int u = u0 + kWarps * b, i = u / runs, s = (u - i * runs) * 128;
        if (u >= all_runs) break;
        const unsigned w = warp_align_run(raw[b], reinterpret_cast<const unsigned char*>(in + i * ld), j0 + s);
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          const int jj = s + 4 * lane + t;
          if (jj < n) chunk_smem[chunk_slot<T>(jj * rows + i)] = static_cast<T>(w >> (8 * t));
        }
      }
    }
  } else {
    // Element (i, q) of this thread: row i, column tid + kThreads * q, for q < per_row.
    const int per_row = (n + kThreads - 1) / kThreads, all = rows * per_row;
    for (int u0 = 0; u0 < all; u0 += kBatch) {
      T v[kBatch];
      int i = u0 / per_row, q = u0 - i * per_row;
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int jj = tid + kThreads * q;
        v[b] = i < rows && jj < n ? __ldg(in + i * ld + j0 + jj) : T{};
        if (++q == per_row) q = 0, ++i;
      }
      i = u0 / per_row, q = u0 - i * per_row;
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int jj = tid + kThreads * q;
        if (i < rows && jj < n) chunk_smem[chunk_slot<T>(jj * rows + i)] = v[b];
        if (++q == per_row) q = 0, ++i;
      }
    }
  }
  __syncthreads();

  const int total = n * rows;
  T* out_run = out + j0 * rows;  // (n, rows) dense
  if constexpr (sizeof(T) == 1) {
    // 4-byte words: out_run is aligned to 4 (out is, and j0 * rows is a multiple of 128), and a
    // word's 4 bytes never straddle a pad (pads fall every 128 bytes).
    for (int e = 4 * tid; e < total; e += 4 * kThreads) {
      const unsigned w = *reinterpret_cast<const unsigned*>(chunk_smem + chunk_slot<T>(e));
      store_word_bytes(reinterpret_cast<unsigned char*>(out_run + e), w, 0, total - e < 4 ? total - e : 4);
    }
  } else {
    for (int e = tid; e < total; e += kThreads) out_run[e] = chunk_smem[chunk_slot<T>(e)];
  }
}

/// The transpose of a matrix with few columns (a de-interleave): out (dense, cols x rows) holds
/// out[i * rows + r] = in[r * ld + i]. Block b takes input rows [b * rows_per_block, ...): it
/// reads them into shared memory in input order, then writes each output row's run (bytes as
/// words at any alignment). Bytes whose rows_per_block rows, gaps included (ld each), fit the
/// chunk are read as one contiguous span of words, the gaps between rows too (they lie between
/// the matrix's first and last elements; with ld == cols there are none); other shapes element
/// by element. Requires cols * rows_per_block * sizeof(T) <= Chunk::kBytes and rows_per_block a
/// multiple of 128.
template <class T, class Chunk = TransposeChunk<>>
__global__ void __launch_bounds__(Chunk::kThreads)
transpose_few_cols_kernel(const T* __restrict__ in, Index ld, T* __restrict__ out, Index rows, int cols,
                          int rows_per_block) {
  constexpr int kThreads = Chunk::kThreads, kWarps = kThreads / 32, kBatch = kTransposeChunkBatch;
  __shared__ uint4 chunk_raw[Chunk::kSmem / 16];
  T* chunk_smem = reinterpret_cast<T*>(chunk_raw);  // (rows_per_block, cols) in input order, padded
  const Index r0 = blockIdx.x * static_cast<Index>(rows_per_block);
  const int n = static_cast<int>(rows - r0 < rows_per_block ? rows - r0 : rows_per_block);  // rows here
  const int total = n * cols;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  // Bytes: the pitch of a row in the chunk, ld where the block's rows read as one span fit it.
  const bool span = sizeof(T) == 1 && static_cast<Index>(rows_per_block) * ld <= Chunk::kBytes;
  const int pitch = span ? static_cast<int>(ld) : cols;
  if (span) {
    // The block's rows are one run of bytes, (n - 1) ld + cols long: warp w reads its 128-byte
    // pieces s = 128 * (w + kWarps * b). Bytes past the run land in the chunk's spare room
    // (s + 128 <= its capacity), never read.
    const auto* run = reinterpret_cast<const unsigned char*>(in);
    const int span_bytes = (n - 1) * pitch + cols;
    const Index valid = (rows - 1) * ld + cols;  // bytes from in to the matrix's last one
    constexpr int kRuns = kBatch / 2;
    for (int s0 = 128 * warp; s0 < span_bytes; s0 += 128 * kWarps * kRuns) {  // the same for the whole warp
      RunWords raw[kRuns];
#pragma unroll
      for (int b = 0; b < kRuns; ++b) {
        const int s = s0 + 128 * kWarps * b;
        if (s < span_bytes) raw[b] = warp_read_run(run, r0 * ld + s, valid);
      }
#pragma unroll
      for (int b = 0; b < kRuns; ++b) {
        const int s = s0 + 128 * kWarps * b;
        if (s >= span_bytes) break;
        *reinterpret_cast<unsigned*>(chunk_smem + chunk_slot<T>(s + 4 * lane)) = warp_align_run(raw[b], run, r0 * ld + s);
      }
    }
  } else {
    // Element e = tid + kThreads * b of a batch: row e / cols, column e % cols, stepped without
    // dividing again.
    const int step_r = kThreads / cols, step_c = kThreads % cols;
    for (int e0 = tid; e0 < total; e0 += kThreads * kBatch) {
      T v[kBatch];
      int r = e0 / cols, c = e0 - r * cols;
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        v[b] = e0 + kThreads * b < total ? __ldg(in + (r0 + r) * ld + c) : T{};
        r += step_r, c += step_c;
        if (c >= cols) c -= cols, ++r;
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b)
        if (e0 + kThreads * b < total) chunk_smem[chunk_slot<T>(e0 + kThreads * b)] = v[b];
    }
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
          if (rr < n) w |= static_cast<unsigned>(chunk_smem[chunk_slot<T>(rr * pitch + i)]) << (8 * t);
        }
        warp_store_run(reinterpret_cast<unsigned char*>(out_row), r0 + s, rows, w);
      }
    } else {
#pragma unroll 4
      for (int rr = tid; rr < n; rr += kThreads) out_row[r0 + rr] = chunk_smem[chunk_slot<T>(rr * cols + i)];
    }
  }
}

// ------------------------------------------------------------------ one short side
// A matrix with one side of 17 to a few hundred elements: square tiles would stand mostly
// idle, and the few-rows kernels' registers do not reach. transpose_rows_run_kernel (few rows)
// and transpose_cols_run_kernel (few columns) move a region that holds the short side whole
// through shared memory. Few rows: each element goes straight to its place in output order
// (bytes from the aligned 4-byte words under each row, one byte store each), then the region
// leaves as one contiguous run. Few columns: the region's rows are one span of memory, copied
// in as the aligned 16-byte vectors under it, and each output row's run is gathered from it.
// The byte and word stores of the first step hit the banks with a stride of the short side:
// conflict-free for odd sides; for even ones a pad of one word after every 2^g words
// (rect_slot, g chosen on the host by transpose_run_pad) spreads them.

/// Threads of a transpose_rows_run_kernel / transpose_cols_run_kernel block.
inline constexpr int kTransposeRunThreads = 256;
/// Rows whose loads a warp of transpose_rows_run_kernel issues before it stores any, where a
/// region holds one piece of each row of bytes and a lane loads K = 2 words of a row (regions of
/// more than 96 rows; kAhead).
inline constexpr int kTransposeRunRowsAhead = 4;
/// Aligned 16-byte vectors a lane of transpose_cols_run_kernel loads before it stores any.
inline constexpr int kTransposeColsRunVecs = 4;
/// No pad: rect_slot's g for odd short sides.
inline constexpr int kTransposeRunNoPad = 29;

/// Where logical element p of a run kernel's region lives in shared memory, in elements: a pad
/// of one word (4 bytes, or an 8-byte element) after every 2^g (g = kTransposeRunNoPad: none).
template <class T>
__host__ __device__ __forceinline__ int rect_slot(int p, int g) {
  if constexpr (sizeof(T) == 1) return p + ((p >> (g + 2)) << 2);
  else return p + (p >> g);
}

/// The pad of the run kernels' shared memory (rect_slot's g) for a short side of n elements:
/// none where n is odd (a warp's stores, n words apart, meet every bank once); else the g of
/// 2 .. 11 under which they meet the fewest times (a model of the stores: 32 lanes n words
/// apart from any start, each bank's distinct words counted), the first such. Computed once a side.
inline int transpose_run_pad_search(int n) {
  if (n % 2 == 1 || n <= 0) return kTransposeRunNoPad;
  int best_g = kTransposeRunNoPad, best = 1 << 30;
  for (int g : {kTransposeRunNoPad, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}) {
    int worst = 0, sum = 0;
    for (int w0 = 0; w0 < 3 * n; w0 += (n + 2) / 3) {
      int count[32] = {}, last[32];
      std::fill(last, last + 32, -1);
      int deg = 0;
      for (int lane = 0; lane < 32; ++lane) {
        const int w = w0 + lane * n, phys = w + (w >> g), bank = phys & 31;
        if (last[bank] != phys) ++count[bank];  // lanes on one word share it
        last[bank] = phys;
        deg = std::max(deg, count[bank]);
      }
      worst = std::max(worst, deg);
      sum += deg;
    }
    if (worst * 4096 + sum < best) best = worst * 4096 + sum, best_g = g;
  }
  return best_g;
}
inline int transpose_run_pad(int n) {
  constexpr int kTable = 256;  // sides searched once; longer ones (no default takes them) each call
  static const auto table = [] {
    std::array<signed char, kTable + 1> t{};
    for (int m = 0; m <= kTable; ++m) t[static_cast<std::size_t>(m)] = static_cast<signed char>(transpose_run_pad_search(m));
    return t;
  }();
  return n >= 0 && n <= kTable ? table[static_cast<std::size_t>(n)] : transpose_run_pad_search(n);
}

/// rect_slot in bytes: where byte b of a run kernel's region (logical, elements of T) lives, a
/// pad unit (a 4-byte word for bytes, else an element) after every 2^g units; sizeof(T)
/// rect_slot<T>(p, g) at b = sizeof(T) p.
template <class T>
__host__ __device__ __forceinline__ int rect_slot_bytes(int b, int g) {
  constexpr int kUnit = sizeof(T) == 1 ? 4 : static_cast<int>(sizeof(T));
  return b + kUnit * ((b / kUnit) >> g);
}

/// Stores the 16 bytes v of a run kernel's region from byte b (a multiple of 16) to their slots
/// (rect_slot_bytes where kPad): one vector where unpadded, else four words (a pad falls every
/// 2^g units, g >= 2: never inside the 16 bytes, but it can leave them off 16).
template <class T, bool kPad>
__device__ __forceinline__ void store_run_vec(unsigned char* tile, int b, int g, const uint4& v) {
  static_assert(sizeof(T) == 1 || sizeof(T) >= 4, "store_run_vec: a pad of 2-byte elements can fall inside 16 bytes");
  if constexpr (kPad) {
    unsigned* const at = reinterpret_cast<unsigned*>(tile + rect_slot_bytes<T>(b, g));
    at[0] = v.x;
    at[1] = v.y;
    at[2] = v.z;
    at[3] = v.w;
  } else {
    *reinterpret_cast<uint4*>(tile + b) = v;
  }
}

/// rect_slot for elements of `elem` bytes, on the host.
inline int rect_slot_host(int p, int g, std::size_t elem) {
  return elem == 1 ? rect_slot<std::uint8_t>(p, g) : rect_slot<float>(p, g);
}

/// rect_slot_bytes for elements of `elem` (1, 4 or 8) bytes, on the host.
inline int rect_slot_bytes_host(int b, int g, std::size_t elem) {
  return elem == 1 ? rect_slot_bytes<std::uint8_t>(b, g) : elem == 4 ? rect_slot_bytes<float>(b, g)
                                                                      : rect_slot_bytes<double>(b, g);
}

/// Rows a warp item of transpose_rows_run_kernel for `rows` rows of `elem`-byte elements: 4-byte
/// elements whose row count makes vectors of a row group meet every bank once (rows_run_load_groups:
/// 4 rows where rows = 4 mod 8, 2 where rows = 2 mod 4), else 1 (a row; odd counts need no pad,
/// the other even ones take rect_slot's).
inline int rows_run_group(Index rows, std::size_t elem) {
  if (elem != 4) return 1;
  return rows % 8 == 4 ? 4 : rows % 4 == 2 ? 2 : 1;
}

/// The regions of transpose_rows_run_kernel for a rows x cols matrix of `elem` bytes elements
/// and about `tile_bytes` a region (host): pieces of 128 K bytes (u8, 32 K aligned words) or
/// 32 K elements a row, K = 4, or 2 or 1 where a piece of every row would pass 1.5 tile_bytes;
/// as many pieces a row as come nearest tile_bytes (at least one, no more than the columns
/// need); the rows a warp item (rows_run_group); cb columns a region (bytes: 16 short of the
/// pieces, so that the aligned words under them at any alignment fit and cb is a multiple of 16:
/// each region's run of cb rows bytes starts on a 16-byte vector wherever out does); pad g;
/// smem bytes.
struct RowsRunShape {
  int k, units, cb, g, smem;
  int group;        // rows a warp item (rows_run_group)
  unsigned blocks;  // of the grid: regions along the columns
  RowsRunShape(Index rows, Index cols, std::size_t elem, int tile_bytes) {
    const Index word = elem == 1 ? 4 : 1;                                 // elements a lane's load
    const Index row_bytes = 32 * word * static_cast<Index>(elem) * rows;  // K = 1: a piece of every row
    k = 4 * row_bytes <= tile_bytes * 3 / 2 ? 4 : (2 * row_bytes <= tile_bytes * 3 / 2 ? 2 : 1);
    const Index piece = 32 * word * k, piece_bytes = row_bytes * k, slack = elem == 1 ? 16 : 0;
    Index n = (tile_bytes + piece_bytes / 2) / piece_bytes;
    n = n < 1 ? 1 : n;
    const Index need = (cols + slack + piece - 1) / piece;
    units = static_cast<int>(n < need ? n : need);
    cb = static_cast<int>(piece * units - slack);
    group = rows_run_group(rows, elem);
    g = group > 1 ? kTransposeRunNoPad : transpose_run_pad(static_cast<int>(rows));
    smem = static_cast<int>(elem) * (rect_slot_host(static_cast<int>(rows) * cb, g, elem)) + 16;
    blocks = static_cast<unsigned>((cols + cb - 1) / cb);
  }
};

/// The regions of transpose_cols_run_kernel for a rows x cols matrix (stride ld) of `elem`
/// bytes elements and about `tile_bytes` a region (host): ra rows (at least 128, in multiples of
/// 128, at most rows), pad g for gathers ld apart, smem bytes (the span, padded, and the
/// overhang of the 16-byte vectors under it).
struct ColsRunShape {
  int ra, g, smem;
  unsigned blocks;  // of the grid: regions down the rows
  ColsRunShape(Index rows, Index /*cols*/, Index ld, std::size_t elem, int tile_bytes) {
    const Index per_row = ld * static_cast<Index>(elem), fit = tile_bytes / per_row / 128 * 128;
    const Index want = fit < 128 ? 128 : fit;
    ra = static_cast<int>(rows < want ? rows : want);
    g = transpose_run_pad(static_cast<int>(ld));
    // The region's bytes and the vectors' overhang at both ends (under 16 bytes each).
    smem = rect_slot_bytes_host(static_cast<int>(elem) * ra * static_cast<int>(ld) + 32, g, elem) + 16;
    blocks = static_cast<unsigned>((rows + ra - 1) / ra);
  }
};

/// to[0, n) = from[0, n) by the block's kTransposeRunThreads threads, both 16-byte aligned (from
/// in shared memory): 16-byte vectors, two a thread in flight, then the last n mod 16 / sizeof(T)
/// elements one a thread. (Word by word, the u8 run kernel's second phase took about 10 SASS
/// instructions a word: a quarter of its instructions at 127 rows.)
template <class T>
__device__ __forceinline__ void copy_run_vectors(const T* from, T* to, int n) {
  constexpr int kThreads = kTransposeRunThreads, kV = 16 / static_cast<int>(sizeof(T));
  const int vecs = n / kV;
  const uint4* const src = reinterpret_cast<const uint4*>(from);
  uint4* const dst = reinterpret_cast<uint4*>(to);
  int v = static_cast<int>(threadIdx.x);
#pragma unroll 1  // unrolled, the run kernels took 44-56 registers where they had 32
  for (; v + kThreads < vecs; v += 2 * kThreads) {
    const uint4 x = src[v], y = src[v + kThreads];
    dst[v] = x;
    dst[v + kThreads] = y;
  }
  if (v < vecs) dst[v] = src[v];
  for (int e = vecs * kV + static_cast<int>(threadIdx.x); e < n; e += kThreads) to[e] = from[e];
}

/// to[0, n) = the n bytes of a padded region of a run kernel, logical byte e at
/// rect_slot<unsigned char>(e, g) of `from` (g >= 2: a 4-byte pad after every 2^(g + 2) bytes, so
/// the 16 bytes from a multiple of 16 are four consecutive words), by the block's
/// kTransposeRunThreads threads, `to` 16-byte aligned: a 16-byte vector a lane from four word
/// loads (the word loop took about 10 SASS instructions a word, and the slot's). The lanes of a
/// load read words four apart; where the pads are rare (g >= 7, the layout almost contiguous)
/// that met 8 lanes a bank, so there lane v reads its words turned by (v / 8) mod 4 and
/// rotate_words turns them back. A bank model of every warp's loads gives, per 512 bytes, 4
/// wavefronts (the fewest) for g = 2, 5 and from 7, and 8 for g = 3, 4, 6 (where no turn by a
/// function of the lane did better); without the turn, 16 from g = 7.
__device__ __forceinline__ void copy_padded_run_vectors(const unsigned char* from, unsigned char* to, int n, int g) {
  constexpr int kThreads = kTransposeRunThreads;
  const int vecs = n / 16;
  uint4* const dst = reinterpret_cast<uint4*>(to);
  if (g >= 7) {
    for (int v = static_cast<int>(threadIdx.x); v < vecs; v += kThreads) {
      const unsigned* const w = reinterpret_cast<const unsigned*>(from + rect_slot<unsigned char>(16 * v, g));
      const int r = (v >> 3) & 3;
      dst[v] = rotate_words(make_uint4(w[r], w[(r + 1) & 3], w[(r + 2) & 3], w[(r + 3) & 3]), r);
    }
  } else {
    for (int v = static_cast<int>(threadIdx.x); v < vecs; v += kThreads) {
      const unsigned* const w = reinterpret_cast<const unsigned*>(from + rect_slot<unsigned char>(16 * v, g));
      dst[v] = make_uint4(w[0], w[1], w[2], w[3]);
    }
  }
  for (int e = vecs * 16 + static_cast<int>(threadIdx.x); e < n; e += kThreads) to[e] = from[rect_slot<unsigned char>(e, g)];
}

/// The items [lo, hi) of a grid of n items that warp `warp` of `warps` takes: as even a share
/// as whole items allow, consecutive, so that a warp sets up each major line once.
struct WarpRange {
  int lo, hi;
  __device__ WarpRange(int n, int warp, int warps)
      : lo(static_cast<int>(static_cast<long long>(n) * warp / warps)),
        hi(static_cast<int>(static_cast<long long>(n) * (warp + 1) / warps)) {}
};

/// Where logical element p of a run kernel's region lives: rect_slot<T>(p, g) where kPad, else p.
template <class T, bool kPad>
__device__ __forceinline__ int run_slot(int p, int g) {
  if constexpr (kPad) return rect_slot<T>(p, g);
  else return p;
}

/// Phase 1 of transpose_rows_run_kernel, one row a warp item: element (a, b) of the region
/// (input columns c0 .. c0 + nc - 1 of every row) to slot b nr + a (run_slot). Warp items (a,
/// piece), consecutive ones a warp, row a's pointer made once a row.
template <class T, int K, bool kPad, bool kAhead>
__device__ __forceinline__ void rows_run_load_rows(const T* __restrict__ in, Index ld, T* tile, int rows, Index cols,
                                                   Index c0, int nc, int units, int g) {
  constexpr int kWarps = kTransposeRunThreads / 32;
  const int nr = rows;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const WarpRange range(nr * units, warp, kWarps);
  const unsigned char* const end = reinterpret_cast<const unsigned char*>(in + (rows - 1) * ld + cols);  // past the last
  int a = range.lo / units, piece = range.lo - a * units;
  const T* src = in + (c0 + a * ld);
  // Bytes without a pad, one piece a row (every region of 24 rows or more), but the matrix's
  // last row: a row an item, nothing made twice (the loop below remade the row's pointers and
  // the lane's offsets at each item: ptxas, sm_90, 127 rows, K 2: about 83 instructions an item
  // of 8 bytes). With ld >= 3 (every shape the dispatch gives it) only the last row can have a
  // word past the matrix's end (the rows before it end a whole ld earlier), so no row here
  // needs the end test; with ld < 3 every row takes the loop below.
  int item0 = range.lo;
  if constexpr (sizeof(T) == 1 && !kPad) {
    if (units == 1) {
      // Word k of lane `lane` is word 32 k + lane under row a: byte t is region column
      // b0 + 128 k + t, slot (b0 + 128 k + t) nr + a (b0 = 4 lane - s, s the row's offset into
      // its word).
      const int a_end = ld < 3 ? a : (range.hi < rows - 1 ? range.hi : rows - 1);
      // Row a's first byte, and the same plus this lane's 4 lane bytes (both advance by ld).
      const std::uintptr_t ld_b = static_cast<std::uintptr_t>(ld);
      std::uintptr_t row_addr = reinterpret_cast<std::uintptr_t>(src);
      std::uintptr_t lane_addr = row_addr + 4u * static_cast<unsigned>(lane);
      unsigned char* at_row = tile + (4 * lane) * nr + a;  // slot of column 4 lane, row a
      // The lane's K words of the row whose first byte is at `addr` (s bytes into its word).
      const auto load = [&](std::uintptr_t addr, std::uintptr_t lane_at, unsigned (&v)[K]) {
        const int s = static_cast<int>(addr & 3);
        const unsigned* const words = reinterpret_cast<const unsigned*>(lane_at - static_cast<unsigned>(s));
#pragma unroll
        for (int k = 0; k < K; ++k) v[k] = 4 * lane - s + 128 * k < nc ? __ldg(words + 32 * k) : 0u;
        return s;
      };
      // Those words' bytes to their slots: byte t of word k is column b0 + 128 k + t (b0 = 4
      // lane - s), slot (b0 + 128 k + t) nr + a, at_r the slot of column 4 lane, row a.
      const auto put = [&](const unsigned (&v)[K], int s, unsigned char* at_r) {
        const int b0 = 4 * lane - s;
        unsigned char* at = at_r - s * nr;  // slot b0 nr + a
#pragma unroll
        for (int k = 0; k < K; ++k, at += 128 * nr) {
          const int b = b0 + 128 * k;
          if (b >= 0 && b + 4 <= nc) {
            at[0] = static_cast<unsigned char>(v[k]);
            at[nr] = static_cast<unsigned char>(v[k] >> 8);
            at[2 * nr] = static_cast<unsigned char>(v[k] >> 16);
            at[3 * nr] = static_cast<unsigned char>(v[k] >> 24);
          } else {
#pragma unroll
            for (int t = 0; t < 4; ++t)
              if (static_cast<unsigned>(b + t) < static_cast<unsigned>(nc)) at[t * nr] = static_cast<unsigned char>(v[k] >> (8 * t));
          }
        }
      };
      // kTransposeRunRowsAhead rows' loads issued before their stores where kAhead and K = 2
      // (8 words a lane in flight; transpose_rows_run_kernel says why).
      constexpr int kRowsAhead = kAhead && K == 2 ? kTransposeRunRowsAhead : 1;
      if constexpr (kRowsAhead > 1) {
        for (; a + kRowsAhead <= a_end;
             a += kRowsAhead, row_addr += kRowsAhead * ld_b, lane_addr += kRowsAhead * ld_b, at_row += kRowsAhead) {
          unsigned v[kRowsAhead][K];
          int s[kRowsAhead];
#pragma unroll
          for (int j = 0; j < kRowsAhead; ++j) s[j] = load(row_addr + j * ld_b, lane_addr + j * ld_b, v[j]);
#pragma unroll
          for (int j = 0; j < kRowsAhead; ++j) put(v[j], s[j], at_row + j);
        }
      }
      for (; a < a_end; ++a, row_addr += ld_b, lane_addr += ld_b, ++at_row) {
        unsigned v[K];
        const int s = load(row_addr, lane_addr, v);
        put(v, s, at_row);
      }
      item0 = a;  // the rest (the matrix's last row, if this warp has it) below
      src = in + (c0 + a * ld);
    }
  }
  for (int item = item0; item < range.hi; ++item) {
    if (piece == units) {
      piece = 0;
      ++a;
      src += ld;
    }
    if constexpr (sizeof(T) == 1) {
      // Word w = 32 K piece + 32 k + lane under row a: byte t is region column 4w + t - s.
      const unsigned char* const src_b = reinterpret_cast<const unsigned char*>(src);
      const int s = static_cast<int>(reinterpret_cast<std::uintptr_t>(src_b) & 3);
      const unsigned* const base = reinterpret_cast<const unsigned*>(src_b - s);
      const int w0 = 32 * K * piece + lane;
      if (src_b + nc + 3 > end) {
        // A word past the row's last byte could reach past the matrix's (its last row, or one a
        // few bytes before it): bytes one by one.
        for (int k = 0; k < K; ++k)
          for (int t = 0; t < 4; ++t) {
            const int b = 4 * (w0 + 32 * k) + t - s;
            if (b >= 0 && b < nc) tile[run_slot<T, kPad>(b * nr + a, g)] = __ldg(src_b + b);
          }
      } else {
        unsigned v[K];
#pragma unroll
        for (int k = 0; k < K; ++k) v[k] = 4 * (w0 + 32 * k) < nc + s ? __ldg(base + w0 + 32 * k) : 0u;
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const int b = 4 * (w0 + 32 * k) - s;
          int p = b * nr + a;
          if (b >= 0 && b + 4 <= nc) {
#pragma unroll
            for (int t = 0; t < 4; ++t, p += nr) tile[run_slot<T, kPad>(p, g)] = static_cast<unsigned char>(v[k] >> (8 * t));
          } else {
#pragma unroll
            for (int t = 0; t < 4; ++t, p += nr)
              if (static_cast<unsigned>(b + t) < static_cast<unsigned>(nc))
                tile[run_slot<T, kPad>(p, g)] = static_cast<unsigned char>(v[k] >> (8 * t));
          }
        }
      }
    } else {
      const int b0 = 32 * K * piece + lane;
      T v[K];
#pragma unroll
      for (int k = 0; k < K; ++k)
        if (b0 + 32 * k < nc) v[k] = __ldg(src + b0 + 32 * k);
#pragma unroll
      for (int k = 0; k < K; ++k)
        if (b0 + 32 * k < nc) tile[run_slot<T, kPad>((b0 + 32 * k) * nr + a, g)] = v[k];
    }
    ++piece;
  }
}

/// Phase 1 of transpose_rows_run_kernel for 4-byte elements, R = 2 or 4 rows a warp item (nr a
/// multiple of R, the region unpadded): lane L's columns b = 32 K piece + L + 32 k of rows a ..
/// a + R - 1 (a a multiple of R) are R elements adjacent in output order, slot b nr + a, stored
/// as one R-element vector (R-aligned: nr and a are multiples of R). A warp's vector stores are
/// nr / R vectors apart, which meet every bank once for each phase of the vector store (8- and
/// 16-byte stores are served a half- or a quarter-warp at a time) where nr / R is odd: nr = 2
/// mod 4 with R = 2, nr = 4 mod 8 with R = 4 (rows_run_group). One row a lane at a time, the
/// same rows needed a pad (rect_slot), so that the stores did not meet 2 to 8 lanes a bank,
/// and the pad split the second phase's reads (two ways) and its vectors.
template <class T, int K, int R>
__device__ __forceinline__ void rows_run_load_groups(const T* __restrict__ in, Index ld, T* tile, int nr, Index c0,
                                                     int nc, int units) {
  static_assert(sizeof(T) == 4 && (R == 2 || R == 4), "rows_run_load_groups: 4-byte elements, 2 or 4 rows");
  constexpr int kWarps = kTransposeRunThreads / 32;
  using V = Pack<T, R>;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const WarpRange range(nr / R * units, warp, kWarps);
  int q = range.lo / units, piece = range.lo - q * units;  // rows R q .. R q + R - 1
  const T* src = in + (c0 + Index(R) * q * ld);
  for (int item = range.lo; item < range.hi; ++item, ++piece) {
    if (piece == units) {
      piece = 0;
      ++q;
      src += Index(R) * ld;
    }
    const int b0 = 32 * K * piece + lane;
    const T* row[R];  // lane's element of each row; its K columns 32 apart (offsets in the loads)
    row[0] = src + b0;
#pragma unroll
    for (int r = 1; r < R; ++r) row[r] = row[r - 1] + ld;
    V* const at = reinterpret_cast<V*>(tile + (b0 * nr + R * q));  // column b0's vector; 32 nr / R vectors a k
    const int k_step = 32 * nr / R;
    V v[K];
    if (b0 + 32 * (K - 1) < nc) {  // every column of the lane inside the region: no test a load
#pragma unroll
      for (int k = 0; k < K; ++k)
#pragma unroll
        for (int r = 0; r < R; ++r) v[k].v[r] = __ldg(row[r] + 32 * k);
#pragma unroll
      for (int k = 0; k < K; ++k) at[k * k_step] = v[k];
    } else {
#pragma unroll
      for (int k = 0; k < K; ++k)
        if (b0 + 32 * k < nc)
#pragma unroll
          for (int r = 0; r < R; ++r) v[k].v[r] = __ldg(row[r] + 32 * k);
#pragma unroll
      for (int k = 0; k < K; ++k)
        if (b0 + 32 * k < nc) at[k * k_step] = v[k];
    }
  }
}

/// The few-rows transpose (out, dense cols x rows, = the transpose of in, rows x cols, ld
/// apart; any stride and alignment), rows <= a region's: block b takes input columns [c0, c0 +
/// cb), c0 = b cb, all rows, whose transpose is the contiguous run out[c0 rows ..): each element
/// goes to slot b rows + a of shared memory (output order), then the run leaves in order. A row
/// of the region is `units` pieces of 32 K aligned 4-byte words (bytes; host: cb = 128 K units
/// - 16, so that the words under cb bytes at any alignment fit) or of 32 K elements (cb = 32 K
/// units), the warps taking (row, piece) in turn, each lane K words or elements of it
/// (rows_run_load_rows), or for 4-byte elements (R rows, piece) with R = 2 or 4
/// (rows_run_load_groups). Pad g (rect_slot) where kPad; dynamic shared memory
/// RowsRunShape::smem (with_rows_run_kernel picks the instance). When its second phase moved
/// words its bytes were bound by instructions (ncu, u8 127x528417: issue-active 88%), and a
/// trial that loaded 8 / K items before storing any ran slower (session 21, same run:
/// 17x3947581 0.90 -> 0.81 of a copy, 31x2164803 0.88 -> 0.81, 127x528417 0.67 -> 0.60). Since
/// that phase moves vectors (session 28) the issue slots are 47-56% busy, and in session 34
/// (ncu, H100, u8 127x528417, one row's 2 words a lane in flight) the warps waited on their
/// global loads 13.9 of 22.9 cycles an instruction (DRAM 60% busy, 0.81 of a copy). Where
/// kAhead, the rows of bytes of a region of one piece a row at K = 2 (97 to 127 rows) issue the
/// loads of kTransposeRunRowsAhead rows before their stores (rows_run_load_rows): session 34,
/// H100, one process, of a copy, against one row at a time (kAhead false, "ours-run-a1"): 127 x
/// 528417 0.800 -> 0.876, 125 x 536871 0.809 -> 0.881, 97 x 691883 0.903 -> 0.929; at K = 4
/// (24 to 96 rows) two rows ahead lost: 31 x 2164803 0.978 -> 0.950, 49 x 1369901 0.981 ->
/// 0.958, 63 x 1065221 0.942 -> 0.937, so there a row at a time.
template <class T, int K, bool kPad, int R = 1, bool kAhead = true>
__global__ void __launch_bounds__(kTransposeRunThreads)
transpose_rows_run_kernel(const T* __restrict__ in, Index ld, T* __restrict__ out, int rows, Index cols, int cb,
                          int units, int g) {
  static_assert(R == 1 || !kPad, "transpose_rows_run_kernel: row groups are unpadded");
  constexpr int kThreads = kTransposeRunThreads;
  DEVMAT_DYNAMIC_SHARED(unsigned char, run_smem_raw);
  T* const tile = reinterpret_cast<T*>(run_smem_raw);
  const Index c0 = static_cast<Index>(blockIdx.x) * cb;
  const int nr = rows, nc = static_cast<int>(cols - c0 < cb ? cols - c0 : cb);

  // Phase 1: element (a, b) of the region to slot b nr + a: a row a warp item, or R rows.
  if constexpr (R == 1) rows_run_load_rows<T, K, kPad, kAhead>(in, ld, tile, rows, cols, c0, nc, units, g);
  else rows_run_load_groups<T, K, R>(in, ld, tile, nr, c0, nc, units);
  __syncthreads();

  // Phase 2: the run out[c0 nr, (c0 + nc) nr) in order: as 16-byte vectors where it starts on
  // one (every region of a 16-byte aligned out: RowsRunShape makes the regions' runs whole
  // vectors) and the region is unpadded or bytes, else bytes as words where it starts on one,
  // else element by element.
  const int total = nc * nr;
  T* const run = out + c0 * nr;
  if ((reinterpret_cast<std::uintptr_t>(run) & 15) == 0) {
    if constexpr (!kPad) {
      copy_run_vectors(tile, run, total);
      return;
    } else if constexpr (sizeof(T) == 1) {
      copy_padded_run_vectors(tile, run, total, g);
      return;
    }
  }
  if constexpr (sizeof(T) == 1) {
    if ((reinterpret_cast<std::uintptr_t>(run) & 3) == 0) {
      int e = 4 * static_cast<int>(threadIdx.x);
      for (; e + 4 <= total; e += 4 * kThreads)
        *reinterpret_cast<unsigned*>(run + e) = *reinterpret_cast<const unsigned*>(tile + run_slot<T, kPad>(e, g));
      for (; e < total; ++e) run[e] = tile[run_slot<T, kPad>(e, g)];  // the last, partial word
      return;
    }
  }
  for (int e = threadIdx.x; e < total; e += kThreads) run[e] = tile[run_slot<T, kPad>(e, g)];
}

/// The few-columns transpose (out, dense cols x rows, = the transpose of in, rows x cols, ld
/// apart, ld <= 2 cols at most a region's span; any alignment): block b takes input rows [r0,
/// r0 + ra), r0 = b ra, as one span of memory (the gaps between rows too: the aligned 16-byte
/// vectors under it, byte-exact at the matrix's end) into shared memory in input order (each
/// lane kTransposeColsRunVecs vectors in flight), then writes the run of each
/// output row j: out[j rows + r0 ..] from the span's elements j, j + ld, ... (bytes gathered
/// into the aligned 4-byte words under the run, elements into 16-byte ones, byte-exact at its
/// ends). Pad g (rect_slot) where kPad, for the gathers ld apart; dynamic shared memory
/// ColsRunShape::smem (with_cols_run_kernel picks the instance).
template <class T, bool kPad>
__global__ void __launch_bounds__(kTransposeRunThreads)
transpose_cols_run_kernel(const T* __restrict__ in, Index ld, T* __restrict__ out, Index rows, int cols, int ra,
                          int g) {
  constexpr int kThreads = kTransposeRunThreads, K = kTransposeColsRunVecs;
  DEVMAT_DYNAMIC_SHARED(unsigned char, run_smem_raw);
  T* const tile = reinterpret_cast<T*>(run_smem_raw);
  const Index r0 = static_cast<Index>(blockIdx.x) * ra;
  const int nr = static_cast<int>(rows - r0 < ra ? rows - r0 : ra), nc = cols, pitch = static_cast<int>(ld);
  const int span = (nr - 1) * pitch + nc;  // elements from the region's first to its last
  const bool last = r0 + nr == rows;       // the span ends at the matrix's end
  const int tid = threadIdx.x;
  int s = 0;  // the span's offset in its first aligned 16-byte vector, in elements

  // Phase 1: the span, element e to slot s + e, as the aligned 16-byte vectors under it (K a
  // thread in flight; the last region's final vector word by word, its last word byte by byte,
  // so that nothing past the matrix is read).
  {
    const unsigned char* const src = reinterpret_cast<const unsigned char*>(in + r0 * ld);
    const int sb = static_cast<int>(reinterpret_cast<std::uintptr_t>(src) & 15);
    s = sb / static_cast<int>(sizeof(T));
    const uint4* const base = reinterpret_cast<const uint4*>(src - sb);
    const int end = sb + span * static_cast<int>(sizeof(T));  // bytes from base
    const int vecs = (end + 15) >> 4, whole = last ? end >> 4 : vecs;
    for (int q0 = tid; q0 < vecs; q0 += K * kThreads) {
      uint4 v[K];
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int q = q0 + k * kThreads;
        if (q < whole) v[k] = __ldg(base + q);
        else if (q < vecs)
          v[k] = load_vec_before(reinterpret_cast<const unsigned char*>(base + q), reinterpret_cast<const unsigned char*>(base) + end);
      }
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int q = q0 + k * kThreads;
        if (q < vecs) store_run_vec<T, kPad>(run_smem_raw, 16 * q, g, v[k]);
      }
    }
  }
  __syncthreads();

  // Phase 2: run j (out row j, elements r0 .. r0 + nr) from slots s + i ld + j. Warp items (j,
  // chunk): 32 aligned kLB-byte words of run j (kE elements each), consecutive ones a warp, a
  // run at a time, its chunks in a loop of their own: the run's pointer and offsets made once a
  // run, and advanced by a chunk (one item a chunk remade them all at each item, ptxas, sm_90:
  // about 45 instructions an output word of bytes where 11 gather and store it). Word w = 32
  // chunk + lane over run j; its element t is run element kE w + t - sd. A lane gathers kE
  // elements and stores them as one word (4-byte elements: 4, where one a lane took about 8
  // instructions an element; bytes: 4, as a trial's 16-byte words of bytes met 3-way bank
  // conflicts in their gathers: ncu, H100, u8 2164803 x 31, 68% of the shared-load wavefronts
  // conflicts, L1 91% busy; 0.77 of a copy where this loop ran 0.81-0.87 in other processes),
  // byte-exact at the run's two ends.
  constexpr int kLB = sizeof(T) == 1 ? 4 : 16;            // bytes a word
  constexpr int kE = kLB / static_cast<int>(sizeof(T));  // elements a word
  constexpr int kChunk = 32 * kE;                        // elements a chunk
  const int lane = tid & 31, warp = tid >> 5;
  const int chunks = (nr + 2 * (kE - 1) + kChunk - 1) / kChunk;  // a run starts up to kE - 1 into its first word
  const WarpRange range(nc * chunks, warp, kThreads / 32);
  int j = range.lo / chunks, chunk = range.lo - j * chunks;
  using Word = std::conditional_t<sizeof(T) == 1, unsigned, Pack<T, kE>>;
  T* dst_run = out + (j * rows + r0);
  for (int item = range.lo; item < range.hi; ++j, chunk = 0, dst_run += rows) {
    const int chunk_end = chunks - chunk < range.hi - item ? chunks : chunk + (range.hi - item);
    item += chunk_end - chunk;
    const int sd = static_cast<int>((reinterpret_cast<std::uintptr_t>(dst_run) & (kLB - 1)) / sizeof(T));
    int i0 = kE * (32 * chunk + lane) - sd;
    Word* word = reinterpret_cast<Word*>(dst_run - sd) + (32 * chunk + lane);
    int q = s + i0 * pitch + j;
    for (; chunk < chunk_end && i0 < nr; ++chunk, i0 += kChunk, q += kChunk * pitch, word += 32) {
      if (i0 >= 0 && i0 + kE <= nr) {
        if constexpr (sizeof(T) == 1) {
          unsigned w = 0;
#pragma unroll
          for (int t = 0; t < 4; ++t) w |= static_cast<unsigned>(tile[run_slot<T, kPad>(q + t * pitch, g)]) << (8 * t);
          *word = w;
        } else {
          Word v;
#pragma unroll
          for (int t = 0; t < kE; ++t) v.v[t] = tile[run_slot<T, kPad>(q + t * pitch, g)];
          *word = v;
        }
      } else {
        T* const dst = reinterpret_cast<T*>(word);
        for (int t = 0; t < kE; ++t)
          if (i0 + t >= 0 && i0 + t < nr) dst[t] = tile[run_slot<T, kPad>(q + t * pitch, g)];
      }
    }
  }
}

/// f(kernel) with the transpose_rows_run_kernel<T, K, kPad, R> instance for `shape` (its K, a
/// pad where it has one, its row groups; kAhead for the unpadded rows): the one choice the
/// launcher and the emulation tests share.
template <class T, bool kAhead = true, class F>
void with_rows_run_kernel(const RowsRunShape& shape, F&& f) {
  const auto with_pad = [&](auto k_c) {
    constexpr int K = decltype(k_c)::value;
    if constexpr (sizeof(T) == 4) {
      if (shape.group == 4) return f(&transpose_rows_run_kernel<T, K, false, 4>);
      if (shape.group == 2) return f(&transpose_rows_run_kernel<T, K, false, 2>);
    }
    if (shape.g == kTransposeRunNoPad) f(&transpose_rows_run_kernel<T, K, false, 1, kAhead>);
    else f(&transpose_rows_run_kernel<T, K, true>);
  };
  if (shape.k == 4) with_pad(std::integral_constant<int, 4>{});
  else if (shape.k == 2) with_pad(std::integral_constant<int, 2>{});
  else with_pad(std::integral_constant<int, 1>{});
}

/// f(kernel) with the transpose_cols_run_kernel<T, kPad> instance for `shape`.
template <class T, class F>
void with_cols_run_kernel(const ColsRunShape& shape, F&& f) {
  if (shape.g == kTransposeRunNoPad) f(&transpose_cols_run_kernel<T, false>);
  else f(&transpose_cols_run_kernel<T, true>);
}

/// Columns [j0, j0 + kV) of the kN rows of `in` (ld apart; in and ld * sizeof(T) on 16 bytes,
/// j0 a multiple of kV = 16 / sizeof(T)), as one vector a row, transposed into y: out elements
/// [j0 kN, (j0 + kV) kN) (the permutation is fixed at compile time: byte permutes or register
/// moves).
template <class T, int kN>
__device__ __forceinline__ void few_rows_vectors(const T* __restrict__ in, Index ld, Index j0, uint4 (&y)[kN]) {
  constexpr int kV = 16 / static_cast<int>(sizeof(T));
  uint4 x[kN];
#pragma unroll
  for (int i = 0; i < kN; ++i) x[i] = __ldg(reinterpret_cast<const uint4*>(in + i * ld + j0));
  const auto* xe = reinterpret_cast<const T*>(x);  // (kN rows, kV columns)
  auto* ye = reinterpret_cast<T*>(y);              // (kV columns, kN rows)
#pragma unroll
  for (int e = 0; e < kV * kN; ++e) ye[e] = xe[(e % kN) * kV + e / kN];
}

/// out[j kN + i] = in[i ld + j] for the columns j0 .. j_end - 1 of kN rows, element by element.
template <class T, int kN>
__device__ __forceinline__ void few_rows_elements(const T* __restrict__ in, Index ld, T* __restrict__ out, Index j0,
                                                  Index j_end) {
  for (Index j = j0; j < j_end; ++j)
#pragma unroll
    for (int i = 0; i < kN; ++i) out[j * kN + i] = in[i * ld + j];
}

/// A few-rows transpose in registers, with no shared memory (kN input rows, kV = 16 / sizeof(T)
/// elements a 16-byte vector): thread g loads columns [kV g, kV (g + 1)) of each row as one
/// vector and stores their transpose, out elements [kV g kN, kV (g + 1) kN), as kN vectors (the
/// permutation is fixed at compile time: byte permutes or register moves). Requires in, out and
/// ld * sizeof(T) aligned to 16 bytes; the last partial group of columns goes one by one.
template <class T, int kN>
__global__ void __launch_bounds__(256)
transpose_few_rows_vec_kernel(const T* __restrict__ in, Index ld, T* __restrict__ out, Index cols) {
  static_assert(kN >= 2 && kN <= 16 && 16 % sizeof(T) == 0, "transpose_few_rows_vec_kernel: 2 to 16 rows");
  constexpr int kV = 16 / static_cast<int>(sizeof(T));
  const Index g = blockIdx.x * static_cast<Index>(blockDim.x) + threadIdx.x;
  const Index j0 = kV * g;
  if (j0 >= cols) return;
  if (cols - j0 >= kV) {
    uint4 y[kN];
    few_rows_vectors<T, kN>(in, ld, j0, y);
    auto* o = reinterpret_cast<uint4*>(out + j0 * kN);
#pragma unroll
    for (int q = 0; q < kN; ++q) o[q] = y[q];
  } else {
    few_rows_elements<T, kN>(in, ld, out, j0, cols);
  }
}

/// Threads a block of transpose_few_rows_stage_kernel.
inline constexpr int kFewRowsStageThreads = 128;

/// Slot of vector idx in a warp's staging area of the few-rows / few-columns byte kernels, the
/// span kernel and transpose_few_rows_stage_kernel, whose lanes access it two ways: consecutive
/// vectors (lane + 32 s) and kN consecutive vectors a lane (lane kN + s). A 16-byte access is
/// served a quarter-warp at a time, so it is free of bank conflicts where the 8 lanes of each
/// quarter hit 8 different vectors mod 8. The slot stays inside idx's aligned group of 8, so consecutive vectors stay
/// conflict-free, and for lane kN + s:
/// - odd kN: idx itself (an odd stride covers every residue mod 8);
/// - even kN: idx ^ (idx / kN mod 8), which flips the low bits by the lane's number (idx / kN
///   is the lane, or the next one at s = kN), so the 8 lanes of a quarter land on 8 residues.
/// Both reach the fewest wavefronts for every kN from 2 to 16 (a quarter-warp model checked
/// against every access of these kernels). The pad vector after every 8 used before was
/// conflict-free only for kN of 2, 4 and 8: f32 9999991 x 7 on the span kernel (kN = 7) ran
/// 24-way conflicts on its shared loads (ncu, H200, session 26: 12.5M conflicts in 625000
/// requests, the quarter-warp model's count for that layout), and kN = 5 (u8 40000001 x 5),
/// 14 and 16 conflicted too.
template <int kN>
__device__ __forceinline__ int stage_slot(int idx) {
  if constexpr (kN % 2 == 1) return idx;
  else return idx ^ ((idx / kN) & 7);
}

/// Vectors of a warp's staging area for vector indices 0 .. n - 1 (stage_slot keeps each inside
/// its group of 8).
__host__ __device__ constexpr int stage_vectors(int n) { return (n + 7) / 8 * 8; }

/// transpose_few_rows_vec_kernel's transpose (kN rows, 4- or 8-byte elements), its stores staged
/// through shared memory: the kN vectors a lane holds are output units lane kN .. lane kN + kN - 1
/// of its warp's run (32 kN units from out + kV kN (g - lane)), 16 bytes each and kN 16 bytes
/// apart across the lanes, so a warp's store instruction wrote 16 bytes of each of 32 separate
/// places and no whole sector (f32 16 x 2^22: 0.20 of a copy, 3 x 2^24: 0.77, run V1). Here the
/// warp writes them to its own staging (stage_slot), then each store instruction writes
/// 512 contiguous bytes of the run (units 32 i + lane). A warp's last partial run (the matrix's
/// last columns) goes element by element. Requires in, out and ld * sizeof(T) aligned to 16 bytes.
template <class T, int kN>
__global__ void __launch_bounds__(kFewRowsStageThreads)
transpose_few_rows_stage_kernel(const T* __restrict__ in, Index ld, T* __restrict__ out, Index cols) {
  static_assert(kN >= 2 && kN <= 16 && (sizeof(T) == 4 || sizeof(T) == 8),
                "transpose_few_rows_stage_kernel: 2 to 16 rows of 4- or 8-byte elements");
  constexpr int kV = 16 / static_cast<int>(sizeof(T));
  __shared__ uint4 stage_smem[kFewRowsStageThreads / 32][stage_vectors(32 * kN)];
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  const Index g = blockIdx.x * static_cast<Index>(kFewRowsStageThreads) + threadIdx.x;
  const Index j0 = kV * g, warp_j0 = kV * (g - lane);
  if (warp_j0 >= cols) return;  // the whole warp
  if (warp_j0 + 32 * kV > cols) {  // the last warp's columns: element by element
    if (j0 < cols) few_rows_elements<T, kN>(in, ld, out, j0, j0 + kV < cols ? j0 + kV : cols);
    return;
  }
  uint4 y[kN];
  few_rows_vectors<T, kN>(in, ld, j0, y);
  uint4* const stage = stage_smem[warp];
#pragma unroll
  for (int q = 0; q < kN; ++q) stage[stage_slot<kN>(lane * kN + q)] = y[q];
  __syncwarp();
  auto* const o = reinterpret_cast<uint4*>(out + warp_j0 * kN);
#pragma unroll
  for (int i = 0; i < kN; ++i) o[32 * i + lane] = stage[stage_slot<kN>(32 * i + lane)];
}

/// A few-columns transpose in registers (kN columns, in dense: ld == kN): thread g loads input
/// rows [kV g, kV (g + 1)), kV kN contiguous elements, as kN 16-byte vectors, and stores kV
/// elements of each of the kN output rows as one vector. Requires in and out aligned to 16 bytes
/// and rows a multiple of kV (every output row's run aligned); a last partial group of rows
/// goes one by one.
template <class T, int kN>
__global__ void __launch_bounds__(256)
transpose_few_cols_vec_kernel(const T* __restrict__ in, T* __restrict__ out, Index rows) {
  static_assert(kN >= 2 && kN <= 16 && 16 % sizeof(T) == 0, "transpose_few_cols_vec_kernel: 2 to 16 columns");
  constexpr int kV = 16 / static_cast<int>(sizeof(T));
  const Index g = blockIdx.x * static_cast<Index>(blockDim.x) + threadIdx.x;
  const Index r0 = kV * g;
  if (r0 >= rows) return;
  if (rows - r0 >= kV) {
    uint4 x[kN], y[kN];
    const auto* src = reinterpret_cast<const uint4*>(in + r0 * kN);
#pragma unroll
    for (int q = 0; q < kN; ++q) x[q] = __ldg(src + q);
    const auto* xe = reinterpret_cast<const T*>(x);  // (kV rows, kN columns)
    auto* ye = reinterpret_cast<T*>(y);              // (kN columns, kV rows)
#pragma unroll
    for (int e = 0; e < kV * kN; ++e) ye[e] = xe[(e % kV) * kN + e / kV];
#pragma unroll
    for (int i = 0; i < kN; ++i) *reinterpret_cast<uint4*>(out + i * rows + r0) = y[i];
  } else {
    for (Index r = r0; r < rows; ++r)
#pragma unroll
      for (int i = 0; i < kN; ++i) out[i * rows + r] = in[r * kN + i];
  }
}

/// The 4 kQ kN bytes of 4 kQ columns of kN rows in output (interleaved) order, as words: xw[i]
/// holds bytes t = 0 .. 4 kQ - 1 of row i; byte t kN + i of yw (word (t kN + i) / 4) gets
/// xw[i]'s byte t. Byte permutes only (the shift-and-mask assembly byte by byte took ~4
/// instructions a byte in PTX): kN a multiple of 4 as 4 x 4 blocks (2 permutes an output word),
/// else each output word from its two byte pairs (3). kQ = 4: 16 columns (interleave_rows), 2: 8
/// (transpose_few_rows_half_kernel).
template <int kN, int kQ>
__device__ __forceinline__ void interleave_row_words(const unsigned (&xw)[kN][kQ], unsigned (&yw)[kQ * kN]) {
  if constexpr (kN % 4 == 0) {
#pragma unroll
    for (int b = 0; b < kN / 4; ++b)  // rows 4b .. 4b + 3
#pragma unroll
      for (int q = 0; q < kQ; ++q) {  // columns 4q .. 4q + 3 (word q of each row)
        unsigned c[4];                // column 4q + k, rows 4b .. 4b + 3: out word (4q + k) kN / 4 + b
        transpose_bytes_4x4(xw[4 * b][q], xw[4 * b + 1][q], xw[4 * b + 2][q], xw[4 * b + 3][q], c[0], c[1], c[2],
                            c[3]);
#pragma unroll
        for (int k = 0; k < 4; ++k) yw[(4 * q + k) * (kN / 4) + b] = c[k];
      }
  } else {
#pragma unroll
    for (int w = 0; w < kQ * kN; ++w) {
      unsigned half[2];  // out bytes 4w, 4w + 1 and 4w + 2, 4w + 3 in their low bytes
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int e0 = 4 * w + 2 * h, e1 = e0 + 1;  // out byte e: column e / kN of row e % kN
        const int t0 = e0 / kN, t1 = e1 / kN;
        half[h] = __byte_perm(xw[e0 % kN][t0 >> 2], xw[e1 % kN][t1 >> 2], (t0 & 3) | ((4 + (t1 & 3)) << 4));
      }
      yw[w] = __byte_perm(half[0], half[1], 0x5410);
    }
  }
}

/// The 16 kN bytes of 16 columns of kN rows in output (interleaved) order: x[i] holds bytes
/// t = 0 .. 15 of row i; byte t kN + i of y (vector (t kN + i) / 16) gets x[i]'s byte t
/// (interleave_row_words).
template <int kN>
__device__ __forceinline__ void interleave_rows(const uint4 (&x)[kN], uint4 (&y)[kN]) {
  unsigned xw[kN][4];
#pragma unroll
  for (int i = 0; i < kN; ++i) xw[i][0] = x[i].x, xw[i][1] = x[i].y, xw[i][2] = x[i].z, xw[i][3] = x[i].w;
  unsigned yw[4 * kN];
  interleave_row_words<kN, 4>(xw, yw);
#pragma unroll
  for (int s = 0; s < kN; ++s) y[s] = make_uint4(yw[4 * s], yw[4 * s + 1], yw[4 * s + 2], yw[4 * s + 3]);
}

/// The inverse of interleave_rows: x holds 16 rows of kN bytes (byte t kN + i: row t, column
/// i); y[i] gets column i's 16 bytes.
template <int kN>
__device__ __forceinline__ void deinterleave_cols(const uint4 (&x)[kN], uint4 (&y)[kN]) {
  unsigned xw[4 * kN];
#pragma unroll
  for (int s = 0; s < kN; ++s) xw[4 * s] = x[s].x, xw[4 * s + 1] = x[s].y, xw[4 * s + 2] = x[s].z, xw[4 * s + 3] = x[s].w;
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    unsigned yw[4];
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      unsigned v = 0;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int e = (4 * w + q) * kN + i;
        v |= ((xw[e >> 2] >> (8 * (e & 3))) & 0xffu) << (8 * q);
      }
      yw[w] = v;
    }
    y[i] = make_uint4(yw[0], yw[1], yw[2], yw[3]);
  }
}

/// Warps a block of the few-rows / few-columns byte kernels.
inline constexpr int kFewBytesWarps = 4;

/// The transpose of kN rows of bytes (an interleave) at any alignment of in and ld, moving
/// 16-byte vectors: out (dense, cols x kN, aligned to 16) holds out[j kN + i] = in[i ld + j].
/// Warp q takes columns [496 q, 496 q + 496): for each row, the 32 aligned vectors that cover
/// them (bytes past the matrix's last one not read), shifted into place with a neighbour's
/// (shuffle, bytes_from); lane L < 31 then holds 16 columns of every row, interleaves them into
/// kN vectors of out (whose run starts 496 q kN bytes into out: on a vector), and the warp
/// stores its run through shared memory as consecutive vectors (the run's last partial vector
/// byte-exact).
template <int kN>
__global__ void __launch_bounds__(32 * kFewBytesWarps, 1)
transpose_few_rows_bytes_kernel(const unsigned char* __restrict__ in, Index ld, unsigned char* __restrict__ out,
                                Index cols) {
  static_assert(kN >= 2 && kN <= 16, "transpose_few_rows_bytes_kernel: 2 to 16 rows");
  __shared__ uint4 stage_smem[kFewBytesWarps][stage_vectors(32 * kN)];  // a warp's run (stage_slot)
  const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
  const Index j0 = (blockIdx.x * static_cast<Index>(kFewBytesWarps) + warp) * 496;
  if (j0 >= cols) return;  // the whole warp
  const unsigned char* in_end = in + (kN - 1) * ld + cols;  // past the last element

  uint4 raw[kN];
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    const unsigned char* first = in + i * ld + j0;
    const int m = static_cast<int>(reinterpret_cast<std::uintptr_t>(first) & 15u);
    const unsigned char* p = first - m + 16 * lane;
    const bool needed = p < in + i * ld + cols && (lane < 31 || m != 0);  // vector 31: only unaligned
    raw[i] = needed ? load_vec_before(p, in_end) : make_uint4(0u, 0u, 0u, 0u);
  }
  uint4 x[kN];
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    const int m = static_cast<int>(reinterpret_cast<std::uintptr_t>(in + i * ld + j0) & 15u);
    x[i] = bytes_from(raw[i], shfl_down_vec(raw[i], 32), m);  // lane 31's: not used
  }
  uint4 y[kN];
  interleave_rows<kN>(x, y);
  uint4* stage = stage_smem[warp];
  if (lane < 31) {
#pragma unroll
    for (int s = 0; s < kN; ++s) stage[stage_slot<kN>(lane * kN + s)] = y[s];
  }
  __syncwarp();
  const int valid = static_cast<int>((cols - j0 < 496 ? cols - j0 : 496) * kN);  // bytes of the run
  unsigned char* run = out + j0 * kN;
#pragma unroll
  for (int s = 0; s < kN; ++s) {
    const int idx = lane + 32 * s;
    if (idx < 31 * kN && 16 * idx < valid) store_vec_bytes(run + 16 * idx, stage[stage_slot<kN>(idx)], 0, valid - 16 * idx);
  }
}

/// Warps a block of transpose_few_rows_regs_kernel.
inline constexpr int kFewRowsRegsWarps = 2;  // ~190 registers a thread at 16 rows: 5 blocks an SM

/// The transpose of kN rows of bytes (an interleave, 2 <= kN <= 16) at any alignment of in and
/// ld, in registers, no shared memory: out (dense, cols x kN, aligned to 16) holds out[j kN + i]
/// = in[i ld + j]. Thread g takes columns [16 g, 16 g + 16): of each row the aligned vector under
/// them, shifted into place with its neighbour's where the row is off its vector (shuffle, lane
/// 31 loads the warp's 33rd vector itself, so every lane's 16 columns are whole; bytes past the
/// matrix's last one not read), interleaved by byte permutes into its output run, out bytes
/// [16 g kN, 16 (g + 1) kN): kN vectors on a vector whatever kN, stored whole but at the
/// matrix's end. kPairs (even kN): lanes 2p and 2p + 1 trade one vector each before every two
/// stores, so that a store writes their runs' vectors s, s + 1 side by side as whole 32-byte
/// sectors (else a warp's store writes 32 half sectors 16 kN bytes apart). kLaneExt: lane i < kN
/// loads row i's vector 32 and shuffles it to lane 31, instead of every lane keeping a vector of
/// every row for lane 31 (4 kN registers; ptxas, sm_90, 16 rows: 96 registers a thread against
/// 168, 12 rows 80 against 128, 9 rows 66 against 117).
template <int kN, bool kPairs, bool kLaneExt = false>
__global__ void __launch_bounds__(32 * kFewRowsRegsWarps)
transpose_few_rows_regs_kernel(const unsigned char* __restrict__ in, Index ld, unsigned char* __restrict__ out,
                               Index cols) {
  static_assert(kN >= 2 && kN <= 16, "transpose_few_rows_regs_kernel: 2 to 16 rows");
  static_assert(!kPairs || kN % 2 == 0, "transpose_few_rows_regs_kernel: pairs trade vectors two at a time");
  const int lane = static_cast<int>(threadIdx.x & 31);
  const Index j0 = (blockIdx.x * static_cast<Index>(blockDim.x) + threadIdx.x - lane) * 16;  // the warp's columns
  if (j0 >= cols) return;  // the whole warp
  const unsigned char* in_end = in + (kN - 1) * ld + cols;  // past the last element

  // ext: lane 31's vector 32 of a row off its vector; kLaneExt: lane i's ext[0] that of row i.
  uint4 raw[kN], ext[kLaneExt ? 1 : kN];
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    const unsigned char* row = in + i * ld;
    const int m = static_cast<int>(reinterpret_cast<std::uintptr_t>(row + j0) & 15u);
    const unsigned char* p = row + j0 - m + 16 * lane;
    raw[i] = p < row + cols ? load_vec_before(p, in_end) : make_uint4(0u, 0u, 0u, 0u);
    if constexpr (!kLaneExt) {
      const unsigned char* p32 = row + j0 - m + 512;
      ext[i] = lane == 31 && m != 0 && p32 < row + cols ? load_vec_before(p32, in_end) : make_uint4(0u, 0u, 0u, 0u);
    }
  }
  if constexpr (kLaneExt) {
    const unsigned char* row = in + (lane < kN ? lane : 0) * ld;
    const int m = static_cast<int>(reinterpret_cast<std::uintptr_t>(row + j0) & 15u);
    const unsigned char* p32 = row + j0 - m + 512;
    ext[0] = lane < kN && m != 0 && p32 < row + cols ? load_vec_before(p32, in_end) : make_uint4(0u, 0u, 0u, 0u);
  }
  uint4 x[kN];
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    const int m = static_cast<int>(reinterpret_cast<std::uintptr_t>(in + i * ld + j0) & 15u);
    if (m == 0) {  // the same for the whole warp
      x[i] = raw[i];
    } else {
      const uint4 next = shfl_down_vec(raw[i], 32);
      if constexpr (kLaneExt) {
        const uint4 e = shfl_vec(ext[0], i);
        x[i] = bytes_from(raw[i], lane == 31 ? e : next, m);
      } else {
        x[i] = bytes_from(raw[i], lane == 31 ? ext[i] : next, m);
      }
    }
  }
  uint4 y[kN];
  interleave_rows<kN>(x, y);

  unsigned char* run = out + j0 * kN;  // the warp's run: lane L's vectors L kN .. L kN + kN - 1
  const int valid = static_cast<int>((cols - j0 < 512 ? cols - j0 : 512) * kN);  // bytes of the run
  if constexpr (kPairs) {
    // Vectors s, s + 1 of the pair's two runs: the even lane keeps its y[s] and gets the odd
    // one's; the odd lane keeps its y[s + 1] and gets the even one's.
    // (Selects by component: a select of two vectors by reference went through local memory.)
    const bool odd = (lane & 1) != 0;
    const int v0 = (lane & ~1) * kN + (lane & 1);  // vector s + v0 of the warp's run: the even lane's run
#pragma unroll
    for (int s = 0; s < kN; s += 2) {
      const uint4 got = shfl_pair_vec(select_vec(odd, y[s], y[s + 1]));
      const int v = v0 + s;
      store_vec_bytes(run + 16 * v, select_vec(odd, got, y[s]), 0, valid - 16 * v);
      store_vec_bytes(run + 16 * (v + kN), select_vec(odd, y[s + 1], got), 0, valid - 16 * (v + kN));
    }
  } else {
#pragma unroll
    for (int s = 0; s < kN; ++s) {
      const int v = lane * kN + s;
      store_vec_bytes(run + 16 * v, y[s], 0, valid - 16 * v);
    }
  }
}

/// The aligned 8-byte word at p (p < end) as two 32-bit words; its bytes from `end` on are
/// neither read nor used (read as 0), as load_vec_before.
__device__ __forceinline__ void load_word8_before(const unsigned char* p, const unsigned char* end, unsigned& w0,
                                                  unsigned& w1) {
  if (end - p >= 8) {
    const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
    w0 = v.x, w1 = v.y;
    return;
  }
  const Index n0 = end - p, n1 = n0 - 4;
  w0 = load_word_bytes(p, 0, n0 < 4 ? static_cast<int>(n0) : 4);
  w1 = n1 <= 0 ? 0u : load_word_bytes(p + 4, 0, static_cast<int>(n1));
}

/// Bytes [m, m + 8) of the 16 bytes lo0 lo1 hi0 hi1 (0 <= m < 8, the same across a warp): a
/// word select by m / 4, funnel shifts by m % 4 (bytes_from on 8-byte words).
__device__ __forceinline__ void bytes_from8(unsigned lo0, unsigned lo1, unsigned hi0, unsigned hi1, int m,
                                            unsigned& w0, unsigned& w1) {
  const bool q = m >= 4;
  const int s = 8 * (m & 3);
  const unsigned r0 = q ? lo1 : lo0, r1 = q ? hi0 : lo1, r2 = q ? hi1 : hi0;
  w0 = __funnelshift_r(r0, r1, s);
  w1 = __funnelshift_r(r1, r2, s);
}

/// Warps a block of transpose_few_rows_half_kernel: 4 (at 72 registers a thread, 16 rows, 7
/// blocks an SM: 28 warps of 64; blocks of 2 warps would fit 14, the same 28).
inline constexpr int kFewRowsHalfWarps = 4;

/// transpose_few_rows_regs_kernel on 8 columns a thread instead of 16, for the row counts where
/// that one runs out of warps (H200, 16 x 2^24 bytes: 168 registers a thread, 18.75% occupancy,
/// DRAM 44%, 14.3 cycles an issued instruction, 0.633 of a copy; 8 rows, 96 registers: 0.925).
/// out (dense, cols x kN, aligned to 16) holds out[j kN + i] = in[i ld + j], at any alignment of
/// in and ld, 2 <= kN <= 16. Lane L of a warp takes columns [8 L, 8 L + 8) of its 256: of each
/// row the aligned 8-byte word under them, shifted into place with its neighbour's (shuffle)
/// where the row is off its 8 bytes. The warp's 33rd word of row i (lane 31's neighbour) is
/// loaded by lane i and shuffled to lane 31 (one word pair a lane, where
/// transpose_few_rows_regs_kernel keeps a vector of every row in every lane for lane 31: 4 kN
/// registers). The 8 columns are interleaved by byte permutes into the lane's 8 kN output bytes
/// (2 kN words); lanes 2p and 2p + 1 hold the 16 kN bytes [16 kN p, 16 kN (p + 1)) of the warp's
/// run, kN vectors on a vector whatever kN (odd kN: the odd lane's bytes start half a vector in),
/// and store them as whole vectors, the even lane vector 2t of the pair's run and the odd lane
/// vector 2t + 1 (each word it does not hold from the other lane by shuffle), so that each
/// store writes the pair's 32 adjacent bytes. Registers a thread (sm_90, ptxas): 48 at 9 rows,
/// 56 at 12, 72 at 16, against transpose_few_rows_regs_kernel's 117, 128 and 168 (the default with
/// kStage: kTransposeFewRowsHalfMax, dispatch/transpose.cuh).
/// kStage: the warp stores its run through shared memory instead (each lane's 8 kN bytes as kN
/// 8-byte words at 8 kN L, then the run as consecutive vectors, 32 a store: whole 128-byte
/// lines). Where kN is odd, a pair's 16 kN bytes start half a vector into a 32-byte sector for
/// every other pair, so the pair stores write two half sectors where even counts write one whole
/// (9-15 rows measured 0.57-0.59 of a copy against 0.91-0.96 for even counts, run T6).
template <int kN, bool kStage = false>
__global__ void __launch_bounds__(32 * kFewRowsHalfWarps)
transpose_few_rows_half_kernel(const unsigned char* __restrict__ in, Index ld, unsigned char* __restrict__ out,
                               Index cols) {
  static_assert(kN >= 2 && kN <= 16, "transpose_few_rows_half_kernel: 2 to 16 rows");
  constexpr int kWords = 2 * kN;  // output words a lane
  const int lane = static_cast<int>(threadIdx.x & 31);
  const Index j0 = (blockIdx.x * static_cast<Index>(blockDim.x) + threadIdx.x - lane) * 8;  // the warp's columns
  if (j0 >= cols) return;  // the whole warp
  const unsigned char* in_end = in + (kN - 1) * ld + cols;  // past the last element

  unsigned raw[kN][2];  // the aligned word under the lane's columns, of each row
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    const unsigned char* row = in + i * ld;
    const int m = static_cast<int>(reinterpret_cast<std::uintptr_t>(row + j0) & 7u);
    const unsigned char* p = row + j0 - m + 8 * lane;
    raw[i][0] = raw[i][1] = 0u;
    if (p < row + cols) load_word8_before(p, in_end, raw[i][0], raw[i][1]);
  }
  unsigned ext[2] = {0u, 0u};  // lane i < kN: word 32 of row i, where the row is off its word
  if (lane < kN) {
    const unsigned char* row = in + lane * ld;
    const int m = static_cast<int>(reinterpret_cast<std::uintptr_t>(row + j0) & 7u);
    const unsigned char* p32 = row + j0 - m + 256;
    if (m != 0 && p32 < row + cols) load_word8_before(p32, in_end, ext[0], ext[1]);
  }
  unsigned x[kN][2];  // columns [8 L, 8 L + 8) of each row
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    const int m = static_cast<int>(reinterpret_cast<std::uintptr_t>(in + i * ld + j0) & 7u);
    if (m == 0) {  // the same for the whole warp
      x[i][0] = raw[i][0], x[i][1] = raw[i][1];
    } else {
      const unsigned n0 = __shfl_down_sync(0xffffffffu, raw[i][0], 1), n1 = __shfl_down_sync(0xffffffffu, raw[i][1], 1);
      const unsigned e0 = __shfl_sync(0xffffffffu, ext[0], i), e1 = __shfl_sync(0xffffffffu, ext[1], i);
      bytes_from8(raw[i][0], raw[i][1], lane == 31 ? e0 : n0, lane == 31 ? e1 : n1, m, x[i][0], x[i][1]);
    }
  }
  unsigned y[kWords];  // bytes [8 kN L, 8 kN (L + 1)) of the warp's run
  interleave_row_words<kN, 2>(x, y);

  if constexpr (kStage) {
    // Lane L writes its kN 8-byte words from word kN L: at odd kN no two lanes of a half warp
    // share a bank (two wavefronts a store, the least 256 bytes take), at kN = 2 mod 4 two do.
    // At kN = 4, 8 and 16 the stride would put 4, 8 or 16 lanes on one bank, so vector v is kept
    // at v ^ ((v >> 3) & 7) (a permutation within each 128 bytes: the reads of 32 consecutive
    // vectors stay whole lines; the writes of a half warp two lanes a bank).
    constexpr bool kSwizzle = kN == 4 || kN == 8 || kN == 16;
    const auto at = [](int v) { return kSwizzle ? v ^ ((v >> 3) & 7) : v; };
    __shared__ uint4 stage_smem[kFewRowsHalfWarps][16 * kN];  // a warp's run: 256 kN bytes
    const int warp = static_cast<int>(threadIdx.x >> 5);
    auto* words = reinterpret_cast<uint2*>(stage_smem[warp]);
#pragma unroll
    for (int w = 0; w < kN; ++w) {
      const int q = kN * lane + w;  // the word's place in the run
      words[2 * at(q >> 1) + (q & 1)] = make_uint2(y[2 * w], y[2 * w + 1]);
    }
    __syncwarp();
    unsigned char* run = out + j0 * kN;  // on a vector (out is, and j0 kN is a multiple of 256)
    const int valid = static_cast<int>((cols - j0 < 256 ? cols - j0 : 256) * kN);  // bytes of the run
#pragma unroll
    for (int s = 0; s < (kN + 1) / 2; ++s) {
      const int v = lane + 32 * s;
      if (v < 16 * kN && 16 * v < valid) store_vec_bytes(run + 16 * v, stage_smem[warp][at(v)], 0, valid - 16 * v);
    }
    return;
  }
  // Pair run word w (0 <= w < 4 kN): the even lane's y[w] below 2 kN, the odd lane's y[w - 2 kN]
  // from there. Store t writes the pair's vectors 2t (even lane) and 2t + 1 (odd lane).
  const bool odd = (lane & 1) != 0;
  const int pair_off = (lane >> 1) * 16 * kN;  // the pair's run in the warp's, bytes
  unsigned char* run = out + j0 * kN + pair_off;
  const int valid = static_cast<int>((cols - j0 < 256 ? cols - j0 : 256) * kN) - pair_off;  // bytes of the pair's run
#pragma unroll
  for (int t = 0; t < (kN + 1) / 2; ++t) {
    unsigned w[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int we = 8 * t + k, wo = 8 * t + 4 + k;  // the word each lane stores, in the pair's run
      const bool even_needs = we >= kWords, odd_needs = wo < kWords;  // from the other lane
      unsigned got = 0u;
      if (even_needs || odd_needs) {
        const unsigned give = odd ? (even_needs ? y[we - kWords] : 0u) : (odd_needs ? y[wo] : 0u);
        got = __shfl_sync(0xffffffffu, give, lane ^ 1);
      }
      const unsigned we_val = even_needs ? got : y[we];
      const unsigned wo_val = odd_needs ? got : (wo - kWords < kWords ? y[wo - kWords] : 0u);
      w[k] = odd ? wo_val : we_val;
    }
    const int v = 2 * t + (odd ? 1 : 0);  // the vector of the pair's run this lane stores
    if (v < kN) store_vec_bytes(run + 16 * v, make_uint4(w[0], w[1], w[2], w[3]), 0, valid - 16 * v);
  }
}

/// The transpose of kN dense columns of bytes (a de-interleave; ld == kN, in aligned to 16):
/// out (cols x rows, dense, any alignment of its rows) holds out[i rows + r] = in[r kN + i].
/// Warp q takes rows [512 q, 512 q + 512), 512 kN contiguous bytes read as aligned vectors into
/// shared memory; lane L takes rows 512 q + 16 L ... + 15, de-interleaves them into one vector
/// of each output row, and for each output row the warp joins each lane's vector to its lower
/// neighbour's (shuffle, bytes_from) into the aligned vectors of out that they cover, stored
/// whole inside the run and byte-exact at its two ends. kMinBlocks: the blocks of 4 warps an SM
/// is to hold (__launch_bounds__); at 1, ptxas gives 16 columns 188 registers (2 blocks, 8 warps
/// an SM), at 4 128 without spills (the "-o4" trials: more loads in flight for the H200's faster
/// memory).
template <int kN, int kMinBlocks = 1>
__global__ void __launch_bounds__(32 * kFewBytesWarps, kMinBlocks)
transpose_few_cols_bytes_kernel(const unsigned char* __restrict__ in, unsigned char* __restrict__ out, Index rows) {
  static_assert(kN >= 2 && kN <= 16, "transpose_few_cols_bytes_kernel: 2 to 16 columns");
  __shared__ uint4 stage_smem[kFewBytesWarps][stage_vectors(32 * kN)];  // a warp's rows (stage_slot)
  const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
  const Index r0 = (blockIdx.x * static_cast<Index>(kFewBytesWarps) + warp) * 512;
  if (r0 >= rows) return;  // the whole warp
  const unsigned char* in_end = in + rows * kN;
  const unsigned char* chunk = in + r0 * kN;  // on a vector

  uint4 v[kN];
#pragma unroll
  for (int s = 0; s < kN; ++s) {
    const unsigned char* p = chunk + 16 * (lane + 32 * s);
    v[s] = p < in_end ? load_vec_before(p, in_end) : make_uint4(0u, 0u, 0u, 0u);
  }
  uint4* stage = stage_smem[warp];
#pragma unroll
  for (int s = 0; s < kN; ++s) stage[stage_slot<kN>(lane + 32 * s)] = v[s];
  __syncwarp();
  uint4 x[kN], y[kN];
#pragma unroll
  for (int s = 0; s < kN; ++s) x[s] = stage[stage_slot<kN>(lane * kN + s)];
  deinterleave_cols<kN>(x, y);

  const int valid = static_cast<int>(rows - r0 < 512 ? rows - r0 : 512);  // bytes of each output run
#pragma unroll
  for (int i = 0; i < kN; ++i) warp_store_vec_run(out + i * rows + r0, y[i], valid);
}

/// The kL element columns of 16 kL bytes of rows (16 / sizeof(T) rows of kL elements) as one
/// vector each: y[i] holds element i of each row. Bytes: deinterleave_cols.
template <class T, int kL>
__device__ __forceinline__ void deinterleave_elems(const uint4 (&x)[kL], uint4 (&y)[kL]) {
  if constexpr (sizeof(T) == 1) {
    deinterleave_cols<kL>(x, y);
  } else if constexpr (sizeof(T) == 4) {
    unsigned xw[4 * kL];
#pragma unroll
    for (int s = 0; s < kL; ++s) xw[4 * s] = x[s].x, xw[4 * s + 1] = x[s].y, xw[4 * s + 2] = x[s].z, xw[4 * s + 3] = x[s].w;
#pragma unroll
    for (int i = 0; i < kL; ++i) y[i] = make_uint4(xw[i], xw[kL + i], xw[2 * kL + i], xw[3 * kL + i]);
  } else {
    static_assert(sizeof(T) == 8, "deinterleave_elems: 1-, 4- or 8-byte elements");
    unsigned xw[4 * kL];  // element e: words 2e, 2e + 1
#pragma unroll
    for (int s = 0; s < kL; ++s) xw[4 * s] = x[s].x, xw[4 * s + 1] = x[s].y, xw[4 * s + 2] = x[s].z, xw[4 * s + 3] = x[s].w;
#pragma unroll
    for (int i = 0; i < kL; ++i) y[i] = make_uint4(xw[2 * i], xw[2 * i + 1], xw[2 * (kL + i)], xw[2 * (kL + i) + 1]);
  }
}

/// The transpose of few columns through a stride of kL elements: out (cols x rows, dense, any
/// alignment of its rows, of T) holds out[i rows + r] = in[r kL + i], cols <= kL, at any
/// alignment of in (a window of a matrix kL elements wide, or a dense matrix, kL == cols, off
/// its vector). The rows are de-interleaved as one span, the gaps between them included (they
/// lie between the matrix's first and last elements): warp q takes rows [kWarpRows q, kWarpRows
/// (q + 1)) (kWarpRows = 512 / sizeof(T): 512 bytes of each output row), whose 512 kL bytes
/// start m = in mod 16 bytes into a vector (the same for every warp), read as the 32 kL + 1
/// aligned vectors that cover them into shared memory (bytes past the matrix's last element not
/// read: load_vec_before); lane L takes the 16 / sizeof(T) rows from kWarpRows q + 16 L /
/// sizeof(T): its kL + 1 vectors shifted by m (bytes_from) into their 16 kL bytes,
/// de-interleaved into one vector of each of the kL columns (deinterleave_elems), of which the
/// warp stores the first cols (warp_store_vec_run: aligned vectors of out, whole inside a run,
/// byte-exact at its two ends). kMinBlocks as transpose_few_cols_bytes_kernel's: at 1, 142
/// registers for f32 and 146 for bytes at kL = 16 (3 blocks an SM), at 4 128 (24 bytes of
/// spills for bytes).
template <class T, int kL, int kMinBlocks = 1>
__global__ void __launch_bounds__(32 * kFewBytesWarps, kMinBlocks)
transpose_few_cols_span_kernel(const T* __restrict__ in_t, T* __restrict__ out_t, Index rows, int cols) {
  static_assert(kL >= 2 && kL <= 16, "transpose_few_cols_span_kernel: strides of 2 to 16 elements");
  constexpr Index kSize = sizeof(T), kWarpRows = 512 / kSize;
  constexpr int kVecs = 32 * kL + 1;  // vectors of a warp's span
  __shared__ uint4 stage_smem[kFewBytesWarps][stage_vectors(kVecs)];  // a warp's span (stage_slot)
  const auto* in = reinterpret_cast<const unsigned char*>(in_t);
  auto* out = reinterpret_cast<unsigned char*>(out_t);
  const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
  const Index r0 = (blockIdx.x * static_cast<Index>(kFewBytesWarps) + warp) * kWarpRows;
  if (r0 >= rows) return;  // the whole warp
  const unsigned char* in_end = in + ((rows - 1) * kL + cols) * kSize;  // past the last element
  const int m = static_cast<int>(reinterpret_cast<std::uintptr_t>(in) & 15u);
  const unsigned char* span = in + r0 * kL * kSize - m;  // on a vector

  uint4 v[kL + 1];  // vectors lane + 32 s of the span (s = kL: lane 0 alone)
#pragma unroll
  for (int s = 0; s <= kL; ++s) {
    const int idx = lane + 32 * s;
    const unsigned char* p = span + 16 * idx;
    v[s] = idx < kVecs && p < in_end ? load_vec_before(p, in_end) : make_uint4(0u, 0u, 0u, 0u);
  }
  uint4* stage = stage_smem[warp];
#pragma unroll
  for (int s = 0; s <= kL; ++s)
    if (lane + 32 * s < kVecs) stage[stage_slot<kL>(lane + 32 * s)] = v[s];
  __syncwarp();
#pragma unroll
  for (int s = 0; s <= kL; ++s) v[s] = stage[stage_slot<kL>(lane * kL + s)];  // lane kL + kL <= 32 kL
  uint4 x[kL], y[kL];
#pragma unroll
  for (int s = 0; s < kL; ++s) x[s] = bytes_from(v[s], v[s + 1], m);  // m == 0: v[s]
  deinterleave_elems<T, kL>(x, y);

  const int valid = static_cast<int>((rows - r0 < kWarpRows ? rows - r0 : kWarpRows) * kSize);  // bytes of each run
#pragma unroll
  for (int i = 0; i < kL; ++i) {
    if (i >= cols) break;  // the same for the whole warp
    warp_store_vec_run(out + (i * rows + r0) * kSize, y[i], valid);
  }
}
}  // namespace devmat::detail

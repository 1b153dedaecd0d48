// Transpose through a swizzled shared-memory tile, moving whole words: a word is W adjacent
// elements of a row (W * sizeof(T) = 4, 8 or 16 bytes), each thread loads W x W sub-blocks as
// W words, transposes them in registers (__byte_perm for bytes) and stores them as W words of
// the output. Bytes are moved as 4-byte words whatever the alignment of the rows: a warp reads
// the aligned words that cover its 128-byte run of a row and shifts them into place with
// __funnelshift (warp_read_run + warp_align_run, warp_store_run), so odd strides and ragged edges
// stay on the word path. A matrix with a few rows or a few columns (an interleave or de-interleave)
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

/// Whether transpose_kernel<T, W, ..., true> can move words at any alignment (bytes in 4-byte
/// words, through warp_read_run / warp_store_run).
template <class T, int W>
inline constexpr bool kTransposeCanRealign = sizeof(T) == 1 && W == 4;

/// Transposes the rows x cols row-major `in` (ld elements between row starts) into the dense
/// cols x rows `out`. Block b handles tile (b / tiles_c, b % tiles_c), or with `down` tile
/// (b % tiles_r, b / tiles_r): consecutive blocks then write consecutive runs of the same output
/// rows, so the partial sectors where their runs meet are completed while still in L2. Without
/// Realign, requires rows, cols and ld multiples of W and both pointers aligned to a word, so
/// every word lies wholly inside or wholly outside the matrix; with it (bytes in 4-byte words
/// only), any shape, stride and alignment, at the cost of more registers (the aligned shapes keep
/// the plain kernel). With one-element words (W == 1, no Realign), the tile grid may start
/// c_shift (< a tile) columns left of column 0: tile column t covers input columns
/// [t * kTile - c_shift, (t + 1) * kTile - c_shift), so that rows whose starts share an offset
/// inside a sector read whole sectors; columns outside [0, cols) are neither read nor written.
///
/// Sub-block (a, b) of a tile is rows [a*W, a*W+W) and word column b. Its transposed words
/// go to shared row b*W + j (an output row of the tile), word column a ^ b: the XOR swizzle
/// puts the 32 words that a warp stores (b = lane, a fixed) and the 32 words it loads (one
/// shared row, 32 consecutive word columns) in 32 different banks (or, for 8- and 16-byte
/// words, in different banks within each half- or quarter-warp), with no padding.
template <class T, int W, int TW, int BY, bool Realign = false>
__global__ void __launch_bounds__(32 * BY)
transpose_kernel(const T* __restrict__ in, Index ld, T* __restrict__ out, Index rows, Index cols, Index tiles_r,
                 Index tiles_c, bool down, Index c_shift) {
  static_assert((TW == 32 || TW == 64) && TW % BY == 0, "transpose_kernel: TW is 32 or 64 words, BY divides it");
  using Word = typename RawWord<W * sizeof(T)>::type;
  constexpr int kTile = TW * W;
  constexpr int kBX = TW / 32;  // word columns per lane
  constexpr int kAY = TW / BY;  // sub-block rows per warp row
  extern __shared__ uint4 transpose_smem[];  // dynamic: tiles may pass 48 KiB
  auto& tile_smem = *reinterpret_cast<Word(*)[kTile][TW]>(transpose_smem);  // (out rows, out word cols), swizzled

  static_assert(!Realign || kTransposeCanRealign<T, W>, "transpose_kernel: only 4-byte words of bytes realign");
  constexpr bool kRealign = Realign;
  const Index tile_r = down ? blockIdx.x % tiles_r : blockIdx.x / tiles_c;
  const Index tile_c = down ? blockIdx.x / tiles_r : blockIdx.x % tiles_c;
  const Index r0 = tile_r * kTile, c0 = tile_c * kTile - c_shift;  // c_shift: 0 unless W == 1
  const Index in_words = cols / W, out_words = rows / W;  // words per row of in and out
  const Index ld_words = ld / W;                            // between row starts of in
  const Word* in_w = reinterpret_cast<const Word*>(in);
  Word* out_w = reinterpret_cast<Word*>(out);
  const int tx = threadIdx.x, ty = threadIdx.y;

  // Load: each warp reads whole rows of word columns, all loads issued before any store (and,
  // for realigned bytes, before the first shuffle).
  Word x_reg[kAY][kBX][W];  // (sub-block row, word column, row within sub-block)
  if constexpr (kRealign) {
    RunWords raw[kAY][kBX][W];
#pragma unroll
    for (int k = 0; k < kAY; ++k)
#pragma unroll
      for (int bx = 0; bx < kBX; ++bx)
#pragma unroll
        for (int i = 0; i < W; ++i) {
          const Index r = r0 + (ty + BY * k) * W + i;  // the same for the whole warp
          const auto* row = reinterpret_cast<const unsigned char*>(in + r * ld);
          raw[k][bx][i] = r < rows ? warp_read_run(row, c0 + 128 * bx, cols) : RunWords{0u, 0u};
        }
#pragma unroll
    for (int k = 0; k < kAY; ++k)
#pragma unroll
      for (int bx = 0; bx < kBX; ++bx)
#pragma unroll
        for (int i = 0; i < W; ++i) {
          const Index r = r0 + (ty + BY * k) * W + i;
          const auto* row = reinterpret_cast<const unsigned char*>(in + r * ld);
          x_reg[k][bx][i] = r < rows ? warp_align_run(raw[k][bx][i], row, c0 + 128 * bx) : 0u;
        }
  } else {
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
          warp_store_run(reinterpret_cast<unsigned char*>(out + out_r * rows), r0 + 128 * bx, rows,
                         tile_smem[o][oc ^ (o / W)]);
      } else if (out_r >= 0 && out_r < cols && out_wc < out_words) {
        out_w[out_r * out_words + out_wc] = tile_smem[o][oc ^ (o / W)];
      }
    }
}

/// A tile whose output windows start on 32-byte sectors (transpose_sector_kernel): kRows input
/// rows (the output window of each output row, a multiple of a sector) by kCols input columns.
/// Bytes move as 4-byte words (kE = 4 elements a word), other types one element a word.
template <class T, int kRowsV, int kColsV, int kThreadsV = 256>
struct SectorTile {
  static_assert(sizeof(T) == 1 || sizeof(T) == 4 || sizeof(T) == 8, "SectorTile: 1-, 4- or 8-byte elements");
  static constexpr int kRows = kRowsV, kCols = kColsV, kThreads = kThreadsV;
  static constexpr int kE = sizeof(T) == 1 ? 4 : 1;                   // elements per word
  static constexpr int kLead = 32 / static_cast<int>(sizeof(T));      // elements of a sector
  static_assert(kRows % kLead == 0 && kCols % kE == 0 && kRows >= kLead, "SectorTile: whole sectors and words");
  static constexpr int kLoadRows = kRows + kLead;                     // shared rows: a sector's lead, then the tile
  static constexpr int kPitch = kCols / kE + 1;                       // words a shared row: one spare (realignment, banks)
  static constexpr int kSmemWords = kLoadRows * kPitch + (kE == 4 ? kLoadRows / 4 : 0);  // + the byte skew
  static constexpr int kWordBytes = kE * static_cast<int>(sizeof(T));
  static constexpr int kSmemBytes = kSmemWords * kWordBytes;
};

/// Word index of shared row R, word k of a SectorTile: bytes skew every fourth row by a word, so
/// the 32 rows 4p + j that a warp reads (lanes p) fall in 32 banks ((4 * kPitch + 1) is odd).
template <class Tile>
__device__ __forceinline__ int sector_tile_word(int R, int k) {
  return R * Tile::kPitch + k + (Tile::kE == 4 ? R >> 2 : 0);
}

/// Transposes the rows x cols row-major `in` (ld elements between row starts; any alignment,
/// stride and shape) into the dense cols x rows `out`, so that every 32-byte sector of `out` is
/// written whole by one block (but the first and last of an output row): block (t, tc) writes,
/// for output row c (input column c0 + o), the window of input rows [t * kRows - s_c,
/// (t + 1) * kRows - s_c), where s_c (elements) puts the window's start on a sector of out; the
/// windows of t = 0, 1, ... tile each output row (tiles_r = ceil((rows + kLead - 1) / kRows)).
/// Partial sectors written by two blocks at different times cost the memory a read-modify-write;
/// the one-element tile on unaligned shapes writes two per 64-element run.
///
/// The block reads input rows [t * kRows - kLead, (t + 1) * kRows) (the lead: the windows
/// reach up to a sector before t * kRows) into shared memory as aligned words: for bytes, the
/// aligned 4-byte words that cover the row's bytes [c0, c0 + kCols), whatever the row's
/// alignment m (word k holds columns c0 - m + 4k ...), kept as loaded, with no shifting; bytes
/// outside the row ([0, cols)) are neither read nor used. Each output word then gathers its four
/// bytes from four shared rows at byte m_row + o. Block b is tile (b % tiles_r, b / tiles_r) with
/// `down`, else (b / tiles_c, b % tiles_c). `lead` (0 ... kLead) bounds every output row's s_c
/// (s_c <= lead): only the last `lead` rows of the lead are read (none where every output row
/// starts on a sector).
template <class T, class Tile>
__global__ void __launch_bounds__(Tile::kThreads)
transpose_sector_kernel(const T* __restrict__ in, Index ld, T* __restrict__ out, Index rows, Index cols, Index tiles_r,
                        Index tiles_c, bool down, int lead) {
  constexpr int kE = Tile::kE, kLead = Tile::kLead, kPitch = Tile::kPitch, kThreads = Tile::kThreads;
  constexpr int kRows = Tile::kRows, kCols = Tile::kCols;
  using Word = typename RawWord<Tile::kWordBytes>::type;
  extern __shared__ uint4 transpose_smem[];
  Word* tile_smem = reinterpret_cast<Word*>(transpose_smem);  // (kLoadRows, kPitch) words, skewed
  const Index t = down ? blockIdx.x % tiles_r : blockIdx.x / tiles_c;
  const Index tc = down ? blockIdx.x / tiles_r : blockIdx.x % tiles_c;
  const Index r_first = t * kRows - kLead;  // the input row of shared row 0
  const Index c0 = tc * kCols;
  // Bytes: row r's columns [c0, ...) start m_r = (in_lo + r * ld) & 3 bytes into an aligned word
  // (the low two bits of a 32-bit product are those of the 64-bit one).
  const unsigned in_lo = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(in)) + static_cast<unsigned>(c0);
  const unsigned ld_lo = static_cast<unsigned>(ld);

  // Load: slot s = (shared row R, word k); every load issued before the first shared store.
  constexpr int kSlots = Tile::kLoadRows * kPitch;
  constexpr int kLoads = (kSlots + kThreads - 1) / kThreads;
  Word w[kLoads];
#pragma unroll
  for (int it = 0; it < kLoads; ++it) {
    const int s = static_cast<int>(threadIdx.x) + kThreads * it;
    const int R = s / kPitch, k = s - R * kPitch;
    const Index r = r_first + R;
    w[it] = Word{};
    if (s < kSlots && R >= kLead - lead && r >= 0 && r < rows) {
      if constexpr (kE == 4) {
        const int m = static_cast<int>((in_lo + static_cast<unsigned>(r) * ld_lo) & 3u);
        const Index col = c0 - m + 4 * k;  // the column of the word's byte 0 (may be before the row)
        if (col < c0 + kCols && col < cols) {
          const auto* p = reinterpret_cast<const unsigned char*>(in) + r * ld + col;  // aligned to 4
          if (col >= 0 && cols - col >= 4) w[it] = __ldg(reinterpret_cast<const unsigned*>(p));
          else w[it] = load_word_bytes(p, col < 0 ? static_cast<int>(-col) : 0, cols - col < 4 ? static_cast<int>(cols - col) : 4);
        }
      } else if (k < kCols && c0 + k < cols) {
        w[it] = __ldg(reinterpret_cast<const Word*>(in + r * ld + c0 + k));
      }
    }
  }
#pragma unroll
  for (int it = 0; it < kLoads; ++it) {
    const int s = static_cast<int>(threadIdx.x) + kThreads * it;
    const int R = s / kPitch, k = s - R * kPitch;
    if (s < kSlots) tile_smem[sector_tile_word<Tile>(R, k)] = w[it];
  }
  __syncthreads();

  // Store: slot s = (output row o, word p of its window); a warp writes consecutive words of one
  // output row (kRows / kE >= 32: a whole warp; less: a few rows).
  constexpr int kOutWords = kRows / kE;
  constexpr int kOutSlots = kCols * kOutWords;
  const auto* tile_bytes = reinterpret_cast<const unsigned char*>(tile_smem);
#pragma unroll 4
  for (int s = static_cast<int>(threadIdx.x); s < kOutSlots; s += kThreads) {
    const int o = s / kOutWords, p = s - o * kOutWords;
    const Index c = c0 + o;
    if (c >= cols) continue;
    T* out_row = out + c * rows;
    const int sigma = static_cast<int>((reinterpret_cast<std::uintptr_t>(out_row) & 31u) / sizeof(T));
    const Index rw = t * kRows - sigma + kE * p;  // the input row of the word's first element
    const int R0 = kLead - sigma + kE * p;        // its shared row
    if constexpr (kE == 4) {
      const int lo = rw < 0 ? static_cast<int>(rw < -4 ? 4 : -rw) : 0;
      const int hi = rows - rw < 4 ? static_cast<int>(rows - rw < 0 ? 0 : rows - rw) : 4;
      if (lo >= hi) continue;
      unsigned m = (in_lo + static_cast<unsigned>(rw) * ld_lo) & 3u;  // of row rw; + ld a row
      unsigned v = 0;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if (j >= lo && j < hi) {
          const int R = R0 + j;
          const unsigned b = tile_bytes[4 * sector_tile_word<Tile>(R, 0) + static_cast<int>(m) + o];
          v |= b << (8 * j);
        }
        m = (m + ld_lo) & 3u;
      }
      store_word_bytes(reinterpret_cast<unsigned char*>(out_row + rw), v, lo, hi);  // out_row + rw: aligned to 4
    } else {
      if (rw >= 0 && rw < rows) reinterpret_cast<Word*>(out_row)[rw] = tile_smem[sector_tile_word<Tile>(R0, o)];
    }
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
/// reads them into shared memory in input order (one contiguous run when ld == cols; bytes as
/// words), then writes each output row's run (bytes as words at any alignment). Requires
/// cols * rows_per_block * sizeof(T) <= Chunk::kBytes and rows_per_block a multiple of 128.
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

  if (sizeof(T) == 1 && ld == cols) {
    // The block's rows are one run of bytes: warp w reads its 128-byte pieces s = 128 * (w + kWarps * b).
    // Bytes past `total` land in the chunk's spare room (s + 128 <= its capacity), never read.
    const auto* run = reinterpret_cast<const unsigned char*>(in);
    constexpr int kRuns = kBatch / 2;
    for (int s0 = 128 * warp; s0 < total; s0 += 128 * kWarps * kRuns) {  // the same for the whole warp
      RunWords raw[kRuns];
#pragma unroll
      for (int b = 0; b < kRuns; ++b) {
        const int s = s0 + 128 * kWarps * b;
        if (s < total) raw[b] = warp_read_run(run, r0 * cols + s, rows * cols);
      }
#pragma unroll
      for (int b = 0; b < kRuns; ++b) {
        const int s = s0 + 128 * kWarps * b;
        if (s >= total) break;
        *reinterpret_cast<unsigned*>(chunk_smem + chunk_slot<T>(s + 4 * lane)) = warp_align_run(raw[b], run, r0 * cols + s);
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
          if (rr < n) w |= static_cast<unsigned>(chunk_smem[chunk_slot<T>(rr * cols + i)]) << (8 * t);
        }
        warp_store_run(reinterpret_cast<unsigned char*>(out_row), r0 + s, rows, w);
      }
    } else {
#pragma unroll 4
      for (int rr = tid; rr < n; rr += kThreads) out_row[r0 + rr] = chunk_smem[chunk_slot<T>(rr * cols + i)];
    }
  }
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
    uint4 x[kN], y[kN];
#pragma unroll
    for (int i = 0; i < kN; ++i) x[i] = __ldg(reinterpret_cast<const uint4*>(in + i * ld + j0));
    const auto* xe = reinterpret_cast<const T*>(x);  // (kN rows, kV columns)
    auto* ye = reinterpret_cast<T*>(y);              // (kV columns, kN rows)
#pragma unroll
    for (int e = 0; e < kV * kN; ++e) ye[e] = xe[(e % kN) * kV + e / kN];
    auto* o = reinterpret_cast<uint4*>(out + j0 * kN);
#pragma unroll
    for (int q = 0; q < kN; ++q) o[q] = y[q];
  } else {
    for (Index j = j0; j < cols; ++j)
#pragma unroll
      for (int i = 0; i < kN; ++i) out[j * kN + i] = in[i * ld + j];
  }
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

}  // namespace devmat::detail

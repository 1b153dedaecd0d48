// Transpose through a swizzled shared-memory tile, moving whole words: a word is W adjacent
// elements of a row (W * sizeof(T) = 4, 8 or 16 bytes), each thread loads W x W sub-blocks as
// W words, transposes them in registers (__byte_perm for bytes) and stores them as W words of
// the output. Device code only; dispatch/transpose.cuh picks the tile and launches it.
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

/// Transposes the rows x cols row-major `in` (ld elements between row starts) into the dense
/// cols x rows `out`. Block b handles tile (b / tiles_c, b % tiles_c). Requires rows, cols
/// and ld multiples of W and both pointers aligned to a word, so every word lies wholly inside
/// or wholly outside the matrix.
///
/// Sub-block (a, b) of a tile is rows [a*W, a*W+W) and word column b. Its transposed words
/// go to shared row b*W + j (an output row of the tile), word column a ^ b: the XOR swizzle
/// puts the 32 words that a warp stores (b = lane, a fixed) and the 32 words it loads (one
/// shared row, 32 consecutive word columns) in 32 different banks (or, for 8- and 16-byte
/// words, in different banks within each half- or quarter-warp), with no padding.
template <class T, int W, int TW, int BY>
__global__ void __launch_bounds__(32 * BY)
transpose_kernel(const T* __restrict__ in, Index ld, T* __restrict__ out, Index rows, Index cols, Index tiles_c) {
  static_assert((TW == 32 || TW == 64) && TW % BY == 0, "transpose_kernel: TW is 32 or 64 words, BY divides it");
  using Word = typename RawWord<W * sizeof(T)>::type;
  constexpr int kTile = TW * W;
  constexpr int kBX = TW / 32;  // word columns per lane
  constexpr int kAY = TW / BY;  // sub-block rows per warp row
  extern __shared__ uint4 transpose_smem[];  // dynamic: tiles may pass 48 KiB
  auto& tile_smem = *reinterpret_cast<Word(*)[kTile][TW]>(transpose_smem);  // (out rows, out word cols), swizzled

  const Index tile_r = blockIdx.x / tiles_c, tile_c = blockIdx.x % tiles_c;
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
        const Index r = r0 + a * W + i;
        x_reg[k][bx][i] = r < rows && wc < in_words ? __ldg(in_w + r * ld_words + wc) : Word{};
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
      const Index out_r = c0 + o, out_wc = r0 / W + oc;
      if (out_r < cols && out_wc < out_words) out_w[out_r * out_words + out_wc] = tile_smem[o][oc ^ (o / W)];
    }
}

}  // namespace devmat::detail

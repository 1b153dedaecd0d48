// Box filter (separable running sums; u8 3x3 / 5x5 means in one fused pass) and integral image
// (row scans, then column scans). Device code only; dispatch/image_neigh.cuh sizes the grids and
// launches.
#pragma once

#include "border.cuh"
#include "common.cuh"

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace devmat::detail {

// ------------------------------------------------------------------ box filter
constexpr int kBoxThreads = 256;
constexpr int kBoxAlong = 128;                                 // outputs of a tile along the pass
constexpr int kBoxAcross = 32;                                 // lines of a tile
constexpr int kBoxSegment = kBoxAlong * kBoxAcross / kBoxThreads;  // 16 outputs of one running sum
constexpr int kMaxBoxSide = 255;

/// A sum written as Out: int as it is, float times `scale` in double, u8 (an int sum, never
/// negative) divided by `divisor` exactly, halves rounded up, saturated. OpenCV's u8 box filter
/// agrees except on some halves (its fixed-point division rounds those down for some areas, 2x2
/// among them): never more than 1 apart.
template <class Out, class Acc>
__device__ __forceinline__ Out box_store(Acc v, double scale, int divisor) {
  if constexpr (std::is_same_v<Out, std::uint8_t>) {
    const long long r = (2 * static_cast<long long>(v) + divisor) / (2 * static_cast<long long>(divisor));
    return static_cast<std::uint8_t>(r > 255 ? 255 : r);
  } else if constexpr (std::is_same_v<Out, float>) {
    return static_cast<float>(static_cast<double>(v) * scale);
  } else {
    return static_cast<Out>(v);
  }
}

/// One pass of the box filter: along rows (kRows) out(y, x) = scale * sum of in(y, x - a + j),
/// j < k, along columns the same over in(y - a + i, x), a = k / 2, borders reflected (101).
/// Sums in Acc (int for u8, double for float), exact for integers. Block 256 threads; grid (tiles
/// along x, tiles along y up to kMaxGridY, the rest looped over); a tile is kBoxAlong outputs
/// along the pass times kBoxAcross lines, each thread one running sum over kBoxSegment outputs.
/// Dynamic shared memory: the (kBoxAcross, kBoxAlong + k - 1) inputs and the (kBoxAcross,
/// kBoxAlong) sums, as Acc.
template <class In, class Acc, class Out, bool kRows>
__global__ void __launch_bounds__(kBoxThreads)
box_pass_kernel(const In* __restrict__ in, Index ld_in, Out* __restrict__ out, Index ld_out, Index rows, Index cols,
                int k, double scale, int divisor, unsigned tiles_y) {
  DEVMAT_DYNAMIC_SHARED(unsigned char, box_smem_raw);
  Acc* const in_smem = reinterpret_cast<Acc*>(box_smem_raw);
  const int len_in = kBoxAlong + k - 1;
  const int pitch = kRows ? (len_in | 1) : kBoxAcross;  // odd line pitch along rows: fewer conflicts
  const int n_in = kRows ? kBoxAcross * pitch : len_in * kBoxAcross;
  Acc* const sum_smem = in_smem + n_in;
  const int sum_pitch = kRows ? kBoxAlong + 1 : kBoxAcross;
  const auto at = [&](int line, int pos) { return kRows ? line * pitch + pos : pos * kBoxAcross + line; };
  const auto sum_at = [&](int line, int pos) { return kRows ? line * sum_pitch + pos : pos * kBoxAcross + line; };
  const int anchor = k / 2;
  const int tid = threadIdx.x;
  const Index len = kRows ? cols : rows;  // the line's length in the image

  const unsigned tile_w = kRows ? kBoxAlong : kBoxAcross;
  const unsigned tile_h = kRows ? kBoxAcross : kBoxAlong;
  const Index x0 = static_cast<Index>(blockIdx.x) * tile_w;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * tile_h;
    const Index along0 = kRows ? x0 : y0;
    __syncthreads();  // the previous tile is no longer read
    for (int e = tid; e < kBoxAcross * len_in; e += kBoxThreads) {
      const int line = kRows ? e / len_in : e % kBoxAcross;
      const int pos = kRows ? e % len_in : e / kBoxAcross;
      const Index across = (kRows ? y0 : x0) + line;
      Acc v = 0;
      if (across < (kRows ? rows : cols)) {
        const Index a = reflect101(along0 - anchor + pos, len);
        v = static_cast<Acc>(kRows ? in[across * ld_in + a] : in[a * ld_in + across]);
      }
      in_smem[at(line, pos)] = v;
    }
    __syncthreads();
    {
      const int line = tid % kBoxAcross;
      const int first = (tid / kBoxAcross) * kBoxSegment;
      Acc acc = 0;
      for (int j = 0; j < k; ++j) acc += in_smem[at(line, first + j)];
      sum_smem[sum_at(line, first)] = acc;
#pragma unroll
      for (int i = 1; i < kBoxSegment; ++i) {
        acc += in_smem[at(line, first + i + k - 1)] - in_smem[at(line, first + i - 1)];
        sum_smem[sum_at(line, first + i)] = acc;
      }
    }
    __syncthreads();
    for (int e = tid; e < kBoxAcross * kBoxAlong; e += kBoxThreads) {
      const int line = kRows ? e / kBoxAlong : e % kBoxAcross;
      const int i = kRows ? e % kBoxAlong : e / kBoxAcross;
      const Index y = kRows ? y0 + line : y0 + i;
      const Index x = kRows ? x0 + i : x0 + line;
      if (y < rows && x < cols) out[y * ld_out + x] = box_store<Out>(sum_smem[sum_at(line, i)], scale, divisor);
    }
  }
}

// ------------------------------------------------------------------ u8 box means of sides 3 and 5, fused
/// (2 sum + area) / (2 area) for one 16-bit lane: box_store's exact rounding (halves up), a
/// multiply and a shift (the divisor is a constant).
template <unsigned kArea>
__device__ __forceinline__ unsigned box_round(unsigned sum) { return (2 * sum + kArea) / (2 * kArea); }

/// Pixels x .. x + 3 of the KR x KC box mean, from their sums in 16-bit lanes: even = pixels x
/// and x + 2, odd = x + 1 and x + 3.
template <unsigned kArea>
__device__ __forceinline__ unsigned box_mean_word(unsigned even, unsigned odd) {
  return box_round<kArea>(even & 0xffffu) | box_round<kArea>(odd & 0xffffu) << 8 | box_round<kArea>(even >> 16) << 16 |
         box_round<kArea>(odd >> 16) << 24;
}

/// Adds pixels x + d .. x + d + 3 for d = -KC/2 .. KC/2 into 16-bit lanes: `lo` and `hi` hold
/// pixels x - 4 .. x - 1 and x + 4 .. x + 7 around the word c (x .. x + 3). A lane's sum is at
/// most KR KC 255 < 2^16, so whole-word adds never carry into the other lane.
template <int KC>
__device__ __forceinline__ void box_row_sums(unsigned lo, unsigned c, unsigned hi, unsigned& even, unsigned& odd) {
  constexpr int kA = KC / 2;
  even = odd = 0;
#pragma unroll
  for (int d = -kA; d <= kA; ++d) {
    const unsigned w = d < 0 ? __funnelshift_r(lo, c, 8 * (4 + d)) : (d == 0 ? c : __funnelshift_r(c, hi, 8 * d));
    even += w & 0x00ff00ffu;
    odd += (w >> 8) & 0x00ff00ffu;
  }
}

/// The normalised KR x KC box filter of u8 `img`, borders reflected (101), rows and columns fused,
/// 4 pixels a word, R output rows a thread (border.cuh's u8 neighbourhood tile). Each output is
/// (2 sum + KR KC) / (2 KR KC): box_store's rounding, so it equals the two-pass filter.
template <int KR, int KC, int R>
__global__ void __launch_bounds__(kNbrThreadsX * kNbrThreadsY)
box_u8_small_kernel(const std::uint8_t* __restrict__ img, Index ld, std::uint8_t* __restrict__ out, Index ld_out,
                    Index rows, Index cols, unsigned tiles_y) {
  static_assert(KR % 2 == 1 && KC % 2 == 1 && KR >= 3 && KC >= 3 && KR <= 7 && KC <= 7,
                "box_u8_small_kernel: odd sides from 3 to 7 (lanes under 2^16, shifts under 32 bits)");
  constexpr int kA = KR / 2;
  const Index x = (static_cast<Index>(blockIdx.x) * kNbrThreadsX + threadIdx.x) * 4;
  if (x >= cols) return;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kNbrTileH<R> + threadIdx.y * R;
    if (y0 >= rows) continue;
    unsigned h[R + KR - 1][2];  // row sums of rows y0 - kA .. (even, odd lanes)
#pragma unroll
    for (int i = 0; i < R + KR - 1; ++i) {
      unsigned l, c, r;
      load_row_words<true>(img, ld, rows, cols, y0 - kA + i, x, 0u, l, c, r);
      box_row_sums<KC>(l, c, r, h[i][0], h[i][1]);
    }
#pragma unroll
    for (int j = 0; j < R; ++j) {
      if (y0 + j >= rows) break;
      unsigned even = 0, odd = 0;
#pragma unroll
      for (int i = 0; i < KR; ++i) {
        even += h[j + i][0];
        odd += h[j + i][1];
      }
      store_word(out + (y0 + j) * ld_out, x, cols, box_mean_word<KR * KC>(even, odd));
    }
  }
}

// The sliding variant: the block and tile of box_u8_small_kernel, fewer instructions a pixel.
// A row's sums stay in 16-bit lanes taken apart with byte permutes (even pixels x, x + 2 of a
// word in one register, odd ones in another) and shifted by whole lanes (one permute) instead of
// byte funnel shifts per tap; the column sums slide down the thread's R rows (the entering row
// added, the leaving one subtracted) instead of adding KR rows per output; each mean is one
// multiply-add and a byte permute (box_mean_mul) instead of a division.

/// floor((2 s + A) / (2 A)) (box_store's rounding of a u8 mean of area A, halves up) for every
/// sum s <= 255 A is byte 3 of s kBoxMul<A> + 2^23: test_image_small_emulation checks every sum
/// of the areas 9, 15 and 25; s kBoxMul + 2^23 < 2^32 there.
template <unsigned kArea>
inline constexpr unsigned kBoxMul = ((1u << 24) + kArea - 1) / kArea;
constexpr unsigned kBoxMulAdd = 1u << 23;

/// Pixels x .. x + 3 of the box mean of area kArea from their sums in 16-bit lanes (even = pixels
/// x and x + 2, odd = x + 1 and x + 3), rounded as box_round.
template <unsigned kArea>
__device__ __forceinline__ unsigned box_mean_word_mul(unsigned even, unsigned odd) {
  constexpr unsigned m = kBoxMul<kArea>;
  const unsigned t0 = (even & 0xffffu) * m + kBoxMulAdd, t2 = (even >> 16) * m + kBoxMulAdd;
  const unsigned t1 = (odd & 0xffffu) * m + kBoxMulAdd, t3 = (odd >> 16) * m + kBoxMulAdd;
  const unsigned p01 = __byte_perm(t0, t1, 0x0073);  // t0.b3 t1.b3 . .
  const unsigned p23 = __byte_perm(t2, t3, 0x7300);  // . . t2.b3 t3.b3
  return __byte_perm(p01, p23, 0x7610);
}

/// The row sums of KC (3 or 5) pixels around x .. x + 3 in 16-bit lanes (as box_row_sums), from
/// `lo`, `c`, `hi` = pixels x - 4 .. x - 1, x .. x + 3, x + 4 .. x + 7: each word taken apart into
/// even and odd pixels (E, O), neighbours one lane over made by one permute across two words.
template <int KC>
__device__ __forceinline__ void box_row_sums_lanes(unsigned lo, unsigned c, unsigned hi, unsigned& even, unsigned& odd) {
  static_assert(KC == 3 || KC == 5, "box_row_sums_lanes: sides 3 and 5");
  const unsigned ec = __byte_perm(c, 0u, 0x4240), oc = __byte_perm(c, 0u, 0x4341);  // (x, x+2), (x+1, x+3)
  const unsigned ol = __byte_perm(lo, 0u, 0x4341), er = __byte_perm(hi, 0u, 0x4240);  // (x-3, x-1), (x+4, x+6)
  const unsigned o_lc = __byte_perm(ol, oc, 0x5432);  // (x-1, x+1)
  const unsigned e_cr = __byte_perm(ec, er, 0x5432);  // (x+2, x+4)
  const unsigned mid = ec + oc;                       // (x, x+2) + (x+1, x+3)
  if constexpr (KC == 3) {
    even = o_lc + mid;  // x-1 .. x+1, x+1 .. x+3
    odd = mid + e_cr;   // x .. x+2, x+2 .. x+4
  } else {
    const unsigned el = __byte_perm(lo, 0u, 0x4240), orr = __byte_perm(hi, 0u, 0x4341);  // (x-4, x-2), (x+5, x+7)
    const unsigned e_lc = __byte_perm(el, ec, 0x5432);   // (x-2, x)
    const unsigned o_cr = __byte_perm(oc, orr, 0x5432);  // (x+3, x+5)
    const unsigned common = o_lc + mid + e_cr;           // x-1 .. x+2, x+1 .. x+4
    even = e_lc + common;                                // x-2 .. x+2, x .. x+4
    odd = common + o_cr;                                 // x-1 .. x+3, x+1 .. x+5
  }
}

/// Pixels x - 4 .. x + 4 W + 3 of image row y (reflected, 101, in both directions) as the W + 2
/// words w[0 .. W + 1] (byte 0 of w[0] is pixel x - 4): load_row_words for W = 1.
template <int W>
__device__ __forceinline__ void load_row_words_wide(const std::uint8_t* __restrict__ img, Index ld, Index rows, Index cols,
                                                    Index y, Index x, unsigned (&w)[W + 2]) {
  if constexpr (W == 1) {
    load_row_words<true>(img, ld, rows, cols, y, x, 0u, w[0], w[1], w[2]);
  } else {
    const std::uint8_t* row = img + reflect101(y, rows) * ld;
    if (x >= 4 && x + 4 * W + 4 <= cols && (reinterpret_cast<std::uintptr_t>(row + x) & 3) == 0) {
#pragma unroll
      for (int k = 0; k < W + 2; ++k) w[k] = __ldg(reinterpret_cast<const unsigned*>(row + x - 4 + 4 * k));
      return;
    }
#pragma unroll
    for (int k = 0; k < W + 2; ++k) {
      w[k] = 0;
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const Index px = x - 4 + 4 * k + b;
        w[k] |= static_cast<unsigned>(__ldg(row + (px >= 0 && px < cols ? px : reflect101(px, cols)))) << (8 * b);
      }
    }
  }
}

/// The KR x KC box mean of u8 `img` as box_u8_small_kernel (same block and grid, tiles W times as
/// wide: W words of 4 pixels a thread, W = 2 sharing the words between them), sliding (above). A
/// lane's column sum before the leaving row is subtracted is at most (KR + 1) KC 255 < 2^16, and
/// after it never negative: whole-word adds and subtracts never cross lanes.
template <int KR, int KC, int R, int W = 1>
__global__ void __launch_bounds__(kNbrThreadsX * kNbrThreadsY)
box_u8_slide_kernel(const std::uint8_t* __restrict__ img, Index ld, std::uint8_t* __restrict__ out, Index ld_out,
                    Index rows, Index cols, unsigned tiles_y) {
  static_assert(KR % 2 == 1 && (KC == 3 || KC == 5) && KR >= 3 && KR <= 7 && (KR + 1) * KC * 255 < 65536,
                "box_u8_slide_kernel: odd KR from 3 to 7, KC 3 or 5 (lanes under 2^16)");
  static_assert(W == 1 || W == 2, "box_u8_slide_kernel: 1 or 2 words a thread");
  constexpr int kA = KR / 2;
  const Index x = (static_cast<Index>(blockIdx.x) * kNbrThreadsX + threadIdx.x) * 4 * W;
  if (x >= cols) return;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kNbrTileH<R> + threadIdx.y * R;
    if (y0 >= rows) continue;
    unsigned h[R + KR - 1][W][2];  // row sums of rows y0 - kA + i (word k: even, odd lanes)
    unsigned even[W], odd[W];      // column sums of the rows y0 - kA + i - KR + 1 .. y0 - kA + i
#pragma unroll
    for (int k = 0; k < W; ++k) even[k] = odd[k] = 0;
#pragma unroll
    for (int i = 0; i < R + KR - 1; ++i) {
      const int j = i - (KR - 1);  // the output row that row i completes
      if (j >= 0 && y0 + j >= rows) break;
      unsigned w[W + 2];
      load_row_words_wide<W>(img, ld, rows, cols, y0 - kA + i, x, w);
#pragma unroll
      for (int k = 0; k < W; ++k) {
        box_row_sums_lanes<KC>(w[k], w[k + 1], w[k + 2], h[i][k][0], h[i][k][1]);
        even[k] += h[i][k][0];
        odd[k] += h[i][k][1];
      }
      if (j < 0) continue;
#pragma unroll
      for (int k = 0; k < W; ++k) {
        if (j > 0) {
          even[k] -= h[i - KR][k][0];
          odd[k] -= h[i - KR][k][1];
        }
        store_word(out + (y0 + j) * ld_out, x + 4 * k, cols, box_mean_word_mul<KR * KC>(even[k], odd[k]));
      }
    }
  }
}

// The banded variant: each thread 16 pixels (one 16-byte vector) of R consecutive rows, a warp a
// 512-pixel segment of a row band; a block's 4 warps take 4 bands below each other (a tile of
// 512 x 4 R). The pixels left and right of a thread's 16 come from its neighbour lanes
// (shuffles); lanes 0 and 31 and the image's edges read them with the border.
constexpr int kBandThreadsX = 32, kBandThreadsY = 4;
constexpr int kBandTileW = 16 * kBandThreadsX;  // 512 pixels
template <int R>
inline constexpr int kBandTileH = kBandThreadsY * R;

/// Byte b of the word at pixels p .. p + 3 of `row` (n pixels), positions outside reflected (101).
__device__ __forceinline__ unsigned load_word_reflect(const std::uint8_t* row, Index p, Index n) {
  unsigned w = 0;
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    const Index px = p + b;
    w |= static_cast<unsigned>(__ldg(row + (px >= 0 && px < n ? px : reflect101(px, n)))) << (8 * b);
  }
  return w;
}

/// The KR x KC box mean of u8 `img` as box_u8_small_kernel, banded (above). Every lane of a warp
/// runs every shuffle: lanes past the image load nothing and store nothing.
template <int KR, int KC, int R>
__global__ void __launch_bounds__(kBandThreadsX * kBandThreadsY)
box_u8_band_kernel(const std::uint8_t* __restrict__ img, Index ld, std::uint8_t* __restrict__ out, Index ld_out,
                   Index rows, Index cols, unsigned tiles_y) {
  static_assert(KR % 2 == 1 && KC % 2 == 1 && KR >= 3 && KC >= 3 && KR <= 7 && KC <= 7,
                "box_u8_band_kernel: odd sides from 3 to 7 (lanes under 2^16, halo within a word)");
  constexpr int kA = KR / 2;
  constexpr unsigned kFull = 0xffffffffu;
  const int lane = threadIdx.x;
  const Index x = static_cast<Index>(blockIdx.x) * kBandTileW + 16 * lane;
  const bool active = x < cols;
  const bool whole = x + 16 <= cols;  // the thread's 16 pixels all inside
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kBandTileH<R> + threadIdx.y * R;
    if (y0 >= rows) continue;  // the same for the whole warp
    unsigned h[R + KR - 1][8];  // row sums of rows y0 - kA ..: word q's even lanes in 2 q, odd in 2 q + 1
#pragma unroll
    for (int i = 0; i < R + KR - 1; ++i) {
      Index y = y0 - kA + i;
      if (y < 0 || y >= rows) y = reflect101(y, rows);
      const std::uint8_t* row = img + y * ld;
      unsigned w[6];  // pixels x - 4 .. x + 19
      if (whole && (reinterpret_cast<std::uintptr_t>(row + x) & 15) == 0) {
        const uint4 v = __ldg(reinterpret_cast<const uint4*>(row + x));
        w[1] = v.x;
        w[2] = v.y;
        w[3] = v.z;
        w[4] = v.w;
      } else if (active) {  // past the right edge: the reflected pixels, the right neighbours of the last
#pragma unroll
        for (int q = 0; q < 4; ++q) w[1 + q] = load_word_reflect(row, x + 4 * q, cols);
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q) w[1 + q] = 0;
      }
      w[0] = __shfl_up_sync(kFull, w[4], 1);
      w[5] = __shfl_down_sync(kFull, w[1], 1);
      if (active && (lane == 0 || x < 4)) w[0] = load_word_reflect(row, x - 4, cols);
      if (active && (lane == 31 || x + 20 > cols)) w[5] = load_word_reflect(row, x + 16, cols);
#pragma unroll
      for (int q = 0; q < 4; ++q) box_row_sums<KC>(w[q], w[q + 1], w[q + 2], h[i][2 * q], h[i][2 * q + 1]);
    }
    if (!active) continue;
#pragma unroll
    for (int j = 0; j < R; ++j) {
      if (y0 + j >= rows) break;
      unsigned v[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        unsigned even = 0, odd = 0;
#pragma unroll
        for (int i = 0; i < KR; ++i) {
          even += h[j + i][2 * q];
          odd += h[j + i][2 * q + 1];
        }
        v[q] = box_mean_word<KR * KC>(even, odd);
      }
      std::uint8_t* dst = out + (y0 + j) * ld_out + x;
      if (whole && (reinterpret_cast<std::uintptr_t>(dst) & 15) == 0) {
        *reinterpret_cast<uint4*>(dst) = make_uint4(v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q) store_word(out + (y0 + j) * ld_out, x + 4 * q, cols, v[q]);
      }
    }
  }
}

// The 16-byte variant: each thread 16 pixels (one uint4 load and one uint4 store a row) of R
// consecutive rows, a warp 512 pixels of a row band, the block's 4 warps 4 bands below each other
// (the banded kernel's tile, kBandTileW x kBandTileH<R>), with the sliding kernel's arithmetic
// (sums in 16-bit lanes by byte permutes, column sums slid down the rows, the mean by a
// multiply-add). A thread's left and right neighbour words come from the lanes beside it
// (shuffles); only lanes 0 and 31 load one more word each (one aligned 4-byte load inside the
// image), and only at the image's edges or in an unaligned view does a word go byte by byte
// through the border.

/// Pixels p .. p + 3 and p .. p + 15 of `row` (n pixels, 101-reflected outside) byte by byte:
/// load_word_reflect out of line, so that the kernels' paths for unaligned views and image edges
/// do not raise the register count of their main path (inlined, they took box_u8_vec16_kernel
/// 3x3 from 94 registers to 134, or to heavy spills under a cap of 64).
inline __device__ __noinline__ unsigned load4_reflect(const std::uint8_t* row, Index p, Index n) {
  return load_word_reflect(row, p, n);
}
inline __device__ __noinline__ uint4 load16_reflect(const std::uint8_t* row, Index p, Index n) {
  return make_uint4(load_word_reflect(row, p, n), load_word_reflect(row, p + 4, n), load_word_reflect(row, p + 8, n),
                    load_word_reflect(row, p + 12, n));
}

/// Pixels x - 4 .. x + 19 of `row` (n pixels, 101-reflected outside) as w[0 .. 5] (byte 0 of
/// w[0] is pixel x - 4), for lane `lane` of a warp whose lanes hold consecutive 16-pixel chunks
/// (x = x_lane0 + 16 lane); lanes with x >= n (inactive) hold zeros in w[1 .. 4] and must still
/// call it (shuffles). `vec`: the 16 pixels are whole and 16-byte aligned (one uint4 load).
__device__ __forceinline__ void load_row_vec16(const std::uint8_t* __restrict__ row, Index x, Index n, int lane,
                                               bool active, bool vec, unsigned (&w)[6]) {
  constexpr unsigned kFull = 0xffffffffu;
  if (vec) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(row + x));
    w[1] = v.x;
    w[2] = v.y;
    w[3] = v.z;
    w[4] = v.w;
  } else if (active) {  // an unaligned view or the row's last chunk: byte by byte, reflected past n
    const uint4 v = load16_reflect(row, x, n);
    w[1] = v.x;
    w[2] = v.y;
    w[3] = v.z;
    w[4] = v.w;
  } else {
#pragma unroll
    for (int q = 0; q < 4; ++q) w[1 + q] = 0;
  }
  w[0] = __shfl_up_sync(kFull, w[4], 1);
  w[5] = __shfl_down_sync(kFull, w[1], 1);
  if (!active) return;
  // Lane 0 has no left neighbour, lane 31 no right one; past the image's edges (x < 4, or the
  // right neighbour inactive: x + 16 >= n) the words are reflected.
  if (lane == 0 || x < 4) {
    w[0] = vec && x >= 4 ? __ldg(reinterpret_cast<const unsigned*>(row + x - 4)) : load4_reflect(row, x - 4, n);
  }
  if (lane == 31 || x + 16 >= n) {
    w[5] = vec && x + 20 <= n ? __ldg(reinterpret_cast<const unsigned*>(row + x + 16)) : load4_reflect(row, x + 16, n);
  }
}

/// The KR x KC box mean of u8 `img` (sides 3 or 5) as box_u8_small_kernel, 16 pixels a thread
/// (above). The leaving row is subtracted before the entering one is added, so a lane's column
/// sum is at most KR KC 255 < 2^16 and never negative: whole-word adds and subtracts never cross
/// lanes. The loop over rows ends together for a whole warp (its lanes share the rows), so every
/// lane reaches every shuffle. kMinBlocks: blocks an SM must hold (__launch_bounds__' second
/// argument): 1 leaves ptxas free (94 to 128 registers and no spills for sm_90: it hoists later
/// rows' loads; 5 blocks an SM at most), 6 caps the registers at 80 (a few spills, around the
/// calls of the byte path).
template <int KR, int KC, int R, int kMinBlocks = 1>
__global__ void __launch_bounds__(kBandThreadsX * kBandThreadsY, kMinBlocks)
box_u8_vec16_kernel(const std::uint8_t* __restrict__ img, Index ld, std::uint8_t* __restrict__ out, Index ld_out,
                    Index rows, Index cols, unsigned tiles_y) {
  static_assert(KR % 2 == 1 && (KC == 3 || KC == 5) && KR >= 3 && KR <= 7 && (KR + 1) * KC * 255 < 65536,
                "box_u8_vec16_kernel: odd KR from 3 to 7, KC 3 or 5 (lanes under 2^16)");
  constexpr int kA = KR / 2;
  const int lane = threadIdx.x;
  const Index x = static_cast<Index>(blockIdx.x) * kBandTileW + 16 * lane;
  const bool active = x < cols;
  const bool whole = x + 16 <= cols;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kBandTileH<R> + threadIdx.y * R;
    if (y0 >= rows) continue;  // the same for the whole warp
    unsigned h[KR][4][2];      // row sums of the last KR rows read (ring: row i at i % KR), word q's even, odd lanes
    unsigned even[4], odd[4];  // column sums of the rows y0 - kA + i - KR + 1 .. y0 - kA + i
#pragma unroll
    for (int q = 0; q < 4; ++q) even[q] = odd[q] = 0;
#pragma unroll
    for (int i = 0; i < R + KR - 1; ++i) {
      const int j = i - (KR - 1);  // the output row that row i completes
      if (j >= 0 && y0 + j >= rows) break;
      Index y = y0 - kA + i;
      if (y < 0 || y >= rows) y = reflect101(y, rows);
      const std::uint8_t* row = img + y * ld;
      const bool vec = whole && (reinterpret_cast<std::uintptr_t>(row + x) & 15) == 0;
      unsigned w[6];
      load_row_vec16(row, x, cols, lane, active, vec, w);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        if (i >= KR) {  // the row leaving the window (row i - KR) is in the slot row i takes
          even[q] -= h[i % KR][q][0];
          odd[q] -= h[i % KR][q][1];
        }
        box_row_sums_lanes<KC>(w[q], w[q + 1], w[q + 2], h[i % KR][q][0], h[i % KR][q][1]);
        even[q] += h[i % KR][q][0];
        odd[q] += h[i % KR][q][1];
      }
      if (j < 0 || !active) continue;
      unsigned v[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) v[q] = box_mean_word_mul<KR * KC>(even[q], odd[q]);
      std::uint8_t* dst = out + (y0 + j) * ld_out;
      if (whole && (reinterpret_cast<std::uintptr_t>(dst + x) & 15) == 0) {
        *reinterpret_cast<uint4*>(dst + x) = make_uint4(v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q)
          if (x + 4 * q < cols) store_word(dst, x + 4 * q, cols, v[q]);
      }
    }
  }
}

// ------------------------------------------------------------------ integral image
constexpr int kIntegralThreads = 256;
constexpr int kIntegralColsPerThreadLoads = 8;  // loads in flight per thread in the column scan

/// Row scans: out(y + 1, x + 1) = sum of in(y, 0..x), out(y + 1, 0) = 0, one warp per row (grid
/// stride over rows), 32 columns at a time with a carry. Row 0 of `out` is not written.
template <class In, class Acc>
__global__ void __launch_bounds__(kIntegralThreads)
integral_rows_kernel(const In* __restrict__ in, Index ld_in, Acc* __restrict__ out, Index ld_out, Index rows,
                     Index cols) {
  const int lane = threadIdx.x % 32;
  const Index warps = static_cast<Index>(gridDim.x) * (kIntegralThreads / 32);
  for (Index y = static_cast<Index>(blockIdx.x) * (kIntegralThreads / 32) + threadIdx.x / 32; y < rows; y += warps) {
    const In* row = in + y * ld_in;
    Acc* out_row = out + (y + 1) * ld_out;
    if (lane == 0) out_row[0] = 0;
    Acc carry = 0;
    for (Index x0 = 0; x0 < cols; x0 += 32) {
      const Index x = x0 + lane;
      Acc v = x < cols ? static_cast<Acc>(row[x]) : Acc(0);
#pragma unroll
      for (int d = 1; d < 32; d *= 2) {
        const Acc u = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += u;
      }
      if (x < cols) out_row[x + 1] = carry + v;
      carry += __shfl_sync(0xffffffffu, v, 31);
    }
  }
}

/// Column scans in place: out(y, x) += out(y - 1, x) down each column x = 1..cols (column 0
/// and row 0 are zeros). Block (32, kIntegralSegments): 32 adjacent columns (coalesced), each cut
/// into kIntegralSegments runs of rows; a thread sums its run, the runs' totals are scanned in
/// shared memory, then each thread scans its run again from its offset.
constexpr int kIntegralSegments = 16;

template <class Acc>
__global__ void __launch_bounds__(32 * kIntegralSegments)
integral_cols_kernel(Acc* __restrict__ out, Index ld_out, Index rows, Index cols) {
  __shared__ Acc total_smem[kIntegralSegments][32];
  const Index x = static_cast<Index>(blockIdx.x) * 32 + threadIdx.x + 1;
  const Index run = (rows + kIntegralSegments - 1) / kIntegralSegments;
  const Index first = 1 + threadIdx.y * run;
  const Index last = first + run - 1 < rows ? first + run - 1 : rows;  // rows 1..rows of out
  constexpr int kL = kIntegralColsPerThreadLoads;
  Acc total = 0;
  if (x <= cols) {
    Index y = first;
    for (; y + kL - 1 <= last; y += kL) {
      Acc v[kL];
#pragma unroll
      for (int i = 0; i < kL; ++i) v[i] = out[(y + i) * ld_out + x];
#pragma unroll
      for (int i = 0; i < kL; ++i) total += v[i];
    }
    for (; y <= last; ++y) total += out[y * ld_out + x];
  }
  total_smem[threadIdx.y][threadIdx.x] = total;
  __syncthreads();
  if (x > cols) return;
  Acc acc = 0;
  for (int s = 0; s < static_cast<int>(threadIdx.y); ++s) acc += total_smem[s][threadIdx.x];
  Index y = first;
  for (; y + kL - 1 <= last; y += kL) {
    Acc v[kL];
#pragma unroll
    for (int i = 0; i < kL; ++i) v[i] = out[(y + i) * ld_out + x];
#pragma unroll
    for (int i = 0; i < kL; ++i) {
      acc += v[i];
      out[(y + i) * ld_out + x] = acc;
    }
  }
  for (; y <= last; ++y) {
    acc += out[y * ld_out + x];
    out[y * ld_out + x] = acc;
  }
}

}  // namespace devmat::detail

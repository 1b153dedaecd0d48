// Erosion and dilation by a rectangular element, one separable pass at a time (rows, then
// columns), by van Herk / Gil-Werman: the window's line is cut into blocks of k, each block's
// prefix minima (g) and suffix minima (h) are computed once, and the minimum of the window that
// starts at i is min(h[i], g[i + k - 1]): about three comparisons per pixel whatever k is.
// Pixels outside the image are ignored (they read the operation's identity: the type's maximum
// for erosion, its minimum for dilation: OpenCV's default border for erode/dilate). Elements with
// both sides 3 or 5 take one fused pass instead (morph_u8_small_kernel and morph_f32_small_kernel,
// at the end). Device code only; dispatch/image_morph.cuh sizes the grids and launches.
#pragma once

#include "border.cuh"
#include "byte_lanes.cuh"
#include "common.cuh"

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace devmat::detail {

constexpr int kMorphThreads = 256;
constexpr int kMorphAlong = 128;  // outputs of a tile along the pass
constexpr int kMorphAcross = 32;  // lines (rows for the row pass, columns for the column pass) of a tile
// Tiles in shared memory up to this side of the element (2 x 32 x 384 words, 96 KiB); past it
// morph_pass_direct_kernel, whose cost grows with the side.
constexpr int kMorphMaxTiledSide = 257;

/// The shared-memory word of a pixel: 32 bits, so that one line's neighbours and the threads of
/// a warp fall in distinct banks. For u8 a word holds one pixel (row pass) or four adjacent
/// pixels of a row (column pass: four columns at once).
template <class T>
using MorphWord = std::conditional_t<std::is_same_v<T, std::uint8_t>, unsigned, T>;

/// Pixels per shared-memory word: four u8 columns in the column pass, else one.
template <class T, bool kRows>
inline constexpr int kMorphPack = std::is_same_v<T, std::uint8_t> && !kRows ? 4 : 1;

/// min (erosion) or max (dilation), and the value that leaves the other operand unchanged. u8
/// words are compared bytewise (minmax_u8x4: byte_lanes.cuh), so one word may hold one pixel or
/// four.
/// Floats by fminf / fmaxf: one FMNMX (a compare and a select, `b < a ? b : a`, are two
/// instructions, FSETP and FSEL; session 17, H200, 4096^2 erode: 5x5 70.6 -> 65.0 us, 7x7 67.8
/// -> 60.3, 31x31 74.8 -> 72.7), and a NaN pixel is passed over wherever it lies in the window
/// (the compare and select kept it or not by its place).
template <class T, bool kErode>
struct MorphOp {
  using W = MorphWord<T>;
  __device__ __forceinline__ static W apply(W a, W b) {
    if constexpr (std::is_same_v<T, std::uint8_t>) return minmax_u8x4<!kErode>(a, b);
    else if constexpr (kErode) return fminf(a, b);
    else return fmaxf(a, b);
  }
  __device__ __forceinline__ static W identity() {
    if constexpr (std::is_same_v<T, std::uint8_t>) return kErode ? 0xffffffffu : 0u;
    else return kErode ? __int_as_float(0x7f800000) : __int_as_float(static_cast<int>(0xff800000u));
  }
};

/// One pass of the separable erosion (kErode) or dilation: along rows (kRows) out(y, x) =
/// op over in(y, x - a .. x - a + k - 1), along columns over in(y - a .. y - a + k - 1, x), with
/// a = k / 2 (OpenCV's anchor). Block 256 threads; grid (tiles along x, tiles along y up to the
/// grid's limit, the rest looped over); a tile is kMorphAlong outputs along the pass times
/// kMorphAcross lines (of kMorphPack columns each: u8 columns go four to a word). Dynamic shared
/// memory: two (kMorphAcross, kMorphAlong + k - 1) arrays of
/// words, the input (overwritten by h) and g.
template <class T, bool kErode, bool kRows>
__global__ void __launch_bounds__(kMorphThreads)
morph_pass_kernel(const T* __restrict__ in, Index ld_in, T* __restrict__ out, Index ld_out, Index rows, Index cols,
                  int k, unsigned tiles_y) {
  using Op = MorphOp<T, kErode>;
  using W = MorphWord<T>;
  constexpr int kPack = kMorphPack<T, kRows>;
  DEVMAT_DYNAMIC_SHARED(unsigned char, morph_smem_raw);
  W* const smem = reinterpret_cast<W*>(morph_smem_raw);
  const int len_in = kMorphAlong + k - 1;                 // inputs along one line of the tile
  const int pitch = kRows ? (len_in | 1) : kMorphAcross;  // odd line pitch: no bank conflicts
  const int n_words = kRows ? kMorphAcross * pitch : len_in * kMorphAcross;
  W* const h_smem = smem;            // the input, then the suffix minima h
  W* const g_smem = smem + n_words;  // the prefix minima g
  // Word of (line, position along the line).
  const auto at = [&](int line, int pos) { return kRows ? line * pitch + pos : pos * kMorphAcross + line; };
  const int anchor = k / 2;
  const int n_blocks = (len_in + k - 1) / k;
  const int tid = threadIdx.x;

  const unsigned tile_w = kRows ? kMorphAlong : kMorphAcross * kPack;
  const unsigned tile_h = kRows ? kMorphAcross : kMorphAlong;
  const Index x0 = static_cast<Index>(blockIdx.x) * tile_w;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * tile_h;
    __syncthreads();  // the previous tile is no longer read
    // Load: the contiguous dimension fastest, so a warp reads consecutive pixels.
    for (int e = tid; e < kMorphAcross * len_in; e += kMorphThreads) {
      const int line = kRows ? e / len_in : e % kMorphAcross;
      const int pos = kRows ? e % len_in : e / kMorphAcross;
      const Index y = kRows ? y0 + line : y0 - anchor + pos;
      const Index x = kRows ? x0 - anchor + pos : x0 + line * kPack;
      W word = Op::identity();
      if constexpr (kPack == 1) {
        if (y >= 0 && y < rows && x >= 0 && x < cols) word = static_cast<W>(in[y * ld_in + x]);
      } else if (y >= 0 && y < rows) {  // four columns x .. x + 3; those past the image stay identity
#pragma unroll
        for (int b = 0; b < kPack; ++b)
          if (x + b < cols) word = (word & ~(0xffu << (8 * b))) | (static_cast<unsigned>(in[y * ld_in + x + b]) << (8 * b));
      }
      h_smem[at(line, pos)] = word;
    }
    __syncthreads();
    // Prefix and suffix minima of each block of k along each line; a warp takes one block of 32
    // lines (row pass: an odd pitch apart; column pass: adjacent words).
    for (int task = tid; task < kMorphAcross * n_blocks; task += kMorphThreads) {
      const int line = task % kMorphAcross;
      const int first = (task / kMorphAcross) * k;
      const int last = ::min(first + k, len_in) - 1;
      W acc = h_smem[at(line, first)];
      g_smem[at(line, first)] = acc;
      for (int pos = first + 1; pos <= last; ++pos) {
        acc = Op::apply(acc, h_smem[at(line, pos)]);
        g_smem[at(line, pos)] = acc;
      }
      acc = h_smem[at(line, last)];
      for (int pos = last - 1; pos >= first; --pos) {
        acc = Op::apply(acc, h_smem[at(line, pos)]);
        h_smem[at(line, pos)] = acc;
      }
    }
    __syncthreads();
    // The window that starts at i (output i): min(h[i], g[i + k - 1]).
    for (int e = tid; e < kMorphAcross * kMorphAlong; e += kMorphThreads) {
      const int line = kRows ? e / kMorphAlong : e % kMorphAcross;
      const int i = kRows ? e % kMorphAlong : e / kMorphAcross;
      const Index y = kRows ? y0 + line : y0 + i;
      const Index x = kRows ? x0 + i : x0 + line * kPack;
      if (y >= rows || x >= cols) continue;
      const W v = Op::apply(h_smem[at(line, i)], g_smem[at(line, i + k - 1)]);
      if constexpr (kPack == 1) {
        out[y * ld_out + x] = static_cast<T>(v);
      } else {
        T* dst = out + y * ld_out + x;
        if (x + kPack <= cols && (reinterpret_cast<std::uintptr_t>(dst) & (sizeof(W) - 1)) == 0) {
          *reinterpret_cast<W*>(dst) = v;
        } else {
#pragma unroll
          for (int b = 0; b < kPack; ++b)
            if (x + b < cols) dst[b] = static_cast<T>(v >> (8 * b));
        }
      }
    }
  }
}

/// The same pass for elements past kMorphMaxTiledSide: one output per thread, grid-stride, k
/// reads each (through the read-only cache).
template <class T, bool kErode, bool kRows>
__global__ void __launch_bounds__(kMorphThreads)
morph_pass_direct_kernel(const T* __restrict__ in, Index ld_in, T* __restrict__ out, Index ld_out, Index rows,
                         Index cols, int k) {
  using Op = MorphOp<T, kErode>;
  const Index n = rows * cols;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index e = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += stride) {
    const Index y = e / cols, x = e - y * cols;
    const Index len = kRows ? cols : rows;
    const Index pos = kRows ? x : y;
    const Index lo = pos - k / 2 < 0 ? 0 : pos - k / 2;
    const Index hi = pos - k / 2 + k > len ? len : pos - k / 2 + k;  // one past the window's last pixel in the image
    auto acc = Op::identity();
    for (Index j = lo; j < hi; ++j)
      acc = Op::apply(acc, static_cast<MorphWord<T>>(kRows ? __ldg(in + y * ld_in + j) : __ldg(in + j * ld_in + x)));
    out[y * ld_out + x] = static_cast<T>(acc);
  }
}

// ------------------------------------------------------------------ one tile, both passes
// morph_tile_kernel: the whole kr x kc erosion or dilation of a TH x TW tile in one block, by van
// Herk / Gil-Werman along columns and then along rows, both in shared memory, so the image is
// read once and written once (the two-pass kernels above write and read a workspace between the
// passes) and each pass costs about three comparisons per pixel whatever the element's sides.
// Shared memory holds words of kMorphPack4 pixels (u8: 4, float: 1):
//  - the column pass works on words of P adjacent pixels of a row: `a` (the input, then the
//    suffix minima h) and `g` (the prefix minima), (len_a, cl) words at a pitch of cl, where
//    len_a = TH + kr - 1 input rows and cl = hl + TW / P + hr words: the tile's columns and a
//    halo of hl words on the left and hr on the right, each a multiple of 4 words, so that one
//    thread loads 16 aligned bytes (4 words) at a time;
//  - its results go, transposed for u8 (__byte_perm), to `b`: words of P vertically adjacent
//    pixels (rows qP .. qP + P - 1 of column c), (TH / P, cl * P) at an odd pitch, so that the
//    row pass again compares P pixels at once (vmin_u8x4 / vmax_u8x4) along the word's line;
//  - the row pass's prefix minima go to g2 (over `a`, no longer read by then), and its results,
//    transposed back, go from registers to the image as words of P pixels of a row.

/// Pixels a shared-memory word of morph_tile_kernel holds: four u8 pixels (of a row in the
/// column pass, of a column in the row pass), or one float.
template <class T>
inline constexpr int kMorphPack4 = std::is_same_v<T, std::uint8_t> ? 4 : 1;

constexpr int kMorphTileThreads = 256;

/// Where morph_tile_kernel's arrays lie in its dynamic shared memory, in words, for an element
/// of kr x kc and a tile of th x tw pixels with p pixels a word; the host sizes the launch with
/// the same numbers (words()).
struct MorphTileLayout {
  int hl, hr;    // halo words left and right of the tile in the column pass (multiples of 4)
  int cl;        // words along a row of the column pass: hl + tw / p + hr (a multiple of 4)
  int len_a;     // rows of the column pass: th + kr - 1
  int pitch_b;   // words between two lines (groups of p rows) of the row pass: cl * p + 1 (odd)
  int off;       // position in a row-pass line of the first input pixel, x0 - kc / 2
  int a, g, b;   // offsets of the arrays (a multiple of 4 words: 16 bytes)
  int words;     // all of them
  __host__ __device__ MorphTileLayout(int kr, int kc, int th, int tw, int p) {
    const int ac = kc / 2;
    hl = (ac + 4 * p - 1) / (4 * p) * 4;             // ceil(ac / p) rounded up to 4 words
    hr = (kc - 1 - ac + 4 * p - 1) / (4 * p) * 4;
    cl = hl + tw / p + hr;
    len_a = th + kr - 1;
    pitch_b = cl * p + 1;
    off = hl * p - ac;
    const int size_a = len_a * cl, size_b = th / p * pitch_b;
    const auto up4 = [](int n) { return (n + 3) / 4 * 4; };
    a = 0;  // also g2, the row pass's prefix minima (as b: (th / p, pitch_b))
    g = up4(size_a > size_b ? size_a : size_b);
    b = g + up4(size_a);
    words = b + up4(size_b);
  }
};

/// A tile of morph_tile_kernel: rows x cols output pixels a block.
struct MorphTileShape {
  int rows, cols;
};

/// The tiles launch_morph_tile offers, by index (0: the default), kMorphTileShapes<T> of them.
/// u8: 64 x 128, 64 x 256, 128 x 128 (a trial: at 31 x 31 it reads 1.52 times its outputs
/// against 1.81 for 64 x 128, in 71 KiB of shared memory against 40); float: 32 x 64, 64 x 64,
/// 32 x 128. Taller and wider tiles read less
/// halo (a 31 x 31 element reads 30 rows and columns around each tile) but hold more shared
/// memory, so fewer blocks fit an SM. (u8's 32 x 128 lost to 64 x 128 at every side: H200,
/// 4096^2, 3x3 .. 31x31 3.65 / 3.71 / 3.78 / 3.44 / 2.77e5 Mpix/s against 3.97 / 4.00 / 4.15 /
/// 4.13 / 3.59e5, run V1.)
template <class T>
constexpr MorphTileShape morph_tile_shape(int index) {
  constexpr MorphTileShape u8[] = {{64, 128}, {64, 256}, {128, 128}};
  constexpr MorphTileShape f32[] = {{32, 64}, {64, 64}, {32, 128}};
  return std::is_same_v<T, std::uint8_t> ? u8[index] : f32[index];
}
template <class T>
inline constexpr int kMorphTileShapes = 3;

/// The (major, minor) items of a (n, minor_n) array a block's threads take in turn, minor
/// fastest: thread t starts at item t and moves kMorphTileThreads items at a time, without a
/// division by the runtime minor_n per item.
struct MorphTileWalk {
  int major, minor;
  const int n, step_major, step_minor;
  __device__ explicit MorphTileWalk(int minor_n)
      : major(static_cast<int>(threadIdx.x) / minor_n), minor(static_cast<int>(threadIdx.x) % minor_n), n(minor_n),
        step_major(kMorphTileThreads / minor_n), step_minor(kMorphTileThreads % minor_n) {}
  __device__ void next() {
    major += step_major;
    minor += step_minor;
    if (minor >= n) {
      minor -= n;
      ++major;
    }
  }
};

/// The 4 x 4 transpose of bytes: word t of the result holds byte t of v[0] .. v[3] (byte i of
/// v[i] becomes byte i of word t); its own inverse. For floats (one pixel a word) nothing.
__device__ __forceinline__ void morph_transpose4(unsigned (&v)[4]) {
  const unsigned t0 = __byte_perm(v[0], v[1], 0x5140), t1 = __byte_perm(v[0], v[1], 0x7362);
  const unsigned t2 = __byte_perm(v[2], v[3], 0x5140), t3 = __byte_perm(v[2], v[3], 0x7362);
  v[0] = __byte_perm(t0, t2, 0x5410);
  v[1] = __byte_perm(t0, t2, 0x7632);
  v[2] = __byte_perm(t1, t3, 0x5410);
  v[3] = __byte_perm(t1, t3, 0x7632);
}
__device__ __forceinline__ void morph_transpose4(float (&)[1]) {}

/// Van Herk / Gil-Werman's block minima over `lines` lines of `len` words (word (line, pos) at
/// h[line * line_step + pos * pos_step]), blocks of k along each line: g = the prefix minima of
/// each block, h (in place) its suffix minima. The window that starts at i is then
/// op(h[i], g[i + k - 1]). A task is one block of one line, the lines fastest across threads
/// (blocks of kMorphTileThreads threads: MorphTileWalk, no division a task).
/// kBatch words are loaded before any of them is combined and stored: the stores may alias the
/// next loads as far as the compiler knows (pos_step is a runtime value), so one word at a time
/// is a shared-memory round trip per step of a serial chain; a batch keeps kBatch loads in
/// flight (the suffix pass still overwrites only words it has read: those past `pos`).
/// `tasks` is MorphTileWalk(lines) and n_blocks = ceil(len / k), made once by callers that run
/// the same shape many times (the walk's divisions cost as much as a short chain).
/// K > 0: k is K, known at compile time (an instance for one element width), and a whole block
/// of K words runs as straight-line code, its loops unrolled (a partial block at the line's end
/// takes the loops below).
template <class Op, int kBatch = 1, int K = 0, class W>
__device__ __forceinline__ void morph_block_minima(W* h, W* g, MorphTileWalk it, int n_blocks, int len, int k_arg,
                                                   int line_step, int pos_step) {
  static_assert(kBatch >= 1, "morph_block_minima: a batch of at least one word");
  static_assert(K >= 0, "morph_block_minima: K is a width or 0");
  const int k = K > 0 ? K : k_arg;
  for (; it.major < n_blocks; it.next()) {
    const int line = it.minor;
    const int first = it.major * k;
    const int last = ::min(first + k, len) - 1;
    W* const hl = h + line * line_step;
    W* const gl = g + line * line_step;
    if constexpr (K > 0) {
      if (last == first + K - 1) {
        // Whole block: words u = 0 .. K - 1 at hl[(first + u) * pos_step], kBatch loads ahead.
        W* const hb = hl + first * pos_step;
        W* const gb = gl + first * pos_step;
        W acc = hb[0];
        gb[0] = acc;
#pragma unroll
        for (int u0 = 1; u0 < K; u0 += kBatch) {
          W v[kBatch];
#pragma unroll
          for (int u = 0; u < kBatch; ++u)
            if (u0 + u < K) v[u] = hb[(u0 + u) * pos_step];
#pragma unroll
          for (int u = 0; u < kBatch; ++u)
            if (u0 + u < K) {
              acc = Op::apply(acc, v[u]);
              gb[(u0 + u) * pos_step] = acc;
            }
        }
        acc = hb[(K - 1) * pos_step];
#pragma unroll
        for (int u0 = K - 2; u0 >= 0; u0 -= kBatch) {
          W v[kBatch];
#pragma unroll
          for (int u = 0; u < kBatch; ++u)
            if (u0 - u >= 0) v[u] = hb[(u0 - u) * pos_step];
#pragma unroll
          for (int u = 0; u < kBatch; ++u)
            if (u0 - u >= 0) {
              acc = Op::apply(acc, v[u]);
              hb[(u0 - u) * pos_step] = acc;
            }
        }
        continue;
      }
    }
    W acc = hl[first * pos_step];
    gl[first * pos_step] = acc;
    int pos = first + 1;
    if constexpr (kBatch > 1) {
      for (; pos + kBatch - 1 <= last; pos += kBatch) {
        W v[kBatch];
#pragma unroll
        for (int u = 0; u < kBatch; ++u) v[u] = hl[(pos + u) * pos_step];
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          acc = Op::apply(acc, v[u]);
          gl[(pos + u) * pos_step] = acc;
        }
      }
    }
    for (; pos <= last; ++pos) {
      acc = Op::apply(acc, hl[pos * pos_step]);
      gl[pos * pos_step] = acc;
    }
    acc = hl[last * pos_step];
    pos = last - 1;
    if constexpr (kBatch > 1) {
      for (; pos - kBatch + 1 >= first; pos -= kBatch) {
        W v[kBatch];
#pragma unroll
        for (int u = 0; u < kBatch; ++u) v[u] = hl[(pos - u) * pos_step];
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          acc = Op::apply(acc, v[u]);
          hl[(pos - u) * pos_step] = acc;
        }
      }
    }
    for (; pos >= first; --pos) {
      acc = Op::apply(acc, hl[pos * pos_step]);
      hl[pos * pos_step] = acc;
    }
  }
}
template <class Op, int kBatch = 1, class W>
__device__ __forceinline__ void morph_block_minima(W* h, W* g, int lines, int len, int k, int line_step,
                                                   int pos_step) {
  morph_block_minima<Op, kBatch>(h, g, MorphTileWalk(lines), (len + k - 1) / k, len, k, line_step, pos_step);
}

/// The kr x kc erosion (kErode) or dilation of `in` into `out`, a TH x TW tile a block, both
/// passes in shared memory (MorphTileLayout; kr, kc >= 1, anchor (kr / 2, kc / 2), pixels outside
/// the image ignored, as morph_pass_kernel). Block kMorphTileThreads threads; grid (tiles along
/// x, tiles along y up to the grid's limit, the rest looped over); dynamic shared memory
/// MorphTileLayout(kr, kc, TH, TW, P).words words. kBatch: morph_block_minima's loads in flight.
template <class T, bool kErode, int TH, int TW, int kBatch = 1>
__global__ void __launch_bounds__(kMorphTileThreads)
morph_tile_kernel(const T* __restrict__ in, Index ld_in, T* __restrict__ out, Index ld_out, Index rows, Index cols,
                  int kr, int kc, unsigned tiles_y) {
  constexpr int P = kMorphPack4<T>;
  static_assert(std::is_same_v<T, std::uint8_t> || std::is_same_v<T, float>, "morph_tile_kernel: u8 or float");
  static_assert(TH % P == 0 && TW % (4 * P) == 0, "morph_tile_kernel: TH a multiple of P, TW of 4 words");
  using Op = MorphOp<T, kErode>;
  using W = MorphWord<T>;
  DEVMAT_DYNAMIC_SHARED(unsigned char, morph_tile_smem_raw);
  W* const smem = reinterpret_cast<W*>(morph_tile_smem_raw);
  const MorphTileLayout lay(kr, kc, TH, TW, P);
  W* const a_smem = smem + lay.a;    // (len_a, cl): the input, then h; later g2 (TH / P, pitch_b)
  W* const g_smem = smem + lay.g;    // (len_a, cl)
  W* const b_smem = smem + lay.b;    // (TH / P, pitch_b)
  constexpr int kCw = TW / P;        // output words along a tile row
  const int ar = kr / 2;
  const int tid = threadIdx.x;
  const Index x0 = static_cast<Index>(blockIdx.x) * TW;
  const Index xa = x0 - static_cast<Index>(lay.hl) * P;  // image column of the column pass's word 0
  // The block minima's tasks, the same for every tile: made once.
  const MorphTileWalk col_tasks(lay.cl), row_tasks(TH / P);
  const int col_blocks = (lay.len_a + kr - 1) / kr, row_blocks = (TW + kc - 1 + kc - 1) / kc;

  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * TH;
    __syncthreads();  // the previous tile is no longer read
    // Load: rows y0 - ar .., 4 words (16 bytes) a thread, a row's words fastest across threads.
    const int quads = lay.cl / 4;
    for (MorphTileWalk it(quads); it.major < lay.len_a; it.next()) {
      const int pos = it.major, quad = it.minor;
      const Index y = y0 - ar + pos;
      const Index x = xa + static_cast<Index>(quad) * 4 * P;  // first of 4 P pixels
      W* const dst = a_smem + pos * lay.cl + quad * 4;
      const bool row_in = y >= 0 && y < rows;
      const T* const row = in + (row_in ? y : 0) * ld_in;  // read only where row_in
      if (row_in && x >= 0 && x + 4 * P <= cols && (reinterpret_cast<std::uintptr_t>(row + x) & 15) == 0) {
        *reinterpret_cast<uint4*>(dst) = __ldg(reinterpret_cast<const uint4*>(row + x));
        continue;
      }
      W w[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        w[q] = Op::identity();
        if (!row_in) continue;
#pragma unroll
        for (int b = 0; b < P; ++b) {
          const Index px = x + q * P + b;
          if (px < 0 || px >= cols) continue;
          if constexpr (P == 1) w[q] = __ldg(row + px);
          else w[q] = (w[q] & ~(0xffu << (8 * b))) | (static_cast<unsigned>(__ldg(row + px)) << (8 * b));
        }
      }
#pragma unroll
      for (int q = 0; q < 4; ++q) dst[q] = w[q];
    }
    __syncthreads();
    // Column pass: block minima down each word column.
    morph_block_minima<Op, kBatch>(a_smem, g_smem, col_tasks, col_blocks, lay.len_a, kr, 1, lay.cl);
    __syncthreads();
    // Its results, rows qP .. qP + P - 1 of word column j, transposed into b: line q, pixel
    // columns jP .. jP + P - 1.
    for (MorphTileWalk it(lay.cl); it.major < TH / P; it.next()) {
      const int j = it.minor, q = it.major;
      W v[P];
#pragma unroll
      for (int t = 0; t < P; ++t) {
        const int r = q * P + t;
        v[t] = Op::apply(a_smem[r * lay.cl + j], g_smem[(r + kr - 1) * lay.cl + j]);
      }
      morph_transpose4(v);
#pragma unroll
      for (int c = 0; c < P; ++c) b_smem[q * lay.pitch_b + j * P + c] = v[c];
    }
    __syncthreads();
    // Row pass: block minima along each line of b from the tile's first input pixel (off); g2
    // over a.
    W* const g2_smem = a_smem;
    morph_block_minima<Op, kBatch>(b_smem + lay.off, g2_smem + lay.off, row_tasks, row_blocks, TW + kc - 1, kc,
                                   lay.pitch_b, 1);
    __syncthreads();
    // Its results, pixel columns mP .. mP + P - 1 of line q, transposed back into rows and
    // stored a word (P pixels of a row) at a time, a row's words fastest across threads.
    for (int e = tid; e < TH / P * kCw; e += kMorphTileThreads) {
      const int m = e % kCw, q = e / kCw;
      W v[P];
#pragma unroll
      for (int c = 0; c < P; ++c) {
        const int i = q * lay.pitch_b + lay.off + m * P + c;
        v[c] = Op::apply(b_smem[i], g2_smem[i + kc - 1]);
      }
      morph_transpose4(v);
      const Index x = x0 + static_cast<Index>(m) * P;
      if (x >= cols) continue;
#pragma unroll
      for (int t = 0; t < P; ++t) {
        const Index y = y0 + q * P + t;
        if (y >= rows) break;
        T* const dst = out + y * ld_out + x;
        if constexpr (P == 1) {
          *dst = v[t];
        } else if (x + P <= cols && (reinterpret_cast<std::uintptr_t>(dst) & (sizeof(W) - 1)) == 0) {
          *reinterpret_cast<W*>(dst) = v[t];
        } else {
#pragma unroll
          for (int b = 0; b < P; ++b)
            if (x + b < cols) dst[b] = static_cast<T>(v[t] >> (8 * b));
        }
      }
    }
  }
}

// ------------------------------------------------------------------ streaming strips
// morph_stream_kernel (u8 and float): the whole kr x kc erosion or dilation in one kernel, a
// block streaming down a strip of the image. Each thread owns kMorphStreamPx adjacent pixel
// columns (a float, or four u8 in a word compared bytewise) and reduces them along the column by
// van Herk / Gil-Werman in registers: blocks of kr rows, each block's kr words loaded at once;
// their prefix minima combined with the previous block's suffix minima give kr output rows, and
// this block's suffix minima are kept for the next. So the column pass reads each input row of
// the strip once and keeps kr loads in flight a thread. The kr rows of column results go to
// shared memory (pixels, row-major), where the row pass runs van Herk along each row
// (morph_block_minima, any kc) and the outputs leave kMorphStreamPx pixels a thread. A strip is
// kMorphStreamStrip<T> pixels wide, out_w of them outputs (the rest the row pass's halo); a block
// takes `seg` output rows of its strip (reading seg + kr - 1 rows).
//
// The loads are the lean part: a thread's column is classed once (inside the image and on word
// boundaries, or partly outside, or outside), a block of rows all inside the image loads with no
// test, and the column pass has no per-row select (the suffix array has an identity past the
// block's last row). The first version tested every pixel's row and column in 64 bits: 126
// instructions a pixel at 31 x 31 (ncu, run T5), 100 registers.
//
// Tried and left (session 16, bench_image_neigh on the H200, 4096^2): the row pass in registers
// instead of morph_block_minima's shared-memory chains, a task one segment of min(kc, 16) outputs
// of a line (the segment's words, the rest of the window folded in, then the next segment's
// prefix), the column pass's suffix minima moved to shared memory to make room, two blocks an SM
// asked for.
// It executed more instructions, not fewer (float 31 x 31: 35.5M with a guard-free path for
// whole segments, 43.4M without, against 28.6M by blocks: the per-word guards of loops over a
// runtime kc cost more than the chains they replace) and ran slower: float 31 x 31 92 us against
// 73, 21 x 21 91 against 72, 7 x 7 67 against 66; u8 31 x 31 45 us, no better than this kernel at
// 128 registers (42-43.5). Its first form (segments of kc <= 32, 182 registers, one block an
// SM) ran float 31 x 31 at 100 us. Its code was kept only on a local branch (morph-segments),
// not landed; it may not survive, and this description is enough to rebuild it.

constexpr int kMorphStreamThreads = kMorphTileThreads;  // 256: MorphTileWalk steps by it

/// Adjacent pixel columns a thread of morph_stream_kernel owns: four u8 (one word), one float.
template <class T>
inline constexpr int kMorphStreamPx = std::is_same_v<T, std::uint8_t> ? 4 : 1;

/// Pixels across a strip of morph_stream_kernel: 256 float, 1024 u8.
template <class T>
inline constexpr int kMorphStreamStrip = kMorphStreamThreads * kMorphStreamPx<T>;

/// Words (MorphWord<T>) between two lines of morph_stream_kernel's shared arrays. Float: a line
/// is a row, a word a pixel; 257 words (odd), so that the row pass's tasks, lines fastest, fall
/// in distinct banks. u8: a line is four rows, a word the four pixels of one column in them (so
/// that the row pass compares four rows at once); 1028 words, a multiple of 4 (16-byte stores)
/// and 4 modulo 32, so that the at most 8 lines of one position fall in distinct banks.
template <class T>
inline constexpr int kMorphStreamPitch = kMorphStreamStrip<T> + (std::is_same_v<T, std::uint8_t> ? 4 : 1);

/// Lines of morph_stream_kernel's shared arrays for a block of kr rows (float kr, u8 kr / 4 up).
template <class T>
__host__ __device__ constexpr int morph_stream_lines(int kr) {
  return std::is_same_v<T, std::uint8_t> ? (kr + 3) / 4 : kr;
}

/// Bytes of morph_stream_kernel's dynamic shared memory for kr rows: the column results (then
/// the row pass's suffix minima h) and the row pass's prefix minima g.
template <class T>
constexpr std::size_t morph_stream_smem_bytes(int kr) {
  return 2 * sizeof(MorphWord<T>) * static_cast<std::size_t>(morph_stream_lines<T>(kr)) * kMorphStreamPitch<T>;
}

/// Where a strip of kMorphStreamStrip<T> pixels lies for an element kc wide and px pixels a
/// thread: it starts `lead` pixels left of its first output (kc / 2 rounded up to px, so that the
/// threads' words start on px boundaries), the first output's window starts at strip pixel
/// p0 = lead - kc / 2, and out_w of its pixels are outputs, all that fit (a multiple of px,
/// p0 + out_w + kc - 1 <= strip; <= 0 when kc does not fit the strip). The strip of
/// morph_stream_doubling_kernel; morph_stream_kernel's cuts out_w (MorphStreamStrip).
struct MorphStrip {
  int lead, p0, out_w;
  __host__ __device__ MorphStrip(int kc, int px, int strip) {
    lead = (kc / 2 + px - 1) / px * px;
    p0 = lead - kc / 2;
    out_w = whole(strip - p0 - (kc - 1), px);
  }
  /// n rounded toward zero to a multiple of px.
  __host__ __device__ static int whole(int n, int px) { return n >= 0 ? n / px * px : -((-n + px - 1) / px * px); }
};

/// Where a strip of morph_stream_kernel lies for a kr x kc element and px pixels a thread:
/// MorphStrip's, but for out_w. The row pass's tasks (its `lines` x its blocks of kc) are taken
/// kMorphStreamThreads at a time: out_w is cut so that they fill whole rounds (float 31 x 31: 8
/// blocks of 31 a row, 248 tasks, one round; all of the strip's 256 pixels would make 9 blocks,
/// 279 tasks, two rounds of a 62-step chain for 23 threads). The host sizes the grid with the
/// same numbers; out_w <= 0 when kc does not fit the strip.
struct MorphStreamStrip : MorphStrip {
  __host__ __device__ MorphStreamStrip(int lines, int kc, int px, int strip) : MorphStrip(kc, px, strip) {
    const int len = strip - p0;  // pixels the row pass may span
    // One round fewer than all of len takes, where that keeps 90% of the outputs.
    const int rounds = (lines * ((len + kc - 1) / kc) + kMorphStreamThreads - 1) / kMorphStreamThreads - 1;
    const int cut = whole(rounds * kMorphStreamThreads / lines * kc - (kc - 1), px);  // out_w in that many rounds
    if (rounds >= 1 && 10 * cut >= 9 * out_w) out_w = cut;
  }
};

/// The strip of morph_stream_kernel<T> for a kr x kc element.
template <class T>
__host__ __device__ inline MorphStreamStrip morph_stream_strip(int kr, int kc) {
  return MorphStreamStrip(morph_stream_lines<T>(kr), kc, kMorphStreamPx<T>, kMorphStreamStrip<T>);
}

/// Outputs a strip of morph_stream_kernel<T> or morph_stream_doubling_kernel<T> for an image of
/// `cols` columns, at most `max_out_w` a strip (its strip's out_w): as many strips as the widest
/// need, sharing the columns evenly (a multiple of the pixels a thread), so that no strip is a
/// sliver (u8 4096 columns: 5 strips of 820, not 4 of 992 and one of 128).
template <class T>
inline long long morph_stream_out_w(int max_out_w, long long cols) {
  constexpr long long px = kMorphStreamPx<T>;
  const long long strips = (cols + max_out_w - 1) / max_out_w;
  return ((cols + strips - 1) / strips + px - 1) / px * px;
}

/// Whether morph_stream_kernel may read `in` (rows of `cols` pixels, `ld` apart): float always;
/// u8 where every row ends on a 4-byte boundary (ld a multiple of 4, in + cols aligned), so that
/// its aligned words (MorphStreamColumn) never reach past a row's last pixel. They may start up
/// to 3 bytes before a row's first pixel (the row before, or the parent of a view): inside the
/// same allocation, as an allocation starts aligned.
template <class T>
__host__ __device__ inline bool morph_stream_reads_rows(const T* in, Index ld, Index cols) {
  if constexpr (std::is_same_v<T, float>) return true;
  else return ((static_cast<unsigned long long>(ld) | (reinterpret_cast<std::uintptr_t>(in + cols))) & 3) == 0;
}

/// Whether morph_stream_kernel's unrolled loops over a block's kr <= KMAX rows leave by one
/// `break` at row kr rather than guarding each row (`continue`). With `break`, row j's code is
/// reached only from row j - 1's, so the compiler keeps the addresses in registers instead of
/// remaking them in each guarded block (float column pass: ~11 -> 7 SASS instructions a row);
/// but at KMAX 32, and for u8, it held more registers (u8 spilled 8-40 bytes) and ran slower.
/// Run E2 (H200, 4096^2): see the commit that set it.
template <class T, int KMAX>
inline constexpr bool kMorphRowsBreak = std::is_same_v<T, float> && KMAX <= 16;

/// Whether MorphStreamColumn::load_rows (and morph_stream_doubling_kernel's stores) take each of
/// KMAX rows predicated, the address advanced whatever the row (about 4 SASS instructions a
/// row), rather than through morph_for_rows: its `break` left the rows past kr in different
/// registers on each way out, about 15 moves a row at 16 rows (cuobjdump, sm_90). Float only
/// (u8's 32-row morph_stream_kernel took 188 registers, not 128), and not at 12 or 16 rows, where
/// the doubling kernel ran slower for it in spite of 21% fewer instructions (H200, 4096^2 float
/// erode, us, predicated against morph_for_rows, same run: 9x9 60.7 against 58.1, 15x15 59.3
/// against 55.9; but 7x7 53.3 against 55.1, and morph_stream_kernel's 32 rows 21x21 68.0 against
/// 70.2, 31x31 69.4 against 72.3).
template <class T, int KMAX>
inline constexpr bool kMorphRowsPredicated = std::is_same_v<T, float> && (KMAX <= 8 || KMAX > 16);

/// f(j) for rows j = 0 .. kr - 1 of an unrolled loop over KMAX rows, left at row kr as
/// kMorphRowsBreak<T, KMAX> says.
template <class T, int KMAX, class F>
__device__ __forceinline__ void morph_for_rows(int kr, F&& f) {
#pragma unroll
  for (int j = 0; j < KMAX; ++j) {
    if (j >= kr) {
      if constexpr (kMorphRowsBreak<T, KMAX>) break;
      else continue;
    }
    f(j);
  }
}

/// A thread's pixel columns x .. x + kMorphStreamPx - 1 of morph_stream_kernel's input: `word`
/// when all of them lie inside the image and (u8) the word is 4-byte aligned in every row, so
/// that a row is one load; else (u8) `some` when any lies inside: a row is the two aligned words
/// that hold its first and last pixel inside, shifted into place, the pixels past the image set
/// to the identity (morph_stream_reads_rows: neither word reaches past the row's last pixel);
/// else none (the identity). load_rows fills w[0 .. kr - 1] with rows y .. y + kr - 1 (rows
/// outside the image: the identity).
template <class T, bool kErode>
struct MorphStreamColumn {
  using W = MorphWord<T>;
  static constexpr int kPx = kMorphStreamPx<T>;
  const T* col;  // the column's first pixel in row 0 (the image's first pixel where none is inside)
  Index rows, ld;
  bool word, some;
  int last = 0;          // u8, some: the last pixel inside, from x (0 .. 3)
  unsigned outside = 0;  // u8, some: the bytes of the pixels past the image
  __device__ MorphStreamColumn(const T* in, Index ld_in, Index rows_, Index cols, Index x) : rows(rows_), ld(ld_in) {
    some = x + kPx > 0 && x < cols;
    word = x >= 0 && x + kPx <= cols;
    col = in + (some ? x : 0);  // x >= 0 where some: strips start on px boundaries, x <= -px left of the image
    if constexpr (kPx > 1) {
      word = word && ((reinterpret_cast<std::uintptr_t>(col) | static_cast<std::uintptr_t>(ld)) & (sizeof(W) - 1)) == 0;
      if (some) {
        last = static_cast<int>(cols - x < kPx ? cols - x : kPx) - 1;
        outside = last + 1 < kPx ? ~0u << (8 * (last + 1)) : 0u;
      }
    }
  }
  /// Row y's pixels (y inside the image).
  __device__ __forceinline__ W load(const T* p) const {
    if constexpr (kPx == 1) {
      return __ldg(p);
    } else {
      if (word) return __ldg(reinterpret_cast<const W*>(p));
      const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(p);
      const W lo = __ldg(reinterpret_cast<const W*>(a & ~std::uintptr_t{3}));
      const W hi = __ldg(reinterpret_cast<const W*>((a + static_cast<std::uintptr_t>(last)) & ~std::uintptr_t{3}));
      const W v = __funnelshift_r(lo, hi, 8u * static_cast<unsigned>(a & 3));
      return (v & ~outside) | (MorphOp<T, kErode>::identity() & outside);
    }
  }
  template <int KMAX>
  __device__ __forceinline__ void load_rows(W (&w)[KMAX], Index y, int kr) const {
    const W id = MorphOp<T, kErode>::identity();
    const T* p = col + y * ld;  // dereferenced only at rows inside the image; one row further a load
    if (!some) {
#pragma unroll
      for (int j = 0; j < KMAX; ++j) w[j] = id;
    } else if (y >= 0 && y + kr <= rows) {
      if constexpr (kMorphRowsPredicated<T, KMAX>) {
#pragma unroll
        for (int j = 0; j < KMAX; ++j) {
          if (j < kr) w[j] = load(p);
          p += ld;
        }
      } else {
        morph_for_rows<T, KMAX>(kr, [&](int j) {
          w[j] = load(p);
          p += ld;
        });
      }
    } else {
      morph_for_rows<T, KMAX>(kr, [&](int j) {
        w[j] = y + j >= 0 && y + j < rows ? load(p) : id;
        p += ld;
      });
    }
  }
};

/// A block's strip of morph_stream_kernel or morph_stream_doubling_kernel (`strip`: its lead
/// and p0) for a thread: the strip's first output pixel x0 (out_w a strip), its outputs inside the
/// image (w_here), whether an output's window covers the thread's pixels (`needed`: strip pixels
/// p0 .. p0 + w_here + kc - 2) and its input column (none where not needed).
template <class T, bool kErode>
struct MorphStreamThread {
  Index x0;
  int w_here;
  bool needed;
  MorphStreamColumn<T, kErode> column;
  template <class Strip>
  __device__ MorphStreamThread(const Strip& strip, const T* in, Index ld_in, Index rows, Index cols, int kc, int out_w)
      : x0(static_cast<Index>(blockIdx.x) * out_w),
        w_here(static_cast<int>(cols - x0 < out_w ? cols - x0 : out_w)),
        needed(kMorphStreamPx<T> * static_cast<int>(threadIdx.x) < strip.p0 + w_here + kc - 1),
        column(in, ld_in, rows, needed ? cols : 0,
               x0 - strip.lead + static_cast<Index>(kMorphStreamPx<T>) * static_cast<Index>(threadIdx.x)) {}
};

/// Asks L2 for rows y .. y + n - 1 (those inside the image) of a block's strip (`strip`, out_w
/// outputs a strip) ahead of their loads, for a streaming kernel's kPrefetch: thread t < n one
/// bulk prefetch of row y + t's pixels that the strip reads (clamped to the image, and inward to
/// 16 bytes: the head and tail under 16 bytes lie in lines the rest already asks for or are read
/// without; cp.async.bulk.prefetch.L2, sm_90; elsewhere, and in the CPU emulation, nothing). The
/// stream keeps one block of kr rows in flight in registers and nothing else, which ran its
/// rounds at about 3 TB/s (float, 4096^2, run S12); this asks for the block after next while the
/// next one loads.
template <class T, class Strip>
__device__ __forceinline__ void morph_prefetch_rows(const T* in, Index ld, Index rows, Index cols, const Strip& strip,
                                                    int kc, int out_w, Index y, int n) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const int t = static_cast<int>(threadIdx.x);
  const Index r = y + t;
  if (t >= n || r < 0 || r >= rows) return;
  // The strip's pixels that its threads read (MorphStreamThread's `needed`), made here from the
  // block's index (uniform: no registers held across the stream).
  const Index x0 = static_cast<Index>(blockIdx.x) * out_w;
  const Index w_here = cols - x0 < out_w ? cols - x0 : out_w;
  const Index x_lo = x0 - strip.lead, x_hi = x_lo + ::min(Index(kMorphStreamStrip<T>), strip.p0 + w_here + kc - 1);
  const Index lo = x_lo < 0 ? 0 : x_lo, hi = x_hi > cols ? cols : x_hi;
  const auto a = (reinterpret_cast<std::uintptr_t>(in + r * ld + lo) + 15) & ~std::uintptr_t{15};
  const auto e = reinterpret_cast<std::uintptr_t>(in + r * ld + hi) & ~std::uintptr_t{15};
  if (e > a)
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(a), "r"(static_cast<unsigned>(e - a)) : "memory");
#else
  (void)in, (void)ld, (void)rows, (void)cols, (void)strip, (void)kc, (void)out_w, (void)y, (void)n;
#endif
}

/// Blocks an SM morph_stream_kernel's launch bounds ask for: none (0: ptxas's choice, 124-128
/// registers for the run-time instance at 32 rows, two blocks; the exact-height ones vary, u8
/// 25 and 27 rows up to 150, one block), but two for the u8 instances with an unrolled row pass
/// (KC > 0), which took 181 registers at 31 x 31 without (128 and a 28-byte spill with).
/// Tried and left (session 24, H200, 4096^2, us, the run-time-rows instances, same run): asking
/// every instance for 2 or 3 blocks an SM, and the doubling kernel for 3 or 4 instead of 2. Two
/// gave 120 registers and no spill where there were 124-128, and no gain (f32 erode 31x31 69.8
/// -> 71.3, 21x21 66.1 -> 68.5; u8 dilate 31x31 38.0 -> 37.7, 21x21 37.5 -> 37.2); three spilled
/// (80 registers) and lost (f32 31x31 81.6, u8 31x31 56.9); the doubling kernel at 3 or 4 blocks
/// was within noise (f32 15x15 55.7 -> 56.4 / 56.4, u8 9x9 36.5 -> 34.6 / 40.3).
template <class T, int KC>
inline constexpr int kMorphStreamMinBlocks = std::is_same_v<T, std::uint8_t> && KC > 0 ? 2 : 0;

/// The kr x kc erosion (kErode) or dilation of `in` (u8 or float, morph_stream_reads_rows) into
/// `out`, kr <= KMAX (the register arrays of the column pass), kc with
/// morph_stream_strip<T>(kr, kc).out_w > 0, `out_w` outputs a strip (0 < out_w <= that, a multiple
/// of kMorphStreamPx<T>: morph_stream_out_w); anchor
/// (kr / 2, kc / 2), pixels outside the image ignored, as morph_pass_kernel. Block
/// kMorphStreamThreads threads; grid (strips, segments of `seg` output rows up to the grid's
/// limit, the rest looped over: `segs` in all); dynamic shared memory morph_stream_smem_bytes<T>(kr)
/// (the column results, then the row pass's suffix minima h; its prefix minima g). KR > 0: an
/// instance for kr == KR only (morph_stream_exact_rows), its row guards folded away; KC > 0 one
/// for kc == KC only, its row pass's whole blocks unrolled (morph_block_minima). kPrefetch: each
/// block asks L2 for its block of rows after next as the next one loads (morph_prefetch_rows).
template <class T, bool kErode, int KMAX, int KR = 0, int KC = 0, bool kPrefetch = false>
__global__ void __launch_bounds__(kMorphStreamThreads, kMorphStreamMinBlocks<T, KC>)
morph_stream_kernel(const T* __restrict__ in, Index ld_in, T* __restrict__ out, Index ld_out, Index rows, Index cols,
                    int kr_arg, int kc_arg, int out_w, int seg, unsigned segs) {
  static_assert(std::is_same_v<T, std::uint8_t> || std::is_same_v<T, float>, "morph_stream_kernel: u8 or float");
  static_assert(KMAX >= 1, "morph_stream_kernel: at least one row a block");
  static_assert(KR >= 0 && KR <= KMAX, "morph_stream_kernel: KR rows fit the register arrays");
  static_assert(KC >= 0, "morph_stream_kernel: KC is a width or 0");
  const int kr = KR > 0 ? KR : kr_arg;
  const int kc = KC > 0 ? KC : kc_arg;
  constexpr bool kU8 = std::is_same_v<T, std::uint8_t>;
  static_assert(!kU8 || KMAX % 4 == 0, "morph_stream_kernel: u8 rows go four to a shared word");
  constexpr int kPx = kMorphStreamPx<T>;
  constexpr int kPitch = kMorphStreamPitch<T>;
  using Op = MorphOp<T, kErode>;  // on words: a float, or four u8 (of a row in registers, of a column in shared memory)
  using W = MorphWord<T>;
  DEVMAT_DYNAMIC_SHARED(unsigned char, morph_stream_smem_raw);
  const int n_lines = morph_stream_lines<T>(kr);
  W* const v_smem = reinterpret_cast<W*>(morph_stream_smem_raw);  // (n_lines, kPitch): column results, then h
  W* const g_smem = v_smem + n_lines * kPitch;                     // (n_lines, kPitch): the row pass's g
  const MorphStreamStrip strip = morph_stream_strip<T>(kr, kc);
  const int ar = kr / 2;
  const int tid = threadIdx.x;
  const MorphStreamThread<T, kErode> me(strip, in, ld_in, rows, cols, kc, out_w);
  const Index x0 = me.x0;
  const int w_here = me.w_here;
  const bool needed = me.needed;  // whether the row pass reads this thread's pixels
  const MorphStreamColumn<T, kErode>& column = me.column;
  // The row pass's tasks for a whole block of rows, the same for every block but a segment's
  // last: made once.
  const MorphTileWalk full_tasks(n_lines);
  const int row_len = w_here + kc - 1, row_blocks = (row_len + kc - 1) / kc;
  W* const v_col = v_smem + kPx * tid;  // this thread's first word of line 0 of v
  const int m_out = kPx * tid;          // this thread's first output pixel of a row

  for (unsigned seg_y = blockIdx.y; seg_y < segs; seg_y += gridDim.y) {
    const Index y0 = static_cast<Index>(seg_y) * seg;
    const int n_out = static_cast<int>(rows - y0 < seg ? rows - y0 : seg);  // output rows of this segment
    // Column blocks of kr input rows from y0 - ar - 1; block b >= 1 completes the windows that
    // start at segment rows (b - 1) kr .. b kr - 1 (its row j ends the window of row
    // (b - 1) kr + j); block 0 only leaves its suffix minima for block 1 (the row above the
    // segment's first window, so that every later block completes kr whole rows).
    const int n_blocks = 1 + (n_out + kr - 1) / kr;
    W cur[KMAX];     // this block's words, top to bottom
    W hs[KMAX + 1];  // the previous block's suffix minima; hs[j] for j >= kr stays the identity
#pragma unroll
    for (int j = 0; j <= KMAX; ++j) hs[j] = Op::identity();
    column.load_rows(cur, y0 - ar - 1, kr);
    if constexpr (kPrefetch)
      if (n_blocks > 1) morph_prefetch_rows(in, ld_in, rows, cols, strip, kc, out_w, y0 - ar - 1 + kr, kr);
    for (int b = 0; b < n_blocks; ++b) {
      if (b > 0) {
        __syncthreads();  // the previous block's rows are no longer read
        if (needed) {
          // Column pass: the window ending at row j of this block = op(suffix of the previous
          // block from j + 1, prefix of this one to j); at j = kr - 1 the suffix is the identity
          // and the window is this whole block.
          W g = Op::identity();
          if constexpr (kU8) {
            // Rows 4q .. 4q + 3 (the identity past kr), transposed into the words of the thread's
            // four pixel columns on line q: one 16-byte store.
#pragma unroll
            for (int q = 0; q < KMAX / 4; ++q) {
              if (4 * q < kr) {
                W v[4];
#pragma unroll
                for (int r = 0; r < 4; ++r) {
                  const int j = 4 * q + r;
                  v[r] = Op::identity();
                  if (j < kr) {
                    g = Op::apply(g, cur[j]);
                    v[r] = Op::apply(hs[j + 1], g);
                  }
                }
                morph_transpose4(v);
                *reinterpret_cast<uint4*>(v_col + q * kPitch) = make_uint4(v[0], v[1], v[2], v[3]);
              }
            }
          } else {
            morph_for_rows<T, KMAX>(kr, [&](int j) {
              g = Op::apply(g, cur[j]);
              v_col[j * kPitch] = Op::apply(hs[j + 1], g);
            });
          }
        }
      }
#pragma unroll
      for (int j = KMAX - 1; j >= 0; --j)
        if (j < kr) hs[j] = Op::apply(cur[j], hs[j + 1]);
      if (b + 1 < n_blocks) column.load_rows(cur, y0 - ar - 1 + static_cast<Index>(b + 1) * kr, kr);  // in flight
      if constexpr (kPrefetch)
        if (b + 2 < n_blocks)
          morph_prefetch_rows(in, ld_in, rows, cols, strip, kc, out_w, y0 - ar - 1 + static_cast<Index>(b + 2) * kr, kr);
      if (b == 0) continue;
      __syncthreads();
      // Row pass over the rows of this block's results that are outputs: segment rows first_i ..
      const int first_i = (b - 1) * kr;
      const int out_rows = n_out - first_i < kr ? n_out - first_i : kr;
      const int lines = morph_stream_lines<T>(out_rows);
      W* const h_rows = v_smem + strip.p0;
      W* const g_rows = g_smem + strip.p0;
      morph_block_minima<Op, 4, KC>(h_rows, g_rows, lines == n_lines ? full_tasks : MorphTileWalk(lines), row_blocks,
                                    row_len, kc, kPitch, 1);
      __syncthreads();
      // Outputs: the window that starts at strip pixel p0 + m is op(h[m], g[m + kc - 1]); a
      // thread the kPx pixels m = kPx tid .. of each row (those of out_w), down the lines (u8:
      // four columns of a line transposed back into four rows).
      if (m_out < w_here) {
        const W* h = h_rows + m_out;
        const W* g = g_rows + m_out + kc - 1;
        const Index x = x0 + m_out;
        T* row = out + (y0 + first_i) * ld_out;  // u8: the row; float: its pixel x
        if constexpr (!kU8) row += x;
        const auto emit = [&](int line) {  // line `line` of h and g, then the next
          if constexpr (kU8) {
            W v[4];
#pragma unroll
            for (int c = 0; c < 4; ++c) v[c] = Op::apply(h[c], g[c]);
            morph_transpose4(v);
#pragma unroll
            for (int r = 0; r < 4; ++r, row += ld_out)
              if (4 * line + r < out_rows) store_word(row, x, cols, v[r]);  // border.cuh: a word where aligned and inside
          } else {
            *row = Op::apply(*h, *g);
            row += ld_out;
          }
          h += kPitch;
          g += kPitch;
        };
        // A whole block of an exact-height instance (kr output rows, all in the segment and the
        // image: every block where the segment is a multiple of kr, as the launcher's are, but
        // at the image's foot): its lines and row guards known at compile time.
        bool whole = false;
        if constexpr (KR > 0) {
          if (out_rows == KR) {
            whole = true;
#pragma unroll
            for (int line = 0; line < morph_stream_lines<T>(KR); ++line) emit(line);
          }
        }
        if (!whole)
          for (int line = 0; line < lines; ++line) emit(line);
      }
    }
  }
}

// ------------------------------------------------------------------ streaming strips, doubling
// morph_stream_doubling_kernel (u8 and float): morph_stream_kernel's strips, segments and column
// pass (van Herk / Gil-Werman in registers, kr rows at a time), with the row pass done by
// doubling windows instead of van Herk's chains: each thread keeps its column results (one word:
// a float, or four u8 of a row) in registers, and a step combines each with the word `span`
// pixels to its right, read from shared memory where the step before left them, so that windows
// of span pixels become windows of 2 span: floor(log2(kc)) steps, then the kc window is
// op(w[p], w[p + kc - span]) (two windows of span <= kc that cover it). Every step is, for each
// row, one load, one op and one store, over KMAX rows with no test (the rows past kr are
// computed and never stored: their shared memory is there, KMAX lines), so that the loads of a
// step are in flight together; no loop over kc and no serial chain (morph_block_minima's chains
// are kc steps of a load, an op and a store each waiting for the one before). The cost grows
// with log2(kc): 4 steps at 17 .. 31, 2 at 4 .. 7. Shared memory: two arrays of (KMAX, 256)
// words that the steps read and write in turn, one barrier a step. Up to 16 rows
// (kMorphDoublingMaxRows); float erode/dilate take it there (dispatch/image_morph.cuh).
// Tried and left (session 17), for 17 .. 32 rows without 32-row register arrays: column blocks
// of 16 rows, and the kr window ending at row e as op(W16(e - (kr - 16)), W16(e)), two 16-row
// windows (van Herk's results of this block and the one before) that cover it, the earlier ones
// read back from a 32-line ring of each thread's own column in shared memory (no barrier: a
// thread reads only what it wrote), one block more at each segment's top. Exact (emulation), 96
// registers, and no faster: H200, 4096^2 float erode, 21x21 70.8 us against morph_stream_kernel's
// 68.4, 31x31 72.7 against 71.0 (15x15 on the doubling kernel 59.3 in the same run). So past 16
// rows the 32-row register arrays were not what held it back; the code is on the local branch
// morph-split only (it may not survive; this is enough to rebuild it).

/// The strip of morph_stream_doubling_kernel<T> for an element kc wide.
template <class T>
__host__ __device__ inline MorphStrip morph_doubling_strip(int kc) {
  return MorphStrip(kc, kMorphStreamPx<T>, kMorphStreamStrip<T>);
}

/// Rows a block of morph_stream_doubling_kernel at most: past 16 its register arrays (the block's
/// words in flight, the suffix minima and the windows, KMAX each) crowd 128 registers, and it ran
/// slower than morph_stream_kernel (H200, 4096^2, float, us: 21x21 70.8 at KMAX 24 against 70.9,
/// 31x31 74.9 at KMAX 32 against 72.9; u8 31x31 50.1 against 42.0, spilling 168 bytes).
constexpr int kMorphDoublingMaxRows = 16;

/// The register rows (KMAX) of the morph_stream_doubling_kernel instance that takes kr rows
/// (kr <= kMorphDoublingMaxRows): 4, 6, 8, 12 or 16, the first at or above kr (its rows past kr
/// are computed for nothing: H200, 4096^2 float erode, us, 3x3 59.1 at 4 rows against 77.2 at 8,
/// 5x5 55.8 at 6 against 60.5 at 8).
__host__ __device__ constexpr int morph_doubling_rows(int kr) {
  return kr <= 4 ? 4 : kr <= 6 ? 6 : kr <= 8 ? 8 : kr <= 12 ? 12 : 16;
}

/// Whether the streaming kernel that takes kr rows (morph_stream_doubling_kernel, `doubling`, or
/// morph_stream_kernel) has an instance for exactly kr rows (template KR): the odd heights from
/// 5 to 15 of the doubling kernel and from 17 to 31 of morph_stream_kernel. The others run its
/// KMAX instance with kr a run-time value, each row of the column pass guarded by j < kr: at
/// 31 x 31 (float, ncu, H200) that column pass ran about 14 instructions a row where 3 are
/// compares, the guards' predicates and the register moves at their joins most of the rest.
__host__ __device__ constexpr bool morph_stream_exact_rows(int kr, bool doubling) {
  return kr % 2 == 1 && (doubling ? kr >= 5 && kr <= 15 : kr >= 17 && kr <= 31);
}

/// Which instance of a streaming kernel with_morph_stream_rows picks: the one with kr and kc at
/// run time, the one for exactly kr rows (where morph_stream_exact_rows), or (morph_stream_kernel
/// and a square element) the one for exactly kr rows and kc == kr columns, whose row pass also
/// runs unrolled (morph_block_minima's K). Candidates until the H200 has timed them side by side
/// (bench_image_neigh's "-rt" and "-sq" rows beside "ours-stream").
enum class MorphStreamExact { none, rows, square };

/// f(std::integral_constant<int, KMAX>{}, std::integral_constant<int, KR>{},
/// std::integral_constant<int, KC>{}) for the streaming kernel that takes a kr x kc element: its
/// register rows KMAX, morph_stream_doubling_kernel's morph_doubling_rows(kr) (`doubling`), else
/// morph_stream_kernel's 8, 16 or 32 (it computes only rows below kr); KR = kr where `exact` asks
/// for it and the kernel has the instance (morph_stream_exact_rows), else 0 (kr at run time); KC =
/// kc == KR for MorphStreamExact::square on morph_stream_kernel, else 0. For the launcher and the
/// emulation alike.
template <class F>
void with_morph_stream_rows(int kr, int kc, bool doubling, F&& f, MorphStreamExact exact) {
  using std::integral_constant;
  const auto rows = [&](auto kmax) {
    constexpr int KMAX = decltype(kmax)::value;
    if (exact != MorphStreamExact::none && morph_stream_exact_rows(kr, doubling)) {
      const bool square = !doubling && exact == MorphStreamExact::square && kc == kr;
      bool done = false;
      const auto one = [&](auto krc) {  // KR's instance, where KR is kr and its kernel's KMAX this one
        constexpr int KR = decltype(krc)::value;
        if constexpr (KMAX == (KR <= kMorphDoublingMaxRows ? morph_doubling_rows(KR) : 32))
          if (!done && kr == KR) {
            if constexpr (KR > kMorphDoublingMaxRows)
              if (square) return void(done = (f(kmax, krc, krc), true));
            done = (f(kmax, krc, integral_constant<int, 0>{}), true);
          }
      };
      if (doubling) {
        one(integral_constant<int, 5>{}), one(integral_constant<int, 7>{}), one(integral_constant<int, 9>{});
        one(integral_constant<int, 11>{}), one(integral_constant<int, 13>{}), one(integral_constant<int, 15>{});
      } else if constexpr (KMAX == 32) {
        one(integral_constant<int, 17>{}), one(integral_constant<int, 19>{}), one(integral_constant<int, 21>{});
        one(integral_constant<int, 23>{}), one(integral_constant<int, 25>{}), one(integral_constant<int, 27>{});
        one(integral_constant<int, 29>{}), one(integral_constant<int, 31>{});
      }
      if (done) return;
    }
    f(kmax, integral_constant<int, 0>{}, integral_constant<int, 0>{});
  };
  switch (doubling ? morph_doubling_rows(kr) : kr <= 8 ? 8 : kr <= 16 ? 16 : 32) {
    case 4: return rows(integral_constant<int, 4>{});
    case 6: return rows(integral_constant<int, 6>{});
    case 8: return rows(integral_constant<int, 8>{});
    case 12: return rows(integral_constant<int, 12>{});
    case 16: return rows(integral_constant<int, 16>{});
    default: return rows(integral_constant<int, 32>{});
  }
}

/// Bytes of dynamic shared memory of morph_stream_doubling_kernel<T, ., KMAX>: two (KMAX, 256)
/// arrays of words.
template <class T>
constexpr std::size_t morph_doubling_smem_bytes(int kmax) {
  return 2 * sizeof(MorphWord<T>) * static_cast<std::size_t>(kmax) * kMorphStreamThreads;
}

/// The word of pixels p .. p + kMorphStreamPx<T> - 1 of a line of words (a float: word p; u8:
/// the bytes of words p / 4 and p / 4 + 1 shifted into place), words past the line's last
/// (kMorphStreamThreads - 1) read as its last: the pixels they would give are never outputs'.
template <class T>
__device__ __forceinline__ MorphWord<T> morph_line_word(const MorphWord<T>* line, int p) {
  constexpr int kLast = kMorphStreamThreads - 1;
  if constexpr (std::is_same_v<T, float>) {
    return line[::min(p, kLast)];
  } else {
    const int q = p >> 2;
    const unsigned lo = line[::min(q, kLast)];
    return __funnelshift_r(lo, line[::min(q + 1, kLast)], 8u * static_cast<unsigned>(p & 3));
  }
}

/// The kr x kc erosion (kErode) or dilation of `in` (u8 or float, morph_stream_reads_rows) into
/// `out`, kr <= KMAX (morph_doubling_rows), kc with
/// morph_doubling_strip<T>(kc).out_w > 0, `out_w` outputs a strip (0 < out_w <= that, a multiple
/// of kMorphStreamPx<T>); anchor (kr / 2, kc / 2), pixels outside the image ignored, as
/// morph_pass_kernel. Block kMorphStreamThreads threads; grid (strips, segments of `seg` output
/// rows up to the grid's limit, the rest looped over: `segs` in all); dynamic shared memory
/// morph_doubling_smem_bytes<T>(KMAX). KR > 0: an instance for kr == KR only, and kPrefetch, as
/// morph_stream_kernel's.
template <class T, bool kErode, int KMAX, int KR = 0, bool kPrefetch = false>
__global__ void __launch_bounds__(kMorphStreamThreads, 2)
morph_stream_doubling_kernel(const T* __restrict__ in, Index ld_in, T* __restrict__ out, Index ld_out, Index rows,
                             Index cols, int kr_arg, int kc, int out_w, int seg, unsigned segs) {
  static_assert(std::is_same_v<T, std::uint8_t> || std::is_same_v<T, float>,
                "morph_stream_doubling_kernel: u8 or float");
  static_assert(KMAX >= 1 && KMAX <= kMorphDoublingMaxRows, "morph_stream_doubling_kernel: 1 to 16 rows a block");
  static_assert(KR >= 0 && KR <= KMAX, "morph_stream_doubling_kernel: KR rows fit the register arrays");
  const int kr = KR > 0 ? KR : kr_arg;
  // The register rows the loops below run over: KR where the instance is for exactly KR rows
  // (the rest of the arrays is never read), else all KMAX (rows kr .. KMAX - 1 computed for
  // nothing: their words are the identity).
  constexpr int kLiveRows = KR > 0 ? KR : KMAX;
  constexpr bool kU8 = std::is_same_v<T, std::uint8_t>;
  // The rows the column loads take (load_rows guards each row by it): u8 passes the run-time kr
  // even in an exact instance (kr_arg == KR there). With KR the u8 loads unrolled into more
  // registers (ptxas, sm_90, exact against run-time kr at the loads: 5 rows 72 / 64, 7 90 / 70,
  // 9 94 / 80, 11 112 / 91, 13 124 / 102, 15 126 / 111), float's did not (7 48 / 54, 9 56 / 54,
  // 15 80 / 76), so float keeps KR. Unmeasured on the device.
  const int kr_load = kU8 ? kr_arg : kr;
  constexpr int kPx = kMorphStreamPx<T>;
  constexpr int kPitch = kMorphStreamThreads;  // words a line
  using Op = MorphOp<T, kErode>;
  using W = MorphWord<T>;
  DEVMAT_DYNAMIC_SHARED(unsigned char, morph_doubling_smem_raw);
  W* src = reinterpret_cast<W*>(morph_doubling_smem_raw);  // (KMAX, kPitch): what the row pass reads last
  W* dst = src + KMAX * kPitch;                            // (KMAX, kPitch): the other, the column pass's
  const MorphStrip strip = morph_doubling_strip<T>(kc);
  const int ar = kr / 2;
  const int tid = threadIdx.x;
  const MorphStreamThread<T, kErode> me(strip, in, ld_in, rows, cols, kc, out_w);
  const MorphStreamColumn<T, kErode>& column = me.column;
  int top = 1;  // the widest window of the doubling steps: the largest power of two <= kc
  while (2 * top <= kc) top *= 2;
  const Index x_out = me.x0 + kPx * tid;  // this thread's first output pixel
  const bool outputs = kPx * tid < me.w_here;
  const int q = strip.p0 + kPx * tid;  // the strip pixel where its first output's window starts

  for (unsigned seg_y = blockIdx.y; seg_y < segs; seg_y += gridDim.y) {
    const Index y0 = static_cast<Index>(seg_y) * seg;
    const int n_out = static_cast<int>(rows - y0 < seg ? rows - y0 : seg);  // output rows of this segment
    // Column blocks of kr input rows from y0 - ar - 1, as morph_stream_kernel: block b >= 1
    // completes the windows of segment rows (b - 1) kr .. b kr - 1. Rows kr .. KMAX - 1 of cur
    // are never loaded and stay the identity, so that hs past kr does too.
    const int n_blocks = 1 + (n_out + kr - 1) / kr;
    W cur[KMAX];     // this block's words, top to bottom
    W hs[KMAX + 1];  // the previous block's suffix minima
#pragma unroll
    for (int j = 0; j < KMAX; ++j) cur[j] = hs[j] = Op::identity();
    hs[KMAX] = Op::identity();
    column.load_rows(cur, y0 - ar - 1, kr_load);
    if constexpr (kPrefetch)
      if (n_blocks > 1) morph_prefetch_rows(in, ld_in, rows, cols, strip, kc, out_w, y0 - ar - 1 + kr, kr);
    for (int b = 0; b < n_blocks; ++b) {
      W w[KMAX];  // the rows' windows along the row, span pixels wide
      if (b > 0) {
        // Column pass: the window ending at row j of this block = op(suffix of the previous
        // block from j + 1, prefix of this one to j); into dst, the array the previous block's
        // outputs do not read (its last reads of it came before a barrier).
        W g = Op::identity();
#pragma unroll
        for (int j = 0; j < kLiveRows; ++j) {
          g = Op::apply(g, cur[j]);
          w[j] = Op::apply(hs[j + 1], g);
          dst[j * kPitch + tid] = w[j];
        }
      }
#pragma unroll
      for (int j = kLiveRows - 1; j >= 0; --j) hs[j] = Op::apply(cur[j], hs[j + 1]);
      if (b + 1 < n_blocks) column.load_rows(cur, y0 - ar - 1 + static_cast<Index>(b + 1) * kr, kr_load);  // in flight
      if constexpr (kPrefetch)
        if (b + 2 < n_blocks)
          morph_prefetch_rows(in, ld_in, rows, cols, strip, kc, out_w, y0 - ar - 1 + static_cast<Index>(b + 2) * kr, kr);
      if (b == 0) continue;
      // Row pass: w[j] holds the window of `span` pixels from this thread's first; each step
      // reads the window span pixels on from the array the step before wrote (src) and writes
      // its own to the other (dst), a barrier after each write.
      for (int span = 1;; span *= 2) {
        __syncthreads();
        W* const t = src;
        src = dst;
        dst = t;
        if (span == top) break;
        const int p = kPx * tid + span;
        W v[KMAX];
#pragma unroll
        for (int j = 0; j < kLiveRows; ++j) v[j] = morph_line_word<T>(src + j * kPitch, p);
#pragma unroll
        for (int j = 0; j < kLiveRows; ++j) {
          w[j] = Op::apply(w[j], v[j]);
          dst[j * kPitch + tid] = w[j];
        }
      }
      // The kc window from strip pixel q: op(w[q], w[q + kc - top]), w of span top in src.
#pragma unroll
      for (int j = 0; j < kLiveRows; ++j) {
        const W* line = src + j * kPitch;
        const W lo = strip.p0 == 0 ? w[j] : morph_line_word<T>(line, q);
        w[j] = kc == top ? lo : Op::apply(lo, morph_line_word<T>(line, q + kc - top));
      }
      if (outputs) {
        const int first_i = (b - 1) * kr;
        const int out_rows = n_out - first_i < kr ? n_out - first_i : kr;
        T* row = out + (y0 + first_i) * ld_out;
        if constexpr (kMorphRowsPredicated<T, KMAX>) {
          row += x_out;
#pragma unroll
          for (int j = 0; j < kLiveRows; ++j) {
            if (j < out_rows) *row = w[j];
            row += ld_out;
          }
        } else {
#pragma unroll
          for (int j = 0; j < kLiveRows; ++j) {
            if (j >= out_rows) break;
            if constexpr (kU8) store_word(row, x_out, cols, w[j]);  // border.cuh: a word where aligned and inside
            else row[x_out] = w[j];
            row += ld_out;
          }
        }
      }
    }
  }
}

/// Blocks an SM the fused kernels' launch bounds ask for: u8 4 (64 registers; 5x5 took 80
/// without), float 3 (80; 5x5 took 108, and now spills 24 bytes). H200, 4096^2, us, with the
/// bounds against without, same run: u8 dilate 5x5 33.2 against 37.1, 3x3 28.8 against 29.7;
/// float dilate 5x5 58.6 against 64.1, 3x3 47.4 against 47.8.
template <class T>
inline constexpr int kMorphSmallBlocks = std::is_same_v<T, std::uint8_t> ? 4 : 3;

/// The KR x KC erosion (kErode) or dilation of u8 `img`, rows and columns fused in one pass, 4
/// pixels a word (vmin_u8x4 / vmax_u8x4), R output rows a thread (border.cuh's u8 neighbourhood
/// tile; grid (tiles along x, tiles along y up to the grid's limit, the rest looped over)).
/// Pixels outside the image are ignored, as morph_pass_kernel. KR, KC odd, 3..7 (the funnel
/// shifts stay under 32 bits).
template <int KR, int KC, bool kErode, int R>
__global__ void __launch_bounds__(kNbrThreadsX * kNbrThreadsY, kMorphSmallBlocks<std::uint8_t>)
morph_u8_small_kernel(const std::uint8_t* __restrict__ img, Index ld, std::uint8_t* __restrict__ out, Index ld_out,
                      Index rows, Index cols, unsigned tiles_y) {
  static_assert(KR % 2 == 1 && KC % 2 == 1 && KR >= 3 && KC >= 3 && KR <= 7 && KC <= 7,
                "morph_u8_small_kernel: odd sides from 3 to 7");
  using Op = MorphOp<std::uint8_t, kErode>;
  constexpr int kAR = KR / 2, kAC = KC / 2;
  const Index x = (static_cast<Index>(blockIdx.x) * kNbrThreadsX + threadIdx.x) * 4;
  if (x >= cols) return;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kNbrTileH<R> + threadIdx.y * R;
    if (y0 >= rows) continue;
    unsigned h[R + KR - 1];  // the rows y0 - kAR .. reduced along the row
#pragma unroll
    for (int i = 0; i < R + KR - 1; ++i) {
      unsigned l, c, r;
      load_row_words<false>(img, ld, rows, cols, y0 - kAR + i, x, Op::identity(), l, c, r);
      unsigned v = c;
#pragma unroll
      for (int s = 1; s <= kAC; ++s)
        v = Op::apply(v, Op::apply(__funnelshift_r(l, c, 8 * (4 - s)), __funnelshift_r(c, r, 8 * s)));
      h[i] = v;
    }
#pragma unroll
    for (int j = 0; j < R; ++j) {
      if (y0 + j >= rows) break;
      unsigned v = h[j];
#pragma unroll
      for (int i = 1; i < KR; ++i) v = Op::apply(v, h[j + i]);
      store_word(out + (y0 + j) * ld_out, x, cols, v);
    }
  }
}

/// Reads pixels x - 4 .. x + 7 of float image row y into w[0 .. 11] (w[4] is pixel x): three
/// aligned 16-byte loads where the row is inside and the pixels x - 4 .. x + 7 lie in it on a
/// 16-byte boundary, else one by one; pixels outside the image (and rows outside) read `fill`.
__device__ __forceinline__ void morph_load_row_f32(const float* __restrict__ img, Index ld, Index rows, Index cols,
                                                   Index y, Index x, float fill, float (&w)[12]) {
  if (y < 0 || y >= rows) {
#pragma unroll
    for (int k = 0; k < 12; ++k) w[k] = fill;
    return;
  }
  const float* row = img + y * ld;
  if (x >= 4 && x + 8 <= cols && (reinterpret_cast<std::uintptr_t>(row + x) & 15) == 0) {
#pragma unroll
    for (int q = 0; q < 3; ++q) {
      const float4 v = __ldg(reinterpret_cast<const float4*>(row + x - 4) + q);
      w[4 * q] = v.x, w[4 * q + 1] = v.y, w[4 * q + 2] = v.z, w[4 * q + 3] = v.w;
    }
    return;
  }
#pragma unroll
  for (int k = 0; k < 12; ++k) {
    const Index px = x - 4 + k;
    w[k] = px >= 0 && px < cols ? __ldg(row + px) : fill;
  }
}

/// The KR x KC erosion (kErode) or dilation of float `img` in one pass: a thread takes four
/// adjacent pixels of R output rows, reduces each of the R + KR - 1 rows it reads along the row
/// in registers, then each output over KR of them (the u8 kernel's tiling, kNbrTileW x
/// kNbrTileH<R> pixels a block). Pixels outside the image are ignored, as morph_pass_kernel. The
/// two-pass kernels read and wrote a workspace and ran at 0.78 TB/s for a 3x3 element at 4096^2.
template <int KR, int KC, bool kErode, int R>
__global__ void __launch_bounds__(kNbrThreadsX * kNbrThreadsY, kMorphSmallBlocks<float>)
morph_f32_small_kernel(const float* __restrict__ img, Index ld, float* __restrict__ out, Index ld_out, Index rows,
                       Index cols, unsigned tiles_y) {
  static_assert(KR % 2 == 1 && KC % 2 == 1 && KR >= 3 && KC >= 3 && KR <= 9 && KC <= 9,
                "morph_f32_small_kernel: odd sides from 3 to 9");
  using Op = MorphOp<float, kErode>;
  constexpr int kAR = KR / 2, kAC = KC / 2;
  const Index x = (static_cast<Index>(blockIdx.x) * kNbrThreadsX + threadIdx.x) * 4;
  if (x >= cols) return;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kNbrTileH<R> + threadIdx.y * R;
    if (y0 >= rows) continue;
    float h[R + KR - 1][4];  // the rows y0 - kAR .. reduced along the row
#pragma unroll
    for (int i = 0; i < R + KR - 1; ++i) {
      float w[12];
      morph_load_row_f32(img, ld, rows, cols, y0 - kAR + i, x, Op::identity(), w);
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        float v = w[4 + c];
#pragma unroll
        for (int d = 1; d <= kAC; ++d) v = Op::apply(v, Op::apply(w[4 + c - d], w[4 + c + d]));
        h[i][c] = v;
      }
    }
#pragma unroll
    for (int j = 0; j < R; ++j) {
      if (y0 + j >= rows) break;
      float v[4];
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        v[c] = h[j][c];
#pragma unroll
        for (int i = 1; i < KR; ++i) v[c] = Op::apply(v[c], h[j + i][c]);
      }
      float* dst = out + (y0 + j) * ld_out + x;
      if (x + 4 <= cols && (reinterpret_cast<std::uintptr_t>(dst) & 15) == 0) {
        *reinterpret_cast<float4*>(dst) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int c = 0; c < 4; ++c)
          if (x + c < cols) dst[c] = v[c];
      }
    }
  }
}

}  // namespace devmat::detail

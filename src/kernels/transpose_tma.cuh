// Transpose through the TMA (sm_90 on): tiles come in and go out as 2-D tensor copies, deep in
// flight on mbarriers, and only the turn itself runs on the threads, 16-byte chunk to 16-byte
// chunk in shared memory.
//
// A tensor map needs a 16-byte aligned base and row strides of whole 16-byte units, which a
// matrix of any shape, stride and alignment does not have. Its rows of one phase do: rows p,
// p + kV, p + 2 kV ... (kV = 16 / sizeof(T) elements a chunk) start kV ld sizeof(T) = 16 ld
// bytes apart, a multiple of 16, and all at the same offset into a chunk. So
// each side of the transpose is kV maps, one a phase: phase p's base is its first row's start
// rounded down to 16 bytes, its rows `shift` elements in (the elements before a row's start,
// never addressed), its extent the row's elements past that. Boxes at any element coordinate
// are the TMA's own business: a box that crosses a row's end reads zeros there and writes
// nothing, so no byte outside the matrix is read or written, and no edge needs code.
//
// A tile is kRows = 8 kV kM input rows by kCols = 8 kV input columns (128 bytes a row):
// - in: kV boxes, phase p's kM 8 rows (input rows r0 + kV a + p, a < 8 kM) of 128 bytes, with
//   the 128-byte swizzle (16-byte chunk c of box row a at chunk c ^ (a mod 8));
// - out: kV kM boxes, (phase q, segment h): output rows c0 + kV i + q (i < 8) by the kRows / kM
//   = 8 kV elements r0 + 8 kV h + ...: 8 rows of 128 bytes, swizzled the same way;
// - thread (a, ch) (a < 8 kM, ch < 8) turns the kV x kV block of input rows r0 + kV a + (0 .. kV)
//   and chunk ch: its kV loads are chunk ch of row a of each input box, its kV stores chunk a
//   mod 8 of row ch of output box (q, a / 8), q = 0 .. kV (a 4x4 byte permute for bytes, register
//   renaming for 4- and 8-byte elements). A quarter warp (8 lanes, one a of ch = 0 .. 7) loads
//   the 8 chunks of one swizzled row and stores one chunk of 8 rows, whose swizzle puts them at
//   8 distinct chunks: no bank conflicts either way.
// Each block walks tiles blockIdx.x, + gridDim.x, ... (down each tile column first, so that
// neighbouring blocks write neighbouring runs of the same output rows), loads kStages tiles
// ahead (one mbarrier a stage: warp 0's lanes issue the kV boxes, lane 0 the expected bytes,
// whole boxes, zero-filled parts included), and stores through two output buffers, whose
// previous stores must have read them (bulk_wait_group_read) before the threads write again.
#pragma once

#include "common.cuh"
#include "tma.cuh"

#include <cuda_runtime.h>

#include <cstdint>

namespace devmat::detail {

/// The tile of transpose_tma_kernel for kSize-byte elements: kM boxes of 8 rows a phase on the
/// input side (taller tiles, the same output rows), kStages tiles loaded ahead.
template <int kSize_, int kM_, int kStages_>
struct TmaTransposeTile {
  static_assert(kSize_ == 1 || kSize_ == 2 || kSize_ == 4 || kSize_ == 8, "TmaTransposeTile: 1-, 2-, 4- or 8-byte elements");
  static constexpr int kSize = kSize_, kM = kM_, kStages = kStages_;
  static constexpr int kV = 16 / kSize;        // elements of a chunk; phases of a side
  static constexpr int kThreads = 64 * kM;     // one thread a kV x kV block
  static constexpr int kRows = 8 * kV * kM;    // input rows of a tile (output elements)
  static constexpr int kCols = 8 * kV;         // input columns of a tile (output rows): 128 bytes
  static constexpr int kBox = 1024;            // bytes of an output box, and of kM input box rows
  static constexpr int kInBox = kBox * kM;     // bytes of an input box
  static constexpr int kTileBytes = kInBox * kV;
  static constexpr int kStores = kV * kM;      // output boxes of a tile
  static constexpr int kAlign = 1024;          // the 128-byte swizzle's atom
  static constexpr int kBarOffset = kTileBytes * (kStages + 2);  // kStages inputs, two outputs
  static constexpr int kSmemBytes = kBarOffset + 8 * kStages + kAlign;  // + slack to align the base
  static_assert(kStores <= 32 && kV <= 32, "warp 0's lanes issue the boxes");
  static_assert(kM >= 1 && 8 * kM <= 256, "a box has at most 256 rows");
};

/// The tensor maps of a transpose (TmaTransposeTile's phases): in[p] input rows p, p + kV, ...;
/// out[q] output rows q, q + kV, ...; each shift the elements from its map's base to its first
/// row's start; the masks the phases that have rows (a matrix of fewer than kV rows or columns
/// has empty ones, which get no map and no box).
template <int kSize>
struct TmaTransposeMaps {
  static constexpr int kV = 16 / kSize;
  CUtensorMap in[kV];
  CUtensorMap out[kV];
  int in_shift[kV];
  int out_shift[kV];
  unsigned in_mask, out_mask;
};

/// The 16 bytes `in` holds as rows (element e of row t: input row kV a + t, column kV ch + e)
/// turned into `out` (element t of row e), for kV elements of kSize bytes.
template <int kSize>
__device__ __forceinline__ void tma_turn_block(const uint4 (&in)[16 / kSize], uint4 (&out)[16 / kSize]) {
  if constexpr (kSize == 8) {
    out[0] = make_uint4(in[0].x, in[0].y, in[1].x, in[1].y);
    out[1] = make_uint4(in[0].z, in[0].w, in[1].z, in[1].w);
  } else if constexpr (kSize == 4) {
    out[0] = make_uint4(in[0].x, in[1].x, in[2].x, in[3].x);
    out[1] = make_uint4(in[0].y, in[1].y, in[2].y, in[3].y);
    out[2] = make_uint4(in[0].z, in[1].z, in[2].z, in[3].z);
    out[3] = make_uint4(in[0].w, in[1].w, in[2].w, in[3].w);
  } else {
    // Words: w(t, k) = word k of row t; 4x4 byte blocks (rows 4u .. 4u + 3, word k) turn into
    // word u of output rows 4k .. 4k + 3 (kSize 1: 16 rows; kSize 2: 8 rows of 2-byte elements
    // are pairs of bytes: the same permutes on half-words).
    constexpr int kV = 16 / kSize;
    const unsigned* w = reinterpret_cast<const unsigned*>(in);
    unsigned* o = reinterpret_cast<unsigned*>(out);
    if constexpr (kSize == 1) {
#pragma unroll
      for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const unsigned a0 = w[(4 * u + 0) * 4 + k], a1 = w[(4 * u + 1) * 4 + k];
          const unsigned a2 = w[(4 * u + 2) * 4 + k], a3 = w[(4 * u + 3) * 4 + k];
          const unsigned t0 = __byte_perm(a0, a1, 0x5140), t1 = __byte_perm(a0, a1, 0x7362);
          const unsigned t2 = __byte_perm(a2, a3, 0x5140), t3 = __byte_perm(a2, a3, 0x7362);
          o[(4 * k + 0) * 4 + u] = __byte_perm(t0, t2, 0x5410);
          o[(4 * k + 1) * 4 + u] = __byte_perm(t0, t2, 0x7632);
          o[(4 * k + 2) * 4 + u] = __byte_perm(t1, t3, 0x5410);
          o[(4 * k + 3) * 4 + u] = __byte_perm(t1, t3, 0x7632);
        }
    } else {
      // 2-byte elements: 2x2 blocks of half-words (rows 2u, 2u + 1, word k) turn into word u of
      // output rows 2k, 2k + 1.
#pragma unroll
      for (int u = 0; u < kV / 2; ++u)
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const unsigned a0 = w[(2 * u) * 4 + k], a1 = w[(2 * u + 1) * 4 + k];
          o[(2 * k + 0) * 4 + u] = __byte_perm(a0, a1, 0x5410);
          o[(2 * k + 1) * 4 + u] = __byte_perm(a0, a1, 0x7632);
        }
    }
  }
}

/// Byte offset of chunk `ch` of row `row` of a 128-byte-swizzled box (rows of 128 bytes, the
/// box on a 1024-byte boundary).
__host__ __device__ constexpr int tma_swizzled(int row, int ch) { return row * 128 + ((ch ^ (row & 7)) << 4); }

/// Transposes through Tile (TmaTransposeTile) the matrix whose phase maps are `maps`, in tiles
/// of Tile::kRows x Tile::kCols: tiles_r down a tile column, `tiles` in all.
template <class Tile>
__global__ void __launch_bounds__(Tile::kThreads)
    transpose_tma_kernel(const __grid_constant__ TmaTransposeMaps<Tile::kSize> maps, unsigned tiles_r, unsigned tiles) {
  constexpr int kV = Tile::kV, kM = Tile::kM, kStages = Tile::kStages;
  DEVMAT_DYNAMIC_SHARED(unsigned char, smem_raw);
  unsigned char* const base = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<std::uintptr_t>(smem_raw) + Tile::kAlign - 1) & ~std::uintptr_t(Tile::kAlign - 1));
  std::uint64_t* const bars = reinterpret_cast<std::uint64_t*>(base + Tile::kBarOffset);
  const int tid = static_cast<int>(threadIdx.x);
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) mbar_init(bars + s, 1);
    mbar_init_fence();
  }
  __syncthreads();
  const std::uint32_t in_bytes = static_cast<std::uint32_t>(__popc(maps.in_mask)) * Tile::kInBox;
  // Tile k of this block into its stage: lane 0 arrives expecting its bytes, lane p < kV loads
  // phase p's box (warp 0 only).
  const auto issue = [&](unsigned k) {
    const unsigned t = blockIdx.x + k * gridDim.x;
    if (t >= tiles) return;
    const unsigned st = k % kStages;
    const unsigned tr = t % tiles_r, tc = t / tiles_r;
    if (tid == 0) mbar_arrive_expect_tx(bars + st, in_bytes);
    if (tid < kV && ((maps.in_mask >> tid) & 1))
      tma_load_2d(base + st * Tile::kTileBytes + tid * Tile::kInBox, &maps.in[tid], bars + st,
                  static_cast<int>(tc * Tile::kCols) + maps.in_shift[tid], static_cast<int>(tr * 8 * kM));
  };
  if (tid < 32)
    for (unsigned k = 0; k < kStages; ++k) issue(k);
  const int a = tid >> 3, ch = tid & 7;
  for (unsigned k = 0;; ++k) {
    const unsigned t = blockIdx.x + k * gridDim.x;
    if (t >= tiles) break;
    const unsigned st = k % kStages;
    const unsigned tr = t % tiles_r, tc = t / tiles_r;
    mbar_wait(bars + st, (k / kStages) & 1);
    if (tid < Tile::kStores) bulk_wait_group_read<1>();  // this buffer's stores of tile k - 2 have read it
    __syncthreads();
    const unsigned char* in_t = base + st * Tile::kTileBytes;
    unsigned char* out_t = base + (kStages + (k & 1)) * Tile::kTileBytes;
    uint4 rows[kV], cols[kV];
#pragma unroll
    for (int p = 0; p < kV; ++p)
      rows[p] = *reinterpret_cast<const uint4*>(in_t + p * Tile::kInBox + tma_swizzled(a, ch));
    tma_turn_block<Tile::kSize>(rows, cols);
#pragma unroll
    for (int q = 0; q < kV; ++q)
      *reinterpret_cast<uint4*>(out_t + (q * kM + (a >> 3)) * Tile::kBox + tma_swizzled(ch, a & 7)) = cols[q];
    fence_proxy_async();
    __syncthreads();
    if (tid < Tile::kStores) {
      const int q = tid / kM, h = tid % kM;
      if ((maps.out_mask >> q) & 1)
        tma_store_2d(&maps.out[q], out_t + tid * Tile::kBox,
                     static_cast<int>(tr * Tile::kRows) + h * 8 * kV + maps.out_shift[q], static_cast<int>(tc * 8));
      bulk_commit_group();
    }
    if (tid < 32) issue(k + kStages);
  }
  if (tid < Tile::kStores) bulk_wait_group_read<0>();  // the last stores have read shared memory
}

}  // namespace devmat::detail

// Canny edges on u8 as OpenCV's cv::Canny with its defaults (3x3 Sobel, borders replicated, L1
// gradient |dx| + |dy|): non-maximum suppression with OpenCV's integer direction test, then
// hysteresis. Two hysteresis designs share the suppression (canny_tile_classes):
// - tile rounds (the default): canny_nms_kernel writes 0 / kCannyWeak / kCannyEdge,
//   canny_hysteresis_bits_kernel (a warp a tile, rows as bit masks; canny_hysteresis_kernel, a
//   block a tile sweeping shared memory, is the older fill) raises weak pixels next to edges tile
//   by tile until a round marks no neighbour (the host reads a flag), canny_finish_kernel clears
//   the weak pixels left.
// - connected components (past the rounds' limit, forced in tests and benchmarks):
//   canny_label_kernel suppresses a 32 x 32 tile and joins
//   its candidates (pixels above low that survive) by a union-find in shared memory; each pixel's
//   label is its tile-local root's index. canny_merge_kernel joins the candidates that touch across
//   tile borders by a union-find in global memory (parents only ever decrease: atomicMin links a
//   root under a smaller one). canny_flatten_kernel points every local root at its final root and
//   marks that root strong when its own piece had a pixel above high; canny_edges_kernel writes
//   255 where a candidate's root is strong. Four kernels, a fixed number whatever the image.
// Device code only; dispatch/image_canny.cuh launches.
#pragma once

#include "common.cuh"

#include <cuda_runtime.h>

#include <cstdint>

namespace devmat::detail {

constexpr int kCannyThreadsX = 32;
constexpr int kCannyThreadsY = 8;
constexpr int kCannyThreads = kCannyThreadsX * kCannyThreadsY;
constexpr int kCannyTile = 32;  // a 32 x 32 tile, each thread 4 pixels 8 rows apart
constexpr int kCannyRowsPerThread = kCannyTile / kCannyThreadsY;
constexpr std::uint8_t kCannyWeak = 1;
constexpr std::uint8_t kCannyEdge = 255;
// The map between the connected-components kernels: 0 not a candidate, then a candidate that is
// not its tile piece's root, a root of a piece with no strong pixel, a root of one with (or, after
// canny_flatten_kernel, a final root whose component has a strong pixel).
constexpr std::uint8_t kCannyMember = 1;
constexpr std::uint8_t kCannyRootWeak = 2;
constexpr std::uint8_t kCannyRootStrong = 3;
constexpr int kCannyStreamThreads = 256;  // the per-pixel kernels: 4 pixels a thread
__device__ __forceinline__ Index canny_clamp(Index i, Index n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

/// The shared memory of the suppression: a tile's pixels with a halo of 2 (replicated) and their
/// magnitudes with a halo of 1 (0 outside the image).
struct CannySmem {
  int px[kCannyTile + 4][kCannyTile + 4];   // (TILE+4, TILE+4)
  int mag[kCannyTile + 2][kCannyTile + 2];  // (TILE+2, TILE+2)
};

/// Gradient, magnitude and non-maximum suppression of the tile at (y0, x0): byte r of the result,
/// for this thread's pixel (y0 + threadIdx.y + 8 r, x0 + threadIdx.x), is kCannyEdge where the L1 magnitude
/// m is a local maximum across the gradient (OpenCV's sectors: tan 22.5 in Q15) and m > high,
/// kCannyWeak where it is one and low < m <= high, else 0 (and 0 outside the image). Starts with
/// a barrier, so a loop over tiles may call it again. (Bytes of a word, not an array: an array
/// passed by reference went to local memory.)
__device__ __forceinline__ unsigned canny_tile_classes(const std::uint8_t* __restrict__ in, Index ld, Index rows, Index cols,
                                                       int low, int high, Index y0, Index x0, CannySmem& sm) {
  static_assert(kCannyRowsPerThread <= 4, "the classes are the bytes of a word");
  const int tid = threadIdx.y * kCannyThreadsX + threadIdx.x;
  const auto grad = [&](int ly, int lx, int& dx, int& dy) {  // at px (ly, lx), a centre
    const int a = sm.px[ly - 1][lx - 1], b = sm.px[ly - 1][lx], c = sm.px[ly - 1][lx + 1];
    const int d = sm.px[ly][lx - 1], f = sm.px[ly][lx + 1];
    const int g = sm.px[ly + 1][lx - 1], h = sm.px[ly + 1][lx], i = sm.px[ly + 1][lx + 1];
    dx = (c + 2 * f + i) - (a + 2 * d + g);
    dy = (g + 2 * h + i) - (a + 2 * b + c);
  };
  __syncthreads();
  for (int e = tid; e < (kCannyTile + 4) * (kCannyTile + 4); e += kCannyThreads) {
    const int i = e / (kCannyTile + 4), j = e % (kCannyTile + 4);
    sm.px[i][j] = in[canny_clamp(y0 - 2 + i, rows) * ld + canny_clamp(x0 - 2 + j, cols)];
  }
  __syncthreads();
  for (int e = tid; e < (kCannyTile + 2) * (kCannyTile + 2); e += kCannyThreads) {
    const int i = e / (kCannyTile + 2), j = e % (kCannyTile + 2);
    const Index y = y0 - 1 + i, x = x0 - 1 + j;
    int m = 0;
    if (y >= 0 && y < rows && x >= 0 && x < cols) {
      int dx, dy;
      grad(i + 1, j + 1, dx, dy);
      m = ::abs(dx) + ::abs(dy);
    }
    sm.mag[i][j] = m;
  }
  __syncthreads();
  constexpr int kShift = 15;
  constexpr int kTg22 = 13573;  // (int)(tan(22.5 deg) * 2^15 + 0.5)
  unsigned cls = 0;
#pragma unroll
  for (int r = 0; r < kCannyRowsPerThread; ++r) {
    const int ly = threadIdx.y + r * kCannyThreadsY, lx = threadIdx.x;
    const Index y = y0 + ly, x = x0 + lx;
    if (y >= rows || x >= cols) continue;
    const int my = ly + 1, mx = lx + 1;  // in mag
    const int m = sm.mag[my][mx];
    if (m > low) {
      int xs, ys;
      grad(ly + 2, lx + 2, xs, ys);
      const int ax = ::abs(xs), ay = ::abs(ys) << kShift;
      const int tg22x = ax * kTg22;
      bool peak;
      if (ay < tg22x) {
        peak = m > sm.mag[my][mx - 1] && m >= sm.mag[my][mx + 1];
      } else {
        const int tg67x = tg22x + (ax << (kShift + 1));
        if (ay > tg67x) {
          peak = m > sm.mag[my - 1][mx] && m >= sm.mag[my + 1][mx];
        } else {
          const int s = (xs ^ ys) < 0 ? -1 : 1;
          peak = m > sm.mag[my - 1][mx - s] && m > sm.mag[my + 1][mx + s];
        }
      }
      if (peak) cls |= static_cast<unsigned>(m > high ? kCannyEdge : kCannyWeak) << (8 * r);
    }
  }
  return cls;
}

/// Byte r of a word.
__device__ __forceinline__ std::uint8_t canny_byte(unsigned word, int r) { return static_cast<std::uint8_t>(word >> (8 * r)); }

/// Suppression alone (the tile-rounds design): map(y, x) = the class of canny_tile_classes.
__global__ void __launch_bounds__(kCannyThreads)
canny_nms_kernel(const std::uint8_t* __restrict__ in, Index ld, std::uint8_t* __restrict__ map, Index rows, Index cols,
                 int low, int high, unsigned tiles_y) {
  __shared__ CannySmem sm;
  const Index x0 = static_cast<Index>(blockIdx.x) * kCannyTile;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kCannyTile;
    const unsigned cls = canny_tile_classes(in, ld, rows, cols, low, high, y0, x0, sm);
#pragma unroll
    for (int r = 0; r < kCannyRowsPerThread; ++r) {
      const Index y = y0 + threadIdx.y + r * kCannyThreadsY, x = x0 + threadIdx.x;
      if (y < rows && x < cols) map[y * cols + x] = canny_byte(cls, r);
    }
  }
}

// ------------------------------------------------------------------ suppression in registers
// canny_nms_strip_kernel: the same classes as canny_nms_kernel without shared memory. A warp
// walks down a strip of 32 columns (lane l at column xs + l), one row a step: it loads the row's
// pixel (the only global read), takes its neighbours' by shuffles, and keeps the last three
// rows' horizontal sums and differences, the last two Sobel gradients and three rows of
// magnitudes in registers (the magnitudes' left and right neighbours by shuffles again). Lanes 1
// .. 30 have magnitudes, lanes 2 .. 29 all eight neighbours' magnitudes: 28 output columns a
// warp. The tile kernel read 9 shared-memory words for each gradient, twice (run T3, ncu: 58 us
// at 4096^2, SM 52%, DRAM 6%); here a pixel costs four shuffles.

constexpr int kCannyStripCols = 28;                            // output columns a warp
constexpr int kCannyStripRows = 32;                            // output rows a warp (a strip)
constexpr int kCannyStripW = kCannyStripCols * kCannyThreadsY;  // output columns a block: 224

/// Suppression alone, as canny_nms_kernel (map(y, x) = 0 / kCannyWeak / kCannyEdge, OpenCV's
/// sectors and ties), a warp a strip of kCannyStripCols x kCannyStripRows outputs. Block
/// (kCannyThreadsX, kCannyThreadsY): warp w takes columns x0 + 28 w .. x0 + 28 w + 27 of the
/// block's kCannyStripW; grid (tiles of kCannyStripW x kCannyStripRows along x, along y up to the
/// grid's limit, the rest looped over).
__global__ void __launch_bounds__(kCannyThreads)
canny_nms_strip_kernel(const std::uint8_t* __restrict__ in, Index ld, std::uint8_t* __restrict__ map, Index rows, Index cols,
                       int low, int high, unsigned tiles_y) {
  constexpr unsigned kAll = 0xffffffffu;
  constexpr int kShift = 15;
  constexpr int kTg22 = 13573;  // (int)(tan(22.5 deg) * 2^15 + 0.5), as canny_tile_classes
  const int lane = threadIdx.x;
  const Index xs = static_cast<Index>(blockIdx.x) * kCannyStripW + threadIdx.y * kCannyStripCols - 2;  // lane 0's column
  if (xs + 2 >= cols) return;  // the whole warp: no output column in the image
  const Index x = xs + lane;
  const bool x_in = x >= 0 && x < cols;
  const bool x_out = lane >= 2 && lane < 2 + kCannyStripCols && x < cols;  // an output column
  const std::uint8_t* const col = in + canny_clamp(x, cols);  // borders replicated
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kCannyStripRows;
    // Rows of horizontal sums (l + 2c + r) and differences (r - l): [0] two rows up, [1] one up.
    int hs0 = 0, hs1 = 0, hd0 = 0, hd1 = 0;
    // Magnitudes (left, centre, right) of the rows above (u) and at (c) the row to suppress; the
    // gradient of the row at c.
    int ul = 0, uc = 0, ur = 0, cl = 0, cc = 0, cr = 0, gx = 0, gy = 0;
    // Step j loads pixel row y0 - 2 + j, has the gradient of row y0 - 3 + j (j >= 2) and
    // suppresses row y0 - 4 + j (j >= 4).
    int p_next = col[canny_clamp(y0 - 2, rows) * ld];  // loaded a step ahead
    for (int j = 0; j < kCannyStripRows + 4; ++j) {
      const Index yl = y0 - 2 + j;
      const int p = p_next;
      if (j + 1 < kCannyStripRows + 4) p_next = col[canny_clamp(yl + 1, rows) * ld];
      const int pl = __shfl_up_sync(kAll, p, 1), pr = __shfl_down_sync(kAll, p, 1);
      const int hs = pl + 2 * p + pr, hd = pr - pl;
      if (j >= 2) {
        const int dx = hd0 + 2 * hd1 + hd, dy = hs - hs0;  // Sobel at row yl - 1
        const Index ym = yl - 1;
        const int m = x_in && ym >= 0 && ym < rows ? ::abs(dx) + ::abs(dy) : 0;
        const int ml = __shfl_up_sync(kAll, m, 1), mr = __shfl_down_sync(kAll, m, 1);
        if (j >= 4) {  // suppress row yl - 2: magnitudes u (yl - 3), c (yl - 2), d = (ml, m, mr) (yl - 1)
          const Index yo = yl - 2;
          if (x_out && yo < rows && cc > low) {
            const int ax = ::abs(gx), ay = ::abs(gy) << kShift;
            const int tg22x = ax * kTg22, tg67x = tg22x + (ax << (kShift + 1));
            const bool diag = ay >= tg22x && ay <= tg67x;
            int a, b;  // the two neighbours across the gradient
            if (ay < tg22x) a = cl, b = cr;  // horizontal gradient: left and right
            else if (ay > tg67x) a = uc, b = m;  // vertical: up and down
            else if ((gx ^ gy) < 0) a = ur, b = ml;
            else a = ul, b = mr;
            const bool peak = cc > a && (diag ? cc > b : cc >= b);
            map[yo * cols + x] = peak ? (cc > high ? kCannyEdge : kCannyWeak) : std::uint8_t(0);
          } else if (x_out && yo < rows) {
            map[yo * cols + x] = 0;
          }
        }
        ul = cl, uc = cc, ur = cr;
        cl = ml, cc = m, cr = mr;
        gx = dx, gy = dy;
      }
      hs0 = hs1, hs1 = hs;
      hd0 = hd1, hd1 = hd;
    }
  }
}

/// One round of hysteresis over the tiles marked in `dirty_in` (a byte a tile, tile_y * gridDim.x
/// + blockIdx.x; the others are skipped: nothing around them changed since they last settled).
/// Each marked block clears its mark, loads its 32 x 32 tile of the map with a halo of 1, turns
/// weak pixels next to an edge (8-connected) into edges until its tile stops changing, writes
/// the tile back, sets *changed when it turned any, and marks its 8 neighbours in `dirty_out`
/// when it turned any on its tile's outer ring (the pixels their halos read). Tiles read their
/// neighbours' pixels as they are, possibly while those are being raised (only ever weak ->
/// edge): a neighbour that raises its ring in this round marks the tile for the next, so a round
/// that raises nothing leaves every tile settled against the final map.
__global__ void __launch_bounds__(kCannyThreads)
canny_hysteresis_kernel(std::uint8_t* map, Index rows, Index cols, unsigned tiles_y, int* changed,
                        std::uint8_t* __restrict__ dirty_in, std::uint8_t* __restrict__ dirty_out) {
  __shared__ std::uint8_t map_smem[kCannyTile + 2][kCannyTile + 2];
  const int tid = threadIdx.y * kCannyThreadsX + threadIdx.x;
  const Index x0 = static_cast<Index>(blockIdx.x) * kCannyTile;
  const Index tiles_x = gridDim.x;
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index tile = static_cast<Index>(tile_y) * tiles_x + blockIdx.x;
    // Every thread reads the mark before any clears it (the barrier); the block skips as one.
    if (!__syncthreads_or(dirty_in[tile] != 0)) continue;
    if (tid == 0) dirty_in[tile] = 0;
    const Index y0 = static_cast<Index>(tile_y) * kCannyTile;
    for (int e = tid; e < (kCannyTile + 2) * (kCannyTile + 2); e += kCannyThreads) {
      const int i = e / (kCannyTile + 2), j = e % (kCannyTile + 2);
      const Index y = y0 - 1 + i, x = x0 - 1 + j;
      map_smem[i][j] = (y >= 0 && y < rows && x >= 0 && x < cols) ? map[y * cols + x] : std::uint8_t(0);
    }
    __syncthreads();
    bool raised_any = false, raised_ring = false;
    for (;;) {  // sweeps: decide from the tile as it is, then raise, so no read races a write
      bool raise[kCannyTile / kCannyThreadsY];
#pragma unroll
      for (int r = 0; r < kCannyTile / kCannyThreadsY; ++r) {
        const int i = threadIdx.y + r * kCannyThreadsY + 1, j = threadIdx.x + 1;
        raise[r] = map_smem[i][j] == kCannyWeak &&
                   (map_smem[i - 1][j - 1] == kCannyEdge || map_smem[i - 1][j] == kCannyEdge ||
                    map_smem[i - 1][j + 1] == kCannyEdge || map_smem[i][j - 1] == kCannyEdge ||
                    map_smem[i][j + 1] == kCannyEdge || map_smem[i + 1][j - 1] == kCannyEdge ||
                    map_smem[i + 1][j] == kCannyEdge || map_smem[i + 1][j + 1] == kCannyEdge);
      }
      __syncthreads();
      bool raised = false;
#pragma unroll
      for (int r = 0; r < kCannyTile / kCannyThreadsY; ++r) {
        const int i = threadIdx.y + r * kCannyThreadsY, j = threadIdx.x;  // in the tile
        if (raise[r]) map_smem[i + 1][j + 1] = kCannyEdge;
        raised |= raise[r];
        raised_ring |= raise[r] && (i == 0 || i == kCannyTile - 1 || j == 0 || j == kCannyTile - 1);
      }
      raised_any |= raised;
      if (!__syncthreads_or(raised)) break;
    }
    if (__syncthreads_or(raised_any)) {
#pragma unroll
      for (int r = 0; r < kCannyTile / kCannyThreadsY; ++r) {
        const int i = threadIdx.y + r * kCannyThreadsY, j = threadIdx.x;
        const Index y = y0 + i, x = x0 + j;
        if (y < rows && x < cols && map_smem[i + 1][j + 1] == kCannyEdge) map[y * cols + x] = kCannyEdge;
      }
      if (tid == 0) atomicExch(changed, 1);
    }
    if (__syncthreads_or(raised_ring) && tid < 9 && tid != 4) {  // the 8 neighbours
      const Index ny = static_cast<Index>(tile_y) + tid / 3 - 1, nx = static_cast<Index>(blockIdx.x) + tid % 3 - 1;
      if (ny >= 0 && ny < tiles_y && nx >= 0 && nx < tiles_x) dirty_out[ny * tiles_x + nx] = 1;
    }
  }
}

// The tile rounds' fill by bit masks: a warp holds a 32 x 32 tile, lane r row r as two masks
// (weak, edge: bit j = column j). A step raises every weak run (maximal horizontal run of
// candidates) of a row that touches an edge in the rows above, below or itself, 8-connected:
// runs fill in one step by carries, so a step costs a few instructions and two shuffles, where a
// sweep of canny_hysteresis_kernel moves a chain one pixel for two barriers.
constexpr int kCannyBitWarps = 4;  // tiles (warps) a block of canny_hysteresis_bits_kernel
constexpr unsigned kCannyFullMask = 0xffffffffu;

/// The bits of `mask` in its runs (maximal sets of adjacent bits) that hold a bit of `seed`
/// (seed within mask). Adding the seed carries from a run's lowest seed through the run's top
/// (bits above it read back as the seed's, then ORed in); the reversed word does the same down.
__device__ __forceinline__ unsigned canny_fill_runs(unsigned seed, unsigned mask) {
  const unsigned up = (((mask + seed) ^ mask) & mask) | seed;
  const unsigned rm = __brev(mask), rs = __brev(seed);
  const unsigned down = __brev((((rm + rs) ^ rm) & rm) | rs);
  return up | down;
}

/// The candidates `cand` (lane r: row r of a tile, bit j column j) 8-connected to `seed` (within
/// cand), filled until a step raises nothing, a warp a tile. The halo: `above` / `below`, the
/// edges of the rows above and below the tile; `side`, bit 0 / bit 31 where an edge in the
/// column left / right of the tile touches row `lane` (0 for none: the tile alone).
__device__ __forceinline__ unsigned canny_tile_fill(unsigned seed, unsigned cand, unsigned above = 0, unsigned below = 0,
                                                    unsigned side = 0) {
  const int lane = threadIdx.x & 31;
  unsigned got = seed;
  for (;;) {
    unsigned up = __shfl_up_sync(kCannyFullMask, got, 1), down = __shfl_down_sync(kCannyFullMask, got, 1);
    if (lane == 0) up = above;
    if (lane == 31) down = below;
    const unsigned near = up | down | got;  // edges in rows lane - 1 .. lane + 1, by column
    const unsigned next = canny_fill_runs(cand & (near | (near << 1) | (near >> 1) | side), cand);
    const bool grew = next != got;
    got = next;
    if (!__any_sync(kCannyFullMask, grew)) break;
  }
  return got;
}

/// One round of hysteresis as canny_hysteresis_kernel's (same map, marks and contract), a warp a
/// tile: tile t = tile_y * tiles_x + tile_x, read when dirty_in[t] is set. The warp loads the
/// tile and its halo of 1 by rows (a row's 32 bytes, then ballots: lane r keeps row r), fills
/// until a step raises nothing, stores the raised pixels, and when a raised pixel is on the
/// tile's outer ring marks the 8 neighbours and sets *changed. (Raises inside a tile are final:
/// only a mark makes work for a later round, so a round that leaves *changed unset ends them.)
__global__ void __launch_bounds__(32 * kCannyBitWarps)
canny_hysteresis_bits_kernel(std::uint8_t* map, Index rows, Index cols, Index tiles_x, Index n_tiles, int* changed,
                             std::uint8_t* __restrict__ dirty_in, std::uint8_t* __restrict__ dirty_out) {
  const int lane = threadIdx.x & 31;
  const Index warps = static_cast<Index>(gridDim.x) * kCannyBitWarps;
  const auto edge_at = [&](Index y, Index x) -> bool {  // 0 outside the image
    return y >= 0 && y < rows && x >= 0 && x < cols && map[y * cols + x] == kCannyEdge;
  };
  for (Index tile = static_cast<Index>(blockIdx.x) * kCannyBitWarps + threadIdx.x / 32; tile < n_tiles; tile += warps) {
    // Lane 0 reads the mark and clears it; the warp skips as one.
    int mark = 0;
    if (lane == 0) {
      mark = dirty_in[tile];
      if (mark) dirty_in[tile] = 0;
    }
    if (!__shfl_sync(kCannyFullMask, mark, 0)) continue;
    const Index tile_y = tile / tiles_x, tile_x = tile - tile_y * tiles_x;
    const Index y0 = tile_y * kCannyTile, x0 = tile_x * kCannyTile;
    const Index x = x0 + lane;
    unsigned weak = 0, edge = 0, above = 0, below = 0;  // lane r: row r; above/below: rows -1, 32
#pragma unroll 2
    for (int r = -1; r <= kCannyTile; ++r) {
      const Index y = y0 + r;
      const unsigned v = (y >= 0 && y < rows && x < cols) ? map[y * cols + x] : 0u;
      const unsigned w = __ballot_sync(kCannyFullMask, v == kCannyWeak);
      const unsigned e = __ballot_sync(kCannyFullMask, v == kCannyEdge);
      if (r == -1) above = e;
      else if (r == kCannyTile) below = e;
      else if (lane == r) weak = w, edge = e;
    }
    // Edges in the columns left and right of the tile touching row `lane` (rows lane - 1 .. lane + 1).
    const bool left = edge_at(y0 + lane, x0 - 1), right = edge_at(y0 + lane, x0 + kCannyTile);
    bool left_up = __shfl_up_sync(kCannyFullMask, left, 1), right_up = __shfl_up_sync(kCannyFullMask, right, 1);
    bool left_down = __shfl_down_sync(kCannyFullMask, left, 1), right_down = __shfl_down_sync(kCannyFullMask, right, 1);
    if (lane == 0) left_up = edge_at(y0 - 1, x0 - 1), right_up = edge_at(y0 - 1, x0 + kCannyTile);
    if (lane == 31) left_down = edge_at(y0 + kCannyTile, x0 - 1), right_down = edge_at(y0 + kCannyTile, x0 + kCannyTile);
    const unsigned side = ((left || left_up || left_down) ? 1u : 0u) | ((right || right_up || right_down) ? 0x80000000u : 0u);
    const unsigned cand = weak | edge, edge0 = edge;
    edge = canny_tile_fill(edge, cand, above, below, side);
    const unsigned raised = edge & ~edge0;  // row `lane`
    if (!__any_sync(kCannyFullMask, raised != 0)) continue;
    for (int r = 0; r < kCannyTile; ++r) {
      const unsigned row = __shfl_sync(kCannyFullMask, raised, r);
      if ((row >> lane) & 1u) map[(y0 + r) * cols + x] = kCannyEdge;  // raised bits are inside the image
    }
    const bool ring = __any_sync(kCannyFullMask, (raised & 0x80000001u) != 0 || ((lane == 0 || lane == 31) && raised != 0));
    if (ring && lane == 0) atomicExch(changed, 1);
    if (ring && lane < 9 && lane != 4) {  // the 8 neighbours
      const Index ny = tile_y + lane / 3 - 1, nx = tile_x + lane % 3 - 1;
      if (ny >= 0 && ny < n_tiles / tiles_x && nx >= 0 && nx < tiles_x) dirty_out[ny * tiles_x + nx] = 1;
    }
  }
}

/// Weak pixels that never joined an edge are not edges: 1 -> 0, 255 stays, by words of 4 (map
/// 4-byte aligned; bit 1 of a byte is set for kCannyEdge alone), the last n % 4 bytes alone.
__global__ void __launch_bounds__(kCannyThreads)
canny_finish_kernel(std::uint8_t* map, Index n) {
  static_assert(kCannyWeak == 1 && kCannyEdge == 255, "bit 1 tells an edge from a weak pixel");
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  const Index first = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned* words = reinterpret_cast<unsigned*>(map);
  const Index n_words = n / 4;
  for (Index e = first; e < n_words; e += stride) words[e] = ((words[e] >> 1) & 0x01010101u) * 0xffu;
  if (first < n % 4 && map[n_words * 4 + first] == kCannyWeak) map[n_words * 4 + first] = 0;
}

// ------------------------------------------------------------------ bit planes
// The bit-plane design (CannyConfig::Hysteresis::bits): the suppression writes no byte map but
// two bit planes, a 32-bit word per row of each 32 x 32 tile (tile t = tile_y * tiles_x + tile_x,
// word t * 32 + r is its row r, bit j its column j): `edge` (class kCannyEdge, then raised) and
// `weak` (class kCannyWeak, not raised). canny_nms_bits_kernel suppresses by a warp walking down
// a column of tiles in registers (canny_nms_strip_kernel's walk, 32 output columns a warp: lanes
// 0 and 31 also take the gradients of the columns just outside the tile), holds each tile as
// masks (lane r row r, by ballots), fills it on its own (its edges raise its weak runs, as
// canny_hysteresis_bits_kernel's fill without a halo) and marks it for the first round when weak
// pixels remain on its outer ring (only those can be raised from outside). The rounds
// (canny_bits_round_kernel) read 256 bytes a tile and its neighbours' border words instead of
// 1088 bytes of map; canny_bits_expand_kernel writes 0 / 255 from the edge plane once, so the
// byte map is written once and never read (and canny_finish_kernel is not needed).

constexpr int kCannyNmsBitsWarps = 8;      // warps (tile columns) a block of canny_nms_bits_kernel
constexpr int kCannyNmsBitsMinBlocks = 4;  // blocks an SM: 64 registers a thread (no spills with the row loop not unrolled)
constexpr int kCannyExpandThreads = 256;   // canny_bits_expand_kernel: a row word of a tile a thread

/// Four bits (n < 16) as four bytes, 0xff per set bit (bit b -> byte b). The shifts 0, 7, 14, 21
/// put bit b of n at bit 8 b without overlapping, so the product has no carries.
__device__ __forceinline__ unsigned canny_nibble_bytes(unsigned n) { return ((n * 0x00204081u) & 0x01010101u) * 0xffu; }

/// Suppression into bit planes, a tile filled on its own. Warp w of block b takes tile column
/// tile_x = g % tiles_x and tiles tile_y = (g / tiles_x) * kTiles + k (k < kTiles, those in
/// the image; the walk re-reads 4 rows at its start), g = b * kCannyNmsBitsWarps + w. Lane l is column
/// x0 + l. Per row the warp loads its 32 pixels and lanes 0 .. 3 the 4 halo columns x0 - 2,
/// x0 - 1, x0 + 32, x0 + 33 (borders replicated); lane 0 keeps the gradient of column x0 - 1 and
/// lane 31 that of column x0 + 32 beside their own (the magnitudes the tile's first and last
/// columns compare with). Writes, for every tile it takes: edge and weak (32 words each; bits
/// outside the image 0), dirty0[t] = 1 when a weak pixel is left on the tile's outer ring (else
/// 0), dirty1[t] = 0.
template <int kTiles>
__global__ void __launch_bounds__(32 * kCannyNmsBitsWarps, kCannyNmsBitsMinBlocks)
canny_nms_bits_kernel(const std::uint8_t* __restrict__ in, Index ld, Index rows, Index cols, int low, int high, Index tiles_x,
                      Index tiles_y, unsigned* __restrict__ edge_bits, unsigned* __restrict__ weak_bits,
                      std::uint8_t* __restrict__ dirty0, std::uint8_t* __restrict__ dirty1) {
  constexpr unsigned kAll = 0xffffffffu;
  constexpr int kShift = 15;
  constexpr int kTg22 = 13573;  // as canny_tile_classes
  const int lane = threadIdx.x & 31;
  const Index g = static_cast<Index>(blockIdx.x) * kCannyNmsBitsWarps + threadIdx.x / 32;
  const Index tile_x = g % tiles_x, seg = g / tiles_x;
  const Index tile_y0 = seg * kTiles;
  if (tile_y0 >= tiles_y) return;  // the whole warp
  const Index x0 = tile_x * kCannyTile, x = x0 + lane;
  // Lanes 0 .. 3 load the halo columns x0 - 2, x0 - 1, x0 + 32, x0 + 33; the others repeat them.
  const Index xe = x0 + ((lane & 3) < 2 ? (lane & 3) - 2 : kCannyTile + (lane & 3) - 2);
  const std::uint8_t* const col = in + canny_clamp(x, cols);
  const std::uint8_t* const col_e = in + canny_clamp(xe, cols);
  const bool x_in = x < cols;
  // The halo column this lane keeps (lane 0: x0 - 1, lane 31: x0 + 32; others unused).
  const bool h_in = lane == 0 ? x0 > 0 : x0 + kCannyTile < cols;
  const Index y0 = tile_y0 * kCannyTile;
  const Index y_walk = y0 + static_cast<Index>(kTiles) * kCannyTile;
  const Index y_end = y_walk < rows ? y_walk : rows;  // rows output
  // Rows of horizontal sums and differences ([0] two rows up, [1] one up), own and halo column.
  int hs0 = 0, hs1 = 0, hd0 = 0, hd1 = 0, hs0h = 0, hs1h = 0, hd0h = 0, hd1h = 0;
  // Magnitudes (left, centre, right) of the row above (u) and at (c) the row to suppress, and
  // the gradient at c.
  int ul = 0, uc = 0, ur = 0, cl = 0, cc = 0, cr = 0, gx = 0, gy = 0;
  int p_next = col[canny_clamp(y0 - 2, rows) * ld], e_next = col_e[canny_clamp(y0 - 2, rows) * ld];
  // One row: loads pixel row yl (a row ahead), takes the gradient of row yl - 1 (when yl >= y0)
  // and, when yl >= y0 + 2, suppresses row yl - 2: returns its masks (bit l: column x0 + l).
  const auto step = [&](Index yl, unsigned& w_mask, unsigned& e_mask) {
    const int p = p_next, e = e_next;
    p_next = col[canny_clamp(yl + 1, rows) * ld];  // row rows (clamped) past the end: harmless
    e_next = col_e[canny_clamp(yl + 1, rows) * ld];
    const int eb = __shfl_sync(kAll, e, lane == 0 ? 1 : 2);  // lane 0: x0 - 1; else x0 + 32
    const int ea = __shfl_sync(kAll, e, lane == 0 ? 0 : 3);  // lane 0: x0 - 2; else x0 + 33
    int pl = __shfl_up_sync(kAll, p, 1), pr = __shfl_down_sync(kAll, p, 1);
    if (lane == 0) pl = eb;
    if (lane == 31) pr = eb;
    const int hs = pl + 2 * p + pr, hd = pr - pl;
    // The halo column: lane 0 (x0 - 2, x0 - 1, x0) = (ea, eb, p); lane 31 (x0 + 31, .., + 33) = (p, eb, ea).
    const int hsh = ea + 2 * eb + p, hdh = lane == 0 ? p - ea : ea - p;
    w_mask = e_mask = 0;
    if (yl >= y0) {
      const Index ym = yl - 1;
      const bool y_in = ym >= 0 && ym < rows;
      const int dx = hd0 + 2 * hd1 + hd, dy = hs - hs0;
      const int dxh = hd0h + 2 * hd1h + hdh, dyh = hsh - hs0h;
      const int m = x_in && y_in ? ::abs(dx) + ::abs(dy) : 0;
      const int mh = h_in && y_in ? ::abs(dxh) + ::abs(dyh) : 0;
      int ml = __shfl_up_sync(kAll, m, 1), mr = __shfl_down_sync(kAll, m, 1);
      if (lane == 0) ml = mh;
      if (lane == 31) mr = mh;
      if (yl >= y0 + 2) {  // suppress row yo = yl - 2: u (yo - 1), c (yo), d = (ml, m, mr) (yo + 1)
        bool peak = false;
        if (x_in && yl - 2 < rows && cc > low) {
          const int ax = ::abs(gx), ay = ::abs(gy) << kShift;
          const int tg22x = ax * kTg22, tg67x = tg22x + (ax << (kShift + 1));
          const bool diag = ay >= tg22x && ay <= tg67x;
          int a, b;  // the two neighbours across the gradient
          if (ay < tg22x) a = cl, b = cr;
          else if (ay > tg67x) a = uc, b = m;
          else if ((gx ^ gy) < 0) a = ur, b = ml;
          else a = ul, b = mr;
          peak = cc > a && (diag ? cc > b : cc >= b);
        }
        w_mask = __ballot_sync(kAll, peak && cc <= high);
        e_mask = __ballot_sync(kAll, peak && cc > high);
      }
      ul = cl, uc = cc, ur = cr;
      cl = ml, cc = m, cr = mr;
      gx = dx, gy = dy;
    }
    hs0 = hs1, hs1 = hs, hd0 = hd1, hd1 = hd;
    hs0h = hs1h, hs1h = hsh, hd0h = hd1h, hd1h = hdh;
  };
  unsigned w_mask, e_mask;
  for (Index yl = y0 - 2; yl < y0 + 2; ++yl) step(yl, w_mask, e_mask);  // the first gradients
  for (Index tile_y = tile_y0, ys = y0; ys < y_end; ++tile_y, ys += kCannyTile) {
    unsigned weak = 0, edge = 0;  // lane r: row r of the tile
#pragma unroll 1
    for (int r = 0; r < kCannyTile; ++r) {
      step(ys + r + 2, w_mask, e_mask);  // suppresses row ys + r
      if (lane == r) weak = w_mask, edge = e_mask;
    }
    // The tile's own fill (no halo): edges raise the weak runs they touch, 8-connected.
    const unsigned cand = weak | edge;
    edge = canny_tile_fill(edge, cand);
    weak = cand & ~edge;
    const Index t = tile_y * tiles_x + tile_x;
    edge_bits[t * kCannyTile + lane] = edge;
    weak_bits[t * kCannyTile + lane] = weak;
    const bool ring = __any_sync(kAll, (weak & 0x80000001u) != 0 || ((lane == 0 || lane == 31) && weak != 0));
    if (lane == 0) {
      dirty0[t] = ring ? 1 : 0;
      dirty1[t] = 0;
    }
  }
}

/// One round of hysteresis on the bit planes, as canny_hysteresis_bits_kernel's (same marks and
/// contract: a warp a marked tile, its fill with the neighbours' edges as a halo, a raise on the
/// outer ring marks the 8 neighbours in dirty_out and sets *changed). The tile's halo comes from
/// the neighbours' words: row 31 of the tile above, row 0 of the one below, bit 31 / bit 0 of the
/// left / right tiles' rows. A neighbour's word may be rewritten meanwhile (only by ORing raised
/// bits): either value is a valid halo, and a neighbour that raises its ring marks this tile.
__global__ void __launch_bounds__(32 * kCannyBitWarps)
canny_bits_round_kernel(unsigned* edge_bits, const unsigned* __restrict__ weak_bits, Index tiles_x, Index tiles_y,
                        int* changed, std::uint8_t* __restrict__ dirty_in, std::uint8_t* __restrict__ dirty_out) {
  const int lane = threadIdx.x & 31;
  const Index n_tiles = tiles_x * tiles_y;
  const Index warps = static_cast<Index>(gridDim.x) * kCannyBitWarps;
  for (Index tile = static_cast<Index>(blockIdx.x) * kCannyBitWarps + threadIdx.x / 32; tile < n_tiles; tile += warps) {
    int mark = 0;
    if (lane == 0) {
      mark = dirty_in[tile];
      if (mark) dirty_in[tile] = 0;
    }
    if (!__shfl_sync(kCannyFullMask, mark, 0)) continue;
    const Index tile_y = tile / tiles_x, tile_x = tile - tile_y * tiles_x;
    // The word of row r of tile (ty, tx), 0 outside the image (read through L2: neighbours'
    // raises of this round, when already there, speed the fill up).
    const auto word = [&](Index ty, Index tx, int r) -> unsigned {
      return ty >= 0 && ty < tiles_y && tx >= 0 && tx < tiles_x ? __ldcg(edge_bits + (ty * tiles_x + tx) * kCannyTile + r) : 0u;
    };
    unsigned edge = __ldcg(edge_bits + tile * kCannyTile + lane);
    const unsigned cand = weak_bits[tile * kCannyTile + lane] | edge, edge0 = edge;
    const unsigned above = word(tile_y - 1, tile_x, kCannyTile - 1), below = word(tile_y + 1, tile_x, 0);
    const unsigned left = word(tile_y, tile_x - 1, lane) >> 31, right = word(tile_y, tile_x + 1, lane) & 1u;
    unsigned left_up = __shfl_up_sync(kCannyFullMask, left, 1), right_up = __shfl_up_sync(kCannyFullMask, right, 1);
    unsigned left_down = __shfl_down_sync(kCannyFullMask, left, 1), right_down = __shfl_down_sync(kCannyFullMask, right, 1);
    if (lane == 0) {
      left_up = word(tile_y - 1, tile_x - 1, kCannyTile - 1) >> 31;
      right_up = word(tile_y - 1, tile_x + 1, kCannyTile - 1) & 1u;
    }
    if (lane == 31) {
      left_down = word(tile_y + 1, tile_x - 1, 0) >> 31;
      right_down = word(tile_y + 1, tile_x + 1, 0) & 1u;
    }
    const unsigned side = ((left | left_up | left_down) ? 1u : 0u) | ((right | right_up | right_down) ? 0x80000000u : 0u);
    edge = canny_tile_fill(edge, cand, above, below, side);
    const unsigned raised = edge & ~edge0;
    if (!__any_sync(kCannyFullMask, raised != 0)) continue;
    if (raised) edge_bits[tile * kCannyTile + lane] = edge;
    const bool ring = __any_sync(kCannyFullMask, (raised & 0x80000001u) != 0 || ((lane == 0 || lane == 31) && raised != 0));
    if (ring && lane == 0) atomicExch(changed, 1);
    if (ring && lane < 9 && lane != 4) {  // the 8 neighbours
      const Index ny = tile_y + lane / 3 - 1, nx = tile_x + lane % 3 - 1;
      if (ny >= 0 && ny < tiles_y && nx >= 0 && nx < tiles_x) dirty_out[ny * tiles_x + nx] = 1;
    }
  }
}

/// The edges from the edge plane: out(y, x) = 255 where the bit is set, else 0 (out dense, rows x
/// cols). Item e is word e of the plane (row r = e % 32 of tile t = e / 32; rows past the image
/// skipped): its up to 32 bytes, as 16-byte stores when `vec` (the launcher's promise: cols a
/// multiple of 16 and out 16-byte aligned, so every row segment of a tile is too; the last tile
/// of a row may hold 16 columns), else byte by byte up to cols. A lane a row: its bytes are whole
/// 32-byte sectors, and the plane is read in order.
__global__ void __launch_bounds__(kCannyExpandThreads)
canny_bits_expand_kernel(const unsigned* __restrict__ edge_bits, std::uint8_t* __restrict__ out, Index rows, Index cols,
                         Index tiles_x, Index n_words, bool vec) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index e = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; e < n_words; e += stride) {
    const Index t = e / kCannyTile, tile_y = t / tiles_x, tx = t - tile_y * tiles_x;
    const Index y = tile_y * kCannyTile + e % kCannyTile;
    if (y >= rows) continue;
    const unsigned w = edge_bits[e];
    const Index left = cols - tx * kCannyTile;  // columns of the row from the tile's first
    const int n_x = left < kCannyTile ? static_cast<int>(left) : kCannyTile;
    std::uint8_t* const dst = out + y * cols + tx * kCannyTile;
    if (vec) {
      uint4* const d = reinterpret_cast<uint4*>(dst);
      d[0] = make_uint4(canny_nibble_bytes(w & 15u), canny_nibble_bytes((w >> 4) & 15u), canny_nibble_bytes((w >> 8) & 15u),
                        canny_nibble_bytes((w >> 12) & 15u));
      if (n_x > 16)
        d[1] = make_uint4(canny_nibble_bytes((w >> 16) & 15u), canny_nibble_bytes((w >> 20) & 15u),
                          canny_nibble_bytes((w >> 24) & 15u), canny_nibble_bytes(w >> 28));
    } else {
      for (int j = 0; j < n_x; ++j) dst[j] = (w >> j) & 1u ? kCannyEdge : std::uint8_t(0);
    }
  }
}

// ------------------------------------------------------------------ connected components

/// The root of i in a forest whose parents only decrease (parent[x] <= x, roots parent[x] == x).
/// Parents are read through L2 (__ldcg), past the SM's L1, which another SM's links do not
/// update; a stale parent would still be an ancestor, only a slower one. A path longer than two
/// steps is then pointed at the root, by atomicMin (never undoing a smaller parent that another
/// thread's link set meanwhile).
__device__ __forceinline__ unsigned canny_find(unsigned* parent, unsigned i) {
  unsigned root = i;
  int steps = 0;
  for (unsigned p; (p = __ldcg(parent + root)) != root; ++steps) root = p;
  if (steps > 2)  // parents only decrease: stop where another thread's compression jumped past root
    for (unsigned x = i; x > root;) {
      const unsigned next = __ldcg(parent + x);
      atomicMin(parent + x, root);
      x = next;
    }
  return root;
}

/// Joins the trees of a and b: the larger root is linked under the smaller by atomicMin. When the
/// larger was linked elsewhere meanwhile (atomicMin returns another parent), the join goes on
/// with that parent, which is in the same tree: no link is lost (Playne and Hawick's union).
template <class T, class Find>
__device__ __forceinline__ void canny_unite(T* parent, T a, T b, const Find& find) {
  for (;;) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    if (a > b) {
      const T t = a;
      a = b;
      b = t;
    }
    const T old = atomicMin(parent + b, a);
    if (old == b) return;
    b = old;
  }
}

/// Suppression and the tile's own components. For each candidate (a class above 0), lab[p] is
/// the global index of its tile piece's root (the smallest index of its 8-connected piece inside
/// the tile, as the shared union-find leaves it); map[p] is kCannyMember, or at the root
/// kCannyRootWeak / kCannyRootStrong (whether the piece has a pixel of class kCannyEdge); 0 for
/// the others (whose lab is not written). Indices are 32-bit: the image has fewer than 2^32
/// pixels.
__global__ void __launch_bounds__(kCannyThreads)
canny_label_kernel(const std::uint8_t* __restrict__ in, Index ld, std::uint8_t* __restrict__ map, unsigned* __restrict__ lab,
                   Index rows, Index cols, int low, int high, unsigned tiles_y) {
  constexpr int kTilePixels = kCannyTile * kCannyTile;
  __shared__ CannySmem sm;
  __shared__ int parent_smem[kTilePixels];          // (TILE * TILE) a parent per pixel of the tile
  __shared__ std::uint8_t cls_smem[kTilePixels];     // (TILE * TILE) the classes
  __shared__ unsigned strong_smem[kTilePixels / 32];  // a bit per pixel: a root whose piece is strong
  const int tid = threadIdx.y * kCannyThreadsX + threadIdx.x;
  const int lx = threadIdx.x;
  const Index x0 = static_cast<Index>(blockIdx.x) * kCannyTile;
  const auto find = [&](int i) {  // volatile: other threads link roots meanwhile
    const volatile int* parent = parent_smem;
    for (int p; (p = parent[i]) != i;) i = p;
    return i;
  };
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kCannyTile;
    const unsigned cls = canny_tile_classes(in, ld, rows, cols, low, high, y0, x0, sm);  // begins with a barrier
#pragma unroll
    for (int r = 0; r < kCannyRowsPerThread; ++r) {
      const int i = (threadIdx.y + r * kCannyThreadsY) * kCannyTile + lx;
      parent_smem[i] = i;
      cls_smem[i] = canny_byte(cls, r);
    }
    if (tid < kTilePixels / 32) strong_smem[tid] = 0;
    __syncthreads();
    // Each candidate joins its candidate neighbours W, NW, N, NE inside the tile: every
    // 8-adjacent pair once.
#pragma unroll
    for (int r = 0; r < kCannyRowsPerThread; ++r) {
      const int ly = threadIdx.y + r * kCannyThreadsY, i = ly * kCannyTile + lx;
      if (!canny_byte(cls, r)) continue;
      if (lx > 0 && cls_smem[i - 1]) canny_unite(parent_smem, i, i - 1, find);
      if (ly > 0) {
        if (lx > 0 && cls_smem[i - kCannyTile - 1]) canny_unite(parent_smem, i, i - kCannyTile - 1, find);
        if (cls_smem[i - kCannyTile]) canny_unite(parent_smem, i, i - kCannyTile, find);
        if (lx < kCannyTile - 1 && cls_smem[i - kCannyTile + 1]) canny_unite(parent_smem, i, i - kCannyTile + 1, find);
      }
    }
    __syncthreads();
    // Every candidate points at its root (a root never changes now: writes of roots only), and
    // a strong pixel marks its root.
    int root[kCannyRowsPerThread];
#pragma unroll
    for (int r = 0; r < kCannyRowsPerThread; ++r) {
      const int i = (threadIdx.y + r * kCannyThreadsY) * kCannyTile + lx;
      root[r] = canny_byte(cls, r) ? find(i) : i;
      if (canny_byte(cls, r) == kCannyEdge) atomicOr(&strong_smem[root[r] / 32], 1u << (root[r] % 32));
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kCannyRowsPerThread; ++r) {
      const int ly = threadIdx.y + r * kCannyThreadsY, i = ly * kCannyTile + lx;
      const Index y = y0 + ly, x = x0 + lx;
      if (y >= rows || x >= cols) continue;
      std::uint8_t code = 0;
      if (canny_byte(cls, r)) {
        const int q = root[r];
        if (q != i) code = kCannyMember;
        else code = (strong_smem[q / 32] >> (q % 32)) & 1u ? kCannyRootStrong : kCannyRootWeak;
        lab[y * cols + x] = static_cast<unsigned>((y0 + q / kCannyTile) * cols + x0 + q % kCannyTile);
      }
      map[y * cols + x] = code;
    }
  }
}

/// Joins the candidates that touch across tile borders: item e is a pixel p on a tile's first
/// column (x = 32 k, k >= 1; the first (tiles_x - 1) * rows items, down each such column) joined
/// with its candidate neighbours in the column before (rows y - 1 .. y + 1), or on a tile's first
/// row (y = 32 k, k >= 1; along each such row) joined with its candidate neighbours in the row
/// above (columns x - 1 .. x + 1). Every 8-adjacent pair of pixels in two tiles is one of these.
__global__ void __launch_bounds__(kCannyStreamThreads)
canny_merge_kernel(const std::uint8_t* __restrict__ map, unsigned* lab, Index rows, Index cols, Index tiles_x,
                   Index tiles_y) {
  const Index n_down = (tiles_x - 1) * rows;
  const Index n = n_down + (tiles_y - 1) * cols;
  const auto find = [lab](unsigned i) { return canny_find(lab, i); };
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index e = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += stride) {
    const bool down = e < n_down;
    const Index f = down ? e : e - n_down;
    const Index y = down ? f % rows : (f / cols + 1) * kCannyTile;
    const Index x = down ? (f / rows + 1) * kCannyTile : f % cols;
    const Index p = y * cols + x;
    if (!map[p]) continue;
#pragma unroll
    for (int k = -1; k <= 1; ++k) {
      const Index qy = down ? y + k : y - 1, qx = down ? x - 1 : x + k;
      if (qy < 0 || qy >= rows || qx < 0 || qx >= cols) continue;
      const Index q = qy * cols + qx;
      if (map[q]) canny_unite(lab, static_cast<unsigned>(p), static_cast<unsigned>(q), find);
    }
  }
}

/// Every tile piece's root (map kCannyRootWeak or kCannyRootStrong) is pointed at its final root
/// (lab[q] = root), and a strong piece marks that root kCannyRootStrong. So afterwards, for every
/// candidate p, lab[lab[p]] is its component's root, whose map says whether it is strong. Four
/// pixels a thread (n is rows * cols: the map is dense).
__global__ void __launch_bounds__(kCannyStreamThreads)
canny_flatten_kernel(std::uint8_t* map, unsigned* lab, Index n) {
  const Index stride = 4 * static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index e = 4 * (static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x); e < n; e += stride) {
    std::uint8_t code[4];
    if (e + 4 <= n) {
      const unsigned word = *reinterpret_cast<const unsigned*>(map + e);
      if ((word & 0x02020202u) == 0) continue;  // no root among the four (roots are 2 and 3)
#pragma unroll
      for (int b = 0; b < 4; ++b) code[b] = static_cast<std::uint8_t>(word >> (8 * b));
    } else {
#pragma unroll
      for (int b = 0; b < 4; ++b) code[b] = e + b < n ? map[e + b] : 0;
    }
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      if (code[b] < kCannyRootWeak) continue;
      const unsigned q = static_cast<unsigned>(e + b);
      unsigned root = q;
      for (unsigned p; (p = __ldcg(lab + root)) != root;) root = p;
      if (root == q) continue;
      for (unsigned x = q; x > root;) {  // the whole path at the root: later finds take one step
        const unsigned next = __ldcg(lab + x);
        atomicMin(lab + x, root);
        x = next;
      }
      if (code[b] == kCannyRootStrong) map[root] = kCannyRootStrong;
    }
  }
}

/// The edges, in place: 255 where a candidate's component root is strong, else 0. A root's own
/// byte may be rewritten (kCannyRootStrong -> 255, kCannyRootWeak -> 0) while others read it:
/// both values say the same. Four pixels a thread.
__global__ void __launch_bounds__(kCannyStreamThreads)
canny_edges_kernel(std::uint8_t* map, const unsigned* __restrict__ lab, Index n) {
  const Index stride = 4 * static_cast<Index>(gridDim.x) * blockDim.x;
  const auto edge = [&](Index p) -> unsigned {
    const std::uint8_t s = map[lab[lab[p]]];
    return s == kCannyRootStrong || s == kCannyEdge ? kCannyEdge : 0u;
  };
  for (Index e = 4 * (static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x); e < n; e += stride) {
    if (e + 4 <= n) {
      const unsigned word = *reinterpret_cast<const unsigned*>(map + e);
      unsigned out = 0;
#pragma unroll
      for (int b = 0; b < 4; ++b)
        if ((word >> (8 * b)) & 0xffu) out |= edge(e + b) << (8 * b);
      *reinterpret_cast<unsigned*>(map + e) = out;
    } else {
      for (Index p = e; p < n; ++p) map[p] = map[p] ? static_cast<std::uint8_t>(edge(p)) : std::uint8_t(0);
    }
  }
}

// ------------------------------------------------------------------ bit planes: union-find
// A bound on the rounds' cost (a weak chain through every tile takes a round a tile it crosses):
// components of the tiles' ring pieces. Only a piece (8-connected candidates of a tile) that
// touches the tile's outer ring can join pixels of other tiles; the others were settled by
// canny_nms_bits_kernel's own fill. Each ring pixel is a node, tile * 128 + its slot (row 0:
// slot = column; row 31: 32 + column; column 0, rows 1 .. 30: 64 + row; column 31, rows 1 ..
// 30: 96 + row; slots 64, 95, 96, 127 unused). canny_ring_pieces_kernel points every ring node
// at its piece's smallest node and flags the nodes of pieces holding an edge;
// canny_ring_merge_kernel joins ring nodes 8-adjacent across tile borders (canny_unite, parents
// only decrease); canny_ring_strong_kernel marks the root of every flagged node;
// canny_ring_apply_kernel raises, tile by tile, the pieces whose root is marked. Four kernels
// whatever the chains' lengths.
constexpr int kCannyRingSlots = 128;

/// The ring slot of pixel (r, c) of a tile (on its outer ring).
__device__ __forceinline__ unsigned canny_ring_slot(int r, int c) {
  return r == 0 ? c : r == kCannyTile - 1 ? 32 + c : c == 0 ? 64 + r : 96 + r;
}

/// The candidates (weak or edge) of `tile`, lane r row r.
__device__ __forceinline__ unsigned canny_cand_row(const unsigned* edge_bits, const unsigned* weak_bits, Index tile, int lane) {
  return edge_bits[tile * kCannyTile + lane] | weak_bits[tile * kCannyTile + lane];
}

/// A warp a tile: every ring node gets parent = its piece's smallest node (itself when not a
/// candidate) and strong = whether its piece holds an edge pixel (written for every node).
__global__ void __launch_bounds__(32 * kCannyBitWarps)
canny_ring_pieces_kernel(const unsigned* __restrict__ edge_bits, const unsigned* __restrict__ weak_bits, Index n_tiles,
                         unsigned* __restrict__ parent, std::uint8_t* __restrict__ strong) {
  const int lane = threadIdx.x & 31;
  const Index warps = static_cast<Index>(gridDim.x) * kCannyBitWarps;
  constexpr unsigned kInner = 0x7ffffffeu;  // rows 1 .. 30
  for (Index tile = static_cast<Index>(blockIdx.x) * kCannyBitWarps + threadIdx.x / 32; tile < n_tiles; tile += warps) {
    const unsigned edge = edge_bits[tile * kCannyTile + lane];
    const unsigned cand = edge | weak_bits[tile * kCannyTile + lane];
    const unsigned base = static_cast<unsigned>(tile) * kCannyRingSlots;
    // Lane l's slots: l (row 0), 32 + l (row 31), 64 + l (column 0), 96 + l (column 31).
    unsigned rep[4] = {base + lane, base + 32 + lane, base + 64 + lane, base + 96 + lane};
    bool strong_slot[4] = {false, false, false, false};
    // The ring candidates not yet in a piece (lane r: row r's ring bits).
    unsigned ring = cand & ((lane == 0 || lane == 31) ? 0xffffffffu : 0x80000001u);
    while (__any_sync(kCannyFullMask, ring != 0)) {
      const int first = __ffs(__ballot_sync(kCannyFullMask, ring != 0)) - 1;
      const unsigned seed_row = __shfl_sync(kCannyFullMask, ring, first);
      const unsigned seed = lane == first ? seed_row & (0u - seed_row) : 0u;  // its lowest bit
      const unsigned piece = canny_tile_fill(seed, cand);
      ring &= ~piece;
      const unsigned top = __shfl_sync(kCannyFullMask, piece, 0), bottom = __shfl_sync(kCannyFullMask, piece, 31);
      const unsigned left = __ballot_sync(kCannyFullMask, piece & 1u) & kInner;
      const unsigned right = __ballot_sync(kCannyFullMask, (piece >> 31) & 1u) & kInner;
      const unsigned low = top ? __ffs(top) - 1
                           : bottom ? 32 + __ffs(bottom) - 1
                           : left   ? 64 + __ffs(left) - 1
                                    : 96 + __ffs(right) - 1;  // the piece's smallest slot
      const bool is_strong = __any_sync(kCannyFullMask, (piece & edge) != 0);
      const bool in[4] = {((top >> lane) & 1u) != 0, ((bottom >> lane) & 1u) != 0, ((left >> lane) & 1u) != 0,
                          ((right >> lane) & 1u) != 0};
#pragma unroll
      for (int k = 0; k < 4; ++k)
        if (in[k]) rep[k] = base + low, strong_slot[k] = is_strong;
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      parent[base + 32 * k + lane] = rep[k];
      strong[base + 32 * k + lane] = strong_slot[k] ? 1 : 0;
    }
  }
}

/// Joins the ring nodes 8-adjacent across tile borders, canny_merge_kernel's items: a pixel p on a
/// tile's first column (x = 32 k, k >= 1; the first (tiles_x - 1) * rows items) with its candidate
/// neighbours in the column before, or on a tile's first row (y = 32 k, k >= 1) with those in the
/// row above.
__global__ void __launch_bounds__(kCannyStreamThreads)
canny_ring_merge_kernel(const unsigned* __restrict__ edge_bits, const unsigned* __restrict__ weak_bits, unsigned* parent,
                        Index rows, Index cols, Index tiles_x, Index tiles_y) {
  const Index n_down = (tiles_x - 1) * rows;
  const Index n = n_down + (tiles_y - 1) * cols;
  const auto find = [parent](unsigned i) { return canny_find(parent, i); };
  const auto node = [&](Index y, Index x, bool& is_cand) -> unsigned {  // (y, x) on a tile's ring
    const Index ty = y / kCannyTile, tx = x / kCannyTile, t = ty * tiles_x + tx;
    const int r = static_cast<int>(y - ty * kCannyTile), c = static_cast<int>(x - tx * kCannyTile);
    is_cand = (((edge_bits[t * kCannyTile + r] | weak_bits[t * kCannyTile + r]) >> c) & 1u) != 0;
    return static_cast<unsigned>(t) * kCannyRingSlots + canny_ring_slot(r, c);
  };
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index e = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += stride) {
    const bool down = e < n_down;
    const Index f = down ? e : e - n_down;
    const Index y = down ? f % rows : (f / cols + 1) * kCannyTile;
    const Index x = down ? (f / rows + 1) * kCannyTile : f % cols;
    bool p_cand;
    const unsigned p = node(y, x, p_cand);
    if (!p_cand) continue;
#pragma unroll
    for (int k = -1; k <= 1; ++k) {
      const Index qy = down ? y + k : y - 1, qx = down ? x - 1 : x + k;
      if (qy < 0 || qy >= rows || qx < 0 || qx >= cols) continue;
      bool q_cand;
      const unsigned q = node(qy, qx, q_cand);
      if (q_cand) canny_unite(parent, p, q, find);
    }
  }
}

/// Marks the root of every node flagged strong (strong[root] = 2: a value apart from the pieces'
/// flags, which other threads read meanwhile), compressing its path. n = n_tiles * 128.
__global__ void __launch_bounds__(kCannyStreamThreads)
canny_ring_strong_kernel(unsigned* parent, std::uint8_t* strong, Index n) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index e = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += stride) {
    const unsigned root = canny_find(parent, static_cast<unsigned>(e));
    if (strong[e] == 1) strong[root] = 2;
  }
}

/// A warp a tile: its ring pixels whose root is marked (2) seed a fill of the tile's candidates;
/// the edge plane gets the filled pieces (with its own edges).
__global__ void __launch_bounds__(32 * kCannyBitWarps)
canny_ring_apply_kernel(unsigned* __restrict__ edge_bits, const unsigned* __restrict__ weak_bits, Index n_tiles,
                        const unsigned* __restrict__ parent, const std::uint8_t* __restrict__ strong) {
  const int lane = threadIdx.x & 31;
  const Index warps = static_cast<Index>(gridDim.x) * kCannyBitWarps;
  const auto marked = [&](unsigned s) {
    unsigned root = s;
    for (unsigned p; (p = parent[root]) != root;) root = p;
    return strong[root] == 2;
  };
  for (Index tile = static_cast<Index>(blockIdx.x) * kCannyBitWarps + threadIdx.x / 32; tile < n_tiles; tile += warps) {
    const unsigned edge = edge_bits[tile * kCannyTile + lane];
    const unsigned weak = weak_bits[tile * kCannyTile + lane];
    const unsigned cand = edge | weak;
    const unsigned base = static_cast<unsigned>(tile) * kCannyRingSlots;
    // Lane l tests its slots: (0, l), (31, l), (l, 0), (l, 31); seeds by ballots, lane r row r.
    const unsigned row0 = __shfl_sync(kCannyFullMask, weak, 0), row31 = __shfl_sync(kCannyFullMask, weak, 31);
    const bool t0 = ((row0 >> lane) & 1u) && marked(base + lane);
    const bool t31 = ((row31 >> lane) & 1u) && marked(base + 32 + lane);
    const bool c0 = lane > 0 && lane < 31 && (weak & 1u) && marked(base + 64 + lane);
    const bool c31 = lane > 0 && lane < 31 && (weak >> 31) && marked(base + 96 + lane);
    const unsigned b0 = __ballot_sync(kCannyFullMask, t0), b31 = __ballot_sync(kCannyFullMask, t31);
    const unsigned seed = (lane == 0 ? b0 : 0u) | (lane == 31 ? b31 : 0u) | (c0 ? 1u : 0u) | (c31 ? 0x80000000u : 0u);
    if (!__any_sync(kCannyFullMask, seed != 0)) continue;
    const unsigned filled = canny_tile_fill(seed | edge, cand);
    if (filled != edge) edge_bits[tile * kCannyTile + lane] = filled;
  }
}

}  // namespace devmat::detail

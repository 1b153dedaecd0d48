// Canny edges on u8 as OpenCV's cv::Canny with its defaults (3x3 Sobel, borders replicated, L1
// gradient |dx| + |dy|): non-maximum suppression with OpenCV's integer direction test, then
// hysteresis to a fixpoint. The edge map is the output image itself: 0 (no edge), kCannyWeak
// (above low, not yet joined to a strong pixel) and 255 (an edge). Device code only;
// dispatch/image_canny.cuh launches and loops.
#pragma once

#include "common.cuh"

#include <cuda_runtime.h>

#include <cstdint>

namespace devmat::detail {

constexpr int kCannyThreadsX = 32;
constexpr int kCannyThreadsY = 8;
constexpr int kCannyThreads = kCannyThreadsX * kCannyThreadsY;
constexpr int kCannyTile = 32;  // a 32 x 32 tile, each thread 4 pixels 8 rows apart
constexpr std::uint8_t kCannyWeak = 1;
constexpr std::uint8_t kCannyEdge = 255;

__device__ __forceinline__ Index canny_clamp(Index i, Index n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

/// Gradient, magnitude and non-maximum suppression: map(y, x) = 255 where the L1 magnitude m is
/// a local maximum across the gradient (OpenCV's sectors: tan 22.5 in Q15) and m > high, 1
/// where it is one and low < m <= high, else 0. Magnitudes outside the image count as 0.
__global__ void __launch_bounds__(kCannyThreads)
canny_nms_kernel(const std::uint8_t* __restrict__ in, Index ld, std::uint8_t* __restrict__ map, Index rows, Index cols,
                 int low, int high, unsigned tiles_y) {
  __shared__ int px_smem[kCannyTile + 4][kCannyTile + 4];   // pixels, halo 2, replicated
  __shared__ int mag_smem[kCannyTile + 2][kCannyTile + 2];  // magnitudes, halo 1, 0 outside
  const int tid = threadIdx.y * kCannyThreadsX + threadIdx.x;
  const Index x0 = static_cast<Index>(blockIdx.x) * kCannyTile;
  const auto grad = [&](int ly, int lx, int& dx, int& dy) {  // at px_smem (ly, lx), a centre
    const int a = px_smem[ly - 1][lx - 1], b = px_smem[ly - 1][lx], c = px_smem[ly - 1][lx + 1];
    const int d = px_smem[ly][lx - 1], f = px_smem[ly][lx + 1];
    const int g = px_smem[ly + 1][lx - 1], h = px_smem[ly + 1][lx], i = px_smem[ly + 1][lx + 1];
    dx = (c + 2 * f + i) - (a + 2 * d + g);
    dy = (g + 2 * h + i) - (a + 2 * b + c);
  };
  for (unsigned tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
    const Index y0 = static_cast<Index>(tile_y) * kCannyTile;
    __syncthreads();
    for (int e = tid; e < (kCannyTile + 4) * (kCannyTile + 4); e += kCannyThreads) {
      const int i = e / (kCannyTile + 4), j = e % (kCannyTile + 4);
      px_smem[i][j] = in[canny_clamp(y0 - 2 + i, rows) * ld + canny_clamp(x0 - 2 + j, cols)];
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
      mag_smem[i][j] = m;
    }
    __syncthreads();
    constexpr int kShift = 15;
    constexpr int kTg22 = 13573;  // (int)(tan(22.5 deg) * 2^15 + 0.5)
#pragma unroll
    for (int r = 0; r < kCannyTile / kCannyThreadsY; ++r) {
      const int ly = threadIdx.y + r * kCannyThreadsY, lx = threadIdx.x;
      const Index y = y0 + ly, x = x0 + lx;
      if (y >= rows || x >= cols) continue;
      const int my = ly + 1, mx = lx + 1;  // in mag_smem
      const int m = mag_smem[my][mx];
      std::uint8_t out = 0;
      if (m > low) {
        int xs, ys;
        grad(ly + 2, lx + 2, xs, ys);
        const int ax = ::abs(xs), ay = ::abs(ys) << kShift;
        const int tg22x = ax * kTg22;
        bool peak;
        if (ay < tg22x) {
          peak = m > mag_smem[my][mx - 1] && m >= mag_smem[my][mx + 1];
        } else {
          const int tg67x = tg22x + (ax << (kShift + 1));
          if (ay > tg67x) {
            peak = m > mag_smem[my - 1][mx] && m >= mag_smem[my + 1][mx];
          } else {
            const int s = (xs ^ ys) < 0 ? -1 : 1;
            peak = m > mag_smem[my - 1][mx - s] && m > mag_smem[my + 1][mx + s];
          }
        }
        if (peak) out = m > high ? kCannyEdge : kCannyWeak;
      }
      map[y * cols + x] = out;
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

/// Weak pixels that never joined an edge are not edges: 1 -> 0.
__global__ void __launch_bounds__(kCannyThreads)
canny_finish_kernel(std::uint8_t* map, Index n) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index e = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += stride)
    if (map[e] == kCannyWeak) map[e] = 0;
}

}  // namespace devmat::detail

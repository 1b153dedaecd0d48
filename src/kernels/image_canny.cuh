// Canny edges on u8 as OpenCV's cv::Canny with its defaults (3x3 Sobel, borders replicated, L1
// gradient |dx| + |dy|): non-maximum suppression with OpenCV's integer direction test, then
// hysteresis, on bit planes (a 32-bit word a row of each 32 x 32 tile):
// - canny_nms_bits_kernel suppresses (a warp walking down a column of tiles in registers) into
//   the edge and weak planes and fills each tile on its own;
// - canny_bits_round_kernel, a round: each marked tile is filled again with its neighbours' edges
//   as a halo (a few rounds; the last sets a flag where it raised a pixel on a tile's ring);
// - past them, where that flag is set, the components of the tiles' ring pieces
//   (canny_ring_*_kernel: four kernels, whatever the chains' lengths) finish the hysteresis;
// - canny_bits_expand_kernel writes 0 / 255 from the edge plane.
// Device code only; dispatch/image_canny.cuh launches.
#pragma once

#include "common.cuh"

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace devmat::detail {

constexpr int kCannyTile = 32;  // a 32 x 32 tile: a warp, lane r row r, bit j column j
constexpr std::uint8_t kCannyEdge = 255;
constexpr int kCannyStreamThreads = 256;  // the per-item kernels (ring merge and strong)
__device__ __forceinline__ Index canny_clamp(Index i, Index n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

// ------------------------------------------------------------------ the fill by bit masks
// A warp holds a 32 x 32 tile, lane r row r as two masks (weak, edge: bit j = column j). A step
// raises every weak run (maximal horizontal run of candidates) of a row that touches an edge in
// the rows above, below or itself, 8-connected: runs fill in one step by carries, so a step
// costs a few instructions and two shuffles.
constexpr int kCannyBitWarps = 4;  // tiles (warps) a block of the per-tile kernels
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

// ------------------------------------------------------------------ bit planes
// The suppression writes no byte map but two bit planes, a 32-bit word per row of each 32 x 32 tile (tile t = tile_y * tiles_x + tile_x,
// word t * 32 + r is its row r, bit j its column j): `edge` (class kCannyEdge, then raised) and
// `weak` (a candidate above low, not raised). canny_nms_bits_kernel suppresses by a warp walking
// down a column of tiles in registers (one row a step, neighbours by shuffles; 32 output columns a
// warp: lanes 0 and 31 also take the gradients of the columns just outside the tile), holds each
// tile as masks (lane r row r, by ballots), fills it on its own (canny_tile_fill without a halo)
// and marks it for the first round when weak pixels remain on its outer ring (only those can be
// raised from outside). The rounds (canny_bits_round_kernel) read 256 bytes a tile and its
// neighbours' border words; canny_bits_expand_kernel writes 0 / 255 from the edge plane once, so
// the byte map is written once and never read.

constexpr int kCannyNmsBitsWarps = 8;      // warps (tile columns) a block of canny_nms_bits_kernel
constexpr int kCannyNmsBitsMinBlocks = 4;  // blocks an SM: at most 64 registers a thread (56, no spills, sm_90, CUDA 13)
constexpr int kCannyExpandThreads = 256;   // canny_bits_expand_kernel: 16 columns of a row a thread

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
/// 0), dirty1[t] = 0. Issue-bound (ncu, H200, 4096^2: 77% of the SM's issue rate at 135 us), so a
/// row step is kept lean: the rows as 32-bit offsets from the walk's first, the row pointers
/// moved by one stride where the clamped row changes (no clamp and 64-bit multiply a load), the
/// warm-up rows' tests resolved at compile time, the row loop unrolled twice (the rolling
/// window's values renamed, not copied): about 100 instructions a step against 160 before.
template <int kTiles>
__global__ void __launch_bounds__(32 * kCannyNmsBitsWarps, kCannyNmsBitsMinBlocks)
canny_nms_bits_kernel(const std::uint8_t* __restrict__ in, Index ld, Index rows, Index cols, int low, int high, Index tiles_x,
                      Index tiles_y, unsigned* __restrict__ edge_bits, unsigned* __restrict__ weak_bits,
                      std::uint8_t* __restrict__ dirty0, std::uint8_t* __restrict__ dirty1) {
  constexpr unsigned kAll = 0xffffffffu;
  constexpr int kShift = 15;
  constexpr int kTg22 = 13573;  // (int)(tan(22.5 deg) * 2^15 + 0.5): OpenCV's sectors
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
  // Rows from here on by their offset k from y0 (-2 .. 32 kTiles + 2), as 32-bit numbers: row
  // y0 + k is in the image when k_first <= k < k_rows (k_rows clamped to 32 kTiles + 3).
  constexpr int kWalk = kTiles * kCannyTile;
  const int k_rows = static_cast<int>(rows - y0 < kWalk + 3 ? rows - y0 : kWalk + 3);
  const int k_first = y0 > 0 ? -2 : 0;
  // Rows of horizontal sums and differences ([0] two rows up, [1] one up), own and halo column.
  int hs0 = 0, hs1 = 0, hd0 = 0, hd1 = 0, hs0h = 0, hs1h = 0, hd0h = 0, hd1h = 0;
  // Magnitudes (left, centre, right) of the row above (u) and at (c) the row to suppress, and
  // the gradient at c.
  int ul = 0, uc = 0, ur = 0, cl = 0, cc = 0, cr = 0, gx = 0, gy = 0;
  // The row loaded next, k_load, and where it is: row clamp(y0 + k_load) of both columns. The
  // pointers move down a row where y0 + k_load is inside 1 .. rows - 1 (the clamped row changes).
  int k_load = -2;
  const std::uint8_t* p_row = col + canny_clamp(y0 - 2, rows) * ld;
  const std::uint8_t* e_row = col_e + (p_row - col);
  // k_load from which the pointers move: 1 - y0 (row y0 + k_load >= 1); y0 is 0 or at least 32.
  const int k_move_lo = static_cast<int>(y0 >= 3 ? -2 : 1 - y0);
  int p_next = *p_row, e_next = *e_row;
  // One row: loads the pixel row k + 1 (a row ahead), takes the gradient of row k - 1 (kGrad: k
  // >= 0) and suppresses row k - 2 (kSuppress: k >= 2): returns its masks (bit l: column x0 + l).
  const auto step = [&](auto grad, auto suppress, int k, unsigned& w_mask, unsigned& e_mask) {
    constexpr bool kGrad = decltype(grad)::value, kSuppress = decltype(suppress)::value;
    const int p = p_next, e = e_next;
    ++k_load;
    if (k_load >= k_move_lo && k_load < k_rows) p_row += ld, e_row += ld;
    p_next = __ldg(p_row);  // past the image: its last row again, harmless
    e_next = __ldg(e_row);
    const int eb = __shfl_sync(kAll, e, lane == 0 ? 1 : 2);  // lane 0: x0 - 1; else x0 + 32
    const int ea = __shfl_sync(kAll, e, lane == 0 ? 0 : 3);  // lane 0: x0 - 2; else x0 + 33
    int pl = __shfl_up_sync(kAll, p, 1), pr = __shfl_down_sync(kAll, p, 1);
    if (lane == 0) pl = eb;
    if (lane == 31) pr = eb;
    const int hs = pl + 2 * p + pr, hd = pr - pl;
    // The halo column: lane 0 (x0 - 2, x0 - 1, x0) = (ea, eb, p); lane 31 (x0 + 31, .., + 33) = (p, eb, ea).
    const int hsh = ea + 2 * eb + p, hdh = lane == 0 ? p - ea : ea - p;
    w_mask = e_mask = 0;
    if constexpr (kGrad) {
      const bool y_in = k - 1 >= k_first && k - 1 < k_rows;  // row y0 + k - 1 in the image
      const int dx = hd0 + 2 * hd1 + hd, dy = hs - hs0;
      const int dxh = hd0h + 2 * hd1h + hdh, dyh = hsh - hs0h;
      const int m = x_in && y_in ? ::abs(dx) + ::abs(dy) : 0;
      const int mh = h_in && y_in ? ::abs(dxh) + ::abs(dyh) : 0;
      int ml = __shfl_up_sync(kAll, m, 1), mr = __shfl_down_sync(kAll, m, 1);
      if (lane == 0) ml = mh;
      if (lane == 31) mr = mh;
      if constexpr (kSuppress) {  // suppress row k - 2: u (k - 3), c (k - 2), d = (ml, m, mr) (k - 1)
        bool peak = false;
        if (x_in && k - 2 < k_rows && cc > low) {
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
  using No = std::false_type;
  using Yes = std::true_type;
  unsigned w_mask, e_mask;
  step(No{}, No{}, -2, w_mask, e_mask);  // the first rows' sums
  step(No{}, No{}, -1, w_mask, e_mask);
  step(Yes{}, No{}, 0, w_mask, e_mask);  // the first gradients
  step(Yes{}, No{}, 1, w_mask, e_mask);
  for (int kt = 0; kt < kWalk && kt < k_rows; kt += kCannyTile) {
    const Index tile_y = tile_y0 + kt / kCannyTile;
    unsigned weak = 0, edge = 0;  // lane r: row r of the tile
#pragma unroll 2
    for (int r = 0; r < kCannyTile; ++r) {
      step(Yes{}, Yes{}, kt + r + 2, w_mask, e_mask);  // suppresses row y0 + kt + r
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

/// One round of hysteresis on the bit planes, a warp a tile: tile t = tile_y * tiles_x + tile_x,
/// read when dirty_in[t] is set (lane 0 clears it). The warp fills the tile with its neighbours'
/// edges as a halo (canny_tile_fill), stores the raised rows, and when a raised pixel is on the
/// tile's outer ring marks the 8 neighbours in dirty_out and sets *changed. (Raises inside a tile
/// are final: only a mark makes work for a later round, so a round that leaves *changed unset
/// ends them.) The tile's halo comes from
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
/// cols). Item e is half h = e % (2 tiles_x) of image row y = e / (2 tiles_x), below the image
/// skipped: the 16 columns 16 h .. 16 h + 15 of the row (the low or high half of its tile's word),
/// as one 16-byte store when `vec` (the launcher's promise: cols a multiple of 16 and out 16-byte
/// aligned; a half past the last column is skipped), else byte by byte up to cols. Adjacent lanes
/// take adjacent halves of a row, so a warp stores 512 contiguous bytes, whole sectors (a lane a
/// tile row wrote 32 rows' sectors half at a time: 18.5 us at 4096^2 under ncu).
__global__ void __launch_bounds__(kCannyExpandThreads)
canny_bits_expand_kernel(const unsigned* __restrict__ edge_bits, std::uint8_t* __restrict__ out, Index rows, Index cols,
                         Index tiles_x, Index n_words, bool vec) {
  const Index halves = 2 * tiles_x, n_items = 2 * n_words;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index e = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; e < n_items; e += stride) {
    const Index y = e / halves, h = e - y * halves;
    const Index x0 = h * 16;
    if (y >= rows || x0 >= cols) continue;
    const Index word = ((y / kCannyTile) * tiles_x + h / 2) * kCannyTile + y % kCannyTile;
    const unsigned w = edge_bits[word] >> (16 * (h & 1));
    std::uint8_t* const dst = out + y * cols + x0;
    if (vec) {
      *reinterpret_cast<uint4*>(dst) = make_uint4(canny_nibble_bytes(w & 15u), canny_nibble_bytes((w >> 4) & 15u),
                                                  canny_nibble_bytes((w >> 8) & 15u), canny_nibble_bytes((w >> 12) & 15u));
    } else {
      const int n_x = cols - x0 < 16 ? static_cast<int>(cols - x0) : 16;
      for (int j = 0; j < n_x; ++j) dst[j] = (w >> j) & 1u ? kCannyEdge : std::uint8_t(0);
    }
  }
}

// ------------------------------------------------------------------ union-find

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

/// Whether the ring kernels run: `gate` null, or the rounds before them left *gate set (their
/// last round raised a pixel on a tile's ring). Where the rounds settled every tile the four
/// kernels return at once, with no host wait between the rounds and them.
__device__ __forceinline__ bool canny_ring_open(const int* gate) { return gate == nullptr || *gate != 0; }

/// A warp a tile: every ring node gets parent = its piece's smallest node (itself when not a
/// candidate) and strong = whether its piece holds an edge pixel (written for every node).
__global__ void __launch_bounds__(32 * kCannyBitWarps)
canny_ring_pieces_kernel(const unsigned* __restrict__ edge_bits, const unsigned* __restrict__ weak_bits, Index n_tiles,
                         unsigned* __restrict__ parent, std::uint8_t* __restrict__ strong, const int* gate) {
  if (!canny_ring_open(gate)) return;
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

/// Joins the ring nodes 8-adjacent across tile borders: item e is a pixel p on a tile's first
/// column (x = 32 k, k >= 1; the first (tiles_x - 1) * rows items, down each such column) with its
/// candidate neighbours in the column before (rows y - 1 .. y + 1), or on a tile's first row
/// (y = 32 k, k >= 1; along each such row) with those in the row above (columns x - 1 .. x + 1).
/// Every 8-adjacent pair of pixels in two tiles is one of these.
__global__ void __launch_bounds__(kCannyStreamThreads)
canny_ring_merge_kernel(const unsigned* __restrict__ edge_bits, const unsigned* __restrict__ weak_bits, unsigned* parent,
                        Index rows, Index cols, Index tiles_x, Index tiles_y, const int* gate) {
  if (!canny_ring_open(gate)) return;
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
canny_ring_strong_kernel(unsigned* parent, std::uint8_t* strong, Index n, const int* gate) {
  if (!canny_ring_open(gate)) return;
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
                        const unsigned* __restrict__ parent, const std::uint8_t* __restrict__ strong, const int* gate) {
  if (!canny_ring_open(gate)) return;
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

// The bodies of the fused expression kernels: element-wise (flat, 2D vector and 2D slots),
// whole reductions (sum, min, max, mean), row and column sums, arg min / arg max. Device code
// only, compiled at run time by NVRTC together with the code generated for one expression
// (src/expr/codegen.cpp), which supplies G:
//
//   struct G {
//     using Out = ...;                 // the expression's element type
//     using Params = ...;              // ExprHead h; ExprLeaf leaf[NL]; unsigned long long scalar[NS];
//     using Fixed = ...;               // the 1 x 1 leaves' values, loaded once per thread
//     template <int N> using Regs = ...;  // N consecutive elements of a row of every other leaf
//     template <bool kNC> static void load_fixed(const Params&, Fixed&);
//     // Row r, columns [c, c + N) (all inside the row) of every leaf: one aligned vector per
//     // leaf with kVec, else element by element. kNC: through the read-only path (reductions;
//     // element-wise kernels may write what they read, so they use plain loads).
//     template <int N, bool kVec, bool kNC> static void load_row(const Params&, Index r, Index c, Regs<N>&);
//     template <int N> static Out value(const Params&, const Fixed&, const Regs<N>&, int k);  // element k
//     template <bool kNC> static Out at(const Params&, const Fixed&, Index r, Index c);       // (r, c), loads included
//     // The slot path (expr_slots_body): a leaf read along a row is an ExprSlotLeaf<T, N>, a
//     // leaf with one element per row its value.
//     template <int N> using Slot = ...;
//     // Locates every leaf's chunks for the slot whose first element is (r, c0) (c0 < 0 for a
//     // first slot that starts before the row) and issues this lane's loads; the vector path
//     // is taken (and returned) where `want` and every leaf's chunks lie within its row.
//     // (before = min(c0, N), left = min(cols - c0, 2 N): ExprSlotLeaf::locate)
//     template <int N> static bool slot_load(const Params&, Index r, Index c0, int before, int left, bool valid,
//                                            bool want, Slot<N>&);
//     template <int N> static void slot_regs(const Slot<N>&, Regs<N>&);  // every lane of the warp
//   };
//
// Element (r, c) of the expression is its value at row r and column c of the rows x cols
// result; the flat paths read every leaf as one contiguous row (r = 0, c = flat index).
#pragma once

#include "common.cuh"
#include "expr_ops.cuh"
#include "expr_params.hpp"
#include "reduce_block.cuh"

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace devmat::detail {

constexpr int kExprThreads = 256;  // every expression kernel's block
constexpr int kExprReduceUnroll = 4;  // = DefaultReduceConfig::kUnroll: the unfused reduction's order

// ------------------------------------------------------------------ loads and stores
// Every load of a leaf names the bytes it reads here first: nothing on the GPU; the CPU
// emulation (test/expr_emu) defines it to check that no load touches a byte outside a leaf's
// rows.
#ifndef DEVMAT_EXPR_CHECK_READ
#define DEVMAT_EXPR_CHECK_READ(p, bytes) ((void)0)
#endif

/// One element through the read-only path (kNC) or a plain load.
template <class T, bool kNC>
__device__ __forceinline__ T expr_load_one(const T* p) {
  DEVMAT_EXPR_CHECK_READ(p, sizeof(T));
  if constexpr (kNC) return load_one(p);
  else return *p;
}

/// N consecutive elements at p, which is aligned to N * sizeof(T) (or 16 bytes when that is
/// more): 16-byte pieces, or one smaller vector.
template <class T, int N, bool kNC>
__device__ __forceinline__ Pack<T, N> expr_load_vec(const T* p) {
  constexpr int kBytes = static_cast<int>(sizeof(T)) * N;
  DEVMAT_EXPR_CHECK_READ(p, kBytes);
  Pack<T, N> r;
  if constexpr (kBytes > 16) {
    static_assert(kBytes % 16 == 0, "expr_load_vec: a multiple of 16 bytes");
    const uint4* q = reinterpret_cast<const uint4*>(p);
#pragma unroll
    for (int k = 0; k < kBytes / 16; ++k) {
      uint4 w;
      if constexpr (kNC) w = __ldg(q + k);
      else w = q[k];
      std::memcpy(reinterpret_cast<unsigned char*>(&r) + 16 * k, &w, 16);
    }
  } else if constexpr (kNC) {
    r = load_pack(reinterpret_cast<const Pack<T, N>*>(p));
  } else {
    r = *reinterpret_cast<const Pack<T, N>*>(p);
  }
  return r;
}

/// N consecutive elements at p, each loaded on its own (any alignment).
template <class T, int N, bool kNC>
__device__ __forceinline__ Pack<T, N> expr_load_elems(const T* p) {
  Pack<T, N> r;
#pragma unroll
  for (int k = 0; k < N; ++k) r.v[k] = expr_load_one<T, kNC>(p + k);
  return r;
}

template <class T, int N, bool kVec, bool kNC>
__device__ __forceinline__ Pack<T, N> expr_load_span(const T* p) {
  if constexpr (kVec) return expr_load_vec<T, N, kNC>(p);
  else return expr_load_elems<T, N, kNC>(p);
}

/// Stores N elements at p (aligned to N * sizeof(T), at most 16 bytes).
template <class T, int N>
__device__ __forceinline__ void expr_store_vec(T* p, const Pack<T, N>& v) {
  *reinterpret_cast<Pack<T, N>*>(p) = v;
}

/// r = e / d, c = e % d (32-bit division when both fit).
__device__ __forceinline__ void expr_split(Index e, Index d, Index& r, Index& c) {
  if (((e | d) >> 32) == 0) {
    const auto q = static_cast<unsigned>(e) / static_cast<unsigned>(d);
    r = q;
    c = e - static_cast<Index>(q) * d;
  } else {
    r = e / d;
    c = e - r * d;
  }
}

// ================================================================== element-wise
/// Flat path: the output and every leaf that is not 1 x 1 are contiguous and 16-byte aligned.
/// Each thread takes U units of V elements spaced a block apart (a warp's accesses stay
/// contiguous), issues every load before evaluating; block 0 also does the n % V tail. A small
/// matrix runs a kernel of its own with U = 1, one unit a thread over U times the blocks, and
/// more SMs: the latency of a pass is then that of one unit (src/expr/plan.cpp). Each element
/// is read and written by one thread (the output may be one of the leaves).
template <class G, int V, int U>
__device__ __forceinline__ void expr_flat_units(const typename G::Params& p, const typename G::Fixed& f) {
  using Out = typename G::Out;
  Out* out = static_cast<Out*>(p.h.out);
  const Index n_vec = p.h.n / V;
  const Index step = static_cast<Index>(gridDim.x) * (kExprThreads * U);
  // Not unrolled: the plan's grid is exact, so a thread makes one pass, and unrolling made every
  // thread divide for the trip count (a 32-bit division, tens of instructions) before its loads.
#pragma unroll 1
  for (Index first = static_cast<Index>(blockIdx.x) * (kExprThreads * U) + threadIdx.x; first < n_vec;
       first += step) {
    typename G::template Regs<V> g[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const Index i = first + u * kExprThreads;
      if (i < n_vec) G::template load_row<V, true, false>(p, 0, i * V, g[u]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const Index i = first + u * kExprThreads;
      if (i < n_vec) {
        Pack<Out, V> o;
#pragma unroll
        for (int k = 0; k < V; ++k) o.v[k] = G::template value<V>(p, f, g[u], k);
        expr_store_vec(out + i * V, o);
      }
    }
  }
}

/// kTail: n % V may be nonzero (the plan's KernelSpec::tail); without it, n % V must be 0.
template <class G, int V, int U, bool kTail>
__device__ __forceinline__ void expr_flat_body(const typename G::Params& p) {
  typename G::Fixed f;
  G::template load_fixed<false>(p, f);
  // One loop: a kernel that held both (U units, or 1 where p.h.units said so) compiled the
  // expression's copies of both, of which a launch runs one; a small matrix now has the U = 1
  // kernel of its own (KernelSpec::vector).
  expr_flat_units<G, V, U>(p, f);
  // The tail: n % V < V <= kExprThreads elements, at most one a thread of block 0. An `if`,
  // not a loop: the compilers unrolled the loop (which never iterates twice) into a dozen more
  // copies of the expression, a quarter of the compile time of a first evaluation. Only in
  // the kernels of counts that have a tail: another copy, a tenth of that time.
  if constexpr (kTail) {
    static_assert(V <= kExprThreads, "expr_flat_body: the tail is one element a thread");
    const Index n = p.h.n;
    const Index e = n / V * V + threadIdx.x;
    if (blockIdx.x == 0 && e < n) static_cast<typename G::Out*>(p.h.out)[e] = G::template at<false>(p, f, 0, e);
  }
}

/// 2D vector path: strided or broadcast operands whose rows all start aligned. A block is
/// blockDim.x x blockDim.y threads: y walks rows, x walks units of V columns of a row (J per
/// thread, blockDim.x apart); every row start of the output and of the leaves that are read
/// along a row is aligned to their vectors, so whole units move as vectors. A partial unit at
/// a row's end goes element by element.
template <class G, int V, int J>
__device__ __forceinline__ void expr_2d_body(const typename G::Params& p) {
  using Out = typename G::Out;
  typename G::Fixed f;
  G::template load_fixed<false>(p, f);
  const Index rows = p.h.rows, cols = p.h.cols;
  const Index nu = (cols + V - 1) / V;  // units per row, the last maybe partial
  const Index tx = blockDim.x, ty = blockDim.y;
  for (Index r = static_cast<Index>(blockIdx.y) * ty + threadIdx.y; r < rows;
       r += static_cast<Index>(gridDim.y) * ty) {
    Out* out_row = static_cast<Out*>(p.h.out) + r * p.h.ld_out;
    for (Index base = static_cast<Index>(blockIdx.x) * tx * J + threadIdx.x; base < nu;
         base += static_cast<Index>(gridDim.x) * tx * J) {
      typename G::template Regs<V> g[J];
#pragma unroll
      for (int j = 0; j < J; ++j) {
        const Index c = (base + j * tx) * V;
        if (c + V <= cols) G::template load_row<V, true, false>(p, r, c, g[j]);
      }
#pragma unroll
      for (int j = 0; j < J; ++j) {
        const Index c = (base + j * tx) * V;
        if (c + V <= cols) {
          Pack<Out, V> o;
#pragma unroll
          for (int k = 0; k < V; ++k) o.v[k] = G::template value<V>(p, f, g[j], k);
          expr_store_vec(out_row + c, o);
        } else {
          // Fewer than V elements, at one thread a row: not unrolled, since unrolled this loop
          // was most of the kernel's code (and of its compile time), for a row's last unit.
#pragma unroll 1
          for (Index e = c; e < cols; ++e) out_row[e] = G::template at<false>(p, f, r, e);
        }
      }
    }
  }
}

// ------------------------------------------------------------------ the slot path
//
// The 2D path for rows that do not all start aligned (odd strides, odd column offsets, every
// leaf at its own offset): out(r, c) = expression over a rows x cols window.
//
// Each output row is cut at the output's B-byte boundaries (B = V sizeof(Out)) into slots
// of V columns: slot j of row r is columns [j V - g, j V - g + V), g the columns before the
// row's first boundary; the first and last slots may be partial. Units (row, slot) run in
// row-major order over the grid; a warp takes U runs of 31 consecutive units (lane l the
// l-th), and a full slot is one aligned vector store.
//
// A leaf read along a row gives a slot N = V elements of T, b = N sizeof(T) bytes. A uint8_t
// leaf is read in the aligned b-byte chunks of memory (b = 16, or 4 or 2 beside wider types):
// at the output's relative alignment (rel = 0: the slot's first element starts a chunk) one
// chunk a slot; rel bytes further on, the slot spans two chunks, lo and hi; hi is the next
// unit's lo, which the next lane loaded (lane 31 takes no unit: it loads lane 30's hi), so it
// comes by warp shuffle, every leaf byte is loaded once, and selects and funnel shifts cut the
// slot's b bytes out of lo:hi. A leaf of 4- or 8-byte elements is read one vector a slot where
// its slot is aligned, else element by element (2 or 4 loads a slot, no shuffles: as fast,
// with fewer instructions). Leaves need not share an alignment with the output or with one
// another, and each row has its own.
//
// No load touches a byte outside a leaf's row [row start, row start + cols): pitched padding,
// neighbouring windows and memory past an allocation are never read. What the vectors cannot
// do at a row's ends (a partial slot, or a full one whose uint8_t chunks would pass the row's
// ends) goes element by element, shared out one element a lane over the warp
// (expr_slot_elements), so a row's ends cost a warp a trip or two to memory, not one per
// element. In place (the output is the very window of a leaf, so that leaf is at rel = 0 in
// every row): each element is read and written by one lane, its loads before its store, and
// at rel = 0 a lane loads only its own slot.

/// The aligned chunk a uint8_t leaf's share of a slot is read in: B bytes (2, 4 or 16).
template <int B> struct ExprChunk;
template <> struct ExprChunk<2> { using type = unsigned short; };
template <> struct ExprChunk<4> { using type = unsigned; };
template <> struct ExprChunk<16> { using type = uint4; };

/// The next lane's value (a lane's own on lane 31). Every lane of the warp calls it.
__device__ __forceinline__ unsigned expr_shfl_next(unsigned v) { return __shfl_down_sync(0xffffffffu, v, 1); }
__device__ __forceinline__ unsigned short expr_shfl_next(unsigned short v) {
  return static_cast<unsigned short>(__shfl_down_sync(0xffffffffu, static_cast<unsigned>(v), 1));
}
__device__ __forceinline__ uint4 expr_shfl_next(const uint4& v) {
  return uint4{expr_shfl_next(v.x), expr_shfl_next(v.y), expr_shfl_next(v.z), expr_shfl_next(v.w)};
}

/// Bytes [rel, rel + B) of the 2 B bytes lo:hi (lo first, little-endian), rel < B. Whole words
/// by selects, not by indexing: a register array indexed at run time would live in local memory.
__device__ __forceinline__ uint4 expr_bytes_from(const uint4& lo, const uint4& hi, unsigned rel) {
  unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
  for (int k = 0; k < 6; ++k) w[k] = (rel & 8) ? w[k + 2] : w[k];
#pragma unroll
  for (int k = 0; k < 5; ++k) w[k] = (rel & 4) ? w[k + 1] : w[k];
  const unsigned bits = (rel & 3) * 8;
#pragma unroll
  for (int k = 0; k < 4; ++k) w[k] = __funnelshift_r(w[k], w[k + 1], bits);
  return uint4{w[0], w[1], w[2], w[3]};
}
__device__ __forceinline__ unsigned expr_bytes_from(unsigned lo, unsigned hi, unsigned rel) {
  return __funnelshift_r(lo, hi, rel * 8);
}
__device__ __forceinline__ unsigned short expr_bytes_from(unsigned short lo, unsigned short hi, unsigned rel) {
  return static_cast<unsigned short>((static_cast<unsigned>(lo) | static_cast<unsigned>(hi) << 16) >> (rel * 8));
}

/// One leaf's part of a unit of the slot path (a leaf read along a row): where its N elements
/// lie, and what this lane loaded. uint8_t leaves by chunks (kChunks), wider ones by vector or
/// element by element.
template <class T, int N>
struct ExprSlotLeaf {
  static constexpr int kBytes = static_cast<int>(sizeof(T)) * N;
  static constexpr bool kChunks = sizeof(T) == 1;
  using Chunk = typename ExprChunk<kChunks ? kBytes : 16>::type;
  static_assert(!kChunks || sizeof(Chunk) == sizeof(Pack<T, N>), "ExprSlotLeaf: a chunk is one Pack");

  const unsigned char* first = nullptr;  // the slot's first element
  unsigned rel = 0;    // its byte within the aligned chunk (of kBytes) that holds it
  bool lo_in = false;  // kChunks: that chunk, lo, lies within the row
  Chunk bits{};        // kChunks: the chunk lo, where this lane loaded it
  Pack<T, N> elems{};  // else: the slot's elements, where this lane loaded them

  /// Element c0 of row `x` is the slot's first (c0 < 0: a first slot that starts before the
  /// row); `before` is min(c0, N) and `left` min(cols - c0, 2 N), so that the tests stay in 32
  /// bits. Whether every chunk the slot needs (lo, and lo + kBytes where rel != 0) lies within
  /// the row (always, but for chunks: a full slot's elements do).
  __device__ __forceinline__ bool locate(const T* x, Index c0, int before, int left) {
    first = reinterpret_cast<const unsigned char*>(x + c0);
    rel = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(first)) % kBytes;
    if constexpr (!kChunks) {
      return true;
    } else {
      // lo >= row start: c0 >= rel; lo + kBytes (+ kBytes) <= row end: cols - c0 >= kBytes
      // - rel (+ kBytes). Bitwise & and |: predicates, not branches.
      const int rel_i = static_cast<int>(rel), after = left + rel_i;
      lo_in = (before >= rel_i) & (after >= kBytes);
      return lo_in & ((rel == 0) | (after >= 2 * kBytes));
    }
  }

  /// Issues this lane's loads. Chunks: at rel = 0, its own chunk where the slot takes the
  /// vector path (`vec`), and nothing else (in place, another lane may be writing the rest);
  /// at rel != 0, the chunk lo wherever it lies within the row (unit `valid`), which is also
  /// lane - 1's hi. Else the slot's elements where it takes the vector path.
  __device__ __forceinline__ void load(bool valid, bool vec) {
    if constexpr (kChunks) {
      if (((rel == 0) & vec) | ((rel != 0) & valid & lo_in)) {
        const unsigned char* lo = first - rel;
        DEVMAT_EXPR_CHECK_READ(lo, kBytes);
        bits = *reinterpret_cast<const Chunk*>(lo);
      }
    } else if (vec) {
      const T* x = reinterpret_cast<const T*>(first);
      if (rel == 0) elems = expr_load_vec<T, N, false>(x);
      else elems = expr_load_elems<T, N, false>(x);
    }
  }

  /// The slot's N elements, where this lane's slot takes the vector path (for chunks, its hi,
  /// lane + 1's lo, then lies within the row). Every lane of the warp calls it; a warp whose
  /// lanes all have rel = 0 skips the shuffles.
  __device__ __forceinline__ Pack<T, N> vector() const {
    if constexpr (kChunks) {
      Chunk w = bits;
      if (__any_sync(0xffffffffu, rel != 0)) w = expr_bytes_from(bits, expr_shfl_next(bits), rel);
      Pack<T, N> v;
      std::memcpy(&v, &w, sizeof(v));
      return v;
    } else {
      return elems;
    }
  }
};

/// The element path of the slot path: out(r, c) for the `n` columns from `first` of row `row`
/// of each lane (n = 0 where the lane has none), one element a lane, 32 at a time: a warp's
/// elements at the rows' ends cost it a trip or two to memory, not one per element. Every
/// lane of the warp calls it.
template <class G>
__device__ __forceinline__ void expr_slot_elements(const typename G::Params& p, const typename G::Fixed& f, Index row,
                                                   Index first, int n) {
  using Out = typename G::Out;
  const int lane = static_cast<int>(threadIdx.x % 32);
  int incl = n;  // n summed over lanes 0..lane
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int t = __shfl_up_sync(0xffffffffu, incl, d);
    if (lane >= d) incl += t;
  }
  const int total = __shfl_sync(0xffffffffu, incl, 31);
  const Index col_base = first - (incl - n);  // element e of the warp's run, if this lane's, is column col_base + e
  for (int e0 = 0; e0 < total; e0 += 32) {
    const int e = e0 + lane;
    int owner = 0;  // the first lane whose running sum passes e
#pragma unroll
    for (int step = 16; step > 0; step /= 2)
      if (__shfl_sync(0xffffffffu, incl, owner + step - 1) <= e) owner += step;
    const Index r = __shfl_sync(0xffffffffu, row, owner);
    const Index c = __shfl_sync(0xffffffffu, col_base, owner) + e;
    if (e < total) static_cast<Out*>(p.h.out)[r * p.h.ld_out + c] = G::template at<false>(p, f, r, c);
  }
}

/// The slot path (see above): p.h.chunk slots per row, units (row, slot) in row-major order;
/// a warp takes U runs of kExprSlotLanes units (all their loads issued before any is used),
/// the grid striding over the rest. The element path at the rows' ends runs while the vector
/// path's loads are in flight.
template <class G, int V, int U>
__device__ __forceinline__ void expr_slots_body(const typename G::Params& p) {
  using Out = typename G::Out;
  static_assert(kExprThreads % 32 == 0 && kExprSlotLanes == 31, "expr_slots_body: whole warps, 31 units a run");
  constexpr int kOutBytes = static_cast<int>(sizeof(Out)) * V;
  typename G::Fixed f;
  G::template load_fixed<false>(p, f);
  Out* const out = static_cast<Out*>(p.h.out);
  const Index rows = p.h.rows, cols = p.h.cols, slots = p.h.chunk;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const bool takes_unit = lane < kExprSlotLanes;  // lane 31 loads for lane 30
  // A run of kExprSlotLanes units on: run_rows rows and run_slots slots (a division only for
  // rows of fewer slots).
  int run_rows = 0, run_slots = kExprSlotLanes;
  if (slots <= kExprSlotLanes) {
    run_rows = kExprSlotLanes / static_cast<int>(slots);
    run_slots = kExprSlotLanes % static_cast<int>(slots);
  }
  const Index warp = (static_cast<Index>(blockIdx.x) * kExprThreads + threadIdx.x) / 32;
  const Index step = static_cast<Index>(gridDim.x) * (kExprThreads / 32) * (kExprSlotLanes * U);
  for (Index warp_first = warp * (kExprSlotLanes * U); warp_first < rows * slots; warp_first += step) {
    Index r, j;  // this lane's unit of the first run: slot j of row r (lane 31: lane 30's + 1)
    expr_split(warp_first + lane, slots, r, j);
    Index row[U], c0[U];
    int k0[U], n_elem[U];
    bool vec[U];
    typename G::template Slot<V> s[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (u > 0) {
        j += run_slots;
        r += run_rows;
        if (j >= slots) {
          j -= slots;
          ++r;
        }
      }
      const bool valid = r < rows;  // lane 31 too: its load feeds lane 30
      row[u] = valid ? r : 0;       // idle lanes look at row 0 and load nothing
      const unsigned o_off =
          static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(out + row[u] * p.h.ld_out)) % kOutBytes;
      c0[u] = j * V - static_cast<Index>(o_off / sizeof(Out));  // < 0: the row's first slot, partial
      const int before = static_cast<int>(c0[u] < V ? c0[u] : V);  // min(c0, V)
      const Index after = cols - c0[u];
      const int left = static_cast<int>(after < 2 * V ? after : 2 * V);  // min(cols - c0, 2 V)
      const bool mine = valid & takes_unit;
      const bool full = (before >= 0) & (left >= V);
      vec[u] = G::template slot_load<V>(p, row[u], c0[u], before, left, valid, mine & full, s[u]);
      // The slot's columns c0 + k, k0[u] <= k < k1, lie within the row.
      k0[u] = before < 0 ? -before : 0;
      const int k1 = left < V ? left : V;
      n_elem[u] = mine & !vec[u] & (k1 > k0[u]) ? k1 - k0[u] : 0;
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (__any_sync(0xffffffffu, n_elem[u] > 0)) expr_slot_elements<G>(p, f, row[u], c0[u] + k0[u], n_elem[u]);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      typename G::template Regs<V> g;
      G::template slot_regs<V>(s[u], g);
      if (vec[u]) {
        Pack<Out, V> o;
#pragma unroll
        for (int k = 0; k < V; ++k) o.v[k] = G::template value<V>(p, f, g, k);
        expr_store_vec(out + row[u] * p.h.ld_out + c0[u], o);
      }
    }
  }
}

// ================================================================== whole reductions
/// The values of unit i (elements [i V, i V + V) in row-major order) of a 2D expression. kVec:
/// cols % V == 0 and the leaves' rows are aligned, so a unit is one aligned vector of a row.
template <class G, int V, bool kVec>
__device__ __forceinline__ void expr_unit_2d(const typename G::Params& p, const typename G::Fixed& f, Index i,
                                             Pack<typename G::Out, V>& o) {
  Index r, c;
  expr_split(i * V, p.h.cols, r, c);
  if (kVec || c + V <= p.h.cols) {
    typename G::template Regs<V> g;
    G::template load_row<V, kVec, true>(p, r, c, g);
#pragma unroll
    for (int k = 0; k < V; ++k) o.v[k] = G::template value<V>(p, f, g, k);
  } else {  // the unit straddles rows
#pragma unroll
    for (int k = 0; k < V; ++k) {
      o.v[k] = G::template at<true>(p, f, r, c);
      if (++c == p.h.cols) {
        c = 0;
        ++r;
      }
    }
  }
}

/// The value at flat index e (row-major).
template <class G, bool kFlat>
__device__ __forceinline__ typename G::Out expr_at_flat(const typename G::Params& p, const typename G::Fixed& f,
                                                        Index e) {
  if constexpr (kFlat) {
    return G::template at<true>(p, f, 0, e);
  } else {
    Index r, c;
    expr_split(e, p.h.cols, r, c);
    return G::template at<true>(p, f, r, c);
  }
}

/// U units starting at unit i, nthreads apart: loads first, then values.
template <class G, int V, int U, bool kFlat, bool kVec>
__device__ __forceinline__ void expr_units(const typename G::Params& p, const typename G::Fixed& f, Index i,
                                           Index nthreads, Pack<typename G::Out, V> (&v)[U]) {
  if constexpr (kFlat) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      typename G::template Regs<V> g;
      G::template load_row<V, true, true>(p, 0, (i + u * nthreads) * V, g);
#pragma unroll
      for (int k = 0; k < V; ++k) v[u].v[k] = G::template value<V>(p, f, g, k);
    }
  } else {
#pragma unroll
    for (int u = 0; u < U; ++u) expr_unit_2d<G, V, kVec>(p, f, i + u * nthreads, v[u]);
  }
}

/// Sum, min or max (reducer R) of the expression's n values, in exactly the order of
/// reduce_kernel<R, 256, 4, ...> (kernels/reduce.cuh) over the expression materialised into a
/// dense, aligned rows x cols matrix: the same per-thread sequence (reduce_range with no
/// unaligned head: U units of V = kVec16<Out> values, then single units, then single elements),
/// the same block combination. So with the same grid, every block's partial is bitwise the
/// unfused one. Writes the block's partial (kExprPartials), or with one block the result:
/// the sum cast to SumOut or min/max (kExprFinal), or sum / count (kExprMean).
template <class G, class R, class SumOut, bool kFlat, bool kVec>
__device__ __forceinline__ void expr_reduce_body(const typename G::Params& p) {
  using Out = typename G::Out;
  using Acc = typename R::Acc;
  constexpr int V = kVec16<Out>;
  constexpr int U = kExprReduceUnroll;
  typename G::Fixed f;
  G::template load_fixed<true>(p, f);
  typename R::State s;
  const Index t = static_cast<Index>(blockIdx.x) * kExprThreads + threadIdx.x;
  const Index nthreads = static_cast<Index>(gridDim.x) * kExprThreads;
  const Index n = p.h.n, n_vec = n / V;
  Index i = t;
  for (; i + (U - 1) * nthreads < n_vec; i += U * nthreads) {
    Pack<Out, V> v[U];
    expr_units<G, V, U, kFlat, kVec>(p, f, i, nthreads, v);
    R::add_packs(s, v);
  }
  for (; i < n_vec; i += nthreads) {
    Pack<Out, V> v[1];
    expr_units<G, V, 1, kFlat, kVec>(p, f, i, nthreads, v);
    R::add_packs(s, v);
  }
  const Index tail = n_vec * V;
  for (Index e = t; e < n - tail; e += nthreads) R::add(s, expr_at_flat<G, kFlat>(p, f, tail + e));
  const Acc v = block_reduce<R, kExprThreads>(R::finish(s));
  if (threadIdx.x == 0) {
    if (p.h.mode == kExprPartials) static_cast<Acc*>(p.h.out)[blockIdx.x] = v;
    else if (p.h.mode == kExprMean) *static_cast<double*>(p.h.out) = static_cast<double>(v) / p.h.count;
    else *static_cast<SumOut*>(p.h.out) = static_cast<SumOut>(v);
  }
}

// ================================================================== row and column sums
/// Combines v over each aligned group of `width` lanes (a power of two <= 32, the same for the
/// whole warp); the group's first lane holds the result.
template <class R>
__device__ __forceinline__ typename R::Acc expr_team_reduce(typename R::Acc v, int width) {
  for (int offset = width / 2; offset > 0; offset /= 2) v = R::combine(v, shfl_down(v, offset, width));
  return v;
}

/// out[r] = sum of row r in sum_acc_t<Out> (double for float; doubles compensated), written as
/// SumOut. Teams of p.h.team lanes take a row each; with team 0, a block takes chunk
/// blockIdx.x % chunks of row blockIdx.x / chunks and writes the result (one chunk) or the
/// chunk's accumulator to out[blockIdx.x], which a second pass adds up in order.
template <class G, class SumOut>
__device__ __forceinline__ void expr_row_sums_body(const typename G::Params& p) {
  using R = SumReducer<typename G::Out>;
  using Acc = typename R::Acc;
  typename G::Fixed f;
  G::template load_fixed<true>(p, f);
  const Index rows = p.h.rows, cols = p.h.cols;
  typename R::State s;
  if (p.h.team > 0) {
    const int lanes = p.h.team;
    const Index row = (static_cast<Index>(blockIdx.x) * kExprThreads + threadIdx.x) / lanes;
    const int lane = static_cast<int>(threadIdx.x % lanes);
    if (row < rows)
#pragma unroll 4
      for (Index c = lane; c < cols; c += lanes) R::add(s, G::template at<true>(p, f, row, c));
    const Acc v = expr_team_reduce<R>(R::finish(s), lanes);  // every lane takes part
    if (row < rows && lane == 0) static_cast<SumOut*>(p.h.out)[row] = static_cast<SumOut>(v);
  } else {
    const Index row = blockIdx.x / p.h.chunks, chunk = blockIdx.x % p.h.chunks;
    const Index c0 = chunk * p.h.chunk;
    const Index c1 = c0 + p.h.chunk < cols ? c0 + p.h.chunk : cols;
#pragma unroll 4
    for (Index c = c0 + threadIdx.x; c < c1; c += kExprThreads) R::add(s, G::template at<true>(p, f, row, c));
    const Acc v = block_reduce<R, kExprThreads>(R::finish(s));
    if (threadIdx.x == 0) {
      if (p.h.chunks == 1) static_cast<SumOut*>(p.h.out)[row] = static_cast<SumOut>(v);
      else static_cast<Acc*>(p.h.out)[blockIdx.x] = v;
    }
  }
}

/// out[c] = sum of column c: a block is 32 columns by 8 row lanes over the rows of chunk
/// blockIdx.y (p.h.chunk rows each); the 8 lanes' sums combine in order and go to out[c] (one
/// chunk) or to out[chunk * cols + c], which a second pass adds up in order.
template <class G, class SumOut>
__device__ __forceinline__ void expr_col_sums_body(const typename G::Params& p) {
  using R = SumReducer<typename G::Out>;
  using Acc = typename R::Acc;
  constexpr int kCols = 32, kLanes = kExprThreads / kCols;
  __shared__ Acc sum_smem[kLanes][kCols];  // (row lane, column)
  typename G::Fixed f;
  G::template load_fixed<true>(p, f);
  const Index rows = p.h.rows, cols = p.h.cols;
  const int tx = static_cast<int>(threadIdx.x % kCols), ty = static_cast<int>(threadIdx.x / kCols);
  const Index c = static_cast<Index>(blockIdx.x) * kCols + tx;
  const Index r0 = static_cast<Index>(blockIdx.y) * p.h.chunk;
  const Index r1 = r0 + p.h.chunk < rows ? r0 + p.h.chunk : rows;
  typename R::State s;
  if (c < cols)
#pragma unroll 4
    for (Index r = r0 + ty; r < r1; r += kLanes) R::add(s, G::template at<true>(p, f, r, c));
  sum_smem[ty][tx] = R::finish(s);
  __syncthreads();
  if (ty == 0 && c < cols) {
    Acc v = sum_smem[0][tx];
#pragma unroll
    for (int y = 1; y < kLanes; ++y) v = R::combine(v, sum_smem[y][tx]);
    if (p.h.chunks == 1) static_cast<SumOut*>(p.h.out)[c] = static_cast<SumOut>(v);
    else static_cast<Acc*>(p.h.out)[blockIdx.y * cols + c] = v;
  }
}

// ================================================================== arg min / arg max
/// The first extreme value and its flat index. NaN is more extreme than any number (the first
/// NaN wins); equal values go to the smaller index. That is a total order on (value, index),
/// so the result does not depend on the order of combination.
template <class T, bool kMax>
struct ArgBest {
  T v;
  Index i;

  __device__ __forceinline__ static ArgBest identity() {
    ArgBest b;
    if constexpr (std::is_floating_point_v<T>)
      b.v = kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    else
      b.v = kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    b.i = std::numeric_limits<Index>::max();
    return b;
  }
  /// Whether (bv, bi) comes before (v, i).
  __device__ __forceinline__ bool beaten_by(T bv, Index bi) const {
    if constexpr (std::is_floating_point_v<T>) {
      const bool nan = v != v, b_nan = bv != bv;
      if (nan || b_nan) return b_nan && (!nan || bi < i);
    }
    if (kMax ? bv > v : bv < v) return true;
    return bv == v && bi < i;
  }
  __device__ __forceinline__ void take(T bv, Index bi) {
    if (beaten_by(bv, bi)) {
      v = bv;
      i = bi;
    }
  }
};

/// Combines the block's (value, index) pairs; thread 0 holds the result.
template <class T, bool kMax>
__device__ __forceinline__ ArgBest<T, kMax> expr_arg_block(ArgBest<T, kMax> b) {
  constexpr int kWarps = kExprThreads / 32;
  __shared__ T val_smem[kWarps];
  __shared__ Index idx_smem[kWarps];
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    const T ov = shfl_down(b.v, offset);
    const Index oi = shfl_down(b.i, offset);
    b.take(ov, oi);
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) {
    val_smem[warp] = b.v;
    idx_smem[warp] = b.i;
  }
  __syncthreads();
  if (warp == 0) {
    b = ArgBest<T, kMax>::identity();
    if (lane < kWarps) {
      b.v = val_smem[lane];
      b.i = idx_smem[lane];
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) {
      const T ov = shfl_down(b.v, offset);
      const Index oi = shfl_down(b.i, offset);
      b.take(ov, oi);
    }
  }
  return b;
}

/// Pass 1 of arg min / arg max: the grid strides over the expression's units as the sum does;
/// block b writes its best value and index to out[b] and out2[b], or with one block
/// (kExprFinal) the index itself, as one int64, to out.
template <class G, bool kMax, bool kFlat, bool kVec>
__device__ __forceinline__ void expr_arg_body(const typename G::Params& p) {
  using Out = typename G::Out;
  constexpr int V = kVec16<Out>;
  constexpr int U = kExprReduceUnroll;
  typename G::Fixed f;
  G::template load_fixed<true>(p, f);
  ArgBest<Out, kMax> best = ArgBest<Out, kMax>::identity();
  const Index t = static_cast<Index>(blockIdx.x) * kExprThreads + threadIdx.x;
  const Index nthreads = static_cast<Index>(gridDim.x) * kExprThreads;
  const Index n = p.h.n, n_vec = n / V;
  Index i = t;
  for (; i + (U - 1) * nthreads < n_vec; i += U * nthreads) {
    Pack<Out, V> v[U];
    expr_units<G, V, U, kFlat, kVec>(p, f, i, nthreads, v);
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int k = 0; k < V; ++k) best.take(v[u].v[k], (i + u * nthreads) * V + k);
  }
  for (; i < n_vec; i += nthreads) {
    Pack<Out, V> v[1];
    expr_units<G, V, 1, kFlat, kVec>(p, f, i, nthreads, v);
#pragma unroll
    for (int k = 0; k < V; ++k) best.take(v[0].v[k], i * V + k);
  }
  const Index tail = n_vec * V;
  for (Index e = t; e < n - tail; e += nthreads) best.take(expr_at_flat<G, kFlat>(p, f, tail + e), tail + e);
  best = expr_arg_block<Out, kMax>(best);
  if (threadIdx.x == 0) {
    if (p.h.mode == kExprFinal) {
      *static_cast<long long*>(p.h.out) = static_cast<long long>(best.i);
    } else {
      static_cast<Out*>(p.h.out)[blockIdx.x] = best.v;
      static_cast<Index*>(p.h.out2)[blockIdx.x] = best.i;
    }
  }
}

/// Pass 2 of arg min / arg max: one block combines `count` partials; writes the index.
template <class T, bool kMax>
__device__ __forceinline__ void expr_arg_final_body(const T* values, const Index* indices, Index count,
                                                    long long* out) {
  ArgBest<T, kMax> best = ArgBest<T, kMax>::identity();
  for (Index k = threadIdx.x; k < count; k += kExprThreads) best.take(values[k], indices[k]);
  best = expr_arg_block<T, kMax>(best);
  if (threadIdx.x == 0) *out = static_cast<long long>(best.i);
}

}  // namespace devmat::detail

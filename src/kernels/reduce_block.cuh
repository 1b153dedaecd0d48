// Reduction building blocks: reducers (sum, min, max), 16-byte loads, warp- and block-level
// combines in a fixed order, and one thread's share of a contiguous range. Device code only.
//
// Every combination order here depends only on the launch shape (threads, grid, unroll), never
// on timing: no atomics, so the same input gives bitwise the same result on every run.
#pragma once

#include "byte_lanes.cuh"
#include "common.cuh"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace devmat::detail {

// ------------------------------------------------------------------ types
/// What a thread accumulates a sum of T in: double for floating point (float sums in double,
/// since FP64 is far faster than memory needs, and are rounded once, at the end), 64-bit
/// integers of T's signedness otherwise, which no matrix in memory can overflow.
template <class T>
using sum_acc_t = std::conditional_t<std::is_floating_point_v<T>, double,
                                     std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>>;

// ------------------------------------------------------------------ loads
/// Loads an aligned Pack of 1, 2, 4, 8 or 16 bytes through the read-only data path.
template <class T, int V>
__device__ __forceinline__ Pack<T, V> load_pack(const Pack<T, V>* p) {
  constexpr std::size_t kBytes = sizeof(Pack<T, V>);
  Pack<T, V> r;
  if constexpr (kBytes == 16) {
    const uint4 w = __ldg(reinterpret_cast<const uint4*>(p));
    std::memcpy(&r, &w, 16);
  } else if constexpr (kBytes == 8) {
    const uint2 w = __ldg(reinterpret_cast<const uint2*>(p));
    std::memcpy(&r, &w, 8);
  } else if constexpr (kBytes == 4) {
    const unsigned w = __ldg(reinterpret_cast<const unsigned*>(p));
    std::memcpy(&r, &w, 4);
  } else if constexpr (kBytes == 2) {
    const unsigned short w = __ldg(reinterpret_cast<const unsigned short*>(p));
    std::memcpy(&r, &w, 2);
  } else {
    static_assert(kBytes == 1, "load_pack: a Pack is 1, 2, 4, 8 or 16 bytes");
    const unsigned char w = __ldg(reinterpret_cast<const unsigned char*>(p));
    std::memcpy(&r, &w, 1);
  }
  return r;
}

template <class T>
__device__ __forceinline__ T load_one(const T* p) {
  return load_pack(reinterpret_cast<const Pack<T, 1>*>(p)).v[0];
}

/// Chunk c of the 16-byte-aligned chunks that cover the `len` elements starting `head`
/// elements past `base` (base aligned to 16 bytes, head < kVec16<T>): a whole chunk as one
/// vector; a partial one (the first, the last, or past the end) element by element, reading
/// only elements of [base + head, base + head + len), with `pad` in the other lanes. Nothing
/// outside the range is read, so the 16 bytes around a window's edge need not be allocated.
template <class T>
__device__ __forceinline__ Pack<T, kVec16<T>> load_chunk(const T* base, Index head, Index len, Index c, T pad) {
  constexpr int V = kVec16<T>;
  const Index e0 = c * V - head;  // the chunk's first lane, relative to base + head
  if (e0 >= 0 && e0 + V <= len) return load_pack(reinterpret_cast<const Pack<T, V>*>(base) + c);
  Pack<T, V> r;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const Index e = e0 + k;
    r.v[k] = e >= 0 && e < len ? load_one(base + c * V + k) : pad;
  }
  return r;
}

/// How many elements p lies past the 16-byte boundary below it.
template <class T>
__device__ __forceinline__ Index head_of(const T* p) {
  return static_cast<Index>(reinterpret_cast<std::uintptr_t>(p) % 16 / sizeof(T));
}

/// The k-th 32-bit word of a Pack (for byte-SIMD intrinsics on uint8_t).
template <class T, int V>
__device__ __forceinline__ unsigned word_of(const Pack<T, V>& p, int k) {
  unsigned w;
  std::memcpy(&w, reinterpret_cast<const unsigned char*>(&p) + 4 * k, 4);
  return w;
}

/// Sums N values in a balanced tree (N a compile-time constant): depth log2(N), so the adds
/// of one thread overlap, and the rounding of floats stays pairwise.
template <int N, class A, class Op>
__device__ __forceinline__ A tree_combine(A (&v)[N], Op op) {
#pragma unroll
  for (int w = 1; w < N; w *= 2)
#pragma unroll
    for (int i = 0; i + w < N; i += 2 * w) v[i] = op(v[i], v[i + w]);
  return v[0];
}

// ------------------------------------------------------------------ reducers
/// Sum: accumulates in sum_acc_t<T>. Doubles use Neumaier's compensated summation inside a
/// thread (its error does not grow with the thousands of values a thread adds), floats are
/// summed in double; both then combine pairwise across threads and blocks. Infinities and NaN
/// follow IEEE: once the running sum is not finite, the correction term (inf - inf = NaN) is
/// meaningless and is left out.
template <class T>
struct SumReducer {
  using Value = T;
  using Acc = sum_acc_t<T>;
  static constexpr bool kCompensated = std::is_same_v<T, double>;

  struct State {
    Acc sum = Acc(0);
    Acc comp = Acc(0);  // Neumaier's running correction (doubles only)
  };

  __host__ __device__ static constexpr Acc identity() { return Acc(0); }
  /// The value of T that fills the masked lanes of a partial vector (adds nothing).
  __host__ __device__ static constexpr T pad() { return T(0); }
  __device__ static Acc combine(Acc a, Acc b) { return a + b; }

  __device__ static void add(State& s, T x) {
    if constexpr (kCompensated) {
      const double t = s.sum + x;
      s.comp += fabs(s.sum) >= fabs(x) ? (s.sum - t) + x : (x - t) + s.sum;
      s.sum = t;
    } else {
      s.sum += static_cast<Acc>(x);
    }
  }

  template <int U, int V>
  __device__ static void add_packs(State& s, const Pack<T, V> (&p)[U]) {
    if constexpr (kCompensated) {
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < V; ++k) add(s, p[u].v[k]);
    } else if constexpr (std::is_same_v<T, std::uint8_t> && V % 4 == 0) {
      // Four bytes per instruction; U * V * 255 fits a 32-bit word for any unroll we use.
      static_assert(U * V <= (1 << 24), "add_packs: 32-bit byte sum could overflow");
      unsigned t = 0;
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < V / 4; ++k) t = __dp4a(word_of(p[u], k), 0x01010101u, t);
      s.sum += t;
    } else {
      Acc v[U * V];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < V; ++k) v[u * V + k] = static_cast<Acc>(p[u].v[k]);
      s.sum += tree_combine(v, [](Acc a, Acc b) { return a + b; });
    }
  }

  __device__ static Acc finish(const State& s) {
    if constexpr (kCompensated) return isfinite(s.sum) ? s.sum + s.comp : s.sum;
    else return s.sum;
  }
};

/// Min or max in T. NaN propagates: a NaN anywhere makes the result NaN (as numpy's min/max).
template <class T, bool kMax>
struct MinMaxReducer {
  using Value = T;
  using Acc = T;

  __host__ __device__ static constexpr T identity() {
    if constexpr (std::is_floating_point_v<T>)
      return kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    else
      return kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  }
  /// The value of T that fills the masked lanes of a partial vector (changes nothing).
  __host__ __device__ static constexpr T pad() { return identity(); }

  // b wins if it is better or NaN; a NaN in a stays (b > NaN and b < NaN are false).
  __device__ static T combine(T a, T b) {
    bool b_wins = kMax ? b > a : b < a;
    if constexpr (std::is_floating_point_v<T>) b_wins = b_wins || b != b;
    return b_wins ? b : a;
  }

  struct State {
    T v = identity();
  };

  __device__ static void add(State& s, T x) { s.v = combine(s.v, x); }

  template <int U, int V>
  __device__ static void add_packs(State& s, const Pack<T, V> (&p)[U]) {
    if constexpr (std::is_same_v<T, std::uint8_t> && V % 4 == 0) {
      // Four byte lanes per instruction, then the four lanes of the last word.
      constexpr int kWords = U * V / 4;
      unsigned w[kWords];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < V / 4; ++k) w[u * (V / 4) + k] = word_of(p[u], k);
      const unsigned m = tree_combine(w, [](unsigned a, unsigned b) { return minmax_u8x4<kMax>(a, b); });
#pragma unroll
      for (int k = 0; k < 4; ++k) add(s, static_cast<T>((m >> (8 * k)) & 0xFFu));
    } else {
      T v[U * V];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < V; ++k) v[u * V + k] = p[u].v[k];
      add(s, tree_combine(v, [](T a, T b) { return combine(a, b); }));
    }
  }

  __device__ static T finish(const State& s) { return s.v; }
};

// ------------------------------------------------------------------ final transforms
/// What the last step writes: the accumulator cast to the result type ...
template <class A, class O>
struct CastTo {
  using Out = O;
  __device__ O operator()(A a) const { return static_cast<O>(a); }
};

/// ... or the mean, in double.
template <class A>
struct MeanOf {
  using Out = double;
  double n;
  __device__ double operator()(A a) const { return static_cast<double>(a) / n; }
};

// ------------------------------------------------------------------ warp and block
/// __shfl_down_sync for every accumulator type (sub-word types travel as 32-bit words).
template <class A>
__device__ __forceinline__ A shfl_down(A v, int offset, int width = 32) {
  if constexpr (sizeof(A) < 4)
    return static_cast<A>(__shfl_down_sync(0xffffffffu, static_cast<unsigned>(v), offset, width));
  else
    return __shfl_down_sync(0xffffffffu, v, offset, width);
}

/// Combines v over each aligned group of `Width` lanes, in a fixed tree; the group's first
/// lane holds the result. All 32 lanes must call it.
template <class R, int Width = 32>
__device__ __forceinline__ typename R::Acc team_reduce(typename R::Acc v) {
  static_assert(Width >= 1 && Width <= 32 && (Width & (Width - 1)) == 0, "team width: a power of 2 <= 32");
#pragma unroll
  for (int offset = Width / 2; offset > 0; offset /= 2) v = R::combine(v, shfl_down(v, offset, Width));
  return v;
}

/// Combines v over the block (Threads a multiple of 32); thread 0 holds the result. Uses one
/// barrier; call it once per kernel (the shared scratch is not reused safely twice).
template <class R, int Threads>
__device__ __forceinline__ typename R::Acc block_reduce(typename R::Acc v) {
  static_assert(Threads % 32 == 0 && Threads <= 1024, "block_reduce: whole warps, at most 1024 threads");
  constexpr int kWarps = Threads / 32;
  using Acc = typename R::Acc;
  __shared__ Acc warp_smem[kWarps];  // (kWarps) one partial per warp
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = team_reduce<R>(v);
  if constexpr (kWarps == 1) {
    return v;
  } else {
    if (lane == 0) warp_smem[warp] = v;
    __syncthreads();
    if (warp == 0) {
      v = lane < kWarps ? warp_smem[lane] : R::identity();
      v = team_reduce<R>(v);
    }
    return v;
  }
}

// ------------------------------------------------------------------ one thread's share of a range
/// Adds this thread's share of p[0, len) to `s`, for `nthreads` threads cooperating with
/// index `t` (any count, even 1): the unaligned head and the tail element by element, the
/// 16-byte-aligned body as 16-byte vectors, U of them in flight per thread, spaced nthreads
/// apart so that each load instruction of a warp reads contiguous memory. With kBatchedTail
/// the last, partial round also issues all its loads before it adds any (for threads that
/// see only a few vectors: short rows); without it, one at a time (fewer registers, for
/// threads that loop many times). p must be aligned to sizeof(T).
template <class R, int U, bool kBatchedTail, class T>
__device__ __forceinline__ void reduce_range(typename R::State& s, const T* p, Index len, Index t,
                                             Index nthreads) {
  constexpr int V = kVec16<T>;
  using P = Pack<T, V>;
  const auto misalign = static_cast<Index>(reinterpret_cast<std::uintptr_t>(p) % 16);
  Index head = misalign ? (16 - misalign) / static_cast<Index>(sizeof(T)) : 0;
  if (head > len) head = len;
  for (Index e = t; e < head; e += nthreads) R::add(s, load_one(p + e));

  const Index n_vec = (len - head) / V;
  const P* q = reinterpret_cast<const P*>(p + head);
  Index i = t;
  for (; i + (U - 1) * nthreads < n_vec; i += U * nthreads) {
    P v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = load_pack(q + i + u * nthreads);
    R::add_packs(s, v);
  }
  if constexpr (!kBatchedTail) {
    for (; i < n_vec; i += nthreads) {
      P v[1] = {load_pack(q + i)};
      R::add_packs(s, v);
    }
  } else if (i < n_vec) {  // fewer than U vectors left for this thread
    P v[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (i + u * nthreads < n_vec) v[u] = load_pack(q + i + u * nthreads);
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (i + u * nthreads < n_vec) {
        P one[1] = {v[u]};
        R::add_packs(s, one);
      }
  }

  const Index tail = head + n_vec * V;
  for (Index e = t; e < len - tail; e += nthreads) R::add(s, load_one(p + tail + e));
}

}  // namespace devmat::detail

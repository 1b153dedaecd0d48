// Just enough CUDA for g++ to compile and run the expression kernels on the CPU
// (test_expr_emulation.cpp): the qualifiers, the intrinsics the device headers use, and a
// launcher that runs a block's threads as real host threads, so __syncthreads and warp shuffles
// synchronise as on the GPU. Blocks run one after another (a __shared__ array is one static).
// Loads check their alignment: a misaligned vector load aborts, as it would fault on the GPU.
#pragma once
#define DEVMAT_EMULATION 1

#include <cmath>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __grid_constant__
#define __shared__ static
// A kernel's dynamic shared memory (kernels/common.cuh): a static array as large as an SM's.
#define DEVMAT_DYNAMIC_SHARED(type, name) alignas(16) static type name[(227 * 1024) / sizeof(type)]

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }
struct alignas(8) uint2 {
  unsigned x, y;
};
inline uint2 make_uint2(unsigned x, unsigned y) { return uint2{x, y}; }

inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline dim3 blockDim, gridDim;

// ------------------------------------------------------------------ checked reads
// The expression kernels name the bytes of every leaf load (DEVMAT_EXPR_CHECK_READ,
// kernels/expr.cuh); while windows are registered (emu_readable, emu_support.hpp), a read of a
// byte outside every registered window's rows is recorded, as memcheck / initcheck would flag
// it on the GPU.
namespace emu {
struct Readable {
  const unsigned char* base;
  long rows, row_bytes, stride_bytes;
};
inline std::vector<Readable> g_readable;  // set between launches, read by the block's threads
inline bool g_check_reads = false;
inline std::mutex g_bad_read_m;
inline long g_bad_reads = 0;
inline char g_first_bad_read[256];

/// Records a bad read (the first one's text kept for the report).
inline void record_bad_read(const char* what, std::size_t n, const void* p, const char* why) {
  std::lock_guard<std::mutex> lock(g_bad_read_m);
  if (g_bad_reads++ == 0)
    std::snprintf(g_first_bad_read, sizeof(g_first_bad_read), "a %zu-byte %s at %p, %s", n, what, p, why);
}

inline void check_read(const void* p, std::size_t n) {
  if (!g_check_reads) return;
  const auto* b = static_cast<const unsigned char*>(p);
  for (const Readable& w : g_readable) {
    if (b < w.base) continue;
    const long off = static_cast<long>(b - w.base);
    const long r = off / w.stride_bytes, c = off % w.stride_bytes;
    if (r < w.rows && c + static_cast<long>(n) <= w.row_bytes) return;
  }
  record_bad_read("read", n, p, "outside every leaf's rows");
}

/// The storage the operands lie in, [begin, end) each (set by a test with g_readable): a copy
/// must name only bytes inside one, all of them even where it reads fewer (a cp.async of 16
/// bytes from a source of 4: compute-sanitizer's initcheck reads all 16, and past the storage
/// they were never written). Recorded as check_read's.
inline std::vector<std::pair<const unsigned char*, const unsigned char*>> g_storage;

inline void check_named(const void* p, std::size_t n) {
  if (!g_check_reads || g_storage.empty()) return;
  const auto* b = static_cast<const unsigned char*>(p);
  for (const auto& [lo, hi] : g_storage)
    if (b >= lo && b + n <= hi) return;
  record_bad_read("copy", n, p, "naming bytes outside the storage");
}
}  // namespace emu
#define DEVMAT_EXPR_CHECK_READ(p, bytes) emu::check_read((p), (bytes))

namespace emu {
/// Exact reads (emu_guarded.hpp's ExactReads): while g_exact_lo is set, a load that touches the
/// mapping [g_map_lo, g_map_hi) outside the bytes [g_exact_lo, g_exact_hi) aborts, so a word read
/// that runs past a matrix's last byte fails even where it ends on the guard page's boundary.
inline const unsigned char *g_exact_lo = nullptr, *g_exact_hi = nullptr, *g_map_lo = nullptr, *g_map_hi = nullptr;
inline void check_exact(const void* p, std::size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  if (g_exact_lo == nullptr || b + n <= g_map_lo || b >= g_map_hi) return;
  if (b < g_exact_lo || b + n > g_exact_hi) {
    std::fprintf(stderr, "emulation: %zu-byte load at %p outside the buffer's bytes [%p, %p)\n", n, p,
                 static_cast<const void*>(g_exact_lo), static_cast<const void*>(g_exact_hi));
    std::abort();
  }
}
}  // namespace emu

// ------------------------------------------------------------------ intrinsics
template <class T>
T __ldg(const T* p) {
  if (reinterpret_cast<std::uintptr_t>(p) % alignof(T) != 0) {
    std::fprintf(stderr, "emulation: misaligned %zu-byte load at %p\n", sizeof(T), static_cast<const void*>(p));
    std::abort();
  }
  emu::check_exact(p, sizeof(T));
  return *p;
}
/// The cache-streaming load (ld.global.cs): on the host, __ldg's checked read.
template <class T>
T __ldcs(const T* p) {
  return __ldg(p);
}
inline float __uint_as_float(unsigned v) {
  float f;
  std::memcpy(&f, &v, sizeof f);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned v;
  std::memcpy(&v, &f, sizeof v);
  return v;
}
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __dsqrt_rn(double a) { return std::sqrt(a); }
inline float rsqrtf(float a) { return 1.0f / std::sqrt(a); }
inline double rsqrt(double a) { return 1.0 / std::sqrt(a); }
using std::isfinite;

inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
  for (int k = 0; k < 4; ++k) c += ((a >> (8 * k)) & 0xFFu) * ((b >> (8 * k)) & 0xFFu);
  return c;
}
/// The lanes of kBits bits of a and b, lane by lane f(lane of a, lane of b) (unsigned).
template <int kBits, class F>
inline unsigned emu_lanes(unsigned a, unsigned b, F f) {
  constexpr unsigned kMask = (1u << kBits) - 1u;
  unsigned r = 0;
  for (int k = 0; k < 32 / kBits; ++k) {
    const int shift = kBits * k;
    r |= (f((a >> shift) & kMask, (b >> shift) & kMask) & kMask) << shift;
  }
  return r;
}
inline unsigned emu_min(unsigned x, unsigned y) { return x < y ? x : y; }
inline unsigned emu_max(unsigned x, unsigned y) { return x > y ? x : y; }
inline unsigned __vminu4(unsigned a, unsigned b) { return emu_lanes<8>(a, b, emu_min); }
inline unsigned __vmaxu4(unsigned a, unsigned b) { return emu_lanes<8>(a, b, emu_max); }
inline unsigned __vcmpgtu4(unsigned a, unsigned b) {
  return emu_lanes<8>(a, b, [](unsigned x, unsigned y) { return x > y ? 255u : 0u; });
}
/// Unsigned 16-bit lanes (VIMNMX.U16x2 on sm_90).
inline unsigned __vminu2(unsigned a, unsigned b) { return emu_lanes<16>(a, b, emu_min); }
inline unsigned __vmaxu2(unsigned a, unsigned b) { return emu_lanes<16>(a, b, emu_max); }
/// PRMT with selectors 0..7 per nibble (the kernels use no sign-replicating modes).
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const unsigned long long v = static_cast<unsigned long long>(y) << 32 | x;
  unsigned r = 0;
  for (int b = 0; b < 4; ++b) r |= static_cast<unsigned>((v >> (8 * ((s >> (4 * b)) & 7u))) & 0xffu) << (8 * b);
  return r;
}

// ------------------------------------------------------------------ threads of a block
namespace emu {

class Barrier {
 public:
  void reset(int n) {
    n_ = n;
    count_ = 0;
  }
  void wait() {
    std::unique_lock<std::mutex> lock(m_);
    const unsigned gen = gen_;
    if (++count_ == n_) {
      count_ = 0;
      ++gen_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return gen_ != gen; });
    }
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  int n_ = 0, count_ = 0;
  unsigned gen_ = 0;
};

constexpr int kMaxThreads = 1024;

struct BlockState {
  Barrier block;
  Barrier warp[kMaxThreads / 32];
  alignas(8) unsigned char slot[2][kMaxThreads][8];  // shuffle exchange, double-buffered
  double frag[2][kMaxThreads][12];                   // MMA fragments (mma_m16n8_f64), likewise
  std::atomic<int> any[3];                           // __syncthreads_or's flags, one per call mod 3
};
inline thread_local unsigned t_shuffles = 0;  // this thread's shuffles so far (picks the buffer)
inline thread_local unsigned t_sync_ors = 0;  // this thread's __syncthreads_or calls so far
inline BlockState g_block;

// cp.async as the GPU may run it (kernels/common.cuh's cp_async, cp_async_commit and
// cp_async_wait call these in the emulation). A thread's copies are grouped by its commits; a
// copy lands in shared memory at the latest when a wait lets no more than N of the thread's
// committed groups stay in flight, and copies not yet committed stay in flight through any wait,
// as cp.async.wait_group has it. On every other launch each copy is held until that wait, so a
// kernel that reads a stage before the wait that covers it reads stale bytes and fails its
// results every time; on the others each copy lands at once or is held, at random, so that one
// that refills a stage a thread may still read (a copy landed at once: the reader sees the next
// tile's bytes) fails too, where landing every copy at once passed any count of commits and
// waits. The copies a block leaves in flight at its end are dropped with its shared memory.
struct AsyncCopy {
  void* dst;
  const void* src;
  int bytes, src_bytes;  // the copy's size, and the bytes read from src (the rest zeros)
  void land() const {
    std::memcpy(dst, src, static_cast<std::size_t>(src_bytes));
    std::memset(static_cast<unsigned char*>(dst) + src_bytes, 0, static_cast<std::size_t>(bytes - src_bytes));
  }
};
inline thread_local std::vector<AsyncCopy> t_async_open;                 // issued since the last commit
inline thread_local std::vector<std::vector<AsyncCopy>> t_async_groups;  // committed, oldest first
inline thread_local unsigned t_async_rng = 0;
inline bool g_async_hold_all = false;  // this launch holds every copy until its wait (set by launch)

inline void async_copy_reset() {
  t_async_open.clear();
  t_async_groups.clear();
  if (t_async_rng == 0)  // a fresh sequence a run and a thread (never 0: xorshift's fixed point)
    t_async_rng = static_cast<unsigned>(std::hash<std::thread::id>{}(std::this_thread::get_id()) ^
                                        static_cast<std::size_t>(std::chrono::steady_clock::now().time_since_epoch().count())) | 1u;
}
inline void async_copy_issue(void* dst, const void* src, int bytes, int src_bytes) {
  t_async_rng ^= t_async_rng << 13;
  t_async_rng ^= t_async_rng >> 17;
  t_async_rng ^= t_async_rng << 5;
  const AsyncCopy c{dst, src, bytes, src_bytes};
  if (!g_async_hold_all && (t_async_rng & 1u))
    c.land();
  else
    t_async_open.push_back(c);
}
inline void async_copy_commit() {
  t_async_groups.push_back(std::move(t_async_open));
  t_async_open.clear();
}
inline void async_copy_wait(int n) {
  const std::size_t keep = static_cast<std::size_t>(n);
  if (t_async_groups.size() <= keep) return;
  const std::size_t done = t_async_groups.size() - keep;
  for (std::size_t g = 0; g < done; ++g)
    for (const AsyncCopy& c : t_async_groups[g]) c.land();
  t_async_groups.erase(t_async_groups.begin(), t_async_groups.begin() + static_cast<long>(done));
}

inline int linear_thread() { return static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)); }

/// A pool of kMaxThreads host threads; run() makes the first n of them run `body` as threads
/// of one block and returns when all have. Only those n are woken.
class Pool {
 public:
  static Pool& instance() {
    static Pool pool;
    return pool;
  }
  void run(int n, const std::function<void()>& body, uint3 block) {
    body_ = &body;
    block_ = block;
    remaining_ = n;
    for (int i = 0; i < n; ++i) {
      std::lock_guard<std::mutex> lock(workers_[i]->m);
      workers_[i]->go = true;
      workers_[i]->cv.notify_one();
    }
    std::unique_lock<std::mutex> lock(done_m_);
    done_.wait(lock, [&] { return remaining_ == 0; });
  }

 private:
  struct Worker {
    std::mutex m;
    std::condition_variable cv;
    bool go = false, stop = false;
    std::thread thread;
  };
  Pool() {
    for (int i = 0; i < kMaxThreads; ++i) workers_.push_back(std::make_unique<Worker>());
    for (int i = 0; i < kMaxThreads; ++i) workers_[i]->thread = std::thread([this, i] { work(i); });
  }
  ~Pool() {
    for (auto& w : workers_) {
      {
        std::lock_guard<std::mutex> lock(w->m);
        w->stop = true;
      }
      w->cv.notify_one();
      w->thread.join();
    }
  }
  void work(int i) {
    Worker& w = *workers_[i];
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(w.m);
        w.cv.wait(lock, [&] { return w.go || w.stop; });
        if (w.stop) return;
        w.go = false;
      }
      const unsigned bx = blockDim.x, by = blockDim.y;
      threadIdx.x = static_cast<unsigned>(i) % bx;
      threadIdx.y = static_cast<unsigned>(i) / bx % by;
      threadIdx.z = static_cast<unsigned>(i) / (bx * by);
      blockIdx = block_;
      t_shuffles = 0;
      t_sync_ors = 0;
      async_copy_reset();
      (*body_)();
      std::lock_guard<std::mutex> lock(done_m_);
      if (--remaining_ == 0) done_.notify_all();
    }
  }

  std::vector<std::unique_ptr<Worker>> workers_;
  const std::function<void()>* body_ = nullptr;
  uint3 block_;
  std::mutex done_m_;
  std::condition_variable done_;
  int remaining_ = 0;
};

/// kernel<<<grid, block>>>: `body` runs once per thread, blocks one after another.
inline void launch(dim3 grid, dim3 block, const std::function<void()>& body) {
  const int n = static_cast<int>(block.x * block.y * block.z);
  if (n > kMaxThreads) {
    std::fprintf(stderr, "emulation: %d threads per block\n", n);
    std::abort();
  }
  gridDim = grid;
  blockDim = block;
  static unsigned launches = 0;
  g_async_hold_all = launches++ % 2 == 0;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        g_block.block.reset(n);
        for (auto& flag : g_block.any) flag.store(0);
        for (int w = 0; w * 32 < n; ++w) g_block.warp[w].reset(n - 32 * w < 32 ? n - 32 * w : 32);
        Pool::instance().run(n, body, uint3{bx, by, bz});
      }
}

}  // namespace emu

inline void __syncthreads() { emu::g_block.block.wait(); }

/// __syncthreads with every thread's predicate or-ed. Call c uses flag c mod 3, and thread 0
/// clears flag (c + 2) mod 3 after the barrier: the threads read that flag in call c - 1 before
/// this barrier, and set it again in call c + 2 only after the next barrier, which thread 0
/// reaches after clearing it.
inline int __syncthreads_or(int pred) {
  const unsigned c = emu::t_sync_ors++;
  if (pred) emu::g_block.any[c % 3].store(1);
  emu::g_block.block.wait();
  const int r = emu::g_block.any[c % 3].load();
  if (emu::linear_thread() == 0) emu::g_block.any[(c + 2) % 3].store(0);
  return r;
}

namespace emu {
/// Publishes this lane's v to its warp and waits for every lane of the warp to publish; returns
/// the exchange buffer (indexed by linear thread). Every lane of the warp must call it, as every
/// warp-level intrinsic below must be called: one barrier per call, so a lane cannot write this
/// buffer again before every lane of the warp has passed the next call's barrier, which comes
/// after its reads of this one.
template <class T>
unsigned char (&exchange(const T& v))[kMaxThreads][8] {
  static_assert(sizeof(T) <= 8, "warp exchange of at most 8 bytes");
  const int t = linear_thread();
  auto& slot = g_block.slot[t_shuffles++ & 1];
  std::memcpy(slot[t], &v, sizeof(T));
  g_block.warp[t / 32].wait();
  return slot;
}
/// mma.sync.aligned.m16n8k{K}.row.col.f64 for the calling warp (kernels/gemm_mma.cuh's Dmma
/// under the emulation), with one warp barrier where the portable form takes 12 shuffles per
/// m8n8k4. PTX's fragment layouts: lane (g, t) = (lane / 4, lane % 4) holds A(g + 8 v0, 4 v1 + t)
/// in a[v0 + 2 v1], B(4 v1 + t, g) in b[v1], and C(g + 8 h, 2 t + j) in c[2 h + j]. The
/// fragments go through g_block.frag, double-buffered with the shuffles' count as exchange().
template <int K, class C, class In, class Value>
void mma_m16n8(C (&c)[4], const In* a, const In* b, Value value) {
  static_assert(K == 4 || K == 8 || K == 16, "m16n8k4, k8, k16");
  constexpr int kA = K / 2, kB = K / 4;
  const int t = linear_thread(), lane = t % 32, base = t - lane;
  auto& buf = g_block.frag[t_shuffles++ & 1];
  for (int i = 0; i < kA; ++i) buf[t][i] = value(a[i]);
  for (int i = 0; i < kB; ++i) buf[t][kA + i] = value(b[i]);
  g_block.warp[t / 32].wait();
  const int g = lane / 4, tq = lane % 4;
  for (int h = 0; h < 2; ++h)
    for (int j = 0; j < 2; ++j) {
      double sum = c[2 * h + j];
      for (int v1 = 0; v1 < K / 4; ++v1)
        for (int k = 0; k < 4; ++k)  // A(g + 8h, 4 v1 + k) B(4 v1 + k, 2 tq + j)
          sum += buf[base + 4 * g + k][h + 2 * v1] * buf[base + 4 * (2 * tq + j) + k][kA + v1];
      c[2 * h + j] = static_cast<C>(sum);
    }
}
template <int K>
void mma_m16n8_f64(double (&c)[4], const double* a, const double* b) {
  mma_m16n8<K>(c, a, b, [](double v) { return v; });
}
/// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 (Tf32x3 under the emulation): the
/// operands' bits as floats (the kernel hands the MMA TF32 values, its small parts truncated
/// under the emulation where the GPU rounds them to nearest; the fast split's unrounded small
/// part is taken whole here, where the GPU reads its top 19 bits), products summed in double
/// and rounded to float once (the GPU truncates as it adds): the layout is checked, the
/// rounding is the accuracy tests' on the GPU.
inline void mma_m16n8k8_tf32(float (&c)[4], const std::uint32_t* a, const std::uint32_t* b) {
  mma_m16n8<8>(c, a, b, [](std::uint32_t v) { return static_cast<double>(__uint_as_float(v)); });
}
/// ldmatrix.sync.aligned.m8n8.x4.shared.b16 for the calling warp: lane l gives the address of row
/// l % 8 of matrix l / 8 (16 bytes); r[q] gets word l % 4 of row l / 4 of matrix q.
inline void ldmatrix_x4(std::uint32_t (&r)[4], const void* row) {
  const auto& slot = exchange(row);
  const int t = linear_thread(), lane = t % 32, base = t - lane;
  for (int q = 0; q < 4; ++q) {
    const void* p;
    std::memcpy(&p, slot[base + 8 * q + lane / 4], sizeof p);
    if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) {
      std::fprintf(stderr, "emulation: ldmatrix row at %p is not 16-byte aligned\n", p);
      std::abort();
    }
    std::memcpy(&r[q], static_cast<const unsigned char*>(p) + 4 * (lane % 4), 4);
  }
}

inline int warp_size_of(int t) {
  const int n = static_cast<int>(blockDim.x * blockDim.y * blockDim.z), base = t - t % 32;
  return n - base < 32 ? n - base : 32;
}
}  // namespace emu

/// Lane + delta's value within the lane's group of `width`, else the lane's own.
template <class T>
T __shfl_down_sync(unsigned /*mask*/, T v, unsigned delta, int width = 32) {
  const auto& slot = emu::exchange(v);
  const int t = emu::linear_thread(), lane = t % 32;
  T r = v;
  if (lane % width + static_cast<int>(delta) < width) std::memcpy(&r, slot[t + delta], sizeof(T));
  return r;
}

/// Lane - delta's value within the lane's group of `width`, else the lane's own.
template <class T>
T __shfl_up_sync(unsigned /*mask*/, T v, unsigned delta, int width = 32) {
  const auto& slot = emu::exchange(v);
  const int t = emu::linear_thread(), lane = t % 32;
  T r = v;
  if (lane % width >= static_cast<int>(delta)) std::memcpy(&r, slot[t - delta], sizeof(T));
  return r;
}

/// Lane (lane ^ lane_mask)'s value; the lane's own where that lies in a later group of `width`.
template <class T>
T __shfl_xor_sync(unsigned /*mask*/, T v, int lane_mask, int width = 32) {
  const auto& slot = emu::exchange(v);
  const int t = emu::linear_thread(), lane = t % 32, target = lane ^ lane_mask;
  T r = v;
  if (target / width <= lane / width) std::memcpy(&r, slot[t - lane + target], sizeof(T));
  return r;
}

/// Lane src's value (within the lane's group of `width`).
template <class T>
T __shfl_sync(unsigned /*mask*/, T v, int src, int width = 32) {
  const auto& slot = emu::exchange(v);
  const int t = emu::linear_thread(), lane = t % 32;
  const int from = t - lane + lane / width * width + src % width;
  T r;
  std::memcpy(&r, slot[from], sizeof(T));
  return r;
}

/// Whether pred is non-zero on any lane of the warp.
inline int __any_sync(unsigned /*mask*/, int pred) {
  const int p = pred != 0;
  const auto& slot = emu::exchange(p);
  const int t = emu::linear_thread(), base = t - t % 32, n = emu::warp_size_of(t);
  int any = 0;
  for (int k = 0; k < n; ++k) {
    int q;
    std::memcpy(&q, slot[base + k], sizeof(q));
    any |= q;
  }
  return any;
}

/// The low 32 bits of hi:lo shifted right by shift & 31.
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  return static_cast<unsigned>(((static_cast<unsigned long long>(hi) << 32) | lo) >> (shift & 31));
}

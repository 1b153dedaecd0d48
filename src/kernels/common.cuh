// What every kernel shares: the index type and the aligned vector of V elements that loads and
// stores move at once. Device code only: nothing here knows about streams, buffers or matrices.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

/// Declares the kernel's dynamic shared array `name` of `type` (16-byte aligned). The CPU
/// emulation of the kernels (test/expr_emu) defines it first, as a static array of its own.
#ifndef DEVMAT_DYNAMIC_SHARED
#define DEVMAT_DYNAMIC_SHARED(type, name) extern __shared__ __align__(16) type name[]
#endif

namespace devmat {

using Index = std::ptrdiff_t;  // the same alias as <devmat/error.hpp>'s (a redeclaration)

namespace detail {

/// V elements of T moved as one aligned vector (at most 16 bytes: one LDG.128 / STG.128).
template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

/// Blocks along grid.y that the tiled image kernels launch at most; they loop over the tiles past it.
inline constexpr unsigned kMaxGridY = 65535;

/// Elements of T in one 16-byte vector.
template <class T> inline constexpr int kVec16 = static_cast<int>(16 / sizeof(T));

// ------------------------------------------------------------------ cp.async
/// The shared-memory address of a generic pointer into shared memory (for PTX operands).
__device__ __forceinline__ unsigned shared_u32(const void* p) {
#if defined(__CUDA_ARCH__)
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
#else
  return static_cast<unsigned>(reinterpret_cast<std::size_t>(p));
#endif
}

/// Copies `src_bytes` (0..Bytes) from global `src` to shared `dst` and zero-fills the rest of
/// the Bytes, asynchronously (cp.async; 16 bytes bypass L1). `src` must be a valid address even
/// when src_bytes == 0, aligned to Bytes, as `dst`. Before sm_80 a synchronous copy with the
/// same zero fill; in the CPU emulation a copy that lands at once or at the wait that covers it
/// (emu::async_copy_issue).
template <int Bytes, class T>
__device__ __forceinline__ void cp_async(T* dst, const T* src, int src_bytes) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (Bytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_u32(dst)), "l"(src), "r"(src_bytes)
                 : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(shared_u32(dst)), "l"(src), "n"(Bytes),
                 "r"(src_bytes)
                 : "memory");
#else
#if defined(DEVMAT_EMULATION)
  if (reinterpret_cast<std::uintptr_t>(src) % Bytes != 0 || reinterpret_cast<std::uintptr_t>(dst) % Bytes != 0) {
    std::fprintf(stderr, "emulation: cp.async of %d bytes from %p to %p, not aligned\n", Bytes,
                 static_cast<const void*>(src), static_cast<const void*>(dst));
    std::abort();
  }
  // Where a test names the operands' readable rows (emu::g_readable), a copy's source bytes
  // must lie in one of them, and all Bytes it names inside their storage (emu::g_storage).
  // Under emu::ExactReads, the bytes it reads must lie inside the matrix's (a read past them
  // aborts even where the allocation goes on).
  if (src_bytes > 0) {
    emu::check_read(src, static_cast<std::size_t>(src_bytes));
    emu::check_named(src, static_cast<std::size_t>(Bytes));
    emu::check_exact(src, static_cast<std::size_t>(src_bytes));
  }
  emu::async_copy_issue(dst, src, Bytes, src_bytes / static_cast<int>(sizeof(T)) * static_cast<int>(sizeof(T)));
#else
  constexpr int kN = Bytes / static_cast<int>(sizeof(T));
  const int n = src_bytes / static_cast<int>(sizeof(T));
#pragma unroll
  for (int i = 0; i < kN; ++i) dst[i] = i < n ? src[i] : T{};
#endif
#endif
}

/// Closes this thread's group of cp.async copies issued since the last commit.
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#elif defined(DEVMAT_EMULATION)
  emu::async_copy_commit();
#endif
}

/// Waits until at most N committed groups of this thread are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#elif defined(DEVMAT_EMULATION)
  emu::async_copy_wait(N);
#endif
}

}  // namespace detail
}  // namespace devmat

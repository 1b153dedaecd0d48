// The Hopper asynchronous copy primitives that kernels share: mbarriers (init, arrive with an
// expected transaction count, parity waits), TMA tensor copies of 2-D boxes in both directions
// (cp.async.bulk.tensor, completing on an mbarrier for loads and in bulk groups for stores) and
// the proxy fence between ordinary shared-memory writes and the async proxy, on shared-memory
// addresses (32-bit) and, the same operations, on generic pointers into shared memory: those the
// CPU emulation implements (test/expr_emu/emu_tma.hpp, defined before this header). sm_90 on (plain
// sm_90: none of these needs sm_90a); elsewhere, and in the host pass, they compile to nothing,
// and callers launch their kernels only where the device runs sm_90 code (the kernel's PTX
// version: transpose_tma_runs).
#pragma once

#include "common.cuh"  // shared_u32

#include <cuda.h>  // CUtensorMap (a type only: no driver library is linked)

#include <cstdint>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define DEVMAT_TMA_DEVICE 1
#else
#define DEVMAT_TMA_DEVICE 0
#endif

namespace devmat::detail {

__device__ __forceinline__ void mbar_init(std::uint32_t bar, std::uint32_t count) {
#if DEVMAT_TMA_DEVICE
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
#else
  (void)bar, (void)count;
#endif
}
/// Makes the barrier initialisations visible to the async proxy (TMA) as well.
__device__ __forceinline__ void mbar_init_fence() {
#if DEVMAT_TMA_DEVICE
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
/// One arrival that also expects `bytes` of transactions in the current phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
#if DEVMAT_TMA_DEVICE
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
#else
  (void)bar, (void)bytes;
#endif
}
__device__ __forceinline__ void mbar_arrive(std::uint32_t bar) {
#if DEVMAT_TMA_DEVICE
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
#else
  (void)bar;
#endif
}
/// One poll: true once the phase of parity `parity` has completed (try_wait may suspend the
/// thread for a while first). A fresh barrier is in phase 0, and the phase "before" it, of
/// parity 1, counts as completed.
__device__ __forceinline__ bool mbar_try_wait(std::uint32_t bar, std::uint32_t parity) {
  std::uint32_t done = 1;
#if DEVMAT_TMA_DEVICE
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
#else
  (void)bar, (void)parity;
#endif
  return done != 0;
}
/// Polls until that phase has completed. A watchdog: a wait that never ends (a phase or
/// byte-count mistake) traps after 2^28 polls (at least a second), so that a test or benchmark
/// fails with a launch error instead of hanging the run.
__device__ __forceinline__ void mbar_wait(std::uint32_t bar, std::uint32_t parity) {
#if DEVMAT_TMA_DEVICE
  constexpr long long kWatchdogPolls = 1ll << 28;
  for (long long polls = 0; !mbar_try_wait(bar, parity);)
    if (++polls == kWatchdogPolls) __trap();
#else
  (void)bar, (void)parity;
#endif
}
/// TMA: the box at coordinates (c0 innermost, c1) of `map` into shared `dst`, completing
/// transactions on `bar`.
__device__ __forceinline__ void tma_load_2d(std::uint32_t dst, const CUtensorMap* map, std::uint32_t bar, int c0,
                                            int c1) {
#if DEVMAT_TMA_DEVICE
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
          dst),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
#else
  (void)dst, (void)map, (void)bar, (void)c0, (void)c1;
#endif
}
/// TMA: shared `src` to the box at coordinates (c0 innermost, c1) of `map`, clipped to the
/// map's extent, in this thread's current bulk group (bulk_commit_group closes it).
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, std::uint32_t src, int c0, int c1) {
#if DEVMAT_TMA_DEVICE
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
                   reinterpret_cast<std::uint64_t>(map)),
               "r"(src), "r"(c0), "r"(c1)
               : "memory");
#else
  (void)map, (void)src, (void)c0, (void)c1;
#endif
}
/// Closes this thread's bulk group of TMA stores.
__device__ __forceinline__ void bulk_commit_group() {
#if DEVMAT_TMA_DEVICE
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#endif
}
/// Waits until at most kPending of this thread's bulk groups still read their shared memory.
template <int kPending>
__device__ __forceinline__ void bulk_wait_group_read() {
#if DEVMAT_TMA_DEVICE
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(kPending) : "memory");
#endif
}
/// Generic-proxy writes to shared memory become visible to the async proxy (wgmma, TMA).
__device__ __forceinline__ void fence_proxy_async() {
#if DEVMAT_TMA_DEVICE
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

#if !defined(DEVMAT_EMULATION)
// ------------------------------------------------------------------ on generic pointers
__device__ __forceinline__ void mbar_init(std::uint64_t* bar, std::uint32_t count) { mbar_init(shared_u32(bar), count); }
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint64_t* bar, std::uint32_t bytes) {
  mbar_arrive_expect_tx(shared_u32(bar), bytes);
}
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, std::uint32_t parity) { mbar_wait(shared_u32(bar), parity); }
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, std::uint64_t* bar, int c0, int c1) {
  tma_load_2d(shared_u32(dst), map, shared_u32(bar), c0, c1);
}
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* src, int c0, int c1) {
  tma_store_2d(map, shared_u32(src), c0, c1);
}
#endif

}  // namespace devmat::detail
